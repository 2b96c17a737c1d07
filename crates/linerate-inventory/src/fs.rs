//! Reading sysfs/procfs values under a root, with every failure recorded
//! instead of raised.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use linerate_facts::{Problem, ProblemKind};

/// Largest value file we read (sysfs attributes are at most a page).
const MAX_VALUE_BYTES: u64 = 64 * 1024;
/// Most directory entries we look at in one directory (a hostile tree cannot make us loop forever).
pub const MAX_DIR_ENTRIES: usize = 4096;

/// A read-only view of a filesystem root (`/` or a fixture tree).
#[derive(Debug)]
pub struct Root {
    root: PathBuf,
    pub problems: Vec<Problem>,
}

impl Root {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            problems: Vec::new(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Display form of a path inside the root: `/sys/...`.
    pub fn display(&self, p: &Path) -> String {
        match p.strip_prefix(&self.root) {
            Ok(r) => format!("/{}", r.display()),
            Err(_) => p.display().to_string(),
        }
    }

    /// Read a value: `Ok(None)` when missing, `Err(reason)` when unreadable.
    pub fn read_raw(p: &Path) -> Result<Option<String>, String> {
        // Opened without blocking (a FIFO in a hostile tree must not hang a read), then checked
        // on the open file: one lookup of the path instead of two.
        let f = match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(p)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        read_file(f)
    }

    /// Read an optional value: missing is silent, unreadable is recorded.
    pub fn opt(&mut self, p: &Path, subject: &str) -> Option<String> {
        match Self::read_raw(p) {
            Ok(v) => v,
            Err(e) => {
                self.problem(p, subject, ProblemKind::Unreadable, e);
                None
            }
        }
    }

    /// Read a value that should exist: missing and unreadable are recorded.
    pub fn req(&mut self, p: &Path, subject: &str) -> Option<String> {
        match Self::read_raw(p) {
            Ok(Some(v)) => Some(v),
            Ok(None) => {
                self.problem(p, subject, ProblemKind::Missing, "file missing".into());
                None
            }
            Err(e) => {
                self.problem(p, subject, ProblemKind::Unreadable, e);
                None
            }
        }
    }

    /// Parse a value; a malformed one is recorded with what was expected.
    pub fn parse<T>(
        &mut self,
        p: &Path,
        subject: &str,
        value: Option<String>,
        expected: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let v = value?;
        match f(&v) {
            Some(t) => Some(t),
            None => {
                self.bad_value(p, subject, &v, expected);
                None
            }
        }
    }

    /// Record a value that does not parse: an empty one as unreadable (what a capture
    /// of an unreadable attribute looks like), anything else as malformed.
    pub fn bad_value(&mut self, p: &Path, subject: &str, v: &str, expected: &str) {
        if v.is_empty() {
            self.problem(
                p,
                subject,
                ProblemKind::Unreadable,
                format!("empty file, expected {expected}: a capture stores an attribute it could not read this way"),
            );
        } else {
            self.problem(
                p,
                subject,
                ProblemKind::Malformed,
                format!("found `{}`, expected {expected}", truncate(v, 80)),
            );
        }
    }

    /// Read a counter file: the one reader of counters, for probe's PMA counters and every
    /// interval of a soak. Missing is no counter (not every port has every counter), and so is
    /// `N/A (no PMA)`, which old kernels print for a port without a PMA; an unreadable file or
    /// a value that is not a decimal count is recorded.
    pub fn counter(&mut self, p: &Path, subject: &str) -> Option<u64> {
        let raw = Self::read_raw(p);
        self.counter_value(raw, || p.to_path_buf(), subject)
    }

    /// [`Root::counter`] for the file `name` of a directory opened once.
    pub fn counter_at(&mut self, dir: &DirReader, name: &str, subject: &str) -> Option<u64> {
        let raw = dir.read_raw(name);
        self.counter_value(raw, || dir.path().join(name), subject)
    }

    /// [`Root::counter`] for a value already read (`raw`, as `read_raw` gives it) from the file
    /// at `path`.
    pub(crate) fn counter_value(
        &mut self,
        raw: Result<Option<String>, String>,
        path: impl FnOnce() -> PathBuf,
        subject: &str,
    ) -> Option<u64> {
        match raw {
            Ok(Some(v)) if v.starts_with("N/A") => None,
            Ok(Some(v)) => {
                let n = v.parse::<u64>().ok();
                if n.is_none() {
                    self.bad_value(&path(), subject, &v, "a decimal counter");
                }
                n
            }
            Ok(None) => None,
            Err(e) => {
                self.problem(&path(), subject, ProblemKind::Unreadable, e);
                None
            }
        }
    }

    /// [`Root::opt_parse`] for the file `name` of a directory opened once.
    pub fn opt_parse_at<T>(
        &mut self,
        dir: &DirReader,
        name: &str,
        subject: &str,
        expected: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let p = dir.path().join(name);
        self.opt_parse_raw(dir.read_raw(name), &p, subject, expected, f)
    }

    /// [`Root::opt_parse`] for a value read already (`raw`, as `read_raw` gives it) from the
    /// file at `p`.
    pub fn opt_parse_raw<T>(
        &mut self,
        raw: Result<Option<String>, String>,
        p: &Path,
        subject: &str,
        expected: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let v = match raw {
            Ok(v) => v,
            Err(e) => {
                self.problem(p, subject, ProblemKind::Unreadable, e);
                None
            }
        };
        self.parse(p, subject, v, expected, f)
    }

    /// `req` then `parse`.
    pub fn req_parse<T>(
        &mut self,
        p: &Path,
        subject: &str,
        expected: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let v = self.req(p, subject);
        self.parse(p, subject, v, expected, f)
    }

    /// `req` then `parse`, also returning the value as read, so evidence can quote the
    /// file (`5.0 GT/s PCIe`, `40 Gb/sec (4X QDR)`) instead of a re-rendering of it.
    pub fn req_parse_verbatim<T>(
        &mut self,
        p: &Path,
        subject: &str,
        expected: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> (Option<T>, Option<String>) {
        let v = self.req(p, subject);
        let verbatim = v.clone();
        (self.parse(p, subject, v, expected, f), verbatim)
    }

    /// `opt` then `parse`.
    pub fn opt_parse<T>(
        &mut self,
        p: &Path,
        subject: &str,
        expected: &str,
        f: impl FnOnce(&str) -> Option<T>,
    ) -> Option<T> {
        let v = self.opt(p, subject);
        self.parse(p, subject, v, expected, f)
    }

    pub fn problem(&mut self, p: &Path, subject: &str, kind: ProblemKind, detail: String) {
        let path = self.display(p);
        if self
            .problems
            .iter()
            .any(|q| q.path == path && q.subject == subject)
        {
            return;
        }
        self.problems.push(Problem {
            subject: subject.to_string(),
            path,
            kind,
            detail,
        });
    }

    /// Sorted names in a directory (empty when it does not exist), bounded.
    pub fn list(p: &Path) -> Vec<String> {
        let mut v = Self::list_bytewise(p);
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    /// [`Root::list`] in byte order: for names that are compared, never shown (the natural
    /// order costs more, with hundreds of ports, than reading them).
    pub fn list_bytewise(p: &Path) -> Vec<String> {
        let Ok(rd) = fs::read_dir(p) else {
            return Vec::new();
        };
        let mut v: Vec<String> = rd
            .take(MAX_DIR_ENTRIES)
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort_unstable();
        v
    }

    /// The last component a symlink points to (`driver` → `mlx4_core`).
    pub fn link_name(p: &Path) -> Option<String> {
        let t = fs::read_link(p).ok()?;
        t.file_name()?.to_str().map(str::to_string)
    }
}

/// A value from an open file: at most [`MAX_VALUE_BYTES`], trailing newlines and NULs trimmed;
/// not a regular file is an error.
fn read_file(f: fs::File) -> Result<Option<String>, String> {
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    // A sysfs attribute comes in one read of at most a page; a shorter read of a regular file
    // is its end, so most values take one read, not two.
    // The first read goes to the stack; only a value that fills it is copied to the heap to be
    // read on.
    let mut buf = [0u8; 4096];
    let mut f = f;
    let n = loop {
        match f.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => break r.map_err(|e| e.to_string())?,
        }
    };
    let more;
    let bytes: &[u8] = if n < buf.len() {
        &buf[..n]
    } else {
        let mut v = buf.to_vec();
        f.take(MAX_VALUE_BYTES - buf.len() as u64)
            .read_to_end(&mut v)
            .map_err(|e| e.to_string())?;
        more = v;
        &more
    };
    let s = String::from_utf8_lossy(bytes);
    Ok(Some(s.trim_end_matches(['\n', '\0']).trim().to_string()))
}

/// A directory opened once, its files read relative to it: one lookup of the directory's path
/// (with its symlinks: `class/infiniband/mlx5_0` leads through `devices/`), then one name per
/// file. A soak or a watch reads hundreds of counters each interval this way.
#[derive(Debug)]
pub struct DirReader {
    fd: rustix::fd::OwnedFd,
    path: PathBuf,
}

impl DirReader {
    /// `None` when `path` is missing or not a directory (not every port has `hw_counters`).
    pub fn open(path: &Path) -> Option<Self> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        Some(Self {
            fd,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names in the directory, sorted naturally, at most [`MAX_DIR_ENTRIES`].
    pub fn names(&self) -> Vec<String> {
        let Ok(dir) = rustix::fs::Dir::read_from(&self.fd) else {
            return Vec::new();
        };
        let mut v: Vec<String> = dir
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str().ok().map(str::to_string))
            .filter(|n| n != "." && n != "..")
            .take(MAX_DIR_ENTRIES)
            .collect();
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    /// A directory inside this one, opened by name.
    pub fn child(&self, name: &str) -> Option<Self> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        Some(Self {
            fd,
            path: self.path.join(name),
        })
    }

    /// File `name` of the directory, opened to read without blocking.
    fn open_file(&self, name: &str) -> Result<rustix::fd::OwnedFd, rustix::io::Errno> {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

    /// A file of the directory, as [`Root::read_raw`] reads one.
    pub fn read_raw(&self, name: &str) -> Result<Option<String>, String> {
        use rustix::fs::{Mode, OFlags};
        match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => read_file(fs::File::from(fd)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(std::io::Error::from(e).to_string()),
        }
    }
}

/// The magic numbers of the filesystems whose files regenerate their value on every read from
/// offset 0 of a file opened once (kernfs' and procfs' `seq_file`s): `fstatfs(2)`.
const SYSFS_MAGIC: u64 = 0x6265_6572;
const PROC_SUPER_MAGIC: u64 = 0x9fa0;

/// Files kept open by every [`OpenDir`] of the process: at most [`fd_budget`], past which a
/// file is opened for each read instead (a host with thousands of counters stays within its
/// `RLIMIT_NOFILE`).
static OPEN_FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Half the soft limit on open files, at most 65536.
fn fd_budget() -> usize {
    static BUDGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        usize::try_from((limit / 2).min(65_536)).unwrap_or(65_536)
    })
}

/// One file of an [`OpenDir`], kept open.
#[derive(Debug)]
struct Held(rustix::fd::OwnedFd);

impl Held {
    fn take() -> bool {
        use std::sync::atomic::Ordering;
        OPEN_FILES
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < fd_budget()).then_some(n + 1)
            })
            .is_ok()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        OPEN_FILES.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A directory whose files are opened once and read again with `pread` at offset 0 each time
/// (a soak's or a watch's counters, every interval): one system call a value instead of an
/// open, a stat, a read and a close. On sysfs and procfs a read from offset 0 gives the value
/// of that moment (the attribute is shown again: `seq_read_iter` starts over at 0). On any other
/// filesystem (a fixture tree) a file may be replaced (written elsewhere and renamed over) or
/// removed while it is open, which changes its directory: after [`OpenDir::begin`] the round's
/// first read looks at the directory, and while it changed lately each read checks the open file
/// still has its name (`fstat`: a link count of 0 means it was replaced or removed) and opens
/// it again when not. A file written in place needs nothing: the read from 0 sees it.
#[derive(Debug)]
pub struct OpenDir {
    dir: DirReader,
    /// sysfs or procfs: a read from 0 is always the value now.
    pseudo: bool,
    files: std::collections::HashMap<String, Held>,
    /// The directory's change time at the last [`OpenDir::begin`], and whether the reads of
    /// this round check their files.
    changed_at: Option<(i64, u64)>,
    check_files: bool,
    /// A round began and the directory is not looked at yet: it is at the round's first read
    /// (a round that reads nothing from it costs no `fstat`).
    look_due: bool,
    /// The buffer every read goes to.
    buf: Vec<u8>,
}

/// How recent a change of a directory makes its files checked at every read: more than a
/// filesystem's coarse clock tick (a few ms), so that a change made within the tick of the
/// previous look is still seen.
const RECENT_CHANGE_S: i64 = 2;

impl OpenDir {
    /// `None` when `path` is missing or not a directory.
    pub fn open(path: &Path) -> Option<Self> {
        Self::from_dir(DirReader::open(path)?)
    }

