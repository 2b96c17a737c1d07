//! Every fixture tree under `fixtures/sysfs` against its `expect.json`.

use std::path::{Path, PathBuf};

use linerate_facts::Severity;
use linerate_rules::analyze;
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sysfs")
}

fn cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures/sysfs exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expect.json").is_file())
        .collect();
    v.sort();
    v
}

fn check(case: &Path) -> Vec<String> {
    let mut errs = Vec::new();
    let expect: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("expect.json")).unwrap()).unwrap();
    let inv = linerate_inventory::probe(case).expect("probe runs");
    let a = analyze(&inv);
    let doc = serde_json::to_value(&a).unwrap();
    let ports = expect["ports"].as_array().unwrap();
    if ports.len() != inv.ports.len() {
        errs.push(format!(
            "expected {} ports, found {:?}",
            ports.len(),
            inv.ports.iter().map(|p| &p.name).collect::<Vec<_>>()
        ));
    }
    for ep in ports {
        let name = ep["name"].as_str().unwrap();
        let Some((port, pa)) = inv.ports.iter().zip(&a.ports).find(|(p, _)| p.name == name) else {
            errs.push(format!("port {name} not listed"));
            continue;
        };
        if ep["device"].as_str() != port.device.as_deref() {
            errs.push(format!(
                "{name}: device {:?} != {}",
                port.device, ep["device"]
            ));
        }
        if ep["port"].as_u64() != port.port.map(u64::from) {
            errs.push(format!("{name}: port {:?} != {}", port.port, ep["port"]));
        }
        let ll = serde_json::to_value(port.link_layer).unwrap();
        if ep["link_layer"] != ll {
            errs.push(format!("{name}: link_layer {ll} != {}", ep["link_layer"]));
        }
        let want = ep["ceiling_gbps"].as_f64().unwrap();
        let got = pa.ceiling.gbps;
        if (want - got).abs() > want.abs() * 0.01 + 1e-9 {
            errs.push(format!("{name}: ceiling {got} != {want}"));
        }
        // Optional: what the port would carry once fixed (null: unknown, e.g. when the rate
        // file of a port that is not up holds a driver placeholder).
        if let Some(want) = ep.get("potential_gbps") {
            let got = pa.ceiling.potential_gbps;
            let ok = match (want.as_f64(), got) {
                (None, None) => want.is_null(),
                (Some(w), Some(g)) => (w - g).abs() <= w.abs() * 0.01 + 1e-9,
                _ => false,
            };
            if !ok {
                errs.push(format!("{name}: potential {got:?} != {want}"));
            }
        }
        let lb = pa.ceiling.limited_by.as_str();
        if ep["limited_by"].as_str() != Some(lb) {
            errs.push(format!("{name}: limited_by {lb} != {}", ep["limited_by"]));
        }
    }
    for req in expect["findings_required"].as_array().unwrap() {
        let id = req["id"].as_str().unwrap();
        let ok = a.findings.iter().any(|f| {
            f.id.as_str() == id
                && req["severity"]
                    .as_str()
                    .is_none_or(|s| Severity::parse(s) == Some(f.severity))
                && req["subject"].as_str().is_none_or(|s| s == f.subject)
                && req["evidence_contains"].as_str().is_none_or(|t| {
                    f.evidence
                        .iter()
                        .any(|(k, v)| k.contains(t) || v.contains(t))
                })
        });
        if !ok {
            errs.push(format!("missing finding {req}"));
        }
    }
    for forb in expect["findings_forbidden"].as_array().unwrap() {
        let id = forb.as_str().unwrap();
        if let Some(f) = a.findings.iter().find(|f| f.id.as_str() == id) {
            errs.push(format!(
                "forbidden finding {id} on {}: {}",
                f.subject, f.message
            ));
        }
    }
    if let Some(max) = expect["max_severity"].as_str() {
        let max = Severity::parse(max).unwrap();
        for f in a.findings.iter().filter(|f| f.severity > max) {
            errs.push(format!(
                "finding above {max:?}: {} {:?} on {}: {}",
                f.id, f.severity, f.subject, f.message
            ));
        }
    }
    let _ = doc;
    errs
}

#[test]
fn every_fixture_matches_its_expectations() {
    let cases = cases();
    assert!(cases.len() >= 20, "fixtures found: {}", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let errs = check(c);
        if !errs.is_empty() {
            failures.push(format!(
                "{}:\n  {}",
                c.file_name().unwrap().to_string_lossy(),
                errs.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The inventory rules emit only the findings the table says are theirs
/// (`FindingOrigin::Inventory`), so docs/findings.md's tables and the fixture coverage check
/// rest on a true split.
#[test]
fn inventory_rules_emit_only_inventory_findings() {
    let mut seen = 0;
    for case in cases() {
        let inv = linerate_inventory::probe(&case).expect("probe runs");
        for f in analyze(&inv).findings {
            seen += 1;
            assert_eq!(
                f.id.origin(),
                linerate_facts::FindingOrigin::Inventory,
                "{}: {}",
                case.display(),
                f.id
            );
        }
    }
    assert!(seen > 20, "the fixtures gave findings: {seen}");
}
