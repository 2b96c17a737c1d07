//! soak's thresholds in one place: every default a named constant with the source it comes
//! from, and [`Threshold`], the names an operator overrides with `--threshold NAME=VALUE`.
//! [`JudgeParams`] holds the values a judgement used; the document carries it, so a verdict can
//! be checked by hand. `docs/soak.md` lists the same table, and `tests/vocabulary.rs` fails when
//! it, the schema or the CLI's help misses a threshold.
//!
//! Adding one: a constant here with its source, a variant of [`Threshold`] (the compiler then
//! asks for its default, range, meaning, source and field), a field of [`JudgeParams`], its use
//! in `rules.rs`, its row in `docs/soak.md` and its property in `schemas/soak.schema.json`.

use serde::{Deserialize, Serialize};

use crate::verdict::Source;

/// The IBTA's bit error rate: "The InfiniBand specification requires less than one-bit error per
/// 10^12 bits" (NVIDIA DGX SuperPOD cabling guide); ibdiagnet's `--ber_thresh` defaults to its
/// reciprocal, 1e12. The `symbol_error` budget per hour is signalling rate × 3600 s × this.
pub const BER: f64 = 1e-12;

/// Corrected bits ÷ bits above this is `pre_fec_ber` (mlx5 `counters.rst`: the corrected-bit
/// rate is `rx_corrected_bits_phy` ÷ `rx_bits_phy`), held to the same 1e-12. On PAM4 Ethernet a
/// pre-FEC BER far above it is normal and corrected: raise it there.
pub const PRE_FEC_BER: f64 = 1e-12;

/// Bits a port must receive before "no errors" means anything: three budgets' worth at BER
/// 1e-12. Also the floor of every budget: no budget allows fewer than `MIN_BITS` × its rate
/// (3 errors), so a handful of errors in seconds is not called a rate.
pub const MIN_BITS: f64 = 3e12;

/// The receive-error budget: packets lost to receive errors per bit received. A link within
/// BER 1e-12, the IBTA's for InfiniBand and IEEE 802.3's for Ethernet (802.3ba's objective:
/// "a BER better than or equal to 10^-12 at the MAC/PLS service interface"; 1000BASE-X and
/// 10G likewise), corrupts at most one packet per 10^12 bits it carries, since every packet
/// dropped for a receive error holds at least one bit error. So a port may lose at most
/// bits received × 1e-12 packets to `port_rcv_errors` (or `rx_crc_errors`, FCS or symbol errors)
/// before it is `marginal`: 360 an hour at 100 Gb/s, 3.6 at 1 Gb/s, and never fewer than 3.
pub const RCV_ERRORS_PER_BIT: f64 = 1e-12;

/// A receive-error counter above this per second is `bad`: infiniband-diags' IBswcountlimits.pm
/// rate limit for PortRcvErrors (10 over its 10 s pause: "This is a bad link … check the
/// cable"), and NVSentinel's "degraded" `port_rcv_errors` > 10/s.
pub const PORT_RCV_ERRORS_PER_S: f64 = 10.0;

/// `link_error_recovery` above this per minute is `bad` (NVSentinel's "degraded" > 5/min).
pub const LINK_ERROR_RECOVERY_PER_MIN: f64 = 5.0;

/// `port_xmit_wait` ticks over the soak above this is congestion (infiniband-diags
/// `etc/error_thresholds`: PortXmitWait=1000).
pub const XMIT_WAIT_TICKS: u64 = 1000;

/// An interval below this fraction of its end's median throughput is a dip, and the intervals
/// with pause frames below this fraction of those without slowed (`pause_frames`) (linerate's
/// own: a tenth below typical is beyond the interval-to-interval noise of a steady TCP stream).
pub const DIP_FRACTION: f64 = 0.9;

/// TCP segments retransmitted per segment sent (host-wide, `RetransSegs` ÷ `OutSegs` of
/// `/proc/net/snmp`) above which an end's send direction is said to lose packets
/// (`tcp_retransmits`). linerate's own: not zero, because a clean path retransmits a little
/// (tail-loss probes, a timer that fires while the host is stalled: 4 to 8 in 20,000 to 30,000
/// segments, 0.02-0.04 %, over the lab's clean emulated link), and a path that loses one packet
/// in a thousand already holds a single TCP stream far below its line rate (Mathis et al.: rate
/// ∝ MSS ÷ (RTT × √loss)).
pub const TCP_RETRANS_FRACTION: f64 = 1e-3;

