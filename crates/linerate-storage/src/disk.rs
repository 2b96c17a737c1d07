//! Disk (and mount) throughput, IOPS and latency on any directory: a local disk, tmpfs, an NFS or
//! SMB mount.
//!
//! [`run`] creates its own test file `.linerate-disk-<pid>-<random>` in the directory, sized to
//! defeat caches and bounded by the free space ([`crate::size`]), fills it with non-zero data, runs
//! the tests one after the other for a fixed time each, and deletes the file: at the end, on an
//! error, and on SIGINT/SIGTERM (the loops see the signal, the guard removes the file). It touches
//! nothing else.
//!
//! - **O_DIRECT** is tried first; where the filesystem refuses it (ramfs, tmpfs before Linux 6.6)
//!   the I/O is buffered and every result says `direct: false`. Buffered runs stay honest: the
//!   page cache is dropped (fdatasync + posix_fadvise DONTNEED) before each read test and each
//!   time a sequential pass starts over, and write tests end with an fdatasync that is counted in
//!   their time.
//! - **Engines**: io_uring ([`crate::sys::Uring`], registered file and buffers when allowed), or
//!   a pool of `queue_depth` threads doing pread/pwrite when io_uring is unavailable or not wanted.
//! - **Memory**: `queue_depth × block` bytes of buffers (4096-aligned), stated in the report as
//!   `buffer_bytes`; no file is ever read into memory.
//! - **Figures**: bytes moved over the time from the first submission to the last completion
//!   (plus the final fdatasync for writes); latency of every operation from its submission to its
//!   completion, in an HDR histogram.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::engine::{self, Access, Job, JobOut, JobOutcome, RingPolicy, StopCause, Watch};
use crate::mountinfo::{self, MountEntry};
use crate::signals;
use crate::size::{self, Medium, SizeError, SizeInput, MIB};
use crate::sys::{self, IoKind, RingOpts, Uring, ALIGN};
use linerate_stats::LatencyHistogram;
use linerate_units::fmt_bytes;
use linerate_units::r3;

// The output data lives in `linerate-results` (renderers depend on it, not on this crate).
use linerate_results::disk::{
    DiskJobResult, DiskJobStep, DiskReport, DiskTestKind, DiskTestResult, Engine,
};

/// Largest block: 64 MiB.
pub const MAX_BLOCK: u32 = 64 << 20;
/// Largest buffer footprint (`queue_depth × block`): 1 GiB.
pub const MAX_BUFFER_BYTES: u64 = 1 << 30;
/// Largest queue depth.
pub const MAX_QUEUE_DEPTH: u32 = 1024;
/// Most jobs (threads, each with its own ring and region of the file).
pub const MAX_JOBS: u32 = 256;
/// A job added while searching for the number of jobs must add at least this fraction.
pub const JOB_GAIN: f64 = 0.05;
/// Prefix of every test file's name.
pub const FILE_PREFIX: &str = ".linerate-disk-";

/// Which engine to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// io_uring, else the thread pool.
    #[default]
    Auto,
    IoUring,
    Sync,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct DiskPlan {
    /// Test file size; `None`: chosen to defeat caches ([`crate::size`]).
    pub size: Option<u64>,
    /// Time of each test.
    pub duration: Duration,
    /// Block of the sequential tests (and the fill).
    pub seq_block: u32,
    /// Block of the random tests.
    pub rand_block: u32,
    /// Operations in flight (io_uring) or threads (sync).
    pub queue_depth: u32,
    /// In this order.
    pub tests: Vec<DiskTestKind>,
    pub engine: EngineChoice,
    /// Try O_DIRECT (false: buffered I/O, on purpose).
    pub direct: bool,
    /// Jobs at once, each on its own thread with its own ring (or thread pool) and region of
    /// the file; with `scale_jobs`, the most to try.
    pub jobs: u32,
    /// Search for the number of jobs: 1, 2, ... up to `jobs`, stopping when one more adds less
    /// than [`JOB_GAIN`]; each test reports its best.
    pub scale_jobs: bool,
    /// Polled I/O (IORING_SETUP_IOPOLL); refused where the file or device cannot poll.
    pub hipri: bool,
    /// A kernel thread takes submissions (IORING_SETUP_SQPOLL); refused where the kernel will not.
    pub sqpoll: bool,
    /// Set to stop the run early (as a signal would); the file is deleted.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for DiskPlan {
    fn default() -> Self {
        Self {
            size: None,
            duration: Duration::from_secs(5),
            seq_block: 1 << 20,
            rand_block: 4096,
            queue_depth: 32,
            tests: vec![
                DiskTestKind::SeqRead,
                DiskTestKind::RandRead,
                DiskTestKind::SeqWrite,
                DiskTestKind::RandWrite,
            ],
            engine: EngineChoice::Auto,
            direct: true,
            jobs: 1,
            scale_jobs: false,
            hipri: false,
            sqpoll: false,
            cancel: None,
        }
    }
}

