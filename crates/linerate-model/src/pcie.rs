//! PCIe generations, link speed strings, and the payload-rate model.

use serde::{Deserialize, Serialize};

use crate::Encoding;

/// A PCIe generation, identified by its transfer rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PcieGen {
    #[serde(rename = "1.0")]
    Gen1,
    #[serde(rename = "2.0")]
    Gen2,
    #[serde(rename = "3.0")]
    Gen3,
    #[serde(rename = "4.0")]
    Gen4,
    #[serde(rename = "5.0")]
    Gen5,
    #[serde(rename = "6.0")]
    Gen6,
}

/// Fraction of the link left after ACK/flow-control DLLPs and SKP ordered sets
/// (pcie-model: 6-13% of the link; we take 10%).
pub const DLLP_EFFICIENCY: f64 = 0.90;
/// Bytes of overhead per memory-write TLP: 8 B framing/sequence/LCRC, 4 B header, 12 B address (64-bit).
pub const TLP_OVERHEAD_BYTES: u32 = 24;
/// Max payload size assumed when it cannot be read (it needs root): typical for servers.
pub const ASSUMED_MPS: u32 = 256;

impl PcieGen {
    pub const ALL: [PcieGen; 6] = [
        Self::Gen1,
        Self::Gen2,
        Self::Gen3,
        Self::Gen4,
        Self::Gen5,
        Self::Gen6,
    ];

    pub fn gt_per_s(self) -> f64 {
        match self {
            Self::Gen1 => 2.5,
            Self::Gen2 => 5.0,
            Self::Gen3 => 8.0,
            Self::Gen4 => 16.0,
            Self::Gen5 => 32.0,
            Self::Gen6 => 64.0,
        }
    }

    pub fn number(self) -> u8 {
        match self {
            Self::Gen1 => 1,
            Self::Gen2 => 2,
            Self::Gen3 => 3,
            Self::Gen4 => 4,
            Self::Gen5 => 5,
            Self::Gen6 => 6,
        }
    }

    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.number() == n)
    }

    pub fn from_gt(gt: f64) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|g| (g.gt_per_s() - gt).abs() < 0.01)
    }

    pub fn encoding(self) -> Encoding {
        match self {
            Self::Gen1 | Self::Gen2 => Encoding::B8b10b,
            Self::Gen3 | Self::Gen4 | Self::Gen5 => Encoding::B128b130b,
            Self::Gen6 => Encoding::Flit,
        }
    }

    /// Data rate of one lane after the line code, Gb/s.
    pub fn lane_gbps(self) -> f64 {
        self.gt_per_s() * self.encoding().efficiency()
    }

    /// `PCIe 3.0`
    pub fn label(self) -> String {
        format!("PCIe {}.0", self.number())
    }
}

/// What a `*_link_speed` file said. Serialized as `"8.0 GT/s"` or `"unknown"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PcieSpeed {
    Known(PcieGen),
    /// The kernel printed `Unknown` / `Unknown speed` (link down, D3, or not reported).
    Unknown,
}

impl PcieSpeed {
    /// Parse both kernel formats: `8.0 GT/s PCIe` (v5.7+) and `8 GT/s` (older),
    /// plus `Unknown` and `Unknown speed`. Anything else is `None` (malformed).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s == "Unknown" || s == "Unknown speed" {
            return Some(Self::Unknown);
        }
        let num = s
            .strip_suffix(" GT/s PCIe")
            .or_else(|| s.strip_suffix(" GT/s"))?;
        let gt: f64 = num.parse().ok()?;
        PcieGen::from_gt(gt).map(Self::Known)
    }

    pub fn label(self) -> String {
        match self {
            Self::Known(g) => format!("{:.1} GT/s", g.gt_per_s()),
            Self::Unknown => "unknown".to_string(),
        }
    }

    pub fn gen(self) -> Option<PcieGen> {
        match self {
            Self::Known(g) => Some(g),
            Self::Unknown => None,
        }
    }
}

impl<'de> Deserialize<'de> for PcieSpeed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "unknown" {
            return Ok(Self::Unknown);
        }
        Self::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not a PCIe speed")))
    }
}

impl Serialize for PcieSpeed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

/// Valid PCIe link widths.
pub const PCIE_WIDTHS: [u8; 7] = [1, 2, 4, 8, 12, 16, 32];

/// A PCIe link: generation and lane count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PcieLink {
    pub gen: PcieGen,
    pub width: u8,
}

impl PcieLink {
    pub fn new(gen: PcieGen, width: u8) -> Self {
        Self { gen, width }
    }

    /// Raw transfer rate of all lanes, GT/s (= Gb/s on the wire).
    pub fn raw_gbps(&self) -> f64 {
        self.gen.gt_per_s() * f64::from(self.width)
    }

    /// After the line code (the kernel's `PCIE_SPEED2MBS_ENC` × width).
    pub fn encoded_gbps(&self) -> f64 {
        self.gen.lane_gbps() * f64::from(self.width)
    }

