//! The errors a first-time user meets, from real processes on loopback: each message names the
//! thing (host, port, file), what happened, and what to do, and the exit status is 2.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

mod common;
use common::{free_port, is_root, server, BIN};

fn linerate(args: &[&str]) -> Output {
    Command::new(BIN)
        .env("NO_COLOR", "1")
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// The exit status is 2 ("could not run") and stderr is returned.
fn fails(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    err
}

fn assert_has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected {p:?} in: {err}");
    }
}

#[test]
fn nothing_listening_says_how_to_start_a_server() {
    let port = free_port();
    let p = port.to_string();
    let err = fails(&linerate(&["bench", "127.0.0.1", "-p", &p, "-t", "1"]));
    assert_has(
        &err,
        &[
            &format!("connecting to 127.0.0.1:{port}"),
            // The OS error is kept.
            "refused",
            &format!("no `linerate serve` listens on port {port} of 127.0.0.1"),
            &format!("`linerate serve -p {port}`"),
            "-p PORT",
        ],
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn an_unknown_host_is_named() {
    for args in [
        &["bench", "no-such-host.invalid", "-t", "1"][..],
        &["doctor", "no-such-host.invalid", "--no-disk", "--no-rdma"][..],
    ] {
        let err = fails(&linerate(args));
        assert_has(
            &err,
            &[
                "cannot resolve the host name `no-such-host.invalid`",
                "give its IP address",
            ],
        );
    }
}

#[test]
fn a_server_with_a_key_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    let wrong = dir.path().join("wrong");
    std::fs::write(&key, "the-servers-key-0123456789").unwrap();
    std::fs::write(&wrong, "not-the-servers-key-98765").unwrap();
    let s = server(&["--psk-file", key.to_str().unwrap()]);
    let p = s.port.to_string();

    let err = fails(&linerate(&["bench", "127.0.0.1", "-p", &p, "-t", "1"]));
    assert_has(
        &err,
        &[
            &format!("the server at 127.0.0.1:{p} requires a pre-shared key"),
            "--psk-file FILE",
            "`linerate serve --psk-file`",
        ],
    );

    let w = wrong.to_str().unwrap();
    let err = fails(&linerate(&[
        "bench",
        "127.0.0.1",
        "-p",
        &p,
        "-t",
        "1",
        "--psk-file",
        w,
    ]));
    assert_has(
        &err,
        &[
            "wrong pre-shared key",
            "--psk-file must hold the same key",
            "`linerate serve --psk-file`",
        ],
    );
}

#[test]
fn a_port_in_use_names_it_and_the_remedy() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let p = port.to_string();
    let err = fails(&linerate(&["serve", "-B", "127.0.0.1", "-p", &p]));
    assert_has(
        &err,
        &[
            &format!("binding 127.0.0.1:{port}"),
            "in use",
            &format!("already listens on port {port}"),
            "-p PORT",
        ],
    );
}