impl DiskPlan {
    fn block(&self, kind: DiskTestKind) -> u32 {
        if kind.is_seq() {
            self.seq_block
        } else {
            self.rand_block
        }
    }

    /// The largest block any phase uses (the fill uses the sequential block).
    fn max_block(&self) -> u32 {
        self.seq_block
            .max(if self.tests.iter().any(|t| !t.is_seq()) {
                self.rand_block
            } else {
                0
            })
    }

    /// Bytes of I/O buffers the run holds: `jobs × queue_depth × largest block`.
    pub fn buffer_bytes(&self) -> u64 {
        u64::from(self.jobs) * u64::from(self.queue_depth) * u64::from(self.max_block())
    }

    fn ring_opts(&self) -> RingOpts {
        RingOpts {
            iopoll: self.hipri,
            sqpoll: self.sqpoll,
        }
    }

    /// Refuse plans that cannot run (the message names the parameter).
    pub fn validate(&self) -> Result<(), String> {
        for (name, b) in [("block", self.seq_block), ("random block", self.rand_block)] {
            if b == 0 || !(b as usize).is_multiple_of(ALIGN) || b > MAX_BLOCK {
                return Err(format!(
                    "{name} {b}: must be a multiple of 4096 bytes (what O_DIRECT needs), at most 64 MiB"
                ));
            }
        }
        if self.queue_depth == 0 || self.queue_depth > MAX_QUEUE_DEPTH {
            return Err(format!(
                "queue depth {}: must be between 1 and {MAX_QUEUE_DEPTH}",
                self.queue_depth
            ));
        }
        if self.jobs == 0 || self.jobs > MAX_JOBS {
            return Err(format!(
                "jobs {}: must be between 1 and {MAX_JOBS}",
                self.jobs
            ));
        }
        if self.buffer_bytes() > MAX_BUFFER_BYTES {
            return Err(format!(
                "jobs × queue depth × block = {} of buffers: at most 1 GiB; lower --jobs, --qd or --block",
                fmt_bytes(self.buffer_bytes())
            ));
        }
        for (on, flag) in [(self.hipri, "--hipri"), (self.sqpoll, "--sqpoll")] {
            if on && self.engine == EngineChoice::Sync {
                return Err(format!(
                    "{flag} is an io_uring option: it does not go with --engine sync"
                ));
            }
        }
        if self.hipri && !self.direct {
            return Err(
                "--hipri polls for completions of O_DIRECT I/O: it does not go with --buffered"
                    .into(),
            );
        }
        if self.duration.is_zero() {
            return Err("the time per test must be positive".into());
        }
        if self.tests.is_empty() {
            return Err("no test to run".into());
        }
        for (i, t) in self.tests.iter().enumerate() {
            if self.tests[..i].contains(t) {
                return Err(format!("test {t} is listed twice"));
            }
        }
        if let Some(s) = self.size {
            if s < u64::from(self.max_block()) {
                return Err(format!(
                    "size {}: smaller than one block ({})",
                    fmt_bytes(s),
                    fmt_bytes(u64::from(self.max_block()))
                ));
            }
        }
        Ok(())
    }
}

/// Progress, as it happens.
#[derive(Debug)]
pub enum DiskEvent<'a> {
    /// The test file exists and its size is chosen; filling it comes next.
    Prepared {
        file: &'a Path,
        file_bytes: u64,
        direct: bool,
        engine: Engine,
        filesystem: &'a str,
    },
    Filling {
        done_bytes: u64,
        total_bytes: u64,
    },
    TestStarted {
        kind: DiskTestKind,
        duration: Duration,
    },
    TestDone(&'a DiskTestResult),
}