/// A temperature below the port (the module's, the NIC's sensors) that rose by more than this
/// many °C between the soak's first reading and its hottest, while under its warning, is said
/// (`temperature_rise`, a note): linerate's own. A card that heats this much under a soak's
/// load has little margin left in a warmer room or a busier rack (a passively cooled NIC
/// needs the chassis' airflow; mlx5 warns at 105 °C, modules at 70-75 °C).
pub const TEMPERATURE_RISE_C: f64 = 10.0;

/// NVSentinel's fixed `symbol_error` budget per hour ("IBTA BER spec violation"), used where the
/// signalling rate is unknown (the IBTA budget at about 33 Gb/s). Not settable: set `ber`.
pub const NVSENTINEL_SYMBOL_ERRORS_PER_HOUR: f64 = 120.0;

string_enum! {
    /// A threshold an operator may set (`linerate soak --threshold NAME=VALUE`).
    pub enum Threshold {
        Ber = "ber",
        PreFecBer = "pre_fec_ber",
        MinBits = "min_bits",
        RcvErrorsPerBit = "rcv_errors_per_bit",
        PortRcvErrorsPerS = "port_rcv_errors_per_s",
        LinkErrorRecoveryPerMin = "link_error_recovery_per_min",
        XmitWaitTicks = "xmit_wait_ticks",
        DipFraction = "dip_fraction",
        TcpRetransFraction = "tcp_retrans_fraction",
        TemperatureRiseC = "temperature_rise_c",
    }
}

/// The values a threshold accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdRange {
    /// Above 0 and below 1 (an error rate).
    Ratio,
    /// A finite number, 0 or more.
    NonNegative,
    /// A whole number, 0 or more (at most 2^53, exact in a JSON number).
    WholeNumber,
    /// Above 0, at most 1.
    Fraction,
}

impl ThresholdRange {
    pub fn accepts(self, v: f64) -> bool {
        match self {
            Self::Ratio => v.is_finite() && v > 0.0 && v < 1.0,
            Self::NonNegative => v.is_finite() && v >= 0.0,
            Self::WholeNumber => {
                v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 2f64.powi(53)
            }
            Self::Fraction => v.is_finite() && v > 0.0 && v <= 1.0,
        }
    }

    /// What it accepts, for the error message.
    pub fn words(self) -> &'static str {
        match self {
            Self::Ratio => "a ratio above 0 and below 1, like 1e-12",
            Self::NonNegative => "a number, 0 or more",
            Self::WholeNumber => "a whole number, 0 or more",
            Self::Fraction => "a fraction above 0 and at most 1, like 0.9",
        }
    }
}

impl Threshold {
    pub fn default_value(self) -> f64 {
        match self {
            Self::Ber => BER,
            Self::PreFecBer => PRE_FEC_BER,
            Self::MinBits => MIN_BITS,
            Self::RcvErrorsPerBit => RCV_ERRORS_PER_BIT,
            Self::PortRcvErrorsPerS => PORT_RCV_ERRORS_PER_S,
            Self::LinkErrorRecoveryPerMin => LINK_ERROR_RECOVERY_PER_MIN,
            Self::XmitWaitTicks => XMIT_WAIT_TICKS as f64,
            Self::DipFraction => DIP_FRACTION,
            Self::TcpRetransFraction => TCP_RETRANS_FRACTION,
            Self::TemperatureRiseC => TEMPERATURE_RISE_C,
        }
    }

    pub fn range(self) -> ThresholdRange {
        match self {
            Self::Ber | Self::PreFecBer | Self::RcvErrorsPerBit => ThresholdRange::Ratio,
            Self::MinBits
            | Self::PortRcvErrorsPerS
            | Self::LinkErrorRecoveryPerMin
            | Self::TemperatureRiseC => ThresholdRange::NonNegative,
            Self::XmitWaitTicks => ThresholdRange::WholeNumber,
            Self::DipFraction | Self::TcpRetransFraction => ThresholdRange::Fraction,
        }
    }