    /// A directory opened already.
    pub fn from_dir(dir: DirReader) -> Option<Self> {
        let pseudo = rustix::fs::fstatfs(&dir.fd)
            .is_ok_and(|s| matches!(s.f_type as u64, SYSFS_MAGIC | PROC_SUPER_MAGIC));
        Some(Self {
            dir,
            pseudo,
            files: std::collections::HashMap::new(),
            changed_at: None,
            check_files: true,
            look_due: false,
            buf: vec![0; 4096],
        })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Starts a round of reads (a sample): on a filesystem other than sysfs and procfs, the
    /// files are checked at each read of the round when the directory changed since the last
    /// round or within the last [`RECENT_CHANGE_S`] seconds (a file replaced or removed
    /// changes it), else read as they are. The directory is looked at by the round's first
    /// read, not before: a round that reads none of its files costs nothing.
    pub fn begin(&mut self) {
        self.look_due = !self.pseudo;
    }

    /// Whether the directory changed since the previous round or within the last
    /// [`RECENT_CHANGE_S`] seconds (a file added, removed or replaced); never on sysfs and
    /// procfs, whose directories change only with their device.
    pub fn changed_lately(&mut self) -> bool {
        self.look();
        !self.pseudo && self.check_files
    }

    /// The look [`OpenDir::begin`] asked for, once a round.
    fn look(&mut self) {
        if !self.look_due {
            return;
        }
        self.look_due = false;
        let Ok(st) = rustix::fs::fstat(&self.dir.fd) else {
            self.check_files = true;
            return;
        };
        let ctime = (st.st_ctime, st.st_ctime_nsec);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.check_files =
            self.changed_at != Some(ctime) || now.saturating_sub(ctime.0) < RECENT_CHANGE_S;
        self.changed_at = Some(ctime);
    }

    /// The names in the directory, as [`DirReader::names`]; the files no longer there are
    /// closed.
    pub fn names(&mut self) -> Vec<String> {
        let names = self.dir.names();
        self.files.retain(|n, _| names.contains(n));
        names
    }

    /// File `name`, as [`DirReader::read_raw`] reads it: `Ok(None)` when it is missing (or was
    /// removed since it was opened), `Err` when it cannot be read.
    pub fn read_raw(&mut self, name: &str) -> Result<Option<String>, String> {
        let mut buf = std::mem::take(&mut self.buf);
        let out = match self.read_into(name, &mut buf) {
            Ok(Value::Missing) => Ok(None),
            Ok(Value::Short(n)) => Ok(Some(trimmed(&buf[..n]).into_owned())),
            Ok(Value::Long(v)) => Ok(Some(trimmed(&v).into_owned())),
            Err(e) => Err(e),
        };
        self.buf = buf;
        out
    }

    /// File `name` read again into `slot` (as [`OpenDir::read_raw`] gives it), the text
    /// copied only when it changed: whether the value seen (`Ok(Some(_))`) changed.
    pub fn read_raw_into(&mut self, name: &str, slot: &mut Result<Option<String>, String>) -> bool {
        fn set(slot: &mut Result<Option<String>, String>, v: &str) -> bool {
            match slot {
                Ok(Some(s)) if s == v => false,
                _ => {
                    *slot = Ok(Some(v.to_string()));
                    true
                }
            }
        }
        let was_seen = matches!(slot, Ok(Some(_)));
        let mut buf = std::mem::take(&mut self.buf);
        let changed = match self.read_into(name, &mut buf) {
            Ok(Value::Missing) => {
                *slot = Ok(None);
                was_seen
            }
            Ok(Value::Short(n)) => set(slot, &trimmed(&buf[..n])),
            Ok(Value::Long(v)) => set(slot, &trimmed(&v)),
            Err(e) => {
                *slot = Err(e);
                was_seen
            }
        };
        self.buf = buf;
        changed
    }

    /// [`Root::counter_at`] for a file of this directory, saying whether the file is there.
    pub fn counter(&mut self, r: &mut Root, name: &str, subject: &str) -> CounterFile {
        let mut buf = std::mem::take(&mut self.buf);
        let out = self.counter_in(r, name, subject, &mut buf);
        self.buf = buf;
        out
    }

    fn counter_in(
        &mut self,
        r: &mut Root,
        name: &str,
        subject: &str,
        buf: &mut [u8],
    ) -> CounterFile {
        let value = self.read_into(name, buf);
        let raw = match &value {
            Ok(Value::Missing) => return CounterFile::Missing,
            Ok(Value::Short(n)) => Ok(trimmed(&buf[..*n])),
            Ok(Value::Long(v)) => Ok(trimmed(v)),
            Err(e) => Err(e.clone()),
        };
        // The common case without an allocation: a plain decimal value.
        if let Ok(v) = &raw {
            if let Ok(n) = v.parse::<u64>() {
                return CounterFile::Value(n);
            }
        }
        let dir = self.dir.path();
        match r.counter_value(
            raw.map(|v| Some(v.into_owned())),
            || dir.join(name),
            subject,
        ) {
            Some(n) => CounterFile::Value(n),
            None => CounterFile::NoValue,
        }
    }

    /// Reads file `name` from offset 0: into `buf` when it fits, else into a vector.
    fn read_into(&mut self, name: &str, buf: &mut [u8]) -> Result<Value, String> {
        self.look();
        if let Some(held) = self.files.get(name) {
            match self.reread(held, buf) {
                Ok(Some(v)) => return Ok(v),
                // Replaced or removed since it was opened: open it again.
                Ok(None) => {
                    self.files.remove(name);
                }
                Err(e) => return Err(e),
            }
        }
        let fd = match self.dir.open_file(name) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(Value::Missing),
            Err(e) => return Err(std::io::Error::from(e).to_string()),
        };
        let meta = rustix::fs::fstat(&fd).map_err(|e| std::io::Error::from(e).to_string())?;
        if rustix::fs::FileType::from_raw_mode(meta.st_mode) != rustix::fs::FileType::RegularFile {
            return Err("not a regular file".into());
        }
        let v = pread_all(&fd, buf)?;
        if Held::take() {
            self.files.insert(name.to_string(), Held(fd));
        }
        Ok(v)
    }