/// Why a run failed. Each names the path.
#[derive(Debug, Error)]
pub enum DiskErrorKind {
    #[error("{0}")]
    InvalidPlan(String),
    #[error("{}: no such directory; give an existing directory on the disk or mount to test (e.g. /tmp, or a directory you own on it)", .path.display())]
    NotFound { path: PathBuf },
    #[error("{}: not a directory (give the directory to test in)", .path.display())]
    NotADirectory { path: PathBuf },
    #[error("{}: read-only filesystem ({filesystem}): the test needs to write its own file there", .path.display())]
    ReadOnly { path: PathBuf, filesystem: String },
    #[error("{}: permission denied: cannot create the test file there; give a directory on the same disk that you can write to, or run as a user who can write there", .path.display())]
    PermissionDenied { path: PathBuf },
    #[error("{}: {cause}; pass a smaller --size or free some space", .path.display())]
    NoSpace { path: PathBuf, cause: SizeError },
    #[error("{}: the filesystem filled up while {during} ({cause}); stopped, the test file was deleted", .path.display())]
    DiskFull {
        path: PathBuf,
        during: String,
        cause: io::Error,
    },
    #[error("{}: the directory or the test file in it was removed while {during}", .path.display())]
    Vanished { path: PathBuf, during: String },
    #[error("{}: the test file was truncated by something else while {during}", .path.display())]
    Truncated { path: PathBuf, during: String },
    #[error("{}: interrupted by {signal} while {during}; the test file was deleted", .path.display())]
    Interrupted {
        path: PathBuf,
        signal: &'static str,
        during: String,
    },
    #[error("io_uring is not available here ({reason}); use --engine sync or auto")]
    EngineUnavailable { reason: String },
    #[error("{}: {option} refused: {reason}", .path.display())]
    Unsupported {
        path: PathBuf,
        option: &'static str,
        reason: String,
    },
    #[error("{}: {during}: {cause}", .path.display())]
    Io {
        path: PathBuf,
        during: String,
        cause: io::Error,
    },
}

/// A failed run, with what it measured until then.
#[derive(Debug, Error)]
#[error("{kind}")]
pub struct DiskError {
    pub kind: DiskErrorKind,
    /// The report so far (tests completed, the one that stopped with its `error`), when the run
    /// got as far as looking at the directory.
    pub partial: Option<Box<DiskReport>>,
}

impl From<DiskErrorKind> for DiskError {
    fn from(kind: DiskErrorKind) -> Self {
        Self {
            kind,
            partial: None,
        }
    }
}

/// The test file: created here, deleted on drop (only if the name still points to it).
#[derive(Debug)]
struct TestFile {
    path: PathBuf,
    file: File,
    direct: bool,
    dev: u64,
    ino: u64,
}

