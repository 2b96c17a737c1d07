//! What one interval shows: every port's rates against its ceiling, its link, the error
//! counters that moved and soak's verdict over the window, and the link events seen. Plain
//! data, serialized as is for `--json-stream` (`schemas/watch-stream.schema.json`); field
//! names are a contract.

use linerate_model::LimitedBy;
use linerate_proto::soak::CounterSource;
use linerate_soak::{RuleId, Verdict, VerdictRule};
use serde::{Deserialize, Serialize};

use crate::changes::LinkChange;
use crate::port::{PortId, WatchKind};

/// Which counters a port's rates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountedFrom {
    /// InfiniBand's `port_{rcv,xmit}_{data,packets}` (data × 4: the PMA counts octets ÷ 4):
    /// everything the port carried, RDMA included.
    IbCounters,
    /// The netdev's `statistics/{rx,tx}_{bytes,packets}`: what went through the kernel's stack.
    NetdevStatistics,
}

/// One interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    /// The sample that closed the interval (from 1; the first sample opens the first one).
    pub seq: u64,
    /// Seconds since the watch began, on the monotonic clock.
    pub t_s: f64,
    /// The wall clock, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The interval's length, seconds (0 for the first sample, which has no rates yet).
    pub interval_s: f64,
    /// Seconds of samples the window's verdicts are judged over.
    pub window_s: f64,
    pub ports: Vec<PortFrame>,
    /// Link events seen at this sample.
    pub changes: Vec<LinkChange>,
    /// Problems reading the counters at this sample (a file that vanished, a garbage value).
    pub problems: Vec<String>,
}

/// One port in one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortFrame {
    #[serde(flatten)]
    pub id: PortId,
    pub name: String,
    pub netdev: Option<String>,
    pub kind: WatchKind,
    /// The link can pass traffic.
    pub up: bool,
    pub state: String,
    /// The link's rate as the port reports it (`4X EDR`, `25GbE`).
    pub link: Option<String>,
    /// The PCIe link data crosses (`PCIe 3.0 x8`).
    pub pcie: Option<String>,
    pub numa_node: Option<u32>,
    pub counted_from: Option<CountedFrom>,
    /// Gb/s (10^9 bit/s) received and sent in the interval, headers included as the port
    /// counts them; `None` without counters (or before the first interval).
    pub rx_gbps: Option<f64>,
    pub tx_gbps: Option<f64>,
    /// Packets per second.
    pub rx_pps: Option<f64>,
    pub tx_pps: Option<f64>,
    /// A data counter was at its maximum (32-bit InfiniBand counters stop there): the rate
    /// shown is a lower bound, or none.
    pub rate_saturated: bool,
    /// Gb/s the hardware carries one way, from the ceiling chain; `None` without one.
    pub ceiling_gbps: Option<f64>,
    /// The stage that sets it.
    pub limited_by: LimitedBy,
    /// The larger direction's rate over the ceiling (1 = at the ceiling).
    pub utilisation: Option<f64>,
    /// Health counters (errors, drops, recoveries, link downs, congestion) that moved,
    /// saturated or were reset in this interval.
    pub moved: Vec<Moved>,
    /// soak's verdict over the window, on a port whose health counters moved in it.
    pub window: Option<WindowMark>,
    /// The latest link event of this port.
    pub last_change: Option<LinkChange>,
}

impl PortFrame {
    /// The larger of the two directions, Gb/s.
    pub fn peak_gbps(&self) -> Option<f64> {
        peak_gbps(self.rx_gbps, self.tx_gbps)
    }
}

/// The larger of two directions' rates, or the one known.
pub(crate) fn peak_gbps(rx: Option<f64>, tx: Option<f64>) -> Option<f64> {
    match (rx, tx) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A health counter in one interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Moved {
    pub source: CounterSource,
    pub counter: String,
    /// The increase counted (after a reset, the value read: counted since the reset).
    pub delta: u64,
    /// It reached its maximum in this interval: it counts no further.
    pub saturated: bool,
    /// It went down: reset by someone else (`perfquery -R`, a driver reload). No burst.
    pub reset: bool,
}

/// soak's judgement of a port over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowMark {
    pub verdict: Verdict,
    pub rule: VerdictRule,
    /// Seconds judged.
    pub span_s: f64,
    /// The health counters that moved in the window.
    pub counters: Vec<WindowCounter>,
    /// What the rules said (those that fired, and the notes).
    pub findings: Vec<WindowFinding>,
}

/// One health counter over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowCounter {
    pub source: CounterSource,
    pub counter: String,
    /// The increase over the window (a lower bound when `at_least`).
    pub increase: u64,
    pub at_least: bool,
    /// At its maximum now.
    pub saturated: bool,
    /// Resets by someone else in the window.
    pub resets: u64,
}

/// One finding of soak's rules over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowFinding {
    pub rule: RuleId,
    pub verdict: Verdict,
    pub text: String,
}

/// One counter of a port with its rate, for the detail pane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRate {
    pub source: CounterSource,
    pub counter: String,
    /// The raw value last read.
    pub value: u64,
    /// Increase in the last interval.
    pub delta: u64,
    pub per_s: Option<f64>,
    /// A health counter (errors, drops, recoveries, congestion), not traffic.
    pub health: bool,
    pub saturated: bool,
    pub reset: bool,
}
