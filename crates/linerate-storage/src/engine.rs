//! The I/O loops: keep `qd` operations in flight on one file until a deadline (or, for the fill,
//! through the file once), time each one, and stop early on an error, a signal, a cancel flag, or
//! the file vanishing.
//!
//! Two engines with the same contract: io_uring on the calling thread (every completed operation is
//! replaced by a new one, submitted in one `io_uring_enter` per batch or per pair, see
//! [`submit_each`]), and a pool of `qd` threads each doing pread/pwrite. [`run_jobs`] runs either
//! as several jobs at once, each on its own thread (and ring) in its own region of the file.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use linerate_stats::LatencyHistogram;

use crate::signals;
use crate::sys::{self, AlignedBuf, Completion, IoKind, RingOpts, Uring};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Seq,
    Rand,
}

/// One measurement (or the fill).
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub kind: IoKind,
    pub access: Access,
    pub block: usize,
    pub qd: usize,
    /// Where this job's region of the file starts (0, or `k × region` for job `k` of several).
    pub region_start: u64,
    /// Bytes of the region the job reads or writes (the whole file for one job).
    pub file_bytes: u64,
    /// Run this long; `None`: one sequential pass over the file (the fill).
    pub duration: Option<Duration>,
    /// Buffered sequential reads: drop the page cache each time the pass starts over, so a file
    /// smaller than RAM is still read from the medium.
    pub drop_on_wrap: bool,
    /// How the io_uring loop hands operations to the kernel (see [`ring_policy`]).
    pub ring: RingPolicy,
    pub seed: u64,
}

impl Job {
    fn blocks(&self) -> u64 {
        (self.file_bytes / self.block as u64).max(1)
    }
}

/// Why a job ended before its deadline.
#[derive(Debug)]
pub enum StopCause {
    Io(io::Error),
    /// A read returned 0 bytes inside the file: someone truncated it.
    Truncated,
    /// The file has no name left (its directory was removed), or NFS says ESTALE.
    Vanished,
    Signal(i32),
    Cancelled,
}

#[derive(Debug)]
pub struct JobOutcome {
    pub bytes: u64,
    pub ops: u64,
    /// From the first submission to the last completion.
    pub seconds: f64,
    pub hist: LatencyHistogram,
    pub stop: Option<StopCause>,
}

/// Checks made between batches: signals and the cancel flag every time, the file's link count
/// every 100 ms.
#[derive(Debug)]
pub struct Watch<'a> {
    file: &'a File,
    cancel: Option<&'a AtomicBool>,
    /// Set by another job of the same test that stopped (see [`run_jobs`]).
    halt: Option<&'a AtomicBool>,
    last_stat: Instant,
}

const STAT_EVERY: Duration = Duration::from_millis(100);

impl<'a> Watch<'a> {
    pub fn new(file: &'a File, cancel: Option<&'a AtomicBool>) -> Self {
        Self {
            file,
            cancel,
            halt: None,
            last_stat: Instant::now(),
        }
    }

    pub fn check(&mut self, now: Instant) -> Option<StopCause> {
        if let Some(sig) = signals::pending() {
            return Some(StopCause::Signal(sig));
        }
        let set = |f: Option<&AtomicBool>| f.is_some_and(|c| c.load(Ordering::Relaxed));
        if set(self.cancel) || set(self.halt) {
            return Some(StopCause::Cancelled);
        }
        if now.duration_since(self.last_stat) >= STAT_EVERY {
            self.last_stat = now;
            return self.vanished().then_some(StopCause::Vanished);
        }
        None
    }

    /// The file was unlinked (its directory removed) or its handle went stale.
    pub fn vanished(&self) -> bool {
        match self.file.metadata() {
            Ok(m) => m.nlink() == 0,
            Err(e) => e.raw_os_error() == Some(libc::ESTALE),
        }
    }
}