impl TestFile {
    fn name() -> String {
        let mut r = [0u8; 4];
        if getrandom::fill(&mut r).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            r = t.to_le_bytes();
        }
        format!(
            "{FILE_PREFIX}{}-{:08x}",
            std::process::id(),
            u32::from_le_bytes(r)
        )
    }

    /// Create the file (O_EXCL, mode 0600); then, if wanted, reopen it with O_DIRECT, keeping
    /// the buffered descriptor where the filesystem refuses (EINVAL).
    fn create(dir: &Path, want_direct: bool) -> io::Result<Self> {
        let path = dir.join(Self::name());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let meta = file.metadata();
        let mut tf = Self {
            path,
            file,
            direct: false,
            dev: 0,
            ino: 0,
        };
        let meta = meta?;
        (tf.dev, tf.ino) = (meta.dev(), meta.ino());
        if want_direct {
            match OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(&tf.path)
            {
                Ok(f) => {
                    tf.file = f;
                    tf.direct = true;
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(tf)
    }

    /// Delete the file if its name still refers to it. `Ok` when it is gone.
    fn remove(&self) -> io::Result<()> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.dev() == self.dev && m.ino() == self.ino => {
                match std::fs::remove_file(&self.path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                }
            }
            // Gone, or someone else's file now: not ours to delete.
            _ => Ok(()),
        }
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

fn ram_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| linerate_units::meminfo_bytes(&s, "MemTotal"))
        .unwrap_or(4 << 30)
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// An error while creating or preparing: name the cause plainly.
fn classify(path: &Path, fs: &str, during: &str, e: io::Error) -> DiskErrorKind {
    let path = path.to_path_buf();
    match errno(&e) {
        libc::ENOENT | libc::ESTALE => DiskErrorKind::Vanished {
            path,
            during: during.into(),
        },
        libc::ENOTDIR => DiskErrorKind::NotADirectory { path },
        libc::EROFS => DiskErrorKind::ReadOnly {
            path,
            filesystem: fs.into(),
        },
        libc::EACCES | libc::EPERM => DiskErrorKind::PermissionDenied { path },
        libc::ENOSPC | libc::EDQUOT => DiskErrorKind::DiskFull {
            path,
            during: during.into(),
            cause: e,
        },
        _ => DiskErrorKind::Io {
            path,
            during: during.into(),
            cause: e,
        },
    }
}

fn stop_error(path: &Path, fs: &str, during: &str, stop: StopCause) -> DiskErrorKind {
    match stop {
        StopCause::Io(err) => classify(path, fs, during, err),
        StopCause::Truncated => DiskErrorKind::Truncated {
            path: path.into(),
            during: during.into(),
        },
        StopCause::Vanished => DiskErrorKind::Vanished {
            path: path.into(),
            during: during.into(),
        },
        StopCause::Signal(s) => DiskErrorKind::Interrupted {
            path: path.into(),
            signal: signals::name(s),
            during: during.into(),
        },
        StopCause::Cancelled => DiskErrorKind::Interrupted {
            path: path.into(),
            signal: "a stop request",
            during: during.into(),
        },
    }
}

/// The engine of a run: the calling thread's io_uring for the whole run (other jobs make their
/// own with the same options), or the thread pool.
enum Runner<'f> {
    Uring(Box<Uring<'f>>, RingOpts, usize),
    Sync,
}

impl Runner<'_> {
    fn engine(&self) -> Engine {
        match self {
            Self::Uring(..) => Engine::IoUring,
            Self::Sync => Engine::Sync,
        }
    }

    /// Run `job` as `jobs` jobs (see [`engine::run_jobs`]).
    fn run(
        &mut self,
        file: &File,
        job: &Job,
        jobs: usize,
        watch: &mut Watch<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> (Vec<JobOut>, Option<StopCause>) {
        let engines = match self {
            Self::Uring(ring, opts, buf_len) => engine::Engines::Uring {
                ring,
                opts: *opts,
                buf_len: *buf_len,
            },
            Self::Sync => engine::Engines::Sync,
        };
        engine::run_jobs(engines, file, job, jobs, watch, progress)
    }
}

fn seed() -> u64 {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    u64::from_le_bytes(b) | 1
}

/// Measure `plan` in the directory `path`. `progress` sees each step as it happens.
///
/// On failure the error carries the report so far (`partial`), and the test file is gone.
pub fn run(
    path: &Path,
    plan: &DiskPlan,
    mut progress: impl FnMut(&DiskEvent),
) -> Result<DiskReport, DiskError> {
    plan.validate().map_err(DiskErrorKind::InvalidPlan)?;
    let _armed = signals::Armed::new();
    check_dir(path)?;
    let dir = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mount: Option<MountEntry> = mountinfo::lookup(&dir);
    let filesystem = mount
        .as_ref()
        .map_or_else(|| "unknown".to_string(), MountEntry::describe);
    let mut report = empty_report(path, plan, &filesystem, mount.as_ref());
    if mount.as_ref().is_some_and(|m| m.read_only) {
        let kind = DiskErrorKind::ReadOnly {
            path: path.into(),
            filesystem,
        };
        return Err(fail(report, kind));
    }

    // The test file: from here on, the guard deletes it whatever happens.
    let tf = match TestFile::create(&dir, plan.direct) {
        Ok(tf) => tf,
        Err(e) => {
            let kind = classify(path, &filesystem, "creating the test file", e);
            return Err(fail(report, kind));
        }
    };
    report.direct = tf.direct;
    let medium = medium(mount.as_ref());
    let space = sys::statvfs(&dir).ok();
    let free = space.filter(|s| s.total_bytes > 0).map(|s| s.avail_bytes);
    let ram = ram_bytes();
    let file_bytes = match file_size(path, plan, &tf, medium, free, ram) {
        Ok(s) => s,
        Err(kind) => return Err(fail(report, kind)),
    };
    report.file_bytes = file_bytes;
    report.hipri = plan.hipri;
    report.sqpoll = plan.sqpoll;
    let mut runner = match open_runner(path, plan, &tf, &filesystem, &mut report.notes) {
        Ok(r) => r,
        Err(kind) => return Err(fail(report, kind)),
    };
    let engine = runner.engine();
    report.engine = Some(engine);
    add_notes(&mut report, plan, mount.as_ref(), tf.direct, free, ram);

    progress(&DiskEvent::Prepared {
        file: &tf.path,
        file_bytes,
        direct: tf.direct,
        engine,
        filesystem: &filesystem,
    });
    let mut watch = Watch::new(&tf.file, plan.cancel.as_deref());
    if let Some(stop) = watch.check(Instant::now()) {
        let kind = stop_error(path, &filesystem, "preparing", stop);
        return Err(fail(report, kind));
    }
    let session = Session {
        path,
        filesystem: &filesystem,
        plan,
        tf: &tf,
        file_bytes,
        seed: seed(),
        kernel_copies: medium == Medium::Memory || !tf.direct,
        memory_fs: medium == Medium::Memory,
    };
    if let Err(kind) = session.fill(&mut runner, &mut watch, &mut progress) {
        return Err(fail(report, kind));
    }
    for (i, &kind) in plan.tests.iter().enumerate() {
        let (result, err) =
            session.measure(i, kind, &mut runner, &mut watch, &mut progress, &report);
        progress(&DiskEvent::TestDone(&result));
        report.tests.push(result);
        if let Some(kind) = err {
            return Err(fail(report, kind));
        }
    }
    drop(runner);
    if let Err(e) = tf.remove() {
        report.notes.push(format!(
            "could not delete the test file {}: {e}",
            tf.path.display()
        ));
    }
    Ok(report)
}

/// `path` must be an existing directory.
fn check_dir(path: &Path) -> Result<(), DiskError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(DiskErrorKind::NotADirectory { path: path.into() }.into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(DiskErrorKind::NotFound { path: path.into() }.into())
        }
        Err(e) => Err(classify(path, "unknown", "looking at the directory", e).into()),
    }
}

