//! The properties the iperf3 fuzz targets check (`fuzz_targets/iperf3_*.rs`). One copy serves
//! the cargo-fuzz targets and the stable regression test `crates/linerate-iperf3/tests/fuzz_seeds.rs`;
//! both include this file with `#[path]` (it is not a module of this crate's `lib.rs`, which
//! `linerate-proto`'s test includes the same way and keeps to `linerate_proto`).
//!
//! Keep this file to `linerate_iperf3`, `serde_json` and `std`.

use linerate_iperf3::session::{ClientSession, FromClient, FromServer, ServerSession};
use linerate_iperf3::{
    params::limits, Cookie, DataFlow, DecodeError, ErrorCode, FrameDecoder, Iperf3Params,
    JsonFrameError, Protocol, Results, ServerError, ServerLimits, StreamId, VersionRange,
    PARAMS_MAX, RESULTS_MAX,
};

/// The limits the decoders are fuzzed with: iperf3's parameters cap, a small one, linerate's
/// results cap.
const FRAME_LIMITS: [u32; 3] = [PARAMS_MAX, 64, RESULTS_MAX];

/// `data` as bytes read from a control connection.
///
/// Its first byte picks a read size (1 to 64 bytes) and a limit, the rest is the stream.
/// Checked:
/// - the frame decoder never panics, never yields a body over its limit or empty, takes no byte
///   past a message, and yields the same bodies and the same error whatever the read size (one
///   call with everything, or many small ones);
/// - a server's and a client's session, each answering as a real end would, never panic and
///   fail only with a typed error; every decoded message round-trips ([`check_params`],
///   [`check_results`]).
///
/// Returns how many messages the frame decoder read, and how many events each session did.
pub fn check_frames(data: &[u8]) -> Outcome {
    let Some((&selector, stream)) = data.split_first() else {
        return Outcome::default();
    };
    let chunk = usize::from(selector % 64) + 1;
    let limit = FRAME_LIMITS[usize::from(selector / 64) % FRAME_LIMITS.len()];
    let whole = frames(stream, stream.len().max(1), limit);
    let pieces = frames(stream, chunk, limit);
    assert_eq!(whole, pieces, "read {chunk} bytes at a time");
    Outcome {
        frames: whole.0.len(),
        server_events: drive_server(stream),
        client_events: drive_client(stream),
    }
}

/// What [`check_frames`] got through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub frames: usize,
    pub server_events: usize,
    pub client_events: usize,
}

type Frames = (
    Vec<Vec<u8>>,
    Option<JsonFrameError>,
    Result<(), JsonFrameError>,
);

fn frames(stream: &[u8], chunk: usize, limit: u32) -> Frames {
    let mut dec = FrameDecoder::new(limit);
    let mut bodies = Vec::new();
    let mut error = None;
    let mut at = 0;
    while at < stream.len() {
        let end = (at + chunk).min(stream.len());
        let mut piece = &stream[at..end];
        while !piece.is_empty() {
            match dec.push(piece) {
                Ok((used, body)) => {
                    assert!(used <= piece.len());
                    if let Some(body) = body {
                        assert!(!body.is_empty());
                        assert!(body.len() <= limit as usize, "a {}-byte body", body.len());
                        assert!(dec.is_idle());
                        bodies.push(body);
                    }
                    piece = &piece[used..];
                    at += used;
                }
                Err(e) => {
                    match &e {
                        JsonFrameError::TooLarge { len, limit: l } => {
                            assert_eq!(*l, limit);
                            assert!(*len > u64::from(limit));
                        }
                        JsonFrameError::Empty => {}
                        other => panic!("push failed with {other:?}"),
                    }
                    assert_eq!(dec.push(b"x"), Err(e.clone()), "errors stick");
                    error = Some(e);
                    return (bodies, error, dec.finish());
                }
            }
        }
    }
    let finish = dec.finish();
    if let Err(e) = &finish {
        assert!(
            matches!(
                e,
                JsonFrameError::LengthTruncated { .. } | JsonFrameError::Truncated { .. }
            ),
            "{e:?}"
        );
    }
    (bodies, error, finish)
}

