//! The system calls std does not wrap, and io_uring. Every `unsafe` block of the crate is here.
//!
//! [`Uring`] owns its buffers and hands out a safe interface: a buffer can be touched only while
//! no operation uses it, and the buffers outlive every operation (dropping the ring waits for the
//! operations in flight, or leaks the buffers if it cannot).
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use io_uring::{opcode, squeue, types, IoUring, Probe};

/// Space on a filesystem, statvfs(3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Bytes available to an unprivileged user (`f_bavail × f_frsize`).
    pub avail_bytes: u64,
    /// Size of the filesystem (`f_blocks × f_frsize`); 0 when it does not account space (ramfs).
    pub total_bytes: u64,
}

pub fn statvfs(path: &Path) -> io::Result<Space> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is NUL-terminated; `st` is valid for writing one `struct statvfs`.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: zero-initialised plain integers, and statvfs filled them.
    let st = unsafe { st.assume_init() };
    let frsize = st.f_frsize.max(1);
    Ok(Space {
        avail_bytes: st.f_bavail.saturating_mul(frsize),
        total_bytes: st.f_blocks.saturating_mul(frsize),
    })
}

/// Drop the file's clean pages from the page cache (posix_fadvise DONTNEED), so the next
/// buffered read comes from the medium. Dirty pages stay: call `sync_data` first.
pub fn drop_cache(file: &File) -> io::Result<()> {
    // SAFETY: plain integer arguments on an open descriptor; it touches no memory of ours.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// A heap buffer whose usable part starts on a 4096-byte boundary (what O_DIRECT needs), without
/// an unsafe allocator call: over-allocate and start at the first aligned byte.
#[derive(Debug)]
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

pub const ALIGN: usize = 4096;

impl AlignedBuf {
    /// `len` bytes set to `fill` (which also faults the pages in before any timing).
    pub fn new(len: usize, fill: u8) -> Self {
        let raw = vec![fill; len + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        Self { raw, start, len }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_slice().as_mut_ptr()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
}

/// How the kernel should drive a ring: the user's `--hipri` and `--sqpoll`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingOpts {
    /// IORING_SETUP_IOPOLL: completions are polled from the device's poll queues, not signalled
    /// by interrupts (needs O_DIRECT and a driver with poll queues).
    pub iopoll: bool,
    /// IORING_SETUP_SQPOLL: a kernel thread takes submissions from the ring, sparing a system
    /// call per batch.
    pub sqpoll: bool,
}

/// How long the SQPOLL thread spins without work before it sleeps, ms (fio's default is 1 s;
/// the engine never leaves the ring idle that long while a test runs).
const SQPOLL_IDLE_MS: u32 = 1000;

/// Whether the block device holding a file (its `st_dev`) has poll queues: `Some(false)` when
/// sysfs says `queue/io_poll` is 0, `None` when the device has no sysfs entry to ask (a
/// network or memory filesystem, btrfs and overlay's anonymous devices).
pub fn device_polls(sys_root: &Path, dev: u64) -> Option<(String, bool)> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let node = sys_root.join(format!("dev/block/{major}:{minor}"));
    // A partition's queue is its disk's.
    let queue = [node.join("queue"), node.join("../queue")]
        .into_iter()
        .find(|q| q.join("io_poll").exists())?;
    let name = std::fs::canonicalize(queue.join(".."))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{major}:{minor}"));
    let polls = std::fs::read_to_string(queue.join("io_poll")).ok()?;
    Some((name, polls.trim() != "0"))
}

/// CPU time of the whole process (every thread, the kernel's io_uring workers included), s.
pub fn process_cpu_seconds() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the zeroed `struct rusage` we own.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: zero-initialised plain integers, and getrusage filled them.
    let u = unsafe { u.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// One finished operation: its slot and the kernel's result (bytes, or `-errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub slot: usize,
    pub result: i32,
}

/// An io_uring on one file with one buffer per slot (one slot per operation in flight).
pub struct Uring<'f> {
    ring: IoUring,
    file: &'f File,
    bufs: Vec<AlignedBuf>,
    busy: Vec<bool>,
    in_flight: usize,
    fixed_file: bool,
    fixed_bufs: bool,
    /// Submit READ_FIXED/WRITE_FIXED (when the buffers are registered).
    use_fixed: bool,
    /// Mark each operation IOSQE_ASYNC (see [`Self::use_async`]).
    force_async: bool,
}

