//! `linerate soak` and `bench --rdma` over a real lossy link: two guests of Debian's stock
//! kernel (the lab, docs/lab.md) joined by a wire, soft-RoCE (rxe0) on each. Over the clean link
//! soak calls both ends clean; with `netem loss` on one guest's egress, the same soak names TCP's
//! retransmits on the end whose sends were lost, in its send direction, while the other
//! direction is judged clean in the same run. Each soak runs its own RDMA writes over rxe beside
//! its TCP streams (the route leaves through rxe's netdev, so soak adds them without `--rdma`):
//! over the clean link no RDMA counter is named, over the lossy one rxe's own retransmit and
//! sequence-error counters are named on a's send direction and b's receive direction, each no
//! more than sysfs moved. `bench --rdma` over that link completes and reports the retries and
//! sequence errors the device counted, as sysfs shows them. Functional facts only: under TCG
//! the rates say nothing.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::lab::{self, hw, linerate, linerate_json, rose, sh};
use linerate_lab::{Bg, Guest, LabSpec};
use serde_json::Value;

/// The loss netem applies to a's egress: enough that every run loses packets, low enough that
/// rxe's go-back-N completes writes under TCG (at 2 % a window of 64 KiB writes stalls past
/// bench's 5 s without a completion).
const LOSS: &str = "1%";

/// The soak: one TCP stream each way (more streams' handshake can outlast the server's 5 s under
/// TCG) and RDMA writes beside them, four in flight (with the default sixteen, rxe's go-back-N
/// over 1 % loss stalled the writes past the server's grace under TCG), judged with `min_bits`
/// lowered to what an emulated link carries in seconds.
const SOAK: &str =
    "--duration 15s --interval 1s -P 1 --rdma-window 4 --threshold min_bits=1e6 --json";

/// rxe's requester counters that say a packet it sent was lost (Linux 6.1).
const SENT_LOST: [&str; 2] = ["completer_retry_err", "rcvd_seq_err"];

/// rxe's responder counters that say a packet sent to it came out of sequence or twice, so its
/// peer retransmitted (Linux 6.1).
const RECEIVED_LOST: [&str; 2] = ["out_of_seq_request", "duplicate_request"];

/// The RDMA writes over the lossy link stalled, as the run says: the initiator waited its whole
/// stall limit (5 s) for a completion, or its last writes took it past the server's grace (the
/// server ends the test, the initiator sees its peer go). Over a lossy rxe link under TCG a lost
/// packet's retransmission now and then comes that late (one soak and one bench in five here,
/// and the bench's drain with both host cores busy), and the run keeps what it measured.
fn stalled(error: &str) -> bool {
    error.contains("operations outstanding")
        || error.contains("did not finish by the test's end and its grace")
}

/// A soak from a to b; its document, which must be complete (over a `lossy` link its RDMA
/// traffic may have [`stalled`]: the soak then says so and judges what it sampled),
/// with the server's log in the message otherwise; and rxe0's counters on a and b before and
/// after it.
fn soak(a: &Guest, b: &Guest, server: &str, serve: Bg, lossy: bool) -> (Value, [Moved; 2]) {
    let before = [hw(a, "rxe0"), hw(b, "rxe0")];
    let o = linerate(a, &format!("soak {server} {SOAK}"), 180);
    let after = [hw(a, "rxe0"), hw(b, "rxe0")];
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "soak: not JSON ({e}); {}; stderr: {}",
            o.status.describe(),
            o.stderr
        )
    });
    let error = doc["error"].as_str().unwrap_or_default();
    if lossy && error.starts_with("rdma traffic: ") && stalled(error) {
        eprintln!("the lossy soak's RDMA writes stalled: {error}");
    } else if !doc["error"].is_null() {
        let log = lab::server_log(b, serve);
        panic!(
            "the soak stopped early: {}; its stderr: {}; the server's log:\n{log}",
            doc["error"], o.stderr
        );
    }
    assert_eq!(
        doc["params"]["rdma"], true,
        "the route is rxe's: {}",
        doc["params"]
    );
    let [ba, bb] = before;
    let [aa, ab] = after;
    (doc, [(ba, aa), (bb, ab)])
}

/// One device's counters before and after.
type Moved = (BTreeMap<String, u64>, BTreeMap<String, u64>);

/// The delta soak reports for counter `name` of the port `p` (0 when it has none).
fn soak_delta(p: &Value, name: &str) -> u64 {
    p["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .and_then(|c| c["delta"].as_u64())
        .unwrap_or(0)
}

/// The RDMA writes ran beside the streams: a's rxe sent packets and b's took them in, as soak
/// sampled them, no more than sysfs moved.
fn rdma_ran(pa: &Value, pb: &Value, hw: &[Moved; 2]) {
    for (p, name, (before, after)) in [(pa, "sent_pkts", &hw[0]), (pb, "rcvd_pkts", &hw[1])] {
        let d = soak_delta(p, name);
        assert!(
            d > 0 && d <= rose(before, after, name),
            "{name}: soak {d}, sysfs {}: {p}",
            rose(before, after, name)
        );
    }
}

/// The port of `end` (`local` is a, `remote` is b) that carried its TCP streams: the one soak
/// judged TCP's retransmits on.
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
        .find(|p| {
            p["checks"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["rule"] == "tcp_retransmits"))
        })
        .unwrap_or_else(|| panic!("no port with a tcp_retransmits check at the {end} end: {e}"))
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

