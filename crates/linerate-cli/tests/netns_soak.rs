//! `linerate soak` against `linerate serve` across a veth pair between two network namespaces
//! the test creates (198.18.0.1 and .2): the traffic is real, the InfiniBand counters come from
//! fixture trees (`serve --root`, `soak --root`) that the test changes while the soak runs.
//!
//! Needs root (`ip netns`). Elsewhere every test records a skip and returns. The tests hold
//! `serial()` (shared with the other namespace tests): their traffic would disturb each other.

mod common;
mod soak_tree;

use linerate_testkit::schema;
use soak_tree::{counter, findings, get, port, set, set_rate, tree, verdict, Stream, DATA_STEP};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{is_root, run, serial, BIN};

const PORT: &str = "15301";
const SERVER_IP: &str = "198.18.0.2";

/// Two namespaces and a veth pair, removed on drop (the server with them).
struct Pair {
    a: String,
    b: String,
    server: Option<Child>,
}

impl Drop for Pair {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        for ns in [&self.a, &self.b] {
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

impl Pair {
    fn new(tag: &str) -> Option<Pair> {
        if !is_root() {
            linerate_testkit::skip("needs root for ip netns");
            return None;
        }
        let pid = std::process::id();
        let pair = Pair {
            a: format!("lrsoak-{pid}-{tag}-a"),
            b: format!("lrsoak-{pid}-{tag}-b"),
            server: None,
        };
        for ns in [&pair.a, &pair.b] {
            if let Err(e) = run("ip", &["netns", "add", ns]) {
                linerate_testkit::skip(format_args!("cannot create a network namespace: {e}"));
                return None;
            }
        }
        let (va, vb) = (format!("lrk{pid}{tag}a"), format!("lrk{pid}{tag}b"));
        let (va, vb) = (&va[..va.len().min(15)], &vb[..vb.len().min(15)]);
        let (a, b) = (pair.a.as_str(), pair.b.as_str());
        if let Err(e) = run(
            "ip",
            &[
                "-n", a, "link", "add", va, "type", "veth", "peer", "name", vb, "netns", b,
            ],
        ) {
            linerate_testkit::skip(format_args!("cannot create a veth pair: {e}"));
            return None;
        }
        for args in [
            vec!["-n", a, "addr", "add", "198.18.0.1/30", "dev", va],
            vec!["-n", b, "addr", "add", "198.18.0.2/30", "dev", vb],
            vec!["-n", a, "link", "set", va, "up"],
            vec!["-n", b, "link", "set", vb, "up"],
            vec!["-n", a, "link", "set", "lo", "up"],
            vec!["-n", b, "link", "set", "lo", "up"],
        ] {
            run("ip", &args).unwrap_or_else(|e| panic!("setting up {a}/{b}: {e}"));
        }
        Some(pair)
    }

    /// `linerate serve --root ROOT` in b; returns once it listens.
    fn serve(&mut self, root: &Path) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.b, BIN, "serve", "-p", PORT])
            .args(["--max-duration", "60", "--root"])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn linerate serve");
        let mut out = child.stdout.take().expect("server stdout");
        self.server = Some(child);
        // Its first line is `listening`; the rest is drained so it never blocks.
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            use std::io::BufRead;
            let mut first = true;
            for line in std::io::BufReader::new(&mut out)
                .lines()
                .map_while(Result::ok)
            {
                if first {
                    let _ = tx.send(line);
                    first = false;
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("linerate serve printed nothing within 10 s");
        assert!(line.contains("listening"), "first server line: {line}");
    }

    /// The command `linerate soak SERVER ARGS` in a, bounded by `timeout`.
    fn soak_command(&self, root: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "5", "60", "ip", "netns", "exec", &self.a, BIN, "soak"])
            .args([SERVER_IP, "-p", PORT, "--root"])
            .arg(root)
            .args(args)
            .env("NO_COLOR", "1");
        cmd
    }

    /// `linerate soak SERVER ARGS` in a, started (the caller waits).
    fn soak(&self, root: &Path, args: &[&str]) -> Child {
        self.soak_command(root, args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn linerate soak")
    }
}

