//! The properties the fuzz targets check. One copy serves both the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and the stable regression test
//! `crates/linerate-proto/tests/fuzz_seeds.rs`, which includes this file with `#[path]`, so a seed
//! or a minimised crash is checked the same way under libFuzzer and under `cargo test`.
//!
//! Keep this file to `linerate_proto`, `serde_json` and `std`: the regression test has no other
//! dependency.

use std::mem::discriminant;
use std::time::{Duration, Instant};

use linerate_proto::session::{
    Acceptance, ClientAction, ClientEvent, ClientPhase, ClientSetup, ControlClient, ControlServer,
    Gone, ServerAction, ServerEnd, ServerEvent, ServerPhase, ServerSetup, Session,
};
use linerate_proto::{
    decode, read_frame, read_msg, write_msg, Direction, FrameAssembler, FrameError, IntervalSample,
    Limits, Msg, Psk, Refusal, RefusalKind, SideResults, TestKind, TestParams, MAX_CONTROL_FRAME,
    MAX_RESULTS_FRAME,
};

/// `data` as the bytes a server reads from a control connection: a sequence of frames, each read
/// with the server's limit, [`MAX_CONTROL_FRAME`]. Returns the messages that decoded.
///
/// Checked, frame after frame until the first frame error:
/// - the incremental decoder agrees with the blocking reader whatever the pieces the bytes come
///   in ([`check_assembler`]);
/// - reading and decoding never panic;
/// - the frame layer takes exactly its 4-byte length and that many body bytes, never more than the
///   limit, and its errors say what happened (closed only at a frame boundary, truncated only
///   short of the length, too large only above the limit);
/// - `read_msg` agrees with `read_frame`: the same error, or the same frame, then either a message
///   or `Malformed`;
/// - every decoded message re-encodes with `write_msg`, decodes back equal, and re-encodes to the
///   same bytes (see [`check_roundtrip`]).
pub fn check_decode_frame(data: &[u8]) -> Vec<Msg> {
    check_assembler(data);
    let mut decoded = Vec::new();
    let mut at = data;
    loop {
        let mut frame_rest = at;
        let frame = read_frame(&mut frame_rest, MAX_CONTROL_FRAME);
        let mut msg_rest = at;
        let msg = read_msg(&mut msg_rest, MAX_CONTROL_FRAME);
        match frame {
            Ok(body) => {
                let len = u32::from_be_bytes(at[..4].try_into().expect("4 bytes were read"));
                assert!(
                    len <= MAX_CONTROL_FRAME,
                    "frame of {len} bytes was accepted"
                );
                let len = usize::try_from(len).expect("u32 fits usize");
                assert_eq!(body.as_slice(), &at[4..4 + len], "frame body");
                assert_eq!(frame_rest.len(), at.len() - 4 - len, "bytes consumed");
                assert_eq!(msg_rest.len(), frame_rest.len(), "read_msg consumed");
                match msg {
                    Ok(m) => {
                        check_roundtrip(&m);
                        decoded.push(m);
                    }
                    Err(FrameError::Malformed(_)) => {}
                    Err(e) => panic!("read_frame read a frame but read_msg failed with {e:?}"),
                }
                at = frame_rest;
            }
            Err(e) => {
                match &e {
                    FrameError::Closed => assert!(at.is_empty(), "closed with {} bytes", at.len()),
                    FrameError::Truncated { got, len: 4 } if at.len() < 4 => {
                        assert_eq!(*got, at.len(), "length prefix bytes got");
                    }
                    FrameError::Truncated { got, len } => {
                        assert!(at.len() >= 4, "{e:?} with {} bytes", at.len());
                        assert_eq!(*got, at.len() - 4, "body bytes got");
                        assert!(
                            *got < usize::try_from(*len).expect("u32 fits usize"),
                            "{e:?}"
                        );
                    }
                    FrameError::TooLarge { len, max } => {
                        assert_eq!(*max, MAX_CONTROL_FRAME);
                        assert!(len > max, "{e:?}");
                    }
                    FrameError::Malformed(_) | FrameError::Timeout | FrameError::Io(_) => {
                        panic!("read_frame on a byte slice failed with {e:?}");
                    }
                }
                let Err(m) = msg else {
                    panic!("read_frame failed with {e:?} but read_msg decoded a message");
                };
                assert_eq!(discriminant(&e), discriminant(&m), "{e:?} vs {m:?}");
                return decoded;
            }
        }
    }
}