/// splitmix64: a fast generator for offsets and fill data (not for secrets).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// Make each 4 KiB of a write unique (its file offset, mixed with the seed, in its first 8
/// bytes), so no filesystem or device can deduplicate or compress the data away.
pub fn stamp(buf: &mut [u8], offset: u64, seed: u64) {
    for (i, sector) in buf.chunks_mut(4096).enumerate() {
        if sector.len() >= 8 {
            let v = (offset + i as u64 * 4096) ^ seed;
            sector[..8].copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// Offsets of a sequential pass (shared by all workers) or random blocks.
#[derive(Debug)]
struct SeqCursor {
    next: AtomicU64,
    /// Set when the pass started over; the one who drops the cache clears it.
    wrapped: AtomicBool,
}

impl SeqCursor {
    fn new() -> Self {
        Self {
            next: AtomicU64::new(0),
            wrapped: AtomicBool::new(false),
        }
    }

    /// The next block's offset, or `None` at the end of a one-pass job.
    fn take(&self, job: &Job) -> Option<u64> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let n = job.blocks();
        if job.duration.is_none() && i >= n {
            return None;
        }
        if i > 0 && i.is_multiple_of(n) {
            self.wrapped.store(true, Ordering::Relaxed);
        }
        Some(i % n * job.block as u64)
    }
}

fn next_offset(job: &Job, seq: &SeqCursor, rng: &mut Rng) -> Option<u64> {
    match job.access {
        Access::Seq => seq.take(job),
        Access::Rand => Some(rng.below(job.blocks()) * job.block as u64),
    }
    .map(|o| job.region_start + o)
}

fn maybe_drop_cache(job: &Job, seq: &SeqCursor, file: &File) {
    if job.drop_on_wrap && seq.wrapped.swap(false, Ordering::Relaxed) {
        // Advisory: a failure only means the next pass may hit the cache.
        let _ = sys::drop_cache(file);
    }
}

/// How the io_uring loop hands operations to the kernel and takes completions back. Which way
/// is fastest depends on who moves the data: a device (DMA, O_DIRECT), or the kernel copying it
/// (a memory filesystem, or buffered I/O through the page cache). See [`ring_policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingPolicy {
    /// Use the registered buffers (READ_FIXED/WRITE_FIXED).
    pub registered: bool,
    /// Hand operations to the kernel as soon as two are queued ([`EAGER_BATCH`]), rather than
    /// all those queued since the last wait in one call.
    pub eager_submit: bool,
    /// Mark every operation IOSQE_ASYNC: straight to an io-wq worker, no inline attempt.
    pub force_async: bool,
    /// Before waiting, take the completions already due (an `io_uring_enter` with GETEVENTS
    /// and nothing to wait for); sleep only when there are none.
    pub reap_before_wait: bool,
}

/// The [`RingPolicy`] for operations of `block` bytes in direction `kind`, where
/// `kernel_copies` says the kernel copies the data (page cache or a memory filesystem) and
/// `memory_fs` that the file lives in RAM (tmpfs).
///
/// - **Registered buffers** spare the kernel pinning the pages of every operation (DMA for
///   O_DIRECT on a device). Where the kernel copies, the plain path copies with `copy_to_user`
///   and the registered one with a memcpy per page of a bvec: large blocks go about 15 % faster
///   plain (1 MiB on tmpfs), and on tmpfs 4 KiB reads too (905K against 849K and 811K against
///   749K IOPS, medians of 4 alternating 3 s runs at QD 32, Linux 6.18, 2 vCPUs).
/// - **Eager submission**: where operations go to a device, a batch submitted in one call
///   reaches it only when the last of it is prepared (the block layer plugs batches of more
///   than two), so the device queue runs below the queue depth: on a virtio disk at QD 32,
///   4 KiB random reads gave 61K IOPS batched, 72K one by one (fio's default,
///   `iodepth_batch=1`, gave 72K). Where the kernel copies there is no device queue to keep
///   full, and one call per batch saves system calls.
/// - **IOSQE_ASYNC**: tmpfs cannot read or write without blocking (no FMODE_NOWAIT), so every
///   operation goes to an io-wq worker either way. Without the flag a punted read is queued to
///   the one running worker (io-wq adds a worker only when none is running), which copies the
///   4 KiB blocks one after another while this thread submits and reaps: one core each, as
///   fio does by default. With it, io-wq starts a worker per operation that finds none idle
///   (IO_WQ_WORK_CONCURRENT), a dozen threads fighting over two cores: 4 KiB random reads gave
///   727K IOPS with the flag against 898K without (medians of 3 alternating runs, same
///   machine). Large reads are the other way round: a 1 MiB copy outweighs a thread switch,
///   and several workers copy at once (1 MiB sequential reads 14-18 GB/s with, 10 GB/s
///   without). Writes to one file are serialised by io-wq's per-inode hashing whatever the
///   flag, which then only adds threads (4 KiB random writes 1.18M IOPS without, 0.65M with).
/// - **Reaping before waiting**: where one worker completes operations about every
///   microsecond, sleeping for each completion costs the worker a wake-up of this thread per
///   operation (with DEFER_TASKRUN, a `try_to_wake_up` for each) and this thread a context
///   switch; fio's loop, which reaps with `min_complete=0` first, avoids both (913K against
///   893K IOPS, 4 KiB random reads on tmpfs). A device's completions come seldom enough that
///   the extra call would mostly find nothing.
pub fn ring_policy(kernel_copies: bool, memory_fs: bool, kind: IoKind, block: usize) -> RingPolicy {
    const LARGE: usize = 64 << 10;
    RingPolicy {
        registered: !(memory_fs || kernel_copies && block >= LARGE),
        eager_submit: !kernel_copies,
        force_async: memory_fs && kind == IoKind::Read && block >= LARGE,
        reap_before_wait: memory_fs,
    }
}

/// Operations per `io_uring_enter` when submitting eagerly: io_uring plugs the block layer only
/// for batches of more than two (`io_submit_state_start`: `need_plug = max_ios > 2`), so pairs
/// reach the device as soon as one-by-one submissions do, at half the system calls. Measured on
/// a virtio disk (4 KiB random reads, QD 32, O_DIRECT, a loaded 2-vCPU machine, alternating):
/// pairs gave 56K, 72K, 84K IOPS where one by one gave 43K, 66K, 83K.
const EAGER_BATCH: usize = 2;

/// Run `job` on an io_uring. `progress` gets the bytes done, at most every 100 ms.
#[expect(
    clippy::too_many_lines,
    reason = "the submit/reap loop: its per-operation state (free slots, start times, counters, \
              stop) lives in locals of this one function so the per-I/O path goes through no \
              struct or call; the loop reads top to bottom as one submit-wait-reap cycle"
)]
pub fn run_uring(
    ring: &mut Uring<'_>,
    file: &File,
    job: &Job,
    watch: &mut Watch<'_>,
    progress: &mut dyn FnMut(u64),
) -> JobOutcome {
    let qd = job.qd.min(ring.slots()).max(1);
    let mut hist = LatencyHistogram::new();
    let mut rng = Rng::new(job.seed);
    let seq = SeqCursor::new();
    let mut free: Vec<usize> = (0..qd).rev().collect();
    let mut queued: Vec<usize> = Vec::with_capacity(qd);
    let mut started = vec![Instant::now(); qd];
    let mut done: Vec<Completion> = Vec::with_capacity(qd);
    let (mut bytes, mut ops) = (0u64, 0u64);
    let mut stop: Option<StopCause> = None;
    let mut issuing = true;
    let t0 = Instant::now();
    let deadline = job.duration.map(|d| t0 + d);
    let mut last_end = t0;
    let mut last_progress = t0;
    ring.use_registered(job.ring.registered);
    ring.use_async(job.ring.force_async);
    if job.kind == IoKind::Write {
        for slot in 0..qd {
            rng.fill(ring.buf_mut(slot));
        }
    }
    loop {
        while issuing {
            let Some(slot) = free.pop() else { break };
            let Some(off) = next_offset(job, &seq, &mut rng) else {
                free.push(slot);
                issuing = false;
                break;
            };
            if job.kind == IoKind::Write {
                stamp(&mut ring.buf_mut(slot)[..job.block], off, job.seed);
            }
            if let Err(e) = ring.queue(slot, job.kind, off, job.block) {
                free.push(slot);
                stop.get_or_insert(StopCause::Io(e));
                issuing = false;
                break;
            }
            queued.push(slot);
            if job.ring.eager_submit && queued.len() >= EAGER_BATCH {
                let t = Instant::now();
                for slot in queued.drain(..) {
                    started[slot] = t;
                }
                match ring.submit() {
                    Ok(_) => {}
                    // Still queued: it goes with the next enter.
                    Err(e) if transient(&e) => {}
                    Err(e) => {
                        stop.get_or_insert(StopCause::Io(e));
                        issuing = false;
                        break;
                    }
                }
            }
        }
        maybe_drop_cache(job, &seq, file);
        if ring.in_flight() == 0 {
            break;
        }
        let t_submit = Instant::now();
        for slot in queued.drain(..) {
            started[slot] = t_submit;
        }
        let entered = if job.ring.reap_before_wait {
            ring.submit_and_collect().and_then(|_| {
                ring.reap(&mut done);
                if done.is_empty() {
                    ring.submit_and_wait(1)
                } else {
                    Ok(0)
                }
            })
        } else {
            ring.submit_and_wait(1)
        };
        match entered {
            Ok(_) => {}
            Err(e) if transient(&e) => {}
            Err(e) => {
                // The ring is unusable; dropping it waits for (or leaks) what is in flight.
                stop.get_or_insert(StopCause::Io(e));
                break;
            }
        }
        let now = Instant::now();
        ring.reap(&mut done);
        for c in done.drain(..) {
            hist.record(now.duration_since(started[c.slot]));
            free.push(c.slot);
            last_end = now;
            match c.result {
                r if r < 0 => {
                    stop.get_or_insert(io_stop(io::Error::from_raw_os_error(-r)));
                    issuing = false;
                }
                0 if job.kind == IoKind::Read => {
                    stop.get_or_insert(StopCause::Truncated);
                    issuing = false;
                }
                r => {
                    bytes += u64::from(r.unsigned_abs());
                    ops += 1;
                }
            }
        }
        if deadline.is_some_and(|d| now >= d) {
            issuing = false;
        }
        if stop.is_none() {
            if let Some(s) = watch.check(now) {
                stop = Some(s);
                issuing = false;
            }
        }
        if now.duration_since(last_progress) >= Duration::from_millis(100) {
            last_progress = now;
            progress(bytes);
        }
    }
    JobOutcome {
        bytes,
        ops,
        seconds: last_end.duration_since(t0).as_secs_f64(),
        hist,
        stop,
    }
}

