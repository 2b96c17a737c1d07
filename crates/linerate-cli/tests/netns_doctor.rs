//! `linerate doctor` against `linerate serve` across a veth pair between two network
//! namespaces (see `common`), each scenario set up to produce one finding: a `tc tbf`
//! shaper, an MTU mismatch, tiny socket buffers, a client pinned to one core, a healthy
//! path; then the HTML report, `--fail-on`, a port nobody listens on, and the self-check.
//!
//! Needs root for the namespaces (the self-check does not); elsewhere those tests print
//! why they skipped and pass. Each doctor run is `--quick` (about 10 s) under a hard
//! timeout, and its JSON is validated against schemas/doctor.schema.json.
//!
//! Run with `cargo test -p linerate --test netns_doctor -- --nocapture` to see each
//! verdict and its findings; `-- --ignored` runs the scenarios that show known bugs.

mod common;

use linerate_testkit::schema;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use common::{num, run, serial, Net, BIN, PORT};
use linerate_rules::thresholds::STACK_BOUND_SHOWN_WITHIN;
use linerate_units::fmt_round;

/// Hard limit for one doctor run, seconds (`--quick` takes about 10 s).
const DOCTOR_TIMEOUT: &str = "60";

/// One `linerate doctor` run.
#[derive(Debug)]
struct Doctor {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    doc: Option<Value>,
    secs: f64,
}

impl Doctor {
    /// `timeout … [ip netns exec NS] [PREFIX…] linerate doctor ARGS`.
    fn run(ns: Option<&str>, prefix: &[&str], args: &[&str]) -> Doctor {
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "5", DOCTOR_TIMEOUT]);
        if let Some(ns) = ns {
            cmd.args(["ip", "netns", "exec", ns]);
        }
        cmd.args(prefix).arg(BIN).arg("doctor").args(args);
        let started = Instant::now();
        let out = cmd
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run timeout(1)");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let d = Doctor {
            code: out.status.code(),
            doc: serde_json::from_str(&stdout).ok(),
            stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            secs: started.elapsed().as_secs_f64(),
        };
        assert!(
            !matches!(d.code, Some(124 | 137)),
            "linerate doctor {args:?} hung past {DOCTOR_TIMEOUT} s; stderr: {}",
            d.stderr
        );
        assert!(!d.stderr.contains("panicked"), "{}", d.stderr);
        d
    }

    /// The JSON document, checked against the schema.
    fn doc(&self) -> &Value {
        let doc = self.doc.as_ref().unwrap_or_else(|| {
            panic!(
                "stdout is not JSON (exit {:?}); stderr: {}\nstdout: {}",
                self.code, self.stderr, self.stdout
            )
        });
        schema::assert_matches("doctor.schema.json", doc);
        doc
    }

    /// The exit status is 1 when a finding reaches `fail_on`, else 0.
    fn check_exit(&self, fail_on: &str) {
        let doc = self.doc();
        let threshold = rank(fail_on);
        let over: Vec<&str> = findings(doc)
            .iter()
            .filter(|f| rank(f["severity"].as_str().unwrap_or("")) >= threshold)
            .filter_map(|f| f["id"].as_str())
            .collect();
        let want = i32::from(!over.is_empty());
        assert_eq!(
            self.code,
            Some(want),
            "--fail-on {fail_on} with findings at or above it: {over:?}; stderr: {}",
            self.stderr
        );
    }
}

fn rank(severity: &str) -> u8 {
    match severity {
        "info" => 1,
        "warning" => 2,
        "error" => 3,
        s => panic!("unknown severity `{s}`"),
    }
}

fn findings(doc: &Value) -> &[Value] {
    doc["findings"].as_array().map_or(&[], Vec::as_slice)
}

fn with_id<'a>(doc: &'a Value, id: &str) -> Vec<&'a Value> {
    findings(doc).iter().filter(|f| f["id"] == id).collect()
}

fn ids(doc: &Value) -> Vec<&str> {
    findings(doc)
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect()
}

/// The measured test of this kind, direction and stream count.
fn test_of<'a>(doc: &'a Value, kind: &str, direction: &str, streams: u64) -> Option<&'a Value> {
    doc["tests"].as_array()?.iter().find(|t| {
        t["kind"] == kind && t["direction"] == direction && t["streams"].as_u64() == Some(streams)
    })
}

