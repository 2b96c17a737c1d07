//! `linerate doctor` on a machine whose cores other processes keep busy: the self-check names
//! the contention and no saturated core that linerate's own threads did not saturate, and its
//! verdict leads with the contention. The test loads every core itself with busy loops (two per
//! core, each under `timeout`, ended by PID), runs `doctor --quick --no-disk --json`, and
//! checks the document. Functional facts only: no figure of this machine's speed.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use linerate_testkit::schema;
use serde_json::Value;

use common::{serial, BusyLoops, BIN};

/// Seconds a busy loop may live if this test dies before it ends them.
const LOAD_LIMIT_S: &str = "180";
/// Hard limit for the doctor run (`--quick` takes about 10 s on an idle machine).
const DOCTOR_TIMEOUT: &str = "150";

fn findings<'a>(doc: &'a Value, id: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["id"] == id)
        .collect()
}

fn percent(f: &Value, key: &str) -> Option<f64> {
    f["evidence"][key].as_str().and_then(|s| s.parse().ok())
}

#[test]
fn a_self_check_on_busy_cores_names_contention_not_saturation() {
    let _g = serial();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let load = BusyLoops::start(2 * cores.min(8), LOAD_LIMIT_S);
    // Let the loops reach their cores before doctor looks.
    std::thread::sleep(Duration::from_millis(500));
    let out = Command::new("timeout")
        .args([
            "-k",
            "5",
            DOCTOR_TIMEOUT,
            BIN,
            "doctor",
            "--quick",
            "--no-disk",
        ])
        .args(["--no-rdma", "--json"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run doctor");
    drop(load);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "doctor failed: {stderr}\n{stdout}");
    let doc: Value = serde_json::from_str(&stdout).expect("one JSON document");
    schema::assert_matches("doctor.schema.json", &doc);
    println!("verdict: {}", doc["verdict"]["summary"]);
    for f in doc["findings"].as_array().into_iter().flatten() {
        println!("  {} {}: {}", f["id"], f["severity"], f["message"]);
    }

    // The contention is named, with the share of the host other processes took.
    let contended = findings(&doc, "cpu.contended");
    assert_eq!(contended.len(), 1, "no cpu.contended under a full load");
    let c = contended[0];
    let other: f64 = c["evidence"]["other_processes_cores"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("other_processes_cores");
    assert!(
        other >= 0.3,
        "other processes' share below the contention line: {c}"
    );
    let msg = c["message"].as_str().unwrap_or("");
    assert!(
        msg.contains(&format!("of {cores} cores")),
        "the share of this host's {cores} cores: {msg}"
    );

    // No saturated core that linerate's own threads did not saturate: with other processes
    // busy, the busiest core is not evidence, so a cpu.saturated finding stands only on a
    // linerate thread that had most of a core itself.
    for s in findings(&doc, "cpu.saturated") {
        let own = [
            percent(s, "sender_cpu_percent"),
            percent(s, "receiver_cpu_percent"),
        ]
        .into_iter()
        .flatten()
        .fold(0.0_f64, f64::max);
        assert!(
            own >= 85.0,
            "cpu.saturated with linerate's threads at {own}%: {s}"
        );
        assert!(
            !s["message"].as_str().unwrap_or("").contains("busiest core"),
            "{s}"
        );
    }

    // The verdict leads with what limits.
    let v = &doc["verdict"];
    assert_eq!(v["limited_by"], "cpu", "{v}");
    let summary = v["summary"].as_str().unwrap_or("");
    assert!(
        summary.starts_with("limited by other processes competing for the CPU"),
        "{summary}"
    );
}