fn wait(child: Child) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait for linerate soak");
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

#[test]
fn scripted_counters_get_the_right_verdict_on_the_right_end() {
    let _g = serial();
    let Some(mut pair) = Pair::new("v") else {
        return;
    };
    // Local (the soak's end): ConnectX-3 at 4X QDR; remote (serve): ConnectX-4 at 4X EDR.
    let local = tree("cx3-fdr-at-qdr-datagram", "mlx4_0", &["mlx4_1", "mlx4_2"]);
    let remote = tree("cx4-edr-no-sm", "mlx5_0", &["mlx5_1", "mlx5_2"]);
    let (l, r) = (local.path(), remote.path());
    set(r, "mlx5_1", "symbol_error", 500);
    pair.serve(r);
    let textdir = tempfile::tempdir().unwrap();
    let child = pair.soak(
        l,
        &[
            "--duration",
            "5s",
            "--interval",
            "500ms",
            "-P",
            "2",
            "--json",
            "--textfile",
            textdir.path().to_str().unwrap(),
        ],
    );
    // The baseline is taken as the traffic starts; change the files after it.
    thread::sleep(Duration::from_millis(1500));
    let data = |root: &Path, dev: &str| get(root, dev, "port_rcv_data") + DATA_STEP;
    // Local mlx4_0: 1000 symbol errors in seconds. The QDR budget is 144/h, 0.2 in 5 s,
    // and the judge never allows fewer than 3 (3e12 bits × 1e-12): far above either.
    set(l, "mlx4_0", "symbol_error", 1000);
    set(l, "mlx4_0", "port_rcv_data", data(l, "mlx4_0"));
    // Local mlx4_1: the link went down once.
    set(l, "mlx4_1", "link_downed", 1);
    set(l, "mlx4_1", "port_rcv_data", data(l, "mlx4_1"));
    // Local mlx4_2: traffic counted, nothing else: clean.
    set(l, "mlx4_2", "port_rcv_data", data(l, "mlx4_2"));
    // Remote mlx5_0: a 4-bit counter rises, then pegs at 15.
    set(r, "mlx5_0", "local_link_integrity_errors", 7);
    // Remote mlx5_1: someone reset symbol_error (500 → 0); traffic counted: clean, reset noted.
    set(r, "mlx5_1", "symbol_error", 0);
    set(r, "mlx5_1", "port_rcv_data", data(r, "mlx5_1"));
    // Remote mlx5_2: only transmit discards: congestion, not the cable.
    set(r, "mlx5_2", "port_xmit_discards", 40);
    thread::sleep(Duration::from_millis(1000));
    set(r, "mlx5_0", "local_link_integrity_errors", 15);
    set(r, "mlx5_2", "port_xmit_discards", 90);

    let (code, stdout, stderr) = wait(child);
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}\nstderr: {stderr}"));
    assert!(doc["error"].is_null(), "{}\nstderr: {stderr}", doc["error"]);
    // Bad ports on the soak: exit status 1.
    assert_eq!(code, Some(1), "stderr: {stderr}");
    schema::assert_matches("soak.schema.json", &doc);

    assert_eq!(
        verdict(port(&doc, "local", "mlx4_0")),
        ("bad", "symbol_error_budget")
    );
    assert_eq!(
        verdict(port(&doc, "local", "mlx4_1")),
        ("bad", "link_downed")
    );
    assert_eq!(verdict(port(&doc, "local", "mlx4_2")), ("clean", "clean"));
    let sat = port(&doc, "remote", "mlx5_0");
    assert_eq!(verdict(sat), ("bad", "local_link_integrity"));
    let c = counter(sat, "local_link_integrity_errors");
    assert_eq!(c["width"], "4");
    assert_eq!(c["saturated_now"], true, "{c}");
    assert_eq!(c["delta"], 15);
    let reset = port(&doc, "remote", "mlx5_1");
    assert_eq!(verdict(reset), ("clean", "clean"));
    assert_eq!(counter(reset, "symbol_error")["resets_total"], 1);
    assert_eq!(
        verdict(port(&doc, "remote", "mlx5_2")),
        ("congested", "xmit_congestion")
    );
    // The scripted ports are on their own end only: the local end has no mlx5, the remote no mlx4.
    for (end, other) in [("local", "mlx5_0"), ("remote", "mlx4_0")] {
        assert!(
            !doc["ends"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["end"] == end
                    && e["ports"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|p| p["device"] == other)),
            "{other} on the {end} end"
        );
    }
    // Real traffic crossed the pair, both ways.
    assert!(doc["bytes_sent"].as_u64().unwrap() > 0);
    assert!(doc["bytes_received"].as_u64().unwrap() > 0);
    promtool(&textdir.path().join("linerate_soak.prom"));
    let text = std::fs::read_to_string(textdir.path().join("linerate_soak.prom")).unwrap();
    linerate_testkit::promtool::assert_soak_recipe_agrees(&[("netns".into(), text, doc.clone())]);
}