    /// What it is, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Ber => "the bit error rate the symbol-error budget is computed at",
            Self::PreFecBer => "corrected bits per bit above which Ethernet is marginal",
            Self::MinBits => "bits a port must receive before it can be called clean",
            Self::RcvErrorsPerBit => {
                "receive errors per bit received above which a port is marginal"
            }
            Self::PortRcvErrorsPerS => "receive errors per second above which a port is bad",
            Self::LinkErrorRecoveryPerMin => {
                "link_error_recovery per minute above which a port is bad"
            }
            Self::XmitWaitTicks => {
                "port_xmit_wait ticks over the soak above which it is congestion"
            }
            Self::DipFraction => {
                "the fraction of the median throughput below which an interval is a dip, and of the throughput without pause frames below which they slowed it (pause_frames)"
            }
            Self::TcpRetransFraction => {
                "TCP segments retransmitted per segment sent above which an end's send direction loses packets"
            }
            Self::TemperatureRiseC => {
                "degrees Celsius a temperature below the port may rise over the soak before it is said"
            }
        }
    }

    /// Where its default comes from.
    pub fn source(self) -> Source {
        match self {
            Self::Ber | Self::MinBits | Self::RcvErrorsPerBit => Source::Ibta,
            Self::PreFecBer => Source::Mlx5Counters,
            Self::PortRcvErrorsPerS | Self::XmitWaitTicks => Source::InfinibandDiags,
            Self::LinkErrorRecoveryPerMin => Source::Nvsentinel,
            Self::DipFraction | Self::TcpRetransFraction | Self::TemperatureRiseC => {
                Source::Linerate
            }
        }
    }

    /// Its value in `jp`.
    pub fn get(self, jp: &JudgeParams) -> f64 {
        match self {
            Self::Ber => jp.ber,
            Self::PreFecBer => jp.pre_fec_ber,
            Self::MinBits => jp.min_bits,
            Self::RcvErrorsPerBit => jp.rcv_errors_per_bit,
            Self::PortRcvErrorsPerS => jp.port_rcv_errors_per_s,
            Self::LinkErrorRecoveryPerMin => jp.link_error_recovery_per_min,
            Self::XmitWaitTicks => jp.xmit_wait_ticks as f64,
            Self::DipFraction => jp.dip_fraction,
            Self::TcpRetransFraction => jp.tcp_retrans_fraction,
            Self::TemperatureRiseC => jp.temperature_rise_c,
        }
    }

    fn put(self, jp: &mut JudgeParams, v: f64) {
        match self {
            Self::Ber => jp.ber = v,
            Self::PreFecBer => jp.pre_fec_ber = v,
            Self::MinBits => jp.min_bits = v,
            Self::RcvErrorsPerBit => jp.rcv_errors_per_bit = v,
            Self::PortRcvErrorsPerS => jp.port_rcv_errors_per_s = v,
            Self::LinkErrorRecoveryPerMin => jp.link_error_recovery_per_min = v,
            Self::XmitWaitTicks => jp.xmit_wait_ticks = v as u64,
            Self::DipFraction => jp.dip_fraction = v,
            Self::TcpRetransFraction => jp.tcp_retrans_fraction = v,
            Self::TemperatureRiseC => jp.temperature_rise_c = v,
        }
    }

    /// A value for people: `1e-12`, `3e12`, `1000`, `0.9`.
    pub fn fmt_value(self, v: f64) -> String {
        match self {
            Self::Ber | Self::PreFecBer | Self::RcvErrorsPerBit | Self::MinBits => format!("{v:e}"),
            _ => linerate_units::fmt_num(v),
        }
    }

    /// `v` if it is in range; else what is expected, naming the threshold.
    pub fn check(self, v: f64) -> Result<f64, String> {
        if self.range().accepts(v) {
            Ok(v)
        } else {
            Err(format!(
                "{self} is {v}: expected {} ({}; default {})",
                self.range().words(),
                self.meaning(),
                self.fmt_value(self.default_value())
            ))
        }
    }

    /// Parses `NAME=VALUE` (one `--threshold`), checked against the threshold's range.
    pub fn parse_assignment(s: &str) -> Result<(Threshold, f64), String> {
        let Some((name, value)) = s.split_once('=') else {
            return Err(format!(
                "`{s}`: expected NAME=VALUE, NAME one of {}",
                Self::names()
            ));
        };
        let t: Threshold = name.trim().parse().map_err(|_| {
            format!(
                "`{}` is no threshold: expected one of {}",
                name.trim(),
                Self::names()
            )
        })?;
        let v: f64 = value.trim().parse().map_err(|_| {
            format!(
                "{t}: `{}` is not a number (expected {}; default {})",
                value.trim(),
                t.range().words(),
                t.fmt_value(t.default_value())
            )
        })?;
        t.check(v).map(|v| (t, v))
    }

    fn names() -> String {
        Self::ALL
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn default_rcv_errors_per_bit() -> f64 {
    RCV_ERRORS_PER_BIT
}

fn default_temperature_rise_c() -> f64 {
    TEMPERATURE_RISE_C
}

fn default_tcp_retrans_fraction() -> f64 {
    TCP_RETRANS_FRACTION
}

/// The thresholds the judge used; in the document so a verdict can be checked by hand. One
/// field per [`Threshold`], named as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeParams {
    pub ber: f64,
    pub pre_fec_ber: f64,
    pub min_bits: f64,
    /// Absent from documents written before it existed: the default then.
    #[serde(default = "default_rcv_errors_per_bit")]
    pub rcv_errors_per_bit: f64,
    pub port_rcv_errors_per_s: f64,
    pub link_error_recovery_per_min: f64,
    pub xmit_wait_ticks: u64,
    pub dip_fraction: f64,
    /// Absent from documents written before it existed: the default then.
    #[serde(default = "default_tcp_retrans_fraction")]
    pub tcp_retrans_fraction: f64,
    /// Absent from documents written before it existed: the default then.
    #[serde(default = "default_temperature_rise_c")]
    pub temperature_rise_c: f64,
}

