//! The final document and the stream events validate against `schemas/mesh.schema.json` and
//! `schemas/mesh-event.schema.json`, for runs with every kind of verdict in them.

mod common;

use common::Fleet;
use linerate_mesh::{mesh_event, MeshReport, NodeFacts, Phase};
use linerate_testkit::schema::{assert_valid, validator};
use serde_json::Value;

/// Runs with every verdict: degraded nodes, a dead rank, contention, a bad cable, retests.
fn reports() -> Vec<MeshReport> {
    let mut f = Fleet::healthy(8);
    f.tx_cap[2] = 0.29;
    f.rx_cap[2] = 0.29;
    f.tx_cap[5] = 0.38;
    f.rx_cap[6] = 0.4;
    f.dead.push((7, 0));
    f.contended.push((0, 1, 0.2));
    f.bad_links.push((3, 4, 0.2));
    let rounds = f.rounds();
    let first = f.report(rounds.clone(), vec![7]);
    let mut all = rounds;
    for (i, r) in first.retest_plan(50).iter().enumerate() {
        let fl = r.flows[0];
        all.push(f.measure(Phase::Retest, i, fl.tx, fl.rx, 1, false));
    }
    let last = f.report(all, vec![7]);
    let two = Fleet::healthy(2);
    let empty = Fleet::healthy(3).report(Vec::new(), Vec::new());
    vec![first, last, two.report(two.rounds(), Vec::new()), empty]
}

#[test]
fn final_documents_match_the_schema() {
    let v = validator("mesh.schema.json");
    let reports = reports();
    for r in &reports {
        let doc = serde_json::to_value(r).unwrap();
        assert_valid(&v, &doc);
    }
    // The document carries every kind of verdict the schema enumerates.
    let doc = serde_json::to_value(&reports[1]).unwrap();
    let statuses: Vec<&str> = doc["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    for s in ["ok", "slow", "unreachable", "contention"] {
        assert!(statuses.contains(&s), "{s}");
    }
    let nodes: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["status"].as_str().unwrap())
        .collect();
    for s in ["ok", "both", "tx_degraded", "rx_degraded", "unreachable"] {
        assert!(nodes.contains(&s), "{s}: {nodes:?}");
    }
    assert_eq!(doc["ranks"][0]["identity_source"], "open_mpi");
    assert_eq!(doc["healthy"], false);
}

#[test]
fn a_document_missing_a_required_field_does_not_match() {
    let v = validator("mesh.schema.json");
    let mut doc = serde_json::to_value(&reports()[0]).unwrap();
    doc.as_object_mut().unwrap().remove("healthy");
    assert!(!v.is_valid(&doc));
    let mut doc = serde_json::to_value(&reports()[0]).unwrap();
    doc["nodes"][0]["status"] = Value::from("sick");
    assert!(!v.is_valid(&doc));
}

#[test]
fn stream_events_match_the_schema() {
    let v = validator("mesh-event.schema.json");
    let mut f = Fleet::healthy(4);
    f.dead.push((3, 2));
    let facts: Vec<NodeFacts> = f.facts().into_iter().map(|e| e.facts).collect();
    let mut seen_error = false;
    for m in f.rounds() {
        let e = serde_json::to_value(mesh_event(&m, &facts)).unwrap();
        assert_valid(&v, &e);
        assert_eq!(
            e["direction"],
            if m.tx < m.rx { "forward" } else { "reverse" }
        );
        seen_error |= !e["error"].is_null();
    }
    assert!(seen_error, "the dead rank's measurements carry their error");
    let e = serde_json::to_value(mesh_event(&f.rounds()[0], &[])).unwrap();
    assert_valid(&v, &e);
    assert!(e["tx"]["host"].is_null());
}
