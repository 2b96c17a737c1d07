//! The portable build (`scripts/package.sh`: x86_64, glibc 2.28 or newer) on Debian 11
//! (`bullseye`, glibc 2.31), in a root made by debootstrap (`linerate_testkit::debian`):
//! `probe`, `doctor --quick`, and `serve` with `bench` across two network namespaces, each
//! chrooted into the root; the .deb installed there with `dpkg -i`; and `--ssh` to that root's
//! own sshd, with no linerate there: doctor copies itself over, runs, and leaves no file and no
//! process, with `/tmp` mounted noexec too, and when the client is killed mid-run; a far end
//! whose `uname -m` says aarch64 is refused, naming both machines.
//!
//! These tests need the portable binary and the .deb, which `scripts/package-test.sh` builds:
//! it runs them (`--ignored`) with `LINERATE_PORTABLE_BIN` and `LINERATE_DEB` set. They are
//! ignored in a plain `cargo test`, whose debug build needs the build machine's glibc.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use linerate_testkit::debian::{debian11_root, Netns, Overlay};
use linerate_testkit::sshd::Sshd;
use serde_json::Value;

use common::text;

const GONE_WITHIN: Duration = Duration::from_secs(30);
const COPY_MARK: &str = "linerate-copy.";

fn portable() -> PathBuf {
    let p = std::env::var_os("LINERATE_PORTABLE_BIN")
        .map(PathBuf::from)
        .expect("LINERATE_PORTABLE_BIN: the portable binary (scripts/package-test.sh sets it)");
    assert!(p.is_file(), "{}", p.display());
    p
}

/// Run with a hard limit; a hang fails.
fn output(mut c: Command) -> Output {
    let out = c.stdin(Stdio::null()).output().expect("running a command");
    assert!(
        !matches!(out.status.code(), Some(124 | 137)),
        "{c:?} hung: {}",
        text(&out.stderr)
    );
    out
}

fn limited(args: &[&str]) -> Vec<String> {
    ["timeout", "-k", "5", "240"]
        .iter()
        .chain(args)
        .map(|s| (*s).to_string())
        .collect()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}; exit {:?}): {}\n{}",
            out.status.code(),
            text(&out.stderr),
            text(&out.stdout)
        )
    })
}

/// The newest glibc symbol version the binary needs, as the CI check reads it.
fn glibc_floor(bin: &Path) -> String {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(bin)
        .output()
        .expect("objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v: Vec<(u32, u32)> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let (a, b) = v.split_once('.')?;
            Some((a.parse().ok()?, b.split('.').next()?.parse().ok()?))
        })
        .collect();
    v.sort_unstable();
    v.last()
        .map(|(a, b)| format!("{a}.{b}"))
        .unwrap_or_default()
}

