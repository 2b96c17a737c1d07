//! Reliability of `linerate serve` and `linerate bench` against hostile or broken peers.
//!
//! Every server runs in-process on 127.0.0.1 with a short handshake timeout and small limits.
//! Every socket read has a timeout and every client run is bounded, so a regression fails a test
//! instead of hanging the suite. The tests take a process-wide lock so that their timings do not
//! depend on each other (the machine may be small and busy); the whole file runs in about half a
//! minute.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use linerate_bench::{
    assemble, run_client, ClientConfig, ClientError, ClientRun, Event, ServerConfig,
};
use linerate_proto::{
    read_msg, write_msg, Direction, Limits, Msg, Psk, RefusalKind, TestKind, TestParams, MAGIC,
    MAX_CONTROL_FRAME, PROTOCOL_VERSION,
};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time: timings stay meaningful on a 2-core machine shared with a build.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

const HANDSHAKE: Duration = Duration::from_secs(1);
const PSK: &[u8] = b"reliability-test-key-0123456789";

fn server_config() -> ServerConfig {
    ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        iperf3_port: None,
        limits: Limits {
            max_tests: 4,
            max_streams: 4,
            max_duration_ms: 10_000,
            max_udp_bitrate_bps: 0,
            max_length: 1024 * 1024,
            max_window: 4 * 1024 * 1024,
            max_file_bytes: 0,
            max_spin_us: 50,
            max_soak_duration_ms: 10_000,
        },
        psk: None,
        handshake_timeout: HANDSHAKE,
        max_pending: 16,
        max_memory_bytes: 256 * 1024 * 1024,
        max_served: None,
        inventory: None,
        // Quiet: the test harness cannot capture the server's log lines.
        log: false,
        write_dir: None,
        soak: None,
        shutdown: None,
        exit_after: None,
    }
}

/// Start a server on an ephemeral port of 127.0.0.1; it runs until the process ends.
fn start_server(cfg: ServerConfig) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
    let addr = l.local_addr().expect("listener address");
    thread::Builder::new()
        .name("test-server".into())
        .spawn(move || linerate_bench::serve_on(&l, cfg))
        .expect("spawning the server");
    addr
}

/// A paced TCP test (400 Mbit/s per stream), so it costs little CPU on a busy machine.
fn tcp_params(duration_ms: u64) -> TestParams {
    TestParams {
        duration_ms,
        interval_ms: 200,
        length: 128 * 1024,
        bitrate_bps: 400_000_000,
        ..TestParams::new(TestKind::TcpBw, Direction::Send)
    }
}

type BenchResult = Result<ClientRun, ClientError>;

/// Run a client in its own thread; `started` is told when the test is accepted and starts.
fn spawn_bench(
    cfg: ClientConfig,
    started: Option<mpsc::Sender<()>>,
) -> mpsc::Receiver<BenchResult> {
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name("bench-client".into())
        .spawn(move || {
            let r = run_client(&cfg, &mut |e| {
                if let (Event::Started { .. }, Some(s)) = (&e, &started) {
                    let _ = s.send(());
                }
            });
            let _ = tx.send(r);
        })
        .expect("spawning a client");
    rx
}

fn wait_bench(rx: &mpsc::Receiver<BenchResult>, limit: Duration) -> BenchResult {
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the client did not finish within {limit:?}"))
}

/// Run a client to completion, bounded in time.
fn bench(cfg: ClientConfig, limit: Duration) -> BenchResult {
    wait_bench(&spawn_bench(cfg, None), limit)
}

/// A complete, error-free test with a positive rate.
fn assert_good_run(r: BenchResult, what: &str) {
    let run = r.unwrap_or_else(|e| panic!("{what}: the client failed: {e}"));
    assert!(run.error.is_none(), "{what}: error {:?}", run.error);
    assert!(run.remote.is_some(), "{what}: no results from the server");
    let t = assemble(&run);
    assert!(t.bytes > 0, "{what}: no bytes moved");
    assert!(t.gbps > 0.0, "{what}: rate {} Gb/s", t.gbps);
    assert!(t.error.is_none(), "{what}: assembled error {:?}", t.error);
}

/// Run a test, retrying while the server is busy or still shedding load, until `within` passes.
/// Returns the successful run and how long it took to be accepted.
fn bench_until_accepted(
    addr: SocketAddr,
    params: &TestParams,
    within: Duration,
) -> (BenchResult, Duration) {
    let t0 = Instant::now();
    loop {
        let limit = Duration::from_millis(params.duration_ms) + Duration::from_secs(15);
        let (tx, rx) = mpsc::channel();
        let result = wait_bench(
            &spawn_bench(ClientConfig::new(addr, params.clone()), Some(tx)),
            limit,
        );
        let accepted = rx.try_recv().is_ok();
        let retry = match &result {
            Err(ClientError::Refused { reason, .. }) => reason.contains("busy"),
            // A connection shed by max_pending: closed before any answer.
            Err(ClientError::Protocol(_) | ClientError::Connect { .. }) => true,
            _ => false,
        };
        if accepted || !retry || t0.elapsed() >= within {
            return (result, t0.elapsed());
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// A raw TCP connection with timeouts on every read and write.
fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(3)).expect("connecting");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn hello() -> Msg {
    Msg::Hello {
        magic: MAGIC.into(),
        protocol: PROTOCOL_VERSION,
        version: "reliability-test".into(),
        nonce: "ab".repeat(16),
    }
}

/// Read one message, bounded by the socket's read timeout.
fn recv(s: &mut TcpStream) -> Msg {
    read_msg(s, linerate_proto::MAX_RESULTS_FRAME).expect("reading a message from the peer")
}

/// Wait until the peer closes (read returns 0 or an error other than a timeout), discarding
/// anything it sends first. Returns how long that took, or `None` if still open at `within`.
fn wait_closed(mut s: &TcpStream, within: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let left = within.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return None;
        }
        s.set_read_timeout(Some(left.max(Duration::from_millis(10))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some(t0.elapsed()),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(t0.elapsed()),
        }
    }
}

/// Has the peer closed? Looks for at most `wait`.
fn is_closed(s: &TcpStream, wait: Duration) -> bool {
    wait_closed(s, wait).is_some()
}

/// Hello, ServerHello, Request: the server's answer to the request.
fn request_raw(addr: SocketAddr, params: &TestParams) -> (TcpStream, Msg) {
    let mut s = raw(addr);
    write_msg(&mut s, &hello()).unwrap();
    match recv(&mut s) {
        Msg::ServerHello { auth: false, .. } => {}
        other => panic!("expected server_hello without auth, got {other:?}"),
    }
    write_msg(
        &mut s,
        &Msg::Request {
            params: params.clone(),
        },
    )
    .unwrap();
    let answer = recv(&mut s);
    (s, answer)
}

fn refusal(addr: SocketAddr, params: &TestParams) -> String {
    let (s, answer) = request_raw(addr, params);
    let Msg::Refused { reason, .. } = answer else {
        panic!("expected refused for {params:?}, got {answer:?}");
    };
    assert!(
        is_closed(&s, Duration::from_secs(3)),
        "the server keeps a refused control connection open"
    );
    reason
}

/// Raw-protocol test start: returns (control, data connection) after Start.
fn start_raw_test(addr: SocketAddr, params: &TestParams) -> (TcpStream, TcpStream) {
    let (mut ctl, answer) = request_raw(addr, params);
    let Msg::Accepted { cookie, .. } = answer else {
        panic!("expected accepted, got {answer:?}");
    };
    let mut data = raw(addr);
    write_msg(&mut data, &Msg::DataHello { cookie, stream: 0 }).unwrap();
    write_msg(&mut ctl, &Msg::Start).unwrap();
    (ctl, data)
}

/// Wait for one Interval from the server: proof that its side of the test is running.
fn expect_interval(ctl: &mut TcpStream) {
    ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    match recv(ctl) {
        Msg::Interval { sample } => assert!(sample.end_s > 0.0),
        other => panic!("expected an interval from the running test, got {other:?}"),
    }
}

/// Push data on `data` for `d` (client → server test).
fn send_for(data: &mut TcpStream, d: Duration) -> u64 {
    let buf = vec![0x5au8; 64 * 1024];
    let t0 = Instant::now();
    let mut sent = 0;
    while t0.elapsed() < d {
        match data.write(&buf) {
            Ok(n) => sent += n as u64,
            Err(e) => panic!("sending test data: {e}"),
        }
        thread::sleep(Duration::from_millis(2));
    }
    sent
}

/// Take data from `data` for `d` (server → client test).
fn receive_for(data: &mut TcpStream, d: Duration) -> u64 {
    let mut buf = vec![0u8; 256 * 1024];
    let t0 = Instant::now();
    let mut got = 0;
    data.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while t0.elapsed() < d {
        match data.read(&mut buf) {
            Ok(0) => panic!("the server closed the data connection early"),
            Ok(n) => got += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("receiving test data: {e}"),
        }
    }
    got
}

fn thread_count() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .expect("reading /proc/self/status")
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .expect("a Threads: line")
        .trim()
        .parse()
        .expect("a thread count")
}

