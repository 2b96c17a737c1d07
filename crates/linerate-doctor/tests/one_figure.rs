//! One figure, one name, everywhere (issue #30): a self-check over loopback whose one stream
//! carried 25.7 Gb/s and two streams 45.2 Gb/s. The HTML waterfall said "measured (best TCP)
//! 25.7", its pyramid table "network, best TCP 25.7", the text "network, best TCP result 45.2".
//! Now the best TCP result of all (every stream count, both directions) is 45.2 under that one
//! name in the JSON (the pyramid's network row and its `test`), the text and the HTML; the
//! verdict's own figure (one stream, set against the host stack's bound for one stream) is
//! 25.7, named by its test wherever it is shown. Built from constructed results through
//! doctor's own assembly and the real renderers: no measurement.

use std::path::{Path, PathBuf};

use linerate_doctor::assemble::{assemble, Assembly};
use linerate_doctor::far::FarEndProtocol;
use linerate_doctor::local::Memory;
use linerate_doctor::steps::Runs;
use linerate_engine::hostcpu::HostCpu;
use linerate_engine::mem::{MemOp, MemResult};
use linerate_proto::{Direction, TestKind, TestParams};
use linerate_report::Style;
use linerate_results::{DoctorReport, Endpoint, TestResult};
use linerate_units::fmt_sig;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sysfs/virtual-only")
}

/// A copy measured at `gb_per_s` with `threads` over `buffer_bytes` buffers.
fn mem(threads: usize, buffer_bytes: usize, gb_per_s: f64) -> MemResult {
    MemResult {
        op: MemOp::Copy,
        threads,
        buffer_bytes,
        bytes: (gb_per_s * 1e9) as u64,
        seconds: 1.0,
    }
}

/// A TCP send of `streams` streams that carried `gbps`.
fn tcp(streams: u32, gbps: f64) -> TestResult {
    let params = TestParams {
        streams,
        duration_ms: 2_000,
        ..TestParams::new(TestKind::TcpBw, Direction::Send)
    };
    let end = |host, cpu| Endpoint {
        host,
        bytes: (gbps * 1e9 / 8.0 * 2.0) as u64,
        gbps,
        cpu_percent: cpu,
    };
    TestResult {
        gbps,
        sender: Some(end("local", 60.0)),
        receiver: Some(end("remote", 40.0)),
        retransmits: Some(0),
        segments: Some((gbps * 1e9 / 8.0 * 2.0 / 65_483.0) as u64),
        spurious_retransmits: None,
        ..TestResult::new(params)
    }
}

fn report() -> DoctorReport {
    let root = fixture();
    let before = linerate_inventory::probe(&root).expect("the fixture");
    let memory = Memory {
        one: mem(1, 64 << 20, 12.0),
        all: mem(2, 64 << 20, 20.0),
        // One core copies 1 MiB writes at 30 GB/s: the host stack's bound for one stream is at
        // least 120 Gb/s (both copies on one core), far above both results whatever the cores.
        stream: mem(1, 1 << 20, 30.0),
    };
    let runs = Runs {
        tests: vec![tcp(1, 25.7), tcp(2, 45.2)],
        cpu: vec![HostCpu::default(); 2],
        local_if: Some("lo".into()),
        ..Runs::default()
    };
    assemble(
        Assembly {
            root: &root,
            server: "127.0.0.1:5301".parse().unwrap(),
            protocol: FarEndProtocol::Linerate,
            far_version: None,
            self_check: true,
            before: &before,
            memory: &memory,
            disks: Vec::new(),
            copy: None,
            pyramid_notes: Vec::new(),
            counter_deltas: Vec::new(),
            far_end_here: Vec::new(),
            seconds: 5.0,
        },
        runs,
    )
}

#[test]
fn the_best_tcp_result_is_one_figure_under_one_name() {
    let r = report();
    println!("verdict: {}", r.verdict.summary);
    // The verdict judges one stream against the bound for one stream, and says which.
    assert_eq!(r.verdict.gbps, 25.7);
    assert_eq!(r.verdict.test.as_deref(), Some("TCP send, 1 stream"));
    assert!(
        r.verdict.summary.contains("one TCP stream 25.7 Gb/s")
            && r.verdict.summary.contains("(2 streams: 45.2 Gb/s)"),
        "{}",
        r.verdict.summary
    );
    // The best TCP result of all: the two streams, named by their test.
    let net = r
        .pyramid
        .rows
        .iter()
        .find(|x| x.layer == "network")
        .expect("the network row");
    assert_eq!(net.gbps, 45.2);
    assert_eq!(net.test.as_deref(), Some("TCP send, 2 streams"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["verdict"]["test"], "TCP send, 1 stream");
    let rows = json["pyramid"]["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|x| x["layer"] == "network" && x["test"] == "TCP send, 2 streams"),
        "{rows:?}"
    );

    let name = format!("{} (TCP send, 2 streams)", linerate_report::BEST_TCP);
    let best = format!("{} Gb/s", fmt_sig(45.2));
    let one = format!("{} Gb/s", fmt_sig(25.7));

    // The text: its pyramid row is the best result, by that name.
    let text = linerate_report::render_doctor(&r, Style::PLAIN);
    let line = text
        .lines()
        .find(|l| l.contains("best TCP"))
        .unwrap_or_else(|| panic!("no best TCP result in the text:\n{text}"));
    assert!(
        line.contains(linerate_report::BEST_TCP)
            && line.contains(&best)
            && line.contains("(TCP send, 2 streams)"),
        "{line}"
    );
    assert_eq!(text.matches("best TCP").count(), 1, "{text}");

    // The HTML: the waterfall's measured bar is the verdict's figure, named by its test; the
    // pyramid's table and chart say the best result by the same name as the text.
    let html = linerate_report::doctor_html(&r);
    assert!(
        html.contains(&format!(
            "<title>measured: TCP send, 1 stream: {one}</title>"
        )),
        "{html}"
    );
    assert!(
        html.contains(&format!("<td>{name}</td><td>{best}</td>")),
        "{html}"
    );
    assert!(
        html.contains(&format!("<title>{name}: {best}</title>")),
        "{html}"
    );
    // Every place the HTML says "best TCP", it is this figure under this name.
    assert_eq!(
        html.matches("best TCP").count(),
        html.matches(&name).count(),
        "{html}"
    );
    assert!(!html.contains("measured (best TCP)"), "{html}");
}