    /// Fraction of the encoded rate that carries payload in posted writes
    /// with the given max payload size: DLLP/SKP share, then per-TLP headers.
    pub fn protocol_efficiency(mps: u32) -> f64 {
        DLLP_EFFICIENCY * f64::from(mps) / f64::from(mps + TLP_OVERHEAD_BYTES)
    }

    /// Payload the link carries (posted writes), Gb/s.
    pub fn payload_gbps(&self, mps: u32) -> f64 {
        self.encoded_gbps() * Self::protocol_efficiency(mps)
    }

    /// `PCIe 3.0 x8`
    pub fn label(&self) -> String {
        format!("{} x{}", self.gen.label(), self.width)
    }

    /// The slower of two links in each dimension (what a card gets in a slot).
    #[must_use]
    pub fn min(self, other: Self) -> Self {
        Self {
            gen: self.gen.min(other.gen),
            width: self.width.min(other.width),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_strings_both_kernels() {
        let new = [
            ("2.5 GT/s PCIe", PcieGen::Gen1),
            ("5.0 GT/s PCIe", PcieGen::Gen2),
            ("8.0 GT/s PCIe", PcieGen::Gen3),
            ("16.0 GT/s PCIe", PcieGen::Gen4),
            ("32.0 GT/s PCIe", PcieGen::Gen5),
            ("64.0 GT/s PCIe\n", PcieGen::Gen6),
        ];
        let old = [
            ("2.5 GT/s", PcieGen::Gen1),
            ("5 GT/s", PcieGen::Gen2),
            ("8 GT/s", PcieGen::Gen3),
            ("16 GT/s", PcieGen::Gen4),
            ("32 GT/s\n", PcieGen::Gen5),
        ];
        for (s, g) in new.into_iter().chain(old) {
            assert_eq!(PcieSpeed::parse(s), Some(PcieSpeed::Known(g)), "{s}");
        }
        assert_eq!(PcieSpeed::parse("Unknown speed"), Some(PcieSpeed::Unknown));
        assert_eq!(PcieSpeed::parse("Unknown\n"), Some(PcieSpeed::Unknown));
        for bad in ["", "8.0", "7 GT/s", "fast", "8.0 GB/s PCIe"] {
            assert_eq!(PcieSpeed::parse(bad), None, "{bad}");
        }
    }

    /// The kernel's PCIE_SPEED2MBS_ENC table × width (sysfs-kb §3.2).
    #[test]
    fn encoded_rates_match_kernel_table() {
        let cases = [
            (PcieGen::Gen1, 8, 16.0),
            (PcieGen::Gen1, 16, 32.0),
            (PcieGen::Gen2, 4, 16.0),
            (PcieGen::Gen2, 8, 32.0),
            (PcieGen::Gen3, 1, 7.876),
            (PcieGen::Gen3, 4, 31.504),
            (PcieGen::Gen3, 8, 63.008),
            (PcieGen::Gen3, 16, 126.016),
            (PcieGen::Gen4, 16, 252.048),
            (PcieGen::Gen5, 16, 504.112),
        ];
        for (g, w, gbps) in cases {
            let got = PcieLink::new(g, w).encoded_gbps();
            // The kernel truncates to integer Mb/s per lane.
            assert!(
                (got - gbps).abs() < 0.02 * f64::from(w) / 16.0 + 0.02,
                "{g:?} x{w}: {got}"
            );
        }
    }

    /// Payload figures against pcie-model's write-payload column (sysfs-kb §3.2, MPS 256).
    #[test]
    fn payload_close_to_pcie_model() {
        let cases = [
            (PcieGen::Gen2, 4, 13.2),
            (PcieGen::Gen2, 8, 26.2),
            (PcieGen::Gen3, 8, 52.9),
            (PcieGen::Gen3, 16, 104.0),
            (PcieGen::Gen4, 16, 207.9),
        ];
        for (g, w, model) in cases {
            let got = PcieLink::new(g, w).payload_gbps(ASSUMED_MPS);
            let err = (got - model).abs() / model;
            assert!(err < 0.025, "{g:?} x{w}: {got} vs {model}");
        }
        // Hand computed: Gen2 x4 = 16 × 0.9 × 256/280.
        let g2x4 = PcieLink::new(PcieGen::Gen2, 4).payload_gbps(256);
        assert!((g2x4 - 16.0 * 0.9 * 256.0 / 280.0).abs() < 1e-9);
        // MPS 128: 16 × 0.9 × 128/152.
        let g2x4_128 = PcieLink::new(PcieGen::Gen2, 4).payload_gbps(128);
        assert!((g2x4_128 - 12.126_315).abs() < 1e-4);
    }

    #[test]
    fn min_link() {
        let card = PcieLink::new(PcieGen::Gen3, 16);
        let slot = PcieLink::new(PcieGen::Gen2, 4);
        assert_eq!(card.min(slot), PcieLink::new(PcieGen::Gen2, 4));
    }
}