// ---------------------------------------------------------------------------------------------
// Silent clients and malformed first frames
// ---------------------------------------------------------------------------------------------

#[test]
fn silent_client_is_dropped_while_another_test_runs() {
    let _g = serial();
    let addr = start_server(server_config());
    let silent = raw(addr);
    let t0 = Instant::now();
    let rx = spawn_bench(ClientConfig::new(addr, tcp_params(2000)), None);

    let closed = wait_closed(&silent, Duration::from_secs(8))
        .expect("a silent connection must be dropped after the handshake timeout");
    assert!(
        closed >= HANDSHAKE.mul_f64(0.9),
        "dropped after {closed:?}, before the {HANDSHAKE:?} handshake timeout"
    );
    assert!(
        closed < HANDSHAKE * 5,
        "dropped only after {closed:?} (timeout {HANDSHAKE:?})"
    );
    let run = wait_bench(&rx, Duration::from_secs(20));
    assert!(
        t0.elapsed() >= closed,
        "the real test ran alongside the silent connection"
    );
    assert_good_run(run, "a test next to a silent connection");
}

/// A control frame: a big-endian u32 length, then `body`.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// First frames the server must drop without an answer: not linerate, oversized, not JSON,
/// not a message, or a hello it cannot accept.
fn silent_drop_frames() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("HTTP request", b"GET / HTTP/1.1\r\n\r\n".to_vec()),
        ("length 0xFFFFFFFF", {
            let mut v = vec![0xff, 0xff, 0xff, 0xff];
            v.extend_from_slice(b"{}");
            v
        }),
        ("length just over the limit", (MAX_CONTROL_FRAME + 1).to_be_bytes().to_vec()),
        ("invalid JSON in a valid frame", frame(b"{\"type\":\"hello\", nope")),
        ("binary junk in a valid frame", frame(&[0xff, 0xfe, 0x00, 0x01])),
        ("JSON that is not a message", frame(b"[1,2,3]")),
        (
            "hello with an unknown field",
            frame(
                br#"{"type":"hello","magic":"linerate","protocol":1,"version":"x","nonce":"00","evil":1}"#,
            ),
        ),
        (
            "hello with a 10 kB nonce",
            frame(
                serde_json::to_string(&Msg::Hello {
                    magic: MAGIC.into(),
                    protocol: PROTOCOL_VERSION,
                    version: "x".into(),
                    nonce: "a".repeat(10_000),
                })
                .unwrap()
                .as_bytes(),
            ),
        ),
        ("empty frame", frame(b"")),
    ]
}

