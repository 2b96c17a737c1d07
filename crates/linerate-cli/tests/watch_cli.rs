//! `linerate watch` off the screen, over fixture trees whose files change while it runs (no
//! root): the JSON stream against its schema, soak's verdict on a port whose error counters
//! move, saturated and reset counters that are no burst, a downtrain and a PCIe downtrain
//! marked with their time, ports coming and going, rates from counters moved by known
//! steps, a closed pipe, the plain lines, and bad input refused with what was expected; and on
//! this host, a port named on the command line shown whatever its kind (loopback, under a TCP
//! stream of the test's own).

mod soak_tree;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use linerate_testkit::schema;
use serde_json::Value;
use soak_tree::{fixture, get, set, set_rate, tree, Stream, BIN};

/// The fixture of these tests: a ConnectX-3 port at 4X QDR (ceiling 32 Gb/s, set by the line
/// code) with its IPoIB netdev, on PCIe 3.0 x8.
const FIXTURE: &str = "cx3-fdr-at-qdr-datagram";
const DEV: &str = "mlx4_0";

fn linerate(args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run linerate")
}

/// `linerate watch --json-stream` over `root` with `extra` options, read line by line; at most
/// 600 intervals (`--count`), ended by its `Stream` when the test is done.
fn stream(root: &Path, extra: &[&str]) -> Stream {
    let mut cmd = Command::new(BIN);
    cmd.args(["watch", "--json-stream", "--count", "600", "--root"])
        .arg(root)
        .args(extra);
    Stream::start(cmd)
}

fn port<'a>(frame: &'a Value, device: &str) -> &'a Value {
    frame["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["device"] == device)
        .unwrap_or_else(|| panic!("no port of {device} in {frame}"))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64
}

/// The PCI function of the fixture's port.
fn pci_dir(root: &Path) -> PathBuf {
    root.join("sys/devices/pci0000:00/0000:00:03.0/0000:04:00.0")
}

