//! `linerate soak` and `bench --rdma` over a real lossy link: two guests of Debian's stock
//! kernel (the lab, docs/lab.md) joined by a wire, soft-RoCE (rxe0) on each. Over the clean link
//! soak calls both ends clean; with `netem loss` on one guest's egress, the same soak names TCP's
//! retransmits on the end whose sends were lost and the RDMA device's own retry and sequence
//! counters (rxe's `hw_counters`) on both ends, each in the direction that lost packets, while
//! the other direction is judged clean in the same run; `bench --rdma` reports the retries the
//! device counted, as sysfs shows them. Functional facts only: under TCG the rates say nothing.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::lab::{self, linerate, linerate_json, sh};
use linerate_lab::{Bg, Guest, LabSpec};
use serde_json::Value;

/// The loss netem applies to a's egress: enough that every run loses packets, low enough that
/// rxe's go-back-N completes writes under TCG (at 2 % a window of 64 KiB writes stalls past
/// bench's 5 s without a completion).
const LOSS: &str = "1%";

/// The soak: one stream each way (the handshake of more streams plus RDMA's connection can
/// outlast the server's 5 s under TCG), RDMA writes beside them (the path is rxe's), judged with
/// `min_bits` lowered to what an emulated link carries in seconds.
const SOAK: &str = "--duration 15s --interval 1s -P 1 --threshold min_bits=1e6 --json";

/// rxe's transport counters that say a packet was lost: a requester's, a responder's.
const SENT_LOST: [&str; 2] = ["completer_retry_err", "rcvd_seq_err"];
const RECEIVED_LOST: [&str; 2] = ["out_of_seq_request", "duplicate_request"];

/// The hw_counters of rxe0 port 1 in guest `g`.
fn hw(g: &Guest) -> BTreeMap<String, u64> {
    sh(
        g,
        "cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . *",
        30,
    )
    .lines()
    .filter_map(|l| {
        let (k, v) = l.split_once(':')?;
        Some((k.to_string(), v.trim().parse().ok()?))
    })
    .collect()
}

fn rose(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, name: &str) -> u64 {
    after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0)
}

/// A soak from a to b; its document, which must be complete (no error: the RDMA traffic ran
/// too), with the server's log in the message otherwise.
fn soak(a: &Guest, b: &Guest, server: &str, serve: Bg) -> Value {
    let o = linerate(a, &format!("soak {server} {SOAK}"), 180);
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "soak: not JSON ({e}); {}; stderr: {}",
            o.status.describe(),
            o.stderr
        )
    });
    // Known, open: the RDMA writes beside the streams end with the server's side torn down
    // while this end still waits for its last completions under the streams' load (TCG); the
    // counters were all read by then. Said, not hidden; any other error fails.
    let teardown = doc["error"].as_str().is_some_and(|e| {
        e.starts_with("rdma traffic: this host: queue pair 0: peer disconnected")
            && !e.contains(';')
    });
    if teardown {
        eprintln!("soak's RDMA traffic ended torn down: {}", doc["error"]);
    } else if !doc["error"].is_null() {
        let log = b
            .stop(serve, Duration::from_secs(5))
            .map_or_else(|e| e.to_string(), |o| format!("{}{}", o.stdout, o.stderr));
        panic!(
            "the soak stopped early: {}; its stderr: {}; the server's log:\n{log}",
            doc["error"], o.stderr
        );
    }
    assert_eq!(
        doc["params"]["rdma"], true,
        "RDMA ran beside: {}",
        doc["params"]
    );
    doc
}

/// The rxe0 port of `end` (`local` is a, `remote` is b).
fn port<'a>(doc: &'a Value, end: &str) -> &'a Value {
    let e = doc["ends"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["end"] == end)
        .unwrap_or_else(|| panic!("no {end} end in {doc}"));
    e["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["device"] == "rxe0")
        .unwrap_or_else(|| panic!("no rxe0 port at the {end} end: {e}"))
}