impl std::fmt::Debug for Uring<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring")
            .field("slots", &self.bufs.len())
            .field("in_flight", &self.in_flight)
            .field("fixed_file", &self.fixed_file)
            .field("fixed_bufs", &self.fixed_bufs)
            .finish_non_exhaustive()
    }
}

impl<'f> Uring<'f> {
    /// A ring for `slots` operations of at most `buf_len` bytes on `file`. Fails when the kernel
    /// has no io_uring (ENOSYS), forbids it (EPERM: `kernel.io_uring_disabled`, seccomp) or lacks
    /// IORING_OP_READ/WRITE (before 5.6), or refuses a polled ring `opts` asks for. Registering the
    /// file and the buffers (fewer per-operation costs) is tried and skipped when refused
    /// (RLIMIT_MEMLOCK).
    pub fn new(file: &'f File, slots: usize, buf_len: usize, opts: RingOpts) -> io::Result<Self> {
        let slots = slots.clamp(1, 1024);
        let entries = u32::try_from(slots.next_power_of_two()).unwrap_or(1024);
        let ring = if opts.iopoll || opts.sqpoll {
            // No fallback: the user asked for exactly this ring. DEFER_TASKRUN does not go with
            // SQPOLL (the kernel thread, not this one, submits).
            let mut b = IoUring::builder();
            if opts.iopoll {
                b.setup_iopoll();
            }
            if opts.sqpoll {
                b.setup_sqpoll(SQPOLL_IDLE_MS);
            }
            b.build(entries)?
        } else {
            // Completions run in this thread when it waits (6.1), else at the next transition
            // (5.19).
            IoUring::builder()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .build(entries)
                .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
                .or_else(|_| IoUring::new(entries))?
        };
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !probe.is_supported(opcode::Read::CODE) || !probe.is_supported(opcode::Write::CODE) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's io_uring lacks IORING_OP_READ/WRITE (Linux < 5.6)",
            ));
        }
        let fixed_file = ring.submitter().register_files(&[file.as_raw_fd()]).is_ok();
        let mut bufs: Vec<AlignedBuf> =
            (0..slots).map(|_| AlignedBuf::new(buf_len, 0x5a)).collect();
        let iovecs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: each iovec covers one live buffer of `bufs`, which this struct owns, never
        // resizes, and keeps until the ring is dropped (see `Drop`).
        let fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(Self {
            ring,
            file,
            busy: vec![false; slots],
            bufs,
            in_flight: 0,
            fixed_file,
            fixed_bufs,
            use_fixed: fixed_bufs,
            force_async: false,
        })
    }

    pub fn slots(&self) -> usize {
        self.bufs.len()
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Use the registered buffers (READ_FIXED/WRITE_FIXED) from now on, or plain READ/WRITE on
    /// the same buffers. Registered buffers spare the kernel pinning the pages of every
    /// operation; plain ones let it copy with `copy_to_user` rather than a memcpy per page.
    pub fn use_registered(&mut self, on: bool) {
        self.use_fixed = on && self.fixed_bufs;
    }

    /// Hand every operation straight to the kernel's io-wq workers (IOSQE_ASYNC) from now on,
    /// instead of first trying it inline without blocking. Where the file cannot do I/O without
    /// blocking (tmpfs, whose reads and writes return EAGAIN to the inline attempt) every
    /// operation goes to a worker anyway, and the failed attempt before it costs the submitting
    /// thread a trip through the read path per operation.
    pub fn use_async(&mut self, on: bool) {
        self.force_async = on;
    }

    /// The buffer of an idle slot.
    ///
    /// # Panics
    /// When the slot has an operation in flight.
    pub fn buf_mut(&mut self, slot: usize) -> &mut [u8] {
        assert!(!self.busy[slot], "slot {slot} is in flight");
        self.bufs[slot].as_mut_slice()
    }

    /// Queue a read or write of `len` bytes at `offset` from/to the slot's buffer; it goes to the
    /// kernel at the next [`Self::submit_and_wait`].
    ///
    /// # Panics
    /// When the slot is in flight or `len` exceeds the buffer.
    pub fn queue(&mut self, slot: usize, kind: IoKind, offset: u64, len: usize) -> io::Result<()> {
        assert!(!self.busy[slot], "slot {slot} is in flight");
        assert!(len <= self.bufs[slot].len());
        let ptr = self.bufs[slot].as_mut_ptr();
        let len32 = u32::try_from(len).unwrap_or(u32::MAX);
        let idx = u16::try_from(slot).unwrap_or(u16::MAX);
        let raw = self.file.as_raw_fd();
        let entry = match (kind, self.use_fixed, self.fixed_file) {
            (IoKind::Read, true, true) => opcode::ReadFixed::new(types::Fixed(0), ptr, len32, idx)
                .offset(offset)
                .build(),
            (IoKind::Read, true, false) => opcode::ReadFixed::new(types::Fd(raw), ptr, len32, idx)
                .offset(offset)
                .build(),
            (IoKind::Read, false, true) => opcode::Read::new(types::Fixed(0), ptr, len32)
                .offset(offset)
                .build(),
            (IoKind::Read, false, false) => opcode::Read::new(types::Fd(raw), ptr, len32)
                .offset(offset)
                .build(),
            (IoKind::Write, true, true) => {
                opcode::WriteFixed::new(types::Fixed(0), ptr, len32, idx)
                    .offset(offset)
                    .build()
            }
            (IoKind::Write, true, false) => {
                opcode::WriteFixed::new(types::Fd(raw), ptr, len32, idx)
                    .offset(offset)
                    .build()
            }
            (IoKind::Write, false, true) => opcode::Write::new(types::Fixed(0), ptr, len32)
                .offset(offset)
                .build(),
            (IoKind::Write, false, false) => opcode::Write::new(types::Fd(raw), ptr, len32)
                .offset(offset)
                .build(),
        }
        .user_data(slot as u64);
        let entry = if self.force_async {
            entry.flags(squeue::Flags::ASYNC)
        } else {
            entry
        };
        // SAFETY: the entry points into `self.bufs[slot]` (`len` bytes, checked above), which
        // stays allocated until this ring is dropped; `busy[slot]` keeps `buf_mut` and `queue`
        // off it until its completion is reaped; the file outlives `self` ('f).
        let pushed = unsafe { self.ring.submission().push(&entry) };
        pushed.map_err(|_| io::Error::other("io_uring submission queue full"))?;
        self.busy[slot] = true;
        self.in_flight += 1;
        Ok(())
    }

    /// Submit what is queued, without waiting.
    pub fn submit(&mut self) -> io::Result<usize> {
        self.ring.submit()
    }

    /// Submit what is queued and wait for at least `want` completions (EINTR is returned, and
    /// what was queued stays queued or submitted: call again).
    pub fn submit_and_wait(&mut self, want: usize) -> io::Result<usize> {
        self.ring.submit_and_wait(want)
    }

    /// Submit what is queued and run the completions that are due (deferred task work), without
    /// waiting for any: [`Self::reap`] then finds what finished.
    pub fn submit_and_collect(&mut self) -> io::Result<usize> {
        if self.ring.params().is_setup_sqpoll() {
            // The kernel thread submits (woken if it sleeps) and posts completions itself.
            return self.ring.submit();
        }
        let queued = u32::try_from(self.ring.submission().len()).unwrap_or(u32::MAX);
        // SAFETY: `enter` with no argument (`None`), as `submit` does; GETEVENTS with
        // min_complete 0 only runs the work that is due and returns.
        unsafe {
            self.ring.submitter().enter::<libc::sigset_t>(
                queued,
                0,
                io_uring::EnterFlags::GETEVENTS.bits(),
                None,
            )
        }
    }

    /// Move finished operations to `out`; their slots become idle.
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            let slot = usize::try_from(cqe.user_data()).unwrap_or(usize::MAX);
            if let Some(b) = self.busy.get_mut(slot) {
                if *b {
                    *b = false;
                    self.in_flight -= 1;
                }
                out.push(Completion {
                    slot,
                    result: cqe.result(),
                });
            }
        }
    }
}

