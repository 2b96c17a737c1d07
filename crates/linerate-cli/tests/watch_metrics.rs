//! `linerate watch --listen`: what it serves passes `promtool check metrics` and a real
//! Prometheus scrape; docs/watch.md's alert fires on exactly the ports soak's verdict calls
//! marginal or bad, and its recording rules join the families they divide; a slow client, a
//! huge request and more clients than allowed are each bounded, and the sampling goes on at its
//! interval through all of it. Over a fixture tree: no root.

mod soak_tree;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use linerate_testkit::promtool;
use serde_json::{json, Value};
use soak_tree::{get, set, tree, Stream, BIN};

const FIXTURE: &str = "cx3-fdr-at-qdr-datagram";
const DEV: &str = "mlx4_0";

/// `linerate watch --listen 0` (a port the kernel picks, on 127.0.0.1) with `--json-stream`, so
/// the test sees every interval as the sampler takes it; the address from its stderr line.
struct Watch {
    stream: Stream,
    addr: SocketAddr,
}

fn start(root: &Path, extra: &[&str]) -> Watch {
    let mut cmd = Command::new(BIN);
    // Its own end: --count bounds its life whatever the test does.
    cmd.args([
        "watch",
        "--listen",
        "0",
        "--json-stream",
        "-i",
        "200ms",
        "--count",
        "600",
    ])
    .args(["--root"])
    .arg(root)
    .args(extra);
    let mut stream = Stream::start(cmd);
    let addr = stream.stderr_line("metrics at", Duration::from_secs(20));
    let addr = addr
        .split("http://")
        .nth(1)
        .and_then(|a| a.strip_suffix("/metrics"))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in `{addr}`"));
    Watch { stream, addr }
}

/// One request, its whole answer (status line, headers, body), within 10 s.
fn http(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).expect("send the request");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The body of `GET /metrics`, when it is answered `200`.
fn scrape(addr: SocketAddr) -> Option<String> {
    let r = http(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    r.starts_with("HTTP/1.1 200 OK\r\n")
        .then(|| r.split_once("\r\n\r\n").map(|b| b.1.to_string()))
        .flatten()
}

/// The value of the first sample of `name` (with `labels` in its label set).
fn sample(text: &str, name: &str, labels: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| l.contains(labels))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
}

