//! Both ends' conversations without a socket: each state's refusals, and its timeouts as a
//! timer event at the deadline (never a sleep).

use std::time::{Duration, Instant};

use super::*;
use crate::defaults::{AUTH_FAILURE_DELAY, CONTROL_TIMEOUT, GRACE, HANDSHAKE_TIMEOUT};
use crate::frame::{encode, MAX_CONTROL_FRAME};
use crate::soak::{End, SoakSample};
use crate::{
    Direction, IntervalSample, Limits, Psk, Refusal, RefusalKind, SideResults, TestKind, TestParams,
};

const KEY: &[u8] = b"a key of at least sixteen bytes";

pub(crate) fn params() -> TestParams {
    let mut p = TestParams::new(TestKind::TcpBw, Direction::Send);
    p.duration_ms = 2000;
    p
}

fn client(t0: Instant, p: TestParams, psk: Option<&[u8]>) -> ControlClient {
    ControlClient::new(
        t0,
        ClientSetup {
            params: p,
            psk: psk.map(Psk::from_bytes),
            nonce: "c0ffee".into(),
            version: "1.2.3".into(),
        },
    )
}

fn server(t0: Instant, psk: Option<&[u8]>) -> ControlServer {
    ControlServer::new(ServerSetup {
        psk: psk.map(Psk::from_bytes),
        nonce: "5eed".into(),
        version: "1.2.3".into(),
        limits: Limits::default(),
        deadline: t0 + HANDSHAKE_TIMEOUT,
    })
}

/// A millisecond before `t`: a timer that has not fired yet.
fn just_before(t: Instant) -> Instant {
    t.checked_sub(Duration::from_millis(1))
        .expect("a later instant")
}

fn drain<S: Session>(s: &mut S) -> Vec<S::Action> {
    std::iter::from_fn(|| s.poll()).collect()
}

fn bytes(m: &Msg) -> Vec<u8> {
    encode(m).unwrap()
}

/// The bytes of every `Send`, and the other actions.
fn split_client(actions: Vec<ClientAction>) -> (Vec<u8>, Vec<ClientAction>) {
    let mut wire = Vec::new();
    let mut rest = Vec::new();
    for a in actions {
        match a {
            ClientAction::Send(b) => wire.extend(b),
            a => rest.push(a),
        }
    }
    (wire, rest)
}

fn split_server(actions: Vec<ServerAction>) -> (Vec<u8>, Vec<ServerAction>) {
    let mut wire = Vec::new();
    let mut rest = Vec::new();
    for a in actions {
        match a {
            ServerAction::Send(b) => wire.extend(b),
            a => rest.push(a),
        }
    }
    (wire, rest)
}

/// Feed `wire` to `s` in pieces of `chunk`, as a reader bounded by `read_limit` would.
fn feed<S: Session>(s: &mut S, now: Instant, wire: &[u8], chunk: usize) -> usize {
    let mut at = 0;
    while at < wire.len() {
        let n = chunk.min(s.read_limit()).min(wire.len() - at);
        if n == 0 {
            break;
        }
        let used = s.receive(now, &wire[at..at + n]);
        at += used;
        if used == 0 {
            break;
        }
    }
    at
}

fn acceptance() -> Acceptance {
    Acceptance {
        test_id: 7,
        cookie: "c00c1e".into(),
        udp_port: None,
        memory_bytes: 1 << 20,
        inventory: None,
        rdma: None,
        listen_port: None,
    }
}

fn results() -> SideResults {
    SideResults {
        error: Some("just a test".into()),
        ..SideResults::default()
    }
}

fn interval(streams: usize) -> IntervalSample {
    IntervalSample {
        start_s: 0.0,
        end_s: 1.0,
        bytes: vec![1; streams],
        ..IntervalSample::default()
    }
}