/// A decoded message survives the wire: `write_msg` encodes it, `read_msg` decodes that back to an
/// equal message, and encoding the result gives the same bytes again.
///
/// The re-encoded frame is read with [`MAX_RESULTS_FRAME`], the largest limit any reader uses:
/// the encoder does not promise to reproduce the sender's (possibly shorter) spelling, only the
/// message.
pub fn check_roundtrip(m: &Msg) {
    let mut wire = Vec::new();
    write_msg(&mut wire, m).unwrap_or_else(|e| panic!("{m:?} does not encode: {e}"));
    let len = u32::from_be_bytes(wire[..4].try_into().expect("a 4-byte length prefix"));
    assert_eq!(
        usize::try_from(len).expect("u32 fits usize"),
        wire.len() - 4,
        "length prefix"
    );
    let mut r = wire.as_slice();
    let back = read_msg(&mut r, MAX_RESULTS_FRAME).unwrap_or_else(|e| {
        panic!(
            "{m:?} encodes as {} which does not decode: {e}",
            String::from_utf8_lossy(&wire[4..])
        )
    });
    assert!(r.is_empty(), "bytes left after the re-encoded frame");
    assert_eq!(
        &back,
        m,
        "the message changed on a round trip through {}",
        String::from_utf8_lossy(&wire[4..])
    );
    let mut again = Vec::new();
    write_msg(&mut again, &back).expect("it encoded once");
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(&wire),
        "encoding is not stable"
    );
}

/// The worst-case server memory of a test the limits `l` accept: every stream at the longest
/// length, both directions (`server_memory_bytes` charges at least 64 KiB a connection).
pub fn memory_bound(l: &Limits) -> u64 {
    u64::from(l.max_streams) * 2 * u64::from(l.max_length.max(64 * 1024))
}

/// `data` as the `params` of a client's Request, checked against the default limits. Returns
/// `None` when it is not a `TestParams` document, else whether the limits accept it.
///
/// Checked: `validate` never panics; an accepted test has at least one connection and holds at most
/// [`memory_bound`] bytes (64 streams × 2 directions × 1 MiB with the defaults); a refusal says
/// why; the parameters survive a JSON round trip.
pub fn check_validate_params(data: &[u8]) -> Option<bool> {
    let p: TestParams = serde_json::from_slice(data).ok()?;
    let l = Limits::default();
    let verdict = p.validate(&l);
    match &verdict {
        Ok(()) => {
            let memory = p.server_memory_bytes();
            let bound = memory_bound(&l);
            assert!(
                memory <= bound,
                "{p:?} was accepted holding {memory} bytes, above the bound of {bound}"
            );
            assert!(
                p.connections() >= 1,
                "{p:?} was accepted with no connection"
            );
        }
        Err(refusal) => assert!(!refusal.reason.is_empty(), "{p:?} refused without a reason"),
    }
    let text = serde_json::to_vec(&p).unwrap_or_else(|e| panic!("{p:?} does not encode: {e}"));
    let back: TestParams = serde_json::from_slice(&text).unwrap_or_else(|e| {
        panic!(
            "{p:?} encodes as {} which does not decode: {e}",
            String::from_utf8_lossy(&text)
        )
    });
    assert_eq!(back, p, "parameters changed on a JSON round trip");
    Some(verdict.is_ok())
}

