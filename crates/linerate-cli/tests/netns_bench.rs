//! `linerate bench` against `linerate serve` across a veth pair between two network
//! namespaces that each test creates and removes, with `tc tbf` as a reference shaper.
//!
//! Needs root (`ip netns`, `tc`). Elsewhere, or where namespaces cannot be made, every
//! test prints why it skipped and passes. The tests share this machine's CPUs and the
//! throughput figures are only meaningful one at a time, so each holds `serial()`: a
//! mutex in this process and a lock file across processes (another `cargo test` of the
//! workspace running this binary at the same time waits its turn).
//!
//! Run with `cargo test -p linerate --test netns_bench -- --nocapture` to see the figures.

mod common;

use linerate_testkit::schema;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{num, run, serial, Net, BIN, PORT};

/// Payload of a full-sized TCP segment at MTU 1500 with timestamps, and its frame as a
/// shaper counts it (no FCS): 14 Ethernet + 20 IPv4 + 20 TCP + 12 timestamps + 1448.
const MSS: f64 = 1448.0;
const FRAME: f64 = 1514.0;
/// Relative error allowed between linerate and the shaper.
const TOLERANCE: f64 = 0.03;
/// Relative error allowed between linerate's byte count and tbf's over one run (two
/// counts of the same bytes: linerate 0.0-0.7% under tbf here, idle or with a core busy,
/// because tbf also passes the control connection and what the socket still held when
/// the measured time ended, about 4 MB: 0.6% of a 5 s run at 1 Gb/s, 0.06% at 10 Gb/s).
const COUNT_TOLERANCE: f64 = 0.01;

impl Net {
    /// `linerate bench SERVER -p port ARGS` in a, killed after 60 s.
    fn bench_port(&self, port: u16, args: &[&str]) -> Bench {
        let ip = self.server_ip();
        let port = port.to_string();
        let started = Instant::now();
        let out = Command::new("timeout")
            .args([
                "-k", "5", "60", "ip", "netns", "exec", &self.a, BIN, "bench",
            ])
            .args([ip.as_str(), "-p", &port])
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run timeout(1)");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let b = Bench {
            code: out.status.code(),
            doc: serde_json::from_str(&stdout).ok(),
            stdout,
            stderr,
            started,
            secs: started.elapsed().as_secs_f64(),
        };
        assert_ne!(
            b.code,
            Some(124),
            "linerate bench {args:?} hung past 60 s; stderr: {}",
            b.stderr
        );
        b
    }

    fn bench(&self, args: &[&str]) -> Bench {
        self.bench_port(PORT, args)
    }
}

/// One `linerate bench` run.
#[derive(Debug)]
struct Bench {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    doc: Option<Value>,
    started: Instant,
    secs: f64,
}

impl Bench {
    /// The run succeeded and printed one well-formed JSON document; its test.
    fn test(&self, net: &Net, kind: &str, direction: &str) -> &Value {
        assert_eq!(
            self.code,
            Some(0),
            "exit status; stderr: {}\nstdout: {}",
            self.stderr,
            self.stdout
        );
        let doc = self
            .doc
            .as_ref()
            .unwrap_or_else(|| panic!("stdout is not JSON: {}", self.stdout));
        check_shape(doc, net, kind, direction)
    }
}