/// A server's session reading `stream` as the client's bytes, answering each event as a server
/// does (the parameters checked with iperf3's limits). Returns the number of events.
fn drive_server(mut stream: &[u8]) -> usize {
    let mut s = ServerSession::new(1 << 20);
    let results = empty_results();
    let mut events = 0;
    while !stream.is_empty() {
        let Ok((used, event)) = s.receive(stream) else {
            return events;
        };
        stream = &stream[used..];
        events += usize::from(event.is_some());
        let answered = match event {
            None if used == 0 => return events,
            None => Ok(()),
            Some(FromClient::Cookie(_)) => s.param_exchange().map(drop),
            Some(FromClient::Params(p)) => {
                check_one_params(&p);
                match p.check(&ServerLimits::IPERF3) {
                    Ok(_) => s
                        .create_streams()
                        .and_then(|_| s.test_start_running())
                        .map(drop),
                    Err(v) => {
                        s.server_error(ServerError {
                            code: v.code,
                            errno: 0,
                        });
                        return events;
                    }
                }
            }
            // After TEST_END the server asks for the results; after IPERF_DONE or
            // CLIENT_TERMINATE it may not, and the session says so.
            Some(FromClient::State(_)) => {
                let _ = s.exchange_results();
                Ok(())
            }
            Some(FromClient::Results(r)) => {
                check_one_results(&r);
                s.results_and_display(&results, RESULTS_MAX).map(drop)
            }
        };
        assert!(
            answered.is_ok(),
            "the server's answer was refused: {answered:?}"
        );
    }
    let _ = s.closed();
    events
}

/// A client's session reading `stream` as the server's bytes, answering as a client does.
/// Returns the number of events.
fn drive_client(mut stream: &[u8]) -> usize {
    let mut c = ClientSession::new(1 << 20);
    c.cookie(&Cookie([b'a'; 37]))
        .expect("the cookie goes first");
    let params = Iperf3Params::new(Protocol::Udp);
    let results = empty_results();
    let mut events = 0;
    while !stream.is_empty() {
        let Ok((used, event)) = c.receive(stream) else {
            return events;
        };
        stream = &stream[used..];
        events += usize::from(event.is_some());
        match event {
            None if used == 0 => return events,
            Some(FromServer::State(s)) => {
                use linerate_iperf3::State;
                let answered = match s {
                    State::ParamExchange => c.params(&params).map(drop),
                    State::TestRunning => c.test_end().map(drop),
                    State::ExchangeResults => c.results(&results, RESULTS_MAX).map(drop),
                    State::DisplayResults => c.iperf_done().map(drop),
                    _ => Ok(()),
                };
                assert!(
                    answered.is_ok(),
                    "the client's answer was refused: {answered:?}"
                );
            }
            Some(FromServer::Results(r)) => check_one_results(&r),
            Some(FromServer::ServerError(e)) => {
                let _ = linerate_iperf3::Iperf3Refusal::ServerError(e).explain("h:1");
            }
            None | Some(FromServer::Busy) => {}
        }
    }
    let _ = c.closed();
    events
}

fn empty_results() -> Results {
    Results::decode(
        br#"{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":0,"retransmits":-1,"jitter":0,"errors":0,"packets":0}]}"#,
    )
    .expect("valid results")
}

/// `data` as a parameters message's body. Checked: decoding never panics and fails only with a
/// typed error; what decodes re-encodes (when within iperf3's 8 KiB) and decodes back equal;
/// [`Iperf3Params::check`] never panics, and what it accepts is within iperf3's limits and the
/// server's. Returns `None` when the body does not decode, else whether iperf3's limits accept
/// the test.
pub fn check_params(data: &[u8]) -> Option<bool> {
    let _ = Iperf3Params::odd_flags(data);
    match Iperf3Params::decode(data) {
        Ok(p) => Some(check_one_params(&p)),
        Err(e) => {
            assert!(
                !matches!(e, DecodeError::Frame(_) | DecodeError::OmittedPair { .. }),
                "{e:?}"
            );
            let _ = e.to_string();
            None
        }
    }
}