/// Print the verdict, the tests and the findings, for the log.
fn show(label: &str, d: &Doctor) {
    println!("=== {label}: exit {:?} after {:.1} s", d.code, d.secs);
    let Some(doc) = &d.doc else {
        println!("    stderr: {}", d.stderr.trim());
        return;
    };
    let v = &doc["verdict"];
    println!(
        "    verdict: {} [limited_by {}, gbps {}, ceiling_gbps {}]",
        v["summary"].as_str().unwrap_or("?"),
        v["limited_by"],
        v["gbps"],
        v["ceiling_gbps"]
    );
    for t in doc["tests"].as_array().into_iter().flatten() {
        println!(
            "    test {} {} {} stream(s): {} Gb/s, rtt {} µs, retransmits {}, CPU sender {} receiver {}{}",
            t["kind"].as_str().unwrap_or("?"),
            t["direction"].as_str().unwrap_or("?"),
            t["streams"],
            t["gbps"],
            t["rtt_us"],
            t["retransmits"],
            t["sender"]["cpu_percent"],
            t["receiver"]["cpu_percent"],
            t["error"].as_str().map_or(String::new(), |e| format!(", error: {e}"))
        );
    }
    for f in findings(doc) {
        println!(
            "    finding {} ({}) on {}: {}\n        evidence {}",
            f["id"].as_str().unwrap_or("?"),
            f["severity"].as_str().unwrap_or("?"),
            f["subject"].as_str().unwrap_or("?"),
            f["message"].as_str().unwrap_or("?"),
            f["evidence"]
        );
    }
    if let Some(e) = doc["errors"].as_array().filter(|e| !e.is_empty()) {
        println!("    errors: {e:?}");
    }
}

impl Net {
    /// `linerate doctor SERVER -p PORT --quick --json EXTRA` in a, under `prefix` (e.g.
    /// `taskset -c 0`). Run again once when the server was killed from outside meanwhile.
    fn doctor(&mut self, label: &str, prefix: &[&str], extra: &[&str]) -> Doctor {
        self.ensure_serving();
        let ip = self.server_ip();
        let port = PORT.to_string();
        let mut args = vec![ip.as_str(), "-p", &port, "--quick", "--json"];
        args.extend_from_slice(extra);
        // Disks only where a test asks for them (they add a few seconds).
        if !extra.contains(&"--disk") {
            args.push("--no-disk");
        }
        let mut d = Doctor::run(Some(&self.a), prefix, &args);
        if self.ensure_serving() {
            println!("NOTE {label}: the server died during doctor; running it again");
            d = Doctor::run(Some(&self.a), prefix, &args);
        }
        show(label, &d);
        d
    }
}

/// Rate of TCP payload through a shaper counting whole frames at this MTU.
fn goodput(rate_gbit: f64, mtu: f64) -> f64 {
    rate_gbit * (mtu - 52.0) / (mtu + 14.0)
}

/// A 2 Gbit/s tbf on the client's egress, checked against what doctor says of it.
fn shaped(test: &str, check_direction: bool) {
    let _g = serial();
    let Some(mut net) = Net::new(1500) else {
        return;
    };
    net.tc(&[
        "qdisc", "add", "dev", &net.va, "root", "tbf", "rate", "2gbit", "burst", "1m", "latency",
        "50ms",
    ]);
    let d = net.doctor(test, &[], &[]);
    let doc = d.doc();
    d.check_exit("error");
    assert_eq!(doc["mode"], "two_hosts");
    let want = goodput(2.0, 1500.0);

    let shapers = with_id(doc, "net.shaper");
    assert_eq!(shapers.len(), 1, "one net.shaper finding: {:?}", ids(doc));
    let f = shapers[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["subject"], format!("local:{}", net.va));
    let qdisc = f["evidence"]["qdisc"].as_str().unwrap_or("");
    assert!(
        qdisc.starts_with("tbf ") && qdisc.contains("rate 2000000000 bit/s"),
        "the evidence shows the qdisc and its rate: {qdisc}"
    );
    assert!(
        f["message"].as_str().unwrap_or("").contains("2 Gbit/s"),
        "{}",
        f["message"]
    );
    // The real tbf, read through linerate-inventory's rtnetlink dump (`qdisc::shapers_of`):
    // this replaces the LINERATE_QDISC_EXPECT hook of its unit test, which nothing set.
    let shapers = doc["path"]["local"]["shapers"].as_array().expect("shapers");
    assert_eq!(shapers.len(), 1, "one shaper on {}: {shapers:?}", net.va);
    assert_eq!(shapers[0]["kind"], "tbf", "{shapers:?}");
    assert_eq!(num(doc, "/path/local/shapers/0/rate_bps"), 2e9);

    let v = &doc["verdict"];
    assert_eq!(v["limited_by"], "shaper", "verdict {v}");
    let ceiling = num(v, "/ceiling_gbps");
    assert!(
        (ceiling - want).abs() < 0.002,
        "ceiling_gbps {ceiling}, want 2 × 1448/1514 = {want:.4}"
    );
    // The shaped direction never carries more than the shaper lets through.
    let send = test_of(doc, "tcp_bw", "send", 1).expect("the single-stream send test");
    let sent = num(send, "/gbps");
    assert!(
        sent <= want * 1.03,
        "send carried {sent} Gb/s through a {want:.3} Gb/s shaper"
    );

    if check_direction {
        // tbf shapes what leaves the client: the receive test does not cross it. The
        // verdict should set the shaped direction against the shaper's ceiling.
        let gbps = num(v, "/gbps");
        assert!(
            gbps <= ceiling * 1.05,
            "verdict: {gbps} Gb/s measured of a {ceiling} Gb/s ceiling ({})",
            v["summary"]
        );
        for r in with_id(doc, "ceiling.reached") {
            let g: f64 = r["evidence"]["gbps"]
                .as_str()
                .unwrap_or("0")
                .parse()
                .unwrap_or(0.0);
            assert!(
                g <= ceiling * 1.05,
                "ceiling.reached above the ceiling: {}",
                r["message"]
            );
        }
    }
    net.close();
}

