//! The connection-rate test (`tcp_crr`) end to end on loopback, with the server in-process, and
//! a client against a server that does not know the kind.

use std::net::{SocketAddr, TcpListener};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use linerate_bench::{assemble, run_client, ClientConfig, ClientError, ServerConfig};
use linerate_proto::{
    read_msg, write_msg, Direction, Limits, Msg, TestKind, TestParams, MAX_RESULTS_FRAME,
    PROTOCOL_VERSION,
};

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time: they share this machine's cores.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn start_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let cfg = ServerConfig {
        bind: addr,
        limits: Limits {
            max_duration_ms: 10_000,
            ..Limits::default()
        },
        handshake_timeout: Duration::from_secs(5),
        log: false,
        ..ServerConfig::default()
    };
    thread::spawn(move || linerate_bench::serve_on(&l, cfg));
    addr
}

fn crr(streams: u32, omit_ms: u64) -> TestParams {
    TestParams {
        streams,
        duration_ms: 1500,
        omit_ms,
        interval_ms: 500,
        ..TestParams::new(TestKind::TcpCrr, Direction::Send)
    }
}

/// Run a client in a thread, bounded in time.
fn bench(cfg: ClientConfig) -> Result<linerate_bench::ClientRun, ClientError> {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(run_client(&cfg, &mut |_| {}));
    });
    rx.recv_timeout(Duration::from_secs(40))
        .expect("the client ends within 40 s")
}

#[test]
fn connections_are_counted_timed_and_reported_by_both_ends() {
    let _g = serial();
    let addr = start_server();
    let run = bench(ClientConfig {
        bind: Some([127, 0, 0, 1].into()),
        ..ClientConfig::new(addr, crr(2, 0))
    })
    .expect("the test runs");
    assert!(run.error.is_none(), "{:?}", run.error);
    let remote = run.remote.as_ref().expect("the server's results");
    assert!(remote.error.is_none(), "{:?}", remote.error);
    assert!(
        remote.cpu.percent > 0.0,
        "the server's threads did the work"
    );
    let l = run.local.latency.expect("latency statistics");
    assert!(l.transactions > 0);
    assert!(l.p50 > 0.0 && l.p50 <= l.p99 && l.p99 <= l.max, "{l:?}");
    // The intervals count the same connections as the statistics (no warm-up here): the
    // sampler may miss the last few of a loop that ends after its last sample.
    let counted: u64 = run
        .local
        .intervals
        .iter()
        .flat_map(|i| i.bytes.iter())
        .sum();
    assert!(counted <= l.transactions, "{counted} > {}", l.transactions);
    assert!(
        counted * 10 >= l.transactions * 9,
        "{counted} of {} in the intervals",
        l.transactions
    );
    assert!(run.local.intervals.iter().all(|i| i.bytes.len() == 2));
    let t = assemble(&run);
    assert_eq!(t.kind, "tcp_crr");
    assert!(t.transactions_per_s.unwrap() > 0.0);
    assert!(t.latency_histogram.is_some());
    assert!(
        t.latency_mode.is_none(),
        "no busy-poll in a connection test"
    );
    assert!(t.lost_transactions.is_none());
}

#[test]
fn the_warm_up_is_left_out_of_the_statistics_not_the_intervals() {
    let _g = serial();
    let addr = start_server();
    let run = bench(ClientConfig::new(addr, crr(1, 500))).expect("the test runs");
    assert!(run.error.is_none(), "{:?}", run.error);
    let l = run.local.latency.expect("latency statistics");
    let counted: u64 = run
        .local
        .intervals
        .iter()
        .flat_map(|i| i.bytes.iter())
        .sum();
    let warm: u64 = run
        .local
        .intervals
        .iter()
        .filter(|i| i.omitted)
        .flat_map(|i| i.bytes.iter())
        .sum();
    assert!(warm > 0, "no interval in the warm-up");
    assert!(l.transactions < counted, "{} of {counted}", l.transactions);
}

/// A server of another version that cannot read the request closes without an answer: the
/// client says what that likely means instead of "connection closed".
#[test]
fn a_server_that_does_not_know_the_kind_is_named() {
    let _g = serial();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let Msg::Hello { nonce, .. } = read_msg(&mut s, MAX_RESULTS_FRAME).unwrap() else {
            panic!("expected hello")
        };
        write_msg(
            &mut s,
            &Msg::ServerHello {
                protocol: PROTOCOL_VERSION,
                version: "0.0.1".into(),
                auth: false,
                nonce,
            },
        )
        .unwrap();
        // An older server fails to decode the request and drops the connection.
        let _ = linerate_proto::read_frame(&mut s, MAX_RESULTS_FRAME);
    });
    let t0 = Instant::now();
    let e = bench(ClientConfig::new(addr, crr(1, 0))).expect_err("no test");
    server.join().unwrap();
    let msg = e.to_string();
    assert!(msg.contains("linerate 0.0.1 there"), "{msg}");
    assert!(msg.contains("tcp_crr"), "{msg}");
    assert!(t0.elapsed() < Duration::from_secs(20));
}