/// Scrapes until `pred` holds on the body (every 200 ms, 30 s at most).
fn scrape_until(addr: SocketAddr, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let body = scrape(addr);
        if let Some(b) = body.as_deref().filter(|b| pred(b)) {
            return b.to_string();
        }
        assert!(Instant::now() < until, "no scrape with {what}:\n{body:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn what_it_serves_passes_promtool_check_metrics() {
    let t = tree(FIXTURE, DEV, &["mlx4_1"]);
    let w = start(t.path(), &[]);
    // The counter moves after the watch's first sample, which is its baseline (written
    // before it, the error would be part of where the watch started: no increase).
    let first = scrape_until(w.addr, "the first sample", |b| {
        sample(b, "linerate_watch_samples_total", "").is_some_and(|n| n >= 1.0)
    });
    let after = sample(&first, "linerate_watch_samples_total", "").unwrap();
    set(
        t.path(),
        DEV,
        "symbol_error",
        get(t.path(), DEV, "symbol_error") + 1,
    );
    let body = scrape_until(w.addr, "an interval and a verdict", |b| {
        sample(b, "linerate_watch_samples_total", "").is_some_and(|n| n >= after + 2.0)
            && b.contains("linerate_watch_verdict{")
    });
    let Ok(mut check) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        linerate_testkit::skip("promtool is not installed (Debian package prometheus)");
        return;
    };
    check
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {out:?}\n{body}"
    );
    // node_exporter's labels, each port's families joined by them.
    for family in [
        "linerate_watch_receive_bytes_total",
        "linerate_watch_ceiling_bytes_per_second",
        "linerate_watch_link_up",
        "linerate_watch_verdict",
    ] {
        let v = sample(&body, family, r#"device="mlx4_0",port="1",netdev="ib0""#);
        assert!(v.is_some(), "{family} of mlx4_0/1 missing:\n{body}");
    }
    assert_eq!(
        sample(
            &body,
            "linerate_watch_ceiling_bytes_per_second",
            r#"device="mlx4_0""#
        ),
        Some(4e9)
    );
    assert_eq!(
        sample(
            &body,
            "linerate_watch_ceiling_stage_info",
            r#"stage="encoding""#
        ),
        Some(1.0)
    );
    assert!(body.contains(r#"linerate_watch_errors_total{device="mlx4_0",port="1",netdev="ib0",source="ib_counters",counter="symbol_error"} 1"#), "{body}");
    // HEAD, another path, another method, garbage: each its answer.
    let head = http(w.addr, "HEAD /metrics HTTP/1.0\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 OK") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    assert!(http(w.addr, "GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    let post = http(w.addr, "POST /metrics HTTP/1.1\r\n\r\n");
    assert!(
        post.starts_with("HTTP/1.1 405") && post.contains("Allow: GET, HEAD"),
        "{post}"
    );
    assert!(http(w.addr, "\x16\x03\x01\x02\r\n\r\n").starts_with("HTTP/1.1 400"));
    drop(w);
}

#[test]
fn a_real_prometheus_scrapes_it() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        linerate_testkit::skip("prometheus is not installed (Debian package prometheus)");
        return;
    }
    let t = tree(FIXTURE, DEV, &[]);
    let w = start(t.path(), &[]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: linerate\n    static_configs:\n      - targets: ['{}']\n",
            w.addr
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prom = Command::new("timeout")
        .arg("90")
        .arg("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let prom = Killed(prom);
    let api: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    let result = loop {
        let r = TcpStream::connect(api).ok().map(|_| {
            http(
                api,
                "GET /api/v1/query?query=linerate_watch_link_up%7Bdevice%3D%22mlx4_0%22%7D HTTP/1.0\r\n\r\n",
            )
        });
        if let Some(body) = r
            .as_deref()
            .and_then(|r| r.split_once("\r\n\r\n"))
            .map(|x| x.1)
        {
            let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            if v["data"]["result"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
            {
                break v;
            }
        }
        assert!(
            Instant::now() < until,
            "prometheus never stored linerate_watch_link_up"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let r = &result["data"]["result"][0];
    assert_eq!(r["metric"]["port"], "1", "{result}");
    assert_eq!(r["metric"]["netdev"], "ib0", "{result}");
    assert_eq!(r["value"][1], "1", "{result}");
    drop(prom);
}

/// A child killed and reaped on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The yaml block after `<!-- promtool:` in docs/watch.md.
fn recipe() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/watch.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    promtool::yaml_after(&doc, "<!-- promtool:").expect("a yaml block after `<!-- promtool:`")
}

#[test]
fn the_documented_alert_fires_when_the_verdict_does() {
    let t = tree(FIXTURE, DEV, &["mlx4_1"]);
    let root = t.path();
    let mut w = start(root, &["--window", "20s"]);
    w.stream.until("the first interval", |f| f["seq"] == 1);
    // mlx4_0's link went down once (bad); mlx4_1 stays quiet.
    set(root, DEV, "link_downed", get(root, DEV, "link_downed") + 1);
    w.stream.until("mlx4_0 judged bad", |f| {
        f["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["device"] == DEV && p["window"]["verdict"] == "bad")
    });
    let body = scrape_until(w.addr, "the bad verdict", |b| {
        sample(b, "linerate_watch_verdict", r#"device="mlx4_0""#) == Some(4.0)
    });
    let bad = promtool::Labels::from([
        ("device".to_string(), DEV.to_string()),
        ("port".to_string(), "1".to_string()),
    ]);
    let cases = vec![promtool::Case {
        name: "one port bad".into(),
        textfile: body.clone(),
        alerts: vec![("LinerateWatchVerdict".into(), vec![bad])],
    }];
    match promtool::test_rules(&recipe(), &cases) {
        Ok(true) => {}
        Ok(false) => {
            linerate_testkit::skip("promtool is not installed (Debian package prometheus)");
            return;
        }
        Err(e) => panic!("{e}"),
    }
    // The recording rules: each port's bytes over its own ceiling, the label sets joined.
    let labels = r#"device="mlx4_0",port="1",netdev="ib0""#;
    let series = |name: &str, values: &str| json!({"series": format!("{name}{{{labels},job=\"linerate\"}}"), "values": values});
    let expect = |rule: &str, value: f64| {
        json!({"expr": rule, "eval_time": "4m", "exp_samples": [
            {"labels": format!("{rule}{{{labels},job=\"linerate\"}}"), "value": value}
        ]})
    };
    // 120e9 bytes a minute: 16 Gb/s, half the 32 Gb/s ceiling; 60e9 sent: a quarter.
    let tests = json!({
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                series("linerate_watch_receive_bytes_total", "0+120000000000x5"),
                series("linerate_watch_transmit_bytes_total", "0+60000000000x5"),
                series("linerate_watch_ceiling_bytes_per_second", "4000000000x5"),
            ],
            "promql_expr_test": [
                expect("linerate_watch:receive_utilisation:ratio", 0.5),
                expect("linerate_watch:transmit_utilisation:ratio", 0.25),
            ],
        }],
    });
    assert_eq!(promtool::test_rules_file(&recipe(), &tests), Ok(true));
}

#[test]
fn hostile_clients_are_bounded_and_the_sampling_goes_on() {
    let t = tree(FIXTURE, DEV, &[]);
    let mut w = start(t.path(), &["--max-clients", "4", "--client-timeout", "2s"]);
    w.stream.until("the first interval", |f| f["seq"] == 1);
    let pid = w.stream.pid();
    let rss0 = rss_kib(pid);
    let started = Instant::now();
    let seq0 = w.stream.events.last().unwrap()["seq"].as_u64().unwrap();

    // A slow client: a byte every 100 ms, never a whole head. Cut at --client-timeout.
    let slow = std::thread::spawn({
        let addr = w.addr;
        move || {
            let mut s = TcpStream::connect(addr).unwrap();
            let t0 = Instant::now();
            for b in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
                if s.write_all(&[*b]).is_err() || t0.elapsed() > Duration::from_secs(15) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            t0.elapsed()
        }
    });
    // A huge request: 1 MiB of header, refused after 8 KiB.
    let huge = {
        let mut s = TcpStream::connect(w.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX-Huge: ");
        let _ = s.write_all(&vec![b'a'; 1 << 20]);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(huge.starts_with("HTTP/1.1 431"), "{huge}");
    // Many idle clients: four are held (until their time is up), the rest refused at once.
    let idle: Vec<TcpStream> = (0..40)
        .filter_map(|_| TcpStream::connect(w.addr).ok())
        .collect();
    let mut refused = 0;
    for mut s in idle.iter().skip(4).map(|s| s.try_clone().unwrap()) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        if out.starts_with(b"HTTP/1.1 503") {
            refused += 1;
        }
    }
    assert!(refused >= 30, "{refused} of 36 extra clients answered 503");
    let cut_after = slow.join().unwrap();
    assert!(
        cut_after < Duration::from_secs(2 + 5),
        "the slow client held on {cut_after:?}"
    );
    drop(idle);
    // Once the held ones are cut, a scraper is served again.
    let body = scrape_until(w.addr, "a scrape after the attack", |_| true);
    assert!(body.contains("linerate_watch_samples_total"));
    // The sampling never waited: the intervals kept coming at 200 ms through all of it
    // (at least 70% of the intervals the elapsed time holds: margin for a loaded machine).
    // Every interval written so far (the reader thread queued them), the last one's number:
    // the queue is drained when an interval takes a good part of its 200 ms to arrive. (Not
    // "until none comes for a while": a live watch keeps writing, and that waited for its
    // --count to end it, then read the memory of a process that had exited.)
    let drained_by = Instant::now() + Duration::from_secs(30);
    loop {
        let asked = Instant::now();
        assert!(
            w.stream.next(Duration::from_secs(5)).is_some(),
            "the watch stopped writing intervals"
        );
        if asked.elapsed() >= Duration::from_millis(100) || Instant::now() >= drained_by {
            break;
        }
    }
    let seq1 = w.stream.events.last().unwrap()["seq"].as_u64().unwrap();
    let expected = started.elapsed().as_secs_f64() / 0.2;
    let got = (seq1 - seq0) as f64;
    assert!(
        got >= 0.7 * expected,
        "{got} intervals in {:?} ({expected} due)",
        started.elapsed()
    );
    // And its memory did not grow with the clients (the heads are read into 8 KiB).
    let rss1 = rss_kib(pid);
    assert!(
        rss1 < rss0 * 3 / 2 + 4096,
        "RSS {rss0} KiB before, {rss1} KiB after"
    );
}

/// Resident memory of a process, KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}