fn check_shape<'a>(doc: &'a Value, net: &Net, kind: &str, direction: &str) -> &'a Value {
    assert_eq!(doc["schema_version"], 1, "{doc}");
    assert_eq!(doc["tool"]["name"], "linerate", "{doc}");
    let tests = doc["tests"].as_array().expect("`tests` is an array");
    assert_eq!(tests.len(), 1);
    let t = &tests[0];
    assert!(t["error"].is_null(), "error: {}", t["error"]);
    assert_eq!(t["kind"], kind);
    assert_eq!(t["direction"], direction);
    assert_eq!(t["server"], format!("{}:{PORT}", net.server_ip()));
    for key in [
        "streams",
        "duration_s",
        "omit_s",
        "bytes",
        "gbps",
        "l2_gbps",
        "sender",
        "receiver",
        "retransmits",
        "loss_percent",
        "latency_us",
        "transactions_per_s",
        "intervals",
        "per_stream",
        "directions",
        "params",
        "local",
        "remote",
    ] {
        assert!(t.get(key).is_some(), "`{key}` missing from the test");
    }
    let gbps = num(t, "/gbps");
    assert!(gbps.is_finite() && gbps >= 0.0);
    let intervals = t["intervals"].as_array().expect("intervals");
    assert!(!intervals.is_empty(), "no intervals");
    for i in intervals {
        assert!(num(i, "/end_s") > num(i, "/start_s"), "interval {i}");
        assert!(i["bytes"].is_u64(), "interval {i}");
        assert!(num(i, "/gbps") >= 0.0, "interval {i}");
        assert!(i["omitted"].is_boolean(), "interval {i}");
    }
    assert!(t["params"].is_object());
    schema::assert_matches("bench.schema.json", doc);
    t
}

/// Rate of a full-sized TCP stream on the wire over its payload rate.
fn l2_factor() -> f64 {
    FRAME / MSS
}

#[test]
fn tcp_one_stream_across_namespaces() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let b = net.bench(&["-t", "3", "-J"]);
    let t = b.test(&net, "tcp_bw", "send");
    let gbps = num(t, "/gbps");
    let l2 = num(t, "/l2_gbps");
    println!(
        "healthy TCP, 1 stream, 3 s: {gbps:.3} Gb/s payload, {l2:.3} Gb/s L2, {} retransmits, {:.1} s wall",
        t["retransmits"], b.secs
    );
    // Data crossed the pair; how fast depends on this machine, so no figure is asserted.
    assert!(gbps > 0.0, "{gbps} Gb/s across a veth pair");
    assert_eq!(t["sender"]["host"], "local");
    assert_eq!(t["receiver"]["host"], "remote");
    assert!(num(t, "/receiver/bytes") > 0.0);
    assert!(t["retransmits"].is_u64());
    assert!(
        (l2 / gbps - l2_factor()).abs() < 0.005,
        "l2/gbps = {}",
        l2 / gbps
    );
    assert_eq!(t["per_stream"].as_array().map(Vec::len), Some(1));
    // One per second; the receiver may add a short one for data still arriving at the end.
    let n = t["intervals"].as_array().map_or(0, Vec::len);
    assert!((3..=4).contains(&n), "{n} intervals in a 3 s test");
}

/// Samples tbf's byte counter (which counts frames without FCS) every 100 ms, and once
/// more when stopped: `finish` is called after the bench has exited, so that last sample
/// is tbf's whole count of the run. (Without it the last sample could be one taken up to
/// a tick and a `tc` start-up before the data ended: on a loaded machine linerate's count
/// then ran 1.3% over tbf's, the tail of the run that tbf had passed but not yet been
/// asked about.)
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<Vec<(Instant, u64)>>,
}

impl Sampler {
    fn start(ns: &str, dev: &str) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let (ns, dev, flag) = (ns.to_string(), dev.to_string(), stop.clone());
        let handle = thread::spawn(move || {
            let sample = |out: &mut Vec<(Instant, u64)>| {
                if let Ok(o) = run("tc", &["-n", &ns, "-s", "-j", "qdisc", "show", "dev", &dev]) {
                    let now = Instant::now();
                    let bytes = serde_json::from_slice::<Value>(&o.stdout)
                        .ok()
                        .and_then(|v| v.pointer("/0/bytes").and_then(Value::as_u64));
                    if let Some(b) = bytes {
                        out.push((now, b));
                    }
                }
            };
            let mut out = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                sample(&mut out);
                thread::sleep(Duration::from_millis(100));
            }
            sample(&mut out);
            out
        });
        Sampler { stop, handle }
    }

    fn finish(self) -> Vec<(Instant, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("sampler thread")
    }
}

