//! `linerate mesh` on an emulated fabric: ranks in network namespaces on a bridge (198.18.0.0/15,
//! the benchmarking range), every link shaped to 1 Gbit/s with `tc tbf` so healthy links are
//! deterministic on a small machine, and injected faults.
//!
//! Needs root (`ip netns`, `tc`, an `ifb` device); elsewhere each test records a skip with
//! `linerate_testkit::skip` and returns. Everything a test creates is named after this
//! process's PID and a counter, and removed by the guard's `Drop` (also when the test fails);
//! the ranks are killed by PID. No timing is asserted: every wait is bounded, and the ranks run
//! under `timeout(1)`.

mod common;

use linerate_testkit::schema;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{is_root, run, serial, BusyLoops, BIN};

static NEXT: AtomicU32 = AtomicU32::new(1);

/// Namespaces `{p}n{i}` on bridge `{p}br`, rank i at 198.18.0.(10+i), and the ranks started.
struct Fabric {
    p: String,
    n: u32,
    ifbs: Vec<String>,
    ranks: Vec<Option<Child>>,
    dir: tempfile::TempDir,
}

impl Drop for Fabric {
    fn drop(&mut self) {
        for c in self.ranks.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for i in 0..self.n {
            let _ = run("ip", &["netns", "del", &self.ns(i)]);
            let _ = run("ip", &["link", "del", &self.host_if(i)]);
        }
        for d in &self.ifbs {
            let _ = run("ip", &["link", "del", d]);
        }
        let _ = run("ip", &["link", "del", &self.bridge()]);
    }
}

fn must(prog: &str, args: &[&str]) {
    if let Err(e) = run(prog, args) {
        panic!("{e}");
    }
}

impl Fabric {
    /// `None` (after recording the skip) where namespaces, tbf or ifb are not available.
    fn new(n: u32) -> Option<Fabric> {
        Self::build(n, true)
    }

    /// Without the 1 Gbit/s shapers: the links run as fast as this machine's CPU lets them.
    fn unshaped(n: u32) -> Option<Fabric> {
        Self::build(n, false)
    }