impl Default for JudgeParams {
    fn default() -> Self {
        Self {
            ber: BER,
            pre_fec_ber: PRE_FEC_BER,
            min_bits: MIN_BITS,
            rcv_errors_per_bit: RCV_ERRORS_PER_BIT,
            port_rcv_errors_per_s: PORT_RCV_ERRORS_PER_S,
            link_error_recovery_per_min: LINK_ERROR_RECOVERY_PER_MIN,
            xmit_wait_ticks: XMIT_WAIT_TICKS,
            dip_fraction: DIP_FRACTION,
            tcp_retrans_fraction: TCP_RETRANS_FRACTION,
            temperature_rise_c: TEMPERATURE_RISE_C,
        }
    }
}

impl JudgeParams {
    /// Sets one threshold, if `v` is in its range.
    pub fn set(&mut self, t: Threshold, v: f64) -> Result<(), String> {
        t.put(self, t.check(v)?);
        Ok(())
    }

    /// The defaults with each of `set` (the operator's, from `--threshold NAME=VALUE`, given
    /// at most once each) set; an error names a threshold given twice, or one out of its range
    /// and what it expects. `linerate soak` and `linerate watch` take the same flag.
    pub fn from_set(set: &[(Threshold, f64)]) -> Result<Self, String> {
        let mut jp = Self::default();
        let mut given = Vec::new();
        for (t, v) in set {
            if given.contains(t) {
                return Err(format!("{t} is given twice: give each threshold once"));
            }
            given.push(*t);
            jp.set(*t, *v)?;
        }
        Ok(jp)
    }

    /// Every threshold in its range, or an error naming the first that is not and what it
    /// expects.
    pub fn check(&self) -> Result<(), String> {
        for t in Threshold::ALL {
            t.check(t.get(self))?;
        }
        Ok(())
    }

    /// The thresholds that differ from their defaults (the operator's), in [`Threshold::ALL`]
    /// order.
    pub fn changed(&self) -> Vec<Threshold> {
        Threshold::ALL
            .iter()
            .copied()
            .filter(|t| t.get(self) != t.default_value())
            .collect()
    }