/// What tbf let through, Gb/s, over the steady part of the run: from 1.5 s after the
/// client started (past its 1 s warm-up) to the last sample while data still flowed.
fn shaper_gbps(samples: &[(Instant, u64)], started: Instant) -> Option<f64> {
    let last = samples.last()?.1;
    let end = samples
        .iter()
        .position(|s| last - s.1 < 1 << 20)?
        .checked_sub(1)?;
    let from = started + Duration::from_millis(1500);
    let begin = samples.iter().position(|s| s.0 >= from)?;
    if end <= begin {
        return None;
    }
    let (t0, b0) = samples[begin];
    let (t1, b1) = samples[end];
    let secs = (t1 - t0).as_secs_f64();
    (secs >= 1.0).then(|| (b1 - b0) as f64 * 8.0 / secs / 1e9)
}

fn rel(x: f64, want: f64) -> f64 {
    (x - want) / want
}

/// Shape a's egress with tbf at `rate_gbit` and check linerate reports that rate on the
/// wire (`l2_gbps`) and the matching payload rate (`gbps`).
///
/// The shaper is at the rate only if the sender can fill it. `must_fill`: the test fails
/// when it does not; otherwise (rates this 2-core VM may not sustain through tbf, which
/// costs far more CPU than a bare veth pair) the test then checks what stays meaningful:
/// linerate agrees with tbf's own byte counter and never reports more than the shaper
/// let through.
fn shaped(test: &str, rate_gbit: u32, burst: &str, must_fill: bool) {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let rate = format!("{rate_gbit}gbit");
    net.tc(&[
        "qdisc", "add", "dev", &net.va, "root", "tbf", "rate", &rate, "burst", burst, "latency",
        "50ms",
    ]);
    let sampler = Sampler::start(&net.a, &net.va);
    let b = net.bench(&["-t", "5", "-O", "1", "-J"]);
    let samples = sampler.finish();
    let t = b.test(&net, "tcp_bw", "send");
    let r = f64::from(rate_gbit);
    let want_payload = r * MSS / FRAME;
    let gbps = num(t, "/gbps");
    let l2 = num(t, "/l2_gbps");
    let tbf = shaper_gbps(&samples, b.started);
    let tbf_s = tbf.map_or_else(|| "?".to_string(), |x| format!("{x:.3}"));
    println!(
        "tbf {rate} burst {burst}: gbps {gbps:.3} (want {want_payload:.3}, {:+.2}%), \
         l2_gbps {l2:.3} (want {r:.3}, {:+.2}%), tbf counted {tbf_s} Gb/s, {} retransmits, \
         sender CPU {}%, receiver CPU {}%",
        rel(gbps, want_payload) * 100.0,
        rel(l2, r) * 100.0,
        t["retransmits"],
        t["sender"]["cpu_percent"],
        t["receiver"]["cpu_percent"],
    );
    // The headers linerate adds are those of a 1448-byte segment in a 1514-byte frame
    // (within the tolerance here: with -O they are overstated, see
    // `l2_gbps_with_omit_counts_the_measured_segments_only`).
    assert!(
        rel(l2 / gbps, l2_factor()).abs() <= TOLERANCE,
        "l2_gbps / gbps = {:.4}, want {:.4}",
        l2 / gbps,
        l2_factor()
    );
    // Never more than the shaper lets through.
    assert!(
        l2 <= r * (1.0 + TOLERANCE),
        "l2_gbps {l2} above the shaped {r}"
    );
    // linerate's count of the bytes against tbf's own, over the same whole run: a ratio
    // of two counts of one run, so a stall of this shared machine changes neither side.
    // (Comparing rates instead compares two different windows: a 120 ms stall inside
    // linerate's and outside tbf's steady window made them differ by 3.1%.)
    let (sent, wire) = wire_agreement(t, &samples);
    println!(
        "    frames: linerate {sent:.0} bytes, tbf {wire:.0} bytes ({:+.2}%)",
        rel(sent, wire) * 100.0
    );
    assert!(
        rel(sent, wire).abs() <= COUNT_TOLERANCE,
        "linerate's intervals carried {sent:.0} bytes of frames, tbf counted {wire:.0}"
    );
    // The rate itself is set by the shaper, but only reached where the sender keeps up:
    // the best whole measured second must be at it (a stall in another second is this
    // machine's business, not linerate's).
    let best = best_second_gbps(t);
    let filled = tbf.is_none_or(|x| x >= r * (1.0 - TOLERANCE));
    if filled || must_fill {
        assert!(
            rel(best, want_payload).abs() <= TOLERANCE,
            "best measured second {best} Gb/s of payload, want {want_payload:.3} \
             (tbf counted {tbf_s}; the whole run {gbps})"
        );
    } else {
        println!(
            "NOTE {test}: the sender did not fill the shaper (tbf passed {tbf_s} Gb/s of {r}): \
             CPU-bound on this machine; checked agreement with tbf and the upper bound only"
        );
    }
}

