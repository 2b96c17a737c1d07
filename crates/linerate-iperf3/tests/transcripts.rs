//! Golden transcripts: what real iperf3 binaries (3.1.3 to 3.21) said to each other, captured
//! through a proxy by `tests/transcripts/capture.py` (see `capture_all.sh` there), replayed
//! through both ends' sessions.
//!
//! For every capture:
//! - the server's session reads the client's bytes, the client's session the server's;
//! - each event is answered by the other session's encoder, and what it writes must be what the
//!   real peer wrote: the same bytes for state bytes, cookies, parameters and SERVER_ERROR, the
//!   same JSON (keys in the same order, equal values) for results;
//! - the data connections carry the cookie, the UDP handshakes are answered as linerate's
//!   rules answer them, the datagram headers decode to sequence 1, 2, 3…;
//! - the results list the planned stream ids, and say their sender's age;
//! - in the impaired UDP captures (datagrams lost, late and repeated on the way), linerate's
//!   accounting of the datagrams the server got matches the server's own loss and
//!   out-of-order counts.

mod common;

use common::{all, Dir, Transcript};
use linerate_iperf3::session::{
    ClientSession, FromClient, FromServer, ServerSession, SessionPhase,
};
use linerate_iperf3::udp::{
    self, DatagramHeader, Magic, Receiver, ReplyOutcome, ReplyWait, SeqWidth,
};
use linerate_iperf3::{
    plan, sniff, Cookie, DataFlow, ErrorCode, Feature, Iperf3Params, Protocol, Results, Role,
    Sniff, State, StreamId, Version, VersionRange, RESULTS_MAX,
};
use serde_json::Value;

