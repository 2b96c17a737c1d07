//! A Debian 11 (`bullseye`: glibc 2.31) root for the portable build's tests: made once by
//! `scripts/debian11-root.sh` (`debootstrap --variant=minbase` with openssh-server), cached at
//! [`DEBIAN11_ROOT`] between runs (CI, a fresh machine, makes it once: a few minutes, mostly
//! downloads, which scripts/test.sh starts beside its build), under a lock so concurrent
//! callers wait for one build. Each test runs in an [`Overlay`] of it (a tmpfs on
//! top, unmounted on drop), so the cached root is never changed, and in network namespaces of
//! its own ([`Netns`]): `ip netns exec NS sh -c 'mount proc, sysfs, /dev; exec chroot ROOT
//! CMD'`, whose mounts die with the command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Where the root is cached.
pub const DEBIAN11_ROOT: &str = "/var/cache/linerate-tests/debian11-minbase";

/// The cached Debian 11 root, made first if it is not there; None (after recording the skip)
/// where it cannot be made (not root, no debootstrap). A failed debootstrap panics with its
/// output: the archive is one CI reaches.
pub fn debian11_root() -> Option<PathBuf> {
    if !crate::is_root() {
        crate::skip("needs root for debootstrap, chroot and mounts");
        return None;
    }
    if !Path::new("/usr/sbin/debootstrap").exists() {
        crate::skip("needs debootstrap (apt install debootstrap; scripts/setup-tests.sh)");
        return None;
    }
    let root = PathBuf::from(DEBIAN11_ROOT);
    if !root.join(".linerate-complete").exists() {
        // One maker of the root: scripts/debian11-root.sh (which scripts/test.sh may already
        // have started: it waits for that one under its lock).
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/debian11-root.sh");
        let started = std::time::Instant::now();
        let out = Command::new(&script)
            .env("LINERATE_DEBIAN11_ROOT", DEBIAN11_ROOT)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} failed: {}{}",
            script.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "testkit: the Debian 11 root {DEBIAN11_ROOT} was there or made in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    Some(root)
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A root of the test's own over a read-only lower one: writes go to a tmpfs, which
/// [`Overlay::upper`] shows. Unmounted (with anything mounted inside it) on drop.
#[derive(Debug)]
pub struct Overlay {
    dir: tempfile::TempDir,
}

impl Overlay {
    pub fn new(lower: &Path) -> Overlay {
        let dir = tempfile::Builder::new()
            .prefix("linerate-overlay-")
            .tempdir()
            .expect("a directory for the overlay");
        let d = dir.path();
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2g,mode=0755", "linerate-overlay"])
            .arg(d));
        for sub in ["upper", "work", "root"] {
            std::fs::create_dir(d.join(sub)).expect("overlay directories");
        }
        run(Command::new("mount")
            .args(["-t", "overlay", "linerate-overlay", "-o"])
            .arg(format!(
                "lowerdir={},upperdir={},workdir={}",
                lower.display(),
                d.join("upper").display(),
                d.join("work").display()
            ))
            .arg(d.join("root")));
        Overlay { dir }
    }

    /// The merged root, to chroot into.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// What the tests wrote into the root (files removed there show as character devices).
    pub fn upper(&self) -> PathBuf {
        self.dir.path().join("upper")
    }

    /// Files under the upper layer whose name contains `needle`, except under `skip` (a path
    /// relative to the root, such as `etc/linerate-test`).
    pub fn written(&self, needle: &str, skip: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![self.upper()];
        let skip = self.upper().join(skip);
        let mut budget = 100_000usize;
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.filter_map(Result::ok) {
                budget = budget.saturating_sub(1);
                if budget == 0 {
                    return found;
                }
                let p = e.path();
                if p.starts_with(&skip) {
                    continue;
                }
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                let removed = e
                    .file_type()
                    .is_ok_and(|t| std::os::unix::fs::FileTypeExt::is_char_device(&t));
                if e.file_name().to_string_lossy().contains(needle) && !removed {
                    found.push(p.clone());
                }
                if is_dir {
                    stack.push(p);
                }
            }
        }
        found
    }

    /// A tmpfs mounted `noexec` at `path` (relative to the root), unmounted with the overlay.
    pub fn mount_noexec(&self, path: &str) {
        run(Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                "noexec,mode=1777,size=1g",
                "linerate-noexec",
            ])
            .arg(self.root().join(path)));
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        // Lazily: a process that still holds a file in it must not keep the mounts alive.
        let _ = Command::new("umount")
            .args(["-R", "-l"])
            .arg(self.dir.path())
            .status();
    }
}

