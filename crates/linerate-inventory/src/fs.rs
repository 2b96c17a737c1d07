//! Reading sysfs/procfs values under a root, with every failure recorded
//! instead of raised.

use std::fs;
use std::io::Read;
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
        let meta = match fs::metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        if !meta.is_file() {
            return Err("not a regular file".into());
        }
        let mut buf = Vec::new();
        fs::File::open(p)
            .and_then(|f| f.take(MAX_VALUE_BYTES).read_to_end(&mut buf))
            .map_err(|e| e.to_string())?;
        let s = String::from_utf8_lossy(&buf);
        Ok(Some(s.trim_end_matches(['\n', '\0']).trim().to_string()))
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
        match Self::read_raw(p) {
            Ok(Some(v)) if v.starts_with("N/A") => None,
            Ok(Some(v)) => {
                let n = v.parse::<u64>().ok();
                if n.is_none() {
                    self.bad_value(p, subject, &v, "a decimal counter");
                }
                n
            }
            Ok(None) => None,
            Err(e) => {
                self.problem(p, subject, ProblemKind::Unreadable, e);
                None
            }
        }
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
        let Ok(rd) = fs::read_dir(p) else {
            return Vec::new();
        };
        let mut v: Vec<String> = rd
            .take(MAX_DIR_ENTRIES)
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    /// The last component a symlink points to (`driver` → `mlx4_core`).
    pub fn link_name(p: &Path) -> Option<String> {
        let t = fs::read_link(p).ok()?;
        t.file_name()?.to_str().map(str::to_string)
    }
}

/// Compare strings with embedded numbers naturally (`cpu2` < `cpu10`).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn key(s: &str) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut text = String::new();
        let mut num = String::new();
        for c in s.chars() {
            if c.is_ascii_digit() {
                num.push(c);
            } else {
                if !num.is_empty() {
                    out.push((std::mem::take(&mut text), num.parse().unwrap_or(u64::MAX)));
                    num.clear();
                }
                text.push(c);
            }
        }
        out.push((text, num.parse().unwrap_or(0)));
        out
    }
    key(a).cmp(&key(b))
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