/// One whole test between the two machines, the bytes delivered in pieces of `chunk`; how many
/// times the client waited on the server before it could send `start`.
fn whole_test(psk: Option<&[u8]>, chunk: usize) -> usize {
    let t0 = Instant::now();
    let mut c = client(t0, params(), psk);
    let mut s = server(t0, psk);
    let mut round_trips = 0;
    let mut to_server = Vec::new();
    let acc = loop {
        let (wire, other) = split_client(drain(&mut c));
        to_server.extend(wire);
        if let Some(ClientAction::Accepted(a)) = other.first() {
            break a.clone();
        }
        assert!(other.is_empty(), "{other:?}");
        let used = feed(&mut s, t0, &to_server, chunk);
        to_server.drain(..used);
        let (wire, other) = split_server(drain(&mut s));
        if let Some(ServerAction::Admit(p)) = other.first() {
            assert_eq!(**p, params());
            s.handle(
                t0,
                ServerEvent::Accept {
                    accepted: Box::new(acceptance()),
                    setup: Duration::ZERO,
                },
            )
            .unwrap();
        } else {
            assert!(other.is_empty(), "{other:?}");
        }
        let (more, _) = split_server(drain(&mut s));
        let wire = [wire, more].concat();
        assert!(!wire.is_empty(), "the server answers");
        round_trips += 1;
        assert_eq!(feed(&mut c, t0, &wire, chunk), wire.len());
    };
    assert_eq!(*acc, acceptance());
    assert_eq!(c.phase(), ClientPhase::Accepted);
    assert_eq!(
        c.read_limit(),
        0,
        "nothing is read while the data connections open"
    );
    s.handle(t0, ServerEvent::DataReady).unwrap();
    c.handle(t0, ClientEvent::DataReady).unwrap();
    let (wire, _) = split_client(drain(&mut c));
    assert_eq!(wire, bytes(&Msg::Start));
    feed(&mut s, t0, &wire, chunk);
    assert_eq!(drain(&mut s), [ServerAction::Start]);
    s.handle(t0, ServerEvent::Interval(&interval(1))).unwrap();
    let (wire, _) = split_server(drain(&mut s));
    feed(&mut c, t0, &wire, chunk);
    assert_eq!(drain(&mut c), [ClientAction::Remote(interval(1))]);
    c.handle(t0, ClientEvent::LocalDone).unwrap();
    let (wire, _) = split_client(drain(&mut c));
    feed(&mut s, t0, &wire, chunk);
    assert_eq!(drain(&mut s), [ServerAction::PeerDone]);
    s.handle(t0, ServerEvent::Finished(&results())).unwrap();
    let (wire, other) = split_server(drain(&mut s));
    assert_eq!(other, [ServerAction::Close(ServerEnd::Served)]);
    feed(&mut c, t0, &wire, chunk);
    assert_eq!(
        drain(&mut c),
        [ClientAction::Finished(Ok(Box::new(results())))]
    );
    assert_eq!(
        (c.phase(), s.phase()),
        (ClientPhase::Over, ServerPhase::Over)
    );
    round_trips
}

#[test]
fn a_whole_test_takes_two_round_trips_before_start_three_with_a_key() {
    for chunk in [1, 3, 7, 64, usize::MAX] {
        assert_eq!(whole_test(None, chunk), 2, "pieces of {chunk}");
        assert_eq!(whole_test(Some(KEY), chunk), 3, "pieces of {chunk}");
    }
}

/// The client's first answer: `server_hello`, or what says the peer is not a linerate server.
fn client_answered(wire: &[u8]) -> Vec<ClientAction> {
    let t0 = Instant::now();
    let mut c = client(t0, params(), None);
    drain(&mut c);
    assert_eq!(c.receive(t0, wire), wire.len());
    drain(&mut c)
}

fn failed(e: HandshakeError) -> Vec<ClientAction> {
    vec![ClientAction::Failed(e)]
}

#[test]
fn the_client_names_a_peer_that_is_not_a_linerate_server() {
    let t0 = Instant::now();
    // An iperf3 server's state byte: more is awaited a moment, then it is named.
    let mut c = client(t0, params(), None);
    drain(&mut c);
    assert_eq!(c.receive(t0, &[9]), 1);
    assert_eq!(c.deadline(), Some(t0 + client::STRANGER_WAIT));
    c.timeout(just_before(t0 + client::STRANGER_WAIT));
    assert!(drain(&mut c).is_empty(), "not yet");
    c.timeout(t0 + client::STRANGER_WAIT);
    assert_eq!(drain(&mut c), failed(HandshakeError::NotLinerate(vec![9])));
    // An HTTP server's status line: 32 bytes are enough.
    let http = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(
        client_answered(http),
        failed(HandshakeError::NotLinerate(http[..32].to_vec()))
    );
    // One that says a little and closes.
    let mut c = client(t0, params(), None);
    drain(&mut c);
    c.receive(t0, &[0xff]);
    c.gone(t0, Gone::Closed);
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::NotLinerate(vec![0xff]))
    );
    // A silent one, at the control timeout and not before.
    let mut c = client(t0, params(), None);
    drain(&mut c);
    c.timeout(just_before(t0 + CONTROL_TIMEOUT));
    assert!(drain(&mut c).is_empty());
    c.timeout(t0 + CONTROL_TIMEOUT);
    assert_eq!(drain(&mut c), failed(HandshakeError::Silent));
    // One that closes without a word.
    let mut c = client(t0, params(), None);
    drain(&mut c);
    c.gone(t0, Gone::Closed);
    assert_eq!(drain(&mut c), failed(HandshakeError::ClosedBeforeAnswer));
}