/// Scenario 1: `tc tbf rate 2gbit` on the client's veth → `net.shaper`, limited by the shaper at
/// 2 × 1448/1514 Gb/s of TCP payload.
#[test]
fn shaper_2gbit_on_the_client_egress() {
    shaped("shaper_2gbit_on_the_client_egress", false);
}

/// Scenario 1b: The shaper limits one direction; doctor applies its ceiling to both.
#[test]
fn shaper_verdict_judges_the_shaped_direction() {
    shaped("shaper_verdict_judges_the_shaped_direction", true);
}

/// Scenario 2: MTU 9000 on the client's veth, 1500 on the server's → `mtu.mismatch`.
#[test]
fn mtu_9000_against_1500() {
    let test = "mtu_9000_against_1500";
    let _g = serial();
    let Some(mut net) = Net::with_mtus(9000, 1500) else {
        return;
    };
    let d = net.doctor(test, &[], &[]);
    let doc = d.doc();
    d.check_exit("error");
    assert_eq!(num(doc, "/path/local/mtu"), 9000.0);
    assert_eq!(num(doc, "/path/remote/mtu"), 1500.0);
    let m = with_id(doc, "mtu.mismatch");
    assert_eq!(m.len(), 1, "one mtu.mismatch: {:?}", ids(doc));
    let f = m[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["subject"], "path");
    assert_eq!(f["evidence"][format!("local {} mtu", net.va)], "9000");
    assert_eq!(f["evidence"][format!("remote {} mtu", net.vb)], "1500");
    assert!(
        f["fix"].as_str().unwrap_or("").contains("mtu 9000"),
        "{}",
        f["fix"]
    );
    net.close();
}

const TINY: &str = "4096 8192 16384";

