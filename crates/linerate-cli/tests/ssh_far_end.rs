//! `--ssh` against a real OpenSSH server the test starts itself on 127.0.0.1 (its own host key,
//! authorized key, known_hosts and ssh config, reached through `LINERATE_SSH_COMMAND`; see
//! `linerate_testkit::sshd`): doctor, bench and soak each start their far end, run and leave
//! nothing running; a client killed with SIGKILL takes its far end with it; unknown and changed
//! host keys, a refused login, an unreachable or silent SSH host, and a linerate missing, too
//! old or speaking another protocol on the far end are refused with ssh's words.
//!
//! The far end is this build (`--ssh-command` is a link to it under a name of the test's own,
//! so the processes it starts are found by their command line): the tests pass whether or not
//! linerate is installed. Needs root (sshd); elsewhere each test records a skip.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use linerate_testkit::schema;
use linerate_testkit::sshd::{marked_program, pids_with, wait_gone, Sshd};
use serde_json::Value;

use common::{text, BIN};

/// A hard limit on each linerate run: a hang fails the test instead of stalling it.
const RUN_LIMIT: &str = "180";
/// The longest a far end may take to be gone once it should be: generous, for a loaded machine.
const GONE_WITHIN: Duration = Duration::from_secs(30);

/// sshd and a link to this build named for the test.
struct Far {
    sshd: Sshd,
    program: PathBuf,
}

impl Far {
    fn new(name: &str) -> Option<Far> {
        let sshd = Sshd::start()?;
        let program = marked_program(sshd.dir(), name, Path::new(BIN));
        Some(Far { sshd, program })
    }

    fn program(&self) -> &str {
        self.program.to_str().expect("a UTF-8 path")
    }

    /// `linerate ARGS --ssh-command PROGRAM` with `ssh_command` as LINERATE_SSH_COMMAND,
    /// under a hard time limit.
    fn run_with(&self, ssh_command: &str, args: &[&str]) -> Output {
        let out = Command::new("timeout")
            .args(["-k", "5", RUN_LIMIT, BIN])
            .args(args)
            .args(["--ssh-command", self.program()])
            .env("LINERATE_SSH_COMMAND", ssh_command)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run linerate");
        assert!(
            !matches!(out.status.code(), Some(124 | 137)),
            "linerate {args:?} hung past {RUN_LIMIT} s; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        out
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(&self.sshd.ssh_command(), args)
    }

    /// Nothing this test's far end started is left: no far end, no ssh session.
    fn assert_nothing_left(&self) {
        assert_eq!(wait_gone(self.program(), GONE_WITHIN), Vec::<u32>::new());
        assert_eq!(
            self.sshd.wait_sessions_gone(GONE_WITHIN),
            Vec::<u32>::new(),
            "{}",
            self.sshd.log()
        );
        // The local ssh too: its command line names the test's client config (sshd's own is
        // `sshd_config`).
        let config = self.sshd.dir().join("ssh_config");
        let config = config.to_str().expect("UTF-8");
        assert_eq!(wait_gone(config, GONE_WITHIN), Vec::<u32>::new());
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}; exit {:?}); stderr: {}\nstdout: {}",
            out.status.code(),
            text(&out.stderr),
            text(&out.stdout)
        )
    })
}