    /// The floor of a budget at `rate` errors per bit: `min_bits` × `rate` (3 at the defaults).
    pub fn floor(&self, rate: f64) -> f64 {
        self.min_bits * rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_threshold_and_its_range() {
        assert_eq!(JudgeParams::default().check(), Ok(()));
        let bad = |f: fn(&mut JudgeParams)| {
            let mut p = JudgeParams::default();
            f(&mut p);
            p.check().unwrap_err()
        };
        assert!(bad(|p| p.ber = 0.0).starts_with("ber is 0: expected a ratio above 0"));
        assert!(bad(|p| p.pre_fec_ber = f64::NAN).starts_with("pre_fec_ber is NaN"));
        assert!(bad(|p| p.min_bits = -1.0).starts_with("min_bits is -1"));
        assert!(bad(|p| p.port_rcv_errors_per_s = f64::INFINITY).starts_with("port_rcv_errors"));
        assert!(bad(|p| p.dip_fraction = 1.5).contains("expected a fraction"));
        assert!(bad(|p| p.rcv_errors_per_bit = 1.0).contains("default 1e-12"));
    }

    #[test]
    fn the_operators_set_once_each_and_in_range() {
        let jp =
            JudgeParams::from_set(&[(Threshold::MinBits, 1e9), (Threshold::Ber, 1e-13)]).unwrap();
        assert_eq!((jp.min_bits, jp.ber), (1e9, 1e-13));
        assert_eq!(jp.changed(), [Threshold::Ber, Threshold::MinBits]);
        assert_eq!(JudgeParams::from_set(&[]), Ok(JudgeParams::default()));
        let twice = JudgeParams::from_set(&[(Threshold::MinBits, 1.0), (Threshold::MinBits, 2.0)]);
        assert_eq!(
            twice.unwrap_err(),
            "min_bits is given twice: give each threshold once"
        );
        let e = JudgeParams::from_set(&[(Threshold::DipFraction, 2.0)]).unwrap_err();
        assert!(e.starts_with("dip_fraction"), "{e}");
    }

    #[test]
    fn assignments_parse_and_refuse_with_the_name_and_range() {
        assert_eq!(
            Threshold::parse_assignment("rcv_errors_per_bit=1e-10"),
            Ok((Threshold::RcvErrorsPerBit, 1e-10))
        );
        assert_eq!(
            Threshold::parse_assignment(" xmit_wait_ticks = 5000 "),
            Ok((Threshold::XmitWaitTicks, 5000.0))
        );
        let e = Threshold::parse_assignment("xmit_wait_ticks=1.5").unwrap_err();
        assert!(
            e.starts_with("xmit_wait_ticks is 1.5: expected a whole number"),
            "{e}"
        );
        let e = Threshold::parse_assignment("port_rcv_errors_per_s=-3").unwrap_err();
        assert!(
            e.contains("port_rcv_errors_per_s is -3: expected a number, 0 or more"),
            "{e}"
        );
        let e = Threshold::parse_assignment("ber=often").unwrap_err();
        assert!(e.starts_with("ber: `often` is not a number"), "{e}");
        let e = Threshold::parse_assignment("speed=3").unwrap_err();
        assert!(
            e.contains("`speed` is no threshold: expected one of ber, pre_fec_ber"),
            "{e}"
        );
        let e = Threshold::parse_assignment("ber").unwrap_err();
        assert!(e.contains("expected NAME=VALUE"), "{e}");
    }

    #[test]
    fn set_get_and_changed_agree_for_every_threshold() {
        for t in Threshold::ALL {
            let mut jp = JudgeParams::default();
            assert_eq!(t.get(&jp), t.default_value(), "{t}");
            assert!(t.range().accepts(t.default_value()), "{t}");
            // A value in range that differs from the default: half the default, or 0.5.
            let v = if t.default_value() > 1.0 {
                (t.default_value() / 2.0).round()
            } else {
                t.default_value() / 2.0
            };
            jp.set(*t, v).unwrap();
            assert_eq!(t.get(&jp), v, "{t}");
            assert_eq!(jp.changed(), [*t]);
            assert!(jp.set(*t, f64::NAN).is_err(), "{t}");
            assert!(!t.meaning().is_empty());
        }
        assert_eq!(JudgeParams::default().floor(BER), 3.0);
    }
}