    fn build(n: u32, shaped: bool) -> Option<Fabric> {
        if !is_root() {
            linerate_testkit::skip("needs root for ip netns, tc and ifb");
            return None;
        }
        let p = format!(
            "lm{}x{}",
            std::process::id() % 10_000_000,
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let f = Fabric {
            p,
            n,
            ifbs: Vec::new(),
            ranks: Vec::new(),
            dir: tempfile::tempdir().expect("a temporary directory"),
        };
        if let Err(e) = run("ip", &["link", "add", &f.bridge(), "type", "bridge"]) {
            linerate_testkit::skip(format!("cannot create a bridge: {e}"));
            return None;
        }
        must("ip", &["link", "set", &f.bridge(), "up"]);
        for i in 0..n {
            if let Err(e) = f.node(i, shaped) {
                linerate_testkit::skip(format!("cannot build the fabric: {e}"));
                return None;
            }
        }
        Some(f)
    }

    fn bridge(&self) -> String {
        format!("{}br", self.p)
    }
    fn ns(&self, i: u32) -> String {
        format!("{}n{i}", self.p)
    }
    fn host_if(&self, i: u32) -> String {
        format!("{}h{i}", self.p)
    }
    fn ip(i: u32) -> String {
        format!("198.18.0.{}", 10 + i)
    }

    /// Node i: its namespace, its veth on the bridge, 1 Gbit/s into and out of it when `shaped`.
    fn node(&self, i: u32, shaped: bool) -> Result<(), String> {
        let (ns, h) = (self.ns(i), self.host_if(i));
        let addr = format!("{}/24", Self::ip(i));
        run("ip", &["netns", "add", &ns])?;
        run(
            "ip",
            &[
                "link", "add", &h, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ],
        )?;
        run("ip", &["link", "set", &h, "master", &self.bridge(), "up"])?;
        run("ip", &["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
        run("ip", &["-n", &ns, "link", "set", "eth0", "up"])?;
        run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        if !shaped {
            return Ok(());
        }
        self.shape_in(i, "1gbit")?;
        self.shape_out(i, "1gbit")
    }

    /// The rate into node i (its bridge port's egress).
    fn shape_in(&self, i: u32, rate: &str) -> Result<(), String> {
        run(
            "tc",
            &[
                "qdisc",
                "replace",
                "dev",
                &self.host_if(i),
                "root",
                "tbf",
                "rate",
                rate,
                "burst",
                "128kb",
                "latency",
                "100ms",
            ],
        )
        .map(drop)
    }

    /// The rate out of node i (its eth0's egress).
    fn shape_out(&self, i: u32, rate: &str) -> Result<(), String> {
        run(
            "tc",
            &[
                "-n",
                &self.ns(i),
                "qdisc",
                "replace",
                "dev",
                "eth0",
                "root",
                "tbf",
                "rate",
                rate,
                "burst",
                "128kb",
                "latency",
                "100ms",
            ],
        )
        .map(drop)
    }

    /// Node i receives at `rate` only, on its own side: eth0's ingress through an ifb device.
    fn shape_ingress(&mut self, i: u32, rate: &str) -> Result<(), String> {
        let (ns, ifb) = (self.ns(i), format!("{}i{i}", self.p));
        run("ip", &["link", "add", &ifb, "type", "ifb"])
            .map_err(|e| format!("no ifb device: {e}"))?;
        self.ifbs.push(ifb.clone());
        run("ip", &["link", "set", &ifb, "netns", &ns])?;
        run("ip", &["-n", &ns, "link", "set", &ifb, "up"])?;
        run(
            "tc",
            &[
                "-n", &ns, "qdisc", "add", "dev", "eth0", "handle", "ffff:", "ingress",
            ],
        )?;
        run(
            "tc",
            &[
                "-n", &ns, "filter", "add", "dev", "eth0", "parent", "ffff:", "protocol", "all",
                "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev",
                &ifb,
            ],
        )?;
        run(
            "tc",
            &[
                "-n", &ns, "qdisc", "add", "dev", &ifb, "root", "tbf", "rate", rate, "burst",
                "64kb", "latency", "100ms",
            ],
        )
        .map(drop)
    }

    fn out_path(&self, i: u32) -> PathBuf {
        self.dir.path().join(format!("rank{i}.out"))
    }
    fn err_path(&self, i: u32) -> PathBuf {
        self.dir.path().join(format!("rank{i}.err"))
    }

    /// Start rank i in its namespace: `linerate mesh --rank i --size n --coordinator rank 0`,
    /// under `timeout` so nothing outlives a hang.
    fn start(&mut self, i: u32, extra: &[&str]) {
        let (rank, size) = (i.to_string(), self.n.to_string());
        let coord = format!("{}:5302", Self::ip(0));
        let out = std::fs::File::create(self.out_path(i)).unwrap();
        let err = std::fs::File::create(self.err_path(i)).unwrap();
        let child = Command::new("timeout")
            .args([
                "-k",
                "5",
                "150",
                "ip",
                "netns",
                "exec",
                &self.ns(i),
                BIN,
                "mesh",
            ])
            .args(["--rank", &rank, "--size", &size, "--coordinator", &coord])
            .args(["-t", "1", "--join-timeout", "20"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn timeout(1)");
        while self.ranks.len() <= i as usize {
            self.ranks.push(None);
        }
        self.ranks[i as usize] = Some(child);
    }

    /// SIGKILL rank i: the process `timeout` runs (its child, by PID), so it dies without a word.
    fn kill(&mut self, i: u32) {
        if let Some(c) = self.ranks[i as usize].as_mut() {
            let pid = c.id();
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            for child in children.split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", child]).status();
            }
            let _ = c.wait();
        }
    }

    /// Wait for rank i (bounded by its `timeout`); its exit status, stdout and stderr.
    fn wait(&mut self, i: u32) -> (Option<i32>, String, String) {
        let code = self.ranks[i as usize]
            .as_mut()
            .map(|c| c.wait().expect("wait for a rank").code());
        self.ranks[i as usize] = None;
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        (
            code.flatten(),
            read(self.out_path(i)),
            read(self.err_path(i)),
        )
    }
}

fn node(doc: &Value, rank: u64) -> &Value {
    doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["rank"] == rank)
        .unwrap_or_else(|| panic!("no node {rank} in {doc}"))
}

#[test]
fn eight_nodes_four_faults_each_named_with_its_direction() {
    let _s = serial();
    let Some(mut f) = Fabric::new(8) else { return };
    // node 2 slow both ways, node 5 slow to send, node 6 slow to receive; rank 7 killed mid-run.
    f.shape_in(2, "300mbit").unwrap();
    f.shape_out(2, "300mbit").unwrap();
    f.shape_out(5, "300mbit").unwrap();
    if let Err(e) = f.shape_ingress(6, "300mbit") {
        linerate_testkit::skip(e);
        return;
    }
    for i in 1..8 {
        f.start(i, &[]);
    }
    f.start(0, &["--json"]);
    // The 14 rounds of 1 s tests last well past 6 s: rank 7 dies in the middle of the run.
    thread::sleep(Duration::from_secs(6));
    f.kill(7);
    let started = Instant::now();
    let (code, out, err) = f.wait(0);
    assert_ne!(code, Some(124), "rank 0 hung; stderr: {err}");
    assert_eq!(
        code,
        Some(1),
        "faults found: exit status 1; stderr: {err}\n{out}"
    );
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    schema::assert_matches("mesh.schema.json", &doc);
    assert_eq!(doc["healthy"], false);
    for (rank, want) in [
        (0, "ok"),
        (1, "ok"),
        (2, "both"),
        (3, "ok"),
        (4, "ok"),
        (5, "tx_degraded"),
        (6, "rx_degraded"),
        (7, "unreachable"),
    ] {
        let n = node(&doc, rank);
        let retests: Vec<&Value> = doc["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["phase"] == "retest")
            .collect();
        // Node 2's receive limit is invisible to it (on its bridge port): when other programs
        // held this machine's CPU during its retests, that side stays unconfirmed (`loaded`)
        // while its sending side, which its own egress tbf explains, is confirmed.
        let loaded_rx = rank == 2
            && n["status"] == "tx_degraded"
            && n["suspect"] == "both"
            && n["unconfirmed"] == "loaded";
        assert!(
            n["status"] == want || loaded_rx,
            "node {rank}: {n}\nretests: {retests:#?}"
        );
    }
    // Each shaped node's verdict names its shaper, on its side and in its direction (node 2's
    // receive limit sits on its bridge port, outside the node: only its egress tbf shows).
    let ifb6 = format!("{}i6", f.p);
    for (rank, want) in [
        (2, "eth0 egress tbf limits it to 0.3 Gb/s".to_string()),
        (5, "eth0 egress tbf limits it to 0.3 Gb/s".to_string()),
        (
            6,
            format!("eth0 ingress tbf (on {ifb6}) limits it to 0.3 Gb/s"),
        ),
    ] {
        let e = node(&doc, rank)["explanation"].as_str().unwrap_or_default();
        assert!(e.contains(&want), "node {rank}: {e}");
    }
    for (id, ranks) in [
        ("fleet.egress_limit", vec![2, 5]),
        ("fleet.ingress_limit", vec![6]),
    ] {
        assert!(
            doc["fleet"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["id"] == id && x["ranks"] == serde_json::json!(ranks)),
            "{id} on {ranks:?}: {}",
            doc["fleet"]
        );
    }
    assert!(err.contains("rank 7 unreachable"), "{err}");
    // No false positive: every bad link has a faulty sender (2, 5, 7) or receiver (2, 6, 7).
    for l in doc["links"].as_array().unwrap() {
        let bad = ["slow", "lossy", "unreachable"].contains(&l["status"].as_str().unwrap());
        let (tx, rx) = (l["tx"].as_u64().unwrap(), l["rx"].as_u64().unwrap());
        assert!(
            !bad || [2, 5, 7].contains(&tx) || [2, 6, 7].contains(&rx),
            "false positive: {l}"
        );
    }
    // Every other rank ends by itself once rank 0 is done.
    for i in 1..7 {
        let (code, out, err) = f.wait(i);
        assert_eq!(code, Some(0), "rank {i}: {err}");
        assert!(out.is_empty(), "rank {i} prints nothing: {out}");
    }
    assert!(started.elapsed() < Duration::from_secs(150));
}

#[test]
fn killing_rank_0_ends_every_other_rank_with_its_own_measurements() {
    let _s = serial();
    let Some(mut f) = Fabric::new(4) else { return };
    for i in 1..4 {
        f.start(i, &["--json-stream"]);
    }
    f.start(0, &["--json-stream"]);
    // Pairwise on 4 ranks: 6 rounds of 1 s tests; rank 0 dies after the first few.
    thread::sleep(Duration::from_secs(4));
    f.kill(0);
    let mut measured = 0;
    for i in 1..4 {
        let (code, out, err) = f.wait(i);
        assert_eq!(code, Some(2), "rank {i}: exit status 2; stderr: {err}");
        assert!(
            err.contains("the coordinator (rank 0 at") && err.contains("is gone"),
            "rank {i}: {err}"
        );
        for line in out.lines() {
            let m: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            schema::assert_matches("mesh-event.schema.json", &m);
            assert_eq!(
                m["tx"]["rank"], i,
                "rank {i} reports the flows it sent: {line}"
            );
            measured += 1;
        }
    }
    assert!(
        measured > 0,
        "the ranks measured something before rank 0 died"
    );
}

#[test]
fn a_fabric_with_every_core_busy_with_other_programs_accuses_nothing() {
    let _s = serial();
    // Four namespaces, unshaped: each link runs as fast as the CPU lets it, and the CPU is held
    // by busy loops. Slow figures are the load's: no link, node or cable may be blamed.
    let Some(mut f) = Fabric::unshaped(4) else {
        return;
    };
    let cores = thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let _load = BusyLoops::start(2 * cores, "300");
    for i in 1..4 {
        f.start(i, &[]);
    }
    f.start(0, &["--json"]);
    let (code, out, err) = f.wait(0);
    assert_ne!(code, Some(124), "rank 0 hung; stderr: {err}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    schema::assert_matches("mesh.schema.json", &doc);
    assert_eq!(doc["lost"], serde_json::json!([]), "{err}");
    let retests: Vec<&Value> = doc["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["phase"] == "retest")
        .collect();
    for l in doc["links"].as_array().unwrap() {
        let e = l["explanation"].as_str().unwrap();
        assert!(
            !["slow", "lossy", "unreachable", "cut_short"].contains(&l["status"].as_str().unwrap())
                && !e.contains("suspect this link"),
            "blamed under load: {l}\nretests: {retests:#?}"
        );
    }
    for n in doc["nodes"].as_array().unwrap() {
        assert!(
            ["ok", "unconfirmed"].contains(&n["status"].as_str().unwrap()),
            "blamed under load: {n}\nretests: {retests:#?}"
        );
    }
    assert_eq!(code, Some(0), "healthy: {err}");
    for i in 1..4 {
        let (code, _, err) = f.wait(i);
        assert_eq!(code, Some(0), "rank {i}: {err}");
    }
}
