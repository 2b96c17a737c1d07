//! InfiniBand speeds, widths, port states and the kernel's `rate` string.

use serde::{Deserialize, Serialize};

use crate::Encoding;

/// Per-lane InfiniBand speed grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum IbSpeed {
    Sdr,
    Ddr,
    Qdr,
    Fdr10,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
}

impl IbSpeed {
    pub const ALL: [IbSpeed; 9] = [
        Self::Sdr,
        Self::Ddr,
        Self::Qdr,
        Self::Fdr10,
        Self::Fdr,
        Self::Edr,
        Self::Hdr,
        Self::Ndr,
        Self::Xdr,
    ];

    /// Signalling rate of one lane in Gb/s (the kernel's `ib_rate_to_mbps`).
    pub fn lane_signalling_gbps(self) -> f64 {
        match self {
            Self::Sdr => 2.5,
            Self::Ddr => 5.0,
            Self::Qdr => 10.0,
            Self::Fdr10 => 10.3125,
            Self::Fdr => 14.0625,
            Self::Edr => 25.781_25,
            Self::Hdr => 53.125,
            Self::Ndr => 106.25,
            Self::Xdr => 212.5,
        }
    }

    /// The per-lane figure the kernel prints in `rate` (nominal, not data).
    pub fn lane_nominal_gbps(self) -> f64 {
        match self {
            Self::Sdr => 2.5,
            Self::Ddr => 5.0,
            Self::Qdr | Self::Fdr10 => 10.0,
            Self::Fdr => 14.0,
            Self::Edr => 25.0,
            Self::Hdr => 50.0,
            Self::Ndr => 100.0,
            Self::Xdr => 200.0,
        }
    }

    pub fn encoding(self) -> Encoding {
        match self {
            Self::Sdr | Self::Ddr | Self::Qdr => Encoding::B8b10b,
            Self::Fdr10 | Self::Fdr | Self::Edr => Encoding::B64b66b,
            Self::Hdr | Self::Ndr | Self::Xdr => Encoding::Pam4Fec,
        }
    }

    /// Data rate of one lane after the line code, Gb/s.
    pub fn lane_data_gbps(self) -> f64 {
        self.lane_signalling_gbps() * self.encoding().efficiency()
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sdr => "SDR",
            Self::Ddr => "DDR",
            Self::Qdr => "QDR",
            Self::Fdr10 => "FDR10",
            Self::Fdr => "FDR",
            Self::Edr => "EDR",
            Self::Hdr => "HDR",
            Self::Ndr => "NDR",
            Self::Xdr => "XDR",
        }
    }

    /// Parse a speed name, any case (`qdr`, `FDR10`).
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|sp| sp.name().eq_ignore_ascii_case(s))
    }

    /// Old kernels print `(4X)` without a speed name (SDR only in practice);
    /// infer the grade from the nominal per-lane rate.
    fn from_lane_nominal(per_lane: f64) -> Option<Self> {
        [
            Self::Sdr,
            Self::Ddr,
            Self::Qdr,
            Self::Fdr,
            Self::Edr,
            Self::Hdr,
            Self::Ndr,
            Self::Xdr,
        ]
        .into_iter()
        .find(|sp| (sp.lane_nominal_gbps() - per_lane).abs() < 0.01)
    }
}

/// Valid InfiniBand link widths (lanes).
pub const IB_WIDTHS: [u8; 5] = [1, 2, 4, 8, 12];

/// A parsed `ports/N/rate` value such as `40 Gb/sec (4X QDR)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IbRate {
    pub speed: IbSpeed,
    pub width: u8,
    /// The figure the kernel printed, in Gb/s (signalling-nominal, before encoding).
    pub nominal_gbps: f64,
}

impl IbRate {
    pub fn new(speed: IbSpeed, width: u8) -> Self {
        Self {
            speed,
            width,
            nominal_gbps: speed.lane_nominal_gbps() * f64::from(width),
        }
    }

    pub fn signalling_gbps(&self) -> f64 {
        self.speed.lane_signalling_gbps() * f64::from(self.width)
    }

    pub fn data_gbps(&self) -> f64 {
        self.speed.lane_data_gbps() * f64::from(self.width)
    }

    /// `4X QDR`
    pub fn label(&self) -> String {
        format!("{}X {}", self.width, self.speed.name())
    }

    /// Parse the kernel's rate string, current (`40 Gb/sec (4X QDR)`) and old
    /// (`10 Gb/sec (4X)`) forms. Returns `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let (num, rest) = s.split_once(" Gb/sec (")?;
        let nominal: f64 = num.parse().ok()?;
        if !nominal.is_finite() || nominal <= 0.0 {
            return None;
        }
        let inner = rest.strip_suffix(')')?;
        let (width_s, speed_s) = match inner.split_once('X') {
            Some((w, sp)) => (w, sp.trim()),
            None => return None,
        };
        let width: u8 = width_s.parse().ok()?;
        if !IB_WIDTHS.contains(&width) {
            return None;
        }
        let speed = if speed_s.is_empty() {
            IbSpeed::from_lane_nominal(nominal / f64::from(width))?
        } else {
            IbSpeed::from_name(speed_s)?
        };
        // The printed figure must agree with speed x width.
        let expect = speed.lane_nominal_gbps() * f64::from(width);
        if (expect - nominal).abs() > 0.51 {
            return None;
        }
        Some(Self {
            speed,
            width,
            nominal_gbps: nominal,
        })
    }
}

/// Logical port state (`ports/N/state`, `"%d: %s"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IbState {
    Nop,
    Down,
    Init,
    Armed,
    Active,
    ActiveDefer,
}