/// The report before anything is measured: where, on what, with which buffers.
fn empty_report(
    path: &Path,
    plan: &DiskPlan,
    filesystem: &str,
    mount: Option<&MountEntry>,
) -> DiskReport {
    DiskReport {
        path: path.to_path_buf(),
        filesystem: filesystem.to_string(),
        mount_point: mount.map(|m| m.mount_point.clone()),
        file_bytes: 0,
        buffer_bytes: plan.buffer_bytes(),
        direct: false,
        engine: None,
        hipri: false,
        sqpoll: false,
        tests: Vec::new(),
        notes: Vec::new(),
        error: None,
    }
}

/// The error `kind`, carrying the report so far (with the error in it) as `partial`.
fn fail(mut report: DiskReport, kind: DiskErrorKind) -> DiskError {
    report.error = Some(kind.to_string());
    DiskError {
        kind,
        partial: Some(Box::new(report)),
    }
}

/// What holds the data: RAM (tmpfs), another machine (NFS, SMB), or a local device.
fn medium(mount: Option<&MountEntry>) -> Medium {
    match mount {
        Some(m) if m.is_memory() => Medium::Memory,
        Some(m) if m.is_network() => Medium::Network,
        _ => Medium::Local,
    }
}

/// The test file's size: the plan's, or one that defeats caches, within the free space.
fn file_size(
    path: &Path,
    plan: &DiskPlan,
    tf: &TestFile,
    medium: Medium,
    free: Option<u64>,
    ram: u64,
) -> Result<u64, DiskErrorKind> {
    let size_input = SizeInput {
        requested: plan.size,
        ram_bytes: ram,
        free_bytes: free,
        direct: tf.direct,
        medium,
        block_bytes: u64::from(plan.seq_block),
    };
    size::choose(&size_input).map_err(|cause| DiskErrorKind::NoSpace {
        path: path.into(),
        cause,
    })
}

/// The engine the plan asks for (a ring per job); with `Auto`, the thread pool when io_uring is
/// unavailable (and a note in `notes` saying so). `--hipri` and `--sqpoll` never fall back: they
/// are refused with the reason.
fn open_runner<'f>(
    path: &Path,
    plan: &DiskPlan,
    tf: &'f TestFile,
    filesystem: &str,
    notes: &mut Vec<String>,
) -> Result<Runner<'f>, DiskErrorKind> {
    let qd = plan.queue_depth as usize;
    let max_block = plan.max_block() as usize;
    let opts = plan.ring_opts();
    let refuse = |option: &'static str, reason: String| DiskErrorKind::Unsupported {
        path: path.into(),
        option,
        reason,
    };
    if opts.iopoll {
        if !tf.direct {
            return Err(refuse(
                "--hipri",
                format!("{filesystem} refuses O_DIRECT, and polled I/O needs it"),
            ));
        }
        if let Some((dev, false)) = sys::device_polls(Path::new("/sys"), tf.dev) {
            return Err(refuse("--hipri", format!(
                "the device {dev} has no poll queues (/sys/block/{dev}/queue/io_poll is 0); polled I/O needs a driver with poll queues, e.g. NVMe with the nvme.poll_queues module parameter above 0"
            )));
        }
    }
    if plan.engine == EngineChoice::Sync {
        return Ok(Runner::Sync);
    }
    Ok(match Uring::new(&tf.file, qd, max_block, opts) {
        Ok(r) => Runner::Uring(Box::new(r), opts, max_block),
        Err(e) if opts.iopoll || opts.sqpoll => {
            let (option, ring) = if opts.iopoll {
                ("--hipri", "a polled (IORING_SETUP_IOPOLL)")
            } else {
                ("--sqpoll", "an SQPOLL (IORING_SETUP_SQPOLL)")
            };
            return Err(refuse(
                option,
                format!("the kernel refused {ring} io_uring: {e}"),
            ));
        }
        Err(e) if plan.engine == EngineChoice::IoUring => {
            return Err(DiskErrorKind::EngineUnavailable {
                reason: e.to_string(),
            })
        }
        Err(e) => {
            notes.push(format!(
                "io_uring is not available ({e}): {qd} threads doing pread/pwrite instead"
            ));
            Runner::Sync
        }
    })
}