/// JSON with 3.12/3.13's unsigned negatives read back as the negatives they were.
fn normalized(body: &[u8]) -> Value {
    fn fix(v: &mut Value) {
        match v {
            Value::Number(n) => {
                if let (None, Some(u)) = (n.as_i64(), n.as_u64()) {
                    *v = Value::from(u.cast_signed());
                }
            }
            Value::Array(a) => a.iter_mut().for_each(fix),
            Value::Object(o) => o.values_mut().for_each(fix),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_slice(body).unwrap();
    fix(&mut v);
    v
}

/// The value of `"server_output_json"` cut out of a message: the server's own report, whose
/// keys serde_json's map keeps sorted rather than in the order received.
fn without_server_output(text: &str) -> String {
    let key = "\"server_output_json\":";
    let Some(start) = text.find(key) else {
        return text.to_string();
    };
    let value = start + key.len();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[value..].char_indices() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (false, _, '"') => in_string = true,
            (false, _, '{' | '[') => depth += 1,
            (false, _, '}' | ']') => {
                depth -= 1;
                if depth == 0 {
                    return format!("{}{}", &text[..value], &text[value + i + 1..]);
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced server_output_json")
}

/// The keys of a JSON message, in order (top level and each stream; not inside the server's
/// own report).
fn key_order(body: &[u8]) -> Vec<String> {
    let text = without_server_output(&String::from_utf8_lossy(body));
    // Every string followed by a colon is a key (no value in these messages contains `":`).
    text.split('"')
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[1].starts_with(':'))
        .map(|w| w[0].to_string())
        .collect()
}

/// A frame's body.
fn body(frame: &[u8]) -> &[u8] {
    &frame[4..]
}

/// How a capture ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Done,
    Busy,
    ServerError(ErrorCode),
    /// The server closed the control connection early.
    Closed(SessionPhase),
}

#[derive(Debug, Default)]
struct Replay {
    cookie: Option<Cookie>,
    params: Option<Iperf3Params>,
    client_results: Option<(Results, Vec<u8>)>,
    server_results: Option<(Results, Vec<u8>)>,
    end: Option<End>,
}

/// Drive both sessions through the control connection's chunks, each answered by the other
/// side's encoder and compared with what the real peer sent.
#[expect(
    clippy::too_many_lines,
    reason = "one match arm per event of either side, read top to bottom with the protocol"
)]
fn replay(t: &Transcript) -> Replay {
    let name = &t.name;
    let mut server = ServerSession::new(1 << 20);
    let mut client = ClientSession::new(RESULTS_MAX);
    let mut from_client: Vec<u8> = Vec::new();
    let mut from_server: Vec<u8> = Vec::new();
    // What the real server wrote, not yet matched against our server's encoder.
    let mut server_wrote: Vec<u8> = Vec::new();
    let mut client_wrote: Vec<u8> = Vec::new();
    let mut r = Replay::default();
    let mut running: Option<u8> = None;

    let take = |wrote: &mut Vec<u8>, ours: &[u8], what: &str| {
        assert!(
            wrote.len() >= ours.len() && wrote[..ours.len()] == *ours,
            "{name}: {what}: ours {ours:02x?}, theirs {:02x?}",
            &wrote[..wrote.len().min(ours.len() + 8)]
        );
        wrote.drain(..ours.len());
    };

    for (d, chunk) in &t.control {
        match d {
            Dir::C2s if r.end == Some(End::Busy) => {
                // The busy server wrote ACCESS_DENIED without reading; the proxy saw the
                // client's cookie after it, and some clients' IPERF_DONE as they gave up.
                if chunk.len() == 37 {
                    r.cookie = Cookie::from_prefix(chunk);
                } else {
                    assert_eq!(chunk, &[State::IperfDone.to_byte()], "{name}");
                }
            }
            Dir::C2s => {
                from_client.extend_from_slice(chunk);
                client_wrote.extend_from_slice(chunk);
                loop {
                    let (used, event) = server
                        .receive(&from_client)
                        .unwrap_or_else(|e| panic!("{name}: server session: {e}"));
                    from_client.drain(..used);
                    let Some(event) = event else { break };
                    match event {
                        FromClient::Cookie(c) => {
                            assert_eq!(sniff(c.as_bytes()), Sniff::Cookie, "{name}");
                            assert_eq!(
                                c.is_random_form(),
                                t.client.has(Feature::RandomCookie),
                                "{name}: {c}"
                            );
                            let ours = client.cookie(&c).unwrap();
                            take(&mut client_wrote, &ours, "cookie");
                            r.cookie = Some(c);
                        }
                        FromClient::Params(p) => {
                            // Our client writes the same bytes: same keys, same order, same values.
                            let ours = client.params(&p).unwrap();
                            take(&mut client_wrote, &ours, "parameters");
                            assert_eq!(p.client_version(), Some(t.client), "{name}");
                            assert!(p.unknown.is_empty(), "{name}: {:?}", p.unknown);
                            assert!(Iperf3Params::odd_flags(body(&ours)).is_empty(), "{name}");
                            r.params = Some(*p);
                        }
                        FromClient::State(s) => {
                            let ours: Vec<u8> = match s {
                                State::TestEnd => client.test_end().unwrap().to_vec(),
                                State::IperfDone
                                    if client.phase() == SessionPhase::DisplayResults =>
                                {
                                    client.iperf_done().unwrap().to_vec()
                                }
                                // A client that gave up sends IPERF_DONE out of turn.
                                State::IperfDone => vec![State::IperfDone.to_byte()],
                                other => panic!("{name}: client sent {other}"),
                            };
                            take(&mut client_wrote, &ours, s.name());
                        }
                        FromClient::Results(res) => {
                            let len =
                                u32::from_be_bytes(client_wrote[..4].try_into().unwrap()) as usize;
                            let theirs = client_wrote[4..4 + len].to_vec();
                            let ours = client.results(&res, RESULTS_MAX).unwrap();
                            assert_eq!(
                                normalized(body(&ours)),
                                normalized(&theirs),
                                "{name}: client results"
                            );
                            assert_eq!(key_order(body(&ours)), key_order(&theirs), "{name}");
                            client_wrote.drain(..4 + len);
                            r.client_results = Some((*res, theirs));
                        }
                    }
                }
            }
            Dir::S2c => {
                from_server.extend_from_slice(chunk);
                server_wrote.extend_from_slice(chunk);
                loop {
                    let (used, event) = client
                        .receive(&from_server)
                        .unwrap_or_else(|e| panic!("{name}: client session: {e}"));
                    from_server.drain(..used);
                    let Some(event) = event else { break };
                    match event {
                        FromServer::State(State::ParamExchange) => {
                            take(
                                &mut server_wrote,
                                &server.param_exchange().unwrap(),
                                "PARAM_EXCHANGE",
                            );
                        }
                        FromServer::State(State::CreateStreams) => {
                            take(
                                &mut server_wrote,
                                &server.create_streams().unwrap(),
                                "CREATE_STREAMS",
                            );
                        }
                        FromServer::State(State::TestStart) => {
                            // Ours writes both at once; iperf3 writes them one by one.
                            let ours = server.test_start_running().unwrap();
                            take(&mut server_wrote, &ours[..1], "TEST_START");
                            running = Some(ours[1]);
                        }
                        FromServer::State(State::TestRunning) => {
                            take(
                                &mut server_wrote,
                                &[running.take().unwrap()],
                                "TEST_RUNNING",
                            );
                        }
                        FromServer::State(State::ExchangeResults) => {
                            take(
                                &mut server_wrote,
                                &server.exchange_results().unwrap(),
                                "EXCHANGE_RESULTS",
                            );
                        }
                        FromServer::Results(res) => {
                            let len =
                                u32::from_be_bytes(server_wrote[..4].try_into().unwrap()) as usize;
                            let theirs = server_wrote[4..4 + len].to_vec();
                            let ours = server.results_and_display(&res, RESULTS_MAX).unwrap();
                            let ours_body = &ours[4..ours.len() - 1];
                            assert_eq!(
                                normalized(ours_body),
                                normalized(&theirs),
                                "{name}: server results"
                            );
                            assert_eq!(key_order(ours_body), key_order(&theirs), "{name}");
                            assert_eq!(ours.last(), Some(&State::DisplayResults.to_byte()));
                            server_wrote.drain(..4 + len);
                            r.server_results = Some((*res, theirs));
                        }
                        FromServer::State(State::DisplayResults) => {
                            take(
                                &mut server_wrote,
                                &[State::DisplayResults.to_byte()],
                                "DISPLAY_RESULTS",
                            );
                        }
                        FromServer::Busy => {
                            take(
                                &mut server_wrote,
                                &server.deny_busy().unwrap(),
                                "ACCESS_DENIED",
                            );
                            r.end = Some(End::Busy);
                        }
                        FromServer::ServerError(e) => {
                            take(&mut server_wrote, &server.server_error(e), "SERVER_ERROR");
                            r.end = Some(End::ServerError(e.code));
                        }
                        FromServer::State(other) => panic!("{name}: server sent {other}"),
                    }
                }
            }
        }
    }
    assert!(
        from_client.is_empty() && from_server.is_empty(),
        "{name}: bytes left over"
    );
    if client.phase() == SessionPhase::Done && !server_wrote.is_empty() {
        // A 3.21 server's SERVER_ERROR after the test (see ClientSession::receive), dropped.
        assert_eq!(server_wrote.len(), 9, "{name}");
        assert_eq!(server_wrote[0], 0xfe, "{name}");
        server_wrote.clear();
    }
    assert!(
        client_wrote.is_empty() && server_wrote.is_empty(),
        "{name}: unmatched bytes"
    );
    if r.end.is_none() {
        r.end = Some(match client.closed() {
            Ok(()) => End::Done,
            Err(e) => End::Closed(e.closed_in().unwrap()),
        });
    }
    r
}

