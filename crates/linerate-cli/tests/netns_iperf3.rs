//! `linerate bench --iperf3` against a stock `iperf3 -s` (Debian's, in CI) across a veth pair
//! between two network namespaces the test creates and removes: TCP, reverse, parallel, UDP
//! and bidir, each checked against the server's own JSON (`iperf3 -s -1 -J`), the bytes linerate
//! counts within 1 % of the server's; a busy server said in plain words; and `linerate bench`
//! without `--iperf3` naming the flag when it reaches an iperf3 server.
//!
//! Needs root (`ip netns`) and iperf3; elsewhere each test records a skip. Holds `serial()`
//! like the other namespace tests: figures are only meaningful one test at a time.

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use linerate_testkit::schema;
use serde_json::Value;

use common::{iperf3_server_json, num, serial, text, Net, BIN};

const IPERF3: &str = "/usr/bin/iperf3";
/// The stock server's port in namespace b (linerate's own server there has another).
const IPERF3_PORT: u16 = 5201;
/// Two counts of the same bytes at the two ends of a test.
const COUNT_TOLERANCE: f64 = 0.01;

/// The namespaces, or None after a skip (no root, no namespaces, no iperf3).
fn net() -> Option<Net> {
    if !std::path::Path::new(IPERF3).exists() {
        linerate_testkit::skip("needs iperf3 (apt install iperf3; scripts/setup-tests.sh)");
        return None;
    }
    Net::new(1500)
}

/// A stock `iperf3 -s` in namespace b, killed and reaped on drop.
struct Iperf3 {
    child: Child,
}

impl Iperf3 {
    /// Start `iperf3 -s ARGS` in b and wait (bounded) until it listens.
    fn start(net: &Net, args: &[&str]) -> Iperf3 {
        let child = Command::new("ip")
            .args(["netns", "exec", &net.b, IPERF3, "-s", "-p"])
            .arg(IPERF3_PORT.to_string())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ip netns exec … iperf3 -s");
        let until = Instant::now() + Duration::from_secs(10);
        // Not by connecting: a connection would be the one-off server's one test.
        while !listening(net) {
            assert!(
                Instant::now() < until,
                "iperf3 -s did not listen within 10 s"
            );
            thread::sleep(Duration::from_millis(50));
        }
        Iperf3 { child }
    }

    /// A one-test server (`-1 -J`): its JSON once its test is over (bounded).
    fn json(mut self) -> Value {
        iperf3_server_json(&mut self.child)
    }
}

impl Drop for Iperf3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listening(net: &Net) -> bool {
    Command::new("ip")
        .args(["netns", "exec", &net.b, "ss", "-Hltn"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&format!(":{IPERF3_PORT} ")))
}