#[test]
fn the_client_refuses_a_wrong_server_hello() {
    let hello = |protocol, auth| Msg::ServerHello {
        protocol,
        version: "9.9".into(),
        auth,
        nonce: "n".into(),
    };
    assert_eq!(
        client_answered(&bytes(&hello(2, false))),
        failed(HandshakeError::OtherVersion {
            protocol: 2,
            version: "9.9".into()
        })
    );
    let e = Msg::Error {
        message: "no".into(),
    };
    assert_eq!(
        client_answered(&bytes(&e)),
        failed(HandshakeError::Server("no".into()))
    );
    assert_eq!(
        client_answered(&bytes(&Msg::Done)),
        failed(HandshakeError::Unexpected(Box::new(Msg::Done)))
    );
    // A server that asks for a key this end lacks; one that does not ask for the key it has.
    assert_eq!(
        client_answered(&bytes(&hello(1, true))),
        failed(HandshakeError::NeedsKey)
    );
    let t0 = Instant::now();
    let mut c = client(t0, params(), Some(KEY));
    drain(&mut c);
    c.receive(t0, &bytes(&hello(1, false)));
    assert_eq!(drain(&mut c), failed(HandshakeError::NoAuth));
    // Half a frame, then silence: the frame layer's words, after the control timeout from the
    // last byte.
    let mut c = client(t0, params(), None);
    drain(&mut c);
    let t1 = t0 + Duration::from_secs(3);
    c.receive(t1, &[0, 0, 0, 9, b'{']);
    c.timeout(t0 + CONTROL_TIMEOUT);
    assert!(drain(&mut c).is_empty(), "the wait moved with the byte");
    c.timeout(t1 + CONTROL_TIMEOUT);
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::Wire(
            "timed out waiting for the peer".into()
        ))
    );
    // A length over the client's limit, named (a first byte that is not 0 is a stranger's).
    let mut c = client_in_request(t0, params());
    c.receive(t0, &(crate::MAX_RESULTS_FRAME + 1).to_be_bytes());
    let [ClientAction::Failed(HandshakeError::Wire(e))] = &drain(&mut c)[..] else {
        panic!("refused");
    };
    assert!(e.contains("exceeds the limit of 16777216 bytes"), "{e}");
}

/// A client with a key, past `server_hello`.
fn client_in_auth(t0: Instant) -> ControlClient {
    let mut c = client(t0, params(), Some(KEY));
    drain(&mut c);
    let hello = Msg::ServerHello {
        protocol: 1,
        version: "1.2.3".into(),
        auth: true,
        nonce: "5eed".into(),
    };
    c.receive(t0, &bytes(&hello));
    let psk = Psk::from_bytes(KEY);
    assert_eq!(
        drain(&mut c),
        [ClientAction::Send(bytes(&Msg::Auth {
            proof: psk.client_proof("5eed", "c0ffee")
        }))]
    );
    assert_eq!(c.phase(), ClientPhase::Auth);
    c
}

#[test]
fn the_client_checks_the_servers_proof() {
    let t0 = Instant::now();
    let mut c = client_in_auth(t0);
    c.receive(
        t0,
        &bytes(&Msg::AuthOk {
            proof: Psk::from_bytes(b"another key, sixteen bytes").server_proof("c0ffee", "5eed"),
        }),
    );
    assert_eq!(drain(&mut c), failed(HandshakeError::BadProof));
    let mut c = client_in_auth(t0);
    c.receive(
        t0,
        &bytes(&Msg::Error {
            message: "authentication failed: wrong pre-shared key".into(),
        }),
    );
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::AuthRefused(
            "authentication failed: wrong pre-shared key".into()
        ))
    );
    let mut c = client_in_auth(t0);
    c.timeout(t0 + CONTROL_TIMEOUT);
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::Wire(
            "timed out waiting for the peer".into()
        ))
    );
}

/// A client past `server_hello` (no key), its request sent.
fn client_in_request(t0: Instant, p: TestParams) -> ControlClient {
    let mut c = client(t0, p.clone(), None);
    drain(&mut c);
    let hello = Msg::ServerHello {
        protocol: 1,
        version: "0.9.0".into(),
        auth: false,
        nonce: "5eed".into(),
    };
    c.receive(t0, &bytes(&hello));
    assert_eq!(
        drain(&mut c),
        [ClientAction::Send(bytes(&Msg::Request { params: p }))]
    );
    c
}

