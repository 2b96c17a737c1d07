//! Dev-only helpers shared by linerate's test suites, and (`tests/architecture.rs`) the checks of
//! the workspace's shape: which crate may depend on which, no module cycle, one name per item.
//!
//! A test that cannot run on this machine (no root, no network namespaces, no tmpfs
//! mount, no Chromium, no `setpriv`) must not pass silently: it calls [`skip`] and
//! returns. [`skip`] prints the reason and appends one line to the file named by
//! `LINERATE_SKIP_LOG` (set by `scripts/test.sh`, which then counts those tests as
//! skipped, not passed). Where `LINERATE_REQUIRE_PRIVILEGED` is set (CI, which runs as
//! root), a skip is a broken setup and [`skip`] panics instead.

pub mod browser;
pub mod debian;
pub mod promtool;
pub mod schema;
pub mod sshd;

use std::fmt::Display;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Names the file each skip is appended to, one `binary::test: reason` line per skip.
pub const SKIP_LOG_ENV: &str = "LINERATE_SKIP_LOG";
/// When set (to anything but `0` or the empty string), a skip fails the test.
pub const REQUIRE_ENV: &str = "LINERATE_REQUIRE_PRIVILEGED";

/// What a skip does: where it is recorded, and whether it is allowed at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Where skips are appended (`LINERATE_SKIP_LOG`); `None`: printed only.
    pub log: Option<PathBuf>,
    /// A skip is a failure (`LINERATE_REQUIRE_PRIVILEGED`).
    pub require: bool,
}

impl Policy {
    /// The policy the environment sets.
    pub fn from_env() -> Policy {
        Policy {
            log: std::env::var_os(SKIP_LOG_ENV)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            require: std::env::var_os(REQUIRE_ENV).is_some_and(|v| !v.is_empty() && v != "0"),
        }
    }

    /// Record that `test` could not run for `reason`: the line recorded, or the
    /// message of the failure this skip must be (skips forbidden, or the log cannot
    /// be written, which would count the test as passed).
    pub fn record(&self, test: &str, reason: &str) -> Result<String, String> {
        // One line per skip, whatever the reason contains (the log is counted by lines).
        let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
        let line = format!("{test}: {reason}");
        if self.require {
            return Err(format!(
                "{test} cannot run here: {reason}; {REQUIRE_ENV} is set (CI runs as root, so a \
                 skip here means a broken setup: it needs root, network namespaces, tmpfs \
                 mounts, Chromium, setpriv or sshd)"
            ));
        }
        if let Some(log) = &self.log {
            append(log, &line).map_err(|e| {
                format!(
                    "{test} cannot run here ({reason}), and the skip cannot be recorded in \
                     {SKIP_LOG_ENV}={}: {e}",
                    log.display()
                )
            })?;
        }
        Ok(line)
    }
}

/// Append `line` in one write: concurrent tests (threads and processes) each add whole lines.
fn append(log: &Path, line: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?
        .write_all(format!("{line}\n").as_bytes())
}

/// The running test's name as the harness shows it: `binary::test` (libtest runs each
/// test on a thread named after it; the binary's name has cargo's `-<hash>` removed).
pub fn current_test() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map_or_else(
            || "?".to_string(),
            |s| match s.rsplit_once('-') {
                Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => {
                    name.to_string()
                }
                _ => s,
            },
        );
    let thread = std::thread::current();
    format!("{binary}::{}", thread.name().unwrap_or("?"))
}

/// The running test cannot run here because of `reason`: record the skip and print it
/// (the caller then returns), or panic where skips are forbidden.
///
/// # Panics
/// When `LINERATE_REQUIRE_PRIVILEGED` is set, or the skip log cannot be written.
pub fn skip(reason: impl Display) {
    match Policy::from_env().record(&current_test(), &reason.to_string()) {
        Ok(line) => println!("SKIP {line}"),
        Err(msg) => panic!("{msg}"),
    }
}

/// This process runs as root (its effective user id is 0): the privileged tests' first check.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

/// Copy a directory tree (a fixture root) to `to`, keeping symbolic links as links: the sysfs
/// fixtures are made of relative links from `class/` to `devices/`.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &t).unwrap();
        } else if ft.is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// Every regular file below `dir`, path → bytes (links and other kinds left out); empty when
/// `dir` does not exist. For comparing a fixture root before and after a command wrote to it.
pub fn read_tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(d: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                walk(&e.path(), out);
            } else if ft.is_file() {
                out.insert(e.path(), std::fs::read(e.path()).unwrap());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// `Label:\t\tVALUE` under `section` of an `ethtool -g`/`-l` report (as the real tool prints
/// it, to compare linerate's netlink reading with): Some(value), or None where ethtool says
/// `n/a`; the test fails, naming what it looked for, when the section or the line is absent.
pub fn ethtool_field<T: std::str::FromStr>(text: &str, section: &str, label: &str) -> Option<T> {
    let part = text
        .split(section)
        .nth(1)
        .unwrap_or_else(|| panic!("no {section} in {text}"));
    let line = part
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(label))
        .unwrap_or_else(|| panic!("no {label} under {section} in {text}"));
    line.split(':').nth(1)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_appended_as_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips");
        let p = Policy {
            log: Some(log.clone()),
            require: false,
        };
        assert_eq!(
            p.record("bin::a", "needs root\nfor ip netns").as_deref(),
            Ok("bin::a: needs root for ip netns")
        );
        p.record("bin::b", "no tmpfs").unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "bin::a: needs root for ip netns\nbin::b: no tmpfs\n"
        );
    }

    #[test]
    fn a_required_run_fails_instead_and_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips");
        let p = Policy {
            log: Some(log.clone()),
            require: true,
        };
        let e = p.record("bin::a", "needs root").unwrap_err();
        assert!(e.contains("bin::a cannot run here: needs root"), "{e}");
        assert!(e.contains("broken setup"), "{e}");
        assert!(!log.exists());
    }

    #[test]
    fn a_log_that_cannot_be_written_is_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let p = Policy {
            log: Some(dir.path().join("no/such/dir/skips")),
            require: false,
        };
        let e = p.record("bin::a", "needs root").unwrap_err();
        assert!(e.contains("cannot be recorded"), "{e}");
    }

    #[test]
    fn without_a_log_the_skip_is_only_printed() {
        assert_eq!(
            Policy::default().record("t", "why").as_deref(),
            Ok("t: why")
        );
    }
}
