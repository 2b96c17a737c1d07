//! The CLI end to end: probe on fixture trees and this machine, plan, bad input.

use linerate_testkit::schema;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use schema::{assert_valid, validator};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    repo().join("fixtures/sysfs").join(name)
}

fn linerate() -> Command {
    let mut c = Command::cargo_bin("linerate").unwrap();
    c.env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_mins(1));
    c
}

#[test]
fn probe_json_of_every_fixture_matches_the_schema() {
    let v = validator("probe.schema.json");
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("fixtures/sysfs")).unwrap() {
        let p = e.unwrap().path();
        if !p.join("expect.json").is_file() {
            continue;
        }
        let out = linerate()
            .args(["probe", "--json", "--root"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_valid(&v, &doc);
        assert_eq!(doc["schema_version"], 1);
        n += 1;
    }
    assert!(n >= 20);
}

#[test]
fn probe_text_tells_the_m2_story() {
    linerate()
        .args(["probe", "--root"])
        .arg(fixture("cx2-qdr-m2-gen2x4"))
        .assert()
        .success()
        .stdout(predicate::str::contains("ConnectX-2"))
        .stdout(predicate::str::contains("13.17 Gb/s  limited by PCIe"))
        .stdout(predicate::str::contains("pcie.slot_limited"))
        .stdout(predicate::str::contains("8b/10b"));
}

#[test]
fn probe_fail_on_sets_the_exit_code() {
    linerate()
        .args(["probe", "--fail-on", "error", "--root"])
        .arg(fixture("cx4-edr-no-sm"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("ib.no_subnet_manager"));
    linerate()
        .args(["probe", "--fail-on", "warning", "--root"])
        .arg(fixture("broadcom-25g-healthy"))
        .assert()
        .code(0);
}

#[test]
fn probe_on_this_machine_works() {
    let out = linerate().args(["probe", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&validator("probe.schema.json"), &doc);
    // Every machine has loopback, and it has no hardware ceiling.
    let lo = doc["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "lo")
        .expect("lo listed");
    assert_eq!(lo["ceiling"]["limited_by"], "unknown");
    // libfabric is installed by scripts/setup-tests.sh: its tcp provider serves loopback.
    let rdma = &doc["rdma"];
    assert!(rdma["libfabric"].is_string(), "libfabric not seen: {rdma}");
    assert!(
        rdma["providers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["provider"] == "tcp" && p["domain"] == "lo"),
        "{rdma}"
    );
    linerate()
        .arg("probe")
        .assert()
        .success()
        .stdout(predicate::str::contains("loopback"))
        .stdout(predicate::str::contains("RDMA (libfabric)"));
    // A fixture tree is not this machine: no libfabric section.
    let out = linerate()
        .args(["probe", "--json", "--root"])
        .arg(fixture("cx3-fdr-at-qdr-datagram"))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.get("rdma").is_none());
}

#[test]
fn root_that_is_a_file_or_missing_is_a_clear_error() {
    let f = tempfile::NamedTempFile::new().unwrap();
    linerate()
        .args(["probe", "--root"])
        .arg(f.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a directory"));
    linerate()
        .args(["probe", "--root", "/nonexistent/linerate-test"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such directory"));
    let d = tempfile::tempdir().unwrap();
    linerate()
        .args(["probe", "--root"])
        .arg(d.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no sys/ directory"));
}

#[test]
fn root_without_network_devices_says_so() {
    linerate()
        .args(["probe", "--root"])
        .arg(fixture("no-network"))
        .assert()
        .success()
        .stdout(predicate::str::contains("No network interfaces"))
        .stderr(predicate::str::contains("no network interfaces"));
}

#[test]
fn garbage_never_aborts() {
    let out = linerate()
        .args(["probe", "--json", "--root"])
        .arg(fixture("garbage-values"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let unreadable = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "sysfs.unreadable")
        .count();
    assert!(unreadable >= 4, "{unreadable}");
}

#[test]
fn plan_answers_the_m2_question() {
    let out = linerate()
        .args(["plan", "--link", "4x-fdr", "--pcie", "gen3x4", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&validator("plan.schema.json"), &doc);
    let c = &doc["ceiling"];
    assert_eq!(c["limited_by"], "pcie");
    // Gen3 x4: 31.5 Gb/s × 0.9 × 256/280 = 25.93
    assert!((c["gbps"].as_f64().unwrap() - 25.93).abs() < 0.01);
    linerate()
        .args([
            "plan", "--link", "4x-qdr", "--pcie", "gen2x4", "--mtu", "65520",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "40 Gb/s signalling → 32 Gb/s after 8b/10b",
        ))
        .stdout(predicate::str::contains("limited by PCIe"));
}

#[test]
fn plan_rejects_bad_specs_with_the_accepted_forms() {
    linerate()
        .args(["plan", "--link", "5x-qdr"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("4x-qdr"))
        .stderr(predicate::str::contains("10gbe"));
    linerate()
        .args(["plan", "--link", "4x-qdr", "--pcie", "gen9x4"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("gen2x4"));
    linerate()
        .args([
            "plan", "--link", "4x-qdr", "--mtu", "9000", "--ipoib", "datagram",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("4092"));
    linerate()
        .args(["plan", "--link", "10gbe", "--mtu", "99999999"])
        .assert()
        .code(2);
}