#[test]
fn the_client_reads_the_answer_to_its_request() {
    let t0 = Instant::now();
    let mut c = client_in_request(t0, params());
    let refused = Msg::Refused {
        reason: "server busy".into(),
        kind: RefusalKind::Busy,
    };
    c.receive(t0, &bytes(&refused));
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::Refused {
            kind: RefusalKind::Busy,
            reason: "server busy".into()
        })
    );
    // Closed on the request: the server's version is kept, to say why.
    let mut c = client_in_request(t0, params());
    c.gone(t0, Gone::Closed);
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::ClosedOnRequest {
            server_version: "0.9.0".into()
        })
    );
    let mut c = client_in_request(t0, params());
    c.gone(
        t0,
        Gone::Failed("Connection timed out (os error 110)".into()),
    );
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::Wire(
            "Connection timed out (os error 110)".into()
        ))
    );
    let mut c = client_in_request(t0, params());
    c.timeout(t0 + CONTROL_TIMEOUT);
    assert_eq!(
        drain(&mut c),
        failed(HandshakeError::Wire(
            "timed out waiting for the peer".into()
        ))
    );
    assert_eq!(
        c.handle(t0, ClientEvent::DataReady),
        Err(OutOfTurn {
            event: "data ready",
            phase: "after the conversation"
        })
    );
}

/// A client whose test runs (`start` sent at `t0`).
fn running_client(t0: Instant, p: TestParams) -> ControlClient {
    let mut c = client_in_request(t0, p);
    c.receive(t0, &bytes(&acceptance().into_msg()));
    assert!(matches!(drain(&mut c)[..], [ClientAction::Accepted(_)]));
    assert_eq!(
        c.handle(t0, ClientEvent::LocalDone),
        Err(OutOfTurn {
            event: "local done",
            phase: "while the data connections open"
        })
    );
    c.handle(t0, ClientEvent::DataReady).unwrap();
    assert_eq!(drain(&mut c), [ClientAction::Send(bytes(&Msg::Start))]);
    c
}

fn finished(e: ResultsError, abort: bool) -> Vec<ClientAction> {
    let mut v = Vec::new();
    if abort {
        v.push(ClientAction::Abort);
    }
    v.push(ClientAction::Finished(Err(e)));
    v
}

#[test]
fn the_client_bounds_what_the_server_sends_during_the_test() {
    let t0 = Instant::now();
    // An interval for streams the test does not have.
    let mut c = running_client(t0, params());
    c.receive(
        t0,
        &bytes(&Msg::Interval {
            sample: interval(3),
        }),
    );
    let e = ResultsError::BadInterval {
        got: 1,
        streams: 3,
        max: 2 * 2000 / 1000 + 10,
        connections: 1,
    };
    assert_eq!(
        e.to_string(),
        "protocol: the server sent 1 interval(s), the last for 3 streams; expected at most 14 for 1"
    );
    assert_eq!(drain(&mut c), finished(e, true));
    // More intervals than the test can have.
    let mut c = running_client(t0, params());
    let one = bytes(&Msg::Interval {
        sample: interval(1),
    });
    for _ in 0..14 {
        c.receive(t0, &one);
    }
    assert_eq!(drain(&mut c).len(), 14);
    c.receive(t0, &one);
    assert!(matches!(
        &drain(&mut c)[..],
        [
            ClientAction::Abort,
            ClientAction::Finished(Err(ResultsError::BadInterval { got: 15, .. }))
        ]
    ));
    // Soak samples: only in a soak, marked remote, and bounded.
    let sample = SoakSample {
        end: End::Local,
        seq: 0,
        t_s: 0.0,
        ports: Vec::new(),
        tcp_retrans_segs: None,
        tcp_out_segs: None,
        bytes_sent: 0,
        bytes_received: 0,
        problems: Vec::new(),
        host: Vec::new(),
    };
    let soak_msg = bytes(&Msg::SoakSample {
        sample: sample.clone(),
    });
    let mut c = running_client(t0, params());
    c.receive(t0, &soak_msg);
    assert!(drain(&mut c).is_empty(), "not a soak: ignored");
    let mut p = params();
    p.soak = true;
    let mut c = running_client(t0, p);
    for _ in 0..15 {
        c.receive(t0, &soak_msg);
    }
    let got = drain(&mut c);
    assert_eq!(got.len(), 15);
    let ClientAction::RemoteSoak(s) = &got[0] else {
        panic!("{got:?}")
    };
    assert_eq!(s.end, End::Remote);
    c.receive(t0, &soak_msg);
    assert_eq!(
        drain(&mut c),
        finished(ResultsError::TooManySoakSamples { got: 16, max: 15 }, true)
    );
    // The server's error, and its going away, stop this end's streams.
    let mut c = running_client(t0, params());
    c.receive(
        t0,
        &bytes(&Msg::Error {
            message: "disk full".into(),
        }),
    );
    assert_eq!(
        drain(&mut c),
        finished(ResultsError::Reported("disk full".into()), true)
    );
    let mut c = running_client(t0, params());
    c.receive(t0, &[0, 0, 1]);
    c.gone(t0, Gone::Closed);
    assert_eq!(
        drain(&mut c),
        finished(
            ResultsError::Lost("frame truncated: the peer closed after 3 of 4 bytes".into()),
            true
        )
    );
    // `done` goes out whatever the server said.
    c.handle(t0, ClientEvent::LocalDone).unwrap();
    assert_eq!(drain(&mut c), [ClientAction::Send(bytes(&Msg::Done))]);
    assert!(c.handle(t0, ClientEvent::LocalDone).is_err(), "once");
}

