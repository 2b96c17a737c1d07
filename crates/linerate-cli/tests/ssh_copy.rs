//! `--ssh-copy` against a real OpenSSH server the test starts itself on 127.0.0.1 (see
//! `linerate_testkit::sshd`), whose logins get a PATH of the test's own (no linerate on it: a
//! far end with nothing installed) and a temporary directory of the test's own: this build
//! copies itself there over the ssh session, runs, and leaves no file and no process, also
//! when that directory is mounted `noexec` and when the client is killed mid-run; a far end
//! of another machine or an older glibc (wrappers that say so) is refused, naming both.
//!
//! The Debian 11 far end (glibc 2.31, the portable build) is `portable_debian11.rs`'s. Needs
//! root (sshd, a tmpfs mount); elsewhere each test records a skip.

mod common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use linerate_testkit::schema;
use linerate_testkit::sshd::{pids_with, wait_gone, Sshd};
use serde_json::Value;

use common::{text, BIN};

/// A hard limit on each linerate run.
const RUN_LIMIT: &str = "240";
const GONE_WITHIN: Duration = Duration::from_secs(30);
/// What the copy's command line holds, on the far end: its private directory's prefix.
const COPY_MARK: &str = "linerate-copy.";

/// The programs the copy script and a login need, and nothing else: a PATH without linerate.
const TOOLS: &[&str] = &[
    "sh",
    "bash",
    "uname",
    "getconf",
    "ldd",
    "head",
    "mktemp",
    "chmod",
    "rm",
    "sha256sum",
    "wc",
    "cat",
    "printf",
];

/// sshd whose logins see `bin` as their whole PATH and `tmp` as their TMPDIR.
struct Far {
    sshd: Sshd,
    bin: tempfile::TempDir,
    tmp: PathBuf,
}

impl Far {
    /// `wrap`: programs replaced by a script (name, body).
    fn new(tmp: &Path, wrap: &[(&str, &str)]) -> Option<Far> {
        if !linerate_testkit::is_root() {
            linerate_testkit::skip("needs root to run sshd");
            return None;
        }
        let bin = tempfile::tempdir().expect("a directory for the far end's PATH");
        for t in TOOLS {
            let Some(real) = which(t) else {
                panic!("{t} is missing on this machine");
            };
            std::os::unix::fs::symlink(real, bin.path().join(t)).expect("linking a tool");
        }
        for (name, body) in wrap {
            let p = bin.path().join(name);
            let _ = std::fs::remove_file(&p);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("writing a wrapper");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let path = bin.path().to_str().expect("UTF-8").to_string();
        let tmpdir = tmp.to_str().expect("UTF-8").to_string();
        let sshd = Sshd::start_with_env(&[("PATH", &path), ("TMPDIR", &tmpdir)])?;
        Some(Far {
            sshd,
            bin,
            tmp: tmp.to_path_buf(),
        })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("timeout");
        c.args(["-k", "5", RUN_LIMIT, BIN])
            .args(args)
            .env("LINERATE_SSH_COMMAND", self.sshd.ssh_command())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().expect("run linerate");
        assert!(
            !matches!(out.status.code(), Some(124 | 137)),
            "linerate {args:?} hung; stderr: {}",
            text(&out.stderr)
        );
        assert!(
            !text(&out.stderr).contains("panicked"),
            "{}",
            text(&out.stderr)
        );
        out
    }

    /// No copy left in the far end's temporary directories, no process of it, no session.
    fn assert_nothing_left(&self, also: &[&Path]) {
        assert_eq!(wait_gone(COPY_MARK, GONE_WITHIN), Vec::<u32>::new());
        assert_eq!(
            self.sshd.wait_sessions_gone(GONE_WITHIN),
            Vec::<u32>::new(),
            "{}",
            self.sshd.log()
        );
        for dir in std::iter::once(self.tmp.as_path()).chain(also.iter().copied()) {
            let left: Vec<String> = std::fs::read_dir(dir)
                .expect("reading a temporary directory")
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(COPY_MARK))
                .collect();
            assert!(left.is_empty(), "left in {}: {left:?}", dir.display());
        }
        let _ = &self.bin;
    }
}