/// What each scenario must have ended with.
fn expected_end(t: &Transcript) -> End {
    let scenario = t.scenario();
    match scenario {
        "busy" => End::Busy,
        "error-max-duration" => End::ServerError(ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED),
        // 3.21 says why; 3.9 to 3.20 close after CREATE_STREAMS without a word.
        "error-bitrate-limit" if t.server >= Version::new(3, 21, 0) => {
            End::ServerError(ErrorCode::IETOTALRATE)
        }
        "error-bitrate-limit" => End::Closed(SessionPhase::CreateStreams),
        // --bidir to 3.1.3: the server takes one stream, refuses the second, then fails the
        // client's results (IESTREAMID) and closes.
        "bidir" if !t.server.has(Feature::Bidir) => End::Closed(SessionPhase::ClientResults),
        _ => End::Done,
    }
}

#[test]
fn every_transcript_replays_through_both_sessions() {
    for t in all() {
        let r = replay(&t);
        assert_eq!(r.end, Some(expected_end(&t)), "{}", t.name);
        assert!(r.cookie.is_some(), "{}", t.name);
    }
}

#[test]
fn data_connections_carry_the_cookie_and_follow_the_plan() {
    for t in all() {
        let r = replay(&t);
        let (Some(cookie), Some(params)) = (r.cookie, &r.params) else {
            continue;
        };
        if r.end != Some(End::Done) && r.end != Some(End::Closed(SessionPhase::ClientResults)) {
            // Refused before the streams.
            assert!(
                t.tcp.iter().all(|c| c.c2s_head == cookie.as_bytes()),
                "{}",
                t.name
            );
            continue;
        }
        let test = params
            .check(&linerate_iperf3::ServerLimits::IPERF3)
            .unwrap();
        let streams = plan(test.direction, test.streams);
        match test.protocol {
            Protocol::Tcp => {
                assert_eq!(t.tcp.len(), streams.len(), "{}", t.name);
                assert!(t.udp.is_empty());
                for (i, conn) in t.tcp.iter().enumerate() {
                    assert_eq!(conn.c2s_head, cookie.as_bytes(), "{}: stream {i}", t.name);
                    // Only a server before 3.7 in a --bidir test refuses one: the second half.
                    let refused = conn.s2c_head == [State::AccessDenied.to_byte()];
                    let expect_refused = test.direction == DataFlow::Bidir
                        && !t.server.has(Feature::Bidir)
                        && i >= test.streams as usize;
                    assert_eq!(refused, expect_refused, "{}: stream {i}", t.name);
                }
            }
            Protocol::Udp => check_udp(&t, &streams, test.udp_counters_64bit, test.len),
            Protocol::Sctp => unreachable!(),
        }
        // Results list the planned ids; each side's results say its age.
        let ids: Vec<StreamId> = streams.iter().map(|s| s.id).collect();
        let (client_results, client_body) = r.client_results.as_ref().unwrap();
        assert_eq!(client_results.match_streams(&ids), Ok(()), "{}", t.name);
        assert!(
            VersionRange::from_results_json(client_body)
                .and(VersionRange::exactly(t.client))
                .is_some(),
            "{}",
            t.name
        );
        if let Some((server_results, server_body)) = &r.server_results {
            assert_eq!(server_results.match_streams(&ids), Ok(()), "{}", t.name);
            let said = VersionRange::from_results_json(server_body);
            assert!(
                said.and(VersionRange::exactly(t.server)).is_some(),
                "{}: {said}",
                t.name
            );
            check_figures(&t, &streams, client_results, server_results);
            if params.get_server_output {
                let json = server_results.server_output_json.as_ref();
                let text = server_results.server_output_text.as_ref();
                assert!(
                    json.is_some() != text.is_some(),
                    "{}: one of the two",
                    t.name
                );
                if let Some(json) = json {
                    assert_eq!(
                        VersionRange::from_server_output(json),
                        Some(VersionRange::exactly(t.server)),
                        "{}",
                        t.name
                    );
                }
            }
        }
    }
}