impl Drop for Uring<'_> {
    fn drop(&mut self) {
        // Wait for every operation still using a buffer; a bounded number of tries.
        let mut sink = Vec::new();
        let mut tries = 0;
        while self.in_flight > 0 && tries < 10_000 {
            tries += 1;
            match self.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(_) => break,
            }
            sink.clear();
            self.reap(&mut sink);
        }
        if self.in_flight > 0 {
            // The kernel may still write into them: never free them.
            std::mem::forget(std::mem::take(&mut self.bufs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn aligned_buffers() {
        for len in [1, 4096, 1 << 20] {
            let mut b = AlignedBuf::new(len, 7);
            assert_eq!(b.as_mut_slice().len(), len);
            assert_eq!(b.as_slice().as_ptr() as usize % ALIGN, 0);
            assert!(b.as_slice().iter().all(|&x| x == 7));
        }
    }

    #[test]
    fn poll_queues_from_sysfs() {
        let root = tempfile::tempdir().unwrap();
        let disk = root.path().join("devices/virtual/block/vdz");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(disk.join("vdz1")).unwrap();
        std::fs::write(disk.join("queue/io_poll"), "0\n").unwrap();
        std::fs::create_dir_all(root.path().join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&disk, root.path().join("dev/block/253:16")).unwrap();
        std::os::unix::fs::symlink(disk.join("vdz1"), root.path().join("dev/block/253:17"))
            .unwrap();
        let dev = |min| libc::makedev(253, min);
        assert_eq!(
            device_polls(root.path(), dev(16)),
            Some(("vdz".into(), false))
        );
        assert_eq!(
            device_polls(root.path(), dev(17)),
            Some(("vdz".into(), false))
        );
        std::fs::write(disk.join("queue/io_poll"), "1\n").unwrap();
        assert_eq!(
            device_polls(root.path(), dev(17)),
            Some(("vdz".into(), true))
        );
        assert_eq!(device_polls(root.path(), libc::makedev(0, 44)), None);
    }

    #[test]
    fn statvfs_of_root() {
        let s = statvfs(Path::new("/")).unwrap();
        assert!(s.total_bytes > 0 && s.avail_bytes <= s.total_bytes);
        assert!(statvfs(Path::new("/no/such/dir")).is_err());
    }

    #[test]
    fn uring_reads_what_was_written() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..16384u32).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let Ok(mut ring) = Uring::new(&f, 4, 4096, RingOpts::default()) else {
            eprintln!("io_uring unavailable here: skipped");
            return;
        };
        for slot in 0..4 {
            ring.queue(slot, IoKind::Read, slot as u64 * 4096, 4096)
                .unwrap();
        }
        let mut done = Vec::new();
        while ring.in_flight() > 0 {
            ring.submit_and_wait(1).unwrap();
            ring.reap(&mut done);
        }
        assert_eq!(done.len(), 4);
        for c in &done {
            assert_eq!(c.result, 4096);
            let want = &data[c.slot * 4096..(c.slot + 1) * 4096];
            assert_eq!(ring.buf_mut(c.slot), want);
        }
        drop(ring);
        drop_cache(&f).unwrap();
    }
}