/// Set tiny socket buffers inside both namespaces. `net.ipv4.tcp_{r,w}mem` belong to the
/// namespace; `net.core.{r,w}mem_max` are global on many kernels (on 6.x a child
/// namespace shows them read-only), so they are set only where the namespace's own copy
/// is writable, and the host's value is checked to be untouched.
fn shrink_buffers(net: &Net) {
    for ns in [&net.a, &net.b] {
        for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
            run(
                "ip",
                &[
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-q",
                    "-w",
                    &format!("{key}={TINY}"),
                ],
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        for key in ["rmem_max", "wmem_max"] {
            let file = format!("/proc/sys/net/core/{key}");
            let host = std::fs::read_to_string(&file).unwrap_or_default();
            let mode = run("ip", &["netns", "exec", ns, "stat", "-c", "%a", &file])
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let writable = mode.len() == 3 && matches!(&mode[..1], "6" | "7" | "2" | "3");
            if !writable {
                println!(
                    "    net.core.{key}: {} in the namespace ({}): global on this kernel, left alone",
                    if mode.is_empty() { "absent" } else { "read-only" },
                    if mode.is_empty() { "-".to_string() } else { mode.clone() }
                );
                continue;
            }
            let set = run(
                "ip",
                &[
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-q",
                    "-w",
                    &format!("net.core.{key}=16384"),
                ],
            );
            let after = std::fs::read_to_string(&file).unwrap_or_default();
            if after != host {
                // Not per-namespace after all: put the host's value back at once.
                let _ = std::fs::write(&file, &host);
                panic!("net.core.{key} set in {ns} changed the host's value; restored");
            }
            println!("    net.core.{key} set in {ns}: {set:?}");
        }
    }
    let uname = run("uname", &["-r"]).map_or_else(
        |_| "?".to_string(),
        |o| String::from_utf8_lossy(&o.stdout).trim().to_string(),
    );
    println!(
        "    kernel {uname}: net.ipv4.tcp_rmem and tcp_wmem set to `{TINY}` in {} and {}",
        net.a, net.b
    );
}

/// tcp_rmem/tcp_wmem max 16 KiB in both namespaces, checked against `tcp.buffers_small`.
fn tiny(test: &str, check_in_flight: bool) {
    let _g = serial();
    let Some(mut net) = Net::new(1500) else {
        return;
    };
    shrink_buffers(&net);
    let d = net.doctor(test, &[], &[]);
    let doc = d.doc();
    d.check_exit("error");
    // Both ends report the namespace's own limits.
    for end in ["local", "remote"] {
        for key in ["tcp_rmem", "tcp_wmem"] {
            assert_eq!(
                doc["path"][end]["sockets"][key],
                serde_json::json!([4096, 8192, 16384]),
                "{end} {key}"
            );
        }
    }
    let measured: Vec<&Value> = with_id(doc, "tcp.buffers_small")
        .into_iter()
        .filter(|f| {
            f["subject"]
                .as_str()
                .is_some_and(|s| s.starts_with("test:"))
        })
        .collect();
    assert_eq!(
        measured.len(),
        1,
        "one tcp.buffers_small from a measured test: {:?}",
        ids(doc)
    );
    let f = measured[0];
    assert_eq!(f["severity"], "warning");
    // `test:tcp_bw send 1 stream(s)`: its RTT is the test's, as measured.
    let subject = f["subject"].as_str().unwrap_or("");
    let words: Vec<&str> = subject.split_whitespace().collect();
    assert!(
        words.len() >= 3 && words[0] == "test:tcp_bw",
        "subject {subject}"
    );
    let streams: u64 = words[2].parse().expect("stream count in the subject");
    let t = test_of(doc, "tcp_bw", words[1], streams).expect("the test named in the subject");
    let rtt = num(t, "/rtt_us");
    let said = f["evidence"]["rtt_us"].as_str().unwrap_or("");
    assert!(
        said.parse::<f64>().is_ok_and(|r| (r - rtt).abs() < 0.01),
        "evidence rtt_us `{said}`, the test measured {rtt} µs"
    );
    assert_eq!(f["evidence"]["sender tcp_wmem max"], "16384");
    assert_eq!(f["evidence"]["receiver tcp_rmem max"], "16384");
    assert_eq!(
        doc["verdict"]["limited_by"], "tcp_buffers",
        "{}",
        doc["verdict"]
    );
    if check_in_flight {
        // "window / RTT" holds only when the bytes in flight fit in the window (at most
        // the 16384-byte send buffer; Linux offers half the receive buffer as window).
        let in_flight: f64 = f["evidence"]["bytes_in_flight"]
            .as_str()
            .and_then(|b| b.parse().ok())
            .expect("bytes_in_flight");
        assert!(
            in_flight <= 16384.0,
            "{in_flight} bytes in flight with 16384-byte socket buffers: the stream was not \
             window-bound at this RTT, yet the finding says so: {}",
            f["message"]
        );
    }
    net.close();
}

/// Scenario 3: tcp_rmem/tcp_wmem max 16 KiB in both namespaces → `tcp.buffers_small` from the
/// measured round trip, limited by the TCP buffers.
#[test]
fn tiny_socket_buffers() {
    tiny("tiny_socket_buffers", false);
}

/// Scenario 3b: The finding's arithmetic agrees with its evidence.
#[test]
fn tiny_buffers_in_flight_fits_the_window() {
    tiny("tiny_buffers_in_flight_fits_the_window", true);
}

/// The words that put loss on the CPU (`net.retransmits` on a virtual path used to say them
/// with the CPUs idle), and that blame the far end for receiving slower.
const CPU_BLAME: [&str; 3] = ["CPU contention", "fell behind", "receives slower"];

/// Each end's qdiscs as doctor read them over its tests (`path.qdiscs`): both were read.
fn qdiscs_read<'a>(doc: &'a Value, end: &str) -> &'a Vec<Value> {
    doc["path"]["qdiscs"][end]
        .as_array()
        .unwrap_or_else(|| panic!("path.qdiscs.{end} not read: {}", doc["path"]["qdiscs"]))
}

