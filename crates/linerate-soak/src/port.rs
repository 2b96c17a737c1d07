//! One port's counters with what the rules need beside them: its kind, data rate, the bits it
//! received and how they were counted; shared by the judge and the rules.

use std::collections::BTreeMap;

use linerate_model::ib::IbSpeed;
use linerate_proto::soak::{CounterSource, SoakPortKind};
use linerate_units::fmt_round;

use crate::report::BitsBasis;
use crate::thresholds::JudgeParams;
use crate::tracker::{CounterTrack, EndTotals, PortInfo, Tracker};

use CounterSource::{Carrier, Ethtool, IbCounters, NetdevStatistics};

/// Bits per PMA data unit: `port_rcv_data` counts octets ÷ 4.
const BITS_PER_PMA_DATA_UNIT: f64 = 32.0;
/// Speeds that run PAM4 with FEC, where raw symbol errors are normal.
pub fn is_pam4(speed: &str) -> bool {
    matches!(speed.to_ascii_uppercase().as_str(), "HDR" | "NDR" | "XDR")
}

/// The data rate of a port (signalling × line code), Gb/s: the most traffic it can carry one
/// way. InfiniBand without a known speed grade: its signalling rate (an upper bound).
pub fn data_gbps(kind: &SoakPortKind) -> Option<f64> {
    match kind {
        SoakPortKind::Infiniband {
            speed,
            signalling_gbps,
        } => {
            let g = signalling_gbps.filter(|g| g.is_finite() && *g > 0.0)?;
            let efficiency = speed
                .as_deref()
                .and_then(IbSpeed::from_name)
                .map_or(1.0, |s| s.encoding().efficiency());
            Some(g * efficiency)
        }
        SoakPortKind::Ethernet { speed_mbps, .. } => {
            speed_mbps.filter(|m| *m > 0).map(|m| m as f64 / 1000.0)
        }
    }
}

/// The counters of one port, by source and name, with what the rules need beside them.
pub(crate) struct PortCtx<'a> {
    pub info: &'a PortInfo,
    pub totals: &'a EndTotals,
    pub jp: &'a JudgeParams,
    counters: BTreeMap<(CounterSource, &'a str), &'a CounterTrack>,
    /// The port's counters in the order first seen.
    pub order: Vec<&'a CounterTrack>,
    /// Bits the port received, how they were counted, and its data rate.
    pub bits: f64,
    pub bits_basis: BitsBasis,
    pub data_gbps: Option<f64>,
}

impl<'a> PortCtx<'a> {
    pub(crate) fn new(tracker: &'a Tracker, info: &'a PortInfo, jp: &'a JudgeParams) -> Self {
        let order: Vec<&CounterTrack> = tracker
            .counters()
            .iter()
            .filter(|c| {
                c.key.end == info.end && c.key.device == info.device && c.key.port == info.port
            })
            .collect();
        let counters = order
            .iter()
            .map(|c| ((c.key.source, c.key.name.as_str()), *c))
            .collect();
        let mut ctx = Self {
            info,
            totals: tracker.totals(info.end),
            jp,
            counters,
            order,
            bits: 0.0,
            bits_basis: BitsBasis::Engine,
            data_gbps: data_gbps(&info.kind),
        };
        (ctx.bits, ctx.bits_basis) = ctx.bits_received();
        ctx
    }

    pub fn get(&self, source: CounterSource, name: &str) -> Option<&'a CounterTrack> {
        self.counters.get(&(source, name)).copied()
    }

    pub fn delta(&self, source: CounterSource, name: &str) -> u64 {
        self.get(source, name).map_or(0, |c| c.delta)
    }

    /// Ethtool counters whose name contains all of `parts` (drivers name FEC statistics
    /// differently: `rx_fec_uncorrectable_blocks`, `fec_uncorrectable_errors`, ...).
    pub fn ethtool_matching(&self, parts: &[&str]) -> Vec<&'a CounterTrack> {
        self.order
            .iter()
            .filter(|c| c.key.source == Ethtool && parts.iter().all(|p| c.key.name.contains(p)))
            .copied()
            .collect()
    }

    pub fn pam4(&self) -> bool {
        matches!(&self.info.kind, SoakPortKind::Infiniband { speed: Some(s), .. } if is_pam4(s))
    }

    /// `carrier_down_count` where the kernel has it (4.16+), else `carrier_changes`.
    pub fn carrier_down_name(&self) -> &'static str {
        if self.get(Carrier, "carrier_down_count").is_some() {
            "carrier_down_count"
        } else {
            "carrier_changes"
        }
    }

    /// Bits this port received, and how they were counted: the larger of the port's own
    /// counter and the engines' bytes (a port counter includes headers; the engines' bytes are
    /// end-wide, and are all a fixture port has), the engines' credited at most at the port's
    /// data rate × time.
    fn bits_received(&self) -> (f64, BitsBasis) {
        let engine = self.totals.bytes_received as f64 * 8.0;
        let (engine, engine_basis) = match self.data_gbps {
            Some(g) if engine > g * 1e9 * self.duration_s() => {
                (g * 1e9 * self.duration_s(), BitsBasis::DataRate)
            }
            _ => (engine, BitsBasis::Engine),
        };
        let port = if let Some(c) = self.get(Ethtool, "rx_bits_phy") {
            Some((c.delta as f64, BitsBasis::RxBitsPhy))
        } else if let Some(c) = self.get(IbCounters, "port_rcv_data") {
            Some((
                c.delta as f64 * BITS_PER_PMA_DATA_UNIT,
                BitsBasis::PortRcvData,
            ))
        } else {
            self.get(NetdevStatistics, "rx_bytes")
                .map(|c| (c.delta as f64 * 8.0, BitsBasis::RxBytes))
        };
        match port {
            Some((bits, basis)) if bits >= engine => (bits, basis),
            _ => (engine, engine_basis),
        }
    }

    pub fn duration_s(&self) -> f64 {
        self.totals.duration_s()
    }
}

/// `90 s`, `12 min`, `2.5 h`.
pub fn fmt_duration(s: f64) -> String {
    if s >= 5400.0 {
        format!("{} h", fmt_round(s / 3600.0, 1))
    } else if s >= 120.0 {
        format!("{} min", fmt_round(s / 60.0, 1))
    } else {
        format!("{} s", fmt_round(s, 1))
    }
}
