//! The final document and the stream events validate against `schemas/mesh.schema.json` and
//! `schemas/mesh-event.schema.json`, for runs with every kind of verdict in them.

mod common;

use common::Fleet;
use std::collections::BTreeSet;

use linerate_mesh::{
    build_report, mesh_event, FleetAttribute, FleetId, LinkStatus, MeshInput, MeshReport,
    NodeFacts, NodeStatus, ScheduleKind, Transport, Unconfirmed,
};
use linerate_testkit::schema::{assert_valid, validator};
use serde_json::Value;

/// Runs with every verdict: degraded nodes, a dead rank, contention (by a link's own retest
/// and by its node's), a bad cable, cut-short links, unconfirmed suspects (loaded, not
/// retested), a run interrupted by a signal.
fn reports() -> Vec<MeshReport> {
    let mut f = Fleet::healthy(8);
    f.tx_cap[2] = 0.29;
    f.rx_cap[2] = 0.29;
    f.tx_cap[5] = 0.38;
    f.rx_cap[6] = 0.4;
    f.dead.push((7, 0));
    f.contended.push((0, 1, 0.2));
    f.bad_links.push((3, 4, 0.2));
    let first = f.report(f.rounds(), vec![7]);
    let last = f.run(vec![7]);
    // Rank 1 receives slowly under contention only: cleared; rank 3's retests run loaded;
    // 2 → 0 cut short by a reset; 4 → 5 loses packets.
    let mut g = Fleet::healthy(6);
    for tx in [0, 2, 4, 5] {
        g.contended.push((tx, 1, 0.3));
    }
    g.tx_cap[3] = 0.3;
    g.loaded.push((3, 1.7));
    let other = g.run_with(g.facts(), Vec::new(), |m| {
        if (m.tx, m.rx) == (2, 0) {
            m.error = Some("bandwidth test: Connection reset by peer".into());
        }
        if (m.tx, m.rx) == (4, 5) {
            m.retransmits = Some(50_000);
        }
    });
    let two = Fleet::healthy(2);
    let empty = Fleet::healthy(3).report(Vec::new(), Vec::new());
    let stopped = build_report(MeshInput {
        schedule: ScheduleKind::Pairwise,
        size: 2,
        transport: Transport::Tcp,
        duration_s: 2.0,
        ranks: two.facts(),
        measurements: two.rounds()[..1].to_vec(),
        lost: Vec::new(),
        notes: Vec::new(),
        rendezvous: None,
        interrupted: Some("rank 0 was stopped by SIGTERM during round 2 of 2".into()),
    });
    vec![
        first,
        last,
        other,
        two.report(two.rounds(), Vec::new()),
        empty,
        stopped,
    ]
}

#[test]
fn final_documents_match_the_schema() {
    let v = validator("mesh.schema.json");
    let reports = reports();
    let mut links = BTreeSet::new();
    let mut nodes = BTreeSet::new();
    let mut reasons = BTreeSet::new();
    for r in &reports {
        let doc = serde_json::to_value(r).unwrap();
        assert_valid(&v, &doc);
        for l in doc["links"].as_array().unwrap() {
            links.insert(l["status"].as_str().unwrap().to_string());
            reasons.extend(l["unconfirmed"].as_str().map(str::to_string));
            if !l["cleared_by"].is_null() {
                links.insert("contention cleared by a node".to_string());
            }
        }
        for n in doc["nodes"].as_array().unwrap() {
            nodes.insert(n["status"].as_str().unwrap().to_string());
            reasons.extend(n["unconfirmed"].as_str().map(str::to_string));
        }
    }
    // The documents carry every kind of verdict the schema enumerates.
    for s in LinkStatus::ALL {
        assert!(links.contains(&ser(s)), "{s:?}: {links:?}");
    }
    assert!(links.contains("contention cleared by a node"), "{links:?}");
    for s in NodeStatus::ALL {
        assert!(nodes.contains(&ser(s)), "{s:?}: {nodes:?}");
    }
    for s in [Unconfirmed::NotRetested, Unconfirmed::Loaded] {
        assert!(reasons.contains(&ser(s)), "{s:?}: {reasons:?}");
    }
    let doc = serde_json::to_value(&reports[1]).unwrap();
    assert_eq!(doc["ranks"][0]["identity_source"], "open_mpi");
    assert_eq!(doc["healthy"], false);
    assert!(doc["measurements"][0]["tx_load"]["cores"].is_u64(), "{doc}");
    assert_eq!(serde_json::to_value(&reports[5]).unwrap()["healthy"], false);
}

/// A value as its JSON spells it.
fn ser(x: impl serde::Serialize) -> String {
    serde_json::to_value(x)
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

/// The `enum` the schema gives at `pointer`, without `null`.
fn schema_enum(pointer: &str) -> BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schemas/mesh.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    schema
        .pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no enum at {pointer}"))
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_schema_enumerates_every_verdict_and_fleet_id() {
    let want = |v: Vec<String>| v.into_iter().collect::<BTreeSet<String>>();
    assert_eq!(
        schema_enum("/$defs/link/properties/status/enum"),
        want(LinkStatus::ALL.iter().map(|s| ser(*s)).collect())
    );
    assert_eq!(
        schema_enum("/$defs/node/properties/status/enum"),
        want(NodeStatus::ALL.iter().map(|s| ser(*s)).collect())
    );
    assert_eq!(
        schema_enum("/$defs/unconfirmed/enum"),
        want(Unconfirmed::ALL.iter().map(|s| ser(*s)).collect())
    );
    assert_eq!(
        schema_enum("/$defs/fleet_finding/properties/attribute/enum"),
        want(FleetAttribute::ALL.iter().map(|s| ser(*s)).collect())
    );
    assert_eq!(
        schema_enum("/$defs/fleet_finding/properties/id/anyOf/0/enum"),
        want(
            FleetId::own()
                .iter()
                .map(|s| s.as_str().to_string())
                .collect()
        )
    );
    // Each status's text name is its JSON name (as the reports print it).
    for s in LinkStatus::ALL {
        assert_eq!(s.as_str(), ser(s));
    }
    for s in Unconfirmed::ALL {
        assert_eq!(s.as_str(), ser(s));
    }
}

#[test]
fn every_fleet_id_is_documented() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/mesh.md");
    let doc = std::fs::read_to_string(path).unwrap();
    for id in FleetId::own() {
        assert!(
            doc.contains(&format!("`{}`", id.as_str())),
            "docs/mesh.md does not name `{id}`"
        );
        // The string form parses back to the same id; anything else is a probe finding's.
        assert_eq!(FleetId::parse(id.as_str()), id);
    }
    assert_eq!(
        FleetId::parse("tcp.buffers_small"),
        FleetId::Probe("tcp.buffers_small".into())
    );
    let json = serde_json::to_string(&FleetId::BelowCeiling).unwrap();
    assert_eq!(json, "\"fleet.below_ceiling\"");
    assert_eq!(
        serde_json::from_str::<FleetId>(&json).unwrap(),
        FleetId::BelowCeiling
    );
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
