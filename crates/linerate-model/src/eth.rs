//! Ethernet speeds: what the driver's `speed` (Mb/s) means on the wire.
//!
//! An Ethernet `speed` is the MAC data rate: the line code sits below it, so
//! the data rate equals the nominal speed. The signalling rate is shown for
//! the explanation only.

use serde::{Deserialize, Serialize};

use crate::Encoding;

/// An Ethernet port speed and the most common physical layer for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EthSpeed {
    pub mbps: u32,
    /// Lanes of the most common PHY at this speed (None when unknown).
    pub lanes: Option<u8>,
    /// Signalling rate per lane, Gb/s (None when unknown).
    pub lane_signalling_gbps: Option<f64>,
    pub encoding: Option<Encoding>,
}

impl EthSpeed {
    pub fn from_mbps(mbps: u32) -> Self {
        let (lanes, lane, enc) = match mbps {
            // 1 Gb/s has two common PHYs with nothing in common below the MAC: 1000BASE-T
            // (copper, 4 pairs at 125 MBd, PAM-5) and 1000BASE-X (fibre or SerDes, 1.25 GBd,
            // 8b/10b). sysfs does not say which (ethtool's port type is not in sysfs), so no
            // signalling rate or line code is claimed; `phy_note` names both.
            10_000 => (Some(1), Some(10.3125), Some(Encoding::B64b66b)),
            25_000 => (Some(1), Some(25.781_25), Some(Encoding::B64b66b)),
            40_000 => (Some(4), Some(10.3125), Some(Encoding::B64b66b)),
            50_000 => (Some(2), Some(25.781_25), Some(Encoding::B64b66b)),
            56_000 => (Some(4), Some(14.0625), Some(Encoding::B64b66b)),
            100_000 => (Some(4), Some(25.781_25), Some(Encoding::B64b66b)),
            200_000 => (Some(4), Some(53.125), Some(Encoding::Pam4Fec)),
            400_000 => (Some(8), Some(53.125), Some(Encoding::Pam4Fec)),
            800_000 => (Some(8), Some(106.25), Some(Encoding::Pam4Fec)),
            _ => (None, None, None),
        };
        Self {
            mbps,
            lanes,
            lane_signalling_gbps: lane,
            encoding: enc,
        }
    }

    /// Which physical layers carry this speed, when the signalling chain is not known
    /// because more than one common PHY exists at this speed.
    pub fn phy_note(&self) -> Option<&'static str> {
        match self.mbps {
            1_000 => Some(
                "1000BASE-T or 1000BASE-X (copper: 4 pairs at 125 MBd, PAM-5; fibre/SerDes: 1.25 GBd, 8b/10b), and sysfs does not say which",
            ),
            _ => None,
        }
    }

    pub fn data_gbps(&self) -> f64 {
        f64::from(self.mbps) / 1000.0
    }

    pub fn signalling_gbps(&self) -> Option<f64> {
        Some(f64::from(self.lanes?) * self.lane_signalling_gbps?)
    }

    /// `40GbE`, `2.5GbE`, `100MbE`
    pub fn label(&self) -> String {
        if self.mbps >= 1000 {
            let g = self.data_gbps();
            if g.fract() == 0.0 {
                format!("{g:.0}GbE")
            } else {
                format!("{g}GbE")
            }
        } else {
            format!("{}MbE", self.mbps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_rate_is_nominal() {
        for mbps in [100, 1000, 2500, 10_000, 25_000, 40_000, 100_000, 400_000] {
            let e = EthSpeed::from_mbps(mbps);
            assert!((e.data_gbps() - f64::from(mbps) / 1000.0).abs() < 1e-12);
        }
        let e = EthSpeed::from_mbps(40_000);
        assert!((e.signalling_gbps().unwrap() - 41.25).abs() < 1e-9);
        // 64b/66b at 41.25 Gb/s leaves exactly 40.
        assert!((41.25 * e.encoding.unwrap().efficiency() - 40.0).abs() < 1e-9);
        assert_eq!(EthSpeed::from_mbps(2500).label(), "2.5GbE");
        assert_eq!(EthSpeed::from_mbps(100).label(), "100MbE");
    }

    /// 1GbE over copper is 1000BASE-T (PAM-5 on four pairs), not 1000BASE-X's 8b/10b at
    /// 1.25 GBd: with no way to tell them apart, no line code is claimed and both are named.
    #[test]
    fn one_gbe_claims_no_line_code() {
        let e = EthSpeed::from_mbps(1000);
        assert_eq!(e.encoding, None);
        assert_eq!(e.signalling_gbps(), None);
        let note = e.phy_note().unwrap();
        assert!(
            note.contains("1000BASE-T") && note.contains("1000BASE-X"),
            "{note}"
        );
        assert!((e.data_gbps() - 1.0).abs() < 1e-12);
        assert_eq!(EthSpeed::from_mbps(10_000).phy_note(), None);
    }
}
