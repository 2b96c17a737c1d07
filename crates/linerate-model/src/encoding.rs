//! Line encodings and their efficiency.

use serde::{Deserialize, Serialize};

/// A line code: how many of the signalled bits carry data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// 8b/10b: 20% of the signalled bits are coding (SDR/DDR/QDR InfiniBand, PCIe 1-2, 1000BASE-X).
    B8b10b,
    /// 64b/66b (FDR10, FDR, EDR InfiniBand; 10/25/40/100GbE NRZ).
    B64b66b,
    /// 128b/130b (PCIe 3.0 to 5.0).
    B128b130b,
    /// PAM4 with RS(544,514) FEC and 256b/257b transcoding (HDR, NDR, XDR; 50G-lane Ethernet).
    Pam4Fec,
    /// PCIe 6.0 FLIT mode: 242 of every 256 bytes carry TLP and DLLP data after FEC and CRC.
    Flit,
}

impl Encoding {
    /// Fraction of the signalling rate that is data.
    pub fn efficiency(self) -> f64 {
        match self {
            Self::B8b10b => 8.0 / 10.0,
            Self::B64b66b => 64.0 / 66.0,
            Self::B128b130b => 128.0 / 130.0,
            Self::Pam4Fec => 514.0 / 544.0 * 256.0 / 257.0,
            Self::Flit => 242.0 / 256.0,
        }
    }

    /// The name people use for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::B8b10b => "8b/10b",
            Self::B64b66b => "64b/66b",
            Self::B128b130b => "128b/130b",
            Self::Pam4Fec => "PAM4 with RS-FEC",
            Self::Flit => "FLIT (242/256)",
        }
    }

    /// Percentage of signalled bits lost to the code.
    pub fn overhead_percent(self) -> f64 {
        (1.0 - self.efficiency()) * 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiencies() {
        assert!((Encoding::B8b10b.efficiency() - 0.8).abs() < 1e-12);
        assert!((Encoding::B64b66b.efficiency() - 0.969_696_969).abs() < 1e-6);
        assert!((Encoding::B128b130b.efficiency() - 0.984_615_384).abs() < 1e-6);
        // HDR: 53.125 Gb/s per lane carries exactly 50 Gb/s.
        assert!((53.125 * Encoding::Pam4Fec.efficiency() - 50.0).abs() < 1e-9);
    }
}