#[test]
fn the_client_waits_for_results_until_the_test_and_its_grace_are_over() {
    let t0 = Instant::now();
    let mut c = running_client(t0, params());
    let limit = t0 + Duration::from_millis(2000) + GRACE + CONTROL_TIMEOUT;
    assert_eq!(c.deadline(), Some(limit));
    c.handle(t0, ClientEvent::LocalDone).unwrap();
    drain(&mut c);
    assert_eq!(c.deadline(), Some(limit), "done does not move it");
    c.timeout(just_before(limit));
    assert!(drain(&mut c).is_empty());
    c.timeout(limit);
    assert_eq!(drain(&mut c), finished(ResultsError::NotInTime, false));
}

#[test]
fn an_rdma_client_reads_nothing_but_results_after_done() {
    let t0 = Instant::now();
    let mut p = params();
    p.kind = TestKind::Rdma;
    let mut c = running_client(t0, p.clone());
    assert_eq!(
        (c.read_limit(), c.deadline()),
        (0, None),
        "nothing read while it runs"
    );
    let t1 = t0 + Duration::from_secs(4);
    c.handle(t1, ClientEvent::LocalDone).unwrap();
    assert_eq!(drain(&mut c), [ClientAction::Send(bytes(&Msg::Done))]);
    assert_eq!(c.deadline(), Some(t1 + GRACE + CONTROL_TIMEOUT));
    c.receive(
        t1,
        &bytes(&Msg::Interval {
            sample: interval(1),
        }),
    );
    assert_eq!(
        drain(&mut c),
        finished(ResultsError::Expected("interval"), false)
    );
    let mut c = running_client(t0, p.clone());
    c.handle(t1, ClientEvent::LocalDone).unwrap();
    drain(&mut c);
    c.timeout(t1 + GRACE + CONTROL_TIMEOUT);
    assert_eq!(
        drain(&mut c),
        finished(
            ResultsError::Lost("timed out waiting for the peer".into()),
            false
        )
    );
    let mut c = running_client(t0, p);
    c.handle(t1, ClientEvent::LocalDone).unwrap();
    drain(&mut c);
    c.receive(t1, &bytes(&Msg::Results { results: results() }));
    assert_eq!(
        drain(&mut c),
        [ClientAction::Finished(Ok(Box::new(results())))]
    );
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// A server's actions on its first bytes `wire`.
fn server_on(wire: &[u8]) -> (Vec<u8>, Vec<ServerAction>) {
    let t0 = Instant::now();
    let mut s = server(t0, None);
    feed(&mut s, t0, wire, usize::MAX);
    split_server(drain(&mut s))
}

fn refused_end(reason: &str) -> ServerAction {
    ServerAction::Close(ServerEnd::Refused {
        reason: reason.into(),
        params: None,
    })
}

fn hello(magic: &str, protocol: u32, nonce: &str) -> Msg {
    Msg::Hello {
        magic: magic.into(),
        protocol,
        version: "0.9.0".into(),
        nonce: nonce.into(),
    }
}

fn error(message: &str) -> Vec<u8> {
    bytes(&Msg::Error {
        message: message.into(),
    })
}

#[test]
fn the_server_takes_a_data_connection_s_first_frame_and_nothing_more() {
    let t0 = Instant::now();
    let mut s = server(t0, None);
    let mut wire = bytes(&Msg::DataHello {
        cookie: "c00c1e".into(),
        stream: 3,
    });
    assert_eq!(s.read_limit(), 4, "the length first");
    let frame_len = wire.len();
    wire.extend_from_slice(b"the test's data");
    assert_eq!(feed(&mut s, t0, &wire, usize::MAX), frame_len);
    assert_eq!(
        drain(&mut s),
        [ServerAction::Data {
            cookie: "c00c1e".into(),
            stream: 3
        }]
    );
    assert_eq!((s.phase(), s.read_limit()), (ServerPhase::Data, 0));
    s.handle(t0, ServerEvent::NoSuchTest).unwrap();
    assert_eq!(
        split_server(drain(&mut s)),
        (
            error("unknown test cookie"),
            vec![ServerAction::Close(ServerEnd::Quiet)]
        )
    );
}

#[test]
fn the_server_refuses_a_wrong_first_frame() {
    assert_eq!(
        server_on(&bytes(&hello("iperf3", 1, "00"))),
        (
            error("not a linerate client"),
            vec![refused_end("bad magic")]
        )
    );
    let (wire, end) = server_on(&bytes(&hello("linerate", 999, "00")));
    let message = "protocol version 999 (linerate 0.9.0) is not supported: this server (linerate 1.2.3) speaks version 1; use matching linerate versions";
    assert_eq!((wire, end), (error(message), vec![refused_end(message)]));
    assert_eq!(
        server_on(&bytes(&hello("linerate", 1, &"a".repeat(129)))),
        (Vec::new(), vec![ServerAction::Close(ServerEnd::Quiet)])
    );
    assert_eq!(
        server_on(&bytes(&Msg::Start)),
        (
            error("expected hello"),
            vec![refused_end("unexpected first message start")]
        )
    );
    let dropped = |why: &str| {
        (
            Vec::new(),
            vec![ServerAction::Close(ServerEnd::Dropped(why.into()))],
        )
    };
    let mut over = (MAX_CONTROL_FRAME + 1).to_be_bytes().to_vec();
    over.extend_from_slice(b"{}");
    assert_eq!(
        server_on(&over),
        dropped("frame of 65537 bytes exceeds the limit of 65536 bytes (not a linerate peer, or a hostile one)")
    );
    let mut junk = 3u32.to_be_bytes().to_vec();
    junk.extend_from_slice(b"{x}");
    let (wire, end) = server_on(&junk);
    assert!(wire.is_empty());
    assert!(
        matches!(&end[..], [ServerAction::Close(ServerEnd::Dropped(e))] if e.starts_with("malformed message: ")),
        "{end:?}"
    );
    // Silent, cut short, gone: at the deadline and not before.
    let t0 = Instant::now();
    let mut s = server(t0, None);
    s.receive(t0, &[0, 0, 0, 40, b'{']);
    s.timeout(just_before(t0 + HANDSHAKE_TIMEOUT));
    assert!(drain(&mut s).is_empty());
    s.timeout(t0 + HANDSHAKE_TIMEOUT);
    assert_eq!(
        split_server(drain(&mut s)),
        dropped("timed out waiting for the peer")
    );
    let mut s = server(t0, None);
    s.receive(t0, &[0, 0, 0, 40, b'{']);
    s.gone(t0, Gone::Closed);
    assert_eq!(
        split_server(drain(&mut s)),
        dropped("frame truncated: the peer closed after 1 of 40 bytes")
    );
    let mut s = server(t0, None);
    s.gone(t0, Gone::Closed);
    assert_eq!(
        split_server(drain(&mut s)),
        dropped("connection closed by the peer")
    );
}

/// A server past the client's hello: `server_hello` went out.
fn server_after_hello(t0: Instant, psk: Option<&[u8]>) -> ControlServer {
    let mut s = server(t0, psk);
    feed(
        &mut s,
        t0,
        &bytes(&hello("linerate", 1, "c0ffee")),
        usize::MAX,
    );
    let (wire, other) = split_server(drain(&mut s));
    assert!(other.is_empty());
    assert_eq!(
        wire,
        bytes(&Msg::ServerHello {
            protocol: 1,
            version: "1.2.3".into(),
            auth: psk.is_some(),
            nonce: "5eed".into()
        })
    );
    s
}

#[test]
fn the_server_answers_a_wrong_proof_after_a_delay() {
    let t0 = Instant::now();
    let psk = Psk::from_bytes(KEY);
    let mut s = server_after_hello(t0, Some(KEY));
    assert_eq!(s.phase(), ServerPhase::Auth);
    s.receive(
        t0,
        &bytes(&Msg::Auth {
            proof: psk.client_proof("5eed", "c0ffee"),
        }),
    );
    assert_eq!(
        drain(&mut s),
        [ServerAction::Send(bytes(&Msg::AuthOk {
            proof: psk.server_proof("c0ffee", "5eed")
        }))]
    );
    assert_eq!(s.phase(), ServerPhase::Request);
    // A proof for another nonce, and a message that is no proof: the same delay, then the error.
    for wrong in [
        Msg::Auth {
            proof: psk.client_proof("5eed", "another"),
        },
        Msg::Request { params: params() },
    ] {
        let mut s = server_after_hello(t0, Some(KEY));
        let t1 = t0 + Duration::from_millis(30);
        s.receive(t1, &bytes(&wrong));
        assert_eq!((drain(&mut s), s.read_limit()), (vec![], 0));
        assert_eq!(s.deadline(), Some(t1 + AUTH_FAILURE_DELAY));
        s.timeout(just_before(t1 + AUTH_FAILURE_DELAY));
        assert!(drain(&mut s).is_empty());
        s.timeout(t1 + AUTH_FAILURE_DELAY);
        assert_eq!(
            split_server(drain(&mut s)),
            (
                error("authentication failed: wrong pre-shared key"),
                vec![ServerAction::Close(ServerEnd::AuthFailed)]
            )
        );
    }
    let mut s = server_after_hello(t0, Some(KEY));
    s.timeout(t0 + HANDSHAKE_TIMEOUT);
    assert_eq!(
        drain(&mut s),
        [ServerAction::Close(ServerEnd::Dropped(
            "during authentication: timed out waiting for the peer".into()
        ))]
    );
}

#[test]
fn the_server_checks_the_request() {
    let t0 = Instant::now();
    let mut s = server_after_hello(t0, None);
    let mut p = params();
    p.streams = 0;
    s.receive(t0, &bytes(&Msg::Request { params: p.clone() }));
    let (wire, end) = split_server(drain(&mut s));
    let Msg::Refused { reason, kind } = crate::decode(&wire[4..]).unwrap() else {
        panic!("refused")
    };
    assert_eq!(kind, RefusalKind::InvalidParams);
    assert_eq!(
        end,
        [ServerAction::Close(ServerEnd::Refused {
            reason,
            params: Some(Box::new(p))
        })]
    );
    // Fitted to the limits before it is checked.
    let mut s = server_after_hello(t0, None);
    let mut p = TestParams::new(TestKind::TcpLat, Direction::Send);
    p.spin_us = Some(crate::defaults::MAX_SPIN_US);
    s.receive(t0, &bytes(&Msg::Request { params: p.clone() }));
    let [ServerAction::Admit(admitted)] = &drain(&mut s)[..] else {
        panic!("admitted")
    };
    assert_eq!(admitted.spin_us, Some(Limits::default().max_spin_us));
    assert_eq!(
        (s.phase(), s.deadline(), s.read_limit()),
        (ServerPhase::Admit, None, 0)
    );
    s.handle(
        t0,
        ServerEvent::Refuse(Refusal::new(RefusalKind::Busy, "server busy")),
    )
    .unwrap();
    let (wire, end) = split_server(drain(&mut s));
    assert_eq!(
        wire,
        bytes(&Msg::Refused {
            reason: "server busy".into(),
            kind: RefusalKind::Busy
        })
    );
    assert!(matches!(
        &end[..],
        [ServerAction::Close(ServerEnd::Refused {
            params: Some(_),
            ..
        })]
    ));
    // Anything but a request.
    let mut s = server_after_hello(t0, None);
    s.receive(t0, &bytes(&Msg::Done));
    assert_eq!(
        split_server(drain(&mut s)),
        (
            error("expected request, got done"),
            vec![ServerAction::Close(ServerEnd::Quiet)]
        )
    );
    let mut s = server_after_hello(t0, None);
    s.gone(t0, Gone::Closed);
    assert_eq!(
        drain(&mut s),
        [ServerAction::Close(ServerEnd::Dropped(
            "waiting for a request: connection closed by the peer".into()
        ))]
    );
}

/// A server whose test is accepted at `t0` after `setup`; the bytes after the request are
/// `after` (the client's `start`, sent before the data connections were all collected).
fn accepted_server(t0: Instant, setup: Duration) -> ControlServer {
    let mut s = server_after_hello(t0, None);
    s.receive(t0, &bytes(&Msg::Request { params: params() }));
    assert!(matches!(drain(&mut s)[..], [ServerAction::Admit(_)]));
    s.handle(
        t0,
        ServerEvent::Accept {
            accepted: Box::new(acceptance()),
            setup,
        },
    )
    .unwrap();
    assert_eq!(
        drain(&mut s),
        [ServerAction::Send(bytes(&acceptance().into_msg()))]
    );
    assert_eq!((s.phase(), s.read_limit()), (ServerPhase::Collect, 0));
    s
}

#[test]
fn the_server_waits_for_start_until_the_handshake_deadline() {
    let t0 = Instant::now();
    let mut s = accepted_server(t0, Duration::ZERO);
    // `start` came while the data connections did: it waits with the caller.
    let start = bytes(&Msg::Start);
    assert_eq!(s.receive(t0, &start), 0);
    s.handle(t0, ServerEvent::DataReady).unwrap();
    assert_eq!(s.receive(t0, &start), start.len());
    assert_eq!(drain(&mut s), [ServerAction::Start]);
    assert_eq!((s.phase(), s.deadline()), (ServerPhase::Running, None));

    let mut s = accepted_server(t0, Duration::ZERO);
    s.handle(
        t0,
        ServerEvent::DataFailed("only 1 of 2 data connections arrived".into()),
    )
    .unwrap();
    assert_eq!(
        split_server(drain(&mut s)),
        (
            error("only 1 of 2 data connections arrived"),
            vec![ServerAction::Close(ServerEnd::NotStarted(
                "only 1 of 2 data connections arrived".into()
            ))]
        )
    );
    // The server's own setup moves the deadline.
    let setup = Duration::from_secs(2);
    let mut s = accepted_server(t0, setup);
    s.handle(t0, ServerEvent::DataReady).unwrap();
    assert_eq!(s.deadline(), Some(t0 + HANDSHAKE_TIMEOUT + setup));
    assert_eq!(s.handshake_deadline(), t0 + HANDSHAKE_TIMEOUT + setup);
    s.timeout(t0 + HANDSHAKE_TIMEOUT);
    assert!(drain(&mut s).is_empty());
    s.timeout(t0 + HANDSHAKE_TIMEOUT + setup);
    assert_eq!(
        drain(&mut s),
        [ServerAction::Close(ServerEnd::NotStarted(
            "expected start: timed out waiting for the peer".into()
        ))]
    );
    let mut s = accepted_server(t0, Duration::ZERO);
    s.handle(t0, ServerEvent::DataReady).unwrap();
    s.receive(t0, &bytes(&Msg::Done));
    assert_eq!(
        drain(&mut s),
        [ServerAction::Close(ServerEnd::NotStarted(
            "expected start, got done".into()
        ))]
    );
}

fn running_server(t0: Instant) -> ControlServer {
    let mut s = accepted_server(t0, Duration::ZERO);
    s.handle(t0, ServerEvent::DataReady).unwrap();
    s.receive(t0, &bytes(&Msg::Start));
    assert_eq!(drain(&mut s), [ServerAction::Start]);
    s
}

#[test]
fn the_server_stops_a_test_whose_client_goes_away() {
    let t0 = Instant::now();
    let mut s = running_server(t0);
    s.receive(t0, &bytes(&Msg::Start));
    assert_eq!(
        drain(&mut s),
        [ServerAction::PeerGone(
            "the client sent start during the test".into()
        )]
    );
    assert_eq!((s.phase(), s.read_limit()), (ServerPhase::Ending, 0));
    let mut s = running_server(t0);
    s.gone(t0, Gone::Closed);
    assert_eq!(
        drain(&mut s),
        [ServerAction::PeerGone(
            "connection closed by the peer".into()
        )]
    );
    // Its intervals still go out, and its results; a soak's samples only in a soak.
    s.handle(t0, ServerEvent::Interval(&interval(1))).unwrap();
    let sample = SoakSample {
        end: End::Local,
        seq: 0,
        t_s: 0.0,
        ports: Vec::new(),
        tcp_retrans_segs: None,
        tcp_out_segs: None,
        bytes_sent: 0,
        bytes_received: 0,
        problems: Vec::new(),
        host: Vec::new(),
    };
    assert_eq!(
        s.handle(t0, ServerEvent::SoakSample(&sample)),
        Err(OutOfTurn {
            event: "soak sample",
            phase: "while the test ends"
        })
    );
    s.handle(t0, ServerEvent::Finished(&results())).unwrap();
    let (wire, end) = split_server(drain(&mut s));
    assert_eq!(
        wire,
        [
            bytes(&Msg::Interval {
                sample: interval(1)
            }),
            bytes(&Msg::Results { results: results() })
        ]
        .concat()
    );
    assert_eq!(end, [ServerAction::Close(ServerEnd::Served)]);
    assert!(s.handle(t0, ServerEvent::DataReady).is_err());
}
