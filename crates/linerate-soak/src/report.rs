//! The final document of a soak (`schemas/soak.schema.json`) and the lines of its
//! `--json-stream` (`schemas/soak-event.schema.json`). Field names are a contract.

// The document header every JSON document of linerate carries.
use linerate_facts::Tool;
use serde::{Deserialize, Serialize};

use crate::tracker::{IntervalRecord, Reset, Saturation, Tracker};
use crate::verdict::{RuleId, Source, Verdict};
use linerate_proto::soak::{CounterSource, End, SoakPortKind};

/// Named defaults of the judge's thresholds (sources in `docs/soak.md`).
pub mod defaults {
    /// The IBTA's bit error rate: fewer than one error per 10^12 bits.
    pub const BER: f64 = 1e-12;
    /// Bits a port must receive before its error budget can be judged: three budgets' worth at
    /// BER 1e-12, so that "no errors" means something.
    pub const MIN_BITS: f64 = 3e12;
    /// `port_rcv_errors` per second (IBswcountlimits.pm, NVSentinel's "degraded").
    pub const PORT_RCV_ERRORS_PER_S: f64 = 10.0;
    /// `link_error_recovery` per minute (NVSentinel).
    pub const LINK_ERROR_RECOVERY_PER_MIN: f64 = 5.0;
    /// `port_xmit_wait` ticks over the soak (infiniband-diags `error_thresholds`
    /// PortXmitWait=1000).
    pub const XMIT_WAIT_TICKS: u64 = 1000;
    /// NVSentinel's fixed `symbol_error` budget per hour, used where the signalling rate is
    /// unknown (the IBTA budget at about 33 Gb/s).
    pub const NVSENTINEL_SYMBOL_ERRORS_PER_HOUR: f64 = 120.0;
    /// An interval below this fraction of the soak's median throughput is a dip.
    pub const DIP_FRACTION: f64 = 0.9;
    /// Dips listed in the document (the count goes on).
    pub const MAX_DIPS: usize = 1000;
}

/// The thresholds the judge used; in the document so a verdict can be checked by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeParams {
    pub ber: f64,
    pub pre_fec_ber: f64,
    pub min_bits: f64,
    pub port_rcv_errors_per_s: f64,
    pub link_error_recovery_per_min: f64,
    pub xmit_wait_ticks: u64,
    pub dip_fraction: f64,
}

impl Default for JudgeParams {
    fn default() -> Self {
        Self {
            ber: defaults::BER,
            pre_fec_ber: defaults::BER,
            min_bits: defaults::MIN_BITS,
            port_rcv_errors_per_s: defaults::PORT_RCV_ERRORS_PER_S,
            link_error_recovery_per_min: defaults::LINK_ERROR_RECOVERY_PER_MIN,
            xmit_wait_ticks: defaults::XMIT_WAIT_TICKS,
            dip_fraction: defaults::DIP_FRACTION,
        }
    }
}

impl JudgeParams {
    /// Thresholds an operator set: each a finite number in its range, or an error naming the
    /// field and what it expects.
    pub fn check(&self) -> Result<(), String> {
        let probability = [("ber", self.ber), ("pre_fec_ber", self.pre_fec_ber)];
        for (name, v) in probability {
            if !(v.is_finite() && v > 0.0 && v < 1.0) {
                return Err(format!(
                    "{name} is {v}: expected a bit error rate between 0 and 1, like 1e-12"
                ));
            }
        }
        let positive = [
            ("min_bits", self.min_bits),
            ("port_rcv_errors_per_s", self.port_rcv_errors_per_s),
            (
                "link_error_recovery_per_min",
                self.link_error_recovery_per_min,
            ),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} is {v}: expected a number >= 0"));
            }
        }
        if !(self.dip_fraction.is_finite() && self.dip_fraction > 0.0 && self.dip_fraction <= 1.0) {
            return Err(format!(
                "dip_fraction is {}: expected a fraction of the median in (0, 1], like 0.9",
                self.dip_fraction
            ));
        }
        Ok(())
    }
}