/// Each end lists every stream, with its own role's figures, and a receiver's retransmits are
/// -1 (also where 3.12/3.13 printed it unsigned). Sender and receiver byte counts are not
/// compared: each end stops counting on its own clock.
fn check_figures(
    t: &Transcript,
    streams: &[linerate_iperf3::Stream],
    client: &Results,
    server: &Results,
) {
    use linerate_iperf3::PeerFigures;
    for s in streams {
        let mine = client.stream(s.id).unwrap();
        let theirs = server.stream(s.id).unwrap();
        match theirs.peer_figures(s.client) {
            PeerFigures::FromReceiver { bytes, .. } => {
                assert_eq!(s.client, Role::Sender);
                assert!(bytes > 0 && mine.bytes > 0, "{}: stream {}", t.name, s.id);
            }
            PeerFigures::FromSender { bytes, .. } => {
                assert_eq!(s.client, Role::Receiver);
                assert!(bytes > 0 && mine.bytes > 0, "{}: stream {}", t.name, s.id);
            }
        }
        // -1: a receiver's retransmits, whatever the version printed.
        let receiver_entry = if s.client == Role::Sender {
            theirs
        } else {
            mine
        };
        assert_eq!(
            receiver_entry.retransmits, -1,
            "{}: stream {}",
            t.name, s.id
        );
    }
}

