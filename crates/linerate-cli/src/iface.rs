//! What this host says about the interface a connection uses: its port, its probe document,
//! the facts doctor judges it by, and the shapers on it.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use linerate_facts::{HostFacts, PortDoc, ProbeDoc, ShaperFact};

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

/// Everything this host says about the interface holding `ip` (only the address and the
/// interface's name when probe cannot run).
pub fn host_facts(ip: IpAddr) -> Option<HostFacts> {
    let name = linerate_engine::sys::interface_of(ip);
    let mut h = HostFacts {
        address: ip.to_string(),
        name: name.clone(),
        ..HostFacts::default()
    };
    if let Ok(inv) = linerate_inventory::probe(Path::new("/")) {
        let analysis = linerate_rules::analyze(&inv);
        h.port = name
            .as_deref()
            .and_then(|n| inv.port_of_netdev(n))
            .map(|port| PortDoc::new(&inv, port, &linerate_rules::port_ceiling(&inv, port)));
        h.probe = Some(ProbeDoc::new(&inv, &analysis, "/"));
        h.facts = Some(linerate_rules::end_facts(
            &inv,
            name.as_deref(),
            name.as_deref().map(shapers).unwrap_or_default(),
        ));
    }
    Some(h)
}

pub fn provider() -> linerate_bench::InventoryFn {
    Arc::new(host_facts)
}