/// What the soak was asked to do (filled by the command).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SoakParams {
    /// The server, `host:port`; `None` for `--passive`.
    pub host: Option<String>,
    pub duration_s: f64,
    pub interval_s: f64,
    pub passive: bool,
    pub rdma: bool,
    pub both_ways: bool,
}

/// One rule that fired on a port, with its numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakFinding {
    pub rule: RuleId,
    pub verdict: Verdict,
    pub source: Source,
    /// The counter the rule read, when it read one.
    pub counter: Option<String>,
    /// The observed figure in `unit`.
    pub value: Option<f64>,
    /// The rule's threshold in `unit` (the rule fires above it).
    pub threshold: Option<f64>,
    /// `count`, `per_s`, `per_min`, `per_hour`, `ber` or `bits`.
    pub unit: String,
    /// The value is a lower bound (a counter saturated or was reset).
    pub at_least: bool,
    pub text: String,
}

/// The `symbol_error` budget of an InfiniBand port at BER 1e-12.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymbolBudget {
    pub per_hour: f64,
    /// The signalling rate it was computed from; `None` when NVSentinel's fixed 120/h stood in.
    pub signalling_gbps: Option<f64>,
    /// PAM4 with FEC (HDR, NDR, XDR): raw symbol errors are normal and not judged alone.
    pub pam4: bool,
}

/// Error rates over bits. `estimate` is true where the bit count is rate × time (no
/// `rx_bits_phy`), or where the errors count symbols rather than bits (InfiniBand).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BerEstimate {
    /// Corrected bits over bits: the pre-FEC BER (Ethernet with FEC statistics).
    pub pre_fec: Option<f64>,
    /// Uncorrected symbol errors (Ethernet) or `symbol_error` (InfiniBand) over bits.
    pub post_fec: Option<f64>,
    pub bits: f64,
    pub estimate: bool,
}

/// How the bits a port received were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BitsBasis {
    /// ethtool `rx_bits_phy`.
    RxBitsPhy,
    /// InfiniBand `port_rcv_data` × 32 (octets ÷ 4).
    PortRcvData,
    /// The netdev's `rx_bytes` × 8.
    RxBytes,
    /// The bytes this end's traffic engines received × 8 (no port counter).
    Engine,
}

/// One counter of one port over the soak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterOut {
    pub source: CounterSource,
    pub name: String,
    /// `4`, `8`, `16`, `32`, `64` or `32/64`.
    pub width: String,
    pub first: u64,
    pub last: u64,
    pub delta: u64,
    /// `delta` is a lower bound (saturated or reset).
    pub at_least: bool,
    pub per_s: Option<f64>,
    pub per_hour: Option<f64>,
    pub intervals_moved: u64,
    pub saturations: Vec<Saturation>,
    pub saturated_now: bool,
    pub resets: Vec<Reset>,
    pub resets_total: u64,
}

/// One port of one end, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortReport {
    pub device: String,
    pub port: String,
    pub netdev: Option<String>,
    pub kind: SoakPortKind,
    pub duration_s: f64,
    pub bits_received: f64,
    pub bits_basis: BitsBasis,
    pub symbol_budget: Option<SymbolBudget>,
    pub ber: Option<BerEstimate>,
    /// Health counters that moved, saturated or were reset, and the judged ones even at 0.
    pub counters: Vec<CounterOut>,
    pub findings: Vec<SoakFinding>,
    pub verdict: Verdict,
    /// The rule of the worst finding (`clean` when none fired).
    pub rule: String,
}

/// One end over the soak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndReport {
    pub end: End,
    pub samples: u64,
    pub samples_ignored: u64,
    pub duration_s: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Mean and median of the intervals, both directions through this end, Gb/s.
    pub mean_gbps: f64,
    pub median_gbps: f64,
    pub tcp_retrans: Option<u64>,
    pub ports: Vec<PortReport>,
    pub problems: Vec<String>,
    pub problems_total: u64,
    pub verdict: Verdict,
}

/// A health counter that moved in one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovedOut {
    pub device: String,
    pub port: String,
    pub name: String,
    pub delta: u64,
    pub saturated: bool,
    pub reset: bool,
}