#[test]
fn bench_over_ssh_measures_and_leaves_nothing_running() {
    let Some(far) = Far::new("lr-bench") else {
        return;
    };
    let out = far.run(&["bench", "127.0.0.1", "--ssh", "-t", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    schema::assert_matches("bench.schema.json", &doc);
    let t = &doc["tests"][0];
    assert!(t["gbps"].as_f64().unwrap_or(0.0) > 0.0, "{t}");
    // The far end served this run on a port its kernel picked, not serve's default.
    assert_ne!(t["server"].as_str().unwrap_or(""), "127.0.0.1:5301", "{t}");
    far.assert_nothing_left();
}

#[test]
fn doctor_over_ssh_copies_to_a_scratch_directory_it_removes() {
    let Some(far) = Far::new("lr-doctor") else {
        return;
    };
    let local = tempfile::tempdir().expect("a directory for the local disk");
    let remote = tempfile::tempdir().expect("a directory for the far end's disk");
    let out = far.run(&[
        "doctor",
        "127.0.0.1",
        "--ssh",
        "--quick",
        "--json",
        "--no-rdma",
        "--fail-on",
        "never",
        "--disk",
        local.path().to_str().expect("UTF-8"),
        "--ssh-disk",
        remote.path().to_str().expect("UTF-8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    schema::assert_matches("doctor.schema.json", &doc);
    let tests = doc["tests"].as_array().expect("tests");
    // Both directions: doctor knew it had two ends.
    for kind in ["send", "receive"] {
        assert!(
            tests
                .iter()
                .any(|t| t["direction"] == kind && t["error"].is_null()),
            "no {kind} test: {doc}"
        );
    }
    let copy = tests
        .iter()
        .find(|t| t["kind"] == "file_transfer")
        .unwrap_or_else(|| panic!("no file copy to the far end: {doc}"));
    assert!(copy["error"].is_null(), "{copy}");
    // The far end's scratch directory went with it.
    let left: Vec<_> = std::fs::read_dir(remote.path())
        .expect("reading the far end's disk directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    far.assert_nothing_left();
}

#[test]
fn soak_over_ssh_samples_both_ends_and_leaves_nothing_running() {
    let Some(far) = Far::new("lr-soak") else {
        return;
    };
    // `--ssh SSHHOST` without HOST: the tests go to the address ssh connects to.
    let out = far.run(&[
        "soak",
        "--ssh",
        "127.0.0.1",
        "--duration",
        "3s",
        "--interval",
        "1s",
        "-P",
        "1",
        "--json",
    ]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let doc = json(&out);
    schema::assert_matches("soak.schema.json", &doc);
    assert!(doc["error"].is_null(), "{doc}");
    let host = doc["params"]["host"].as_str().unwrap_or("");
    assert!(host.starts_with("127.0.0.1:"), "{doc}");
    far.assert_nothing_left();
}

#[test]
fn a_client_killed_outright_takes_its_far_end_with_it() {
    let Some(far) = Far::new("lr-killed") else {
        return;
    };
    // Doctor: a far end with several tests to serve, so neither its test count nor its
    // deadline (minutes away) ends it; only its lifeline can.
    let mut client = Command::new(BIN)
        .args(["doctor", "127.0.0.1", "--ssh", "--quick", "--json"])
        .args(["--no-disk", "--no-rdma"])
        .args(["--ssh-command", far.program()])
        .env("LINERATE_SSH_COMMAND", far.sshd.ssh_command())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start linerate doctor");
    // Wait (bounded) for the far end's server to run.
    let serving = format!("{} serve", far.program());
    let mut running = Vec::new();
    for _ in 0..300 {
        running = pids_with(&serving);
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
        panic!("the far end never ran: {err}");
    }
    // Let a test start, then SIGKILL: no handler runs here, only the kernel closes pipes.
    std::thread::sleep(Duration::from_secs(2));
    client.kill().expect("SIGKILL the client");
    let _ = client.wait();
    far.assert_nothing_left();
}

#[test]
fn host_keys_unknown_or_changed_and_refused_logins_are_refused_in_sshs_words() {
    let Some(far) = Far::new("lr-keys") else {
        return;
    };
    let bench = ["bench", "127.0.0.1", "--ssh", "-t", "1"];
    let cases = [
        (
            far.sshd.ssh_command_unknown_key(),
            vec!["Host key verification failed", "never accepts a host key"],
        ),
        (
            far.sshd.ssh_command_changed_key(),
            vec![
                "REMOTE HOST IDENTIFICATION HAS CHANGED",
                "man-in-the-middle",
                "ssh-keygen",
            ],
        ),
        (
            far.sshd.ssh_command_stranger(),
            vec!["Permission denied", "BatchMode", "ssh-copy-id"],
        ),
    ];
    for (command, words) in cases {
        let out = far.run_with(&command, &bench);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        for w in words {
            assert!(err.contains(w), "{command}: `{w}` not in: {err}");
        }
    }
    // None got as far as starting the far end.
    assert!(pids_with(far.program()).is_empty());
    far.assert_nothing_left();
}

#[test]
fn unreachable_and_silent_ssh_hosts_are_refused_in_bounded_time() {
    let Some(far) = Far::new("lr-unreachable") else {
        return;
    };
    let bench = ["bench", "127.0.0.1", "--ssh", "-t", "1"];
    // Nothing listens: refused at once.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").expect("a port");
        l.local_addr().expect("its address").port()
    };
    let out = far.run_with(&format!("{} -p {closed}", far.sshd.ssh_command()), &bench);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    assert!(err.contains("could not reach"), "{err}");
    // Something accepts and never speaks: ssh's connect time-out (set lower in
    // LINERATE_SSH_COMMAND, whose options come first and win) ends it.
    let silent = TcpListener::bind("127.0.0.1:0").expect("a silent listener");
    let port = silent.local_addr().expect("its address").port();
    let out = far.run_with(
        &format!("{} -o ConnectTimeout=2 -p {port}", far.sshd.ssh_command()),
        &bench,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("timed out"), "{err}");
    drop(silent);
    assert!(pids_with(far.program()).is_empty());
}

#[test]
fn linerate_missing_too_old_or_of_another_protocol_on_the_far_end_is_said() {
    let Some(far) = Far::new("lr-versions") else {
        return;
    };
    let dir = far.sshd.dir();
    let script = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("writing a fake linerate");
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        p.to_str().expect("UTF-8").to_string()
    };
    let run = |program: &str| {
        let out = Command::new("timeout")
            .args(["-k", "5", RUN_LIMIT, BIN])
            .args(["bench", "127.0.0.1", "--ssh", "-t", "1"])
            .args(["--ssh-command", program])
            .env("LINERATE_SSH_COMMAND", far.sshd.ssh_command())
            .stdin(Stdio::null())
            .output()
            .expect("run linerate");
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let missing = dir.join("no-such-linerate");
    let err = run(missing.to_str().expect("UTF-8"));
    assert!(err.contains("was not found"), "{err}");
    assert!(err.contains("No such file"), "{err}");
    assert!(err.contains("--ssh-command"), "{err}");
    let old = script(
        "old-linerate",
        "[ \"$1\" = --version ] && { echo 'linerate 0.0.1'; exit 0; }\necho \"error: unexpected argument '--psk-stdin' found\" >&2; exit 2",
    );
    let err = run(&old);
    assert!(err.contains("linerate 0.0.1"), "{err}");
    assert!(err.contains("Install linerate"), "{err}");
    // A far end of another protocol: refused, and ended (its stdin closed).
    let other = script(
        "other-protocol-linerate",
        "echo 'Welcome'\necho '{\"event\":\"listening\",\"address\":\"0.0.0.0:1\",\"protocol\":99,\"version\":\"9.9.9\"}'\nexec cat >/dev/null",
    );
    let err = run(&other);
    assert!(err.contains("protocol 99"), "{err}");
    assert!(err.contains("linerate 9.9.9"), "{err}");
    assert_eq!(wait_gone(&other, GONE_WITHIN), Vec::<u32>::new());
    far.assert_nothing_left();
}

#[test]
fn doctor_with_iperf3_over_ssh_starts_a_stock_server_for_its_tests_and_ends_it() {
    let iperf3 = Path::new("/usr/bin/iperf3");
    if !iperf3.exists() {
        linerate_testkit::skip("needs iperf3 (apt install iperf3; scripts/setup-tests.sh)");
        return;
    }
    let Some(sshd) = Sshd::start() else {
        return;
    };
    // The far end's iperf3, under a name of this test's own.
    let program = marked_program(sshd.dir(), "lr-doc-iperf3", iperf3);
    let program = program.to_str().expect("a UTF-8 path");
    let out = Command::new("timeout")
        .args(["-k", "5", RUN_LIMIT, BIN])
        .args(["doctor", "127.0.0.1", "--ssh", "--iperf3", "--quick"])
        .args(["--json", "--no-disk", "--fail-on", "never"])
        .args(["--ssh-command", program])
        .env("LINERATE_SSH_COMMAND", sshd.ssh_command())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run linerate");
    assert!(
        !matches!(out.status.code(), Some(124 | 137)),
        "doctor --iperf3 --ssh hung; stderr: {}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&out);
    schema::assert_matches("doctor.schema.json", &doc);
    let f = &doc["far_end"];
    assert_eq!(f["protocol"], "iperf3", "{f}");
    assert_eq!(f["judged_from"], "this_end", "{f}");
    // The release came from the far end's `iperf3 --version` over ssh.
    assert_eq!(f["version"], "iperf3 3.12", "{f}");
    // Several tests against the one server it started (not a one-test `-1`), both ways.
    let tests = doc["tests"].as_array().expect("tests");
    assert!(tests.len() >= 3, "{doc}");
    for kind in ["send", "receive"] {
        assert!(
            tests
                .iter()
                .any(|t| t["direction"] == kind && t["error"].is_null()),
            "no {kind} test: {doc}"
        );
    }
    assert_eq!(wait_gone(program, GONE_WITHIN), Vec::<u32>::new());
    assert_eq!(
        sshd.wait_sessions_gone(GONE_WITHIN),
        Vec::<u32>::new(),
        "{}",
        sshd.log()
    );
}