/// `promtool check metrics` accepts the text file (skipped without promtool).
fn promtool(file: &Path) {
    let text = std::fs::read_to_string(file).expect("the text file was written");
    assert!(text.contains("linerate_soak_verdict{"), "{text}");
    let Ok(mut child) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        linerate_testkit::skip("promtool (Debian package prometheus) is not installed");
        return;
    };
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_server_killed_mid_soak_ends_with_what_was_measured_and_exit_2() {
    let _g = serial();
    let Some(mut pair) = Pair::new("k") else {
        return;
    };
    let local = tree("cx3-fdr-at-qdr-datagram", "mlx4_0", &[]);
    let remote = tree("cx4-edr-no-sm", "mlx5_0", &[]);
    pair.serve(remote.path());
    let started = Instant::now();
    let child = pair.soak(
        local.path(),
        &[
            "--duration",
            "20s",
            "--interval",
            "500ms",
            "-P",
            "2",
            "--json",
        ],
    );
    thread::sleep(Duration::from_millis(2500));
    let mut server = pair.server.take().expect("the server");
    server.kill().expect("kill the server");
    let _ = server.wait();
    let (code, stdout, stderr) = wait(child);
    assert_eq!(code, Some(2), "stderr: {stderr}\nstdout: {stdout}");
    // It stopped when the server went, not at the end of its 20 s.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let doc: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}\nstderr: {stderr}"));
    schema::assert_matches("soak.schema.json", &doc);
    let error = doc["error"].as_str().expect("the error is in the document");
    assert!(!error.is_empty());
    // What was measured until then: local intervals with traffic, the remote's baseline.
    let timeline = doc["timeline"].as_array().expect("timeline");
    let local_n = timeline.iter().filter(|i| i["end"] == "local").count();
    assert!(local_n >= 3, "{local_n} local intervals before the kill");
    assert!(doc["bytes_received"].as_u64().unwrap() > 0);
    assert!(port(&doc, "local", "mlx4_0")["verdict"].is_string());
}

#[test]
fn json_stream_lines_validate_and_end_with_the_document() {
    let _g = serial();
    let Some(mut pair) = Pair::new("s") else {
        return;
    };
    let local = tree("cx3-fdr-at-qdr-datagram", "mlx4_0", &[]);
    let remote = tree("cx4-edr-no-sm", "mlx5_0", &[]);
    pair.serve(remote.path());
    let child = pair.soak(
        local.path(),
        &[
            "--duration",
            "2s",
            "--interval",
            "500ms",
            "-P",
            "1",
            "--json-stream",
        ],
    );
    let (code, stdout, stderr) = wait(child);
    // Two seconds are far too few bits to judge: insufficient, exit 0.
    assert_eq!(code, Some(0), "stderr: {stderr}");
    let v = schema::validator("soak-event.schema.json");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for l in &lines {
        schema::assert_valid(&v, l);
    }
    assert_eq!(
        lines.first().map(|l| &l["event"]),
        Some(&Value::from("start"))
    );
    assert_eq!(lines.last().map(|l| &l["event"]), Some(&Value::from("end")));
    let intervals = |end: &str| {
        lines
            .iter()
            .filter(|l| l["event"] == "interval" && l["interval"]["end"] == end)
            .count()
    };
    assert!(intervals("local") >= 3, "{stdout}");
    assert!(intervals("remote") >= 3, "{stdout}");
    let report = &lines.last().unwrap()["report"];
    assert_eq!(report["verdict"], "insufficient", "{report}");
}