/// `data` in pieces of 1, 7 and all of it through [`FrameAssembler`]: the same frames as
/// [`read_frame`] reads, the same error at the end, never more held than the frame's limit.
pub fn check_assembler(data: &[u8]) {
    let mut blocking = Vec::new();
    let mut r = data;
    let blocking_end = loop {
        match read_frame(&mut r, MAX_CONTROL_FRAME) {
            Ok(body) => blocking.push(body),
            Err(e) => break e,
        }
    };
    for chunk in [1, 7, data.len().max(1)] {
        let mut a = FrameAssembler::new(MAX_CONTROL_FRAME);
        let mut frames = Vec::new();
        let mut failed = None;
        'pieces: for piece in data.chunks(chunk) {
            let mut rest = piece;
            while !rest.is_empty() {
                match a.push(rest) {
                    Ok((used, body)) => {
                        assert!(used <= rest.len(), "took {used} of {}", rest.len());
                        assert!(used > 0 || body.is_some(), "took nothing");
                        rest = &rest[used..];
                        frames.extend(body);
                    }
                    Err(e) => {
                        failed = Some(e);
                        break 'pieces;
                    }
                }
                assert!(
                    a.held() <= 4 + MAX_CONTROL_FRAME as usize,
                    "holds {} bytes",
                    a.held()
                );
            }
        }
        let end = failed.unwrap_or_else(|| a.closed());
        assert_eq!(frames, blocking, "the same frames in pieces of {chunk}");
        assert_eq!(
            discriminant(&end),
            discriminant(&blocking_end),
            "{end:?} vs {blocking_end:?} in pieces of {chunk}"
        );
        assert_eq!(end.to_string(), blocking_end.to_string());
    }
}

/// Every frame of `bytes` a session said to send decodes: it says what the protocol says.
fn check_sent(bytes: &[u8]) {
    let mut a = FrameAssembler::new(MAX_RESULTS_FRAME);
    let mut rest = bytes;
    assert!(!rest.is_empty(), "an empty send");
    while !rest.is_empty() {
        let (used, body) = a
            .push(rest)
            .expect("a session sends frames within the limit");
        rest = &rest[used..];
        if let Some(body) = body {
            decode(&body).unwrap_or_else(|e| panic!("a session sent what does not decode: {e}"));
        }
    }
    assert!(
        matches!(a.closed(), FrameError::Closed),
        "a session sent part of a frame"
    );
}

/// What a fuzz script does to a session, one op at a time: bytes from the peer, time passing,
/// the peer gone, or an event of its own end (`events` of them, chosen by the op).
enum Op<'a> {
    Bytes(&'a [u8]),
    Wait(Duration),
    Closed,
    Failed,
    Event(u8),
}

/// `data` as a script: a first byte that sets the session up, then ops. An op byte `b`:
/// `b % (4 + events)` is 0: bytes from the peer (the next byte says how many, 0: the rest);
/// 1: the next byte × 10 ms pass and the timer is looked at; 2: the peer closed; 3: reading
/// failed; 4 and above: the session's own event number `b % (4 + events) - 4`.
fn script(data: &[u8], events: u8) -> (u8, Vec<Op<'_>>) {
    let Some((&setup, mut rest)) = data.split_first() else {
        return (0, Vec::new());
    };
    let mut ops = Vec::new();
    while let Some((&b, after)) = rest.split_first() {
        rest = after;
        match b % (4 + events) {
            0 => {
                let n = match rest.split_first() {
                    Some((&0, after)) => {
                        rest = after;
                        rest.len()
                    }
                    Some((&n, after)) => {
                        rest = after;
                        usize::from(n).min(rest.len())
                    }
                    None => 0,
                };
                ops.push(Op::Bytes(&rest[..n]));
                rest = &rest[n..];
            }
            1 => {
                let n = rest.first().copied().unwrap_or(0);
                rest = rest.get(1..).unwrap_or_default();
                ops.push(Op::Wait(Duration::from_millis(10 * u64::from(n))));
            }
            2 => ops.push(Op::Closed),
            3 => ops.push(Op::Failed),
            k => ops.push(Op::Event(k - 4)),
        }
    }
    (setup, ops)
}

/// The peer's bytes given to `s` as a driver does: at most its read limit at a time, the rest
/// kept until it takes more (after an event of its end).
fn give<S: Session>(s: &mut S, now: Instant, pending: &mut Vec<u8>) {
    loop {
        let n = s.read_limit().min(pending.len());
        if n == 0 {
            return;
        }
        let used = s.receive(now, &pending[..n]);
        assert!(used <= n, "took {used} of {n}");
        pending.drain(..used);
        if used == 0 {
            return;
        }
    }
}