/// A network namespace of the test's own with a veth to this host: this end
/// `198.18.N.1/30`, the namespace's `198.18.N.2/30`. Deleted on drop, with whatever still runs
/// in it killed first.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
    pub here: String,
    pub there: String,
}

impl Netns {
    /// `n` picks the addresses (one per concurrent namespace of a test binary).
    pub fn new(tag: &str, n: u8) -> Netns {
        let name = format!("lr-{tag}-{}", std::process::id());
        let host_if = format!("lrh{n}-{}", std::process::id() % 100_000);
        let ns_if = format!("lrn{n}");
        let (here, there) = (format!("198.18.{n}.1"), format!("198.18.{n}.2"));
        let _ = Command::new("ip")
            .args(["netns", "del", &name])
            .stderr(Stdio::null())
            .status();
        run(Command::new("ip").args(["netns", "add", &name]));
        run(Command::new("ip").args([
            "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if, "netns", &name,
        ]));
        run(Command::new("ip").args(["addr", "add", &format!("{here}/30"), "dev", &host_if]));
        run(Command::new("ip").args(["link", "set", &host_if, "up"]));
        let ns = |args: &[&str]| {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &name]).args(args);
            run(&mut c);
        };
        ns(&["ip", "addr", "add", &format!("{there}/30"), "dev", &ns_if]);
        ns(&["ip", "link", "set", &ns_if, "up"]);
        ns(&["ip", "link", "set", "lo", "up"]);
        Netns { name, here, there }
    }

    /// Two namespaces joined by a veth of their own: the first `198.18.N.1`, the second
    /// `198.18.N.2` (each one's `there`); nothing of this host in between.
    pub fn linked(tag: &str, n: u8) -> (Netns, Netns) {
        let pid = std::process::id();
        let make = |side: &str, addr: String| {
            let name = format!("lr-{tag}{side}-{pid}");
            let _ = Command::new("ip")
                .args(["netns", "del", &name])
                .stderr(Stdio::null())
                .status();
            run(Command::new("ip").args(["netns", "add", &name]));
            Netns {
                name,
                here: String::new(),
                there: addr,
            }
        };
        let a = make("a", format!("198.18.{n}.1"));
        let b = make("b", format!("198.18.{n}.2"));
        run(Command::new("ip").args([
            "link", "add", "lra", "netns", &a.name, "type", "veth", "peer", "name", "lrb", "netns",
            &b.name,
        ]));
        for (ns, dev) in [(&a, "lra"), (&b, "lrb")] {
            let ip = |args: &[&str]| {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.name, "ip"]).args(args);
                run(&mut c);
            };
            ip(&["addr", "add", &format!("{}/30", ns.there), "dev", dev]);
            ip(&["link", "set", dev, "up"]);
            ip(&["link", "set", "lo", "up"]);
        }
        (a, b)
    }

    /// `CMD` chrooted into `root` inside the namespace, with /proc, /sys (the namespace's) and
    /// /dev mounted there for the command's life.
    pub fn chroot(&self, root: &Path, cmd: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, "sh", "-c"])
            .arg(
                "r=$1; shift; mount -t proc proc \"$r/proc\" && mount -t sysfs sysfs \"$r/sys\" \
                 && mount --rbind /dev \"$r/dev\" && exec chroot \"$r\" \"$@\"",
            )
            .arg("linerate-chroot")
            .arg(root)
            .args(cmd);
        c
    }

    /// The processes running in the namespace.
    pub fn pids(&self) -> Vec<u32> {
        Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for pid in self.pids() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}
