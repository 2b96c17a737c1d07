//! The previous release's control messages, as its client and server sent them, read by this
//! version: golden transcripts of one run of each test kind between two peers of commit
//! 43439da (`tests/golden/43439da/*.jsonl`, recorded with `tests/golden/capture.py`).
//!
//! Every message decodes, nothing of it is left unread (the host facts in `accepted` above all:
//! they were a free-form JSON object then), and each encodes back to the same JSON: what this
//! version sends in those messages is what the previous one reads. The live test of both
//! pairings is `crates/linerate-cli/tests/compat_previous_release.rs`.

use std::path::{Path, PathBuf};

use linerate_proto::{read_msg, Msg, MAX_RESULTS_FRAME};
use serde_json::Value;

fn transcripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/43439da");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

/// `msg` through the real decoder: a frame, as it comes off the wire.
fn decode(msg: &Value) -> Msg {
    let body = serde_json::to_vec(msg).expect("a JSON value encodes");
    let mut frame = u32::try_from(body.len())
        .expect("a small message")
        .to_be_bytes()
        .to_vec();
    frame.extend(body);
    read_msg(&mut frame.as_slice(), MAX_RESULTS_FRAME).unwrap_or_else(|e| {
        panic!(
            "the previous release's {} does not decode: {e}",
            msg["type"]
        )
    })
}

#[test]
fn the_previous_releases_messages_decode_whole_and_encode_back_the_same() {
    let mut kinds = Vec::new();
    let mut accepted = 0;
    for path in transcripts() {
        let text = std::fs::read_to_string(&path).expect("a readable transcript");
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}", path.display(), i + 1);
            let entry: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{at}: {e}"));
            let original = &entry["msg"];
            let msg = decode(original);
            if let Msg::Accepted {
                inventory: Some(h), ..
            } = &msg
            {
                accepted += 1;
                assert!(h.unread.is_empty(), "{at}: left unread: {:?}", h.unread);
                let probe = h.probe.as_ref().expect("the host's probe document");
                assert!(!probe.ports.is_empty(), "{at}: the probe's ports were read");
                assert!(h.facts.is_some() && h.name.is_some(), "{at}: {h:?}");
            }
            let again = serde_json::to_value(&msg).expect("it encodes");
            assert_eq!(
                &again,
                original,
                "{at}: {} encodes differently from the previous release",
                msg.name()
            );
            kinds.push(msg.name());
        }
    }
    assert_eq!(accepted, 4, "one accepted per transcript");
    for k in [
        "hello",
        "server_hello",
        "request",
        "accepted",
        "start",
        "interval",
        "done",
        "results",
    ] {
        assert!(kinds.contains(&k), "no {k} in the transcripts");
    }
}

/// An old document with a field this version does not know, and a finding it does not know:
/// both named in `unread`, neither fatal, the rest read.
#[test]
fn a_newer_peers_extra_field_and_finding_are_named_not_fatal() {
    let path = transcripts()
        .into_iter()
        .find(|p| p.ends_with("tcp_bw.jsonl"))
        .expect("the tcp_bw transcript");
    let text = std::fs::read_to_string(path).expect("readable");
    let mut acc: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
        .find(|e| e["msg"]["type"] == "accepted")
        .expect("an accepted")["msg"]
        .clone();
    let inv = &mut acc["inventory"];
    inv["probe"]["host"]["energy_policy"] = "balanced".into();
    inv["facts"]["findings"]
        .as_array_mut()
        .expect("findings")
        .push(serde_json::json!({
            "id": "quantum.entangled", "severity": "warning", "subject": "host",
            "evidence": {}, "message": "m", "fix": "f"
        }));
    inv["probe"]["ports"][0]["kind"] = "photonic".into();
    let Msg::Accepted {
        inventory: Some(h), ..
    } = decode(&acc)
    else {
        panic!("accepted decodes")
    };
    let said: Vec<String> = h.unread.iter().map(ToString::to_string).collect();
    assert!(
        said.iter().any(|s| s.contains("probe.host.energy_policy")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|s| s.contains("quantum.entangled")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|s| s.starts_with("probe.ports[0]")),
        "{said:?}"
    );
    assert!(h.facts.is_some(), "the facts were read all the same");
    assert!(h.probe.is_some_and(|p| p.findings.len()
        == acc["inventory"]["probe"]["findings"]
            .as_array()
            .map_or(0, Vec::len)));
}
