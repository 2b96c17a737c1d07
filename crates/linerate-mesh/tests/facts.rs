//! Node facts from the probe of fixture trees (`fixtures/sysfs`).

use std::path::Path;

use linerate_facts::{HostFacts, PortDoc, ProbeDoc};
use linerate_mesh::{node_facts, FactsInput, NodeFacts};

/// The node facts of a rank whose data address sits on `port` of the fixture, from the host
/// facts the runtime builds for it (the interface's port found by its netdev).
fn facts(fixture: &str, port: Option<&str>) -> NodeFacts {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(fixture);
    let inv = linerate_inventory::probe(&root).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    let analysis = linerate_rules::analyze(&inv);
    let h = HostFacts {
        address: "198.18.0.13".into(),
        name: port.map(str::to_string),
        port: port
            .and_then(|n| inv.port_of_netdev(n))
            .map(|p| PortDoc::new(&inv, p, &linerate_rules::port_ceiling(&inv, p))),
        probe: Some(ProbeDoc::new(&inv, &analysis, "/")),
        ..HostFacts::default()
    };
    let input = FactsInput {
        rank: 3,
        host: "node03",
        data_addr: Some("198.18.0.13:7000"),
    };
    node_facts(&input, &h)
}

fn ids(f: &NodeFacts) -> Vec<&str> {
    f.findings.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn ipoib_port_in_datagram_mode() {
    let f = facts("cx3-fdr-at-qdr-datagram", Some("ib0"));
    assert_eq!((f.rank, f.host.as_str()), (3, "node03"));
    assert_eq!(f.data_addr.as_deref(), Some("198.18.0.13:7000"));
    let p = f.port.as_ref().expect("ib0 found");
    assert_eq!(p.name, "ib0");
    assert_eq!(p.driver.as_deref(), Some("mlx4_core"));
    assert_eq!(p.firmware.as_deref(), Some("2.42.5000"));
    assert!(
        p.card.as_deref().unwrap().starts_with("ConnectX-3"),
        "{p:?}"
    );
    assert_eq!(p.pcie_current.as_deref(), Some("8.0 GT/s x8"));
    assert_eq!(p.pcie_max.as_deref(), Some("8.0 GT/s x8"));
    assert_eq!(p.mtu, Some(2044));
    assert_eq!(p.ipoib_mode.as_deref(), Some("datagram"));
    assert_eq!(p.link_gbps, Some(40.0));
    // 4X QDR: 32 Gb/s after 8b/10b, then IPoIB/IP/TCP headers on 2044-byte packets.
    let c = p.ceiling_gbps.unwrap();
    assert!(c > 28.0 && c < 32.0, "{c}");
    for id in [
        "ib.rate_below_capability",
        "ipoib.datagram_mode",
        "mtu.small",
    ] {
        assert!(ids(&f).contains(&id), "{id}: {:?}", ids(&f));
    }
    assert!(
        f.findings.iter().all(|(_, m)| m.contains("ib0")),
        "{:?}",
        f.findings
    );
}

#[test]
fn card_in_a_narrow_slot() {
    let f = facts("cx2-qdr-m2-gen2x4", Some("ib0"));
    let p = f.port.as_ref().unwrap();
    assert_eq!(p.pcie_current.as_deref(), Some("5.0 GT/s x4"));
    assert_eq!(p.pcie_max.as_deref(), Some("5.0 GT/s x8"));
    assert_eq!(p.ipoib_mode.as_deref(), Some("connected"));
    assert!(p.ceiling_gbps.unwrap() < 13.5, "{p:?}");
    assert!(ids(&f).contains(&"pcie.slot_limited"), "{:?}", ids(&f));
    // A PCIe finding's subject is the PCI address: the message gets it in front when it
    // does not name it.
    let (_, m) = f
        .findings
        .iter()
        .find(|(id, _)| id == "pcie.slot_limited")
        .unwrap();
    assert!(m.contains("0000:04:00.0"), "{m}");
}

#[test]
fn host_facts_governor_and_buffers() {
    let f = facts("tcp-buffers-tiny", Some("enp94s0f0np0"));
    assert_eq!(f.tcp_rmem_max, Some(131_072));
    let p = f.port.as_ref().unwrap();
    assert_eq!(p.mtu, Some(9000));
    assert_eq!(p.ipoib_mode, None);
    // An mlx5 Ethernet port has an RDMA device beside its netdev: its firmware is known.
    assert_eq!(p.firmware.as_deref(), Some("14.32.1010"));
    assert!(ids(&f).contains(&"tcp.buffers_small"), "{:?}", ids(&f));
    let f = facts("cpu-powersave-pstate", Some("enp3s0f0"));
    assert_eq!(f.governor.as_deref(), Some("powersave"));
    // The signalling rate: 10GBASE-R runs 10.3125 GBd for 10 Gb/s of data after 64b/66b.
    let link = f.port.as_ref().unwrap().link_gbps.unwrap();
    assert!((link - 10.3125).abs() < 0.01, "{link}");
}

#[test]
fn an_unknown_port_leaves_the_port_out_but_keeps_the_node() {
    let f = facts("cx2-qdr-m2-gen2x4", Some("eth9"));
    assert!(f.port.is_none());
    assert!(f.kernel.is_some() && !f.findings.is_empty());
    let f = facts("cx2-qdr-m2-gen2x4", None);
    assert!(f.port.is_none());
}