/// Scenario 7 (issue #30): a tbf with a tiny queue (rate 100gbit, burst and limit 15k) on the
/// client's egress drops packets of the send direction. Before it, the same link is judged
/// clean: both ends' qdiscs read, nothing dropped, no loss finding. With it, doctor names the
/// qdisc, its end, its direction and its drop counter (`net.qdisc_drops`), puts the send
/// direction's loss on it, not on the CPU (whose figures this machine's neighbours may raise:
/// contention is then said beside it, never as the loss's cause), blames no end for the
/// slower direction, and its verdict says loss, naming the qdisc.
#[test]
fn qdisc_drops_are_named_with_their_end_direction_and_counter() {
    let test = "qdisc_drops_are_named_with_their_end_direction_and_counter";
    let _g = serial();
    let Some(mut net) = Net::new(1500) else {
        return;
    };
    let clean = net.doctor(&format!("{test} (clean)"), &[], &["--no-rdma"]);
    let doc = clean.doc();
    for end in ["local", "remote"] {
        assert!(
            qdiscs_read(doc, end).iter().all(|q| q["drops"] == 0),
            "{}",
            doc["path"]["qdiscs"]
        );
    }
    assert!(with_id(doc, "net.qdisc_drops").is_empty(), "{:?}", ids(doc));
    for f in findings(doc) {
        // No qdisc is named as a cause. On this shared machine a neighbour's load can make a
        // clean veth retransmit, and that finding may say that no qdisc counted a drop and list
        // where else the loss may be (a qdisc on a host in between among them): neither names
        // a qdisc of this link.
        assert!(f["evidence"].get("qdisc").is_none(), "a clean link: {f}");
        let m = f["message"]
            .as_str()
            .unwrap_or("")
            .replace("no qdisc of either end counting a drop", "")
            .replace("a qdisc such as netem on a host in between", "");
        assert!(!m.contains(" qdisc "), "a clean link: {m}");
    }
    net.tc(&[
        "qdisc", "add", "dev", &net.va, "root", "tbf", "rate", "100gbit", "burst", "15k", "limit",
        "15k",
    ]);
    let d = net.doctor(test, &[], &["--no-rdma"]);
    let doc = d.doc();
    d.check_exit("error");
    // The qdisc, its end, its direction and its counter.
    let q = with_id(doc, "net.qdisc_drops");
    assert_eq!(q.len(), 1, "one net.qdisc_drops: {:?}", ids(doc));
    let q = q[0];
    assert_eq!(q["subject"], format!("local:{}", net.va));
    assert_eq!(q["severity"], "warning", "{q}");
    assert!(
        q["evidence"]["qdisc"]
            .as_str()
            .is_some_and(|s| s.starts_with("tbf ") && s.ends_with("parent root")),
        "{q}"
    );
    assert_eq!(q["evidence"]["side"], "it sent (the send direction)", "{q}");
    let drops: u64 = q["evidence"]["drops"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("drops");
    assert!(drops > 0, "{q}");
    // The same counter in the path's facts, and in the send test that counted it.
    let local = qdiscs_read(doc, "local");
    assert!(
        local
            .iter()
            .any(|x| x["kind"] == "tbf" && x["side"] == "egress" && x["drops"] == drops),
        "{local:?}"
    );
    let send = test_of(doc, "tcp_bw", "send", 1).expect("the single-stream send test");
    let counted = send["qdiscs"]["local"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|x| x["kind"] == "tbf")
        .filter_map(|x| x["drops"].as_u64())
        .sum::<u64>();
    assert!(counted > 0, "{}", send["qdiscs"]);
    // The loss of the send direction is the qdisc's, not the CPU's; no end is blamed.
    for f in with_id(doc, "net.retransmits") {
        let m = f["message"].as_str().unwrap_or("");
        if f["subject"].as_str().is_some_and(|s| s.contains(" send ")) {
            assert!(m.contains("tbf qdisc"), "{m}");
            assert_eq!(f["severity"], "warning", "{m}");
        }
        for w in CPU_BLAME {
            assert!(!m.contains(w), "{m}");
        }
    }
    assert!(with_id(doc, "path.asymmetric").is_empty(), "{:?}", ids(doc));
    let v = &doc["verdict"];
    assert_eq!(v["limited_by"], "retransmits", "{v}");
    let summary = v["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("the tbf qdisc") && summary.contains(&format!("local {}", net.va)),
        "{summary}"
    );
    net.close();
}

/// Busy and softirq share of core 0 between two /proc/stat samples, percent.
fn core0(before: &[u64], after: &[u64]) -> (f64, f64) {
    let d: Vec<f64> = after
        .iter()
        .zip(before)
        .map(|(a, b)| a.saturating_sub(*b) as f64)
        .collect();
    let total: f64 = d.iter().take(8).sum();
    if total <= 0.0 {
        return (0.0, 0.0);
    }
    let idle = d.get(3).unwrap_or(&0.0) + d.get(4).unwrap_or(&0.0);
    (
        (total - idle) / total * 100.0,
        d.get(6).unwrap_or(&0.0) / total * 100.0,
    )
}

fn core0_ticks() -> Vec<u64> {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("cpu0 "))
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Scenario 4: The client pinned to core 0: one stream is bound by that core → `cpu.saturated`.
///
/// Core 0 then runs the client's stream, the veth softirq (the TCP receive processing,
/// charged to no thread) and often the server's thread too: the core is 100% busy while
/// the stream threads report 30-60%. A rule on thread CPU alone (>= 90%) never fires
/// here; the busiest core (with interrupts) does.
#[test]
#[ignore = "flaky on this shared 2-core VM: whether the pinned core crosses the saturation \
            thresholds (thread 85 %, busiest core 95 %) varies from run to run; run it with \
            `--ignored` on an idle machine"]
fn one_core_single_stream() {
    let test = "one_core_single_stream";
    let _g = serial();
    let Some(mut net) = Net::new(1500) else {
        return;
    };
    let t0 = core0_ticks();
    let d = net.doctor(test, &["taskset", "-c", "0"], &[]);
    let (busy, softirq) = core0(&t0, &core0_ticks());
    println!("    core 0 during doctor: {busy:.0}% busy, {softirq:.0}% in softirq");
    let doc = d.doc();
    d.check_exit("error");
    let sat = with_id(doc, "cpu.saturated");
    // On a machine where other processes compete, doctor cannot tell whose the busy core is:
    // it reports the contention instead (the busiest core is then not evidence of saturation).
    let contended = !with_id(doc, "cpu.contended").is_empty();
    // The pinned client bounds both single-stream tests (it sends in one, receives in the
    // other); which of the two shows it past the threshold varies from run to run.
    assert!(
        contended
            || sat.iter().any(|f| {
                f["subject"] == "test:tcp_bw send 1 stream"
                    || f["subject"] == "test:tcp_bw receive 1 stream"
            }),
        "no cpu.saturated on a single-stream test: {:?}",
        ids(doc)
    );
    net.close();
}

/// Slack between figures doctor rounds differently when it serializes them: rates to
/// 0.001 Gb/s, the host-stack ceiling to 0.01 Gb/s in `path` (half a step: 0.005), plus a
/// margin for the two roundings meeting.
const ROUNDING_GBPS: f64 = 0.01;

/// The host-stack contract on a virtual path, whatever this machine's speed: the path
/// carries an upper bound (`path.stack_ceiling_gbps`, one memory copy per byte per core).
/// Either no single stream beat it and it is the verdict's ceiling, stated in the summary when
/// the judged stream is within `STACK_BOUND_SHOWN_WITHIN` of it;
/// or one did, and doctor says so (`ceiling.exceeded`) and claims no ceiling. Never a
/// result above a ceiling silently, never a missing ceiling without the finding.
fn check_host_stack_ceiling(doc: &Value) {
    let stack = num(doc, "/path/stack_ceiling_gbps");
    assert!(
        stack > 0.0,
        "a virtual path has a host-stack bound: {stack}"
    );
    let v = &doc["verdict"];
    let ceiling = num(v, "/ceiling_gbps");
    let singles: Vec<(String, f64)> = doc["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["kind"] == "tcp_bw" && t["streams"].as_u64() == Some(1))
        .filter(|t| t["error"].is_null())
        .map(|t| (t["direction"].to_string(), num(t, "/gbps")))
        .collect();
    assert!(
        !singles.is_empty(),
        "no single-stream TCP test: {:?}",
        ids(doc)
    );
    let (dir, best) = singles
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .unwrap_or_default();
    let exceeded = with_id(doc, "ceiling.exceeded");
    println!(
        "    host stack: bound {stack} Gb/s, best single stream {best} Gb/s ({dir}), \
         verdict ceiling {ceiling} Gb/s, ceiling.exceeded: {}",
        !exceeded.is_empty()
    );
    if exceeded.is_empty() {
        assert!(
            best <= stack + ROUNDING_GBPS,
            "a single stream ({dir}) carried {best} Gb/s above the host-stack ceiling \
             {stack} Gb/s, and no ceiling.exceeded finding says so: {:?}",
            ids(doc)
        );
        assert!(
            ceiling > 0.0,
            "no ceiling, and no ceiling.exceeded finding to say why: {v}"
        );
        // A virtual path has no hardware ceiling: the host stack's bound is the ceiling.
        assert!(
            (ceiling - stack).abs() <= ROUNDING_GBPS,
            "ceiling_gbps {ceiling}, the host stack bound {stack}"
        );
        // The summary quotes the bound only where it informs: for a judged stream within
        // STACK_BOUND_SHOWN_WITHIN of it (a busy host's stream far below it is held by
        // something else, which the verdict names first).
        let summary = v["summary"].as_str().unwrap_or("");
        let shown = [fmt_round(ceiling, 1), fmt_round(ceiling, 2)];
        let quoted = shown.iter().any(|c| summary.contains(&format!("{c} Gb/s")));
        let judged = num(v, "/gbps");
        if judged * STACK_BOUND_SHOWN_WITHIN >= ceiling {
            assert!(
                quoted,
                "the summary does not give the ceiling ({ceiling}): {summary}"
            );
        } else {
            assert!(
                !quoted && !summary.contains("the host stack can carry"),
                "a bound {ceiling} Gb/s, more than {STACK_BOUND_SHOWN_WITHIN} times the \
                 {judged} Gb/s judged, is quoted: {summary}"
            );
        }
    } else {
        assert_eq!(
            ceiling, 0.0,
            "ceiling.exceeded, yet the verdict keeps a ceiling: {v}"
        );
        assert!(
            best >= stack - ROUNDING_GBPS,
            "ceiling.exceeded, but the best single stream ({best} Gb/s, {dir}) is below the \
             bound {stack} Gb/s: {exceeded:?}"
        );
    }
}

/// Issue #37: each TCP test's senders (linerate at both ends) said how many of their
/// retransmits the receiver reported by D-SACK as duplicates (TCP_INFO, Linux 4.19 and later),
/// never more than they retransmitted.
fn check_spurious_counts(doc: &Value) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut v = release
        .trim()
        .split(['.', '-'])
        .map(|x| x.parse::<u32>().unwrap_or(0));
    if (v.next().unwrap_or(0), v.next().unwrap_or(0)) >= (4, 19) {
        let tcp: Vec<&Value> = doc["tests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == "tcp_bw" && t["error"].is_null())
            .collect();
        assert!(!tcp.is_empty(), "no TCP test");
        for t in tcp {
            let (r, d) = (
                t["retransmits"].as_u64(),
                t["spurious_retransmits"].as_u64(),
            );
            assert!(
                d.is_some() && d <= r,
                "spurious_retransmits {d:?} of {r:?}: {t}"
            );
        }
    }
}

/// Scenario 5: No shaper, MTU 1500 both ends: nothing at error, exit 0, and a verdict
/// consistent with the host stack's bound (see [`check_host_stack_ceiling`]): this
/// machine's speed decides which of the two outcomes, not whether the test passes.
#[test]
fn healthy_path() {
    let test = "healthy_path";
    let _g = serial();
    let Some(mut net) = Net::new(1500) else {
        return;
    };
    let disk = tempfile::tempdir().unwrap();
    let disk_s = disk.path().to_str().unwrap().to_string();
    let d = net.doctor(test, &[], &["--disk", &disk_s, "--rdma-provider", "tcp"]);
    let doc = d.doc();
    // RDMA beside TCP over the veth (libfabric's tcp provider), compared by rdma.vs_tcp.
    let rdma = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "rdma_write_bw")
        .expect("an RDMA test");
    assert!(rdma["error"].is_null(), "{rdma}");
    assert!(num(rdma, "/gbps") > 0.0);
    assert_eq!(with_id(doc, "rdma.vs_tcp").len(), 1, "{:?}", ids(doc));
    check_spurious_counts(doc);
    // The pyramid: this host's disk, the network, the server's disk through a real copy.
    let rows = doc["pyramid"]["rows"].as_array().expect("pyramid rows");
    let has = |layer: &str, host: &str| {
        rows.iter()
            .any(|r| r["layer"] == layer && r["host"] == host && num(r, "/gbps") > 0.0)
    };
    for (layer, host) in [
        ("memory", "local"),
        ("disk_read", "local"),
        ("disk_write", "local"),
        ("network", "local"),
        ("disk_write", "remote"),
        ("file_copy", "local"),
    ] {
        assert!(has(layer, host), "no {layer} ({host}) row: {rows:?}");
    }
    let copy = &doc["pyramid"]["copy"];
    assert!(num(copy, "/gbps") > 0.0, "{copy}");
    assert!(!copy["sentence"].as_str().unwrap_or("").is_empty());
    let ft = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["kind"] == "file_transfer")
        .expect("a file_transfer test");
    assert!(ft["error"].is_null(), "{ft}");
    // The copy was removed on the server, the source on this host.
    let left: Vec<_> = std::fs::read_dir(net.write_dir.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "files left in the server's write dir: {left:?}"
    );
    let left: Vec<_> = std::fs::read_dir(disk.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "files left in the disk directory: {left:?}"
    );
    let errors: Vec<&str> = findings(doc)
        .iter()
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(
        errors.is_empty(),
        "error findings on a healthy path: {errors:?}"
    );
    assert_eq!(d.code, Some(0), "stderr: {}", d.stderr);
    d.check_exit("error");
    for id in ["net.shaper", "mtu.mismatch", "tcp.buffers_small"] {
        assert!(with_id(doc, id).is_empty(), "{id} on a healthy path");
    }
    check_host_stack_ceiling(doc);
    assert!(num(&doc["verdict"], "/gbps") > 0.0);
    // The latency test says how it waited, and why; against a server only this end polls
    // here, so it polls whenever one core was idle, and the server grants what was asked.
    let lat = test_of(doc, "tcp_lat", "send", 1).expect("a latency test");
    let m = &lat["latency_mode"];
    let mode = m["mode"].as_str().unwrap_or("");
    assert!(["busy_polled", "blocking"].contains(&mode), "{m}");
    assert!(!m["reason"].as_str().unwrap_or("").is_empty(), "{m}");
    assert_eq!(m["server_spin_us"], m["client_spin_us"], "{m}");
    let line = format!("{} µs", m["client_spin_us"]);
    assert!(
        mode == "blocking" || m["reason"].as_str().unwrap().contains(&line),
        "{m}"
    );
    net.close();
}

