//! The iperf3 launcher against a real OpenSSH server the test starts itself (see
//! `linerate_testkit::sshd`), driven by a stock `iperf3 -c`: a one-test server that serves its
//! test and ends, one ended by hanging up before any client came, a port in use passed over,
//! and iperf3 missing on the far end. Every far-end process is started through a link of its
//! own name, so what is left running is found by its command line.
//!
//! Needs root (sshd) and iperf3; elsewhere the tests record a skip.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use linerate_ssh::{Iperf3Server, Iperf3Spec, Ssh, SshError};
use linerate_testkit::sshd::{marked_program, wait_gone, Sshd};

const IPERF3: &str = "/usr/bin/iperf3";
/// The longest a far end may take to be gone once it should be: generous, for a loaded machine.
const GONE_WITHIN: Duration = Duration::from_secs(20);

/// sshd, the client for it, and a link to iperf3 named for this test; None after a skip.
fn setup(name: &str) -> Option<(Sshd, Ssh, String)> {
    if !Path::new(IPERF3).exists() {
        linerate_testkit::skip("needs iperf3 (apt install iperf3; scripts/setup-tests.sh)");
        return None;
    }
    let sshd = Sshd::start()?;
    let ssh = Ssh::with_command(Some(&sshd.ssh_command()));
    let program = marked_program(sshd.dir(), name, Path::new(IPERF3));
    let program = program.to_str().expect("a UTF-8 path").to_string();
    Some((sshd, ssh, program))
}

fn free_port() -> u16 {
    TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn spec(sshd: &Sshd, program: &str, ports: Vec<u16>) -> Iperf3Spec {
    Iperf3Spec {
        program: program.into(),
        ports,
        ..Iperf3Spec::one_test(sshd.host(), Duration::from_secs(120))
    }
}

#[test]
fn a_one_test_server_serves_a_stock_client_then_ends() {
    let Some((sshd, ssh, program)) = setup("iperf3-one-test") else {
        return;
    };
    let port = free_port();
    let mut server = Iperf3Server::start(&ssh, &spec(&sshd, &program, vec![port]))
        .unwrap_or_else(|e| panic!("{e}\nsshd: {}", sshd.log()));
    assert_eq!(server.port(), port);
    assert_eq!(server.remote().release.map(|r| r.0), Some(3));
    assert!(server.remote().gnu_timeout, "{:?}", server.remote());
    assert!(
        server.bounds().iter().any(|b| b.contains("one test")),
        "{:?}",
        server.bounds()
    );
    let out = Command::new(IPERF3)
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-J"])
        .output()
        .expect("run iperf3 -c");
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("iperf3 -J prints JSON");
    assert!(out.status.success(), "{json}");
    let bytes = json["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    assert!(bytes > 0, "{json}");
    // A one-off server exits after its test; its ssh with it.
    assert!(server.wait(GONE_WITHIN), "{}", server.output());
    assert!(
        server.output().contains("Server listening on"),
        "{}",
        server.output()
    );
    drop(server);
    assert_eq!(wait_gone(&program, GONE_WITHIN), Vec::<u32>::new());
    assert_eq!(sshd.wait_sessions_gone(GONE_WITHIN), Vec::<u32>::new());
}

#[test]
fn a_server_no_client_came_to_is_ended_by_hanging_up() {
    let Some((sshd, ssh, program)) = setup("iperf3-hang-up") else {
        return;
    };
    let server = Iperf3Server::start(&ssh, &spec(&sshd, &program, vec![free_port()]))
        .unwrap_or_else(|e| panic!("{e}\nsshd: {}", sshd.log()));
    assert!(!linerate_testkit::sshd::pids_with(&program).is_empty());
    server.stop();
    // Gone within less than its idle time-out (30 s) and deadline: by the hang-up.
    assert_eq!(wait_gone(&program, GONE_WITHIN), Vec::<u32>::new());
    assert_eq!(sshd.wait_sessions_gone(GONE_WITHIN), Vec::<u32>::new());
}

#[test]
fn a_port_in_use_is_passed_over() {
    let Some((sshd, ssh, program)) = setup("iperf3-port-in-use") else {
        return;
    };
    // iperf3 listens on every address: a listener on all of them takes the port.
    let busy = TcpListener::bind("[::]:0").expect("a listener on ::");
    let taken = busy.local_addr().expect("its address").port();
    let free = free_port();
    let server = Iperf3Server::start(&ssh, &spec(&sshd, &program, vec![taken, free]))
        .unwrap_or_else(|e| panic!("{e}\nsshd: {}", sshd.log()));
    assert_eq!(server.port(), free);
    server.stop();
    // Only ports in use: said, with the ports tried.
    let e = Iperf3Server::start(&ssh, &spec(&sshd, &program, vec![taken])).unwrap_err();
    assert!(matches!(e, SshError::PortsInUse { .. }), "{e}");
    assert!(e.to_string().contains(&taken.to_string()), "{e}");
    assert_eq!(wait_gone(&program, GONE_WITHIN), Vec::<u32>::new());
}

#[test]
fn iperf3_missing_on_the_far_end_is_said_with_how_to_install_it() {
    let Some((sshd, ssh, _)) = setup("iperf3-missing") else {
        return;
    };
    let missing = sshd.dir().join("no-such-iperf3");
    let e = Iperf3Server::start(
        &ssh,
        &spec(&sshd, missing.to_str().expect("UTF-8"), Vec::new()),
    )
    .unwrap_err();
    assert!(matches!(e, SshError::NotFound { .. }), "{e}");
    assert!(e.to_string().contains("apt install iperf3"), "{e}");
}
