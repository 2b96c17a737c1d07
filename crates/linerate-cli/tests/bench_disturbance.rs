//! `linerate bench` says what disturbed a run, in its JSON and its text: other processes' CPU
//! while every core is held by busy loops (started by this test, two per core, each under
//! `timeout`, ended by PID), a stall while the server is stopped (SIGSTOP, then SIGCONT) in
//! the middle of the test, and another flow on loopback beside it. A `linerate serve` on loopback per test; functional facts only,
//! no figure of this machine's speed.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use linerate_testkit::schema;
use serde_json::Value;

use common::{serial, server, BusyLoops, BIN};

/// Seconds a busy loop may live if this test dies before it ends them.
const LOAD_LIMIT_S: &str = "120";
/// Hard limit of a bench run.
const BENCH_TIMEOUT: &str = "60";

/// `linerate bench` on loopback port `port` with `args`, under a time limit.
fn bench(port: u16, args: &[&str]) -> Child {
    Command::new("timeout")
        .args(["-k", "5", BENCH_TIMEOUT, BIN, "bench", "127.0.0.1", "-p"])
        .arg(port.to_string())
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run linerate bench")
}

/// The one test of a `bench --json` run, checked against the schema.
fn json_test(child: Child) -> Value {
    let out = child.wait_with_output().expect("bench ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_str(&stdout).expect("one JSON document");
    schema::assert_matches("bench.schema.json", &doc);
    doc["tests"][0].clone()
}

fn causes(t: &Value) -> Vec<(String, String)> {
    t["disturbance"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["cause"].as_str().unwrap_or("").to_string(),
                c["host"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_run_on_busy_cores_names_the_contention() {
    let _g = serial();
    let srv = server(&[]);
    let cores = thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let load = BusyLoops::start(2 * cores.min(8), LOAD_LIMIT_S);
    // Let the loops reach their cores before the test starts.
    thread::sleep(Duration::from_millis(300));
    let t = json_test(bench(srv.port, &["-t", "2", "--json"]));
    let text = bench(srv.port, &["-t", "1"])
        .wait_with_output()
        .expect("bench ends");
    drop(load);
    let d = &t["disturbance"];
    println!("{d}");
    assert_eq!(d["disturbed"], true, "{d}");
    assert!(
        causes(&t).contains(&("cpu_contended".into(), "local".into())),
        "{d}"
    );
    let other = d["local_cpu"]["other_cores"].as_f64().expect("other_cores");
    assert!(other >= 0.3, "other processes' share below the line: {d}");
    // The server is on this host: its own figures (which count this client as someone
    // else's) are not judged, and this host's count it as linerate's.
    assert_eq!(d["remote_same_host"], true, "{d}");
    assert!(d["remote_cpu"].is_null(), "{d}");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("disturbed: ") && text.contains("other processes on this host used"),
        "{text}"
    );
}

#[test]
fn a_stopped_server_is_a_stall() {
    let _g = serial();
    let srv = server(&[]);
    let pid = srv.child.id().to_string();
    // Small socket buffers fill at once, however fast this machine is.
    let mut child = bench(
        srv.port,
        &["-t", "4", "-i", "0.5", "-w", "256K", "--json-stream"],
    );
    let stdout = child.stdout.take().expect("bench's stdout");
    // Once the test runs (its first interval), stop the server for a second.
    let mut end = None;
    let mut stopped = false;
    for line in BufReader::new(stdout).lines().take(1000) {
        let Ok(line) = line else { break };
        let ev: Value = serde_json::from_str(&line).expect("one JSON object per line");
        if ev["event"] == "interval" && !stopped {
            stopped = true;
            let stop = Command::new("kill").args(["-STOP", &pid]).status();
            thread::sleep(Duration::from_millis(1000));
            // Always resumed, whatever happened to the stop.
            let cont = Command::new("kill").args(["-CONT", &pid]).status();
            assert!(stop.is_ok_and(|s| s.success()) && cont.is_ok_and(|s| s.success()));
        }
        if ev["event"] == "end" {
            end = Some(ev["result"].clone());
        }
    }
    let out = child.wait_with_output().expect("bench ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stopped, "no interval before the end");
    let t = end.expect("an end event");
    let d = &t["disturbance"];
    println!("{d}");
    assert_eq!(d["disturbed"], true, "{d}");
    // Named once, for the side that saw the most of it (both did).
    assert!(causes(&t).iter().any(|(c, _)| c == "stalls"), "{d}");
    // A second of a stopped receiver: once the buffers are full, nothing moves. Half of it is
    // a wide margin for filling them and for the signals' delivery.
    let stalled = d["local_stalls"]["seconds"]
        .as_f64()
        .expect("stall seconds");
    assert!(stalled >= 0.5, "{d}");
    let spans = d["local_stalls"]["spans"].as_array().expect("spans");
    assert!(!spans.is_empty(), "{d}");
}

#[test]
fn another_flow_on_loopback_is_competing_traffic() {
    let _g = serial();
    let srv = server(&[]);
    // The other flow: a longer test to the same server, started first, ended (by PID) after.
    let mut other = bench(srv.port, &["-t", "5", "--json"]);
    thread::sleep(Duration::from_millis(500));
    let t = json_test(bench(srv.port, &["-t", "2", "--json"]));
    let _ = Command::new("kill")
        .args(["-TERM", &other.id().to_string()])
        .status();
    let _ = other.wait();
    let d = &t["disturbance"];
    println!("{d}");
    assert_eq!(d["local_link"]["interface"], "lo", "{d}");
    assert!(
        causes(&t).contains(&("competing_traffic".into(), "local".into())),
        "{d}"
    );
    assert!(d["competing_gbps"].as_f64().is_some_and(|g| g > 0.0), "{d}");
}