    /// A file opened before, read again: `Ok(None)` when it is no longer the file of its name.
    fn reread(&self, held: &Held, buf: &mut [u8]) -> Result<Option<Value>, String> {
        if !self.pseudo && self.check_files {
            let meta =
                rustix::fs::fstat(&held.0).map_err(|e| std::io::Error::from(e).to_string())?;
            if meta.st_nlink == 0 {
                return Ok(None);
            }
        }
        match pread_all(&held.0, buf) {
            Ok(v) => Ok(Some(v)),
            // sysfs: the attribute's object went away (a device removed).
            Err(e) if e == ENODEV_TEXT.as_str() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// What a counter file of an [`OpenDir`] held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterFile {
    Value(u64),
    /// There, but no count (`N/A`, garbage, unreadable: recorded where that is a problem).
    NoValue,
    /// Missing, or removed since it was listed.
    Missing,
}

impl CounterFile {
    pub fn value(self) -> Option<u64> {
        match self {
            Self::Value(v) => Some(v),
            Self::NoValue | Self::Missing => None,
        }
    }
}

/// What a read gave.
enum Value {
    Missing,
    /// The first `n` bytes of the buffer.
    Short(usize),
    /// A value longer than the buffer.
    Long(Vec<u8>),
}

/// The text of ENODEV, as a read error reads.
static ENODEV_TEXT: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| std::io::Error::from(rustix::io::Errno::NODEV).to_string());

/// The whole file from offset 0, at most [`MAX_VALUE_BYTES`]: one `pread` for a value that
/// fits in `buf` (every sysfs attribute shorter than a page).
fn pread_all(fd: &rustix::fd::OwnedFd, buf: &mut [u8]) -> Result<Value, String> {
    let err = |e: rustix::io::Errno| std::io::Error::from(e).to_string();
    let n = rustix::io::retry_on_intr(|| rustix::io::pread(fd, &mut buf[..], 0)).map_err(err)?;
    if n < buf.len() {
        return Ok(Value::Short(n));
    }
    let mut v = buf.to_vec();
    let mut chunk = [0u8; 4096];
    while (v.len() as u64) < MAX_VALUE_BYTES {
        let off = v.len() as u64;
        let m = rustix::io::retry_on_intr(|| rustix::io::pread(fd, &mut chunk[..], off))
            .map_err(err)?;
        if m == 0 {
            break;
        }
        v.extend_from_slice(&chunk[..m]);
    }
    v.truncate(usize::try_from(MAX_VALUE_BYTES).unwrap_or(usize::MAX));
    Ok(Value::Long(v))
}

/// A value as [`read_file`] gives it: trailing newlines and NULs trimmed, then whitespace.
fn trimmed(b: &[u8]) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    match String::from_utf8_lossy(b) {
        Cow::Borrowed(v) => Cow::Borrowed(v.trim_end_matches(['\n', '\0']).trim()),
        Cow::Owned(v) => Cow::Owned(v.trim_end_matches(['\n', '\0']).trim().to_string()),
    }
}

/// Compare strings with embedded numbers naturally (`cpu2` < `cpu10`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    /// A digit run without its leading zeros.
    fn strip(s: &[u8]) -> &[u8] {
        let z = s.iter().take_while(|b| **b == b'0').count();
        &s[z..]
    }
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let run = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
                let (n, m) = (run(x), run(y));
                // Numerically: leading zeros off, then the longer is larger, then digit by digit.
                let (p, q) = (strip(&x[..n]), strip(&y[..m]));
                let o = p.len().cmp(&q.len()).then_with(|| p.cmp(q));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (&x[n..], &y[m..]);
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one counter reader: probe's PMA counters and a soak's counters both go through it,
    /// so an unreadable counter file is named for either, never dropped.
    #[test]
    fn counters_read_once_with_every_failure_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("ok"), "42\n").unwrap();
        std::fs::write(d.path().join("na"), "N/A (no PMA)\n").unwrap();
        std::fs::write(d.path().join("bad"), "lots\n").unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let mut r = Root::new(d.path());
        let read: Vec<Option<u64>> = ["ok", "na", "gone", "bad", "dir"]
            .iter()
            .map(|n| {
                let p = r.path(n);
                r.counter(&p, "mlx5_0/1")
            })
            .collect();
        assert_eq!(read, [Some(42), None, None, None, None]);
        let named: Vec<(&str, &ProblemKind)> = r
            .problems
            .iter()
            .map(|p| (p.path.as_str(), &p.kind))
            .collect();
        assert_eq!(
            named,
            [
                ("/bad", &ProblemKind::Malformed),
                ("/dir", &ProblemKind::Unreadable)
            ]
        );
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["cpu10", "cpu2", "cpu1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["cpu1", "cpu2", "cpu10"]);
        let mut v = vec![
            "rx_b",
            "rx10_a",
            "rx2_b",
            "rx2_a",
            "rx",
            "mlx5_10",
            "mlx5_9",
            "port_rcv_data",
            "port_rcv_constraint_errors",
            "a007",
            "a7b",
            "a08",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "a007",
                "a7b",
                "a08",
                "mlx5_9",
                "mlx5_10",
                "port_rcv_constraint_errors",
                "port_rcv_data",
                "rx",
                "rx2_a",
                "rx2_b",
                "rx10_a",
                "rx_b"
            ]
        );
        assert_eq!(natural_cmp("x01", "x1"), std::cmp::Ordering::Equal);
    }

    /// A directory read by its names: the same values and failures as a path read, and a FIFO
    /// (a hostile tree) read without waiting for a writer.
    #[test]
    fn a_directory_reads_its_files_by_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("symbol_error"), "7\n").unwrap();
        std::fs::write(d.path().join("bad"), "x\n").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let fifo = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let dir = DirReader::open(d.path()).expect("a directory");
        assert_eq!(dir.names(), ["bad", "fifo", "sub", "symbol_error"]);
        let mut r = Root::new(d.path());
        assert_eq!(r.counter_at(&dir, "symbol_error", "x"), Some(7));
        assert_eq!(r.counter_at(&dir, "gone", "x"), None);
        assert_eq!(r.counter_at(&dir, "bad", "x"), None);
        assert_eq!(r.counter_at(&dir, "sub", "x"), None);
        assert!(dir.read_raw("fifo").is_err());
        assert!(Root::read_raw(&fifo).is_err());
        let named: Vec<&str> = r.problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(named, ["/bad", "/sub"]);
        assert!(DirReader::open(&d.path().join("symbol_error")).is_none());
        assert!(DirReader::open(&d.path().join("missing")).is_none());
    }

    #[test]
    fn reads_are_bounded_and_typed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("v"), "4: ACTIVE\n").unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        assert_eq!(
            Root::read_raw(&d.path().join("v")).unwrap().unwrap(),
            "4: ACTIVE"
        );
        assert_eq!(Root::read_raw(&d.path().join("nope")).unwrap(), None);
        assert!(Root::read_raw(&d.path().join("dir")).is_err());
        let mut r = Root::new(d.path());
        let p = r.path("dir");
        assert_eq!(r.req(&p, "x"), None);
        assert_eq!(r.problems[0].path, "/dir");
        assert_eq!(r.problems[0].kind, ProblemKind::Unreadable);
    }

    /// An empty file is what a capture makes of an unreadable attribute: unreadable, not
    /// malformed. A non-empty value that does not parse stays malformed.
    #[test]
    fn empty_file_is_unreadable_not_malformed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("empty"), "").unwrap();
        std::fs::write(d.path().join("newline"), "\n").unwrap();
        std::fs::write(d.path().join("bad"), "fast\n").unwrap();
        let mut r = Root::new(d.path());
        let num = |v: &str| v.parse::<u32>().ok();
        for name in ["empty", "newline", "bad"] {
            let p = r.path(name);
            assert_eq!(r.req_parse(&p, name, "a number", num), None);
        }
        let kinds: Vec<(&str, &ProblemKind)> = r
            .problems
            .iter()
            .map(|p| (p.path.as_str(), &p.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("/empty", &ProblemKind::Unreadable),
                ("/newline", &ProblemKind::Unreadable),
                ("/bad", &ProblemKind::Malformed),
            ]
        );
        assert!(
            r.problems[0].detail.contains("empty file"),
            "{:?}",
            r.problems[0]
        );
        // An empty value that parses (an empty CPU list) is not a problem at all.
        let mut r = Root::new(d.path());
        let p = r.path("empty");
        assert_eq!(
            r.req_parse(&p, "x", "a CPU list", linerate_facts::parse_cpulist),
            Some(Vec::new())
        );
        assert!(r.problems.is_empty());
    }
}