/// The bytes of frames linerate's intervals account for (payload of every interval,
/// warm-up included, in 1514-byte frames per 1448 bytes), and tbf's count over the run
/// less the frames TCP sent twice (linerate counts a retransmitted segment once).
fn wire_agreement(t: &Value, samples: &[(Instant, u64)]) -> (f64, f64) {
    let payload: u64 = t["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter_map(|i| i["bytes"].as_u64())
        .sum();
    let tbf = samples.last().map_or(0, |s| s.1) as f64;
    let retransmits = t["retransmits"].as_u64().unwrap_or(0) as f64;
    (
        payload as f64 * l2_factor(),
        (tbf - retransmits * FRAME).max(0.0),
    )
}

/// The highest payload rate of a whole measured second (warm-up excluded).
fn best_second_gbps(t: &Value) -> f64 {
    t["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["omitted"] == false && num(i, "/end_s") - num(i, "/start_s") >= 0.9)
        .map(|i| num(i, "/gbps"))
        .fold(0.0, f64::max)
}

#[test]
fn accuracy_tbf_1gbit() {
    shaped("accuracy_tbf_1gbit", 1, "512k", true);
}

#[test]
fn accuracy_tbf_5gbit() {
    shaped("accuracy_tbf_5gbit", 5, "2500k", false);
}

#[test]
fn accuracy_tbf_10gbit() {
    shaped("accuracy_tbf_10gbit", 10, "5m", false);
}

#[test]
fn udp_500m_across_namespaces() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let b = net.bench(&["-u", "-b", "500M", "-t", "3", "-J"]);
    let t = b.test(&net, "udp_bw", "send");
    let gbps = num(t, "/gbps");
    let l2 = num(t, "/l2_gbps");
    let loss = num(t, "/loss_percent");
    println!(
        "UDP 500M: {gbps:.3} Gb/s ({:+.2}%), l2 {l2:.3}, loss {loss}%, {} packets, jitter {} µs",
        rel(gbps, 0.5) * 100.0,
        t["packets"],
        t["jitter_us"]
    );
    assert!(loss < 1.0, "loss {loss}%");
    assert!(rel(gbps, 0.5).abs() <= TOLERANCE, "gbps {gbps}, want 0.5");
    // Each end read its namespace's UDP counters: the server's delivered at least what the
    // test received (its warm-up too); the client's namespace received none of the test's.
    let u = &t["udp_receive"];
    let received = num(t, "/packets") - num(t, "/lost_packets");
    assert!(
        num(u, "/remote/in_datagrams") >= received,
        "{u} vs {received}"
    );
    assert!(num(u, "/local/in_datagrams") < received / 100.0, "{u}");
    assert!(num(t, "/packets") > 0.0);
    assert!(t["receiver"].is_object());
    // 1400-byte datagrams plus 14 + 20 + 8 bytes of headers.
    assert!(
        (l2 / gbps - 1442.0 / 1400.0).abs() < 0.005,
        "l2/gbps {}",
        l2 / gbps
    );
}

/// A receiver whose socket holds a few datagrams (`-w 4K`) at 1 Gb/s: what it lost, its host
/// counted as dropped for a full socket buffer (`RcvbufErrors`), and the loss is put there.
#[test]
fn udp_loss_at_a_small_receive_buffer_is_counted_by_the_receiver() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let b = net.bench(&["-u", "-R", "-b", "1G", "-w", "4K", "-t", "2", "-J"]);
    let t = b.test(&net, "udp_bw", "receive");
    let u = &t["udp_receive"];
    let lost = num(t, "/lost_packets");
    println!("UDP 1G into a 4 KiB buffer: {lost} lost, the receiver's counters {u}");
    let local = &u["local"];
    assert!(
        num(local, "/rcvbuf_errors") <= num(local, "/in_errors"),
        "{u}"
    );
    assert!(
        num(local, "/in_datagrams") >= num(t, "/packets") - lost,
        "{u} vs {t}"
    );
    // The sender's namespace received nothing of the test, and dropped nothing.
    assert_eq!(num(u, "/remote/rcvbuf_errors"), 0.0, "{u}");
    // The client's window runs from before the server can send until the server's results
    // came, its socket open until then: every datagram the test lost reached its host and
    // was dropped at the full buffer (a veth loses nothing else at this rate), so the drops
    // it counted cover the loss. The margin: what the 4 KiB buffer still held unread when the
    // receiver stopped (a few datagrams), and 1% for any the veth's backlog dropped on a
    // loaded machine. Measured: the drops equal the loss (48,031 of 48,031; before the window
    // covered the far end's last datagrams, 56,680 of 57,107). No warm-up is omitted and
    // nothing else receives in the namespace, so the drops are not more than the loss either.
    if lost > 0.0 {
        let drops = num(local, "/rcvbuf_errors");
        let margin = lost / 100.0 + 8.0;
        assert!(drops + margin >= lost, "{lost} lost; {u}");
        assert!(drops <= lost + margin, "{lost} lost; {u}");
    } else {
        println!("nothing lost: this machine drained a 4 KiB buffer at 1 Gb/s");
    }
}