#[test]
fn malformed_first_frames_are_dropped_and_the_server_keeps_serving() {
    let _g = serial();
    // A long handshake timeout: every close below must come from the error, not the timer.
    let cfg = ServerConfig {
        handshake_timeout: Duration::from_secs(6),
        ..server_config()
    };
    let addr = start_server(cfg);
    let prompt = Duration::from_secs(4);

    for (what, bytes) in &silent_drop_frames() {
        let mut s = raw(addr);
        s.write_all(bytes).unwrap();
        let t = wait_closed(&s, prompt);
        assert!(
            t.is_some(),
            "{what}: connection still open after {prompt:?}"
        );
    }

    // A frame cut short: the peer half-closes (we can still see the server close), or goes away.
    let mut s = raw(addr);
    s.write_all(&100u32.to_be_bytes()).unwrap();
    s.write_all(b"{\"type\":\"hel").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert!(
        wait_closed(&s, prompt).is_some(),
        "truncated frame: connection still open"
    );
    let mut s = raw(addr);
    s.write_all(&[0, 0]).unwrap();
    drop(s);
    let mut s = raw(addr);
    s.write_all(&100u32.to_be_bytes()).unwrap();
    s.write_all(b"{\"type\"").unwrap();
    drop(s);

    // Answers that say what is wrong, then a close.
    let expect_error = |first: &Msg, needles: &[&str]| {
        let mut s = raw(addr);
        write_msg(&mut s, first).unwrap();
        match recv(&mut s) {
            Msg::Error { message } => {
                for n in needles {
                    assert!(message.contains(n), "{first:?}: `{message}` lacks `{n}`");
                }
            }
            other => panic!("{first:?}: expected an error, got {other:?}"),
        }
        assert!(
            is_closed(&s, prompt),
            "{first:?}: connection still open after the error"
        );
    };
    expect_error(
        &Msg::Hello {
            magic: "iperf3".into(),
            protocol: PROTOCOL_VERSION,
            version: "3.16".into(),
            nonce: "00".into(),
        },
        &["not a linerate client"],
    );
    expect_error(
        &Msg::Hello {
            magic: MAGIC.into(),
            protocol: 999,
            version: "9.9.9".into(),
            nonce: "00".into(),
        },
        &[
            "protocol version 999",
            "9.9.9",
            &format!("speaks version {PROTOCOL_VERSION}"),
            env!("CARGO_PKG_VERSION"),
        ],
    );
    expect_error(
        &Msg::DataHello {
            cookie: "0123456789abcdef0123456789abcdef".into(),
            stream: 0,
        },
        &["unknown test cookie"],
    );
    expect_error(&Msg::Start, &["expected hello"]);
    expect_error(
        &Msg::Results {
            results: linerate_proto::SideResults::default(),
        },
        &["expected hello"],
    );

    // After a hello, anything but a request is an error too.
    let mut s = raw(addr);
    write_msg(&mut s, &hello()).unwrap();
    assert!(matches!(recv(&mut s), Msg::ServerHello { .. }));
    write_msg(&mut s, &Msg::Done).unwrap();
    match recv(&mut s) {
        Msg::Error { message } => assert!(message.contains("expected request"), "{message}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(is_closed(&s, prompt));

    assert_good_run(
        bench(
            ClientConfig::new(addr, tcp_params(1000)),
            Duration::from_secs(20),
        ),
        "a test after malformed connections",
    );
}

// ---------------------------------------------------------------------------------------------
// First bytes: linerate, iperf3 or neither
// ---------------------------------------------------------------------------------------------

/// Everything the peer sends until it closes, and when it closed; `None` if still open at
/// `within`.
fn read_until_closed(mut s: &TcpStream, within: Duration) -> Option<(Vec<u8>, Duration)> {
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = within.saturating_sub(t0.elapsed());
        if left.is_zero() {
            return None;
        }
        s.set_read_timeout(Some(left.max(Duration::from_millis(10))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some((got, t0.elapsed())),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some((got, t0.elapsed())),
        }
    }
}

/// iperf3's PARAM_EXCHANGE: the server has the cookie and waits for the client's parameters.
const IPERF3_PARAM_EXCHANGE: u8 = 9;

/// Cookies of each iperf3 generation: 3.2 and later (random `[a-z2-7]`), 3.0/3.1 (host name,
/// time, random, padded with digits), the 3.0 betas (a UUID); each 36 characters and a NUL.
fn iperf3_cookies() -> Vec<Vec<u8>> {
    [
        "bdyqcmoyr6fblhzqdrfu7azvj3iyh7ezrj5d",
        "SVR028.1555493204.059114.5f55c3f5123",
        "e47a1dcd-70b4-44b5-9411-e59ade43f579",
    ]
    .iter()
    .map(|c| {
        let mut b = c.as_bytes().to_vec();
        b.push(0);
        assert_eq!(b.len(), 37);
        b
    })
    .collect()
}

/// serve speaks iperf3: a cookie of any generation, whole or in two parts, is answered at
/// once with PARAM_EXCHANGE; a client that then sends nothing is dropped at the handshake
/// deadline, not kept; and the server keeps serving.
#[test]
fn an_iperf3_client_is_answered_at_once_and_dropped_when_it_says_no_more() {
    let _g = serial();
    // A long handshake timeout: the answers below must come from the cookie, not the timer.
    let handshake = Duration::from_secs(3);
    let cfg = ServerConfig {
        handshake_timeout: handshake,
        ..server_config()
    };
    let addr = start_server(cfg);
    let prompt = Duration::from_secs(2);
    for cookie in iperf3_cookies() {
        for split in [cookie.len(), 11] {
            let name = String::from_utf8_lossy(&cookie).to_string();
            let mut s = raw(addr);
            s.write_all(&cookie[..split]).unwrap();
            if split < cookie.len() {
                thread::sleep(Duration::from_millis(200));
                s.write_all(&cookie[split..]).unwrap();
            }
            s.set_read_timeout(Some(prompt)).unwrap();
            let mut first = [0u8; 1];
            s.read_exact(&mut first)
                .unwrap_or_else(|e| panic!("{name}: no PARAM_EXCHANGE within {prompt:?}: {e}"));
            assert_eq!(first[0], IPERF3_PARAM_EXCHANGE, "{name}");
            let (rest, _) = read_until_closed(&s, handshake + Duration::from_secs(4))
                .unwrap_or_else(|| panic!("{name}: kept open past the handshake deadline"));
            assert!(rest.is_empty(), "{name}: then {rest:?}");
        }
    }
    assert_good_run(
        bench(
            ClientConfig::new(addr, tcp_params(1000)),
            Duration::from_secs(20),
        ),
        "a test after iperf3 clients",
    );
}

#[test]
fn an_iperf3_client_that_keeps_sending_after_its_cookie_is_cut() {
    let _g = serial();
    let addr = start_server(ServerConfig {
        handshake_timeout: Duration::from_secs(6),
        ..server_config()
    });
    let mut s = raw(addr);
    s.write_all(&iperf3_cookies()[0]).unwrap();
    // Keep sending (bounded: 400 writes of 4 KiB, each a little apart) until the server cuts it.
    let t0 = Instant::now();
    let chunk = [b'x'; 4096];
    let mut cut = false;
    for _ in 0..400 {
        if s.write_all(&chunk).is_err() {
            cut = true;
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert!(cut, "still accepting data after {:?}", t0.elapsed());
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "cut only after {:?}",
        t0.elapsed()
    );
}

#[test]
fn first_bytes_of_neither_protocol_are_dropped_at_once_without_an_answer() {
    let _g = serial();
    let cfg = ServerConfig {
        handshake_timeout: Duration::from_secs(6),
        ..server_config()
    };
    let addr = start_server(cfg);
    let prompt = Duration::from_secs(4);
    let mut no_nul = iperf3_cookies()[0].clone();
    *no_nul.last_mut().unwrap() = b'x';
    for (what, bytes) in [
        (
            "a TLS client hello",
            vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01],
        ),
        (
            "an SSH banner",
            b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n".to_vec(),
        ),
        ("37 printable bytes without the NUL", no_nul),
        ("a NUL inside a would-be cookie", b"abc\0def".to_vec()),
        ("a space", b"hello world".to_vec()),
    ] {
        let mut s = raw(addr);
        s.write_all(&bytes).unwrap();
        let (got, _) =
            read_until_closed(&s, prompt).unwrap_or_else(|| panic!("{what}: still open"));
        assert!(got.is_empty(), "{what}: answered {got:?}");
    }
    assert_good_run(
        bench(
            ClientConfig::new(addr, tcp_params(1000)),
            Duration::from_secs(20),
        ),
        "a test after stray clients",
    );
}

#[test]
fn a_cookie_cut_short_is_dropped_at_the_handshake_deadline() {
    let _g = serial();
    let addr = start_server(server_config());
    let mut s = raw(addr);
    // The start of a cookie, then nothing: it could still be an iperf3 client until the
    // deadline, and not past it.
    s.write_all(&iperf3_cookies()[0][..10]).unwrap();
    let (got, closed) = read_until_closed(&s, Duration::from_secs(8))
        .expect("a cookie cut short must be dropped after the handshake timeout");
    assert!(got.is_empty(), "answered {got:?}");
    assert!(
        closed >= HANDSHAKE.mul_f64(0.9),
        "dropped after {closed:?}, before the {HANDSHAKE:?} handshake timeout"
    );
    assert!(
        closed < HANDSHAKE * 5,
        "dropped only after {closed:?} (timeout {HANDSHAKE:?})"
    );
}

/// `handshake_timeout` is documented as the time from hello to start; a peer that sends its
/// hello one byte at a time must not hold a handshake slot (of `max_pending`) for longer.
#[test]
fn slow_drip_hello_is_dropped_after_the_handshake_timeout() {
    let _g = serial();
    let cfg = ServerConfig {
        max_pending: 1,
        ..server_config()
    };
    let addr = start_server(cfg);
    let mut s = raw(addr);
    let mut body = 60_000u32.to_be_bytes().to_vec();
    body.extend(std::iter::repeat_n(b' ', 1000));
    let t0 = Instant::now();
    let mut closed_at = None;
    for b in &body {
        if t0.elapsed() > HANDSHAKE * 4 {
            break;
        }
        if s.write_all(std::slice::from_ref(b)).is_err()
            || is_closed(&s, Duration::from_millis(400))
        {
            closed_at = Some(t0.elapsed());
            break;
        }
    }
    // While the drip holds the only handshake slot, real clients are shed.
    let blocked = bench(
        ClientConfig::new(addr, tcp_params(500)),
        Duration::from_secs(20),
    );
    let closed_at = closed_at.unwrap_or_else(|| {
        panic!(
            "a client dripping its hello was still connected after {:?} (handshake timeout \
             {HANDSHAKE:?}); meanwhile a real client got: {:?}",
            t0.elapsed(),
            blocked.as_ref().map(|r| r.error.clone())
        )
    });
    assert!(closed_at < HANDSHAKE * 3, "closed only after {closed_at:?}");
    assert_good_run(blocked, "a test after a slow-drip client");
}

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

/// Requests over the limits of `absurd_parameters_are_refused_naming_the_limit`'s server
/// (`base`: a TCP test it accepts, `udp`: a UDP one), each with the words its refusal must
/// contain.
#[expect(
    clippy::too_many_lines,
    reason = "a table, one request per limit, read top to bottom; splitting it would only scatter the rows"
)]
fn over_limit_cases(
    base: &TestParams,
    udp: &TestParams,
) -> Vec<(&'static str, TestParams, Vec<&'static str>)> {
    vec![
        (
            "100000 streams",
            TestParams {
                streams: 100_000,
                ..base.clone()
            },
            vec!["100000 streams", "at most 4", "--max-streams"],
        ),
        (
            "length u32::MAX",
            TestParams {
                length: u32::MAX,
                ..base.clone()
            },
            vec!["4294967295", "at most 1048576", "--max-length"],
        ),
        (
            "10 years",
            TestParams {
                duration_ms: 10 * 365 * 24 * 3600 * 1000,
                ..base.clone()
            },
            vec!["315360000 s", "at most 10 s", "--max-duration"],
        ),
        (
            "omit = duration",
            TestParams {
                omit_ms: 2000,
                ..base.clone()
            },
            vec!["--omit"],
        ),
        (
            "omit > duration",
            TestParams {
                omit_ms: u64::MAX,
                ..base.clone()
            },
            vec!["--omit"],
        ),
        (
            "window u32::MAX",
            TestParams {
                window: Some(u32::MAX),
                ..base.clone()
            },
            vec!["window 4294967295", "at most 4194304"],
        ),
        (
            "UDP at unlimited rate",
            TestParams {
                bitrate_bps: 0,
                ..udp.clone()
            },
            vec!["unlimited rate", "100000000 bit/s", "--max-udp-bitrate"],
        ),
        (
            "UDP above the rate limit",
            TestParams {
                bitrate_bps: 100_000_001,
                ..udp.clone()
            },
            vec!["100000001 bit/s", "--max-udp-bitrate"],
        ),
        (
            "UDP datagram of 1 MiB",
            TestParams {
                length: 1024 * 1024,
                bitrate_bps: 1_000_000,
                ..udp.clone()
            },
            vec!["65507"],
        ),
        (
            "zero streams",
            TestParams {
                streams: 0,
                ..base.clone()
            },
            vec!["streams"],
        ),
        (
            "zero duration",
            TestParams {
                duration_ms: 0,
                ..base.clone()
            },
            vec!["duration"],
        ),
        (
            "1 ms intervals",
            TestParams {
                interval_ms: 1,
                ..base.clone()
            },
            vec!["interval"],
        ),
        (
            "shell in the congestion control name",
            TestParams {
                congestion: Some("bbr; rm -rf /".into()),
                ..base.clone()
            },
            vec!["congestion control"],
        ),
        (
            "more buffer memory than the server has",
            TestParams {
                streams: 4,
                length: 1024 * 1024,
                ..base.clone()
            },
            vec!["busy", "--max-memory"],
        ),
    ]
}