/// What every step of a run shares once the test file is sized and the engine chosen.
struct Session<'a> {
    path: &'a Path,
    filesystem: &'a str,
    plan: &'a DiskPlan,
    tf: &'a TestFile,
    file_bytes: u64,
    seed: u64,
    /// The kernel copies the data (page cache or RAM filesystem), and the file lives in RAM
    /// (tmpfs): they decide how the ring is driven ([`engine::ring_policy`]).
    kernel_copies: bool,
    memory_fs: bool,
}

impl Session<'_> {
    /// Fill the file with non-zero data: reads must read something, and sparse files read as
    /// zeros.
    fn fill(
        &self,
        runner: &mut Runner<'_>,
        watch: &mut Watch<'_>,
        progress: &mut dyn FnMut(&DiskEvent),
    ) -> Result<(), DiskErrorKind> {
        let (plan, file_bytes) = (self.plan, self.file_bytes);
        let fill = Job {
            kind: IoKind::Write,
            access: Access::Seq,
            block: plan.seq_block as usize,
            qd: plan.queue_depth as usize,
            region_start: 0,
            file_bytes,
            duration: None,
            drop_on_wrap: false,
            ring: self.ring_policy(IoKind::Write, plan.seq_block as usize),
            seed: self.seed,
        };
        let (_, stop) = runner.run(&self.tf.file, &fill, 1, watch, &mut |done| {
            progress(&DiskEvent::Filling {
                done_bytes: done,
                total_bytes: file_bytes,
            });
        });
        let during = "filling the test file";
        if let Some(stop) = stop {
            return Err(self.stop_error(during, stop));
        }
        if let Err(e) = self.tf.file.sync_data() {
            return Err(classify(self.path, self.filesystem, during, e));
        }
        progress(&DiskEvent::Filling {
            done_bytes: file_bytes,
            total_bytes: file_bytes,
        });
        Ok(())
    }

    /// Run test number `i` of the plan: its result, and the error that stopped it if any.
    fn measure(
        &self,
        i: usize,
        kind: DiskTestKind,
        runner: &mut Runner<'_>,
        watch: &mut Watch<'_>,
        progress: &mut dyn FnMut(&DiskEvent),
        report: &DiskReport,
    ) -> (DiskTestResult, Option<DiskErrorKind>) {
        let plan = self.plan;
        progress(&DiskEvent::TestStarted {
            kind,
            duration: plan.duration,
        });
        let job = self.job(i, kind);
        let block = job.block;
        let Some(_) = engine::regions(self.file_bytes, block, plan.jobs as usize) else {
            let e = DiskErrorKind::InvalidPlan(format!(
                "{} jobs need a test file of at least {} (one {} block each); it is {}",
                plan.jobs,
                fmt_bytes(u64::from(plan.jobs) * block as u64),
                fmt_bytes(block as u64),
                fmt_bytes(self.file_bytes)
            ));
            let r = result(
                kind,
                plan,
                &Measured::default(),
                report,
                runner.engine(),
                Some(&e),
            );
            return (r, Some(e));
        };
        let counts: Vec<u32> = if plan.scale_jobs {
            (1..=plan.jobs).collect()
        } else {
            vec![plan.jobs]
        };
        let mut best: Option<Measured> = None;
        let mut steps = Vec::new();
        for n in counts {
            let m = self.measure_with(kind, &job, n, runner, watch);
            steps.push(DiskJobStep {
                jobs: n,
                iops: m.iops(),
                gb_per_s: r3(m.byte_rate() / 1e9),
                cpu_us_per_io: m.cpu_us_per_io(),
            });
            let prev = best.as_ref().map_or(0.0, Measured::rate);
            let stopped = m.stop.is_some();
            let gained = m.rate() >= prev * (1.0 + JOB_GAIN);
            if best.is_none() || m.rate() > prev || stopped {
                best = Some(m);
            }
            if stopped || !gained {
                break;
            }
        }
        let mut m = best.unwrap_or_default();
        let during = format!("running {kind}");
        let err = m.stop.take().map(|s| self.stop_error(&during, s));
        let mut r = result(kind, plan, &m, report, runner.engine(), err.as_ref());
        if plan.scale_jobs {
            r.job_scaling = steps;
        }
        (r, err)
    }

    /// One run of `job` as `n` jobs, with the fdatasync of a write test counted.
    fn measure_with(
        &self,
        kind: DiskTestKind,
        job: &Job,
        n: u32,
        runner: &mut Runner<'_>,
        watch: &mut Watch<'_>,
    ) -> Measured {
        let tf = self.tf;
        if !tf.direct {
            // Start from a cold cache (the medium, not RAM).
            let _ = tf.file.sync_data();
            let _ = sys::drop_cache(&tf.file);
        }
        let cpu0 = sys::process_cpu_seconds();
        let (outs, mut stop) = runner.run(&tf.file, job, n as usize, watch, &mut |_| {});
        let mut m = Measured::of(outs, n);
        if kind.is_write() && stop.is_none() {
            // Count the time to get the data onto the medium.
            let t = Instant::now();
            if let Err(e) = tf.file.sync_data() {
                stop = Some(StopCause::Io(e));
            }
            m.seconds += t.elapsed().as_secs_f64();
        }
        m.cpu_seconds = sys::process_cpu_seconds() - cpu0;
        m.stop = stop;
        m
    }

    /// A stop as an error; EOPNOTSUPP under `--hipri` is the file refusing polled I/O.
    fn stop_error(&self, during: &str, stop: StopCause) -> DiskErrorKind {
        match stop {
            StopCause::Io(e) if self.plan.hipri && e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                DiskErrorKind::Unsupported {
                    path: self.path.into(),
                    option: "--hipri",
                    reason: format!(
                        "{} does not support polled I/O (its first operation on a polled ring returned EOPNOTSUPP); polled I/O needs a block device with poll queues",
                        self.filesystem
                    ),
                }
            }
            s => stop_error(self.path, self.filesystem, during, s),
        }
    }

    /// The job for test number `i`: its direction, access pattern and block, for the plan's time.
    fn job(&self, i: usize, kind: DiskTestKind) -> Job {
        let plan = self.plan;
        let io_kind = if kind.is_write() {
            IoKind::Write
        } else {
            IoKind::Read
        };
        Job {
            kind: io_kind,
            access: if kind.is_seq() {
                Access::Seq
            } else {
                Access::Rand
            },
            block: plan.block(kind) as usize,
            qd: plan.queue_depth as usize,
            region_start: 0,
            file_bytes: self.file_bytes,
            duration: Some(plan.duration),
            drop_on_wrap: !self.tf.direct && kind == DiskTestKind::SeqRead,
            ring: self.ring_policy(io_kind, plan.block(kind) as usize),
            seed: self.seed.wrapping_add(i as u64 + 1),
        }
    }

    fn ring_policy(&self, kind: IoKind, block: usize) -> RingPolicy {
        engine::ring_policy(self.kernel_copies, self.memory_fs, kind, block)
    }
}