/// HTML-escaped as the report writes text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Scenario 6a: `--report` writes the four charts (waterfall, timeline, latency, pyramid) and the verdict; `--fail-on info` exits 1 when
/// there is any finding.
#[test]
fn report_and_fail_on_info() {
    let test = "report_and_fail_on_info";
    let _g = serial();
    let Some(mut net) = Net::new(1500) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("out.html");
    let html_s = html.to_str().expect("utf-8 path");
    let d = net.doctor(test, &[], &["--report", html_s, "--fail-on", "info"]);
    let doc = d.doc();
    d.check_exit("info");
    if !findings(doc).is_empty() {
        assert_eq!(
            d.code,
            Some(1),
            "--fail-on info with findings {:?}",
            ids(doc)
        );
    }
    let page = std::fs::read_to_string(&html).expect("--report wrote the file");
    println!("    report: {} bytes", page.len());
    assert_eq!(page.matches("<svg").count(), 4, "four charts");
    for id in ["waterfall", "timeline", "latency"] {
        assert!(
            page.contains(&format!("<svg class=\"chart\" id=\"{id}\"")),
            "no <svg id=\"{id}\">"
        );
    }
    let summary = doc["verdict"]["summary"].as_str().expect("summary");
    assert!(
        page.contains(&esc(summary)),
        "the report does not show the verdict `{summary}`"
    );
    assert!(!page.contains("<script"), "the report is static");
    net.close();
}