fn findings<'a>(p: &'a Value, rule: &str) -> Vec<&'a Value> {
    p["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

/// The port's `tcp_retransmits` check: present (the port carried what its end sent).
fn tcp_check(p: &Value) -> &Value {
    p["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == "tcp_retransmits")
        .unwrap_or_else(|| panic!("no tcp_retransmits check on {p}"))
}

/// The increase soak reported for counter `name` of port `p`.
fn soak_delta(p: &Value, name: &str) -> u64 {
    p["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .map_or(0, |c| c["delta"].as_u64().unwrap())
}

#[test]
#[ignore = "open (#30): under TCG soak's RDMA writes and TCP streams do not both get through the \
            server's 5 s handshake (one or the other times out, or the RDMA side is torn down \
            first); run with --ignored"]
fn soak_and_bench_name_the_lossy_direction_over_rxe() {
    let Some((lab, _serial)) = lab::boot(&LabSpec::pair()) else {
        return;
    };
    let (a, b) = (lab.guest("a"), lab.guest("b"));
    let server = b.addr(0).to_string();
    // The binary read once over 9p before the first timed handshake.
    linerate(a, "--version", 120);
    let serve = lab::serve(b, "0.0.0.0");
    // libfabric and its verbs provider read once over 9p on both guests: the first RDMA
    // listener of a fresh guest outlasted the server's 5 s handshake under TCG.
    linerate(a, &format!("bench {server} --rdma -t 1 -J"), 240);

    clean_link_is_clean(a, b, &server, serve);
    sh(
        a,
        &format!("tc qdisc replace dev enp1s0 root netem loss {LOSS}"),
        30,
    );
    lossy_direction_is_named(a, b, &server, serve);
    bench_reports_the_retries_the_device_counted(a, b, &server, serve);
    let netem = sh(a, "tc -s qdisc show dev enp1s0", 30);
    eprintln!("a's egress after the lossy runs: {netem}");
    assert!(
        !netem.contains("dropped 0,"),
        "netem dropped nothing: {netem}"
    );
    sh(a, "tc qdisc del dev enp1s0 root", 30);
    b.stop(serve, Duration::from_secs(5)).unwrap();
}

/// (1) No netem: both ends clean, TCP's checks below their limit, no transport counter rose.
fn clean_link_is_clean(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let doc = soak(a, b, server, serve);
    assert_eq!(doc["verdict"], "clean", "{doc}");
    for end in ["local", "remote"] {
        let p = port(&doc, end);
        assert_eq!(p["verdict"], "clean", "{end}: {p}");
        let c = tcp_check(p);
        assert_eq!(c["fired"], false, "{end}: {c}");
        for name in SENT_LOST.iter().chain(&RECEIVED_LOST) {
            assert_eq!(soak_delta(p, name), 0, "{end} {name}: {p}");
        }
    }
    // The RDMA writes ran: a sent, b received, over the devices soak read.
    assert!(soak_delta(port(&doc, "local"), "sent_pkts") > 0);
    assert!(soak_delta(port(&doc, "remote"), "rcvd_pkts") > 0);
}

/// (2) and (3) in one soak: a's egress drops packets. a's sends were lost: TCP retransmitted
/// above its limit on a and rxe's requester counters rose there (its send direction); b's
/// responder saw the gaps (its receive direction: the same a → b). b's own sends were not
/// lost: its TCP check stays below the limit and nothing on either end names b → a.
fn lossy_direction_is_named(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let (a0, b0) = (hw(a), hw(b));
    let doc = soak(a, b, server, serve);
    let (a1, b1) = (hw(a), hw(b));
    let (pa, pb) = (port(&doc, "local"), port(&doc, "remote"));

    let c = tcp_check(pa);
    assert_eq!(c["fired"], true, "a's TCP: {c}");
    let f = findings(pa, "tcp_retransmits");
    assert!(
        f.len() == 1 && f[0]["text"].as_str().unwrap().contains("send direction"),
        "{f:?}"
    );
    let c = tcp_check(pb);
    assert_eq!(c["fired"], false, "b's TCP, the clean direction: {c}");
    assert!(findings(pb, "tcp_retransmits").is_empty());

    // The transport counters, each on the end and in the direction of the loss.
    let sent = findings(pa, "rdma_retransmits");
    assert!(!sent.is_empty(), "a's rxe counted no retry: {pa}");
    for f in &sent {
        let name = f["counter"].as_str().unwrap();
        assert!(SENT_LOST.contains(&name), "{f}");
        assert!(
            f["text"]
                .as_str()
                .unwrap()
                .contains("this end's send direction"),
            "{f}"
        );
    }
    let got = findings(pb, "rdma_retransmits");
    assert!(!got.is_empty(), "b's rxe counted no gap: {pb}");
    for f in &got {
        let name = f["counter"].as_str().unwrap();
        assert!(RECEIVED_LOST.contains(&name), "{f}");
        assert!(
            f["text"]
                .as_str()
                .unwrap()
                .contains("this end's receive direction"),
            "{f}"
        );
    }
    // Nothing names the clean direction, b → a.
    for (p, words) in [(pa, "receive direction"), (pb, "send direction")] {
        for f in p["findings"].as_array().unwrap() {
            assert!(!f["text"].as_str().unwrap().contains(words), "{f}");
        }
    }
    // What soak counted is what the kernel counted, within the soak's own samples.
    for (p, before, after, names) in [(pa, &a0, &a1, SENT_LOST), (pb, &b0, &b1, RECEIVED_LOST)] {
        for name in names {
            let (s, k) = (soak_delta(p, name), rose(before, after, name));
            assert!(s <= k, "{name}: soak says {s}, sysfs moved {k}");
        }
    }
    assert!(soak_delta(pa, "rcvd_seq_err") > 0, "{pa}");
    assert!(soak_delta(pb, "out_of_seq_request") > 0, "{pb}");
    eprintln!(
        "lossy soak: a TCP {} of {} segments, b TCP {} of {}; a rxe {:?}; b rxe {:?}",
        doc["ends"][0]["tcp_retrans"],
        doc["ends"][0]["tcp_out_segs"],
        doc["ends"][1]["tcp_retrans"],
        doc["ends"][1]["tcp_out_segs"],
        SENT_LOST.map(|n| (n, soak_delta(pa, n))),
        RECEIVED_LOST.map(|n| (n, soak_delta(pb, n)))
    );
}

/// (3) `bench --rdma` over the lossy link: it completes, and the retries and NAKs it reports for
/// this end's device are the ones sysfs shows (bench reads them at the test's start and end,
/// inside the reads here: at most a window of operations, each retried once, apart).
fn bench_reports_the_retries_the_device_counted(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let before = hw(a);
    let doc = linerate_json(
        a,
        &format!("bench {server} --rdma --provider verbs --device rxe0 -t 8 -J"),
        240,
    );
    let after = hw(a);
    let t = &doc["tests"][0];
    if !t["error"].is_null() {
        let log = b
            .stop(serve, Duration::from_secs(5))
            .map_or_else(|e| e.to_string(), |o| format!("{}{}", o.stdout, o.stderr));
        panic!(
            "bench --rdma over {LOSS} loss did not complete: {}; sysfs on a: {before:?} → \
             {after:?}; the server's log:\n{log}",
            t["error"]
        );
    }
    assert_eq!(t["rdma"]["device"], "rxe0", "{t}");
    let counted: BTreeMap<String, u64> = t["rdma"]["device_counters"]
        .as_array()
        .unwrap_or_else(|| panic!("no device_counters in {t}"))
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["delta"].as_u64().unwrap(),
            )
        })
        .collect();
    let window = t["rdma"]["window"].as_u64().unwrap_or(16);
    for name in SENT_LOST {
        let reported = counted.get(&format!("rxe0/1 {name}")).copied().unwrap_or(0);
        let moved = rose(&before, &after, name);
        assert!(
            reported > 0 && reported <= moved && moved - reported <= window,
            "{name}: bench reports {reported}, sysfs moved {moved}: {counted:?}"
        );
    }
    eprintln!("bench --rdma over {LOSS}: {counted:?}");
}
