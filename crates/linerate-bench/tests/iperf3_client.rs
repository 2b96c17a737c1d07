//! `linerate bench --iperf3` against broken, hostile and old iperf3 servers: fake servers on
//! 127.0.0.1 that speak iperf3 up to a point and then misbehave (refuse, fall silent, close,
//! send garbage, oversized or wrong results, refuse a stream as a server before 3.7 does). Every
//! case ends with a clear error (the server's refusal in linerate's words, or what went wrong
//! and where), never a hang; what was measured is kept; and the fake server sees this end say
//! CLIENT_TERMINATE or close, so a stock server is never left waiting.
//!
//! Every socket read has a timeout and every client run is bounded (a thread and a deadline),
//! so a regression fails a test instead of hanging the suite. The real iperf3 servers are in
//! `crates/linerate-cli/tests/netns_iperf3.rs`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{mpsc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use linerate_bench::client::Iperf3Options;
use linerate_bench::{run_client, ClientConfig, ClientError, ClientRun, WireProtocol};
use linerate_iperf3::{ErrorCode, Iperf3Refusal, Results, ServerError, State, StreamResults};
use linerate_proto::{Direction, RefusalKind, TestKind, TestParams};

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time: the tests that wait for a client's time-outs run their cases in
/// parallel threads themselves.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Longer than any bound of the client (its answers 10 s, the end of a test 20 s): a client
/// still running then has hung.
const CLIENT_LIMIT: Duration = Duration::from_secs(60);
/// A fake server's reads: it waits for the client at most this long.
const FAKE_READ: Duration = Duration::from_secs(40);

fn params(kind: TestKind, direction: Direction, duration_ms: u64) -> TestParams {
    let mut p = TestParams::new(kind, direction);
    p.duration_ms = duration_ms;
    p.length = if kind == TestKind::UdpBw {
        1200
    } else {
        64 * 1024
    };
    // Paced: little CPU on a busy machine.
    p.bitrate_bps = 200_000_000;
    p
}

fn config(addr: SocketAddr, p: TestParams) -> ClientConfig {
    ClientConfig {
        protocol: WireProtocol::Iperf3(Iperf3Options::default()),
        ..ClientConfig::new(addr, p)
    }
}

type Outcome = Result<ClientRun, ClientError>;

/// Run the client on its own thread, within [`CLIENT_LIMIT`].
fn bench(cfg: ClientConfig) -> (Outcome, Duration) {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let t0 = Instant::now();
        let r = run_client(&cfg, &mut |_| {});
        let _ = tx.send((r, t0.elapsed()));
    });
    rx.recv_timeout(CLIENT_LIMIT)
        .unwrap_or_else(|_| panic!("bench --iperf3 hung past {CLIENT_LIMIT:?}"))
}

/// A fake server on 127.0.0.1: `script` gets its listener (TCP) and, on the same port, a UDP
/// socket; what it returns is handed back by the join handle.
fn fake<T: Send + 'static>(
    script: impl FnOnce(TcpListener, UdpSocket) -> T + Send + 'static,
) -> (SocketAddr, thread::JoinHandle<T>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = l.local_addr().expect("its address");
    let u = UdpSocket::bind(addr).expect("the same port over UDP");
    u.set_read_timeout(Some(FAKE_READ)).expect("a UDP timeout");
    (addr, thread::spawn(move || script(l, u)))
}

fn accept(l: &TcpListener) -> TcpStream {
    let (s, _) = l.accept().expect("a connection");
    s.set_read_timeout(Some(FAKE_READ)).expect("a read timeout");
    s.set_write_timeout(Some(FAKE_READ))
        .expect("a write timeout");
    s
}

fn read_exact(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b).expect("the client's bytes");
    b
}

/// The cookie of a new connection.
fn cookie(s: &mut TcpStream) -> Vec<u8> {
    read_exact(s, 37)
}

/// A length-prefixed JSON message.
fn frame(s: &mut TcpStream) -> Vec<u8> {
    let len = u32::from_be_bytes(read_exact(s, 4).try_into().expect("4 bytes"));
    assert!(len < 1 << 20, "a frame of {len} bytes");
    read_exact(s, len as usize)
}

fn send(s: &mut TcpStream, bytes: &[u8]) {
    s.write_all(bytes).expect("writing to the client");
}