/// Doctor to a port nothing listens on, in a.
fn refused(test: &str) -> Option<(Doctor, String)> {
    let net = Net::new(1500)?;
    let port = (PORT + 1).to_string();
    let ip = net.server_ip();
    let d = Doctor::run(Some(&net.a), &[], &[&ip, "-p", &port, "--quick", "--json"]);
    show(test, &d);
    net.close();
    Some((d, format!("{ip}:{port}")))
}

/// Scenario 6b: Nothing listening → exit 2, saying so, quickly and without output on stdout.
#[test]
fn nothing_listening_exits_2() {
    let test = "nothing_listening_exits_2";
    let _g = serial();
    let Some((d, addr)) = refused(test) else {
        return;
    };
    assert_eq!(d.code, Some(2), "stderr: {}", d.stderr);
    assert!(d.stdout.trim().is_empty(), "stdout: {}", d.stdout);
    let err = d.stderr.trim();
    assert!(err.starts_with("linerate: "), "stderr: {err}");
    assert!(err.contains(&addr), "stderr does not name {addr}: {err}");
    assert!(
        err.to_lowercase().contains("refused"),
        "stderr does not say the connection was refused: {err}"
    );
    assert!(d.secs < 20.0, "a refused connection took {:.1} s", d.secs);
}

