//! Firmware currency of NVIDIA (Mellanox) adapters: the newest firmware known for each family,
//! with its source, and the owners of PSIDs. Pure data and a pure judgement.
//!
//! **Updating the table.** The quickest source for every family at once is NVIDIA's firmware
//! tools page "Supported Adapter Cards Firmware Versions"
//! (`https://docs.nvidia.com/networking/display/mftvVERSION/Supported-Adapter-Cards-Firmware-Versions`,
//! e.g. `mftv4350`), and the machine-readable map of NVIDIA's network operator
//! (`manifests/state-nic-configuration-operator/040-supported-nic-firmware-configmap.yaml` in
//! github.com/Mellanox/network-operator: `DEVICE-ID DOCA-VERSION FW-VERSION` per family). Each
//! family's release notes are at
//! `https://docs.nvidia.com/networking/display/<family>firmwarev<digits>[lts]/` (e.g.
//! `connectx6dxfirmwarev22463048`). Change a row's `newest`, `source` and `says`, and
//! [`TABLE_UPDATED`]; `docs/probe.md` says the same.
//!
//! The versions are those of NVIDIA's own images (PSIDs `MT_…` and `NVD…`): OEM cards (HPE,
//! Dell, IBM, Oracle, ...) carry their own PSIDs and firmware, numbered on their own line (an HP
//! ConnectX-3 Pro runs 2.42.5044, above NVIDIA's 2.42.5000), so they are never compared.

use serde::{Deserialize, Serialize};

/// When the table was last checked against its sources.
pub const TABLE_UPDATED: &str = "2026-11-29";

/// One family of adapters sharing a firmware line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirmwareRow {
    pub family: &'static str,
    /// PCI device ids (vendor 0x15b3).
    pub devices: &'static [u16],
    /// The newest NVIDIA firmware known for the family; `None`: not known.
    pub newest: Option<(u32, u32, u32)>,
    /// The vendor no longer ships drivers or tools for the family, in words (with the date).
    pub legacy: Option<&'static str>,
    /// The vendor's, or a trusted record's, word that `newest` is the last there will be.
    pub last: bool,
    /// Where `newest` (and `legacy`) come from, and what it says.
    pub source: &'static str,
    pub says: &'static str,
}

const MFT_435: &str =
    "https://docs.nvidia.com/networking/display/mftv4350/Supported-Adapter-Cards-Firmware-Versions";
const NETOP: &str = "https://github.com/Mellanox/network-operator/blob/b06827e085c59726b699faffcc526342d4d8e395/manifests/state-nic-configuration-operator/040-supported-nic-firmware-configmap.yaml";
const MLXUP_425: &str = "https://docs.nvidia.com/networking/display/mlxuprnv4250/Supported+Adapters+Cards+and+Firmware+Versions";
const OFED_51: &str = "https://docs.nvidia.com/networking/display/mlnxofedv531001/release+notes";

/// ConnectX and ConnectX-2 share these ids (the silicon revision tells them apart).
const CONNECTX2: &[u16] = &[
    0x6340, 0x634a, 0x6354, 0x6732, 0x673c, 0x6368, 0x6750, 0x6372, 0x675a, 0x6764, 0x6746, 0x676e,
];

