//! Faults that sysfs captures of real machines showed in probe (issue #11, section 8),
//! checked on the fixture trees that reproduce them.

use std::path::{Path, PathBuf};

use linerate_facts::{Finding, Inventory};
use linerate_model::{LimitedBy, StageKind};
use linerate_rules::{analyze, port_ceiling};

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(case)
}

fn probe(case: &str) -> Inventory {
    linerate_inventory::probe(&fixture(case)).unwrap_or_else(|e| panic!("probe {case}: {e}"))
}

fn finding<'a>(findings: &'a [Finding], id: &str, subject: &str) -> &'a Finding {
    findings
        .iter()
        .find(|f| f.id.as_str() == id && f.subject == subject)
        .unwrap_or_else(|| panic!("no {id} on {subject}: {findings:#?}"))
}

fn evidence<'a>(f: &'a Finding, path_end: &str) -> &'a str {
    f.evidence
        .iter()
        .find(|(k, _)| k.ends_with(path_end))
        .map_or_else(
            || panic!("no evidence {path_end} in {f:#?}"),
            |(_, v)| v.as_str(),
        )
}

fn ceiling_of(inv: &Inventory, name: &str) -> linerate_model::Ceiling {
    let port = inv
        .ports
        .iter()
        .find(|p| p.name == name)
        .expect("port listed");
    port_ceiling(inv, port)
}

/// mlx5 presets `40 Gb/sec (4X QDR)` on a RoCE port with no active Ethernet protocol: no
/// link stage, and no "once fixed" figure, comes from it.
#[test]
fn roce_placeholder_rate_builds_no_chain() {
    let inv = probe("mlx5-roce-no-protocol");
    let c = ceiling_of(&inv, "enp59s0f1np1");
    assert_eq!(c.limited_by, LimitedBy::PortDown);
    assert_eq!(c.potential_gbps, None, "{c:#?}");
    assert!(
        !c.chain
            .iter()
            .any(|s| matches!(s.stage, StageKind::Signalling | StageKind::Encoding)),
        "{c:#?}"
    );
    assert!(!c.summary.contains("40"), "{}", c.summary);
    // The port that is up keeps the netdev's 25 Gb/s.
    let up = ceiling_of(&inv, "enp59s0f0np0");
    assert_eq!(up.limited_by, LimitedBy::Link);
    assert!((up.gbps - 25.0).abs() < 1e-9, "{up:#?}");
}

/// A down mlx4 IB port's SDR placeholder is no link, even when the state file is unreadable.
#[test]
fn ib_placeholder_rate_builds_no_chain() {
    let inv = probe("mlx4-ib-down-capture");
    let c = ceiling_of(&inv, "ib1");
    assert_eq!(c.limited_by, LimitedBy::PortDown, "{c:#?}");
    assert_eq!(c.potential_gbps, None);
    assert!(!c.summary.contains("SDR"), "{}", c.summary);
    let (_, port) = inv
        .ib_port(inv.ports.iter().find(|p| p.name == "ib1").unwrap())
        .unwrap();
    assert!(port.rate.is_some(), "the file is still read");
    assert_eq!(port.link_rate(), None);
    let a = analyze(&inv);
    let down = finding(&a.findings, "ib.port_down", "ib1");
    assert_eq!(evidence(down, "/phys_state"), "2: Polling");
}

/// iWARP devices make their rate up (`iw_cxgb4`: 4X DDR): the netdev speaks for the link.
#[test]
fn iwarp_rate_is_the_netdevs() {
    let mut inv = probe("chelsio-t5-iwarp");
    assert!(inv.ib_device("cxgb4_0").unwrap().is_iwarp());
    let c = ceiling_of(&inv, "enp2s0f4");
    assert!((c.gbps - 40.0).abs() < 1e-9, "{c:#?}");
    assert!(c.summary.contains("40GbE"), "{}", c.summary);
    assert!(!c.summary.contains("DDR"), "{}", c.summary);
    // With no netdev speed the iWARP link is unknown, never the driver's 20 Gb/s...
    let nd = inv
        .netdevs
        .iter_mut()
        .find(|n| n.name == "enp2s0f4")
        .unwrap();
    nd.speed_mbps = None;
    let c = ceiling_of(&inv, "enp2s0f4");
    assert_eq!(c.limited_by, LimitedBy::Unknown, "{c:#?}");
    // ...while an active RoCE port's rate file does carry its Ethernet speed.
    let mut roce = probe("cx5-roce-100g-mtu1500");
    let nd = roce
        .netdevs
        .iter_mut()
        .find(|n| n.name == "enp65s0f0")
        .unwrap();
    nd.speed_mbps = None;
    let c = ceiling_of(&roce, "enp65s0f0");
    assert!((c.gbps - 100.0).abs() < 1e-9, "{c:#?}");
}