#[test]
#[ignore = "needs the portable build: scripts/package-test.sh runs it"]
fn the_portable_binary_probes_diagnoses_and_measures_on_debian_11() {
    let bin = portable();
    let floor = glibc_floor(&bin);
    let (major, minor) = floor.split_once('.').expect("a glibc version");
    assert!(
        (major, minor.parse::<u32>().unwrap_or(99)) <= ("2", 28),
        "the portable binary needs GLIBC_{floor}"
    );
    let Some(root) = debian11_root() else {
        return;
    };
    let overlay = Overlay::new(&root);
    let r = overlay.root();
    std::fs::copy(&bin, r.join("usr/local/bin/linerate")).expect("installing the binary");
    let (a, b) = Netns::linked("p11", 71);
    let glibc = output({
        let mut c = a.chroot(&r, &["getconf", "GNU_LIBC_VERSION"]);
        c.stdout(Stdio::piped());
        c
    });
    assert_eq!(text(&glibc.stdout).trim(), "glibc 2.31");
    // probe: every port of the namespace, read from its sysfs.
    let out = output(
        a.chroot(
            &r,
            &limited(&["linerate", "probe", "--json"])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert!(doc["ports"].is_array() || doc.is_object(), "{doc}");
    // doctor's self-check.
    let out = output(
        a.chroot(
            &r,
            &limited(&[
                "linerate",
                "doctor",
                "--quick",
                "--json",
                "--no-disk",
                "--no-rdma",
                "--fail-on",
                "never",
            ])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert!(
        doc["tests"].as_array().is_some_and(|t| !t.is_empty()),
        "{doc}"
    );
    serve_and_bench(&a, &b, &r);
}

/// `serve` in `b`, `bench` from `a`, across their veth, both chrooted into `r`.
fn serve_and_bench(a: &Netns, b: &Netns, r: &Path) {
    let mut server = b
        .chroot(
            r,
            &[
                "linerate",
                "serve",
                "--max-served",
                "1",
                "--exit-after",
                "120",
            ],
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting serve");
    let stdout = server.stdout.take().expect("serve's stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("\"listening\"") {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = server.kill();
        let mut err = String::new();
        let _ = server.stderr.take().map(|mut e| e.read_to_string(&mut err));
        panic!("serve on Debian 11 never listened: {err}");
    }
    let out = output(
        a.chroot(
            r,
            &limited(&["linerate", "bench", &b.there, "-t", "1", "--json"])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    assert!(
        doc["tests"][0]["gbps"].as_f64().unwrap_or(0.0) > 0.0,
        "{doc}"
    );
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
#[ignore = "needs the .deb of the portable build: scripts/package-test.sh runs it"]
fn the_deb_installs_on_debian_11() {
    let deb = std::env::var_os("LINERATE_DEB")
        .map(PathBuf::from)
        .expect("LINERATE_DEB: the .deb (scripts/package-test.sh sets it)");
    let Some(root) = debian11_root() else {
        return;
    };
    let overlay = Overlay::new(&root);
    let r = overlay.root();
    std::fs::copy(&deb, r.join("tmp/linerate.deb")).expect("copying the .deb");
    let ns = Netns::new("deb11", 72);
    let out = output(ns.chroot(&r, &["dpkg", "-i", "/tmp/linerate.deb"]));
    assert!(
        out.status.success(),
        "dpkg -i on Debian 11: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let out = output(ns.chroot(&r, &["linerate", "--version"]));
    assert!(
        text(&out.stdout).starts_with("linerate "),
        "{}",
        text(&out.stderr)
    );
    let out = output(ns.chroot(&r, &["dpkg-query", "-W", "-f", "${Status}", "linerate"]));
    assert_eq!(text(&out.stdout), "install ok installed");
}

/// Debian 11's own sshd in a namespace, chrooted into an overlay of the root with nothing of
/// linerate in it; the client is the portable binary, on this host.
struct Far11 {
    overlay: Overlay,
    ns: Netns,
    sshd: Sshd,
}

impl Far11 {
    fn new(tag: &str, n: u8, noexec_tmp: bool) -> Option<Far11> {
        let root = debian11_root()?;
        let overlay = Overlay::new(&root);
        if noexec_tmp {
            overlay.mount_noexec("tmp");
        }
        let ns = Netns::new(tag, n);
        let sshd = Sshd::start_in(&overlay.root(), &ns);
        Some(Far11 { overlay, ns, sshd })
    }

    /// doctor against it, under a hard time limit (`limit`) or not (to be killed).
    fn doctor(&self, extra: &[&str]) -> Command {
        let mut c = Command::new("timeout");
        c.args(["-k", "5", "240"]).arg(portable());
        self.doctor_args(c, extra)
    }

    fn doctor_args(&self, mut c: Command, extra: &[&str]) -> Command {
        c.args(["doctor", &self.ns.there, "--ssh", "--quick", "--json"])
            .args(["--no-disk", "--no-rdma", "--fail-on", "never"])
            .args(extra)
            .env("LINERATE_SSH_COMMAND", self.sshd.ssh_command())
            .env("NO_COLOR", "1");
        c
    }

    /// No copy anywhere in the root, no process in the namespace but sshd's listener.
    fn assert_nothing_left(&self) {
        assert_eq!(
            self.sshd.wait_sessions_gone(GONE_WITHIN),
            Vec::<u32>::new(),
            "{}",
            self.sshd.log()
        );
        let mut left = self.ns.pids();
        for _ in 0..300 {
            left = self.ns.pids();
            if left.len() <= 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            left.len(),
            1,
            "processes left in the far end's namespace: {left:?}"
        );
        let files = self.overlay.written("linerate", "etc/linerate-test");
        assert!(files.is_empty(), "left on the far end: {files:?}");
        // Nor in a noexec /tmp, which is a mount of its own, outside the overlay's upper layer.
        let tmp: Vec<_> = std::fs::read_dir(self.overlay.root().join("tmp"))
            .expect("the far end's /tmp")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(COPY_MARK))
            .collect();
        assert!(tmp.is_empty(), "{tmp:?}");
    }
}

#[test]
#[ignore = "needs the portable build: scripts/package-test.sh runs it"]
fn doctor_over_ssh_to_debian_11_with_nothing_installed_copies_itself_and_leaves_nothing() {
    let Some(far) = Far11::new("ssh11", 73, false) else {
        return;
    };
    let out = output(far.doctor(&[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let c = &doc["far_end"]["copied"];
    // What the copy cost, for the log: its size and time over the namespace's veth.
    eprintln!(
        "{}",
        text(&out.stderr)
            .lines()
            .find(|l| l.contains("copied this linerate"))
            .unwrap_or("")
    );
    assert_eq!(c["reason"], "no linerate on its PATH", "{c}");
    assert_eq!(c["libc"], "glibc 2.31", "{c}");
    assert!(
        c["directory"]
            .as_str()
            .is_some_and(|d| d.starts_with(&format!("/tmp/{COPY_MARK}"))),
        "{c}"
    );
    far.assert_nothing_left();

    // Killed mid-run: the server's lifeline ends it; its file was gone already.
    let mut client = far
        .doctor_args(Command::new(portable()), &[])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start doctor");
    let mut serving = false;
    for _ in 0..600 {
        serving = far.ns.pids().iter().any(|p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                c.starts_with(b"/tmp/linerate-copy.") && c.windows(5).any(|w| w == b"serve")
            })
        });
        if serving || client.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(serving, "the copy never ran");
    std::thread::sleep(Duration::from_secs(1));
    // SIGKILL: no handler runs, only the kernel closes its pipes.
    let _ = client.kill();
    let _ = client.wait();
    far.assert_nothing_left();

    // A far end that says it is aarch64: refused, naming both.
    let wrapper = far.overlay.root().join("usr/local/bin/uname");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\n[ \"$1\" = -m ] && { echo aarch64; exit 0; }\nexec /bin/uname \"$@\"\n",
    )
    .expect("the uname wrapper");
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let out = output(far.doctor(&[]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("aarch64") && err.contains("x86_64"), "{err}");
    std::fs::remove_file(&wrapper).expect("removing the wrapper");
    far.assert_nothing_left();
}

#[test]
#[ignore = "needs the portable build: scripts/package-test.sh runs it"]
fn a_noexec_tmp_on_debian_11_is_passed_over_and_nothing_is_left() {
    let Some(far) = Far11::new("nx11", 74, true) else {
        return;
    };
    let out = output(far.doctor(&[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let c = &doc["far_end"]["copied"];
    assert_eq!(c["noexec"], serde_json::json!(["/tmp"]), "{c}");
    assert!(
        c["directory"]
            .as_str()
            .is_some_and(|d| d.starts_with(&format!("/var/tmp/{COPY_MARK}"))),
        "{c}"
    );
    far.assert_nothing_left();
}