fn check_one_params(p: &Iperf3Params) -> bool {
    match p.encode() {
        Ok(frame) => {
            let again = Iperf3Params::decode(&frame[4..]).expect("our own parameters decode");
            assert_eq!(&again, p, "parameters round trip");
            assert_eq!(
                again.encode().expect("encodes again"),
                frame,
                "same bytes again"
            );
        }
        Err(JsonFrameError::TooLarge { .. }) => {}
        Err(e) => panic!("encoding parameters failed with {e:?}"),
    }
    let strict = ServerLimits {
        max_streams: 8,
        max_duration_s: Some(60),
        max_window: 16 << 20,
        max_total_bitrate_bps: Some(10_000_000_000),
        open_ended: false,
        sctp: false,
    };
    // A server that bounds open-ended tests itself (linerate serve): a test without a time of
    // its own passes, within the limit with its warm-up.
    let open = ServerLimits {
        open_ended: true,
        ..strict.clone()
    };
    if let Ok(t) = p.check(&open) {
        assert!(t.duration_s + t.omit_s <= 60);
        assert!(t.duration_s > 0 || t.omit_s < 60);
    }
    if let Ok(t) = p.check(&strict) {
        assert!((1..=strict.max_streams).contains(&t.streams));
        assert!(t.duration_s > 0 && t.duration_s + t.omit_s <= 60);
        assert!(t.window.is_none_or(|w| w <= strict.max_window));
        assert_ne!(t.protocol, Protocol::Sctp);
        let ways = if t.direction == DataFlow::Bidir { 2 } else { 1 };
        let per_stream = t.bitrate_bps.max(t.fq_rate_bps.unwrap_or(0));
        assert!(per_stream > 0);
        assert!(u128::from(per_stream) * u128::from(t.streams) * ways <= 10_000_000_000);
    }
    match p.check(&ServerLimits::IPERF3) {
        Ok(t) => {
            assert!((1..=limits::MAX_STREAMS).contains(&t.streams));
            assert!(t.duration_s <= limits::MAX_TIME_S && t.omit_s <= limits::MAX_OMIT_S);
            match t.protocol {
                Protocol::Udp => {
                    assert!((limits::MIN_UDP_LEN..=limits::MAX_UDP_LEN).contains(&t.len));
                }
                _ => assert!((1..=limits::MAX_TCP_LEN).contains(&t.len)),
            }
            assert!(t.window.is_none_or(|w| w <= limits::MAX_WINDOW));
            assert!(t.mss.is_none_or(|m| m <= limits::MAX_MSS));
            assert!(t.burst.is_none_or(|b| (1..=limits::MAX_BURST).contains(&b)));
            assert!(!(p.reverse && p.bidirectional));
            assert!(t
                .congestion
                .as_deref()
                .is_none_or(|c| (1..=15).contains(&c.len()) && c.is_ascii()));
            true
        }
        Err(v) => {
            assert!(v.code.name().is_some(), "a code iperf3 defines: {v}");
            assert!(!v.reason.is_empty());
            let _ = ErrorCode::understood_by(v.code, linerate_iperf3::Version::new(3, 1, 3));
            false
        }
    }
}

/// `data` as a results message's body. Checked: decoding never panics and fails only with a
/// typed error; what decodes re-encodes and decodes back equal; the version evidence and the
/// stream matching never panic. Returns the number of streams of what decodes.
pub fn check_results(data: &[u8]) -> Option<usize> {
    let _ = VersionRange::from_results_json(data);
    match Results::decode(data) {
        Ok(r) => {
            check_one_results(&r);
            Some(r.streams.len())
        }
        Err(e) => {
            assert!(!matches!(e, DecodeError::Frame(_)), "{e:?}");
            let _ = e.to_string();
            None
        }
    }
}

fn check_one_results(r: &Results) {
    let frame = r.encode(RESULTS_MAX).expect("results under 16 MiB encode");
    let again = Results::decode(&frame[4..]).expect("our own results decode");
    assert_eq!(&again, r, "results round trip");
    let ids: Vec<StreamId> = StreamId::first(3).collect();
    let _ = r.match_streams(&ids);
    for s in &r.streams {
        assert!(s.id.0 > 0);
        let _ = s.peer_figures(linerate_iperf3::Role::Sender);
        let _ = s.peer_figures(linerate_iperf3::Role::Receiver);
    }
    if let Some(json) = &r.server_output_json {
        let _ = VersionRange::from_server_output(json);
    }
}