/// The PCIe link files appeared in Linux 4.13 (commit 56c1af4606f0).
#[test]
fn missing_pcie_link_files_name_linux_4_13() {
    let a = analyze(&probe("no-pcie-link-attrs"));
    let f = finding(&a.findings, "sysfs.unreadable", "0000:03:00.0");
    assert!(f.message.contains("Linux 4.13"), "{}", f.message);
    assert!(!f.message.contains("2.6"), "{}", f.message);
}

/// Evidence quotes the files, not a re-rendering of the parsed value.
#[test]
fn evidence_is_verbatim() {
    let a = analyze(&probe("cx6-hdr-gen3-slot"));
    let f = finding(&a.findings, "pcie.slot_limited", "0000:23:00.0");
    assert_eq!(evidence(f, "0000:23:00.0/max_link_speed"), "16.0 GT/s PCIe");
    assert_eq!(evidence(f, "0000:22:10.0/max_link_speed"), "8.0 GT/s PCIe");
    assert_eq!(
        evidence(f, "0000:23:00.0/current_link_speed"),
        "8.0 GT/s PCIe"
    );
    let a = analyze(&probe("cx4-edr-no-sm"));
    let f = finding(&a.findings, "ib.no_subnet_manager", "ib0");
    assert_eq!(evidence(f, "/state"), "2: INIT");
    assert_eq!(evidence(f, "/phys_state"), "5: LinkUp");
    let a = analyze(&probe("cx3-fdr-at-qdr-datagram"));
    let f = finding(&a.findings, "ib.rate_below_capability", "ib0");
    assert_eq!(evidence(f, "/rate"), "40 Gb/sec (4X QDR)");
}

/// `ib.xmit_discards` tells congestion from a bad cable: with clean physical counters it says
/// so; beside physical errors it does not claim it; a saturated counter is a lower bound; no
/// discards, no finding.
#[test]
fn transmit_discards_are_congestion_not_the_cable() {
    let mut inv = probe("ib-xmit-discards");
    let a = analyze(&inv);
    let f = finding(&a.findings, "ib.xmit_discards", "ib0");
    assert_eq!(evidence(f, "counters/port_xmit_discards"), "5183");
    assert_eq!(evidence(f, "counters/port_xmit_wait"), "91834567");
    assert!(f.message.contains("not the cable"), "{}", f.message);
    assert!(!a.findings.iter().any(|f| f.id.as_str() == "link.errors"));

    let counters = &mut inv.ib_devices[0].ports[0].counters;
    for c in counters.iter_mut() {
        match c.name.as_str() {
            "symbol_error" => c.value = 12,
            "port_xmit_discards" => (c.value, c.pegged) = (65_535, true),
            "port_xmit_wait" => c.value = 0,
            _ => {}
        }
    }
    let a = analyze(&inv);
    let f = finding(&a.findings, "ib.xmit_discards", "ib0");
    assert!(f.message.contains("at least 65535"), "{}", f.message);
    assert!(!f.message.contains("not the cable"), "{}", f.message);
    assert_eq!(f.evidence.len(), 1, "no wait evidence at 0: {f:#?}");
    finding(&a.findings, "link.errors", "ib0");

    for c in &mut inv.ib_devices[0].ports[0].counters {
        if c.name == "port_xmit_discards" {
            (c.value, c.pegged) = (0, false);
        }
    }
    let a = analyze(&inv);
    assert!(!a
        .findings
        .iter()
        .any(|f| f.id.as_str() == "ib.xmit_discards"));
}