fn check_udp(t: &Transcript, streams: &[linerate_iperf3::Stream], counters_64bit: bool, len: u32) {
    let width = SeqWidth::from_64bit_flag(counters_64bit);
    assert_eq!(t.udp.len(), streams.len(), "{}", t.name);
    for (flow, stream) in t.udp.iter().zip(streams) {
        let (d, n, connect) = &flow.first[0];
        assert_eq!(
            (*d, *n),
            (Dir::C2s, 4),
            "{}: the connect comes first",
            t.name
        );
        let connect_magic = Magic::classify(connect).unwrap();
        let expected = if t.client.has(Feature::TextUdpMagic) {
            Magic::Text9876
        } else {
            Magic::Legacy123456789(udp::ByteOrder::Little)
        };
        assert_eq!(connect_magic, expected, "{}", t.name);
        let reply = flow.first.iter().find(|(d, _, _)| *d == Dir::S2c).unwrap();
        assert_eq!(reply.1, 4, "{}", t.name);
        // The real client took the real reply; so does linerate's rule.
        let reverse = stream.client == Role::Receiver;
        assert!(
            matches!(
                ReplyWait::new(reverse, len).on_datagram(&reply.2),
                ReplyOutcome::Accepted(_)
            ),
            "{}",
            t.name
        );
        // linerate's server answers as a 3.12+ server does to a 3.12+ client.
        let ours = udp::reply_to_connect(connect).unwrap();
        if t.server.has(Feature::TextUdpMagic) && t.client.has(Feature::TextUdpMagic) {
            assert_eq!(ours.as_slice(), reply.2.as_slice(), "{}", t.name);
        }
        // Data from the sending side, numbered from 1.
        let data_dir = if reverse { Dir::S2c } else { Dir::C2s };
        let data: Vec<&Vec<u8>> = flow
            .first
            .iter()
            .filter(|(d, n, _)| *d == data_dir && *n == len as usize)
            .map(|(_, _, h)| h)
            .collect();
        assert!(!data.is_empty(), "{}: no data captured", t.name);
        for (i, head) in data.iter().enumerate() {
            let h = DatagramHeader::read(head, width).unwrap();
            assert_eq!(h.seq, i as u64 + 1, "{}: datagram {i}", t.name);
        }
    }
}

