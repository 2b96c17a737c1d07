//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use linerate_results::disk::{DiskReport, DiskTestKind, DiskTestResult};
use linerate_storage::DiskPlan;
pub use linerate_testkit::is_root;

pub const MIB: u64 = 1 << 20;

/// A quick plan: `size` bytes, `ms` per test.
pub fn quick(size: u64, ms: u64, tests: &[DiskTestKind]) -> DiskPlan {
    DiskPlan {
        size: Some(size),
        duration: Duration::from_millis(ms),
        tests: tests.to_vec(),
        ..DiskPlan::default()
    }
}

/// Test files left in `dir`.
pub fn stray_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(linerate_storage::disk::FILE_PREFIX))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Figures a completed test must have.
pub fn assert_sane(t: &DiskTestResult) {
    assert!(t.error.is_none(), "{t:?}");
    assert!(t.bytes > 0 && t.ops > 0 && t.seconds > 0.0, "{t:?}");
    // The rates are what was moved over the time it took, rounded for the document (GB/s and
    // Gb/s to 3 decimals, IOPS to a whole number): on a slow or busy machine a real rate may
    // round to 0, so compare with the exact figures within half a rounding step, not with 0.
    // `seconds` itself is rounded to the microsecond: allow for that too.
    let rel = 1e-6 / t.seconds;
    let exact = t.bytes as f64 / t.seconds / 1e9;
    assert!((t.gb_per_s - exact).abs() <= 0.0005 + exact * rel, "{t:?}");
    assert!(
        (t.gbps - exact * 8.0).abs() <= 0.0005 + exact * 8.0 * rel,
        "{t:?}"
    );
    let iops = t.ops as f64 / t.seconds;
    assert!((t.iops - iops).abs() <= 0.5 + iops * rel, "{t:?}");
    assert_eq!(t.bytes, t.ops * t.block_bytes, "{t:?}");
    let l = t.latency_us.expect("latencies");
    assert!(
        0.0 < l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
        "{l:?}"
    );
    assert!(l.mean > 0.0 && l.mean <= l.max, "{l:?}");
}

pub fn assert_report(r: &DiskReport, kinds: &[DiskTestKind]) {
    assert!(r.error.is_none(), "{r:?}");
    assert_eq!(
        r.tests.iter().map(|t| t.kind).collect::<Vec<_>>(),
        kinds,
        "{r:?}"
    );
    for t in &r.tests {
        assert_sane(t);
        assert_eq!(t.file_bytes, r.file_bytes);
        assert_eq!(t.filesystem, r.filesystem);
    }
}

/// A directory on the root filesystem (the target dir), not tmpfs.
pub fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A mount made for one test, unmounted (lazily if busy) and removed on drop.
pub struct Mount {
    pub dir: tempfile::TempDir,
}

impl Mount {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `mount ARGS... DIR` on a new directory; `None` (the skip recorded with
    /// `linerate_testkit::skip`) when not root or the mount is refused.
    pub fn new(test: &str, args: &[&str]) -> Option<Self> {
        if !is_root() {
            linerate_testkit::skip(format_args!("{test}: needs root to mount"));
            return None;
        }
        let dir = disk_dir();
        let out = match Command::new("mount").args(args).arg(dir.path()).output() {
            Ok(out) => out,
            Err(e) => {
                linerate_testkit::skip(format_args!("{test}: cannot run mount: {e}"));
                return None;
            }
        };
        if !out.status.success() {
            linerate_testkit::skip(format_args!(
                "{test}: mount {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            return None;
        }
        Some(Self { dir })
    }

    pub fn run(&self, args: &[&str]) -> bool {
        Command::new("mount")
            .args(args)
            .arg(self.path())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(self.path()).status();
        }
    }
}

/// Fill the filesystem holding `dir` with a file of our own until it is full (the tests'
/// mounts are tens of MiB; the loop stops at 1 GiB whatever happens, and says so).
pub fn hog(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("hog")).unwrap();
    let chunk = vec![7u8; 64 << 10];
    let full = (0..1 << 14).any(|_| f.write_all(&chunk).is_err());
    assert!(full, "{} took 1 GiB without filling up", dir.display());
    let _ = f.sync_all();
}