#[test]
fn soak_and_bench_name_the_lossy_direction_over_rxe() {
    lab::on_each_kernel("lab_soak", soak_on);
}

/// The test on one kernel (`LINERATE_LAB_KERNELS`).
fn soak_on(kernel: &str) {
    let Some((lab, _serial)) = lab::boot_on(kernel, &LabSpec::pair()) else {
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

/// (1) No netem: the soak's verdict is clean, both ends' TCP checks ran and stayed below their
/// limit, and no rule fired on either end.
fn clean_link_is_clean(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let (doc, hw) = soak(a, b, server, serve, false);
    assert_eq!(doc["verdict"], "clean", "{doc}");
    for end in ["local", "remote"] {
        let p = port(&doc, end);
        assert_eq!(p["verdict"], "clean", "{end}: {p}");
        let c = tcp_check(p);
        assert_eq!(c["fired"], false, "{end}: {c}");
        assert!(findings(p, "tcp_retransmits").is_empty(), "{end}: {p}");
        assert!(findings(p, "rdma_retransmits").is_empty(), "{end}: {p}");
    }
    rdma_ran(port(&doc, "local"), port(&doc, "remote"), &hw);
}

/// (2) a's egress drops packets. a's sends were lost: TCP retransmitted above its limit on a,
/// named as a's send direction, and rxe's requester counters on a, named as a's send direction,
/// with its responder counters on b, named as b's receive direction. b's own sends were not
/// lost: its TCP check ran and stayed below the limit, and nothing on either end names b → a.
fn lossy_direction_is_named(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let (doc, hw) = soak(a, b, server, serve, true);
    let (pa, pb) = (port(&doc, "local"), port(&doc, "remote"));
    assert_ne!(doc["verdict"], "clean", "{doc}");

    let c = tcp_check(pa);
    assert_eq!(c["fired"], true, "a's TCP: {c}");
    let f = findings(pa, "tcp_retransmits");
    assert!(
        f.len() == 1 && f[0]["text"].as_str().unwrap().contains("send direction"),
        "{f:?}"
    );
    let c = tcp_check(pb);
    assert_eq!(c["fired"], false, "b's TCP, the clean direction: {c}");
    assert!(findings(pb, "tcp_retransmits").is_empty(), "{pb}");
    // rxe's own counters, each end with its direction, no more than sysfs moved.
    rdma_ran(pa, pb, &hw);
    for (p, names, words, (before, after)) in [
        (pa, SENT_LOST, "this end's send direction", &hw[0]),
        (pb, RECEIVED_LOST, "this end's receive direction", &hw[1]),
    ] {
        let f = findings(p, "rdma_retransmits");
        assert!(!f.is_empty(), "no rdma_retransmits: {p}");
        for f in f {
            let name = f["counter"].as_str().unwrap_or_default();
            assert!(
                names.contains(&name),
                "{f}; every finding: {}",
                p["findings"]
            );
            assert!(f["text"].as_str().unwrap().contains(words), "{f}");
            let (d, moved) = (soak_delta(p, name), rose(before, after, name));
            assert!(d > 0 && d <= moved, "{name}: soak {d}, sysfs {moved}");
        }
    }
    // Nothing names the clean direction, b → a.
    for (p, words) in [(pa, "receive direction"), (pb, "send direction")] {
        for f in p["findings"].as_array().unwrap() {
            assert!(!f["text"].as_str().unwrap().contains(words), "{f}");
        }
    }
    eprintln!(
        "lossy soak: a TCP {} of {} segments, b TCP {} of {}; rxe on a {:?}, on b {:?}",
        doc["ends"][0]["tcp_retrans"],
        doc["ends"][0]["tcp_out_segs"],
        doc["ends"][1]["tcp_retrans"],
        doc["ends"][1]["tcp_out_segs"],
        SENT_LOST.map(|n| (n, soak_delta(pa, n))),
        RECEIVED_LOST.map(|n| (n, soak_delta(pb, n))),
    );
}

/// (3) `bench --rdma` over the lossy link: it completes (or says that it [`stalled`]),
/// and the retries and NAKs it reports for this end's device are the ones sysfs shows (bench
/// reads them at the test's start and end, inside the reads here: at most a window of
/// operations, each retried once, apart).
fn bench_reports_the_retries_the_device_counted(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let before = hw(a, "rxe0");
    // Four writes in flight, not sixteen: a loss rxe learns of by a sequence NAK costs a
    // go-back-N of the window, one at the tail of a write its retransmit timer; the drain at
    // the test's end stays inside the server's grace on a loaded machine (with sixteen 64 KiB
    // writes in flight it did not, once, beside another lab and a build; with four, once, with
    // both host cores busy: [`stalled`]).
    let doc = linerate_json(
        a,
        &format!("bench {server} --rdma --provider verbs --device rxe0 -t 6 -w 4 -J"),
        240,
    );
    let after = hw(a, "rxe0");
    let t = &doc["tests"][0];
    let error = t["error"].as_str().unwrap_or_default();
    if stalled(error) {
        eprintln!("bench --rdma over {LOSS} stalled: {error}");
    } else if !t["error"].is_null() {
        let log = lab::server_log(b, serve);
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