fn state(s: &mut TcpStream, st: State) {
    send(s, &[st.to_byte()]);
}

/// What the client sends until it closes (bounded by [`FAKE_READ`]).
fn rest(s: &mut TcpStream) -> Vec<u8> {
    let mut v = Vec::new();
    let _ = s.read_to_end(&mut v);
    v
}

/// The cookie, PARAM_EXCHANGE, the parameters (returned) and CREATE_STREAMS.
fn handshake(ctl: &mut TcpStream) -> serde_json::Value {
    cookie(ctl);
    state(ctl, State::ParamExchange);
    let p = serde_json::from_slice(&frame(ctl)).expect("the parameters are JSON");
    state(ctl, State::CreateStreams);
    p
}

/// Read a data connection until the client closes it, on a thread of its own.
fn drain(mut data: TcpStream) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        while let Ok(k) = data.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        n
    })
}

/// A TCP test up to TEST_RUNNING with one stream the fake drains.
fn running(l: &TcpListener) -> (TcpStream, thread::JoinHandle<u64>) {
    let mut ctl = accept(l);
    handshake(&mut ctl);
    let mut data = accept(l);
    cookie(&mut data);
    state(&mut ctl, State::TestStart);
    state(&mut ctl, State::TestRunning);
    (ctl, drain(data))
}

fn server_results(streams: Vec<StreamResults>) -> Vec<u8> {
    Results {
        cpu_util_total: 5.0,
        cpu_util_user: 1.0,
        cpu_util_system: 4.0,
        sender_has_retransmits: linerate_iperf3::SenderRetransmits::Receiver,
        congestion_used: None,
        server_output_json: None,
        server_output_text: None,
        streams,
        unknown: serde_json::Map::new(),
    }
    .encode(1 << 20)
    .expect("results encode")
}

fn stream_of(id: u32, bytes: u64) -> StreamResults {
    StreamResults {
        id: linerate_iperf3::StreamId(id),
        bytes,
        retransmits: -1,
        jitter: 0.0,
        errors: 0,
        omitted: None,
        packets: 0,
        start_time: Some(0.0),
        end_time: Some(1.0),
    }
}

const TERMINATE: u8 = 12;

#[test]
fn a_busy_server_is_said_in_plain_words() {
    let _s = serial();
    let (addr, h) = fake(|l, _| {
        let mut ctl = accept(&l);
        state(&mut ctl, State::AccessDenied);
    });
    let (r, _) = bench(config(addr, params(TestKind::TcpBw, Direction::Send, 1000)));
    h.join().expect("the fake server");
    let e = r.expect_err("busy");
    assert_eq!(
        e.to_string(),
        format!("the iperf3 server at {addr} is running another test; try again")
    );
    assert_eq!(e.refusal_kind(), Some(RefusalKind::Busy));
}

