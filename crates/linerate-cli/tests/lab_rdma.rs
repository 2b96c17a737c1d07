//! linerate's verbs path for real: two guests of Debian's stock kernel (the lab, docs/lab.md),
//! joined by a wire, each with soft-RoCE devices (rxe) on two NICs. `bench --rdma` runs send,
//! write and read bandwidth, latency and the message-size sweep through libfabric's `verbs`
//! provider and rdma_cm; the bytes each reports agree with the packets the receiving RDMA device
//! itself counted; `doctor`'s RDMA step runs on verbs; a wrong provider or device is refused
//! with what this host has. Functional facts only: under TCG the rates say nothing.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::lab::{self, hw, linerate, linerate_json, rose};
use linerate_lab::{Bg, Guest, LabSpec, NicSpec};
use serde_json::Value;

/// The path MTU of rxe over a 1500-byte netdev: every RoCE data packet carries 1024 bytes.
const RXE_MTU: u64 = 1024;

fn spec() -> LabSpec {
    let nic = NicSpec::parse_short("virtio:40000@5x4").unwrap();
    LabSpec::build(2, &[nic, nic], true)
}

/// The data packets a receiving rxe device took in: received, less duplicates of packets it
/// already had and packets out of sequence it dropped (a retransmission is counted twice by
/// the sender, once by this).
fn taken_in(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> u64 {
    rose(before, after, "rcvd_pkts")
        - rose(before, after, "duplicate_request")
        - rose(before, after, "out_of_seq_request")
}

/// The one test of a bench document, checked to have run on verbs through rxe0; a failure
/// says what the server logged.
fn result<'a>(doc: &'a Value, b: &Guest, serve: Bg) -> &'a Value {
    let t = &doc["tests"][0];
    if !t["error"].is_null() {
        let log = lab::server_log(b, serve);
        panic!("the test failed: {}; the server's log:\n{log}", t["error"]);
    }
    assert_eq!(t["rdma"]["provider"], "verbs", "{t}");
    assert_eq!(t["rdma"]["device"], "rxe0", "{t}");
    t
}

#[test]
fn bench_and_doctor_run_rdma_over_verbs_between_two_guests() {
    lab::on_each_kernel("lab_rdma", rdma_on);
}

/// The test on one kernel (`LINERATE_LAB_KERNELS`).
fn rdma_on(kernel: &str) {
    let Some((lab, _serial)) = lab::boot_on(kernel, &spec()) else {
        return;
    };
    let (a, b) = (lab.guest("a"), lab.guest("b"));
    let server = b.addr(0).to_string();
    let serve = lab::serve(b, "0.0.0.0");

    bandwidth_agrees_with_the_devices_counters(a, b, &server, serve);
    latency_and_sweep(a, b, &server, serve);
    devices_and_providers(a, b, &server);
    doctor_runs_rdma_on_verbs(a, &server);

    let out = b.stop(serve, Duration::from_secs(5)).unwrap();
    assert!(
        out.stdout.contains("\"provider\":\"verbs\""),
        "{}",
        out.stdout
    );
}

/// Bandwidth of each operation against what the receiving device counted.
fn bandwidth_agrees_with_the_devices_counters(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    // Bandwidth, one message in flight at a time (-w 1): the bytes bench reports and the data
    // packets the receiving device took in agree within 1% (the last message may be in flight
    // when the time is up, and the connection's own few packets are counted too).
    for (op, receiver) in [("write", b), ("send", b), ("read", a)] {
        let before = hw(receiver, "rxe0");
        let doc = linerate_json(
            a,
            &format!("bench {server} --rdma --provider verbs --op {op} -l 64K -w 1 -t 5 -J"),
            240,
        );
        let after = hw(receiver, "rxe0");
        let t = result(&doc, b, serve);
        assert_eq!(t["kind"], format!("rdma_{op}_bw"));
        let bytes = t["bytes"].as_u64().unwrap();
        assert!(bytes >= 64 * 1024, "{op}: {bytes} bytes");
        let device = taken_in(&before, &after) * RXE_MTU;
        let gap = (device as f64 - bytes as f64).abs() / bytes as f64;
        assert!(
            gap <= 0.01,
            "{op}: bench says {bytes} bytes, {} took in {device} ({:.2}% apart): {before:?} → {after:?}",
            receiver.name,
            gap * 100.0
        );
        // This end's own device, as bench reports it: what it sent or received.
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
        let mine = if op == "read" {
            "rxe0/1 rcvd_pkts"
        } else {
            "rxe0/1 sent_pkts"
        };
        let packets = counted.get(mine).copied().unwrap_or(0);
        assert!(
            packets * RXE_MTU >= bytes,
            "{op}: this end's {mine} {packets} carries less than {bytes} bytes: {counted:?}"
        );
    }
}

/// perftest's `t_typical` of `ib_read_lat -s 2` from its output: the row of 2-byte reads,
/// fifth column (`#bytes #iterations t_min t_max t_typical t_avg ...`).
fn t_typical(out: &str) -> Option<f64> {
    out.lines()
        .map(str::split_whitespace)
        .find_map(|mut f| (f.next() == Some("2")).then(|| f.nth(3)?.parse().ok())?)
}