const KEY: &[u8] = b"the fuzz key, sixteen bytes and more";

/// What the client takes from a script's setup byte: a key (bit 0), a soak (bit 1), an RDMA
/// test (bit 2), streams (bits 4-5).
fn client_setup(setup: u8) -> ClientSetup {
    let kind = if setup & 4 == 0 {
        TestKind::TcpBw
    } else {
        TestKind::Rdma
    };
    let mut params = TestParams::new(kind, Direction::Send);
    params.duration_ms = 2000;
    params.soak = setup & 2 != 0;
    params.streams = 1 + u32::from(setup >> 4 & 3);
    ClientSetup {
        params,
        psk: (setup & 1 != 0).then(|| Psk::from_bytes(KEY)),
        nonce: "c0ffee".into(),
        version: "fuzz".into(),
    }
}

/// A script against a client's conversation: it never panics, holds no more than a frame, its
/// sends are frames that decode, each end is said once and named, and after it nothing but the
/// `done` it still owes. Returns how it ended: the server's results, the words of why not, or
/// `None` while it goes on.
pub fn check_client_session(data: &[u8]) -> Option<Result<(), String>> {
    let (setup, ops) = script(data, 2);
    let t0 = Instant::now();
    let mut now = t0;
    let mut c = ControlClient::new(now, client_setup(setup));
    let mut pending = Vec::new();
    let mut over = false;
    let mut end = None;
    for op in ops {
        match op {
            Op::Bytes(b) => {
                pending.extend_from_slice(b);
                give(&mut c, now, &mut pending);
            }
            Op::Wait(d) => {
                now += d;
                c.timeout(now);
            }
            Op::Closed => c.gone(now, Gone::Closed),
            Op::Failed => c.gone(now, Gone::Failed("Connection reset by peer".into())),
            Op::Event(k) => {
                let ev = if k == 0 {
                    ClientEvent::DataReady
                } else {
                    ClientEvent::LocalDone
                };
                if let Err(e) = c.handle(now, ev) {
                    assert!(!e.to_string().is_empty());
                }
                give(&mut c, now, &mut pending);
            }
        }
        let mut actions = 0;
        while let Some(a) = c.poll() {
            actions += 1;
            match a {
                ClientAction::Send(b) => check_sent(&b),
                ClientAction::Failed(e) => {
                    assert!(!over, "a second end: {e}");
                    assert!(!e.to_string().is_empty());
                    over = true;
                    end = Some(Err(e.to_string()));
                }
                ClientAction::Finished(r) => {
                    assert!(!over, "a second end: {r:?}");
                    if let Err(e) = &r {
                        assert!(!e.to_string().is_empty());
                    }
                    over = true;
                    end = Some(r.map(|_| ()).map_err(|e| e.to_string()));
                }
                ClientAction::Accepted(_)
                | ClientAction::Remote(_)
                | ClientAction::RemoteSoak(_)
                | ClientAction::Abort => assert!(!over, "{a:?} after the end"),
            }
        }
        assert!(actions <= 4 + data.len(), "{actions} actions from one op");
        assert_eq!(over, c.phase() == ClientPhase::Over, "{:?}", c.phase());
        assert!(
            c.held() <= 4 + MAX_RESULTS_FRAME as usize + 64,
            "holds {} bytes",
            c.held()
        );
    }
    end
}

/// What the server's own events carry in a fuzz script.
struct ServerFixtures {
    sample: IntervalSample,
    soak: linerate_proto::soak::SoakSample,
    results: SideResults,
}

impl ServerFixtures {
    fn new() -> ServerFixtures {
        ServerFixtures {
            sample: IntervalSample {
                start_s: 0.0,
                end_s: 1.0,
                bytes: vec![1],
                ..IntervalSample::default()
            },
            soak: linerate_proto::soak::SoakSample {
                end: linerate_proto::soak::End::Local,
                seq: 0,
                t_s: 0.0,
                ports: Vec::new(),
                tcp_retrans_segs: None,
                tcp_out_segs: None,
                bytes_sent: 0,
                bytes_received: 0,
                problems: Vec::new(),
                host: Vec::new(),
            },
            results: SideResults::default(),
        }
    }