/// The proxy lost datagrams 5, 6 and 20 of the first UDP stream, delivered 10 after 13 and 30
/// twice. linerate's accounting of what the server got must give the server's own counts:
/// `errors` and `packets` from its results, `out_of_order` from its `-J` output.
#[test]
fn impaired_udp_accounting_matches_iperf3s() {
    let mut checked = 0;
    for t in all().iter().filter(|t| t.name.contains("impaired")) {
        let r = replay(t);
        let params = r.params.as_ref().unwrap();
        let width = SeqWidth::from_64bit_flag(params.udp_counters_64bit);
        let (server_results, _) = r.server_results.as_ref().unwrap();
        let theirs = &server_results.streams[0];
        let headers: Vec<DatagramHeader> = t.udp[0]
            .forwarded
            .iter()
            .filter(|d| d.len() >= width.header_len())
            .map(|d| DatagramHeader::read(d, width).unwrap())
            .collect();
        // The server stops counting at TEST_END: the last datagram or two may arrive after it
        // and go uncounted ("late receive"). The tail is in order, so the server counted
        // exactly the datagrams up to its highest sequence.
        let counted = u64::try_from(theirs.packets).unwrap();
        let late = headers.iter().filter(|h| h.seq > counted).count();
        assert!(late <= 3, "{}: {late} datagrams after the end", t.name);
        let mut ours = Receiver::with_rules(t.server.udp_rules());
        let mut seqs = Vec::new();
        for h in headers.iter().filter(|h| h.seq <= counted) {
            seqs.push(h.seq);
            // Arrival times are the server's own, not captured: jitter is not compared.
            ours.record(h.seq, h.sent, h.sent);
        }
        assert!(
            seqs.contains(&10)
                && !seqs.contains(&5)
                && seqs.iter().filter(|s| **s == 30).count() == 2,
            "{}",
            t.name
        );
        assert_eq!(
            ours.packets(),
            u64::try_from(theirs.packets).unwrap(),
            "{}: packets",
            t.name
        );
        assert_eq!(ours.errors(), theirs.errors, "{}: errors", t.name);
        // Gaps at 5-6, 10 (held back) and 20: 4. From 3.2 each datagram out of order takes
        // one back: the late 10 its own, and the repeated 30 another (iperf3's flaw with
        // duplicates).
        let expected = if t.server.has(Feature::LossTakeBack) {
            2
        } else {
            4
        };
        assert_eq!(ours.errors(), expected, "{}: errors", t.name);
        let out_of_order = server_results
            .server_output_json
            .as_ref()
            .and_then(|j| j["end"]["streams"][0]["udp"]["out_of_order"].as_u64());
        if let Some(ooo) = out_of_order {
            assert_eq!(ours.out_of_order(), ooo, "{}: out of order", t.name);
        }
        assert_eq!(ours.out_of_order(), 2, "{}: 10 late, 30 repeated", t.name);
        checked += 1;
    }
    assert!(checked >= 14, "{checked} impaired captures");
}

#[test]
fn what_the_captures_show_about_versions() {
    for t in all() {
        let r = replay(&t);
        let Some(params) = &r.params else { continue };
        // `time` is always sent since 3.5, `num` and `blockcount` since 3.12; before, only
        // when set (none of the captures sets them).
        assert!(params.time.is_some(), "{}", t.name);
        assert_eq!(
            params.num.is_some(),
            t.client >= Version::new(3, 12, 0),
            "{}",
            t.name
        );
        assert_eq!(
            params.blockcount.is_some(),
            t.client >= Version::new(3, 12, 0),
            "{}",
            t.name
        );
        // 3.21 sends the GSO keys in every UDP test.
        assert_eq!(
            params.protocol == Protocol::Udp && t.client.has(Feature::Gso),
            params.gso.is_some(),
            "{}",
            t.name
        );
        // 3.12 and 3.13 print -1 unsigned: seen where a receiver reports.
        if let Some((_, body)) = &r.server_results {
            let text = String::from_utf8_lossy(body);
            if text.contains("18446744073709551615") {
                assert!(t.server.has(Feature::UnsignedNegatives), "{}", t.name);
            }
        }
    }
}