#[test]
fn a_server_error_is_translated_and_the_server_is_not_left_waiting() {
    let _s = serial();
    let (addr, h) = fake(|l, _| {
        let mut ctl = accept(&l);
        cookie(&mut ctl);
        state(&mut ctl, State::ParamExchange);
        let p = frame(&mut ctl);
        send(
            &mut ctl,
            &ServerError {
                code: ErrorCode::IETOTALRATE,
                errno: 0,
            }
            .to_bytes(),
        );
        (p, rest(&mut ctl))
    });
    let (r, _) = bench(config(addr, params(TestKind::TcpBw, Direction::Send, 1000)));
    let (p, rest) = h.join().expect("the fake server");
    let p: serde_json::Value = serde_json::from_slice(&p).expect("JSON parameters");
    assert_eq!(p["tcp"], true, "{p}");
    assert_eq!(p["get_server_output"], 1, "{p}");
    let e = r.expect_err("refused");
    assert!(
        matches!(
            &e,
            ClientError::Iperf3 {
                refusal: Iperf3Refusal::ServerError(_),
                ..
            }
        ),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(
        m.contains("total bitrate") && m.contains("IETOTALRATE"),
        "{m}"
    );
    assert_eq!(e.refusal_kind(), Some(RefusalKind::OverLimit));
    // The conversation ended with the server's error: nothing more was sent, then the close.
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn a_linerate_serve_without_iperf3_is_named() {
    let _s = serial();
    let (addr, h) = fake(|l, _| {
        let mut ctl = accept(&l);
        cookie(&mut ctl);
        send(
            &mut ctl,
            &ServerError {
                code: ErrorCode::IEMESSAGE,
                errno: 0,
            }
            .to_bytes(),
        );
    });
    let (r, _) = bench(config(addr, params(TestKind::TcpBw, Direction::Send, 1000)));
    h.join().expect("the fake server");
    let m = r.expect_err("refused").to_string();
    assert!(
        m.contains("`linerate serve` that does not speak iperf3"),
        "{m}"
    );
    assert!(m.contains("drop --iperf3"), "{m}");
}

#[test]
fn a_close_after_create_streams_names_the_bitrate_limit() {
    let _s = serial();
    let (addr, h) = fake(|l, _| {
        let mut ctl = accept(&l);
        handshake(&mut ctl);
        let mut data = accept(&l);
        cookie(&mut data);
        // iperf3 3.9 to 3.20 over their --server-bitrate-limit: closed, without a word.
    });
    let (r, _) = bench(config(addr, params(TestKind::TcpBw, Direction::Send, 1000)));
    h.join().expect("the fake server");
    let m = r.expect_err("closed").to_string();
    assert!(m.contains("--server-bitrate-limit"), "{m}");
}

#[test]
fn a_server_error_mid_test_ends_it_at_once_and_keeps_the_figures() {
    let _s = serial();
    let (addr, h) = fake(|l, _| {
        let (mut ctl, data) = running(&l);
        thread::sleep(Duration::from_millis(700));
        send(
            &mut ctl,
            &ServerError {
                code: ErrorCode(160),
                errno: 0,
            }
            .to_bytes(),
        );
        drop(ctl);
        data.join().expect("the drain")
    });
    let (r, took) = bench(config(
        addr,
        params(TestKind::TcpBw, Direction::Send, 20_000),
    ));
    let moved = h.join().expect("the fake server");
    let run = r.expect("the figures up to the error");
    let e = run.error.clone().expect("the error");
    assert!(e.contains(&format!("the iperf3 server at {addr}")), "{e}");
    let sent: u64 = run.local.streams.iter().map(|s| s.bytes_sent).sum();
    assert!(sent > 0 && moved > 0, "{sent} sent, {moved} received");
    // Ended by the error, not by the test's 20 s.
    assert!(took < Duration::from_secs(15), "{took:?}");
    let t = linerate_bench::assemble(&run);
    assert!(t.error.is_some() && t.iperf3.is_some());
}

/// Results that are not iperf3's: garbage, a frame far over the limit, and streams the test
/// does not have.
#[test]
fn bad_results_are_refused_and_the_measurement_kept() {
    let _s = serial();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "garbage",
            {
                let mut v = 9u32.to_be_bytes().to_vec();
                v.extend_from_slice(b"not json!");
                v
            },
            "the results",
        ),
        ("oversized", u32::MAX.to_be_bytes().to_vec(), "the results"),
        (
            "a stranger's stream",
            {
                let mut v = server_results(vec![stream_of(1, 10), stream_of(7, 10)]);
                v.push(State::DisplayResults.to_byte());
                v
            },
            "stream(s) 7 the test does not have",
        ),
    ];
    for (what, answer, expect) in cases {
        let (addr, h) = fake(move |l, _| {
            let (mut ctl, data) = running(&l);
            assert_eq!(read_exact(&mut ctl, 1), [State::TestEnd.to_byte()]);
            state(&mut ctl, State::ExchangeResults);
            let theirs = frame(&mut ctl);
            send(&mut ctl, &answer);
            let _ = data.join();
            (theirs, rest(&mut ctl))
        });
        let (r, _) = bench(config(addr, params(TestKind::TcpBw, Direction::Send, 1000)));
        let (theirs, rest) = h.join().expect("the fake server");
        let run = r.unwrap_or_else(|e| panic!("{what}: {e}"));
        let e = run.error.clone().unwrap_or_default();
        assert!(e.contains(expect), "{what}: {e}");
        assert!(run.local.streams[0].bytes_sent > 0, "{what}");
        let ours = Results::decode(&theirs).expect("the client's results are iperf3's");
        assert_eq!(ours.streams.len(), 1, "{what}");
        assert_eq!(ours.streams[0].id.0, 1, "{what}");
        // A conversation cut short ends with CLIENT_TERMINATE; one that ran its course with
        // IPERF_DONE.
        let last = rest.last().copied();
        assert!(
            last == Some(TERMINATE) || last == Some(State::IperfDone.to_byte()),
            "{what}: {rest:?}"
        );
    }
}

