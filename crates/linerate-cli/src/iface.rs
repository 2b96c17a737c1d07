//! The interface a connection uses, with its probe inventory and ceiling.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

/// Probe this host and return the port (probe JSON shape) holding `ip`, or a
/// minimal object naming the interface when probing fails.
pub fn port_inventory(ip: IpAddr) -> Option<serde_json::Value> {
    let name = linerate_engine::sys::interface_of(ip)?;
    let inv = linerate_inventory::probe(Path::new("/")).ok();
    let doc = inv.as_ref().and_then(|inv| {
        let port = inv
            .ports
            .iter()
            .find(|p| p.netdev.as_deref() == Some(name.as_str()))?;
        let c = linerate_rules::port_ceiling(inv, port);
        serde_json::to_value(linerate_report::json::port_doc(inv, port, &c)).ok()
    });
    let mut o = doc.and_then(|d| d.as_object().cloned()).unwrap_or_else(|| {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), serde_json::Value::String(name.clone()));
        m
    });
    o.insert("address".into(), serde_json::Value::String(ip.to_string()));
    Some(serde_json::Value::Object(o))
}

pub fn provider() -> linerate_bench::InventoryFn {
    Arc::new(port_inventory)
}
