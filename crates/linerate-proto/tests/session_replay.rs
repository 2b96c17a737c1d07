//! The golden transcripts of the previous release (`tests/golden/43439da/*.jsonl`, see
//! `previous_release.rs`) replayed through both ends' conversations, with no socket: the
//! client's machine is fed what that release's server sent and must send what that release's
//! client sent, message for message, and the server's machine the other way round. The bytes
//! come in pieces of every size from one byte to the whole frame. And the handshake costs what
//! it did: two round trips from `hello` to `start`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use linerate_proto::session::{
    Acceptance, ClientAction, ClientEvent, ClientSetup, ControlClient, ControlServer, ServerAction,
    ServerEnd, ServerEvent, ServerSetup, Session,
};
use linerate_proto::{decode, Limits, Msg};
use serde_json::Value;

/// One line of a transcript: who sent it and what.
struct Line {
    from_client: bool,
    msg: Msg,
    /// As the previous release wrote it.
    json: Value,
}

fn transcripts() -> Vec<(PathBuf, Vec<Line>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/43439da");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 4, "a transcript per kind");
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a readable transcript");
            let lines = text
                .lines()
                .map(|l| {
                    let e: Value = serde_json::from_str(l).expect("JSON");
                    let json = e["msg"].clone();
                    Line {
                        from_client: e["from"] == "client",
                        msg: decode(&serde_json::to_vec(&json).expect("JSON")).expect("a message"),
                        json,
                    }
                })
                .collect();
            (p, lines)
        })
        .collect()
}

/// `m` as the frame a peer sent.
fn frame(json: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(json).expect("JSON");
    let mut f = u32::try_from(body.len())
        .expect("small")
        .to_be_bytes()
        .to_vec();
    f.extend(body);
    f
}

/// A frame's message as JSON, to set beside the transcript's.
fn sent(bytes: &[u8]) -> Value {
    let len = u32::from_be_bytes(bytes[..4].try_into().expect("a prefix")) as usize;
    assert_eq!(len, bytes.len() - 4, "one frame, whole");
    serde_json::from_slice(&bytes[4..]).expect("JSON")
}

/// Feed `wire` to `s` in pieces of `chunk` (at most its read limit), all of it.
fn feed<S: Session>(s: &mut S, wire: &[u8], chunk: usize) {
    let mut at = 0;
    while at < wire.len() {
        let n = chunk.min(s.read_limit()).min(wire.len() - at);
        assert!(
            n > 0,
            "the session stopped reading with {} bytes left",
            wire.len() - at
        );
        at += s.receive(Instant::now(), &wire[at..at + n]);
    }
}