/// The cases that wait out a bound of the client, side by side: a server silent after the
/// cookie, one that never starts the test, one that never asks for the results, one that
/// never answers a UDP stream's handshake. Each ends with its error within its bound, and each
/// server that heard the test's parameters hears CLIENT_TERMINATE.
#[test]
fn silent_servers_cost_a_bounded_wait() {
    let _s = serial();
    let silent = fake(|l, _| {
        let mut ctl = accept(&l);
        cookie(&mut ctl);
        rest(&mut ctl)
    });
    let no_start = fake(|l, _| {
        let mut ctl = accept(&l);
        handshake(&mut ctl);
        let mut data = accept(&l);
        cookie(&mut data);
        rest(&mut ctl)
    });
    let no_results = fake(|l, _| {
        let (mut ctl, data) = running(&l);
        let r = rest(&mut ctl);
        let _ = data.join();
        r
    });
    let no_udp_reply = fake(|l, u| {
        let mut ctl = accept(&l);
        handshake(&mut ctl);
        let mut b = [0u8; 64];
        let n = u.recv_from(&mut b).map_or(0, |(n, _)| n);
        assert_eq!(&b[..n], b"9876", "the UDP stream's connect");
        rest(&mut ctl)
    });
    let cases = [
        (silent.0, TestKind::TcpBw, "no answer"),
        (no_start.0, TestKind::TcpBw, "TEST_START"),
        (no_results.0, TestKind::TcpBw, "EXCHANGE_RESULTS"),
        (no_udp_reply.0, TestKind::UdpBw, "UDP handshake"),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|(addr, kind, _)| {
            let cfg = config(*addr, params(*kind, Direction::Send, 1000));
            thread::spawn(move || bench(cfg))
        })
        .collect();
    for ((_, _, expect), h) in cases.iter().zip(runs) {
        let (r, _) = h.join().expect("a client thread");
        let m = match r {
            Err(e) => e.to_string(),
            Ok(run) => run.error.unwrap_or_default(),
        };
        assert!(m.contains(expect), "{expect}: {m}");
    }
    assert!(
        silent.1.join().expect("fake").is_empty(),
        "no parameters sent"
    );
    for (what, h) in [
        ("no start", no_start.1),
        ("no results", no_results.1),
        ("no UDP reply", no_udp_reply.1),
    ] {
        let rest = h.join().expect("fake");
        assert_eq!(rest.last(), Some(&TERMINATE), "{what}: {rest:?}");
    }
}

/// `--bidir` against a server before 3.7: it takes the first stream as the whole test and
/// refuses the second with ACCESS_DENIED and a close; the client says so before the test.
#[test]
fn a_stream_refused_as_an_old_server_does_is_said_before_the_test() {
    let _s = serial();
    let (addr, h) = fake(|l, _| {
        let mut ctl = accept(&l);
        let p = handshake(&mut ctl);
        let mut first = accept(&l);
        cookie(&mut first);
        state(&mut ctl, State::TestStart);
        state(&mut ctl, State::TestRunning);
        let second = accept(&l);
        // 3.1.3: ACCESS_DENIED and a close, the cookie unread.
        (&second)
            .write_all(&[State::AccessDenied.to_byte()])
            .expect("0xff");
        drop(second);
        let d = drain(first);
        let r = rest(&mut ctl);
        let _ = d.join();
        (p, r)
    });
    let (r, took) = bench(config(
        addr,
        params(TestKind::TcpBw, Direction::Bidir, 10_000),
    ));
    let (p, rest) = h.join().expect("the fake server");
    assert_eq!(p["bidirectional"], true, "{p}");
    let e = r.expect_err("refused");
    assert!(
        matches!(
            &e,
            ClientError::Iperf3 {
                refusal: Iperf3Refusal::StreamRefused,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("older than iperf3 3.7"), "{e}");
    assert_eq!(rest, [TERMINATE], "CLIENT_TERMINATE, then the close");
    assert!(
        took < Duration::from_secs(8),
        "before the test's 10 s: {took:?}"
    );
}
