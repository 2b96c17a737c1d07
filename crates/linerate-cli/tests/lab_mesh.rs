//! `linerate mesh` on a real kernel's faults (the lab, docs/lab.md): one guest of Debian's 6.1
//! kernel, four network namespaces on a bridge in it (198.18.20.10-13), every veth end shaped
//! to 50 Mbit/s by tbf so healthy links are alike, and two faults that only `sch_netem` makes
//! (this machine's kernel has none): `netem loss 3%` on the bridge port into rank 1 (what rank
//! 1 receives is lost; outside the node, as a bad cable or switch port is) and `netem delay
//! 20ms` on rank 2's own egress. The four ranks are started by Open MPI's `mpirun`, each
//! entering its namespace through `ip netns exec`, as users run it.
//!
//! What is checked: rank 1 is rx-degraded because packets are lost (not merely slow), every
//! link into it is bad and put down to it; every round trip through rank 2 is late and put down
//! to rank 2, which a round trip cannot give a direction; nothing else is bad. Under TCG the
//! guest is slow and shared: figures are never compared with a constant, only the verdicts.
//!
//! `LINERATE_LAB_MESH_CAPTURE=DIR` keeps the document as `DIR/lab-mesh.json` (how
//! `crates/linerate-mesh/tests/fixtures/lab-captures/` was made).

mod common;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::lab::{self, sh};
use common::BIN;
use linerate_lab::LabSpec;
use linerate_testkit::schema;
use serde_json::Value;

const RATE: &str = "50mbit";
/// The namespaces, veths and bridge, then the shapers and the two faults.
fn fabric_script() -> String {
    let mut s = String::from(
        "set -e\nmodprobe -a veth bridge sch_tbf sch_netem\nip link add mlbr type bridge\nip link set mlbr up\n",
    );
    for i in 0..4 {
        write!(
            s,
            "ip netns add mln{i}\n\
             ip link add mlh{i} type veth peer name eth0 netns mln{i}\n\
             ip link set mlh{i} master mlbr up\n\
             ip -n mln{i} addr add 198.18.20.{a}/24 dev eth0\n\
             ip -n mln{i} link set eth0 up\n\
             ip -n mln{i} link set lo up\n\
             tc qdisc replace dev mlh{i} root handle 1: tbf rate {RATE} burst 32kb latency 100ms\n\
             tc -n mln{i} qdisc replace dev eth0 root handle 1: tbf rate {RATE} burst 32kb latency 100ms\n",
            a = 10 + i
        )
        .unwrap();
    }
    // Rank 1 receives through a lossy port; rank 2's own egress is delayed.
    s.push_str("tc qdisc add dev mlh1 parent 1:1 handle 10: netem loss 3%\n");
    s.push_str("tc -n mln2 qdisc add dev eth0 parent 1:1 handle 10: netem delay 20ms\n");
    s
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

fn link(doc: &Value, tx: u64, rx: u64) -> &Value {
    doc["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["tx"] == tx && l["rx"] == rx)
        .unwrap_or_else(|| panic!("no link {tx}→{rx} in {doc}"))
}

fn ends(l: &Value) -> (u64, u64) {
    (l["tx"].as_u64().unwrap(), l["rx"].as_u64().unwrap())
}

fn is_bad(l: &Value) -> bool {
    ["slow", "lossy", "unreachable", "cut_short"].contains(&l["status"].as_str().unwrap())
}

fn explained_by(l: &Value) -> Vec<u64> {
    l["explained_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn mpirun_mesh_names_the_lossy_receiver_and_the_late_rank_on_a_real_kernel() {
    if !have("mpirun") {
        return linerate_testkit::skip(
            "mpirun not installed (openmpi-bin; scripts/setup-tests.sh)",
        );
    }
    let mut spec = LabSpec::single(Vec::new(), false);
    // Four ranks and mpirun's daemon: two vCPUs (two host threads under TCG).
    spec.guests[0].cpus = 2;
    let Some((lab, _serial)) = lab::boot(&spec) else {
        return;
    };
    let g = lab.guest("a");
    sh(g, &fabric_script(), 120);
    let shown = sh(
        g,
        "tc qdisc show dev mlh1; tc -n mln2 qdisc show dev eth0",
        30,
    );
    assert!(
        shown.contains("netem") && shown.contains("loss 3%") && shown.contains("delay 20"),
        "{shown}"
    );

    let scratch = lab.scratch("a");
    let wrapper = scratch.join("enter-rank-ns");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nexec ip netns exec mln$OMPI_COMM_WORLD_RANK \"$@\"\n",
    )
    .unwrap();
    let started = Instant::now();
    let out = g
        .run(
            &format!(
                "chmod +x {w} && cd /tmp && exec mpirun --allow-run-as-root --oversubscribe -np 4 {w} \
                 {BIN} mesh --coordinator 198.18.20.10:5302 --time 2 --join-timeout 60 --json",
                w = wrapper.display()
            ),
            Duration::from_secs(420),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let took = started.elapsed();
    eprintln!(
        "mesh under mpirun in the guest: {:.1} s",
        took.as_secs_f64()
    );
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no mesh document ({e}); {}; stdout: {}; stderr: {}",
            out.status.describe(),
            out.stdout,
            out.stderr.chars().take(4000).collect::<String>()
        )
    });
    if let Some(dir) = std::env::var_os("LINERATE_LAB_MESH_CAPTURE") {
        let path = std::path::Path::new(&dir).join("lab-mesh.json");
        std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        eprintln!("kept {}", path.display());
    }
    schema::assert_matches("mesh.schema.json", &doc);

    joined_from_namespaces(&doc);
    lossy_receiver(&doc);
    late_rank(&doc);
    nothing_else(&doc);
    assert!(
        took < Duration::from_secs(300),
        "the mesh took {:.0} s",
        took.as_secs_f64()
    );
}