/// Every family the table knows.
pub const TABLE: &[FirmwareRow] = &[
    FirmwareRow {
        family: "ConnectX-2",
        devices: CONNECTX2,
        newest: Some((2, 9, 1000)),
        legacy: Some("NVIDIA dropped ConnectX-2 from its firmware tools in 2022 (mstflint 4.21)"),
        last: true,
        source: "the project's notes on used cards (issue #32: \"a ConnectX-2 at 2.9.1000 is final\"); https://github.com/Mellanox/mstflint/commit/8e08c36df1c29085ee290f4d2edec08fdfd83d57",
        says: "2.9.1000 is the last ConnectX-2 firmware; mstflint's 'deprecation of legacy devices' (2022-07-12) removed CX / CX-2",
    },
    FirmwareRow {
        family: "ConnectX-3",
        devices: &[0x1003],
        newest: Some((2, 42, 5000)),
        legacy: Some("NVIDIA's drivers ended with MLNX_OFED 4.9 LTS (2020; 5.1 dropped it), and mstflint 4.26 and later no longer support it (use mstflint 4.25 or older)"),
        last: false,
        source: MLXUP_425,
        says: "mlxup 4.25.0: 'NVIDIA ConnectX-3 2.42.5000'; MLNX_OFED 5.1: 'no longer supported: ConnectX-3, ConnectX-3 Pro, Connect-IB'",
    },
    FirmwareRow {
        family: "ConnectX-3 Pro",
        devices: &[0x1007],
        newest: Some((2, 42, 5000)),
        legacy: Some("NVIDIA's drivers ended with MLNX_OFED 4.9 LTS (2020; 5.1 dropped it), and mstflint 4.26 and later no longer support it (use mstflint 4.25 or older)"),
        last: false,
        source: MLXUP_425,
        says: "mlxup 4.25.0: 'NVIDIA ConnectX-3 2.42.5000 / NVIDIA ConnectX-3 Pro'",
    },
    FirmwareRow {
        family: "Connect-IB",
        devices: &[0x1011],
        newest: Some((10, 16, 1200)),
        legacy: Some("NVIDIA's drivers ended with MLNX_OFED 4.9 LTS (2020)"),
        last: false,
        source: OFED_51,
        says: "mlxup 4.25.0: 'NVIDIA Connect-IB 10.16.1200'; MLNX_OFED 5.1: 'no longer supported: ... Connect-IB'",
    },
    FirmwareRow {
        family: "ConnectX-4",
        devices: &[0x1013],
        newest: Some((12, 28, 4706)),
        legacy: Some("DOCA 2.9 LTS (2025) is the last host software that supports it"),
        last: false,
        source: MFT_435,
        says: "MFT 4.35.0 (2026-03-02) bundled firmware: ConnectX-4 12.28.4706",
    },
    FirmwareRow {
        family: "ConnectX-4 Lx",
        devices: &[0x1015],
        newest: Some((14, 32, 1912)),
        legacy: None,
        last: false,
        source: MFT_435,
        says: "MFT 4.35.0 (2026-03-02) and MFT 4.34.1-18 LTS: ConnectX-4 Lx 14.32.1912",
    },
    FirmwareRow {
        family: "ConnectX-5",
        devices: &[0x1017, 0x1019],
        newest: Some((16, 35, 8008)),
        legacy: None,
        last: false,
        source: MFT_435,
        says: "MFT 4.35.0 (2026-03-02) bundled firmware: ConnectX-5 16.35.8008 (ConnectX-5 Ex shares the 16.x line)",
    },
    FirmwareRow {
        family: "ConnectX-6",
        devices: &[0x101b],
        newest: Some((20, 43, 8004)),
        legacy: None,
        last: false,
        source: MFT_435,
        says: "MFT 4.35.0 (2026-03-02) bundled firmware: ConnectX-6 20.43.8004",
    },
    FirmwareRow {
        family: "ConnectX-6 Dx",
        devices: &[0x101d],
        newest: Some((22, 49, 1014)),
        legacy: None,
        last: false,
        source: NETOP,
        says: "NVIDIA network operator, DOCA 26.04-0.8.6 (2026-06-04): 101d 22.49.1014",
    },
    FirmwareRow {
        family: "ConnectX-6 Lx",
        devices: &[0x101f],
        newest: Some((26, 49, 1014)),
        legacy: None,
        last: false,
        source: NETOP,
        says: "NVIDIA network operator, DOCA 26.04-0.8.6 (2026-06-04): 101f 26.49.1014",
    },
    FirmwareRow {
        family: "ConnectX-7",
        devices: &[0x1021],
        newest: Some((28, 49, 1014)),
        legacy: None,
        last: false,
        source: NETOP,
        says: "NVIDIA network operator, DOCA 26.04-0.8.6 (2026-06-04): 1021 28.49.1014",
    },
    FirmwareRow {
        family: "ConnectX-8",
        devices: &[0x1023],
        newest: Some((40, 49, 1014)),
        legacy: None,
        last: false,
        source: NETOP,
        says: "NVIDIA network operator, DOCA 26.04-0.8.6 (2026-06-04): 1023 40.49.1014",
    },
    FirmwareRow {
        family: "BlueField-2",
        devices: &[0xa2d6],
        newest: Some((24, 49, 1014)),
        legacy: None,
        last: false,
        source: NETOP,
        says: "NVIDIA network operator, DOCA 26.04-0.8.6 (2026-06-04): a2d6 24.49.1014",
    },
    FirmwareRow {
        family: "BlueField-3",
        devices: &[0xa2dc],
        newest: Some((32, 49, 1014)),
        legacy: None,
        last: false,
        source: NETOP,
        says: "NVIDIA network operator, DOCA 26.04-0.8.6 (2026-06-04): a2dc 32.49.1014",
    },
];

/// Who a PSID belongs to, from its first letters: NVIDIA's own images, or an OEM's.
pub const PSID_OWNERS: &[(&str, &str, bool)] = &[
    ("MT_", "NVIDIA (Mellanox)", true),
    ("NVD", "NVIDIA", true),
    ("HP_", "HPE", false),
    ("DEL", "Dell", false),
    ("IBM", "IBM", false),
    ("SUN", "Sun", false),
    ("ORC", "Oracle", false),
    ("CIS", "Cisco", false),
];

/// The owner of a PSID and whether it is NVIDIA's own; `None` for a prefix the table lacks.
pub fn psid_owner(psid: &str) -> Option<(&'static str, bool)> {
    PSID_OWNERS
        .iter()
        .find(|(p, _, _)| psid.starts_with(p))
        .map(|(_, o, stock)| (*o, *stock))
}