/// An `io_uring_enter` error after which the same call can be made again.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
    )
}

fn io_stop(err: io::Error) -> StopCause {
    if err.raw_os_error() == Some(libc::ESTALE) {
        StopCause::Vanished
    } else {
        StopCause::Io(err)
    }
}

/// What one worker thread of the sync engine measured.
struct WorkerOut {
    bytes: u64,
    ops: u64,
    last_end: Instant,
    hist: LatencyHistogram,
}

impl WorkerOut {
    /// The workers' figures together: bytes and operations summed, the latest end (`t0`
    /// when none ran), the latencies in one histogram.
    fn merged(outs: Vec<WorkerOut>, t0: Instant) -> WorkerOut {
        let mut total = WorkerOut {
            bytes: 0,
            ops: 0,
            last_end: t0,
            hist: LatencyHistogram::new(),
        };
        for o in outs {
            total.bytes += o.bytes;
            total.ops += o.ops;
            total.last_end = total.last_end.max(o.last_end);
            total.hist += &o.hist;
        }
        total
    }
}

/// Run `job` on `qd` threads doing pread/pwrite, each with its own buffer.
pub fn run_sync(
    file: &File,
    job: &Job,
    watch: &mut Watch<'_>,
    progress: &mut dyn FnMut(u64),
) -> JobOutcome {
    let qd = job.qd.max(1);
    let halt = AtomicBool::new(false);
    let first_stop: Mutex<Option<StopCause>> = Mutex::new(None);
    let done_bytes = AtomicU64::new(0);
    let seq = SeqCursor::new();
    let t0 = Instant::now();
    let deadline = job.duration.map(|d| t0 + d);
    let set_stop = |s: StopCause| {
        let mut g = first_stop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        g.get_or_insert(s);
        halt.store(true, Ordering::Relaxed);
    };
    let worker = |t: usize| -> WorkerOut {
        let mut buf = AlignedBuf::new(job.block, 0x5a);
        let mut rng = Rng::new(job.seed ^ (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        if job.kind == IoKind::Write {
            rng.fill(buf.as_mut_slice());
        }
        let mut out = WorkerOut {
            bytes: 0,
            ops: 0,
            last_end: t0,
            hist: LatencyHistogram::new(),
        };
        loop {
            if halt.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let Some(off) = next_offset(job, &seq, &mut rng) else {
                break;
            };
            if job.kind == IoKind::Write {
                stamp(buf.as_mut_slice(), off, job.seed);
            }
            let start = Instant::now();
            let r = match job.kind {
                IoKind::Read => file.read_at(buf.as_mut_slice(), off),
                IoKind::Write => file.write_at(buf.as_slice(), off),
            };
            let end = Instant::now();
            out.hist.record(end.duration_since(start));
            out.last_end = end;
            match r {
                Ok(0) if job.kind == IoKind::Read => {
                    set_stop(StopCause::Truncated);
                    break;
                }
                Ok(n) => {
                    out.bytes += n as u64;
                    out.ops += 1;
                    done_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    set_stop(io_stop(e));
                    break;
                }
            }
        }
        out
    };
    let outs: Vec<WorkerOut> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..qd).map(|t| s.spawn(move || worker(t))).collect();
        let mut last_progress = t0;
        while !handles
            .iter()
            .all(std::thread::ScopedJoinHandle::is_finished)
        {
            std::thread::sleep(Duration::from_millis(5));
            let now = Instant::now();
            if !halt.load(Ordering::Relaxed) {
                if let Some(st) = watch.check(now) {
                    set_stop(st);
                }
            }
            maybe_drop_cache(job, &seq, file);
            if now.duration_since(last_progress) >= Duration::from_millis(100) {
                last_progress = now;
                progress(done_bytes.load(Ordering::Relaxed));
            }
        }
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let total = WorkerOut::merged(outs, t0);
    JobOutcome {
        bytes: total.bytes,
        ops: total.ops,
        seconds: total.last_end.duration_since(t0).as_secs_f64(),
        hist: total.hist,
        stop: first_stop
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    }
}

/// What one of several jobs measured, and where in the file.
#[derive(Debug)]
pub struct JobOut {
    pub region_start: u64,
    pub region_bytes: u64,
    pub outcome: JobOutcome,
}

/// `n` regions of the file for `n` jobs: equal, whole blocks, consecutive; `None` when a region
/// would hold less than one block.
pub fn regions(file_bytes: u64, block: usize, n: usize) -> Option<Vec<(u64, u64)>> {
    let block = block as u64;
    let per = file_bytes / n.max(1) as u64 / block * block;
    (per >= block).then(|| (0..n as u64).map(|k| (k * per, per)).collect())
}

/// The engine of [`run_jobs`].
#[derive(Debug)]
pub enum Engines<'r, 'f> {
    /// `ring` for the calling thread's job; each other job makes its own ring with `opts` for
    /// buffers of `buf_len` bytes (a ring set up for one issuer takes submissions from the
    /// thread that made it only).
    Uring {
        ring: &'r mut Uring<'f>,
        opts: RingOpts,
        buf_len: usize,
    },
    /// A thread pool of [`run_sync`] per job.
    Sync,
}

/// Run `job` as `n` jobs at once, each in its own region of the file on its own thread (with
/// io_uring, its own ring): job 0 on the calling thread, the others on threads of their own.
/// Signals, the cancel flag and the file vanishing stop all of them; so does the first job to
/// stop on an error. Returns each job's figures and why the run stopped early, if it did.
///
/// # Panics
/// When `job.file_bytes` is less than `n` blocks (the caller checks [`regions`] first).
pub fn run_jobs(
    engines: Engines<'_, '_>,
    file: &File,
    job: &Job,
    n: usize,
    watch: &mut Watch<'_>,
    progress: &mut dyn FnMut(u64),
) -> (Vec<JobOut>, Option<StopCause>) {
    let regions = regions(job.file_bytes, job.block, n).expect("a region of a block per job");
    let job_k = |k: usize| Job {
        region_start: regions[k].0,
        file_bytes: regions[k].1,
        seed: job.seed ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
        ..*job
    };
    let halt = AtomicBool::new(false);
    let mut w0 = Watch {
        halt: Some(&halt),
        ..Watch::new(watch.file, watch.cancel)
    };
    let (ring_spec, main_ring) = match engines {
        Engines::Uring {
            ring,
            opts,
            buf_len,
        } => (Some((opts, buf_len)), Some(ring)),
        Engines::Sync => (None, None),
    };
    let outs: Vec<JobOutcome> = std::thread::scope(|s| {
        let halt = &halt;
        let handles: Vec<_> = (1..n)
            .map(|k| {
                let jk = job_k(k);
                s.spawn(move || {
                    let mut w = Watch::new(file, Some(halt));
                    let o = match ring_spec {
                        Some((opts, buf_len)) => match Uring::new(file, jk.qd, buf_len, opts) {
                            Ok(mut r) => run_uring(&mut r, file, &jk, &mut w, &mut |_| {}),
                            Err(e) => JobOutcome {
                                bytes: 0,
                                ops: 0,
                                seconds: 0.0,
                                hist: LatencyHistogram::new(),
                                stop: Some(StopCause::Io(e)),
                            },
                        },
                        None => run_sync(file, &jk, &mut w, &mut |_| {}),
                    };
                    if !matches!(o.stop, None | Some(StopCause::Cancelled)) {
                        halt.store(true, Ordering::Relaxed);
                    }
                    o
                })
            })
            .collect();
        let j0 = job_k(0);
        let o0 = match main_ring {
            Some(r) => run_uring(r, file, &j0, &mut w0, progress),
            None => run_sync(file, &j0, &mut w0, progress),
        };
        // Job 0 ends at the deadline, on a signal or on an error: the others end with it.
        halt.store(true, Ordering::Relaxed);
        let mut outs = vec![o0];
        outs.extend(handles.into_iter().filter_map(|h| h.join().ok()));
        outs
    });
    // The main watch's stat clock moves on with job 0's.
    watch.last_stat = w0.last_stat;
    let mut stop = None;
    let outs = outs
        .into_iter()
        .zip(regions)
        .map(|(mut o, (start, len))| {
            match o.stop.take() {
                // A halt from another job, not a stop of its own. The caller's cancel flag is
                // checked below.
                None | Some(StopCause::Cancelled) => {}
                Some(st) => {
                    stop.get_or_insert(st);
                }
            }
            JobOut {
                region_start: start,
                region_bytes: len,
                outcome: o,
            }
        })
        .collect();
    if stop.is_none() && watch.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
        stop = Some(StopCause::Cancelled);
    }
    (outs, stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn rng_is_uniform_enough_and_in_range() {
        let mut r = Rng::new(1);
        let mut counts = [0u32; 8];
        for _ in 0..80_000 {
            counts[r.below(8) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn ring_policy_follows_who_moves_the_data() {
        use IoKind::{Read, Write};
        // A device with O_DIRECT: registered buffers, operations to the device in pairs.
        for (kind, block) in [(Read, 4096), (Write, 4096), (Read, 1 << 20)] {
            let p = ring_policy(false, false, kind, block);
            assert!(p.registered && p.eager_submit && !p.force_async && !p.reap_before_wait);
        }
        // Buffered on a device: registered only for small blocks, batched submission.
        assert!(ring_policy(true, false, Read, 4096).registered);
        assert!(!ring_policy(true, false, Read, 1 << 20).registered);
        assert!(!ring_policy(true, false, Read, 4096).eager_submit);
        // tmpfs: plain buffers, reaping before waiting; only large reads go to workers at once.
        let small = ring_policy(true, true, Read, 4096);
        assert!(!small.registered && !small.force_async && small.reap_before_wait);
        assert!(ring_policy(true, true, Read, 1 << 20).force_async);
        assert!(!ring_policy(true, true, Write, 1 << 20).force_async);
    }

    #[test]
    fn regions_are_equal_whole_blocks() {
        assert_eq!(regions(1 << 20, 4096, 1), Some(vec![(0, 1 << 20)]));
        // 256 blocks in 3: 85 each, the last block unused.
        let r = regions(1 << 20, 4096, 3).unwrap();
        assert_eq!(
            r,
            vec![(0, 348_160), (348_160, 348_160), (696_320, 348_160)]
        );
        assert_eq!(regions(8192, 4096, 2), Some(vec![(0, 4096), (4096, 4096)]));
        assert_eq!(regions(8192, 4096, 3), None);
    }

    #[test]
    fn stamps_every_sector() {
        let mut b = vec![0u8; 8192];
        stamp(&mut b, 4096, 0);
        assert_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), 4096);
        assert_eq!(u64::from_le_bytes(b[4096..4104].try_into().unwrap()), 8192);
    }

    fn job(kind: IoKind, access: Access, duration: Option<Duration>) -> Job {
        Job {
            kind,
            access,
            block: 4096,
            qd: 4,
            region_start: 0,
            file_bytes: 1 << 20,
            duration,
            drop_on_wrap: false,
            ring: RingPolicy {
                registered: true,
                eager_submit: false,
                force_async: false,
                reap_before_wait: false,
            },
            seed: 42,
        }
    }

    #[test]
    fn sequential_pass_covers_the_file_once() {
        let j = job(IoKind::Write, Access::Seq, None);
        let c = SeqCursor::new();
        let offs: Vec<u64> = std::iter::from_fn(|| c.take(&j)).collect();
        assert_eq!(offs.len(), 256);
        assert_eq!(offs[255], (1 << 20) - 4096);
        let j = job(IoKind::Read, Access::Seq, Some(Duration::from_secs(1)));
        let c = SeqCursor::new();
        for _ in 0..256 {
            c.take(&j);
        }
        assert_eq!(c.take(&j), Some(0));
        assert!(c.wrapped.load(Ordering::Relaxed));
    }

    fn both_engines(j: &Job) -> Vec<JobOutcome> {
        // Named: an unlinked file counts as vanished.
        let mut named = tempfile::NamedTempFile::new().unwrap();
        named.write_all(&vec![1u8; 1 << 20]).unwrap();
        let f = named.as_file();
        let mut outs = Vec::new();
        let mut w = Watch::new(f, None);
        outs.push(run_sync(f, j, &mut w, &mut |_| {}));
        if let Ok(mut ring) = Uring::new(f, j.qd, j.block, RingOpts::default()) {
            // Every way of driving the ring.
            for bits in 0..16u8 {
                let ring_policy = RingPolicy {
                    registered: bits & 1 != 0,
                    eager_submit: bits & 2 != 0,
                    force_async: bits & 4 != 0,
                    reap_before_wait: bits & 8 != 0,
                };
                let jp = Job {
                    ring: ring_policy,
                    ..*j
                };
                outs.push(run_uring(&mut ring, f, &jp, &mut w, &mut |_| {}));
            }
        }
        outs
    }

    #[test]
    fn engines_fill_and_time() {
        for o in both_engines(&job(IoKind::Write, Access::Seq, None)) {
            assert!(o.stop.is_none(), "{:?}", o.stop);
            assert_eq!(o.bytes, 1 << 20);
            assert_eq!(o.ops, 256);
            assert_eq!(o.hist.count(), 256);
        }
        let j = job(IoKind::Read, Access::Rand, Some(Duration::from_millis(50)));
        for o in both_engines(&j) {
            assert!(o.stop.is_none(), "{:?}", o.stop);
            assert!(o.ops > 10 && o.bytes == o.ops * 4096);
            assert!(o.seconds >= 0.05 && o.seconds < 5.0);
        }
    }

    #[test]
    fn cancel_stops_a_job() {
        let named = tempfile::NamedTempFile::new().unwrap();
        let f = named.as_file();
        f.set_len(1 << 20).unwrap();
        let cancel = AtomicBool::new(true);
        let j = job(IoKind::Read, Access::Rand, Some(Duration::from_secs(30)));
        let t = Instant::now();
        let mut w = Watch::new(f, Some(&cancel));
        let o = run_sync(f, &j, &mut w, &mut |_| {});
        assert!(matches!(o.stop, Some(StopCause::Cancelled)));
        if let Ok(mut ring) = Uring::new(f, 4, 4096, RingOpts::default()) {
            let o = run_uring(&mut ring, f, &j, &mut w, &mut |_| {});
            assert!(matches!(o.stop, Some(StopCause::Cancelled)));
        }
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_truncated_file_is_reported() {
        let named = tempfile::NamedTempFile::new().unwrap();
        let f = named.as_file();
        // Nothing in the file: every read returns 0.
        let j = job(IoKind::Read, Access::Seq, Some(Duration::from_secs(5)));
        let mut w = Watch::new(f, None);
        let o = run_sync(f, &j, &mut w, &mut |_| {});
        assert!(matches!(o.stop, Some(StopCause::Truncated)), "{:?}", o.stop);
        if let Ok(mut ring) = Uring::new(f, 4, 4096, RingOpts::default()) {
            let o = run_uring(&mut ring, f, &j, &mut w, &mut |_| {});
            assert!(matches!(o.stop, Some(StopCause::Truncated)), "{:?}", o.stop);
        };
    }
}