#[test]
fn the_json_stream_matches_its_schema_and_stops_after_count() {
    let root = fixture("cx4-vpi-dual");
    let out = linerate(&[
        "watch",
        "--json-stream",
        "--count",
        "3",
        "-i",
        "100ms",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let v = schema::validator("watch-stream.schema.json");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    for (i, l) in lines.iter().enumerate() {
        schema::assert_valid(&v, l);
        assert_eq!(l["seq"], i as u64 + 1);
        assert!(l["interval_s"].as_f64().unwrap() > 0.0);
    }
    let p = port(&lines[0], "mlx5_0");
    assert_eq!(
        (p["kind"].as_str(), p["limited_by"].as_str()),
        (Some("infiniband"), Some("link"))
    );
    assert_eq!(p["ceiling_gbps"], 100.0);
}

#[test]
fn a_port_whose_errors_move_gets_soaks_verdict_over_the_window() {
    let t = tree(FIXTURE, DEV, &[]);
    let root = t.path();
    let mut s = stream(root, &["-i", "200ms", "--window", "5s"]);
    s.until("the first interval", |f| f["seq"] == 1);
    let downed = get(root, DEV, "link_downed");
    set(root, DEV, "link_downed", downed + 1);
    let errs = get(root, DEV, "port_rcv_errors");
    set(root, DEV, "port_rcv_errors", errs + 400);
    let f = s.until("the errors judged", |f| {
        port(f, DEV)["window"]["verdict"] == "bad"
    });
    schema::assert_matches("watch-stream.schema.json", &f);
    let p = port(&f, DEV);
    let w = &p["window"];
    let counters: Vec<&str> = w["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["counter"].as_str().unwrap())
        .collect();
    assert!(
        counters.contains(&"link_downed") && counters.contains(&"port_rcv_errors"),
        "{w}"
    );
    // soak's rule and words: link_downed is bad on any increase (NVSentinel).
    assert_eq!(w["rule"], "link_downed", "{w}");
    let rules: Vec<&str> = w["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"port_rcv_errors_rate"), "{rules:?}");
    // The interval that saw them names them with their increase.
    let moved = s
        .events
        .iter()
        .flat_map(|e| port(e, DEV)["moved"].as_array().unwrap().clone())
        .find(|m| m["counter"] == "port_rcv_errors")
        .expect("port_rcv_errors moved in an interval");
    assert_eq!(
        (moved["delta"].as_u64(), moved["reset"].as_bool()),
        (Some(400), Some(false))
    );
    // A link that went down and up between two samples is a flap in the events.
    let flap = s
        .events
        .iter()
        .flat_map(|e| e["changes"].as_array().unwrap().clone())
        .find(|c| c["what"] == "flap")
        .expect("a flap from link_downed");
    assert_eq!(flap["device"], DEV);
    assert!(
        flap["to"].as_str().unwrap().contains("link_downed +1"),
        "{flap}"
    );
    // Quiet for a whole window: the mark goes.
    s.until("the mark to leave the window", |f| {
        port(f, DEV)["window"].is_null()
    });
}

#[test]
fn a_saturated_or_reset_counter_is_no_burst() {
    let t = tree(FIXTURE, DEV, &[]);
    let root = t.path();
    // symbol_error (16 bits) two below its maximum, port_rcv_errors high.
    set(root, DEV, "symbol_error", 65_533);
    set(root, DEV, "port_rcv_errors", 40_000);
    let mut s = stream(root, &["-i", "200ms", "--window", "5s"]);
    s.until("the first interval", |f| f["seq"] == 1);
    // Pegged: +2 to 65535, then nothing visible.
    set(root, DEV, "symbol_error", 65_535);
    // Reset by someone else (perfquery -R), and the data counter too (a driver reload).
    set(root, DEV, "port_rcv_errors", 0);
    set(root, DEV, "port_rcv_data", 0);
    let f = s.until("the reset seen", |f| {
        port(f, DEV)["moved"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["counter"] == "port_rcv_errors" && m["reset"] == true)
    });
    let p = port(&f, DEV);
    let reset = p["moved"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["counter"] == "port_rcv_errors")
        .unwrap();
    // Counted from the new value (0), not as 40000 errors or a wrap.
    assert_eq!(reset["delta"], 0, "{reset}");
    // The data counter's reset is no traffic burst: the rate is from the new value.
    assert!(p["rx_gbps"].as_f64().unwrap() < 1.0, "{p}");
    let sat = s
        .events
        .iter()
        .flat_map(|e| port(e, DEV)["moved"].as_array().unwrap().clone())
        .find(|m| m["counter"] == "symbol_error")
        .expect("symbol_error moved once");
    assert_eq!(
        (sat["delta"].as_u64(), sat["saturated"].as_bool()),
        (Some(2), Some(true))
    );
    // Two more intervals: the pegged counter does not move again, and soak calls none of it
    // marginal or bad (2 symbol errors are within the floor of 3; a reset is a note).
    let seq = f["seq"].as_u64().unwrap();
    let later = s.until("two more intervals", |f| f["seq"].as_u64() >= Some(seq + 2));
    let p = port(&later, DEV);
    assert!(p["moved"].as_array().unwrap().is_empty(), "{p}");
    let w = &p["window"];
    assert!(
        matches!(
            w["verdict"].as_str(),
            Some("clean" | "insufficient" | "congested")
        ),
        "{w}"
    );
    let sym = w["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["counter"] == "symbol_error")
        .expect("symbol_error in the window");
    assert_eq!(
        (sym["saturated"].as_bool(), sym["at_least"].as_bool()),
        (Some(true), Some(true))
    );
    let rcv = w["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["counter"] == "port_rcv_errors")
        .expect("port_rcv_errors in the window");
    assert_eq!(
        (rcv["increase"].as_u64(), rcv["resets"].as_u64()),
        (Some(0), Some(1))
    );
}

#[test]
fn a_downtrain_is_marked_with_the_change_and_its_time() {
    let t = tree(FIXTURE, DEV, &[]);
    let root = t.path();
    let mut s = stream(root, &["-i", "200ms"]);
    let first = s.until("the first interval", |f| f["seq"] == 1);
    assert_eq!(port(&first, DEV)["ceiling_gbps"], 32.0);
    let before = now_ms();
    set_rate(root, DEV, "10 Gb/sec (1X QDR)");
    let f = s.until("the downtrain", |f| {
        !f["changes"].as_array().unwrap().is_empty()
    });
    let after = now_ms();
    let what: Vec<(String, String, String)> = f["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["what"].as_str().unwrap().to_string(),
                c["from"].as_str().unwrap_or("").to_string(),
                c["to"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        what.contains(&("width".into(), "4X".into(), "1X".into())),
        "{what:?}"
    );
    assert!(
        what.contains(&("rate".into(), "4X QDR".into(), "1X QDR".into())),
        "{what:?}"
    );
    let at = f["changes"][0]["unix_ms"].as_u64().unwrap();
    assert!(
        (before..=after + 1000).contains(&at),
        "{before} <= {at} <= {after}"
    );
    // The ceiling follows the link, and the port keeps its mark.
    let p = port(&f, DEV);
    assert_eq!(p["ceiling_gbps"], 8.0);
    assert_eq!(p["link"], "1X QDR");
    let seq = f["seq"].as_u64().unwrap();
    let later = s.until("a later interval", |f| f["seq"].as_u64() > Some(seq));
    assert_eq!(
        port(&later, DEV)["last_change"]["unix_ms"].as_u64(),
        Some(at)
    );
    // A PCIe downtrain: the function trained at x4.
    std::fs::write(pci_dir(root).join("current_link_width"), "4\n").unwrap();
    let f = s.until("the PCIe downtrain", |f| {
        f["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["what"] == "pcie")
    });
    let c = f["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "pcie")
        .unwrap();
    assert_eq!(
        (c["from"].as_str(), c["to"].as_str()),
        (Some("PCIe 3.0 x8"), Some("PCIe 3.0 x4"))
    );
}

#[test]
fn ports_come_and_go_without_a_restart() {
    let t = tree(FIXTURE, DEV, &[]);
    let root = t.path();
    let mut s = stream(root, &["-i", "200ms"]);
    s.until("the first interval", |f| f["seq"] == 1);
    // A second device appears (a driver loaded): a copy of the first, with its class link.
    let class = root.join("sys/class/infiniband");
    let target = std::fs::read_link(class.join(DEV)).unwrap();
    let real = class.join(&target);
    let out = Command::new("cp")
        .arg("-a")
        .arg(&real)
        .arg(real.with_file_name("mlx4_1"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::os::unix::fs::symlink(target.with_file_name("mlx4_1"), class.join("mlx4_1")).unwrap();
    let f = s.until("mlx4_1 to appear", |f| {
        f["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["device"] == "mlx4_1")
    });
    let c = &f["changes"];
    assert!(
        c.as_array()
            .unwrap()
            .iter()
            .any(|c| c["device"] == "mlx4_1" && c["what"] == "appeared"),
        "{c}"
    );
    // It goes again.
    std::fs::remove_file(class.join("mlx4_1")).unwrap();
    let f = s.until("mlx4_1 to go", |f| {
        f["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["what"] == "gone")
    });
    assert!(!f["ports"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["device"] == "mlx4_1"));
}

#[test]
fn rates_follow_the_counters_against_the_ceiling() {
    let t = tree(FIXTURE, DEV, &[]);
    let root = t.path();
    let mut s = stream(root, &["-i", "250ms"]);
    s.until("the first interval", |f| f["seq"] == 1);
    // After each interval, the counters move by a known amount: each interval after it counts
    // it (or, on a busy machine, the next one does). 1e8 units of 4 bytes: 3.2 Gb/s over 250 ms.
    let step: u64 = 100_000_000;
    let (rx0, tx0) = (
        get(root, DEV, "port_rcv_data"),
        get(root, DEV, "port_xmit_data"),
    );
    let mut frames = Vec::new();
    for k in 1..=6u64 {
        set(root, DEV, "port_rcv_data", rx0 + k * step);
        set(root, DEV, "port_xmit_data", tx0 + k * step / 2);
        let seq = s.events.last().unwrap()["seq"].as_u64().unwrap();
        frames.push(s.until("the next interval", |f| f["seq"].as_u64() == Some(seq + 1)));
    }
    let last = s.until("the last write counted", |f| {
        port(f, DEV)["rx_gbps"].as_f64() == Some(0.0)
    });
    frames.push(last);
    // Everything written is counted, once: the bytes of the rates over their intervals.
    let bytes = |field: &str| -> f64 {
        frames
            .iter()
            .map(|f| {
                port(f, DEV)[field].as_f64().unwrap() * 1e9 / 8.0
                    * f["interval_s"].as_f64().unwrap()
            })
            .sum()
    };
    let (rx, tx) = (bytes("rx_gbps"), bytes("tx_gbps"));
    let want = (6 * step * 4) as f64;
    assert!(
        (rx / want - 1.0).abs() < 1e-3,
        "{rx} bytes counted, {want} written"
    );
    assert!(
        (tx / (want / 2.0) - 1.0).abs() < 1e-3,
        "{tx} bytes sent counted"
    );
    // Each interval's share is its rate over the 32 Gb/s ceiling.
    for f in &frames {
        let p = port(f, DEV);
        let (r, u) = (
            p["rx_gbps"].as_f64().unwrap(),
            p["utilisation"].as_f64().unwrap(),
        );
        assert!((u - r / 32.0).abs() < 1e-9, "{u} for {r} Gb/s");
        assert_eq!(p["counted_from"], "ib_counters");
    }
    // Each interval counted whole steps (0, 1 or 2 on a busy machine): its rate is what the
    // counters moved over its length, nothing made up.
    for f in &frames {
        let bits =
            port(f, DEV)["rx_gbps"].as_f64().unwrap() * 1e9 * f["interval_s"].as_f64().unwrap();
        let steps = bits / (step as f64 * 32.0);
        assert!((steps - steps.round()).abs() < 1e-3, "{steps} steps in {f}");
    }
}

#[test]
fn the_plain_form_is_one_line_per_port_per_interval() {
    let root = fixture("cx4-vpi-dual");
    // Not a terminal: the plain form without asking.
    let out = linerate(&[
        "watch",
        "--count",
        "2",
        "-i",
        "100ms",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines.iter().filter(|l| l.contains(" ib0 ")).count() == 2,
        "{text}"
    );
    assert!(lines[0].contains("of 100 Gb/s (link)"), "{text}");
    let bytes = linerate(&[
        "watch",
        "--plain",
        "--bytes",
        "--count",
        "1",
        "-i",
        "100ms",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(
        String::from_utf8_lossy(&bytes.stdout).contains("of 12.5 GB/s (link)"),
        "{bytes:?}"
    );
}

#[test]
fn a_reader_that_goes_away_ends_the_watch() {
    let root = fixture(FIXTURE);
    let mut child = Command::new(BIN)
        .args(["watch", "--plain", "-i", "100ms", "--root"])
        .arg(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // `| head -1`: one line read, then the pipe closed.
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(line.contains("ib0"), "{line}");
    drop(out);
    let until = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("linerate watch still runs after its reader went away");
        }
        thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn bad_input_is_refused_with_what_was_expected() {
    let root = fixture(FIXTURE);
    let root = root.to_str().unwrap();
    for (args, words) in [
        (
            vec!["--root", root, "nosuch0"],
            "PORT `nosuch0`: no such port",
        ),
        (
            vec!["--root", root, "-i", "10ms"],
            "--interval 10ms: at least 100 ms",
        ),
        (
            vec!["--root", root, "--window", "2s"],
            "--window 2s: at least 10 intervals",
        ),
        (
            vec!["--root", root, "--listen", "nonsense"],
            "--listen nonsense: expected",
        ),
        (
            vec!["--root", "/nonexistent-root"],
            "--root /nonexistent-root: no such directory",
        ),
        (vec!["--root", root, "--threshold", "ber=2"], "ber"),
        (vec!["--root", root, "--count", "0"], "--count"),
    ] {
        let mut all = vec!["watch"];
        all.extend(args.iter().copied());
        let out = linerate(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(words), "{all:?}: `{words}` not in: {err}");
    }
    // The error names the ports that are there.
    let out = linerate(&["watch", "--root", root, "nosuch0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("ib0 (mlx4_0/1)"));
}

/// A Gb/s figure of the plain form (`15.9 Gb/s`, `512 Mb/s`, `0 b/s`), in bit/s.
fn bits_per_s(value: &str, unit: &str) -> f64 {
    let v: f64 = value
        .parse()
        .unwrap_or_else(|_| panic!("`{value}` is no number"));
    let scale = match unit {
        "b/s" => 1.0,
        "kb/s" => 1e3,
        "Mb/s" => 1e6,
        "Gb/s" => 1e9,
        "Tb/s" => 1e12,
        _ => panic!("`{unit}` is no rate unit"),
    };
    v * scale
}

#[test]
fn a_port_named_is_shown_whatever_its_kind() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    // Loopback traffic for the length of the watch (at most 30 s): a TCP stream to ourselves.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let writer = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let buf = vec![7u8; 1 << 16];
            let until = Instant::now() + Duration::from_secs(30);
            while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                if s.write_all(&buf).is_err() {
                    break;
                }
            }
        })
    };
    let out = linerate(&["watch", "lo", "--plain", "--count", "2", "-i", "200ms"]);
    let unnamed = linerate(&["watch", "--plain", "--count", "1", "-i", "200ms"]);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    reader.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in &lines {
        // `<time> lo <state> rx <rate> <unit> <pps> tx ...`: the bytes of our stream.
        let w: Vec<&str> = l.split_whitespace().collect();
        assert_eq!((w[1], w[3]), ("lo", "rx"), "{l}");
        assert!(bits_per_s(w[4], w[5]) > 0.0, "no traffic on lo: {l}");
        assert!(l.contains("no ceiling"), "{l}");
    }
    // Not named, loopback stays out.
    assert_eq!(unnamed.status.code(), Some(0), "{unnamed:?}");
    let text = String::from_utf8(unnamed.stdout).unwrap();
    assert!(
        !text
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some("lo")),
        "{text}"
    );
}

#[test]
fn the_nic_and_module_temperatures_and_the_light_are_in_the_stream() {
    let v = schema::validator("watch-stream.schema.json");
    // A QSFP-DD module over its temperature warning; a ConnectX-5 whose own sensor is hot.
    for (name, what) in [
        ("cx7-400g-qsfp-dd-hot-module", "module"),
        ("cx5-100g-dac-no-fec-hot", "mlx5"),
    ] {
        let root = fixture(name);
        let out = linerate(&[
            "watch",
            "--json-stream",
            "--count",
            "2",
            "-i",
            "100ms",
            "--root",
            root.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{name}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let frames: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        assert_eq!(frames.len(), 2, "{name}: {text}");
        for f in &frames {
            schema::assert_valid(&v, f);
            // Read in the first sample, kept in the next (read again every 10 s).
            let hot: Vec<&Value> = f["ports"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| {
                    p["temperature"]["what"]
                        .as_str()
                        .is_some_and(|w| w.starts_with(what))
                })
                .collect();
            assert!(!hot.is_empty(), "{name}: no {what} temperature in {f}");
            assert!(
                hot.iter().any(|p| p["temperature"]["level"] != "normal"),
                "{name}: the fixture is hot: {f}"
            );
            if what == "module" {
                assert!(hot.iter().all(|p| p["rx_power"]["mw"].is_number()), "{f}");
            }
        }
    }
}