impl IbState {
    pub fn parse(s: &str) -> Option<Self> {
        let n: u32 = leading_number(s)?;
        Some(match n {
            0 => Self::Nop,
            1 => Self::Down,
            2 => Self::Init,
            3 => Self::Armed,
            4 => Self::Active,
            5 => Self::ActiveDefer,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Nop => "NOP",
            Self::Down => "DOWN",
            Self::Init => "INIT",
            Self::Armed => "ARMED",
            Self::Active => "ACTIVE",
            Self::ActiveDefer => "ACTIVE_DEFER",
        }
    }
}

/// Physical port state (`ports/N/phys_state`, `"%u: %s"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IbPhysState {
    Sleep,
    Polling,
    Disabled,
    PortConfigurationTraining,
    LinkUp,
    LinkErrorRecovery,
    PhyTest,
}

impl IbPhysState {
    pub fn parse(s: &str) -> Option<Self> {
        let n: u32 = leading_number(s)?;
        Some(match n {
            1 => Self::Sleep,
            2 => Self::Polling,
            3 => Self::Disabled,
            4 => Self::PortConfigurationTraining,
            5 => Self::LinkUp,
            6 => Self::LinkErrorRecovery,
            7 => Self::PhyTest,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sleep => "Sleep",
            Self::Polling => "Polling",
            Self::Disabled => "Disabled",
            Self::PortConfigurationTraining => "PortConfigurationTraining",
            Self::LinkUp => "LinkUp",
            Self::LinkErrorRecovery => "LinkErrorRecovery",
            Self::PhyTest => "Phy Test",
        }
    }
}

/// `"N: NAME"` → N, requiring the `": "` separator.
fn leading_number(s: &str) -> Option<u32> {
    let (n, name) = s.trim().split_once(": ")?;
    if name.is_empty() {
        return None;
    }
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_rate_string_parses() {
        // The kernel's table: rate = per-lane tenths × width, printed with `.5` when odd.
        let tenths = [
            (IbSpeed::Sdr, 25),
            (IbSpeed::Ddr, 50),
            (IbSpeed::Qdr, 100),
            (IbSpeed::Fdr10, 100),
            (IbSpeed::Fdr, 140),
            (IbSpeed::Edr, 250),
            (IbSpeed::Hdr, 500),
            (IbSpeed::Ndr, 1000),
            (IbSpeed::Xdr, 2000),
        ];
        for (speed, t) in tenths {
            for w in IB_WIDTHS {
                let rate = t * u32::from(w);
                let mut s = format!("{}", rate / 10);
                if rate % 10 != 0 {
                    s.push_str(".5");
                }
                let line = format!("{s} Gb/sec ({w}X {})\n", speed.name());
                let r = IbRate::parse(&line).unwrap_or_else(|| panic!("{line}"));
                assert_eq!(r.speed, speed, "{line}");
                assert_eq!(r.width, w);
            }
        }
    }

    #[test]
    fn old_format_without_speed() {
        let r = IbRate::parse("10 Gb/sec (4X)").unwrap();
        assert_eq!(r.speed, IbSpeed::Sdr);
        let r = IbRate::parse("2.5 Gb/sec (1X)").unwrap();
        assert_eq!(r.speed, IbSpeed::Sdr);
        assert_eq!(r.width, 1);
        let r = IbRate::parse("20 Gb/sec (4X)").unwrap();
        assert_eq!(r.speed, IbSpeed::Ddr);
    }

    #[test]
    fn garbage_rates_refused() {
        for s in [
            "",
            "banana",
            "40 Gb/sec",
            "40 Gb/sec (3X QDR)",
            "40 Gb/sec (4X ZDR)",
            "-40 Gb/sec (4X QDR)",
            "56 Gb/sec (4X QDR)",
            "NaN Gb/sec (4X QDR)",
            "40 Gb/sec (4X QDR",
        ] {
            assert!(IbRate::parse(s).is_none(), "{s:?}");
        }
    }

    #[test]
    fn data_rates_hand_computed() {
        let cases = [
            ("10 Gb/sec (4X SDR)", 10.0, 8.0),
            ("20 Gb/sec (4X DDR)", 20.0, 16.0),
            ("40 Gb/sec (4X QDR)", 40.0, 32.0),
            ("40 Gb/sec (4X FDR10)", 41.25, 40.0),
            ("56 Gb/sec (4X FDR)", 56.25, 54.545_454),
            ("100 Gb/sec (4X EDR)", 103.125, 100.0),
            ("200 Gb/sec (4X HDR)", 212.5, 200.0),
            ("400 Gb/sec (4X NDR)", 425.0, 400.0),
            ("800 Gb/sec (4X XDR)", 850.0, 800.0),
            ("168 Gb/sec (12X FDR)", 168.75, 163.636_363),
            ("2.5 Gb/sec (1X SDR)", 2.5, 2.0),
        ];
        for (s, sig, data) in cases {
            let r = IbRate::parse(s).unwrap();
            assert!((r.signalling_gbps() - sig).abs() < 1e-6, "{s}");
            assert!(
                (r.data_gbps() - data).abs() < 1e-4,
                "{s}: {}",
                r.data_gbps()
            );
        }
    }

    #[test]
    fn states() {
        assert_eq!(IbState::parse("4: ACTIVE\n"), Some(IbState::Active));
        assert_eq!(IbState::parse("2: INIT"), Some(IbState::Init));
        assert_eq!(IbState::parse("9: WHAT"), None);
        assert_eq!(IbState::parse("ACTIVE"), None);
        assert_eq!(IbPhysState::parse("5: LinkUp"), Some(IbPhysState::LinkUp));
        assert_eq!(
            IbPhysState::parse("7: Phy Test"),
            Some(IbPhysState::PhyTest)
        );
        assert_eq!(IbPhysState::parse("0: <unknown>"), None);
    }
}