    /// The server's event number `k`.
    fn event(&self, k: u8) -> ServerEvent<'_> {
        match k {
            0 => ServerEvent::NoSuchTest,
            1 => ServerEvent::Accept {
                accepted: Box::new(Acceptance {
                    test_id: 1,
                    cookie: "c00c1e".into(),
                    udp_port: None,
                    memory_bytes: 1 << 20,
                    inventory: None,
                    rdma: None,
                    listen_port: None,
                }),
                setup: Duration::from_millis(10),
            },
            2 => ServerEvent::Refuse(Refusal::new(RefusalKind::Busy, "server busy")),
            3 => ServerEvent::DataReady,
            4 => ServerEvent::DataFailed("only 0 of 1 data connections arrived".into()),
            5 => ServerEvent::Interval(&self.sample),
            6 => ServerEvent::SoakSample(&self.soak),
            _ => ServerEvent::Finished(&self.results),
        }
    }
}

/// The server's actions after one op: a few at most, whole frames sent, one end, named, and
/// nothing after it.
fn check_server_actions(s: &mut ControlServer, ended: &mut Option<ServerEnd>) {
    let mut actions = 0;
    while let Some(a) = s.poll() {
        actions += 1;
        assert!(ended.is_none(), "{a:?} after the end");
        match a {
            ServerAction::Send(b) => check_sent(&b),
            ServerAction::Close(end) => {
                match &end {
                    ServerEnd::Dropped(why) | ServerEnd::NotStarted(why) => {
                        assert!(!why.is_empty());
                    }
                    ServerEnd::Refused { reason, .. } => assert!(!reason.is_empty()),
                    ServerEnd::AuthFailed | ServerEnd::Quiet | ServerEnd::Served => {}
                }
                *ended = Some(end);
            }
            ServerAction::PeerGone(why) => assert!(!why.is_empty()),
            ServerAction::Admit(p) => assert!(p.validate(&Limits::default()).is_ok()),
            ServerAction::Data { .. } | ServerAction::Start | ServerAction::PeerDone => {}
        }
    }
    assert!(actions <= 8, "{actions} actions from one op");
    assert_eq!(
        ended.is_some(),
        s.phase() == ServerPhase::Over,
        "{:?}",
        s.phase()
    );
    assert!(
        s.held() <= 4 + MAX_CONTROL_FRAME as usize + 64,
        "holds {} bytes",
        s.held()
    );
}

/// A script against a server's conversation, as [`check_client_session`]; the server's own
/// events are answered with a test it accepts (or refuses), its intervals and results. Returns
/// how it ended, or `None` while it goes on.
pub fn check_server_session(data: &[u8]) -> Option<ServerEnd> {
    let (setup, ops) = script(data, 8);
    let t0 = Instant::now();
    let mut now = t0;
    let mut s = ControlServer::new(ServerSetup {
        psk: (setup & 1 != 0).then(|| Psk::from_bytes(KEY)),
        nonce: "5eed".into(),
        version: "fuzz".into(),
        limits: Limits::default(),
        deadline: t0 + Duration::from_secs(5),
    });
    let fixtures = ServerFixtures::new();
    let mut pending = Vec::new();
    let mut ended = None;
    for op in ops {
        if s.phase() == ServerPhase::First {
            assert!(
                s.read_limit() <= 4 + MAX_CONTROL_FRAME as usize,
                "reads past the first frame"
            );
        }
        match op {
            Op::Bytes(b) => {
                pending.extend_from_slice(b);
                give(&mut s, now, &mut pending);
            }
            Op::Wait(d) => {
                now += d;
                s.timeout(now);
            }
            Op::Closed => s.gone(now, Gone::Closed),
            Op::Failed => s.gone(now, Gone::Failed("Connection reset by peer".into())),
            Op::Event(k) => {
                if let Err(e) = s.handle(now, fixtures.event(k)) {
                    assert!(!e.to_string().is_empty());
                }
                give(&mut s, now, &mut pending);
            }
        }
        check_server_actions(&mut s, &mut ended);
    }
    ended
}