#[test]
fn receive_errors_under_traffic_and_a_port_narrower_than_the_traffic() {
    // Issue #23's cases 1 and 4 with real traffic: receive errors under 10/s on ports whose
    // bits are the engines' (no port_rcv_data moves), never called clean; and a 1X EDR port
    // (25 Gb/s of data) credited at most its data rate whatever the engines moved.
    let _g = serial();
    let Some(mut pair) = Pair::new("r") else {
        return;
    };
    let local = tree("cx4-edr-no-sm", "mlx5_0", &["mlx5_1"]);
    let remote = tree("cx4-edr-no-sm", "mlx5_0", &["mlx5_1"]);
    let (l, r) = (local.path(), remote.path());
    set_rate(l, "mlx5_0", "25 Gb/sec (1X EDR)");
    pair.serve(r);
    let textdir = tempfile::tempdir().unwrap();
    let mut s = Stream::start(pair.soak_command(
        l,
        &[
            "--duration",
            "5s",
            "--interval",
            "500ms",
            "-P",
            "2",
            "--json-stream",
            "--textfile",
            textdir.path().to_str().unwrap(),
        ],
    ));
    s.interval("local", 1);
    s.interval("remote", 1);
    // Local mlx5_1: 20 receive errors in 5 s (4/s): over the floor of 3, under 10/s.
    set(l, "mlx5_1", "port_rcv_errors", 20);
    // Remote mlx5_1: 200 in 5 s (40/s): bad.
    set(r, "mlx5_1", "port_rcv_errors", 200);
    let (code, doc) = s.finish();
    schema::assert_matches("soak.schema.json", &doc);
    assert!(doc["error"].is_null(), "{}", doc["error"]);
    assert_eq!(code, Some(1), "{doc}");
    let p = port(&doc, "local", "mlx5_1");
    assert_eq!(verdict(p), ("marginal", "rcv_errors_budget"), "{p}");
    assert_eq!(p["bits_basis"], "engine", "{p}");
    let f = findings(p, "rcv_errors_budget")[0];
    assert!(
        f["text"]
            .as_str()
            .unwrap()
            .contains("20 packets dropped on receive"),
        "{f}"
    );
    assert_eq!(counter(p, "port_rcv_errors")["delta"], 20);
    assert_eq!(
        verdict(port(&doc, "remote", "mlx5_1")),
        ("bad", "port_rcv_errors_rate")
    );
    // The 1X port: never credited more than 25 Gb/s × the time, whatever the engines moved.
    let narrow = port(&doc, "local", "mlx5_0");
    assert_eq!(narrow["data_gbps"], 25.0, "{narrow}");
    let cap = 25e9 * narrow["duration_s"].as_f64().unwrap();
    let bits = narrow["bits_received"].as_f64().unwrap();
    assert!(bits <= cap * (1.0 + 1e-9), "{bits} > {cap}");
    let engine = doc["ends"][0]["bytes_received"].as_f64().unwrap() * 8.0;
    if engine > cap {
        assert_eq!(narrow["bits_basis"], "data_rate", "{narrow}");
    }
    let wide = port(&doc, "local", "mlx5_1");
    assert_eq!(wide["data_gbps"], 100.0);
    assert!(wide["bits_received"].as_f64().unwrap() >= bits);
    let text = std::fs::read_to_string(textdir.path().join("linerate_soak.prom")).unwrap();
    linerate_testkit::promtool::assert_soak_recipe_agrees(&[(
        "netns_receive".into(),
        text,
        doc.clone(),
    )]);
}
