//! The interface a connection uses: its probe inventory, ceiling, shapers and doctor facts.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use linerate_rules::ShaperFact;

/// Shapers on an interface of this host (empty when netlink is not available).
pub fn shapers(netdev: &str) -> Vec<ShaperFact> {
    linerate_inventory::qdisc::shapers_of(Path::new("/"), netdev)
        .unwrap_or_default()
        .into_iter()
        .map(|s| ShaperFact {
            kind: s.kind,
            handle: s.handle,
            rate_bps: s.rate_bps,
        })
        .collect()
}

/// Everything this host says about the interface holding `ip`:
/// `{address, port (probe's port shape), probe (the whole probe document), facts (doctor's EndFacts)}`.
pub fn host_inventory(ip: IpAddr) -> Option<serde_json::Value> {
    let name = linerate_engine::sys::interface_of(ip);
    let mut o = serde_json::Map::new();
    o.insert("address".into(), serde_json::Value::String(ip.to_string()));
    if let Some(n) = &name {
        o.insert("name".into(), serde_json::Value::String(n.clone()));
    }
    if let Ok(inv) = linerate_inventory::probe(Path::new("/")) {
        let analysis = linerate_rules::analyze(&inv);
        if let Some(port) = name
            .as_deref()
            .and_then(|n| inv.ports.iter().find(|p| p.netdev.as_deref() == Some(n)))
        {
            let c = linerate_rules::port_ceiling(&inv, port);
            if let Ok(v) = serde_json::to_value(linerate_report::json::port_doc(&inv, port, &c)) {
                o.insert("port".into(), v);
            }
        }
        if let Ok(v) = serde_json::to_value(linerate_report::probe_doc(&inv, &analysis, "/")) {
            o.insert("probe".into(), v);
        }
        let facts = linerate_rules::end_facts(
            &inv,
            name.as_deref(),
            name.as_deref().map(shapers).unwrap_or_default(),
        );
        if let Ok(v) = serde_json::to_value(facts) {
            o.insert("facts".into(), v);
        }
    }
    Some(serde_json::Value::Object(o))
}

pub fn provider() -> linerate_bench::InventoryFn {
    Arc::new(host_inventory)
}
