//! What a latency test reports about how its ends waited (busy-poll or block), the server's
//! `--max-spin` cap on a client's request, and a TCP test whose receiver discards (MSG_TRUNC).
//! In-process servers on 127.0.0.1; every run is short and bounded.

use std::net::{SocketAddr, TcpListener};
use std::thread;

use linerate_bench::{assemble, run_client, ClientConfig, ClientRun, ServerConfig};
use linerate_proto::{Direction, Limits, TestKind, TestParams};

/// A server on an ephemeral port of 127.0.0.1 granting at most `max_spin_us`.
fn server(max_spin_us: u32) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    let addr = l.local_addr().expect("listener address");
    let cfg = ServerConfig {
        bind: addr,
        limits: Limits {
            max_spin_us,
            ..Limits::default()
        },
        log: false,
        ..ServerConfig::default()
    };
    thread::Builder::new()
        .name("test-server".into())
        .spawn(move || linerate_bench::serve_on(&l, cfg))
        .expect("spawning the server");
    addr
}

fn run(addr: SocketAddr, params: TestParams) -> ClientRun {
    let run = run_client(&ClientConfig::new(addr, params), &mut |_| {})
        .unwrap_or_else(|e| panic!("the client failed: {e}"));
    assert!(run.error.is_none(), "error {:?}", run.error);
    run
}

fn latency(spin_us: u32) -> TestParams {
    TestParams {
        duration_ms: 300,
        interval_ms: 0,
        spin_us: Some(spin_us),
        ..TestParams::new(TestKind::TcpLat, Direction::Send)
    }
}

#[test]
fn a_spin_over_the_servers_limit_is_capped_and_said() {
    let addr = server(50);
    let t = assemble(&run(addr, latency(5000)));
    let m = t
        .latency_mode
        .clone()
        .expect("a latency test says how it waited");
    assert_eq!(m.client_spin_us, 5000);
    assert_eq!(
        m.server_spin_us,
        Some(50),
        "the server polls at most --max-spin"
    );
    assert_eq!(m.mode, "busy_polled");
    assert!(
        m.reason.contains("granted 50 µs of the 5000 µs"),
        "{}",
        m.reason
    );
    assert!(t.latency_us.is_some_and(|l| l.p50 > 0.0));
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["latency_mode"]["mode"], "busy_polled");
    assert_eq!(json["latency_mode"]["server_spin_us"], 50);
}

#[test]
fn a_spin_within_the_limit_is_granted_and_no_spin_blocks() {
    let addr = server(100);
    let m = assemble(&run(addr, latency(100))).latency_mode.unwrap();
    assert_eq!((m.mode, m.server_spin_us), ("busy_polled", Some(100)));
    assert!(!m.reason.contains("granted"), "{}", m.reason);
    let b = assemble(&run(addr, latency(0))).latency_mode.unwrap();
    assert_eq!(
        (b.mode, b.client_spin_us, b.server_spin_us),
        ("blocking", 0, Some(0))
    );
    assert!(b.reason.contains("default"), "{}", b.reason);
}

#[test]
fn a_server_that_never_polls_leaves_the_client_polling_alone() {
    let addr = server(0);
    let m = assemble(&run(addr, latency(200))).latency_mode.unwrap();
    assert_eq!((m.mode, m.server_spin_us), ("client_polled", Some(0)));
    assert!(m.reason.contains("so it blocked"), "{}", m.reason);
}

#[test]
fn a_discarding_receiver_counts_every_byte_the_sender_sent() {
    let addr = server(0);
    for direction in [Direction::Send, Direction::Receive] {
        let params = TestParams {
            duration_ms: 400,
            interval_ms: 0,
            length: 128 * 1024,
            // Paced, so it costs little CPU on a busy machine.
            bitrate_bps: 400_000_000,
            discard: true,
            ..TestParams::new(TestKind::TcpBw, direction)
        };
        let r = run(addr, params);
        let remote = r.remote.as_ref().expect("the server's results");
        let (sender, receiver) = match direction {
            Direction::Send => (&r.local, remote),
            _ => (remote, &r.local),
        };
        let sent: u64 = sender.streams.iter().map(|s| s.total_bytes).sum();
        let got: u64 = receiver.streams.iter().map(|s| s.total_bytes).sum();
        assert!(sent > 0, "{direction:?}: nothing sent");
        assert_eq!(got, sent, "{direction:?}: the discarding receiver's count");
        assert!(assemble(&r).params.discard);
    }
}