#[test]
fn latency_across_namespaces() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let b = net.bench(&["--latency", "-t", "3", "-J"]);
    let t = b.test(&net, "tcp_lat", "send");
    let tps = num(t, "/transactions_per_s");
    let (p50, p99, max) = (
        num(t, "/latency_us/p50"),
        num(t, "/latency_us/p99"),
        num(t, "/latency_us/max"),
    );
    println!(
        "latency: {tps} transactions/s, p50 {p50} µs, p99 {p99} µs, max {max} µs, mean {} µs",
        t["latency_us"]["mean"]
    );
    // One transaction at a time: the rate and the mean round trip of the same run bound
    // each other (rate × mean ≤ 1 s, 10% for rounding and clocks); no machine-speed figure.
    let mean = num(t, "/latency_us/mean");
    assert!(tps > 0.0, "{tps} transactions/s");
    assert!(
        tps * mean <= 1e6 * 1.10,
        "{tps} transactions/s one at a time cannot each take {mean} µs on average"
    );
    assert!(p50 <= p99 && p99 <= max, "p50 {p50} p99 {p99} max {max}");
    assert!(num(t, "/latency_us/min") <= p50);
    assert!(num(t, "/latency_us/mean") > 0.0);
}

#[test]
fn reverse_and_bidir_across_namespaces() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let b = net.bench(&["-R", "-t", "3", "-J"]);
    let t = b.test(&net, "tcp_bw", "receive");
    let gbps = num(t, "/gbps");
    println!(
        "reverse: {gbps:.3} Gb/s, l2 {}, {} retransmits",
        t["l2_gbps"], t["retransmits"]
    );
    assert!(gbps > 0.0, "-R: {gbps} Gb/s");
    assert_eq!(t["sender"]["host"], "remote");
    assert_eq!(t["receiver"]["host"], "local");
    assert!(t["retransmits"].is_u64(), "-R has the server's retransmits");
    assert!((num(t, "/l2_gbps") / gbps - l2_factor()).abs() < 0.005);

    let b = net.bench(&["--bidir", "-t", "3", "-J"]);
    let t = b.test(&net, "tcp_bw", "bidir");
    let gbps = num(t, "/gbps");
    let dirs = t["directions"].as_array().expect("directions");
    assert_eq!(dirs.len(), 2, "bidir has two directions");
    let (up, down) = (num(&dirs[0], "/gbps"), num(&dirs[1], "/gbps"));
    println!("bidir: {gbps:.3} Gb/s = {up:.3} send + {down:.3} receive");
    assert_eq!(dirs[0]["direction"], "send");
    assert_eq!(dirs[0]["sender"]["host"], "local");
    assert_eq!(dirs[0]["receiver"]["host"], "remote");
    assert_eq!(dirs[1]["direction"], "receive");
    assert_eq!(dirs[1]["sender"]["host"], "remote");
    assert_eq!(dirs[1]["receiver"]["host"], "local");
    // Both directions carried data at once (their speed is this machine's business).
    assert!(up > 0.0 && down > 0.0, "send {up}, receive {down}");
    assert!(
        (gbps - (up + down)).abs() < 0.002,
        "{gbps} != {up} + {down}"
    );
    assert_eq!(t["per_stream"].as_array().map(Vec::len), Some(2));
}

