//! The final document of a soak (`schemas/soak.schema.json`) and the lines of its
//! `--json-stream` (`schemas/soak-event.schema.json`). Field names are a contract.

// The document header every JSON document of linerate carries.
use linerate_facts::Tool;
use serde::{Deserialize, Serialize};

use crate::thresholds::{JudgeParams, Threshold};
use crate::tracker::{IntervalRecord, Reset, Saturation, Tracker};
use crate::verdict::{RuleId, Source, Unit, Verdict, VerdictRule};
use linerate_facts::CounterSource;
use linerate_proto::soak::{End, SoakPortKind};

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
    /// The limit that applied, in `unit`: the rule fires above it (for `insufficient_traffic`,
    /// below it). For a budget this is the effective limit, the floor included.
    pub threshold: Option<f64>,
    pub unit: Unit,
    /// The value is a lower bound (a counter saturated, was reset or went unread).
    pub at_least: bool,
    pub text: String,
}

/// A threshold rule the judge evaluated on a port, fired or not: the figure it compared and
/// the limit that applied, in `unit`. The rule fires exactly when `value > limit`; a rule that
/// does not apply to the port (symbol errors on PAM4, congestion while an error counter moved)
/// has no check. The text file exports these as `linerate_soak_check_value` and `_limit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub rule: RuleId,
    /// The rule's verdict when it fires (`clean`: a note).
    pub verdict: Verdict,
    /// The counter compared, when one was.
    pub counter: Option<String>,
    pub value: f64,
    pub limit: f64,
    pub unit: Unit,
    pub fired: bool,
}

/// The `symbol_error` budget of an InfiniBand port at the `ber` threshold (1e-12).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymbolBudget {
    /// Signalling rate × 3600 × BER: the budget before the floor.
    pub per_hour: f64,
    /// The signalling rate it was computed from; `None` when NVSentinel's fixed 120/h stood in.
    pub signalling_gbps: Option<f64>,
    /// PAM4 with FEC (HDR, NDR, XDR): raw symbol errors are normal and not judged alone.
    pub pam4: bool,
    /// The fewest errors any soak may call over budget: `min_bits` × `ber` (3).
    pub floor: f64,
    /// The limit that applied over the time `symbol_error` was observed: the larger of
    /// `per_hour` and `floor` spread over that time. `None` where it was not judged (PAM4, or
    /// never observed over an interval).
    pub limit_per_hour: Option<f64>,
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
    /// The port's data rate × time: the engines received more than the port can carry, and
    /// are credited at most that.
    DataRate,
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
    /// `delta` is a lower bound (saturated, reset or unread for a while).
    pub at_least: bool,
    /// Seconds over which an increase was visible: rates are over this.
    pub observed_s: f64,
    /// The increase within them.
    pub observed_delta: u64,
    /// `observed_delta` and the rates are lower bounds: the counter saturated while observed.
    pub observed_at_least: bool,
    /// `observed_delta` per second and per hour of `observed_s`.
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
    /// The shortest time any judged error counter of the port was observed (at most
    /// `duration_s`): "no errors" holds over this, and the bits for it are
    /// `bits_received` × `observed_s` ÷ `duration_s`.
    pub observed_s: f64,
    pub bits_received: f64,
    pub bits_basis: BitsBasis,
    /// The port's data rate (signalling × line code), Gb/s: the most engine traffic it is
    /// credited with. `None` where the port does not say.
    pub data_gbps: Option<f64>,
    pub symbol_budget: Option<SymbolBudget>,
    pub ber: Option<BerEstimate>,
    /// Health counters that moved, saturated or were reset, and the judged ones even at 0.
    pub counters: Vec<CounterOut>,
    /// Every threshold rule evaluated on the port, with its figure and limit.
    pub checks: Vec<Check>,
    pub findings: Vec<SoakFinding>,
    pub verdict: Verdict,
    /// The rule of the worst finding (`clean` when none fired).
    pub rule: VerdictRule,
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
    /// TCP segments this host sent over the soak (`TcpOutSegs`, host-wide), when both ends of
    /// every sample read it: the basis of `tcp_retransmits`' share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_out_segs: Option<u64>,
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
    /// The thresholds that differ from their defaults (set by the operator).
    pub thresholds_set: Vec<Threshold>,
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
    pub rule: VerdictRule,
    /// Why the soak stopped early, when it did: what was measured until then is above.
    pub error: Option<String>,
    /// What `--ssh-copy` sent to the far end to run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub far_end_copy: Option<linerate_facts::FarEndCopy>,
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