/// One test at a time (`--max-tests 1`), UDP at most 100 Mb/s per stream.
fn one_test_at_a_time() -> ServerConfig {
    ServerConfig {
        limits: Limits {
            max_tests: 1,
            max_udp_bitrate_bps: 100_000_000,
            ..server_config().limits
        },
        ..server_config()
    }
}

#[test]
fn absurd_parameters_are_refused_naming_the_limit() {
    let _g = serial();
    let cfg = ServerConfig {
        max_memory_bytes: 2 * 1024 * 1024,
        ..one_test_at_a_time()
    };
    let addr = start_server(cfg);
    let base = tcp_params(2000);
    let udp = TestParams {
        kind: TestKind::UdpBw,
        length: 1400,
        ..base.clone()
    };
    for (what, params, needles) in &over_limit_cases(&base, &udp) {
        let reason = refusal(addr, params);
        for n in needles {
            assert!(reason.contains(n), "{what}: reason `{reason}` lacks `{n}`");
        }
    }
    // The client reports a refusal as such.
    match bench(
        ClientConfig::new(
            addr,
            TestParams {
                streams: 100_000,
                ..base.clone()
            },
        ),
        Duration::from_secs(10),
    ) {
        Err(ClientError::Refused { kind, reason }) => {
            assert!(reason.contains("--max-streams"));
            assert_eq!(kind, RefusalKind::OverLimit);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // A UDP test within the rate limit runs.
    assert_good_run(
        bench(
            ClientConfig::new(
                addr,
                TestParams {
                    bitrate_bps: 50_000_000,
                    duration_ms: 1000,
                    ..udp
                },
            ),
            Duration::from_secs(20),
        ),
        "UDP within the rate limit",
    );
    // None of the refusals kept the only test slot or any memory.
    assert_good_run(
        bench(ClientConfig::new(addr, base), Duration::from_secs(20)),
        "a test after refusals (max_tests = 1)",
    );
}

/// With one test slot, a client that starts its next test the moment it has the last one's
/// results is served: the server lets the slot go when the run is over, before the results
/// go out (it used to hold it through the results and its log line, and a quick next test
/// was now and then refused as busy).
#[test]
fn max_tests_one_serves_tests_back_to_back() {
    let _g = serial();
    let addr = start_server(one_test_at_a_time());
    let udp = TestParams {
        kind: TestKind::UdpBw,
        length: 1400,
        bitrate_bps: 50_000_000,
        ..tcp_params(300)
    };
    for i in 0..8 {
        let params = if i % 2 == 0 {
            tcp_params(300)
        } else {
            udp.clone()
        };
        let kind = params.kind;
        assert_good_run(
            bench(ClientConfig::new(addr, params), Duration::from_secs(20)),
            &format!(
                "test {} of 8 ({kind:?}), started as the one before it ended",
                i + 1
            ),
        );
    }
}

#[test]
fn max_tests_one_refuses_a_second_test_while_the_first_runs() {
    let _g = serial();
    let cfg = ServerConfig {
        limits: Limits {
            max_tests: 1,
            ..server_config().limits
        },
        ..server_config()
    };
    let addr = start_server(cfg);
    let (tx, started) = mpsc::channel();
    let first = spawn_bench(ClientConfig::new(addr, tcp_params(2500)), Some(tx));
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the first test starts");

    match bench(
        ClientConfig::new(addr, tcp_params(1000)),
        Duration::from_secs(10),
    ) {
        Err(ClientError::Refused { kind, reason }) => {
            assert!(reason.contains("busy"), "{reason}");
            assert_eq!(kind, RefusalKind::Busy);
            assert!(reason.contains("--max-tests"), "{reason}");
        }
        other => panic!("a second concurrent test must be refused as busy, got {other:?}"),
    }
    assert_good_run(
        wait_bench(&first, Duration::from_secs(20)),
        "the first test",
    );
    // The server drops its slot right after sending the results: allow a moment for that.
    let (after, waited) = bench_until_accepted(addr, &tcp_params(1000), Duration::from_secs(2));
    if waited > Duration::from_millis(100) {
        eprintln!("note: the slot was free only {waited:?} after the first test's results");
    }
    assert_good_run(after, "a test after the first one ended");
}

#[test]
fn an_accepted_test_without_data_connections_frees_its_slot() {
    let _g = serial();
    let cfg = ServerConfig {
        limits: Limits {
            max_tests: 1,
            ..server_config().limits
        },
        ..server_config()
    };
    let addr = start_server(cfg);

    // Accepted, then no data connection at all.
    let (mut ctl, answer) = request_raw(addr, &tcp_params(5000));
    assert!(matches!(answer, Msg::Accepted { .. }), "{answer:?}");
    let t0 = Instant::now();
    match recv(&mut ctl) {
        Msg::Error { message } => assert!(message.contains("0 of 1 data connections"), "{message}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(t0.elapsed() < HANDSHAKE * 5, "took {:?}", t0.elapsed());

    // Accepted, data connection up, but never a Start.
    let (ctl, answer) = request_raw(addr, &tcp_params(5000));
    let Msg::Accepted { cookie, .. } = answer else {
        panic!("expected accepted, got {answer:?}");
    };
    let mut data = raw(addr);
    write_msg(&mut data, &Msg::DataHello { cookie, stream: 0 }).unwrap();
    assert!(
        is_closed(&ctl, HANDSHAKE * 5),
        "a test that never starts must be dropped"
    );
    assert!(
        is_closed(&data, Duration::from_secs(3)),
        "and its data connection closed"
    );

    let (r, waited) = bench_until_accepted(addr, &tcp_params(1000), Duration::from_secs(2));
    assert!(waited < Duration::from_secs(2));
    assert_good_run(r, "a test after abandoned ones");
}

// ---------------------------------------------------------------------------------------------
// Floods and disconnects
// ---------------------------------------------------------------------------------------------

#[test]
fn a_flood_of_idle_connections_is_shed_and_the_server_keeps_serving() {
    let _g = serial();
    let addr = start_server(server_config()); // max_pending 16
    let mut idle: Vec<TcpStream> = Vec::new();
    let mut failed = 0;
    for _ in 0..200 {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(3)) {
            Ok(s) => idle.push(s),
            Err(_) => failed += 1,
        }
    }
    assert!(idle.len() >= 150, "only {} of 200 connected", idle.len());
    let flood_done = Instant::now();

    // Shed connections are closed at once, the 16 that got a slot after the handshake timeout;
    // then a real test gets through.
    let (r, waited) = bench_until_accepted(addr, &tcp_params(1000), Duration::from_secs(8));
    assert_good_run(r, "a test after a flood");
    assert!(waited < Duration::from_secs(8));

    let deadline = flood_done + HANDSHAKE * 5;
    let still_open = idle
        .iter_mut()
        .filter(|s| {
            let left = deadline.saturating_duration_since(Instant::now());
            !is_closed(s, left.max(Duration::from_millis(20)))
        })
        .count();
    assert_eq!(
        still_open,
        0,
        "{still_open} of {} idle connections still open {:?} after the flood ({failed} did not connect)",
        idle.len(),
        flood_done.elapsed()
    );
}

/// A raw client starts a 5 s test, moves data for 0.5 s, then goes away; with max_tests = 1 the
/// next test is accepted only once the server has ended the first.
fn disconnect_mid_test(direction: Direction, close_data: bool) {
    let cfg = ServerConfig {
        limits: Limits {
            max_tests: 1,
            ..server_config().limits
        },
        ..server_config()
    };
    let addr = start_server(cfg);
    let params = TestParams {
        direction,
        duration_ms: 5000,
        ..tcp_params(5000)
    };
    let (mut ctl, mut data) = start_raw_test(addr, &params);
    let moved = match direction {
        Direction::Receive => receive_for(&mut data, Duration::from_millis(500)),
        _ => send_for(&mut data, Duration::from_millis(500)),
    };
    assert!(moved > 0);
    expect_interval(&mut ctl);
    drop(ctl);
    let keep = if close_data {
        drop(data);
        None
    } else {
        Some(data)
    };
    // A 5 s test ends by 15 s (duration + grace); a vanished client must end it at once.
    let (r, waited) = bench_until_accepted(addr, &tcp_params(1000), Duration::from_secs(14));
    drop(keep);
    assert!(
        waited < Duration::from_millis(3500),
        "the server held the vanished client's test for {waited:?} more (its 5 s test had \
         4.5 s left)"
    );
    assert_good_run(r, "the test after a client vanished");
}

#[test]
fn a_client_vanishing_mid_test_frees_the_server_send_direction() {
    let _g = serial();
    disconnect_mid_test(Direction::Send, true);
}

#[test]
fn a_client_vanishing_mid_test_frees_the_server_receive_direction() {
    let _g = serial();
    disconnect_mid_test(Direction::Receive, true);
}

/// docs/protocol.md: "a control connection that closes stops its test at once".
#[test]
fn closing_only_the_control_connection_stops_the_test_at_once() {
    let _g = serial();
    disconnect_mid_test(Direction::Send, false);
}

// ---------------------------------------------------------------------------------------------
// A server that dies, and fake servers
// ---------------------------------------------------------------------------------------------

/// A fake server that answers the handshake correctly (no auth), takes one data connection and
/// Start, then runs `script` with (control, data, params).
fn fake_server<F>(script: F) -> (SocketAddr, thread::JoinHandle<()>)
where
    F: FnOnce(TcpStream, TcpStream, TestParams) + Send + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = thread::spawn(move || {
        let (mut ctl, _) = l.accept().unwrap();
        ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        ctl.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let Msg::Hello { nonce, .. } = recv(&mut ctl) else {
            panic!("expected hello")
        };
        write_msg(
            &mut ctl,
            &Msg::ServerHello {
                protocol: PROTOCOL_VERSION,
                version: "fake".into(),
                auth: false,
                nonce,
            },
        )
        .unwrap();
        let Msg::Request { params } = recv(&mut ctl) else {
            panic!("expected request")
        };
        write_msg(
            &mut ctl,
            &Msg::Accepted {
                test_id: 1,
                cookie: "fa".repeat(16),
                udp_port: None,
                memory_bytes: 0,
                inventory: None,
                rdma: None,
                listen_port: None,
            },
        )
        .unwrap();
        let (mut data, _) = l.accept().unwrap();
        data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        data.set_write_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        assert!(matches!(recv(&mut data), Msg::DataHello { stream: 0, .. }));
        assert_eq!(recv(&mut ctl), Msg::Start);
        script(ctl, data, params);
    });
    (addr, h)
}

/// The fake server's side of the data: take (or send) data for `live`, or until the client
/// ends its stream when `live` is `None`.
fn fake_move_data(data: &mut TcpStream, direction: Direction, live: Option<Duration>) {
    let t0 = Instant::now();
    let live = live.unwrap_or(Duration::from_secs(10));
    if direction == Direction::Receive {
        let buf = vec![0u8; 64 * 1024];
        while t0.elapsed() < live {
            if data.write_all(&buf).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(2));
        }
    } else {
        let mut buf = vec![0u8; 256 * 1024];
        data.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        while t0.elapsed() < live {
            match data.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
    }
}

/// A fake server that moves data for `live` after Start, then drops every connection (as if
/// the process died).
fn fake_server_that_dies(live: Duration) -> (SocketAddr, thread::JoinHandle<()>) {
    fake_server(move |ctl, mut data, params| {
        fake_move_data(&mut data, params.direction, Some(live));
        // "Dies": an abortive close of everything.
        let _ = socket2::SockRef::from(&data).set_linger(Some(Duration::ZERO));
        let _ = socket2::SockRef::from(&ctl).set_linger(Some(Duration::ZERO));
        drop(data);
        drop(ctl);
    })
}

fn server_dies_mid_test(direction: Direction) {
    let (addr, fake) = fake_server_that_dies(Duration::from_millis(500));
    let params = TestParams {
        direction,
        ..tcp_params(3000)
    };
    let t0 = Instant::now();
    let run = bench(ClientConfig::new(addr, params), Duration::from_secs(30))
        .expect("a server dying mid-test still gives Ok(ClientRun) with partial results");
    let took = t0.elapsed();
    fake.join().expect("the fake server");
    let err = run.error.as_deref().expect("the run must carry an error");
    assert!(
        err.contains("control connection") || err.contains("peer closed"),
        "error does not say what happened: {err}"
    );
    let s = run.local.streams.first().expect("local stream results");
    let moved = s.bytes_sent + s.bytes_received;
    assert!(moved > 0, "the partial results were lost: {:?}", run.local);
    assert!(run.remote.is_none());
    assert!(
        took < Duration::from_secs(6),
        "the client took {took:?} to notice the server died"
    );
    // Partial results still assemble.
    let t = assemble(&run);
    assert!(t.bytes > 0 && t.error.is_some(), "{t:?}");
}

#[test]
fn server_dying_mid_test_keeps_partial_results_send() {
    let _g = serial();
    server_dies_mid_test(Direction::Send);
}

#[test]
fn server_dying_mid_test_keeps_partial_results_receive() {
    let _g = serial();
    server_dies_mid_test(Direction::Receive);
}

/// A hostile server streams intervals as fast as it can: the client must not keep them all.
#[test]
fn client_bounds_what_a_server_can_make_it_store() {
    let _g = serial();
    let (addr, fake) = fake_server(|mut ctl, mut data, params| {
        let sample = Msg::Interval {
            sample: linerate_proto::IntervalSample {
                start_s: 0.0,
                end_s: 0.2,
                bytes: vec![1; 1000],
                ..Default::default()
            },
        };
        let t0 = Instant::now();
        let drain = thread::spawn(move || fake_move_data(&mut data, params.direction, None));
        while t0.elapsed() < Duration::from_millis(1000) {
            if write_msg(&mut ctl, &sample).is_err() {
                break;
            }
        }
        let _ = drain.join();
        let _ = write_msg(
            &mut ctl,
            &Msg::Results {
                results: linerate_proto::SideResults::default(),
            },
        );
    });
    let params = tcp_params(1000); // 200 ms intervals: 5 expected
    let run = bench(
        ClientConfig::new(addr, params.clone()),
        Duration::from_secs(30),
    )
    .expect("a run against a chatty server");
    fake.join().unwrap();
    let expected = (params.duration_ms / params.interval_ms) as usize;
    let biggest = run
        .remote_intervals
        .iter()
        .map(|s| s.bytes.len())
        .max()
        .unwrap_or(0);
    assert!(
        run.remote_intervals.len() <= 2 * expected + 10 && biggest <= params.connections() as usize,
        "the client stored {} remote intervals (expected about {expected}) of up to {biggest} \
         streams (the test has {})",
        run.remote_intervals.len(),
        params.connections()
    );
}

/// A hostile server reports absurd figures: assembling the result must not panic.
#[test]
fn assembling_absurd_server_figures_does_not_panic() {
    let _g = serial();
    let (addr, fake) = fake_server(|mut ctl, mut data, params| {
        fake_move_data(&mut data, params.direction, None);
        let _ = recv(&mut ctl); // Done
        let huge = linerate_proto::StreamResult {
            id: 0,
            bytes_received: u64::MAX,
            seconds: 1.0,
            ..Default::default()
        };
        let _ = write_msg(
            &mut ctl,
            &Msg::Results {
                results: linerate_proto::SideResults {
                    streams: vec![huge.clone(), huge],
                    intervals: vec![linerate_proto::IntervalSample {
                        start_s: 0.0,
                        end_s: 0.5,
                        bytes: vec![u64::MAX, u64::MAX],
                        ..Default::default()
                    }],
                    ..Default::default()
                },
            },
        );
    });
    let run = bench(
        ClientConfig::new(addr, tcp_params(500)),
        Duration::from_secs(30),
    )
    .expect("a run against a lying server");
    fake.join().unwrap();
    assert!(run.remote.is_some(), "the fake results did not arrive");
    let t = std::panic::catch_unwind(|| assemble(&run))
        .expect("assemble() panicked on a server's figures");
    assert!(t.bytes > 0);
}

// ---------------------------------------------------------------------------------------------
// Pre-shared key
// ---------------------------------------------------------------------------------------------

#[test]
fn psk_is_required_checked_and_works() {
    let _g = serial();
    let cfg = ServerConfig {
        psk: Some(Psk::from_bytes(PSK)),
        ..server_config()
    };
    let addr = start_server(cfg);
    let with_key = |key: Option<&[u8]>| ClientConfig {
        psk: key.map(Psk::from_bytes),
        ..ClientConfig::new(addr, tcp_params(1000))
    };

    match bench(with_key(None), Duration::from_secs(10)) {
        Err(e @ ClientError::NeedsKey(_)) => {
            assert!(e.to_string().contains("--psk-file"), "{e}");
        }
        other => panic!("no key: expected NeedsKey, got {other:?}"),
    }
    let t0 = Instant::now();
    match bench(
        with_key(Some(b"a-wrong-key-of-enough-length")),
        Duration::from_secs(10),
    ) {
        Err(e @ (ClientError::Server(_) | ClientError::Refused { .. })) => {
            assert!(e.to_string().contains("authentication failed"), "{e}");
        }
        other => panic!("wrong key: expected an authentication failure, got {other:?}"),
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(150),
        "a wrong key is answered without the documented delay"
    );

    // Skipping the Auth step does not get a test either.
    let mut s = raw(addr);
    write_msg(&mut s, &hello()).unwrap();
    assert!(matches!(recv(&mut s), Msg::ServerHello { auth: true, .. }));
    write_msg(
        &mut s,
        &Msg::Request {
            params: tcp_params(1000),
        },
    )
    .unwrap();
    match recv(&mut s) {
        Msg::Error { message } => assert!(message.contains("authentication failed")),
        other => panic!("a request without auth must fail, got {other:?}"),
    }
    assert!(is_closed(&s, Duration::from_secs(3)));

    // A proof that is not even hex.
    let mut s = raw(addr);
    write_msg(&mut s, &hello()).unwrap();
    assert!(matches!(recv(&mut s), Msg::ServerHello { auth: true, .. }));
    write_msg(
        &mut s,
        &Msg::Auth {
            proof: "zz".repeat(5000),
        },
    )
    .unwrap();
    assert!(matches!(recv(&mut s), Msg::Error { .. }));

    assert_good_run(
        bench(with_key(Some(PSK)), Duration::from_secs(20)),
        "the right key",
    );
}

/// A fake server for the client's side of authentication. `auth` is what it advertises;
/// with auth it answers any proof with a bogus AuthOk. Returns whether the client went on to
/// send a Request.
fn fake_auth_server(auth: bool) -> (SocketAddr, thread::JoinHandle<bool>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = thread::spawn(move || {
        let (mut ctl, _) = l.accept().unwrap();
        ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let Msg::Hello { nonce, .. } = recv(&mut ctl) else {
            panic!("expected hello")
        };
        write_msg(
            &mut ctl,
            &Msg::ServerHello {
                protocol: PROTOCOL_VERSION,
                version: "fake".into(),
                auth,
                nonce: nonce.clone(),
            },
        )
        .unwrap();
        if auth {
            let Msg::Auth { .. } = recv(&mut ctl) else {
                panic!("expected auth")
            };
            write_msg(
                &mut ctl,
                &Msg::AuthOk {
                    proof: "00".repeat(32),
                },
            )
            .unwrap();
        }
        match read_msg(&mut ctl, MAX_CONTROL_FRAME) {
            Ok(Msg::Request { .. }) => {
                let _ = write_msg(
                    &mut ctl,
                    &Msg::Refused {
                        reason: "fake server got a request".into(),
                        kind: RefusalKind::Other,
                    },
                );
                true
            }
            _ => false,
        }
    });
    (addr, h)
}

#[test]
fn client_refuses_a_server_with_a_bogus_proof() {
    let _g = serial();
    let (addr, fake) = fake_auth_server(true);
    let cfg = ClientConfig {
        psk: Some(Psk::from_bytes(PSK)),
        ..ClientConfig::new(addr, tcp_params(1000))
    };
    match bench(cfg, Duration::from_secs(15)) {
        Err(e @ ClientError::ServerProof) => {
            assert!(e.to_string().contains("pre-shared key"), "{e}");
        }
        other => panic!("expected ServerProof, got {other:?}"),
    }
    assert!(
        !fake.join().unwrap(),
        "the client sent its request to an unproven server"
    );
}

/// docs/protocol.md: the client "refuses to trust results from a server that cannot prove it
/// knows the key". A server that simply does not ask for a key proves nothing.
#[test]
fn client_with_a_key_refuses_a_server_that_skips_authentication() {
    let _g = serial();
    let (addr, fake) = fake_auth_server(false);
    let cfg = ClientConfig {
        psk: Some(Psk::from_bytes(PSK)),
        ..ClientConfig::new(addr, tcp_params(1000))
    };
    let r = bench(cfg, Duration::from_secs(15));
    let sent_request = fake.join().unwrap();
    assert!(
        !sent_request,
        "the client sent its request to a server that never proved the key (result: {r:?})"
    );
    assert!(matches!(r, Err(ClientError::ServerNoAuth)), "{r:?}");
}

// ---------------------------------------------------------------------------------------------
// No leaks
// ---------------------------------------------------------------------------------------------

const LEAK_CHILD_ENV: &str = "LINERATE_RELIABILITY_LEAK_CHILD";
const LEAK_CHILD_TEST: &str = "leak_scenario_in_child_process";

/// Runs [`leak_scenario_in_child_process`] alone in a child process, where the process's thread
/// count belongs to that scenario only.
#[test]
fn no_threads_are_left_behind() {
    let _g = serial();
    let exe = std::env::current_exe().expect("the test binary");
    let mut child = Command::new(exe)
        .args([
            LEAK_CHILD_TEST,
            "--ignored",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LEAK_CHILD_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the child test process");
    let drain = |r: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut out);
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + Duration::from_secs(45);
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for the child") {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let report: Vec<&str> = out
        .lines()
        .chain(err.lines())
        .filter(|l| l.contains("threads:") || l.contains("panicked") || l.contains("test result"))
        .collect();
    eprintln!("{}", report.join("\n"));
    let status = status.unwrap_or_else(|| panic!("the child did not finish in 45 s\n{err}"));
    assert!(status.success(), "child failed:\n{err}\n{out}");
    assert!(
        out.contains("1 passed"),
        "the child did not run the scenario:\n{out}"
    );
}

/// Not a test of its own: does nothing unless started by [`no_threads_are_left_behind`]
/// (ignored, so that the suite counts it as what it is, not as a pass).
#[test]
#[ignore = "a scenario run in a child process by `no_threads_are_left_behind`"]
fn leak_scenario_in_child_process() {
    if std::env::var_os(LEAK_CHILD_ENV).is_none() {
        return;
    }
    let addr = start_server(ServerConfig {
        limits: Limits {
            max_tests: 2,
            ..server_config().limits
        },
        ..server_config()
    });
    let psk_addr = start_server(ServerConfig {
        psk: Some(Psk::from_bytes(PSK)),
        ..server_config()
    });
    thread::sleep(Duration::from_millis(200));
    let baseline = thread_count();

    // A normal test in each direction.
    assert_good_run(
        bench(
            ClientConfig::new(addr, tcp_params(800)),
            Duration::from_secs(20),
        ),
        "send",
    );
    assert_good_run(
        bench(
            ClientConfig::new(
                addr,
                TestParams {
                    direction: Direction::Receive,
                    ..tcp_params(800)
                },
            ),
            Duration::from_secs(20),
        ),
        "receive",
    );
    // Hostile and broken connections.
    let silent: Vec<TcpStream> = (0..5).map(|_| raw(addr)).collect();
    let mut junk = raw(addr);
    junk.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let _ = refusal(
        addr,
        &TestParams {
            streams: 100_000,
            ..tcp_params(1000)
        },
    );
    let (abandoned, _) = request_raw(addr, &tcp_params(1000));
    let flood: Vec<TcpStream> = (0..60)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(3)).ok())
        .collect();
    thread::sleep(Duration::from_millis(100));
    let mut busiest = thread_count();
    let mut bad_key = raw(psk_addr);
    write_msg(&mut bad_key, &hello()).unwrap();
    let _ = recv(&mut bad_key);
    write_msg(
        &mut bad_key,
        &Msg::Auth {
            proof: "00".repeat(32),
        },
    )
    .unwrap();
    // A client that vanishes mid-test.
    thread::sleep(HANDSHAKE + Duration::from_millis(200));
    let (r, _) = bench_until_accepted(addr, &tcp_params(500), Duration::from_secs(5));
    assert_good_run(r, "after the flood");
    let (mut ctl, mut data) = start_raw_test(addr, &tcp_params(3000));
    send_for(&mut data, Duration::from_millis(300));
    expect_interval(&mut ctl);
    busiest = busiest.max(thread_count());
    drop((ctl, data));
    // The server dying under a client.
    let (fake, h) = fake_server_that_dies(Duration::from_millis(300));
    let _ = bench(
        ClientConfig::new(fake, tcp_params(2000)),
        Duration::from_secs(20),
    );
    h.join().unwrap();
    drop((silent, junk, abandoned, flood, bad_key));

    // Everything above is over once the handshake timeout has passed and the test has ended.
    let t0 = Instant::now();
    let mut now = thread_count();
    while now > baseline && t0.elapsed() < Duration::from_secs(12) {
        thread::sleep(Duration::from_millis(100));
        now = thread_count();
    }
    println!(
        "threads: baseline {baseline}, {busiest} at the busiest, {now} after waiting {:?}",
        t0.elapsed()
    );
    assert!(
        busiest > baseline + 10,
        "the scenario did not load the server ({busiest} threads, baseline {baseline})"
    );
    assert!(
        now <= baseline,
        "threads left behind: {now} running, baseline {baseline}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile or broken iperf3-speaking peers
// ---------------------------------------------------------------------------------------------

/// iperf3's CREATE_STREAMS and SERVER_ERROR state bytes.
const IPERF3_CREATE_STREAMS: u8 = 10;
const IPERF3_SERVER_ERROR: u8 = 0xfe;

/// An iperf3 control connection past its cookie: PARAM_EXCHANGE read.
fn iperf3_control(addr: SocketAddr) -> TcpStream {
    let mut s = raw(addr);
    s.write_all(&iperf3_cookies()[0]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("PARAM_EXCHANGE");
    assert_eq!(b[0], IPERF3_PARAM_EXCHANGE);
    s
}

/// iperf3's framing of a JSON message: a 4-byte big-endian length, then the bytes.
fn iperf3_frame(body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// A stock 3.12 client's parameters of a one-second TCP test.
const IPERF3_TCP_PARAMS: &[u8] = br#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;

/// SERVER_ERROR's `i_errno` in what the server sent, if it sent one.
fn iperf3_error_code(got: &[u8]) -> Option<i32> {
    let i = got.iter().position(|b| *b == IPERF3_SERVER_ERROR)?;
    let code = got.get(i + 1..i + 5)?;
    Some(i32::from_be_bytes(code.try_into().ok()?))
}

/// Each hostile iperf3 peer, while a test of linerate's own iperf3 client (UDP, the datagrams a
/// stranger's "9876" could disturb) and a linerate TCP test run: each is answered in iperf3's
/// codes or closed, within the handshake bound, without the server reading what it was told
/// to expect (an oversized length); the stranger's datagram gets no answer; both tests
/// complete with what they should have measured.
#[test]
fn hostile_iperf3_peers_cost_bounded_time_and_never_disturb_running_tests() {
    let _g = serial();
    let handshake = Duration::from_secs(2);
    let addr = start_server(ServerConfig {
        handshake_timeout: handshake,
        ..server_config()
    });
    let udp = TestParams {
        duration_ms: 4000,
        interval_ms: 500,
        length: 1200,
        bitrate_bps: 20_000_000,
        ..TestParams::new(TestKind::UdpBw, Direction::Send)
    };
    let iperf3_cfg = ClientConfig {
        protocol: linerate_bench::WireProtocol::Iperf3(
            linerate_bench::client::Iperf3Options::default(),
        ),
        ..ClientConfig::new(addr, udp)
    };
    let (tx, started) = mpsc::channel();
    let iperf3_test = spawn_bench(iperf3_cfg, Some(tx));
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the iperf3 UDP test started");
    let (tx, started) = mpsc::channel();
    let linerate_test = spawn_bench(ClientConfig::new(addr, tcp_params(4000)), Some(tx));
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the linerate TCP test started");
    let bound = handshake + Duration::from_secs(3);

    // Bad JSON: IERECVPARAMS (114), or for a client whose version is unknown (its parameters
    // say it) the IENEWTEST (100) every release knows, with errno; then closed.
    let mut s = iperf3_control(addr);
    s.write_all(&iperf3_frame(b"{\"tcp\": tru")).unwrap();
    let (got, _) = read_until_closed(&s, bound).expect("bad JSON: still open");
    assert!(
        matches!(iperf3_error_code(&got), Some(100 | 114)),
        "bad JSON: {got:?}"
    );

    // A length of 4 GiB - 16 and no more: refused without waiting for the body.
    let mut s = iperf3_control(addr);
    s.write_all(&0xffff_fff0u32.to_be_bytes()).unwrap();
    let (got, _) = read_until_closed(&s, bound).expect("oversized length: still open");
    assert!(
        matches!(iperf3_error_code(&got), Some(100 | 114)),
        "oversized: {got:?}"
    );

    // Wrong state bytes: the client's IPERF_DONE (16) where its streams should open.
    let mut s = iperf3_control(addr);
    s.write_all(&iperf3_frame(IPERF3_TCP_PARAMS)).unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("CREATE_STREAMS");
    assert_eq!(b[0], IPERF3_CREATE_STREAMS);
    s.write_all(&[16, 13, 0xff, 2]).unwrap();
    read_until_closed(&s, bound).expect("wrong state bytes: still open");

    // A stream that never opens: given up at the handshake deadline, the client told.
    let mut s = iperf3_control(addr);
    s.write_all(&iperf3_frame(IPERF3_TCP_PARAMS)).unwrap();
    s.read_exact(&mut b).expect("CREATE_STREAMS");
    assert_eq!(b[0], IPERF3_CREATE_STREAMS);
    let (got, _) = read_until_closed(&s, bound).expect("no stream: still open");
    assert!(
        got.first() == Some(&IPERF3_SERVER_ERROR),
        "no stream: {got:?}"
    );

    // A UDP "9876" from a stranger (no test of its address waits): no answer.
    let stranger = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
    stranger.connect(addr).unwrap();
    stranger.send(b"9876").unwrap();
    stranger
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut reply = [0u8; 16];
    assert!(
        stranger.recv(&mut reply).is_err(),
        "a stranger was answered"
    );

    // Both tests ran undisturbed.
    let iperf3_run = wait_bench(&iperf3_test, Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("the iperf3 UDP test: {e}"));
    let r = &iperf3_run.local;
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(
        r.streams.len(),
        1,
        "a stranger's stream joined: {:?}",
        r.streams
    );
    assert!(r.streams[0].bytes_sent > 0);
    assert_good_run(
        wait_bench(&linerate_test, Duration::from_secs(30)),
        "the linerate test beside hostile iperf3 peers",
    );
}