/// `linerate bench SERVER ARGS` in namespace a, within 90 s.
fn bench(net: &Net, args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .args(["-k", "5", "90", "ip", "netns", "exec", &net.a, BIN, "bench"])
        .arg(net.server_ip())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run timeout(1)");
    assert_ne!(
        out.status.code(),
        Some(124),
        "linerate bench {args:?} hung; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn agree(what: &str, ours: f64, theirs: f64) {
    assert!(
        ours > 0.0 && theirs > 0.0,
        "{what}: {ours} here, {theirs} there"
    );
    let off = (ours - theirs).abs() / theirs;
    println!(
        "{what}: linerate {ours}, iperf3 -s {theirs}, {:.3} % apart",
        off * 100.0
    );
    assert!(
        off <= COUNT_TOLERANCE,
        "{what}: linerate counted {ours}, the iperf3 server {theirs}: {:.2} % apart",
        off * 100.0
    );
}

/// One test against a one-off `iperf3 -s -1 -J`: linerate's JSON and the server's.
fn measured(net: &Net, args: &[&str]) -> (Value, Value) {
    let server = Iperf3::start(net, &["-1", "-J"]);
    let port = IPERF3_PORT.to_string();
    let mut all = vec!["--iperf3", "-p", &port, "-t", "2", "--json"];
    all.extend_from_slice(args);
    let out = bench(net, &all);
    let theirs = server.json();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", text(&out.stdout)));
    schema::assert_matches("bench.schema.json", &doc);
    let t = doc["tests"][0].clone();
    assert!(t["error"].is_null(), "{args:?}: {}", t["error"]);
    assert!(
        theirs["error"].is_null(),
        "{args:?}: iperf3 -s: {}",
        theirs["error"]
    );
    let i = &t["iperf3"];
    assert_eq!(i["server_version"], "iperf3 3.12", "{i}");
    assert!(
        i["version_from"]
            .as_array()
            .is_some_and(|v| v.iter().any(|s| s == "server_output")),
        "{i}"
    );
    assert!(i["server_cpu_percent"].as_f64().is_some(), "{i}");
    assert!(
        !t["intervals"].as_array().expect("intervals").is_empty(),
        "{t}"
    );
    (t, theirs)
}

#[test]
fn tcp_counts_agree_with_the_stock_servers_json() {
    let _s = serial();
    let Some(net) = net() else { return };
    // This host sends: its count of bytes sent against the server's of bytes received.
    let (t, theirs) = measured(&net, &[]);
    agree(
        "TCP",
        num(&t, "/sender/bytes"),
        num(&theirs, "/end/sum_received/bytes"),
    );
    assert_eq!(t["sender"]["host"], "local");
    assert_eq!(t["iperf3"]["streams"][0]["server"], "receiver");
    // -P 2: two streams, ids 1 and 3.
    let (t, theirs) = measured(&net, &["-P", "2"]);
    agree(
        "TCP -P 2",
        num(&t, "/sender/bytes"),
        num(&theirs, "/end/sum_received/bytes"),
    );
    let ids: Vec<_> = t["iperf3"]["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .map(|s| s["id"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(ids, [1, 3]);
    // -R: this host receives; its count against the server's of bytes sent.
    let (t, theirs) = measured(&net, &["-R"]);
    agree(
        "TCP -R",
        num(&t, "/receiver/bytes"),
        num(&theirs, "/end/sum_sent/bytes"),
    );
    assert_eq!(t["receiver"]["host"], "local");
    assert!(
        t["retransmits"].is_u64(),
        "the server's retransmissions: {t}"
    );
    net.close();
}

#[test]
fn bidir_counts_agree_both_ways() {
    let _s = serial();
    let Some(net) = net() else { return };
    // Paced below what a shared core sustains: iperf3 3.12's server is one thread, and at full
    // speed both ways it lags in reading; at TEST_END it stops counting, and what it had not
    // read yet (up to its receive buffer, tens of MB) is in no count of its own. A stock
    // `iperf3 -c --bidir` sees the same gap (0 to 1 % here, unpaced); this test checks the
    // counting, not the server's speed (500 Mb/s each way still missed by 1.02 % once on a loaded
    // machine; 200 Mb/s leaves the one thread room).
    let (t, theirs) = measured(&net, &["--bidir", "-b", "200M"]);
    let dirs = t["directions"].as_array().expect("directions");
    assert_eq!(dirs.len(), 2, "{t}");
    agree(
        "--bidir, this host → server",
        num(&dirs[0], "/sender/bytes"),
        num(&theirs, "/end/sum_received/bytes"),
    );
    agree(
        "--bidir, server → this host",
        num(&dirs[1], "/receiver/bytes"),
        num(&theirs, "/end/sum_sent_bidir_reverse/bytes"),
    );
    net.close();
}

#[test]
fn udp_counts_agree_with_the_stock_servers_json() {
    let _s = serial();
    let Some(net) = net() else { return };
    // A modest rate: the datagrams this host sent against the highest sequence the server saw
    // (a datagram lost on the way cannot move that count).
    let (t, theirs) = measured(&net, &["-u", "-b", "100M"]);
    agree(
        "UDP datagrams",
        num(&t, "/packets"),
        num(&theirs, "/end/sum/packets"),
    );
    assert!(t["out_of_order"].is_null(), "iperf3 does not say: {t}");
    let s = &t["iperf3"]["streams"][0];
    assert!(
        s["jitter_us"].as_f64().is_some() && s["lost_packets"].is_u64(),
        "{s}"
    );
    // -R: this host receives; its bytes against the server's of bytes sent.
    let (t, theirs) = measured(&net, &["-u", "-b", "100M", "-R"]);
    agree(
        "UDP -R",
        num(&t, "/receiver/bytes"),
        num(&theirs, "/end/sum/bytes"),
    );
    net.close();
}

#[test]
fn a_busy_iperf3_server_and_a_missing_flag_are_said_plainly() {
    let _s = serial();
    let Some(net) = net() else { return };
    let _server = Iperf3::start(&net, &[]);
    let port = IPERF3_PORT.to_string();
    let at = format!("{}:{port}", net.server_ip());
    // A stock client's test holds the server for 4 s.
    let mut stock = Command::new("ip")
        .args(["netns", "exec", &net.a, "timeout", "30", IPERF3, "-c"])
        .arg(net.server_ip())
        .args(["-p", &port, "-t", "4", "-b", "100M"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn iperf3 -c");
    thread::sleep(Duration::from_millis(1500));
    let busy = bench(&net, &["--iperf3", "-p", &port, "-t", "1"]);
    assert_eq!(busy.status.code(), Some(2), "{}", text(&busy.stderr));
    assert!(
        text(&busy.stderr).contains(&format!(
            "the iperf3 server at {at} is running another test; try again"
        )),
        "{}",
        text(&busy.stderr)
    );
    let _ = stock.wait();
    // Free again: the plain bench names the flag.
    let plain = bench(&net, &["-p", &port, "-t", "1"]);
    assert_eq!(plain.status.code(), Some(2), "{}", text(&plain.stderr));
    let e = text(&plain.stderr);
    assert!(
        e.contains(&format!("the server at {at} is an iperf3 server")) && e.contains("--iperf3"),
        "{e}"
    );
    // And the server is still there to serve.
    let ok = bench(&net, &["--iperf3", "-p", &port, "-t", "1"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    net.close();
}

#[test]
fn doctor_against_a_stock_server_is_judged_from_this_end_and_invents_nothing() {
    let _s = serial();
    let Some(net) = net() else { return };
    // A stock server for doctor's several tests (not -1).
    let _server = Iperf3::start(&net, &[]);
    let port = IPERF3_PORT.to_string();
    let out = Command::new("timeout")
        .args([
            "-k", "5", "120", "ip", "netns", "exec", &net.a, BIN, "doctor",
        ])
        .arg(net.server_ip())
        .args(["--iperf3", "-p", &port, "--quick", "--no-disk", "--json"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run timeout(1)");
    assert_ne!(out.status.code(), Some(124), "doctor --iperf3 hung");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    schema::assert_matches("doctor.schema.json", &doc);
    let f = &doc["far_end"];
    assert_eq!(f["protocol"], "iperf3", "{f}");
    assert_eq!(f["hardware_known"], false, "{f}");
    assert_eq!(f["judged_from"], "this_end", "{f}");
    println!("far end: {f}");
    // The latency test is skipped with the reason, never run nor guessed.
    let skipped = f["skipped"].as_array().expect("skipped");
    assert!(
        skipped.iter().any(
            |s| s["step"].as_str().is_some_and(|x| x.contains("latency"))
                && s["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("no round-trip test"))
        ),
        "{f}"
    );
    let tests = doc["tests"].as_array().expect("tests");
    let kinds: Vec<_> = tests
        .iter()
        .map(|t| t["kind"].as_str().unwrap_or("?"))
        .collect();
    assert!(
        kinds.iter().all(|k| *k == "tcp_bw" || *k == "udp_bw"),
        "{kinds:?}"
    );
    assert!(kinds.contains(&"udp_bw"), "{kinds:?}");
    // Both directions measured (the plan's -R runs as iperf3's reverse).
    assert!(
        tests
            .iter()
            .any(|t| t["direction"] == "receive" && t["error"].is_null()),
        "{tests:?}"
    );
    assert!(
        tests.iter().all(|t| t["error"].is_null()),
        "{}",
        doc["errors"]
    );
    // Nothing of the far end's host: no remote facts, no remote probe.
    assert!(doc["path"]["remote"].is_null(), "{}", doc["path"]);
    assert!(doc["inventory"]["remote"].is_null(), "{}", doc["inventory"]);
    let checked = doc["checked"].to_string();
    assert!(!checked.contains("both ends"), "{checked}");
    let summary = doc["verdict"]["summary"].as_str().expect("summary");
    assert!(
        summary.contains("its hardware is unknown, so this is judged from this end only"),
        "{summary}"
    );
    net.close();
}

#[test]
fn soak_against_iperf3_is_refused_with_the_reason() {
    // No server, no namespace: the refusal comes before anything starts.
    let out = Command::new(BIN)
        .args(["soak", "192.0.2.1", "--iperf3", "-t", "1s"])
        .stdin(Stdio::null())
        .output()
        .expect("run linerate soak");
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("iperf3's protocol carries none of the far end's")
            && e.contains("linerate serve"),
        "{e}"
    );
}

/// Task time (user + nice + system) of all cores, in clock ticks (`/proc/stat`'s `cpu` line).
fn host_task_ticks() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("cpu "))
        .map_or(0, |l| {
            l.split_whitespace()
                .skip(1)
                .take(3)
                .filter_map(|x| x.parse::<u64>().ok())
                .sum()
        })
}

/// utime + stime of a process in clock ticks (None once it is gone).
fn process_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second of `/proc/stat` (USER_HZ: 100 on Linux's every architecture).
const USER_HZ: f64 = 100.0;

/// A stock `iperf3 -s` on loopback (on its default dual-stack `[::]`), killed and reaped on
/// drop; once it listens (within 10 s).
struct LoopbackIperf3 {
    child: Child,
    port: u16,
}

impl LoopbackIperf3 {
    fn start() -> LoopbackIperf3 {
        let port = common::free_port();
        let child = Command::new(IPERF3)
            .args(["-s", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn iperf3 -s");
        let until = Instant::now() + Duration::from_secs(10);
        let listening = || {
            Command::new("ss")
                .arg("-Hltn")
                .output()
                .is_ok_and(|o| text(&o.stdout).contains(&format!(":{port} ")))
        };
        while !listening() {
            assert!(
                Instant::now() < until,
                "iperf3 -s did not listen within 10 s"
            );
            thread::sleep(Duration::from_millis(50));
        }
        LoopbackIperf3 { child, port }
    }
}

impl Drop for LoopbackIperf3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `linerate doctor ARGS` as a child of this test (so its CPU can be read), within 120 s:
/// its output, and the CPU it used in clock ticks (its last figure before it exited).
fn doctor_with_its_cpu(args: &[&str]) -> (Output, u64) {
    let mut doctor = Command::new(BIN)
        .arg("doctor")
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run linerate doctor");
    let pid = doctor.id();
    let mut ticks = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while doctor.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = doctor.kill();
            let _ = doctor.wait();
            panic!("linerate doctor {args:?} hung past 120 s");
        }
        if let Some(t) = process_ticks(pid) {
            ticks = t;
        }
        thread::sleep(Duration::from_millis(100));
    }
    (doctor.wait_with_output().expect("doctor's output"), ticks)
}

/// Issue #30: `doctor 127.0.0.1 --iperf3` against a stock `iperf3 -s` on this host (no
/// namespace, no root) led with "other processes competing for the CPU": the other process was
/// the iperf3 server, the far end. Doctor now finds it by its listening socket (iperf3 listens
/// on a dual-stack `[::]`, not in the IPv4 table) and counts its CPU as the far end's: the
/// document names it under `far_end.on_this_host`, and on a machine where nothing else ran
/// (measured here, beside doctor: the host's task time less doctor's and iperf3's), no
/// contention is said.
#[test]
fn doctor_against_a_stock_server_on_this_host_counts_its_cpu_as_the_far_ends() {
    let _s = serial();
    if !std::path::Path::new(IPERF3).exists() {
        linerate_testkit::skip("needs iperf3 (apt install iperf3; scripts/setup-tests.sh)");
        return;
    }
    let server = LoopbackIperf3::start();
    let iperf3_pid = server.child.id();
    let (task0, iperf0, t0) = (host_task_ticks(), process_ticks(iperf3_pid), Instant::now());
    let port = server.port.to_string();
    let (out, doctor_ticks) = doctor_with_its_cpu(&[
        "127.0.0.1",
        "--iperf3",
        "-p",
        &port,
        "--quick",
        "--no-disk",
        "--no-rdma",
        "--json",
    ]);
    let (task1, iperf1, wall) = (
        host_task_ticks(),
        process_ticks(iperf3_pid),
        t0.elapsed().as_secs_f64(),
    );
    drop(server);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    schema::assert_matches("doctor.schema.json", &doc);
    let iperf3_ticks = iperf1.unwrap_or(0).saturating_sub(iperf0.unwrap_or(0));
    let others = task1
        .saturating_sub(task0)
        .saturating_sub(doctor_ticks)
        .saturating_sub(iperf3_ticks) as f64
        / USER_HZ
        / wall;
    let verdict = doc["verdict"]["summary"].as_str().unwrap_or("");
    println!("verdict: {verdict}");
    println!(
        "iperf3 -s used {:.2} cores, other processes {others:.2} cores over {wall:.1} s",
        iperf3_ticks as f64 / USER_HZ / wall
    );
    for f in doc["findings"].as_array().into_iter().flatten() {
        println!("  {} {}: {}", f["id"], f["severity"], f["message"]);
    }
    // The far end is named as this host's iperf3, by its pid.
    let here = doc["far_end"]["on_this_host"]
        .as_array()
        .unwrap_or_else(|| panic!("no far_end.on_this_host: {}", doc["far_end"]));
    assert!(
        here.iter()
            .any(|p| p["program"] == "iperf3" && p["pid"].as_u64() == Some(u64::from(iperf3_pid))),
        "{here:?}"
    );
    let contended = doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["id"] == "cpu.contended")
        .count();
    // Issue #37: the hypervisor's steal is named as steal, never as other processes.
    for f in doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["id"] == "cpu.steal")
    {
        let msg = f["message"].as_str().unwrap_or("");
        assert!(!msg.contains("other processes"), "{msg}");
        if contended == 0 {
            assert!(!verdict.contains("other processes"), "{verdict}");
        }
    }
    // Half the line doctor draws (`CONTENDED_OTHER_CORES`, 0.3): quiet beyond doubt.
    if others < linerate_rules::thresholds::CONTENDED_OTHER_CORES / 2.0 {
        assert_eq!(contended, 0, "{}", doc["findings"]);
        assert!(
            !verdict.contains("other processes competing for the CPU"),
            "{verdict}"
        );
    } else {
        println!(
            "NOTE: other processes used {others:.2} cores during doctor (this machine is shared): \
             whether doctor says contention is theirs to decide, not checked"
        );
    }
}
