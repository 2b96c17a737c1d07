//! Hardware specs typed by a person: `linerate plan --link 4x-fdr --pcie gen3x4`.

use thiserror::Error;

use crate::ib::IB_WIDTHS;
use crate::pcie::PCIE_WIDTHS;
use crate::{EthSpeed, IbRate, IbSpeed, LinkInput, PcieGen, PcieLink};

/// The accepted link forms, for error messages and `--help`.
pub const LINK_FORMS: &str = "InfiniBand `[1x|2x|4x|8x|12x-]sdr|ddr|qdr|fdr10|fdr|edr|hdr|ndr|xdr` (e.g. 4x-qdr, 1x-edr, hdr; width defaults to 4x), or Ethernet `1gbe|2.5gbe|5gbe|10gbe|25gbe|40gbe|50gbe|56gbe|100gbe|200gbe|400gbe|800gbe`";
/// The accepted PCIe forms.
pub const PCIE_FORMS: &str =
    "`gen<1-6>x<1|2|4|8|12|16|32>` (e.g. gen2x4, gen3x16; `pcie3x8` and `gen3-x8` also work)";

const ETH_MBPS: [u32; 12] = [
    1_000, 2_500, 5_000, 10_000, 25_000, 40_000, 50_000, 56_000, 100_000, 200_000, 400_000, 800_000,
];

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("`{given}` is not a link spec; expected {LINK_FORMS}")]
    Link { given: String },
    #[error("`{given}` is not a PCIe spec; expected {PCIE_FORMS}")]
    Pcie { given: String },
}

/// Parse a link spec.
pub fn parse_link(s: &str) -> Result<LinkInput, SpecError> {
    let err = || SpecError::Link {
        given: s.to_string(),
    };
    let t = s.trim().to_ascii_lowercase();
    if let Some(num) = t.strip_suffix("gbe") {
        let g: f64 = num.parse().map_err(|_| err())?;
        let mbps = (g * 1000.0).round();
        let mbps = ETH_MBPS
            .into_iter()
            .find(|m| (f64::from(*m) - mbps).abs() < 0.5)
            .ok_or_else(err)?;
        return Ok(LinkInput::Ethernet(EthSpeed::from_mbps(mbps)));
    }
    let (width, speed) = match t.split_once('x') {
        Some((w, rest)) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => {
            let w: u8 = w.parse().map_err(|_| err())?;
            (w, rest.trim_start_matches('-'))
        }
        _ => (4, t.as_str()),
    };
    if !IB_WIDTHS.contains(&width) {
        return Err(err());
    }
    let speed = IbSpeed::from_name(speed).ok_or_else(err)?;
    Ok(LinkInput::Infiniband(IbRate::new(speed, width)))
}

/// Parse a PCIe spec.
pub fn parse_pcie(s: &str) -> Result<PcieLink, SpecError> {
    let err = || SpecError::Pcie {
        given: s.to_string(),
    };
    let t = s.trim().to_ascii_lowercase();
    let rest = t
        .strip_prefix("gen")
        .or_else(|| t.strip_prefix("pcie"))
        .ok_or_else(err)?;
    let (g, w) = rest.split_once('x').ok_or_else(err)?;
    let g = g.trim_end_matches('-').trim_end_matches(".0");
    let gen = g
        .parse::<u8>()
        .ok()
        .and_then(PcieGen::from_number)
        .ok_or_else(err)?;
    let width: u8 = w.parse().map_err(|_| err())?;
    if !PCIE_WIDTHS.contains(&width) {
        return Err(err());
    }
    Ok(PcieLink::new(gen, width))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links() {
        let LinkInput::Infiniband(r) = parse_link("4x-qdr").unwrap() else {
            panic!()
        };
        assert_eq!((r.speed, r.width), (IbSpeed::Qdr, 4));
        let LinkInput::Infiniband(r) = parse_link("1X-EDR").unwrap() else {
            panic!()
        };
        assert_eq!((r.speed, r.width), (IbSpeed::Edr, 1));
        let LinkInput::Infiniband(r) = parse_link("fdr10").unwrap() else {
            panic!()
        };
        assert_eq!((r.speed, r.width), (IbSpeed::Fdr10, 4));
        let LinkInput::Infiniband(r) = parse_link("12xhdr").unwrap() else {
            panic!()
        };
        assert_eq!((r.speed, r.width), (IbSpeed::Hdr, 12));
        let LinkInput::Ethernet(e) = parse_link("40GbE").unwrap() else {
            panic!()
        };
        assert_eq!(e.mbps, 40_000);
        let LinkInput::Ethernet(e) = parse_link("2.5gbe").unwrap() else {
            panic!()
        };
        assert_eq!(e.mbps, 2_500);
        for bad in [
            "", "3x-qdr", "4x-zdr", "41gbe", "gbe", "x-qdr", "qdrr", "4x-",
        ] {
            let e = parse_link(bad).unwrap_err();
            assert!(e.to_string().contains("4x-qdr"), "{e}");
        }
    }

    #[test]
    fn pcie() {
        assert_eq!(
            parse_pcie("gen2x4").unwrap(),
            PcieLink::new(PcieGen::Gen2, 4)
        );
        assert_eq!(
            parse_pcie("PCIe3x16").unwrap(),
            PcieLink::new(PcieGen::Gen3, 16)
        );
        assert_eq!(
            parse_pcie("gen3-x8").unwrap(),
            PcieLink::new(PcieGen::Gen3, 8)
        );
        for bad in [
            "",
            "gen7x4",
            "gen3x3",
            "gen3",
            "x8",
            "gen3x",
            "genx8",
            "gen3x99999",
        ] {
            let e = parse_pcie(bad).unwrap_err();
            assert!(e.to_string().contains("gen2x4"), "{e}");
        }
    }
}