fn the<'a>(lines: &'a [Line], kind: &str) -> &'a Line {
    lines
        .iter()
        .find(|l| l.msg.name() == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

/// The client's side: returns the round trips before `start`.
fn replay_client(at: &Path, lines: &[Line], chunk: usize) -> usize {
    let Msg::Hello { nonce, version, .. } = &the(lines, "hello").msg else {
        unreachable!()
    };
    let Msg::Request { params } = &the(lines, "request").msg else {
        unreachable!()
    };
    let mut c = ControlClient::new(
        Instant::now(),
        ClientSetup {
            params: params.clone(),
            psk: None,
            nonce: nonce.clone(),
            version: version.clone(),
        },
    );
    let mut outbox: Vec<Vec<u8>> = Vec::new();
    let mut waited = 0;
    let mut started = false;
    let mut last_from_client = true;
    let mut finished = None;
    let mut take = |c: &mut ControlClient, outbox: &mut Vec<Vec<u8>>| {
        while let Some(a) = c.poll() {
            match a {
                ClientAction::Send(b) => outbox.push(b),
                ClientAction::Accepted(_) => c
                    .handle(Instant::now(), ClientEvent::DataReady)
                    .expect("start"),
                ClientAction::Remote(_) | ClientAction::RemoteSoak(_) => {}
                ClientAction::Finished(r) => finished = Some(r),
                a => panic!("{}: {a:?}", at.display()),
            }
        }
    };
    for (i, l) in lines.iter().enumerate() {
        let here = format!("{}:{}", at.display(), i + 1);
        take(&mut c, &mut outbox);
        if l.from_client {
            if outbox.is_empty() && l.msg == Msg::Done {
                c.handle(Instant::now(), ClientEvent::LocalDone)
                    .expect("done");
                take(&mut c, &mut outbox);
            }
            assert!(
                !outbox.is_empty(),
                "{here}: the client sent nothing for {}",
                l.msg.name()
            );
            assert_eq!(sent(&outbox.remove(0)), l.json, "{here}: {}", l.msg.name());
            started |= l.msg == Msg::Start;
        } else {
            if last_from_client && !started {
                waited += 1;
            }
            feed(&mut c, &frame(&l.json), chunk);
        }
        last_from_client = l.from_client;
    }
    take(&mut c, &mut outbox);
    assert!(outbox.is_empty(), "{}: the client sent more", at.display());
    let Some(Ok(results)) = finished else {
        panic!("{}: no results: {finished:?}", at.display())
    };
    let Msg::Results { results: want } = &the(lines, "results").msg else {
        unreachable!()
    };
    assert_eq!(&*results, want);
    waited
}

/// The server's side.
fn replay_server(at: &Path, lines: &[Line], chunk: usize) {
    let Msg::ServerHello { nonce, version, .. } = &the(lines, "server_hello").msg else {
        unreachable!()
    };
    let mut s = ControlServer::new(ServerSetup {
        psk: None,
        nonce: nonce.clone(),
        version: version.clone(),
        limits: Limits::default(),
        deadline: Instant::now() + Duration::from_secs(3600),
    });
    let mut outbox: Vec<Vec<u8>> = Vec::new();
    let mut heard: Vec<ServerAction> = Vec::new();
    let take = |s: &mut ControlServer, outbox: &mut Vec<Vec<u8>>, heard: &mut Vec<ServerAction>| {
        while let Some(a) = s.poll() {
            match a {
                ServerAction::Send(b) => outbox.push(b),
                a => heard.push(a),
            }
        }
    };
    for (i, l) in lines.iter().enumerate() {
        let here = format!("{}:{}", at.display(), i + 1);
        if l.from_client {
            feed(&mut s, &frame(&l.json), chunk);
            take(&mut s, &mut outbox, &mut heard);
            let want = match &l.msg {
                Msg::Request { params } => Some(ServerAction::Admit(Box::new(params.clone()))),
                Msg::Start => Some(ServerAction::Start),
                Msg::Done => Some(ServerAction::PeerDone),
                _ => None,
            };
            assert_eq!(heard.pop(), want, "{here}");
            continue;
        }
        let now = Instant::now();
        match &l.msg {
            Msg::Accepted {
                test_id,
                cookie,
                udp_port,
                memory_bytes,
                inventory,
                rdma,
                listen_port,
            } => {
                let accepted = Acceptance {
                    test_id: *test_id,
                    cookie: cookie.clone(),
                    udp_port: *udp_port,
                    memory_bytes: *memory_bytes,
                    inventory: inventory.clone(),
                    rdma: rdma.clone(),
                    listen_port: *listen_port,
                };
                let setup = Duration::ZERO;
                s.handle(
                    now,
                    ServerEvent::Accept {
                        accepted: Box::new(accepted),
                        setup,
                    },
                )
                .expect("accept");
                take(&mut s, &mut outbox, &mut heard);
                s.handle(now, ServerEvent::DataReady)
                    .expect("the data connections");
            }
            Msg::Interval { sample } => s
                .handle(now, ServerEvent::Interval(sample))
                .expect("interval"),
            Msg::Results { results } => s
                .handle(now, ServerEvent::Finished(results))
                .expect("results"),
            _ => {}
        }
        take(&mut s, &mut outbox, &mut heard);
        assert!(
            !outbox.is_empty(),
            "{here}: the server sent nothing for {}",
            l.msg.name()
        );
        assert_eq!(sent(&outbox.remove(0)), l.json, "{here}: {}", l.msg.name());
    }
    assert!(outbox.is_empty(), "{}: the server sent more", at.display());
    assert_eq!(
        heard,
        [ServerAction::Close(ServerEnd::Served)],
        "{}",
        at.display()
    );
}

#[test]
fn the_previous_releases_conversations_replay_through_both_ends() {
    for (at, lines) in transcripts() {
        for chunk in [1, 2, 3, 5, 64, 1000, usize::MAX] {
            assert_eq!(
                replay_client(&at, &lines, chunk),
                2,
                "{}: round trips from hello to start (pieces of {chunk})",
                at.display()
            );
            replay_server(&at, &lines, chunk);
        }
    }
}
