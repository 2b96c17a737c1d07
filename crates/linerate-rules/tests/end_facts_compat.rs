//! The other end's facts come from whatever linerate it runs: a newer one may name a port
//! kind, a chain stage or a finding this version does not know. Those read as unknown; the
//! rest of the end is kept.

use linerate_facts::EndFacts;

#[test]
fn a_newer_peers_unknown_values_do_not_lose_the_end() {
    let v = serde_json::json!({
        "netdev": "ib0",
        "port_kind": "infiniband_xdr_plus",
        "mtu": 65520,
        "ipoib_mode": "enhanced_connected",
        "ceiling": {"gbps": 1.0, "chain": [{"stage": "photonic", "gbps": 1.0, "explain": "?"}]},
        "numa_node": 1,
        "cpus": 64,
        "sockets": {},
        "shapers": [{"kind": "tbf", "handle": "1:", "rate_bps": 2_000_000_000u64}],
        "fec": {"active": "rs_272", "speed_mbps": 400_000},
        "findings": [
            {"id": "pcie.downtrained", "severity": "warning", "subject": "0000:04:00.0",
             "evidence": {}, "message": "m", "fix": "f"},
            {"id": "optics.too_hot", "severity": "warning", "subject": "ib0",
             "evidence": {}, "message": "m", "fix": "f"}
        ]
    });
    let f: EndFacts = serde_json::from_value(v).expect("the known part decodes");
    assert_eq!(f.netdev.as_deref(), Some("ib0"));
    assert_eq!(f.mtu, Some(65520));
    assert_eq!(f.cpus, 64);
    assert!(f.port_kind.is_none());
    assert!(f.ipoib_mode.is_none());
    assert!(f.ceiling.is_none());
    assert!(
        f.fec.is_none(),
        "a FEC mode this version does not know reads as unknown"
    );
    assert_eq!(f.shapers.len(), 1);
    assert_eq!(f.findings.len(), 1);
    assert_eq!(f.findings[0].id.as_str(), "pcie.downtrained");
}