/// Scenario 6c: The message says it once.
#[test]
fn nothing_listening_says_it_once() {
    let test = "nothing_listening_says_it_once";
    let _g = serial();
    let Some((d, _)) = refused(test) else {
        return;
    };
    assert_eq!(d.code, Some(2));
    assert_eq!(
        d.stderr.matches("Connection refused").count(),
        1,
        "stderr: {}",
        d.stderr
    );
}

/// `linerate doctor --quick --json` with no host: a self-check over this machine's
/// loopback, no namespaces (and no root) needed.
#[test]
fn self_check_on_loopback() {
    let test = "self_check_on_loopback";
    let _g = serial();
    let disk = tempfile::tempdir().unwrap();
    let disk_s = disk.path().to_str().unwrap().to_string();
    let d = Doctor::run(None, &[], &["--quick", "--json", "--disk", &disk_s]);
    show(test, &d);
    let doc = d.doc();
    d.check_exit("error");
    assert_eq!(doc["mode"], "self_check");
    let copy = &doc["pyramid"]["copy"];
    assert!(
        num(copy, "/gbps") > 0.0,
        "no copy verdict: {}",
        doc["pyramid"]
    );
    assert_eq!(doc["disks"].as_array().map(Vec::len), Some(1));
    let left: Vec<_> = std::fs::read_dir(disk.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "files left in the disk directory: {left:?}"
    );
    let tests = doc["tests"].as_array().expect("tests");
    assert!(tests.len() >= 3, "{} tests", tests.len());
    assert!(
        tests.iter().any(|t| t["kind"] == "tcp_bw"),
        "no TCP throughput test"
    );
    let memory = doc["memory"].as_array().expect("memory");
    assert!(!memory.is_empty(), "no memory results");
    for m in memory {
        assert!(num(m, "/gb_per_s") > 0.0, "memory result {m}");
    }
    let v = &doc["verdict"];
    assert!(!v["summary"].as_str().unwrap_or("").is_empty(), "{v}");
    assert!(num(v, "/gbps") > 0.0, "{v}");
    assert!(doc["inventory"]["remote"].is_null());
    assert!(doc["path"]["remote"].is_null());
}