/// What the jobs of one run measured together.
#[derive(Debug, Default)]
struct Measured {
    jobs: u32,
    bytes: u64,
    ops: u64,
    /// The longest job's time (plus a write test's fdatasync).
    seconds: f64,
    hist: LatencyHistogram,
    per_job: Vec<DiskJobResult>,
    cpu_seconds: f64,
    stop: Option<StopCause>,
}

impl Measured {
    fn of(outs: Vec<JobOut>, jobs: u32) -> Self {
        let mut m = Measured {
            jobs,
            ..Measured::default()
        };
        for (k, o) in outs.into_iter().enumerate() {
            let out: JobOutcome = o.outcome;
            m.bytes += out.bytes;
            m.ops += out.ops;
            m.seconds = m.seconds.max(out.seconds);
            m.hist += &out.hist;
            let secs = out.seconds.max(1e-9);
            m.per_job.push(DiskJobResult {
                job: u32::try_from(k).unwrap_or(u32::MAX),
                region_start: o.region_start,
                region_bytes: o.region_bytes,
                bytes: out.bytes,
                ops: out.ops,
                seconds: linerate_units::round(out.seconds, 6),
                iops: (out.ops as f64 / secs).round(),
                gb_per_s: r3(out.bytes as f64 / secs / 1e9),
                latency_us: out.hist.summary().map(|l| l.rounded().without_spread()),
            });
        }
        m
    }

    /// Bytes per second (0 when nothing completed).
    fn byte_rate(&self) -> f64 {
        if self.ops == 0 {
            0.0
        } else {
            self.bytes as f64 / self.seconds.max(1e-9)
        }
    }

    fn iops(&self) -> f64 {
        if self.ops == 0 {
            0.0
        } else {
            (self.ops as f64 / self.seconds.max(1e-9)).round()
        }
    }

    /// What a job search compares: operations per second.
    fn rate(&self) -> f64 {
        self.ops as f64 / self.seconds.max(1e-9)
    }

    fn cpu_us_per_io(&self) -> Option<f64> {
        (self.ops > 0).then(|| linerate_units::round(self.cpu_seconds * 1e6 / self.ops as f64, 3))
    }
}