fn which(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr: {}\nstdout: {}",
            text(&out.stderr),
            text(&out.stdout)
        )
    })
}

const DOCTOR: &[&str] = &[
    "doctor",
    "127.0.0.1",
    "--ssh",
    "--quick",
    "--json",
    "--no-disk",
    "--no-rdma",
    "--fail-on",
    "never",
];

#[test]
fn doctor_copies_itself_to_a_far_end_without_linerate_and_leaves_nothing() {
    let tmp = tempfile::tempdir().expect("the far end's TMPDIR");
    let Some(far) = Far::new(tmp.path(), &[]) else {
        return;
    };
    // auto (the default): the far end's PATH has no linerate.
    let out = far.run(DOCTOR);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    schema::assert_matches("doctor.schema.json", &doc);
    let c = &doc["far_end"]["copied"];
    assert_eq!(c["reason"], "no linerate on its PATH", "{c}");
    let size = std::fs::metadata(BIN).expect("this build").len();
    assert_eq!(c["bytes"].as_u64(), Some(size), "{c}");
    assert_eq!(c["machine"], std::env::consts::ARCH, "{c}");
    let dir = c["directory"].as_str().unwrap_or("");
    assert!(
        dir.starts_with(&format!("{}/{COPY_MARK}", tmp.path().display())),
        "{c}"
    );
    assert!(c["seconds"].as_f64().is_some_and(|s| s > 0.0), "{c}");
    // The tests ran against it.
    let tests = doc["tests"].as_array().expect("tests");
    assert!(tests.iter().any(|t| t["error"].is_null()), "{doc}");
    // Said on stderr too, with its size and time.
    let err = text(&out.stderr);
    assert!(err.contains("copied this linerate ("), "{err}");
    assert!(err.contains(dir), "{err}");
    far.assert_nothing_left(&[]);

    // never: the far end's own linerate or nothing, said with the way out.
    let out = far.run(&[
        "bench",
        "127.0.0.1",
        "--ssh",
        "-t",
        "1",
        "--ssh-copy",
        "never",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("was not found"), "{err}");
    assert!(err.contains("--ssh-copy auto"), "{err}");
    far.assert_nothing_left(&[]);
}

#[test]
fn bench_and_soak_say_the_copy_in_their_json() {
    let tmp = tempfile::tempdir().expect("the far end's TMPDIR");
    let Some(far) = Far::new(tmp.path(), &[]) else {
        return;
    };
    let out = far.run(&[
        "bench",
        "127.0.0.1",
        "--ssh",
        "-t",
        "1",
        "--json",
        "--ssh-copy",
        "always",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    schema::assert_matches("bench.schema.json", &doc);
    assert_eq!(doc["far_end_copy"]["reason"], "--ssh-copy always", "{doc}");
    far.assert_nothing_left(&[]);
    let out = far.run(&[
        "soak",
        "127.0.0.1",
        "--ssh",
        "--duration",
        "2s",
        "--interval",
        "1s",
        "-P",
        "1",
        "--no-rdma",
        "--json",
    ]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let doc = json(&out);
    schema::assert_matches("soak.schema.json", &doc);
    assert_eq!(
        doc["far_end_copy"]["reason"], "no linerate on its PATH",
        "{doc}"
    );
    far.assert_nothing_left(&[]);
}

/// A tmpfs mounted `noexec` at a directory of the test's own, unmounted on drop.
struct NoExec(tempfile::TempDir);

impl NoExec {
    fn mount() -> NoExec {
        let d = tempfile::tempdir().expect("a mount point");
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                "noexec,size=1g,mode=1777",
                "linerate-test-noexec",
            ])
            .arg(d.path())
            .status()
            .expect("mount");
        assert!(st.success(), "mounting a noexec tmpfs");
        NoExec(d)
    }
}

impl Drop for NoExec {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_noexec_temporary_directory_is_passed_over_and_nothing_is_left_anywhere() {
    if !linerate_testkit::is_root() {
        linerate_testkit::skip("needs root to mount a noexec tmpfs and run sshd");
        return;
    }
    let noexec = NoExec::mount();
    let Some(far) = Far::new(noexec.0.path(), &[]) else {
        return;
    };
    let out = far.run(DOCTOR);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    let c = &doc["far_end"]["copied"];
    let passed: Vec<&str> = c["noexec"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(passed, [noexec.0.path().to_str().unwrap()], "{c}");
    // The next candidate: /var/tmp.
    let dir = c["directory"].as_str().unwrap_or("");
    assert!(dir.starts_with(&format!("/var/tmp/{COPY_MARK}")), "{c}");
    far.assert_nothing_left(&[Path::new("/var/tmp")]);
}

#[test]
fn a_client_killed_mid_run_leaves_no_copy_and_no_process() {
    let tmp = tempfile::tempdir().expect("the far end's TMPDIR");
    let Some(far) = Far::new(tmp.path(), &[]) else {
        return;
    };
    let mut client = Command::new(BIN)
        .args(["doctor", "127.0.0.1", "--ssh", "--quick", "--json"])
        .args(["--no-disk", "--no-rdma", "--ssh-copy", "always"])
        .env("LINERATE_SSH_COMMAND", far.sshd.ssh_command())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start linerate doctor");
    // The copy's server runs: a program in the far end's TMPDIR (not the script, whose
    // command line names the directory too), bounded.
    let copy = format!("{}/{COPY_MARK}", tmp.path().display());
    let mut running = Vec::new();
    for _ in 0..600 {
        running = pids_with(COPY_MARK)
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.starts_with(copy.as_bytes()))
            })
            .collect();
        if !running.is_empty() || client.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if running.is_empty() {
        let _ = client.kill();
        let _ = client.wait();
        let mut err = String::new();
        let _ = client.stderr.take().map(|mut e| e.read_to_string(&mut err));
        panic!("the copy never ran: {err}");
    }
    // Its file is already gone while it serves.
    let copies: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("TMPDIR")
        .filter_map(Result::ok)
        .collect();
    assert!(copies.is_empty(), "{copies:?}");
    std::thread::sleep(Duration::from_secs(1));
    client.kill().expect("SIGKILL the client");
    let _ = client.wait();
    far.assert_nothing_left(&[]);
}

#[test]
fn a_far_end_of_another_machine_or_an_older_glibc_is_refused_naming_both() {
    let tmp = tempfile::tempdir().expect("the far end's TMPDIR");
    let bench = [
        "bench",
        "127.0.0.1",
        "--ssh",
        "-t",
        "1",
        "--ssh-copy",
        "always",
    ];
    let Some(far) = Far::new(
        tmp.path(),
        &[(
            "uname",
            "[ \"$1\" = -m ] && { echo aarch64; exit 0; }\nexec /usr/bin/uname \"$@\"",
        )],
    ) else {
        return;
    };
    let out = far.run(&bench);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("aarch64"), "{err}");
    assert!(err.contains(std::env::consts::ARCH), "{err}");
    assert!(err.contains("was not copied"), "{err}");
    far.assert_nothing_left(&[]);
    drop(far);

    let Some(far) = Far::new(
        tmp.path(),
        &[
            ("getconf", "echo 'glibc 2.17'"),
            ("ldd", "echo 'ldd (GNU libc) 2.17'"),
        ],
    ) else {
        return;
    };
    let out = far.run(&bench);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("glibc 2.17"), "{err}");
    let need = linerate_ssh::glibc_needed(&std::fs::read(BIN).expect("this build"))
        .expect("this build's ELF")
        .expect("a glibc build");
    assert!(err.contains(&format!("glibc {need} or newer")), "{err}");
    far.assert_nothing_left(&[]);
}