/// Every rank joined from its namespace, under the rank mpirun gave it; faults were found.
fn joined_from_namespaces(doc: &Value) {
    let dump = || serde_json::to_string_pretty(doc).unwrap();
    assert_eq!(doc["size"], 4);
    assert_eq!(doc["lost"], serde_json::json!([]), "{}", dump());
    for (i, r) in doc["ranks"].as_array().unwrap().iter().enumerate() {
        assert_eq!(r["identity_source"], "open_mpi", "{r}");
        let a = r["data_addr"].as_str().unwrap_or_default();
        assert!(
            a.starts_with(&format!("198.18.20.{}:", 10 + i)),
            "rank {i} at {a}"
        );
    }
    assert_eq!(doc["healthy"], false, "{}", dump());
}

/// Loss into rank 1: rank 1 is degraded as a receiver, by lost packets, and only that way.
fn lossy_receiver(doc: &Value) {
    let dump = || serde_json::to_string_pretty(doc).unwrap();
    let nodes = doc["nodes"].as_array().unwrap();
    let n1 = &nodes[1];
    assert_eq!(n1["status"], "rx_degraded", "{}", dump());
    let e1 = n1["explanation"].as_str().unwrap();
    assert!(e1.contains("packets are lost receiving"), "{e1}");
    for tx in [0, 2, 3] {
        let l = link(doc, tx, 1);
        assert!(is_bad(l), "{tx}→1: {l}");
        assert!(explained_by(l).contains(&1), "{tx}→1: {l}");
    }
    assert!(
        [0, 2, 3]
            .iter()
            .any(|&tx| link(doc, tx, 1)["status"] == "lossy"),
        "no link into rank 1 judged lossy: {}",
        dump()
    );
}

/// Delay out of rank 2: every round trip through it stood out, and is put down to it.
fn late_rank(doc: &Value) {
    let dump = || serde_json::to_string_pretty(doc).unwrap();
    let late: Vec<&Value> = doc["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["latency_outlier"] == true)
        .collect();
    let mut pairs: Vec<(u64, u64)> = late
        .iter()
        .map(|l| {
            let (a, b) = ends(l);
            (a.min(b), a.max(b))
        })
        .collect();
    pairs.sort_unstable();
    assert_eq!(pairs, [(0, 2), (1, 2), (2, 3)], "{}", dump());
    for l in &late {
        assert!(is_bad(l), "{l}");
        assert!(explained_by(l).contains(&2), "{l}");
        let e = l["explanation"].as_str().unwrap();
        assert!(
            e.contains("every round trip through lab-a/2 is late"),
            "{e}"
        );
    }
    let e2 = doc["nodes"][2]["explanation"].as_str().unwrap();
    assert!(e2.contains("round trips through lab-a/2 are late"), "{e2}");
}

/// Nothing else: no other link is bad, no other node degraded.
fn nothing_else(doc: &Value) {
    let nodes = doc["nodes"].as_array().unwrap();
    for l in doc["links"].as_array().unwrap() {
        let (tx, rx) = ends(l);
        let faulty = rx == 1 || (l["latency_outlier"] == true && (tx == 2 || rx == 2));
        assert!(faulty || !is_bad(l), "false positive {tx}→{rx}: {l}");
    }
    for r in [0, 2, 3] {
        let s = nodes[r]["status"].as_str().unwrap();
        assert!(["ok", "unconfirmed"].contains(&s), "node {r}: {}", nodes[r]);
    }
}