/// `2.42.5000`, `16.35.2000` → numbers.
pub fn parse_version(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.trim().split('.').map(|p| p.parse::<u32>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(v)
}

pub fn version_string(v: (u32, u32, u32)) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

/// What the table says of one device's firmware.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareStatus {
    /// The family, when the table knows the device.
    pub family: Option<String>,
    pub version: Option<String>,
    pub psid: Option<String>,
    /// Who the PSID belongs to (`NVIDIA (Mellanox)`, `HPE`, ...), when the prefix is known.
    pub psid_owner: Option<String>,
    /// The newest NVIDIA firmware known for the family.
    pub newest_known: Option<String>,
    /// `current`, `outdated`, `oem` (an OEM's image: not compared), or `unknown` (the table
    /// does not know the device, its PSID or its version).
    pub status: FirmwareState,
    /// The family is out of the vendor's support (in words).
    pub legacy: Option<String>,
    /// The vendor's word that the newest is the last.
    pub last: bool,
    pub source: Option<String>,
    pub table_updated: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirmwareState {
    Current,
    Outdated,
    Oem,
    Unknown,
}

/// Judge a device's firmware: its PCI vendor and device, `fw_ver` and PSID (`board_id`).
pub fn judge(
    vendor: Option<u16>,
    device: Option<u16>,
    fw_ver: Option<&str>,
    psid: Option<&str>,
) -> FirmwareStatus {
    let row = match (vendor, device) {
        (Some(0x15b3), Some(d)) => TABLE.iter().find(|r| r.devices.contains(&d)),
        _ => None,
    };
    let owner = psid.and_then(psid_owner);
    let version = fw_ver.and_then(parse_version);
    let status = match (row, owner, version) {
        (Some(_), Some((_, false)), _) => FirmwareState::Oem,
        (Some(r), Some((_, true)), Some(v)) => match r.newest {
            Some(n) if v < n => FirmwareState::Outdated,
            Some(_) => FirmwareState::Current,
            None => FirmwareState::Unknown,
        },
        _ => FirmwareState::Unknown,
    };
    FirmwareStatus {
        family: row.map(|r| r.family.to_string()),
        version: fw_ver.map(str::to_string),
        psid: psid.map(str::to_string),
        psid_owner: owner.map(|(o, _)| o.to_string()),
        newest_known: row.and_then(|r| r.newest).map(version_string),
        status,
        legacy: row.and_then(|r| r.legacy).map(str::to_string),
        last: row.is_some_and(|r| r.last),
        source: row.map(|r| format!("{} ({})", r.source, r.says)),
        table_updated: TABLE_UPDATED.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_numbers() {
        assert!(parse_version("2.9.1000").unwrap() < parse_version("2.42.5000").unwrap());
        assert!(parse_version("16.35.2000").unwrap() < parse_version("16.35.8008").unwrap());
        assert_eq!(parse_version("28.47.0422"), Some((28, 47, 422)));
        assert_eq!(parse_version("0.0.0"), Some((0, 0, 0)));
        for bad in ["", "2.42", "2.42.5000.1", "v2.42.5000", "banana"] {
            assert_eq!(parse_version(bad), None, "{bad}");
        }
    }

    #[test]
    fn stock_cards_are_compared_oem_ones_are_not() {
        let s = judge(
            Some(0x15b3),
            Some(0x1003),
            Some("2.40.7000"),
            Some("MT_1090120019"),
        );
        assert_eq!(s.status, FirmwareState::Outdated);
        assert_eq!(s.newest_known.as_deref(), Some("2.42.5000"));
        assert_eq!(s.family.as_deref(), Some("ConnectX-3"));
        assert!(s.legacy.is_some());
        let s = judge(
            Some(0x15b3),
            Some(0x1003),
            Some("2.42.5000"),
            Some("MT_1090120019"),
        );
        assert_eq!(s.status, FirmwareState::Current);
        let s = judge(
            Some(0x15b3),
            Some(0x1007),
            Some("2.42.5044"),
            Some("HP_1370110017"),
        );
        assert_eq!(s.status, FirmwareState::Oem);
        assert_eq!(s.psid_owner.as_deref(), Some("HPE"));
        let s = judge(
            Some(0x15b3),
            Some(0x673c),
            Some("2.9.1000"),
            Some("MT_0D90110009"),
        );
        assert_eq!(s.status, FirmwareState::Current);
        assert!(s.last);
        // Not in the table: unknown, never guessed.
        let s = judge(
            Some(0x15b3),
            Some(0x1ffe),
            Some("1.2.3"),
            Some("MT_0000000001"),
        );
        assert_eq!(s.status, FirmwareState::Unknown);
        assert_eq!(s.family, None);
        // A soft device, or a PSID nobody knows.
        assert_eq!(judge(None, None, None, None).status, FirmwareState::Unknown);
        let s = judge(
            Some(0x15b3),
            Some(0x1017),
            Some("16.35.2000"),
            Some("XYZ0000000001"),
        );
        assert_eq!(s.status, FirmwareState::Unknown);
    }

    #[test]
    fn every_row_has_a_source_and_distinct_devices() {
        let mut seen = std::collections::BTreeSet::new();
        for r in TABLE {
            assert!(
                r.source.contains("http") || r.source.contains("issue #"),
                "{}",
                r.family
            );
            assert!(!r.says.is_empty());
            for d in r.devices {
                assert!(seen.insert(*d), "{d:#06x} in two rows");
            }
        }
    }
}