#[test]
fn nothing_listening_exits_2_naming_the_address() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    let port = PORT + 1;
    let b = net.bench_port(port, &["-t", "2", "-J"]);
    println!(
        "nothing listening: exit {:?} after {:.2} s, stderr: {}",
        b.code,
        b.secs,
        b.stderr.trim()
    );
    assert_eq!(b.code, Some(2), "stderr: {}", b.stderr);
    let addr = format!("{}:{port}", net.server_ip());
    assert!(
        b.stderr.contains(&addr),
        "stderr does not name {addr}: {}",
        b.stderr
    );
    assert!(
        b.stderr.to_lowercase().contains("refused"),
        "stderr does not say the connection was refused: {}",
        b.stderr
    );
    assert!(!b.stderr.contains("panicked"), "{}", b.stderr);
    assert!(b.secs < 10.0, "a refused connection took {:.1} s", b.secs);
}

/// Per-interval retransmits come from the receiving side's sockets, which never
/// retransmit: `intervals[].retransmits` is 0 in every interval of a send (and -R) test
/// while `.retransmits` counts tens of thousands, and in a bidir test each direction's
/// intervals carry the *other* direction's retransmits.
#[test]
fn interval_retransmits_are_the_senders() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    // A shallow tbf queue on each side drops enough to force retransmits both ways.
    for (ns, dev) in [(&net.a, &net.va), (&net.b, &net.vb)] {
        run(
            "tc",
            &[
                "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "200mbit", "burst",
                "32k", "limit", "40k",
            ],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    for (flag, direction) in [("", "send"), ("-R", "receive")] {
        let mut args = vec!["-t", "3", "-J"];
        if !flag.is_empty() {
            args.push(flag);
        }
        let b = net.bench(&args);
        let t = b.test(&net, "tcp_bw", direction);
        let total = t["retransmits"].as_u64().expect("retransmits");
        let per: Vec<u64> = t["intervals"]
            .as_array()
            .expect("intervals")
            .iter()
            .map(|i| i["retransmits"].as_u64().unwrap_or(0))
            .collect();
        println!("{direction}: {total} retransmits, per interval {per:?}");
        assert!(
            total >= 100,
            "precondition: the shallow queue forces retransmits"
        );
        let sum: u64 = per.iter().sum();
        assert!(
            sum * 2 >= total,
            "{direction}: intervals sum to {sum} retransmits, the test to {total}"
        );
    }
    let b = net.bench(&["--bidir", "-t", "3", "-J"]);
    let t = b.test(&net, "tcp_bw", "bidir");
    for d in t["directions"].as_array().expect("directions") {
        let total = d["retransmits"].as_u64().unwrap_or(0);
        let sum: u64 = d["intervals"]
            .as_array()
            .expect("intervals")
            .iter()
            .map(|i| i["retransmits"].as_u64().unwrap_or(0))
            .sum();
        println!(
            "bidir {}: {total} retransmits, intervals sum {sum}",
            d["direction"]
        );
        assert!(
            sum * 2 >= total && sum <= total * 2 + 10,
            "bidir {}: intervals sum to {sum} retransmits, the direction to {total}",
            d["direction"]
        );
    }
}

/// `l2_gbps` = payload rate × (1 + 66 × data_segs_out / bytes_sent), where
/// `data_segs_out` (tcp_info) counts every segment since the connection opened but
/// `bytes_sent` only the bytes after the -O warm-up. With `-t 5 -O 1` the header share
/// comes out 5/4 too large: l2_gbps / gbps = 1.057 instead of 1514/1448 = 1.0456, so at
/// a tbf-measured 1.000 Gb/s linerate reports 1.011 (+1.1%) on the wire.
#[test]
fn l2_gbps_with_omit_counts_the_measured_segments_only() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    net.tc(&[
        "qdisc", "add", "dev", &net.va, "root", "tbf", "rate", "1gbit", "burst", "512k", "latency",
        "50ms",
    ]);
    let b = net.bench(&["-t", "5", "-O", "1", "-J"]);
    let t = b.test(&net, "tcp_bw", "send");
    let (gbps, l2) = (num(t, "/gbps"), num(t, "/l2_gbps"));
    println!(
        "-t 5 -O 1 at tbf 1gbit: gbps {gbps}, l2_gbps {l2}, ratio {:.4} (want {:.4})",
        l2 / gbps,
        l2_factor()
    );
    assert!(
        (l2 / gbps - l2_factor()).abs() < 0.005,
        "l2_gbps / gbps = {:.4}, want {:.4}",
        l2 / gbps,
        l2_factor()
    );
    // The overstatement put l2_gbps above the shaper (1.011 at 1 Gb/s). A stall of this
    // shared machine can only lower the rate, so the bound holds whatever the machine
    // (0.5%: the 512 KiB burst over the 4 measured seconds is 0.1%).
    assert!(
        l2 <= 1.005,
        "l2_gbps {l2} above the 1 Gb/s shaper (tbf cannot pass more)"
    );
}

/// In a bidir test the summed `sender`/`receiver` endpoints add the two directions'
/// rounded `cpu_percent` without rounding again, printing e.g. 40.599999999999994.
#[test]
fn bidir_cpu_percent_is_rounded() {
    let _g = serial();
    let Some(net) = Net::new(1500) else {
        return;
    };
    // Whether the sum shows binary noise depends on the figures (about one run in three
    // here): try a few.
    for _ in 0..10 {
        let b = net.bench(&["--bidir", "-t", "1", "-J"]);
        let t = b.test(&net, "tcp_bw", "bidir");
        for side in ["sender", "receiver"] {
            let x = num(t, &format!("/{side}/cpu_percent"));
            println!("bidir {side}.cpu_percent = {x}");
            assert_eq!(
                x.to_string(),
                format!("{:.1}", (x * 10.0).round() / 10.0).trim_end_matches(".0"),
                "{side}.cpu_percent {x} is not rounded to 0.1"
            );
        }
    }
}