#[test]
fn a_busy_server_says_which_limit() {
    let s = server(&["--max-tests", "1"]);
    let p = s.port.to_string();
    // A slow first test (10 Mb/s, little CPU) holds the only slot.
    let mut first = StdCommand::new(BIN)
        .args([
            "bench",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "5",
            "-b",
            "10M",
            "--json-stream",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its first line is the `start` event: the test is accepted and running.
    let mut out = first.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    while out.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {}
    let err = fails(&linerate(&["bench", "127.0.0.1", "-p", &p, "-t", "1"]));
    let _ = first.kill();
    let _ = first.wait();
    assert_has(
        &err,
        &["server busy", "serve --max-tests", "try again shortly"],
    );
}

#[test]
fn a_server_over_its_pending_limit_is_explained() {
    let s = server(&["--max-pending", "1", "--handshake-timeout", "10"]);
    // Wait until the readiness probes' connections are gone, then hold the only slot.
    std::thread::sleep(Duration::from_millis(300));
    let _held = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let p = s.port.to_string();
    let err = fails(&linerate(&["bench", "127.0.0.1", "-p", &p, "-t", "1"]));
    assert_has(
        &err,
        &[
            &format!("the server at 127.0.0.1:{p} closed the connection before answering"),
            "serve --max-pending",
        ],
    );
}

#[test]
fn a_version_mismatch_says_to_match_versions() {
    // A server of another protocol version: answers the hello with protocol 999.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let fake = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let mut len = [0u8; 4];
        c.read_exact(&mut len).unwrap();
        let mut hello = vec![0u8; u32::from_be_bytes(len) as usize];
        c.read_exact(&mut hello).unwrap();
        let reply = serde_json::json!({
            "type": "server_hello", "protocol": 999, "version": "9.9.9",
            "auth": false, "nonce": "00",
        })
        .to_string();
        let mut frame = u32::try_from(reply.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(reply.as_bytes());
        c.write_all(&frame).unwrap();
        // Keep the connection until the client has read the answer and left.
        let _ = c.read(&mut [0u8; 64]);
    });
    let p = port.to_string();
    let err = fails(&linerate(&["bench", "127.0.0.1", "-p", &p, "-t", "1"]));
    fake.join().unwrap();
    assert_has(
        &err,
        &[
            &format!("the server at 127.0.0.1:{port} runs linerate 9.9.9 (protocol 999)"),
            "install the same linerate version on both hosts",
        ],
    );
}

#[test]
fn missing_files_and_directories_are_named() {
    let err = fails(&linerate(&[
        "serve",
        "-p",
        "0",
        "--psk-file",
        "/no/such/key",
    ]));
    assert_has(
        &err,
        &[
            "--psk-file /no/such/key",
            "No such file",
            "head -c 32 /dev/urandom",
        ],
    );
    let err = fails(&linerate(&[
        "serve",
        "-p",
        "0",
        "--write-dir",
        "/no/such/dir",
    ]));
    assert_has(
        &err,
        &["--write-dir /no/such/dir: no such directory", "mkdir -p"],
    );
    let err = fails(&linerate(&["disk", "/no/such/dir", "-t", "1"]));
    assert_has(
        &err,
        &[
            "/no/such/dir: no such directory",
            "give an existing directory",
        ],
    );
}

/// Unreadable `--psk-file`, unwritable `--write-dir`: as an unprivileged user (root reads and
/// writes everything, so under root the commands run as `nobody` through `setpriv`).
#[test]
fn permission_errors_name_the_file_and_the_user() {
    let dir = tempfile::tempdir().unwrap();
    // `nobody` must be able to reach the files to be refused by their own modes.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "a-key-nobody-may-read-0123").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o000)).unwrap();
    let wd = dir.path().join("incoming");
    std::fs::create_dir(&wd).unwrap();
    std::fs::set_permissions(&wd, std::fs::Permissions::from_mode(0o555)).unwrap();

    let root = is_root();
    if root
        && StdCommand::new("setpriv")
            .arg("--version")
            .output()
            .is_err()
    {
        linerate_testkit::skip("running as root without setpriv: cannot drop privileges");
        return;
    }
    let run = |args: &[&str]| -> Output {
        let mut c = if root {
            let mut c = StdCommand::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                BIN,
            ]);
            c
        } else {
            StdCommand::new(BIN)
        };
        c.args(args).stdin(Stdio::null()).output().unwrap()
    };
    let k = key.to_str().unwrap();
    let err = fails(&run(&["serve", "-p", "0", "--psk-file", k]));
    assert_has(
        &err,
        &[
            &format!("--psk-file {k}"),
            "Permission denied",
            "must be able to read it",
        ],
    );
    let w = wd.to_str().unwrap();
    let err = fails(&run(&["serve", "-p", "0", "--write-dir", w]));
    assert_has(
        &err,
        &[
            &format!("--write-dir {w}: cannot write into it"),
            "writable by the user running `linerate serve`",
        ],
    );
}

/// A port whose packets are dropped: the connection times out after `--connect-timeout`, and
/// the message names the host, the port and the likely firewall.
///
/// `nft` and `iptables` are not on every test machine (nor their kernel modules), so the drop
/// is made with what network namespaces always have: in a private namespace, a veth pair and a
/// permanent neighbour entry with a MAC address no interface has. The SYN leaves and is
/// discarded by the peer, silently, exactly as a DROP rule discards it.
#[test]
fn a_dropped_port_times_out_with_the_port_named() {
    if !is_root() {
        linerate_testkit::skip("needs root for a private network namespace (unshare -n)");
        return;
    }
    let script = format!(
        "ip link set lo up && ip link add v0 type veth peer name v1 && \
         ip addr add 10.9.9.1/24 dev v0 && ip link set v0 up && ip link set v1 up && \
         ip neigh add 10.9.9.2 lladdr 02:00:00:00:00:02 dev v0 nud permanent && \
         exec {BIN} bench 10.9.9.2 -p 5301 -t 1 --connect-timeout 1"
    );
    let t0 = Instant::now();
    let out = match StdCommand::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            linerate_testkit::skip(format!("unshare: {e}"));
            return;
        }
    };
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if !err.contains("linerate:") {
        linerate_testkit::skip(format!("cannot set up the namespace: {err}"));
        return;
    }
    let err = fails(&out);
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "--connect-timeout 1 took {:?}",
        t0.elapsed()
    );
    assert_has(
        &err,
        &[
            "connecting to 10.9.9.2:5301",
            "timed out",
            "no answer within 1 s",
            "TCP port 5301",
            "firewall",
            "-p PORT",
        ],
    );
}