/// linerate's read latency and `ib_read_lat`'s on the same devices, alternating, three
/// rounds: on the same convention (a read's whole completion, as perftest reports it) the
/// median ratio came out 0.89 (rounds 0.95, 0.88, 0.89 on 6.1 under TCG); halved, as linerate
/// reported reads before, it would be half of that, 0.44-0.48, and at most 0.8 even with the
/// 1.6x that libfabric's path cost over rxe in the lab's write comparisons. The margin, 0.65
/// to 3, sits between the two: room for TCG's noise and linerate's own cost, not for a halving.
fn read_latency_as_ib_read_lat_reads_it(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    let mut ratios = Vec::new();
    for round in 0..3u16 {
        let port = 18_700 + round;
        let pt = b
            .spawn(&format!(
                "exec timeout 120 ib_read_lat -d rxe0 -R -F -p {port} -s 2 -n 1000"
            ))
            .unwrap();
        let listening = (0..60).any(|_| {
            let up = b
                .sh(&format!(
                    "rdma res show cm_id 2>/dev/null | grep LISTEN | grep -c ':{port} ' || true"
                ))
                .is_ok_and(|n| n.trim() != "0");
            if !up {
                std::thread::sleep(Duration::from_millis(500));
            }
            up
        });
        assert!(listening, "ib_read_lat listens on port {port} within 30 s");
        let client = a
            .run(
                &format!("timeout 120 ib_read_lat -d rxe0 -R -F -p {port} -s 2 -n 1000 {server}"),
                Duration::from_secs(150),
            )
            .unwrap();
        let _ = b.wait(pt, Duration::from_secs(30));
        let theirs = t_typical(&client.stdout).unwrap_or_else(|| {
            panic!(
                "no t_typical in ib_read_lat's output: {}{}",
                client.stdout, client.stderr
            )
        });
        let doc = linerate_json(
            a,
            &format!("bench {server} --rdma --op read --latency -l 2 -t 2 -J"),
            240,
        );
        let ours = result(&doc, b, serve)["rdma"]["perftest_p50_us"]
            .as_f64()
            .unwrap();
        eprintln!("read latency round {round}: linerate {ours} µs, ib_read_lat {theirs} µs");
        ratios.push(ours / theirs);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[1];
    assert!(
        (0.65..=3.0).contains(&median),
        "linerate's read latency against ib_read_lat's: {ratios:?} (median {median:.2})"
    );
}

/// Latency of each operation, and the sweep.
fn latency_and_sweep(a: &Guest, b: &Guest, server: &str, serve: Bg) {
    // Latency of each operation, with perftest's figure on perftest's terms: half the round
    // trip for write and send, a read's whole completion for read.
    for op in ["write", "send", "read"] {
        let doc = linerate_json(
            a,
            &format!("bench {server} --rdma --op {op} --latency -t 2 -J"),
            240,
        );
        let t = result(&doc, b, serve);
        assert_eq!(t["kind"], format!("rdma_{op}_lat"));
        let p50 = t["latency_us"]["p50"].as_f64().unwrap();
        assert!(p50 > 0.0, "{t}");
        let perftest = t["rdma"]["perftest_p50_us"].as_f64().unwrap();
        let (convention, divisor) = if op == "read" {
            ("completion", 1.0)
        } else {
            ("half_round_trip", 2.0)
        };
        assert_eq!(t["rdma"]["perftest_convention"], convention, "{t}");
        assert!((perftest * divisor - p50).abs() < 0.01, "{t}");
    }
    read_latency_as_ib_read_lat_reads_it(a, b, server, serve);

    // The sweep: every power of two from 2 bytes to -l, each carried.
    let doc = linerate_json(
        a,
        &format!("bench {server} --rdma --sweep -l 4K -t 4 -J"),
        300,
    );
    let sizes: Vec<u64> = result(&doc, b, serve)["rdma"]["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert!(r["messages"].as_u64().unwrap() > 0, "{r}");
            r["size_bytes"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(sizes, (1..=12).map(|k| 1u64 << k).collect::<Vec<_>>());
}

/// `--device` and `--provider`: used when right, refused with what this host has when wrong.
fn devices_and_providers(a: &Guest, b: &Guest, server: &str) {
    // A second device on another wire: used when named and on the path, refused when not.
    let other = b.addr(1).to_string();
    let doc = linerate_json(
        a,
        &format!("bench {other} --rdma --device rxe1 -t 1 -J"),
        240,
    );
    assert_eq!(doc["tests"][0]["rdma"]["device"], "rxe1", "{doc}");
    let o = linerate(a, &format!("bench {server} --rdma --device rxe1 -t 1"), 60);
    assert!(!o.success());
    assert!(
        o.stderr
            .contains("--device rxe1 does not carry the path to")
            && o.stderr.contains("use --device rxe0"),
        "{}",
        o.stderr
    );
    let o = linerate(a, &format!("bench {server} --rdma --device rxe9 -t 1"), 60);
    assert!(!o.success());
    assert!(
        o.stderr
            .contains("--device rxe9: no such RDMA device on this host (its devices: rxe0, rxe1)"),
        "{}",
        o.stderr
    );
    let o = linerate(
        a,
        &format!("bench {server} --rdma --provider nosuch -t 1"),
        60,
    );
    assert!(!o.success());
    assert!(
        o.stderr.contains("no provider `nosuch`") && o.stderr.contains("verbs"),
        "{}",
        o.stderr
    );
}

/// Doctor's RDMA step on this path.
fn doctor_runs_rdma_on_verbs(a: &Guest, server: &str) {
    // Doctor's RDMA step runs on verbs, beside TCP, on this path.
    let doc = linerate_json(a, &format!("doctor {server} --quick --json"), 600);
    let rdma = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "rdma_write_bw")
        .unwrap_or_else(|| panic!("doctor ran no RDMA test: {doc}"));
    assert!(rdma["error"].is_null(), "{rdma}");
    assert_eq!(rdma["rdma"]["provider"], "verbs", "{rdma}");
    assert!(rdma["gbps"].as_f64().unwrap() > 0.0, "{rdma}");
    assert!(
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["id"] != "unexplained"),
        "{doc}"
    );
}