/// One interval of one end: the timeline and the `interval` stream event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakInterval {
    pub end: End,
    pub seq: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub gbps: f64,
    pub tcp_retrans: Option<u64>,
    pub moved: Vec<MovedOut>,
    pub moved_dropped: u32,
}

impl SoakInterval {
    /// The record with its counters named.
    pub fn new(tracker: &Tracker, r: &IntervalRecord) -> Self {
        let moved = r
            .moved
            .iter()
            .filter_map(|m| {
                let c = tracker.counter(m.counter)?;
                Some(MovedOut {
                    device: c.key.device.clone(),
                    port: c.key.port.clone(),
                    name: c.key.name.clone(),
                    delta: m.delta,
                    saturated: m.saturated,
                    reset: m.reset,
                })
            })
            .collect();
        Self {
            end: r.end,
            seq: r.seq,
            start_s: r.start_s,
            end_s: r.end_s,
            bytes_sent: r.bytes_sent,
            bytes_received: r.bytes_received,
            gbps: r.gbps(),
            tcp_retrans: r.tcp_retrans,
            moved,
            moved_dropped: r.moved_dropped,
        }
    }
}

impl Tracker {
    /// [`Tracker::push`], with the interval it closed named for the live line and the
    /// `interval` stream event.
    pub fn push_interval(&mut self, s: &linerate_proto::soak::SoakSample) -> Option<SoakInterval> {
        let r = self.push(s)?.clone();
        Some(SoakInterval::new(self, &r))
    }
}

/// An interval below `dip_fraction` of its end's median throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dip {
    pub end: End,
    pub seq: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub gbps: f64,
    pub median_gbps: f64,
    /// The health counters of this end that moved in the same interval (the two ends' clocks
    /// are not compared).
    pub moved: Vec<MovedOut>,
}

/// The final document of `linerate soak --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakReport {
    pub schema_version: u32,
    pub tool: Tool,
    pub params: SoakParams,
    pub thresholds: JudgeParams,
    /// The longer of the two ends' sampled spans.
    pub duration_s: f64,
    /// As the local end counted them (the remote end's are in `ends`; a passive soak has
    /// only the local end).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub ends: Vec<EndReport>,
    pub dips: Vec<Dip>,
    pub dips_total: u64,
    pub timeline: Vec<SoakInterval>,
    pub verdict: Verdict,
    /// The rule behind the overall verdict (`clean` when none fired).
    pub rule: String,
    /// Why the soak stopped early, when it did: what was measured until then is above.
    pub error: Option<String>,
}

impl SoakReport {
    /// One port's report.
    pub fn port(&self, end: End, device: &str, port: &str) -> Option<&PortReport> {
        self.ends
            .iter()
            .filter(|e| e.end == end)
            .flat_map(|e| &e.ports)
            .find(|p| p.device == device && p.port == port)
    }
}

/// One line of `linerate soak --json-stream`, tagged by `event`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SoakEvent<'a> {
    /// The soak starts: what it will do, with which thresholds.
    Start {
        schema_version: u32,
        tool: Tool,
        params: &'a SoakParams,
        thresholds: &'a JudgeParams,
    },
    /// One interval of one end.
    Interval { interval: &'a SoakInterval },
    /// The soak could not go on; the `end` line follows with what was measured.
    Error { error: String },
    /// The final document (`soak --json`'s); the last line.
    End { report: &'a SoakReport },
}

impl SoakEvent<'_> {
    /// The event as one line of JSON (no newline).
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_params_check_names_the_field() {
        assert_eq!(JudgeParams::default().check(), Ok(()));
        let bad = |f: fn(&mut JudgeParams)| {
            let mut p = JudgeParams::default();
            f(&mut p);
            p.check().unwrap_err()
        };
        assert!(bad(|p| p.ber = 0.0).starts_with("ber is 0"));
        assert!(bad(|p| p.pre_fec_ber = f64::NAN).starts_with("pre_fec_ber is NaN"));
        assert!(bad(|p| p.min_bits = -1.0).starts_with("min_bits is -1"));
        assert!(bad(|p| p.port_rcv_errors_per_s = f64::INFINITY).starts_with("port_rcv_errors"));
        assert!(bad(|p| p.dip_fraction = 1.5).contains("expected a fraction"));
    }
}
