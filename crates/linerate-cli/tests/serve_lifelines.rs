//! The bounds of a temporary `linerate serve` (what `--ssh` starts on the far end), on this
//! host without ssh: `--psk-stdin` takes the key from stdin's first line and requires it of
//! clients, `--exit-on-stdin-close` ends the server when stdin closes, `--exit-after` at its
//! deadline, `--max-served` after its tests, and a SIGTERM ends it cleanly; the
//! `--scratch-write-dir` directory is removed every time.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_linerate");
/// The longest a server may take to end once it should: generous, for a loaded machine.
const END_WITHIN: Duration = Duration::from_secs(30);
const KEY: &str = "0123456789abcdef0123456789abcdef";

/// A temporary server on loopback: the process, its stdin, and its `listening` event.
struct Temp {
    child: Child,
    stdin: Option<ChildStdin>,
    listening: Value,
}

impl Temp {
    /// `serve -B 127.0.0.1 -p 0 ARGS`, the key written on stdin when `key` is given.
    fn start(args: &[&str], key: Option<&str>) -> Temp {
        let mut child = Command::new(BIN)
            .args(["serve", "-B", "127.0.0.1", "-p", "0"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start linerate serve");
        let mut stdin = child.stdin.take();
        if let (Some(k), Some(s)) = (key, stdin.as_mut()) {
            writeln!(s, "{k}").expect("write the key");
        }
        // Its first line, `listening` (within a bound); the rest of its log is drained.
        let (listening, _) = common::await_listening(&mut child);
        Temp {
            child,
            stdin,
            listening,
        }
    }

    fn port(&self) -> String {
        let a = self.listening["address"].as_str().expect("address");
        a.rsplit_once(':').expect("HOST:PORT").1.to_string()
    }

    fn write_dir(&self) -> PathBuf {
        PathBuf::from(self.listening["write_dir"].as_str().expect("a write_dir"))
    }

    /// Wait (bounded) for it to end: its exit status and stderr.
    fn ended(mut self) -> (std::process::ExitStatus, String) {
        let step = Duration::from_millis(50);
        for _ in 0..(END_WITHIN.as_millis() / step.as_millis()) {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(
                    self.child.stderr.as_mut().expect("stderr"),
                    &mut err,
                );
                return (status, err);
            }
            std::thread::sleep(step);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("the server did not end within {END_WITHIN:?}");
    }
}

fn bench(port: &str, extra: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .args([
            "-k",
            "5",
            "120",
            BIN,
            "bench",
            "127.0.0.1",
            "-p",
            port,
            "-t",
            "0.5",
        ])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("run linerate bench")
}

#[test]
fn a_key_from_stdin_is_required_and_stdin_closing_ends_the_server_and_its_scratch_directory() {
    let parent = tempfile::tempdir().expect("a directory");
    let s = Temp::start(
        &[
            "--psk-stdin",
            "--exit-on-stdin-close",
            "--scratch-write-dir",
            parent.path().to_str().expect("UTF-8"),
        ],
        Some(KEY),
    );
    assert_eq!(s.listening["auth"], true);
    let dir = s.write_dir();
    assert!(dir.is_dir() && dir.starts_with(parent.path()), "{dir:?}");
    // Without the key: refused. With it: a test runs.
    let out = bench(&s.port(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pre-shared key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let keyfile = tempfile::NamedTempFile::new().expect("a key file");
    std::fs::write(keyfile.path(), KEY).expect("write the key file");
    let out = bench(
        &s.port(),
        &["--psk-file", keyfile.path().to_str().expect("UTF-8")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut s = s;
    drop(s.stdin.take());
    let (status, err) = s.ended();
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("standard input closing"), "{err}");
    assert!(!dir.exists(), "{dir:?} is left");
}

#[test]
fn the_deadline_ends_a_server_and_a_signal_ends_it_cleanly() {
    let s = Temp::start(&["--exit-after", "1"], None);
    let (status, err) = s.ended();
    assert!(status.success(), "{status}: {err}");
    assert!(err.contains("deadline"), "{err}");

    let parent = tempfile::tempdir().expect("a directory");
    let s = Temp::start(
        &[
            "--scratch-write-dir",
            parent.path().to_str().expect("UTF-8"),
        ],
        None,
    );
    let dir = s.write_dir();
    assert!(dir.is_dir());
    let pid = s.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(killed.is_ok_and(|k| k.success()));
    let (status, err) = s.ended();
    assert!(status.success(), "{status}: {err}");
    assert!(!dir.exists(), "{dir:?} is left");
}

#[test]
fn max_served_ends_the_server_after_its_tests() {
    let s = Temp::start(&["--max-served", "2"], None);
    for _ in 0..2 {
        let out = bench(&s.port(), &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (status, err) = s.ended();
    assert!(status.success(), "{status}: {err}");
}

#[test]
fn a_missing_or_short_key_on_stdin_is_refused() {
    for (input, words) in [("", "standard input closed"), ("short\n", "at least 16")] {
        let mut child = Command::new(BIN)
            .args(["serve", "-B", "127.0.0.1", "-p", "0", "--psk-stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start linerate serve");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write");
        drop(stdin);
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(words), "{input:?}: {err}");
        assert!(out.stdout.is_empty(), "it listened: {:?}", out.stdout);
    }
    // The flags that need a write directory still do.
    let out = Command::new(BIN)
        .args(["serve", "--max-file-size", "1M"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}