fn result(
    kind: DiskTestKind,
    plan: &DiskPlan,
    m: &Measured,
    report: &DiskReport,
    engine: Engine,
    err: Option<&DiskErrorKind>,
) -> DiskTestResult {
    let rate = m.byte_rate();
    DiskTestResult {
        kind,
        gbps: r3(rate * 8.0 / 1e9),
        gb_per_s: r3(rate / 1e9),
        iops: m.iops(),
        // The disk document carries no min or stddev (schemas/disk.schema.json).
        latency_us: m.hist.summary().map(|l| l.rounded().without_spread()),
        block_bytes: u64::from(plan.block(kind)),
        queue_depth: plan.queue_depth,
        direct: report.direct,
        file_bytes: report.file_bytes,
        engine,
        seconds: linerate_units::round(m.seconds, 6),
        bytes: m.bytes,
        ops: m.ops,
        filesystem: report.filesystem.clone(),
        error: err.map(ToString::to_string),
        jobs: m.jobs.max(1),
        per_job: m.per_job.clone(),
        latency_samples: m.hist.count(),
        cpu_percent: linerate_units::round(m.cpu_seconds * 100.0 / m.seconds.max(1e-9), 1),
        cpu_us_per_io: m.cpu_us_per_io(),
        job_scaling: Vec::new(),
    }
}

fn add_notes(
    report: &mut DiskReport,
    plan: &DiskPlan,
    mount: Option<&MountEntry>,
    direct: bool,
    free: Option<u64>,
    ram: u64,
) {
    let fs = report.filesystem.clone();
    let memory = mount.is_some_and(MountEntry::is_memory);
    let network = mount.is_some_and(MountEntry::is_network);
    if !direct && plan.direct {
        report.notes.push(format!(
            "{fs} refuses O_DIRECT: buffered I/O; the page cache is dropped before each read test and writes end with fdatasync (counted)"
        ));
    }
    if memory {
        report.notes.push(format!(
            "{fs} keeps its data in RAM: these are memory speeds, not a disk's"
        ));
    } else if !direct && report.file_bytes < 2 * ram {
        report.notes.push(format!(
            "buffered I/O on a file ({}) smaller than twice RAM ({}): random reads may come from the page cache",
            fmt_bytes(report.file_bytes),
            fmt_bytes(ram)
        ));
    }
    if network && direct {
        report.notes.push(format!(
            "{fs} is a network filesystem: O_DIRECT skips this machine's cache, not the server's"
        ));
    }
    if free.is_none() {
        report
            .notes
            .push(format!("{fs} does not report its free space"));
    }
    if report.file_bytes < 64 * MIB && plan.size.is_some() && !memory {
        report.notes.push(format!(
            "a small test file ({}): device caches may hold it",
            fmt_bytes(report.file_bytes)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_validation() {
        let ok = DiskPlan::default();
        assert!(ok.validate().is_ok());
        assert_eq!(ok.buffer_bytes(), 32 << 20);
        let bad = |f: &dyn Fn(&mut DiskPlan)| {
            let mut p = DiskPlan::default();
            f(&mut p);
            p.validate().unwrap_err()
        };
        assert!(bad(&|p| p.seq_block = 1000).contains("multiple of 4096"));
        assert!(bad(&|p| p.queue_depth = 0).contains("queue depth"));
        assert!(bad(&|p| {
            p.seq_block = 64 << 20;
            p.queue_depth = 32;
        })
        .contains("at most 1 GiB"));
        assert!(bad(&|p| p.tests.clear()).contains("no test"));
        assert!(bad(&|p| p.tests = vec![DiskTestKind::SeqRead; 2]).contains("twice"));
        assert!(bad(&|p| p.size = Some(4096)).contains("smaller than one block"));
        assert!(bad(&|p| p.duration = Duration::ZERO).contains("positive"));
    }

    #[test]
    fn errors_name_the_path() {
        let p = Path::new("/x/y");
        let e = classify(
            p,
            "ext4 /dev/vda",
            "creating",
            io::Error::from_raw_os_error(libc::EROFS),
        );
        assert!(matches!(e, DiskErrorKind::ReadOnly { .. }));
        assert!(e.to_string().starts_with("/x/y: read-only"), "{e}");
        let e = classify(
            p,
            "x",
            "creating",
            io::Error::from_raw_os_error(libc::EACCES),
        );
        assert!(e.to_string().contains("permission denied"), "{e}");
        let e = classify(
            p,
            "x",
            "running seq_write",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(
            e.to_string().contains("filled up while running seq_write"),
            "{e}"
        );
        let e = classify(p, "x", "y", io::Error::from_raw_os_error(libc::EIO));
        assert!(matches!(e, DiskErrorKind::Io { .. }));
    }
}
