//! Faults that sysfs captures of real machines showed in probe (issue #11, section 8),
//! checked on the fixture trees that reproduce them.

use std::path::{Path, PathBuf};

use linerate_inventory::Inventory;
use linerate_rules::{analyze, Finding};

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
        .find(|f| f.id == id && f.subject == subject)
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
