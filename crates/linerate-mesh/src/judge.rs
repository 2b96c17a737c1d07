//! The verdicts of a cluster run: per directed link, per node (as sender and as receiver
//! separately).
//!
//! Judging takes two steps. The rounds name the *suspects*: every link is compared with the
//! fleet's reference (the upper quartile of all links measured cleanly in their rounds: robust
//! while fewer than three quarters of the links are bad), and a node is suspected by its row
//! (its links as sender) and its column (as receiver) on their own: a node slow both ways makes
//! every link it is on slow in both directions, and its healthy peers must not be blamed for
//! that, so a node is suspected only when its links to peers not already explained by another
//! node are bad too (see [`attribute`]). Then the retests alone ([`retest_plan`]) decide: a
//! suspect is confirmed (`slow`, `lossy`, a degraded node) only by a retest of its own that
//! ran clean, on hosts whose CPU other programs did not hold ([`LOAD_MIN_OTHER_CORES`]); one
//! fine alone was contention (and a node fine alone clears every link it was blamed for); one
//! whose retest could not run, failed or ran under load stays `unconfirmed`, with the reason.
//! Links of a lost rank are `unreachable` or `cut_short`, never a cable or a node.

use std::collections::{BTreeMap, BTreeSet};

use linerate_units::{fmt_sig, r3};
use serde::{Deserialize, Serialize};

use crate::fleet::{fmt_rate, others_phrase, FleetAttribute, FleetFinding, FleetId};
use crate::types::{HostLoad, LinkMeasurement, MeshLatency, NodeFacts, Phase, RankId, Transport};

pub use crate::retest::retest_plan;

/// The fleet's reference rate is this quantile of every link measured in its round: the
/// upper quartile, not the median. The median fails as soon as half the links are bad, and
/// that is common: one node slow both ways spoils 2(n−1) of the n(n−1) links, two thirds of
/// them at n = 3, half at n = 4; the four faults of the 8-node test (one node slow both ways,
/// one slow sending, one slow receiving, one dead) spoil half the links measured. The upper
/// quartile stays on the healthy links while fewer than three quarters are bad, and unlike the
/// best link (ClusterKit's reference) it is not one lucky sample.
pub const REFERENCE_QUANTILE: f64 = 0.75;

/// A link below this fraction of the reference is slow. ClusterKit flags a pair below 93 % of
/// the *best* pair; we use 80 % of the upper quartile: the best pair is one sample (on shared
/// cores or a busy fabric it is the luckiest, not the typical, link), and single-stream TCP
/// goodput varies by several percent between healthy pairs, which 93 % would report as faults.
/// The faults worth a ticket are coarse: a PCIe link trained at half its width halves the
/// rate, FDR running at QDR loses 41 %, 25 GbE at 10 GbE 60 %, and a node shaped to 300 Mbit/s
/// among 1 Gbit/s links (healthy ones measure ~0.94 Gb/s) runs at 32 %.
pub const SLOW_FRACTION: f64 = 0.80;

/// A node is degraded in a direction when at least this fraction of its links in that
/// direction, to peers not already degraded in the opposite direction, are bad...
pub const NODE_BAD_FRACTION: f64 = 0.5;

/// ...and at least this many of its links in that direction are bad: one bad link between two
/// nodes cannot tell which end (or the cable) is at fault, so it stays a link verdict.
pub const MIN_BAD_PEERS: usize = 2;

/// A link whose ping-pong p50 exceeds this multiple of the median p50 is slow. ClusterKit uses
/// 2.1 × the lowest; the lowest is again one lucky sample, and ping-pong p50 on shared cores
/// moves with scheduling, so we leave more room above the typical pair.
pub const LATENCY_FACTOR: f64 = 3.0;

/// A link is lossy when its sender retransmitted more than [`LOSSY_FACTOR`] × the median
/// retransmits of all links, and more than [`LOSSY_MIN_RETRANSMITS`]: TCP retransmits a little
/// on every busy path (shapers and switch buffers drop at the edge of the window), so only a
/// link far above its fleet is losing packets on the wire.
pub const LOSSY_FACTOR: f64 = 10.0;
pub const LOSSY_MIN_RETRANSMITS: u64 = 100;
/// ...and, when the test's length is known, at least this share of the packets it sent: a
/// tenth of a percent of loss already costs single-stream TCP much of its rate on a fast path,
/// while shapers and full switch buffers on healthy paths stay well below it.
pub const LOSSY_MIN_RATE: f64 = 0.001;

/// Over TCP, a latency outlier must also exceed the median by this much (µs): on shared cores
/// a ping-pong through the kernel moves by tens of microseconds with scheduling alone. Not
/// applied over RDMA, where a few microseconds are the signal.
pub const LATENCY_MIN_EXCESS_US: f64 = 50.0;

/// When the reference rate runs below this fraction of the median pair ceiling, the fleet gets a
/// finding: the limit is common to all nodes (streams, CPU, buffers), not one node or cable.
pub const FLEET_CEILING_FRACTION: f64 = 0.5;

/// A retest ran under load when, on the sender's or the receiver's host, other programs (and
/// the hypervisor's steal) took at least this many cores over its round...
///
/// A quiet host's daemons take a few hundredths of a core. A single TCP stream keeps one
/// thread busy at each end; a quarter of a core taken from one of them is more than the 20 %
/// ([`SLOW_FRACTION`]) that makes a link slow, so a slow figure measured then says nothing about
/// the link. On loopback, where both ends share the host, the stream needs two cores.
pub const LOAD_MIN_OTHER_CORES: f64 = 0.25;

/// ...while fewer than this many of the host's cores were idle: the CPU was full, so the test's
/// threads waited for it. Half a core idle means the test had room (a 64-core node running
/// another job beside it is not loaded for a single stream).
pub const LOAD_MAX_IDLE_CORES: f64 = 0.5;

/// Whether a host was loaded enough to explain a slow measurement: the CPU was full and other
/// programs held a share of it ([`LOAD_MIN_OTHER_CORES`], [`LOAD_MAX_IDLE_CORES`]). What the rank
/// itself used and waited for is reported, not judged: a stream between two hosts also needs the
/// kernel's network processing (softirq, `ksoftirqd`), which competes with the other programs
/// whatever the rank's own threads do, so a rank that barely waited can still have been slowed.
/// A fault a fact explains is confirmed all the same (see `grounded`).
pub fn is_loaded(l: &HostLoad) -> bool {
    l.other_cores + l.steal_cores >= LOAD_MIN_OTHER_CORES && l.idle_cores < LOAD_MAX_IDLE_CORES
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkStatus {
    Ok,
    /// Below [`SLOW_FRACTION`] of the reference (or latency above [`LATENCY_FACTOR`] × the
    /// median) in its round, and confirmed: by its own retest alone, or by the retest of the
    /// degraded node that explains it.
    Slow,
    /// Retransmits far above the fleet's, in its round and alone.
    Lossy,
    /// Nothing measured: a rank died, refused or never answered.
    Unreachable,
    /// A rate was measured, but the test ended with an error (the peer died, the connection
    /// was reset): the figure is not the link's.
    CutShort,
    /// Slow in its round, fine alone (or its slow end was fine alone against good peers): the
    /// fabric was oversubscribed.
    Contention,
    /// Slow in its round, and no clean retest could say whether it is the link, a node or the
    /// load: see [`Unconfirmed`].
    Unconfirmed,
}

impl LinkStatus {
    pub const ALL: [LinkStatus; 7] = [
        Self::Ok,
        Self::Slow,
        Self::Lossy,
        Self::Unreachable,
        Self::CutShort,
        Self::Contention,
        Self::Unconfirmed,
    ];

    /// As the text output and the JSON document say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Slow => "slow",
            Self::Lossy => "lossy",
            Self::Unreachable => "unreachable",
            Self::CutShort => "cut_short",
            Self::Contention => "contention",
            Self::Unconfirmed => "unconfirmed",
        }
    }

    /// What makes the run unhealthy. Contention is the fabric's and an unconfirmed suspect is
    /// not a finding: both are reported, neither fails the run.
    pub fn is_bad(self) -> bool {
        match self {
            Self::Slow | Self::Lossy | Self::Unreachable | Self::CutShort => true,
            Self::Ok | Self::Contention | Self::Unconfirmed => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Ok,
    TxDegraded,
    RxDegraded,
    Both,
    Unreachable,
    /// Suspected by its rounds, not confirmed alone (see [`Unconfirmed`]).
    Unconfirmed,
}

impl NodeStatus {
    pub const ALL: [NodeStatus; 6] = [
        Self::Ok,
        Self::TxDegraded,
        Self::RxDegraded,
        Self::Both,
        Self::Unreachable,
        Self::Unconfirmed,
    ];

    /// As the text output says it: `tx-degraded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::TxDegraded => "tx-degraded",
            Self::RxDegraded => "rx-degraded",
            Self::Both => "tx+rx-degraded",
            Self::Unreachable => "unreachable",
            Self::Unconfirmed => "unconfirmed",
        }
    }

    /// What makes the run unhealthy: a degraded or unreachable node.
    pub fn is_bad(self) -> bool {
        match self {
            Self::TxDegraded | Self::RxDegraded | Self::Both | Self::Unreachable => true,
            Self::Ok | Self::Unconfirmed => false,
        }
    }

    /// `tx`, `rx` or both degraded; `None` for neither.
    pub fn of(tx: bool, rx: bool) -> Option<Self> {
        match (tx, rx) {
            (false, false) => None,
            (true, false) => Some(Self::TxDegraded),
            (false, true) => Some(Self::RxDegraded),
            (true, true) => Some(Self::Both),
        }
    }

    /// Whether this verdict (or suspicion) covers `side`.
    pub fn covers(self, side: Side) -> bool {
        matches!(
            (self, side),
            (Self::Both, _) | (Self::TxDegraded, Side::Tx) | (Self::RxDegraded, Side::Rx)
        )
    }
}

/// A node's side of its links: as sender (its row of the matrix) or as receiver (its column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Tx,
    Rx,
}

impl Side {
    fn sending(self) -> &'static str {
        match self {
            Self::Tx => "sending",
            Self::Rx => "receiving",
        }
    }

    fn as_role(self) -> &'static str {
        match self {
            Self::Tx => "as sender",
            Self::Rx => "as receiver",
        }
    }
}

/// Why a suspect (a link or a node slow in its rounds) was neither confirmed nor cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unconfirmed {
    /// No retest alone ran: the retest phase's bound was spent, or the run ended first.
    NotRetested,
    /// Its retest alone measured nothing, or ended with an error.
    RetestFailed,
    /// Its retest ran while other programs held the CPU of one of its hosts
    /// ([`LOAD_MIN_OTHER_CORES`]) and came out slow: the load may explain it.
    Loaded,
    /// One of its ranks was lost: no retest could run.
    RankLost,
    /// Its ranks share one host's network stack (the same address, or loopback): the traffic
    /// never leaves the host, so its rate is that host's CPU and scheduling, shared with every
    /// rank and program there, never a link or a node of its own.
    SameHost,
}

impl Unconfirmed {
    pub const ALL: [Unconfirmed; 5] = [
        Self::NotRetested,
        Self::RetestFailed,
        Self::Loaded,
        Self::RankLost,
        Self::SameHost,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotRetested => "not_retested",
            Self::RetestFailed => "retest_failed",
            Self::Loaded => "loaded",
            Self::RankLost => "rank_lost",
            Self::SameHost => "same_host",
        }
    }
}

/// The node whose retest alone cleared a link slow in its round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cleared {
    pub rank: RankId,
    /// The side the node was suspected on.
    pub side: Side,
    /// Its retests alone against good peers on that side (median), Gb/s.
    pub retest_gbps: f64,
}

/// The verdict on one directed link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkVerdict {
    pub tx: RankId,
    pub rx: RankId,
    pub status: LinkStatus,
    /// Measured cleanly in its round(s) (median when measured more than once), Gb/s.
    pub gbps: Option<f64>,
    /// Measured alone in the retest phase (median of the clean retests), Gb/s.
    pub retest_gbps: Option<f64>,
    /// `gbps` over the fleet's reference (`reference_gbps`).
    pub fraction_of_reference: Option<f64>,
    /// The lower of the two ports' ceilings, Gb/s.
    pub ceiling_gbps: Option<f64>,
    pub latency: Option<MeshLatency>,
    pub latency_outlier: bool,
    pub retransmits: Option<u64>,
    /// Most flows that ran at the same time as this one in its round.
    pub concurrency: Option<u32>,
    /// The nodes that account for this link being bad: degraded ones, or, for an unconfirmed
    /// link, the suspected node whose retest could not decide.
    pub explained_by: Vec<RankId>,
    /// For contention: the suspected node whose retest alone cleared this link.
    pub cleared_by: Option<Cleared>,
    /// For an unconfirmed link: why.
    pub unconfirmed: Option<Unconfirmed>,
    /// Why a measurement of this link failed (the first error), if one did.
    pub error: Option<String>,
    pub explanation: String,
}

/// The verdict on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeVerdict {
    pub rank: RankId,
    pub host: String,
    /// How the reports name it: its host, or `host/rank` when several ranks share the host.
    pub label: String,
    pub status: NodeStatus,
    /// What its rounds suspected (`tx_degraded`, `rx_degraded`, `both`) when that differs from
    /// the verdict: cleared by its retest (`ok`), or unconfirmed.
    pub suspect: Option<NodeStatus>,
    /// For an unconfirmed node: why.
    pub unconfirmed: Option<Unconfirmed>,
    /// Median of its links as sender (its row) and as receiver (its column), Gb/s.
    pub tx_median_gbps: Option<f64>,
    pub rx_median_gbps: Option<f64>,
    /// Median of its retests alone against good peers, as sender and as receiver, Gb/s.
    pub retest_tx_gbps: Option<f64>,
    pub retest_rx_gbps: Option<f64>,
    pub bad_tx_links: u32,
    pub bad_rx_links: u32,
    pub explanation: String,
}

/// What the verdicts are drawn from.
#[derive(Debug, Clone, Copy)]
pub struct JudgeInput<'a> {
    pub size: u32,
    /// The facts of each rank that reported them (any order; missing ranks allowed).
    pub nodes: &'a [NodeFacts],
    pub measurements: &'a [LinkMeasurement],
    /// Ranks the coordinator lost (died, never arrived, stopped answering).
    pub lost: &'a [RankId],
    /// The fleet findings, to explain a degraded node.
    pub fleet: &'a [FleetFinding],
    /// Seconds each bandwidth test ran: with it, a link is lossy only when its retransmits
    /// are also a real share of its packets ([`LOSSY_MIN_RATE`]).
    pub duration_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    /// The fleet's reference: the upper quartile of all links measured cleanly in their rounds
    /// ([`REFERENCE_QUANTILE`]), Gb/s.
    pub reference_gbps: Option<f64>,
    pub links: Vec<LinkVerdict>,
    pub nodes: Vec<NodeVerdict>,
    /// Measurements set aside (ranks out of range, impossible figures), with why.
    pub notes: Vec<String>,
}

pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        f64::midpoint(v[m - 1], v[m])
    })
}

/// The `p` quantile (nearest rank) of the finite values.
pub(crate) fn quantile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = (p * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

/// One retest alone of a link.
#[derive(Debug, Clone)]
struct Alone {
    gbps: Option<f64>,
    error: Option<String>,
    latency: Option<MeshLatency>,
    retransmits: Option<u64>,
    /// The busier of its two hosts while it ran, and whose it is.
    load: Option<(RankId, HostLoad)>,
}

impl Alone {
    /// Its rate, when it ended cleanly.
    fn clean(&self) -> Option<f64> {
        self.gbps.filter(|_| self.error.is_none())
    }

    fn loaded(&self) -> bool {
        self.load.is_some_and(|(_, l)| is_loaded(&l))
    }
}

/// Everything measured on one directed link.
#[derive(Debug, Default)]
struct LinkData {
    /// Rates of the round measurements that ended cleanly.
    round: Vec<f64>,
    /// Rates of the round measurements that ended with an error.
    round_cut: Vec<f64>,
    /// A round measurement ended with an error or measured nothing.
    round_failed: bool,
    alone: Vec<Alone>,
    /// Every error, rounds and retests, in order.
    errors: Vec<String>,
    latency: Option<MeshLatency>,
    retransmits: Option<u64>,
    concurrency: Option<u32>,
    rdma: bool,
}

impl LinkData {
    fn nothing_measured(&self) -> bool {
        self.round.is_empty()
            && self.round_cut.is_empty()
            && self.alone.iter().all(|a| a.gbps.is_none())
    }
}

/// The busier of two loads: a loaded one first, else the one other programs took more of.
pub fn busier(a: HostLoad, b: HostLoad) -> HostLoad {
    let key = |x: &HostLoad| (is_loaded(x), x.other_cores + x.steal_cores);
    let (ka, kb) = (key(&a), key(&b));
    if (kb.0 && !ka.0) || (kb.0 == ka.0 && kb.1 > ka.1) {
        b
    } else {
        a
    }
}

/// The busier of a measurement's two hosts, and whose it is.
fn busier_end(
    tx: Option<(RankId, HostLoad)>,
    rx: Option<(RankId, HostLoad)>,
) -> Option<(RankId, HostLoad)> {
    match (tx, rx) {
        (Some(a), Some(b)) => Some(if busier(a.1, b.1) == b.1 && b.1 != a.1 {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

/// The measurements by directed link; impossible ones are set aside with a note.
fn collect(
    input: &JudgeInput<'_>,
    notes: &mut Vec<String>,
) -> BTreeMap<(RankId, RankId), LinkData> {
    let mut links: BTreeMap<(RankId, RankId), LinkData> = BTreeMap::new();
    for m in input.measurements {
        if m.tx >= input.size || m.rx >= input.size || m.tx == m.rx {
            notes.push(format!(
                "measurement {} → {} (round {}) set aside: ranks must differ and be below {}",
                m.tx, m.rx, m.round, input.size
            ));
            continue;
        }
        let gbps = match m.gbps {
            Some(g) if g.is_finite() && g >= 0.0 => Some(g),
            Some(g) => {
                notes.push(format!(
                    "measurement {} → {} (round {}): {g} Gb/s set aside: not a rate",
                    m.tx, m.rx, m.round
                ));
                continue;
            }
            None => None,
        };
        let d = links.entry((m.tx, m.rx)).or_default();
        d.rdma |= m.transport == Transport::Rdma;
        let error = match (&m.error, gbps) {
            (Some(e), _) => Some(e.clone()),
            (None, None) => Some("nothing measured".to_string()),
            (None, Some(_)) => None,
        };
        d.errors.extend(error.clone());
        match m.phase {
            Phase::Round => {
                match (gbps, &error) {
                    (Some(g), None) => d.round.push(g),
                    (Some(g), Some(_)) => d.round_cut.push(g),
                    (None, _) => {}
                }
                d.round_failed |= error.is_some();
                d.latency = d.latency.or(m
                    .latency
                    .filter(|l| l.p50_us.is_finite() && l.p50_us >= 0.0));
                if error.is_none() {
                    if let Some(r) = m.retransmits {
                        d.retransmits = Some(d.retransmits.unwrap_or(0).max(r));
                    }
                }
                d.concurrency = d.concurrency.max(Some(m.concurrency));
            }
            Phase::Retest => d.alone.push(Alone {
                gbps,
                error,
                latency: m
                    .latency
                    .filter(|l| l.p50_us.is_finite() && l.p50_us >= 0.0),
                retransmits: m.retransmits,
                load: busier_end(m.tx_load.map(|l| (m.tx, l)), m.rx_load.map(|l| (m.rx, l))),
            }),
        }
    }
    links
}

/// The fleet's reference figures.
#[derive(Debug, Clone, Copy)]
struct Reference {
    gbps: Option<f64>,
    latency_p50_us: Option<f64>,
    lossy_retransmits: f64,
    duration_s: Option<f64>,
}

impl Reference {
    fn new(links: &BTreeMap<(RankId, RankId), LinkData>, duration_s: Option<f64>) -> Self {
        let all: Vec<f64> = links
            .values()
            .flat_map(|d| d.round.iter().copied())
            .collect();
        let lat: Vec<f64> = links
            .values()
            .filter_map(|d| d.latency.map(|l| l.p50_us))
            .collect();
        let rtx: Vec<f64> = links
            .values()
            .filter_map(|d| d.retransmits.map(|r| r as f64))
            .collect();
        Reference {
            gbps: quantile(&all, REFERENCE_QUANTILE),
            latency_p50_us: median(&lat),
            lossy_retransmits: (LOSSY_FACTOR * median(&rtx).unwrap_or(0.0))
                .max(LOSSY_MIN_RETRANSMITS as f64),
            duration_s: duration_s.filter(|d| d.is_finite() && *d > 0.0),
        }
    }

    fn slow(&self, g: f64) -> bool {
        self.gbps.is_some_and(|m| g < SLOW_FRACTION * m)
    }

    /// Retransmits above the fleet's and, when the test's length is known, a real share of
    /// the packets sent (full-size 1448-byte TCP segments: jumbo frames send fewer, so the loss
    /// rate is underestimated, never overestimated).
    fn lossy(&self, retransmits: Option<u64>, gbps: Option<f64>) -> bool {
        let packets = gbps
            .zip(self.duration_s)
            .map(|(g, secs)| g * 1e9 * secs / 8.0 / 1448.0);
        retransmits.is_some_and(|r| {
            r as f64 > self.lossy_retransmits
                && packets.is_none_or(|p| r as f64 >= LOSSY_MIN_RATE * p)
        })
    }

    fn latency_outlier(&self, l: Option<MeshLatency>, rdma: bool) -> bool {
        let excess = if rdma { 0.0 } else { LATENCY_MIN_EXCESS_US };
        match (l, self.latency_p50_us) {
            (Some(l), Some(m)) => l.p50_us > LATENCY_FACTOR * m && l.p50_us - m > excess,
            _ => false,
        }
    }
}

/// What a link's rounds say: its figure, and whether it is a suspect.
#[derive(Debug, Clone, Copy, Default)]
struct Rounds {
    gbps: Option<f64>,
    slow: bool,
    lossy: bool,
    latency_outlier: bool,
}

impl Rounds {
    fn of(d: &LinkData, rf: &Reference) -> Self {
        let gbps = median(&d.round);
        Rounds {
            gbps,
            slow: gbps.is_some_and(|g| rf.slow(g)),
            lossy: gbps.is_some() && rf.lossy(d.retransmits, gbps),
            latency_outlier: rf.latency_outlier(d.latency, d.rdma),
        }
    }

    /// A bandwidth fault the node suspicions may account for (latency-only outliers are left
    /// out: the ping-pong runs once per pair, from one side, and says nothing about a direction).
    fn bw(&self) -> bool {
        self.slow || self.lossy
    }

    fn suspect(&self) -> bool {
        self.bw() || self.latency_outlier
    }
}

/// What a suspect's retests alone decide.
#[derive(Debug, Clone)]
enum Outcome {
    /// Bad alone, with at least one retest on hosts that were not loaded.
    Confirmed { gbps: Option<f64>, lossy_only: bool },
    /// Fine alone.
    Cleared { gbps: Option<f64> },
    Unconfirmed {
        why: Unconfirmed,
        gbps: Option<f64>,
        /// The loaded host or the error, as the explanation says it.
        detail: String,
    },
}

impl Outcome {
    fn gbps(&self) -> Option<f64> {
        match self {
            Self::Confirmed { gbps, .. }
            | Self::Cleared { gbps }
            | Self::Unconfirmed { gbps, .. } => *gbps,
        }
    }
}

/// What a retest is checked for: what the rounds suspected (the rate, the loss or both), or the
/// latency of a latency outlier. A retest confirms only the fault its suspect was suspected of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Bandwidth { slow: bool, lossy: bool },
    Latency,
}

impl Check {
    const RATE: Check = Check::Bandwidth {
        slow: true,
        lossy: true,
    };

    fn bandwidth(self) -> bool {
        matches!(self, Check::Bandwidth { .. })
    }
}

/// `other programs held 1.6 of node01's 2 cores (the rank waited 0.4 core for a CPU)`.
fn load_phrase(label: &str, l: &HostLoad) -> String {
    let cores = if l.cores == 1 { "core" } else { "cores" };
    let held = if l.steal_cores >= 0.1 {
        format!(
            "other programs held {} and the hypervisor {} of {label}'s {} {cores}",
            fmt_sig(l.other_cores),
            fmt_sig(l.steal_cores),
            l.cores
        )
    } else {
        format!(
            "other programs held {} of {label}'s {} {cores}",
            fmt_sig(l.other_cores + l.steal_cores),
            l.cores
        )
    };
    match l.waited_cores.filter(|w| *w >= 0.01) {
        Some(w) => format!("{held} (the rank waited {} core for a CPU)", fmt_sig(w)),
        None => held,
    }
}

/// What every verdict is drawn from, once the rounds and retests are read.
struct Ctx<'a> {
    input: &'a JudgeInput<'a>,
    rf: Reference,
    nodes: BTreeMap<RankId, &'a NodeFacts>,
    labels: BTreeMap<RankId, String>,
    /// Lost by the coordinator, or unreachable from most of their peers.
    dead: BTreeSet<RankId>,
    /// The node sides the rounds suspect ([`attribute`]).
    suspects: BTreeSet<(RankId, Side)>,
    /// What each suspected side's retests alone decided.
    outcomes: BTreeMap<(RankId, Side), Outcome>,
}

impl Ctx<'_> {
    fn label(&self, r: RankId) -> String {
        self.labels
            .get(&r)
            .cloned()
            .unwrap_or_else(|| format!("rank {r}"))
    }

    /// The address two ranks' traffic stays on when they share one host's network stack (the
    /// same data address, or both on loopback); `None` when it crosses a link (or is unknown).
    fn shared_stack(&self, a: RankId, b: RankId) -> Option<String> {
        let ip = |r: RankId| {
            let addr = self.nodes.get(&r)?.data_addr.as_deref()?;
            addr.parse::<std::net::SocketAddr>().ok().map(|s| s.ip())
        };
        let (x, y) = (ip(a)?, ip(b)?);
        if x.is_loopback() && y.is_loopback() {
            Some("the loopback interface".to_string())
        } else {
            (x == y).then(|| format!("the address {x}"))
        }
    }

    /// A confirmation between ranks that share a host's stack confirms nothing of a link or a
    /// node: [`Unconfirmed::SameHost`].
    fn off_the_wire(&self, o: Outcome, pairs: &[(RankId, RankId)]) -> Outcome {
        let shared: Option<Vec<String>> = pairs
            .iter()
            .map(|&(a, b)| self.shared_stack(a, b))
            .collect();
        match (o, shared) {
            (Outcome::Confirmed { gbps, .. }, Some(s)) if !s.is_empty() => Outcome::Unconfirmed {
                why: Unconfirmed::SameHost,
                gbps,
                detail: s[0].clone(),
            },
            (o, _) => o,
        }
    }

    /// What a retest outcome of a link or of a node says in words.
    fn outcome(&self, alone: &[&Alone], check: Check, rdma: bool) -> Outcome {
        let rf = &self.rf;
        let counted: Vec<&Alone> = alone
            .iter()
            .copied()
            .filter(|a| a.clean().is_some() && (check.bandwidth() || a.latency.is_some()))
            .collect();
        let bad = |a: &Alone| match check {
            Check::Bandwidth { slow, lossy } => {
                (slow && a.clean().is_some_and(|g| rf.slow(g)))
                    || (lossy && rf.lossy(a.retransmits, a.gbps))
            }
            Check::Latency => rf.latency_outlier(a.latency, rdma),
        };
        let rates = |v: &[&Alone]| median(&v.iter().filter_map(|a| a.clean()).collect::<Vec<_>>());
        let fine: Vec<&Alone> = counted.iter().copied().filter(|a| !bad(a)).collect();
        if !fine.is_empty() {
            return Outcome::Cleared { gbps: rates(&fine) };
        }
        let unloaded: Vec<&Alone> = counted.iter().copied().filter(|a| !a.loaded()).collect();
        if !unloaded.is_empty() {
            return Outcome::Confirmed {
                gbps: rates(&unloaded),
                lossy_only: check.bandwidth()
                    && unloaded
                        .iter()
                        .all(|a| a.clean().is_none_or(|g| !rf.slow(g))),
            };
        }
        if let Some((r, l)) = counted.iter().find_map(|a| a.load) {
            return Outcome::Unconfirmed {
                why: Unconfirmed::Loaded,
                gbps: rates(&counted),
                detail: load_phrase(&self.label(r), &l),
            };
        }
        if let Some(a) = alone.iter().find(|a| a.clean().is_none()) {
            return Outcome::Unconfirmed {
                why: Unconfirmed::RetestFailed,
                gbps: None,
                detail: a.error.clone().unwrap_or_else(|| "nothing measured".into()),
            };
        }
        Outcome::Unconfirmed {
            why: Unconfirmed::NotRetested,
            gbps: None,
            detail: String::new(),
        }
    }
}

/// How each rank is named: its host, or `host/rank` when several ranks share the host (under
/// `mpirun --oversubscribe` or `srun --overcommit` on one node); `rank N` without facts.
fn labels(size: u32, nodes: &BTreeMap<RankId, &NodeFacts>) -> BTreeMap<RankId, String> {
    let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
    for n in nodes.values() {
        *per_host.entry(n.host.as_str()).or_default() += 1;
    }
    (0..size)
        .map(|r| {
            let label = match nodes.get(&r) {
                Some(n) if n.host.is_empty() => format!("rank {r}"),
                Some(n) if per_host.get(n.host.as_str()).copied().unwrap_or(0) > 1 => {
                    format!("{}/{r}", n.host)
                }
                Some(n) => n.host.clone(),
                None => format!("rank {r}"),
            };
            (r, label)
        })
        .collect()
}

/// Which node sides are suspected: greedy explain-away over the directed links
/// `(tx, rx, bad)`. Repeatedly flag the (node, direction) whose links to peers not flagged in
/// the opposite direction have the largest bad fraction, while that fraction is at least
/// [`NODE_BAD_FRACTION`] and the node has at least [`MIN_BAD_PEERS`] bad links in that
/// direction; after each flag, drop every flag that no longer holds now that the others are
/// known. Ranks in `excluded` (unreachable) are nobody's peer. Returns (tx flags, rx flags).
pub fn attribute(
    size: u32,
    links: &[(RankId, RankId, bool)],
    excluded: &BTreeSet<RankId>,
) -> (BTreeSet<RankId>, BTreeSet<RankId>) {
    // For each rank, its links as sender and as receiver: (peer, bad).
    let mut out: Vec<Vec<(RankId, bool)>> = vec![Vec::new(); size as usize];
    let mut inn: Vec<Vec<(RankId, bool)>> = vec![Vec::new(); size as usize];
    for &(t, r, b) in links {
        if t < size && r < size && !excluded.contains(&t) && !excluded.contains(&r) {
            out[t as usize].push((r, b));
            inn[r as usize].push((t, b));
        }
    }
    let mut flags = [BTreeSet::new(), BTreeSet::new()]; // [tx, rx]
                                                        // (bad among links to peers not flagged opposite, those links, bad in all)
    let score = |v: RankId, d: usize, flags: &[BTreeSet<RankId>; 2]| {
        let list = if d == 0 {
            &out[v as usize]
        } else {
            &inn[v as usize]
        };
        let (mut b, mut t, mut all) = (0usize, 0usize, 0usize);
        for &(peer, is_bad) in list {
            all += usize::from(is_bad);
            if !flags[1 - d].contains(&peer) {
                t += 1;
                b += usize::from(is_bad);
            }
        }
        (b, t, all)
    };
    let qualifies = |(b, t, all): (usize, usize, usize)| {
        all >= MIN_BAD_PEERS && b >= 1 && b as f64 >= NODE_BAD_FRACTION * t as f64
    };
    let candidates: Vec<(RankId, usize)> = (0..size)
        .filter(|v| !excluded.contains(v))
        .flat_map(|v| [(v, 0), (v, 1)])
        .collect();
    // Bounded: each pass adds one flag; drops only follow adds.
    for _ in 0..=2 * candidates.len() {
        let best = candidates
            .iter()
            .filter(|&&(v, d)| !flags[d].contains(&v))
            .map(|&(v, d)| ((v, d), score(v, d, &flags)))
            .filter(|&(_, s)| qualifies(s))
            .max_by(|(ka, a), (kb, b)| {
                let fa = a.0 as f64 / a.1 as f64;
                let fb = b.0 as f64 / b.1 as f64;
                fa.total_cmp(&fb).then(a.2.cmp(&b.2)).then(kb.cmp(ka))
            });
        let Some(((v, d), _)) = best else { break };
        flags[d].insert(v);
        while let Some((w, wd)) = candidates.iter().copied().find(|&(w, wd)| {
            (w, wd) != (v, d) && flags[wd].contains(&w) && !qualifies(score(w, wd, &flags))
        }) {
            flags[wd].remove(&w);
        }
    }
    let [tx, rx] = flags;
    (tx, rx)
}

/// Ranks that are unreachable: the coordinator lost them, or greedy explain-away over the
/// unreachable links (at least [`MIN_BAD_PEERS`] peers could not reach a rank, and at least
/// half its links not shared with another unreachable rank failed).
fn unreachable_ranks(
    input: &JudgeInput<'_>,
    links: &BTreeMap<(RankId, RankId), LinkData>,
) -> BTreeSet<RankId> {
    let mut out: BTreeSet<RankId> = input
        .lost
        .iter()
        .copied()
        .filter(|r| *r < input.size)
        .collect();
    let mut mine: Vec<Vec<(RankId, bool)>> = vec![Vec::new(); input.size as usize];
    for (&(tx, rx), d) in links {
        let dead = d.nothing_measured();
        mine[tx as usize].push((rx, dead));
        mine[rx as usize].push((tx, dead));
    }
    loop {
        let best = (0..input.size)
            .filter(|r| !out.contains(r))
            .map(|r| {
                let live: Vec<&(RankId, bool)> = mine[r as usize]
                    .iter()
                    .filter(|(p, _)| !out.contains(p))
                    .collect();
                let peers: BTreeSet<RankId> =
                    live.iter().filter(|(_, d)| *d).map(|(p, _)| *p).collect();
                let failed = live.iter().filter(|(_, d)| *d).count();
                (r, peers.len(), failed, live.len())
            })
            .filter(|&(_, peers, failed, total)| peers >= MIN_BAD_PEERS && 2 * failed >= total)
            .max_by_key(|&(r, peers, _, _)| (peers, std::cmp::Reverse(r)));
        match best {
            Some((r, ..)) => {
                out.insert(r);
            }
            None => return out,
        }
    }
}

/// Judges every link and node: the rounds name the suspects, the retests alone decide.
pub fn judge(input: &JudgeInput<'_>) -> Judgement {
    let mut notes = Vec::new();
    let data = collect(input, &mut notes);
    let rf = Reference::new(&data, input.duration_s);
    let nodes: BTreeMap<RankId, &NodeFacts> = input
        .nodes
        .iter()
        .filter(|n| n.rank < input.size)
        .map(|n| (n.rank, n))
        .collect();
    let rounds: BTreeMap<(RankId, RankId), Rounds> =
        data.iter().map(|(&k, d)| (k, Rounds::of(d, &rf))).collect();
    let dead = unreachable_ranks(input, &data);
    let bad: Vec<(RankId, RankId, bool)> = rounds
        .iter()
        .filter(|(_, r)| r.gbps.is_some())
        .map(|(&(tx, rx), r)| (tx, rx, r.bw()))
        .collect();
    let (tx_flags, rx_flags) = attribute(input.size, &bad, &dead);
    let suspects: BTreeSet<(RankId, Side)> = tx_flags
        .iter()
        .map(|&v| (v, Side::Tx))
        .chain(rx_flags.iter().map(|&v| (v, Side::Rx)))
        .collect();
    let mut ctx = Ctx {
        labels: labels(input.size, &nodes),
        input,
        rf,
        nodes,
        dead,
        suspects,
        outcomes: BTreeMap::new(),
    };
    // Each suspected side, by its retests alone against peers the rounds did not suspect on the
    // other side (a good receiver for a sender, a good sender for a receiver).
    for &(v, side) in &ctx.suspects {
        let retested: Vec<(&(RankId, RankId), &LinkData)> = data
            .iter()
            .filter(|(&(tx, rx), d)| {
                let (me, peer, other) = match side {
                    Side::Tx => (tx, rx, Side::Rx),
                    Side::Rx => (rx, tx, Side::Tx),
                };
                me == v
                    && !d.alone.is_empty()
                    && !ctx.dead.contains(&peer)
                    && !ctx.suspects.contains(&(peer, other))
            })
            .collect();
        let pairs: Vec<(RankId, RankId)> = retested.iter().map(|(k, _)| **k).collect();
        let alone: Vec<&Alone> = retested.iter().flat_map(|(_, d)| d.alone.iter()).collect();
        let o = grounded(ctx.outcome(&alone, Check::RATE, false), || {
            let status = match side {
                Side::Tx => NodeStatus::TxDegraded,
                Side::Rx => NodeStatus::RxDegraded,
            };
            cause(v, status, input).is_some()
        });
        let o = ctx.off_the_wire(o, &pairs);
        ctx.outcomes.insert((v, side), o);
    }
    let links: Vec<LinkVerdict> = data
        .iter()
        .map(|(&k, d)| decide(k, d, &rounds[&k], &ctx))
        .collect();
    let mut rows: Vec<Vec<&LinkVerdict>> = vec![Vec::new(); input.size as usize];
    let mut cols: Vec<Vec<&LinkVerdict>> = vec![Vec::new(); input.size as usize];
    for l in &links {
        rows[l.tx as usize].push(l);
        cols[l.rx as usize].push(l);
    }
    let verdicts = (0..input.size)
        .map(|r| node_verdict(r, &rows[r as usize], &cols[r as usize], &ctx))
        .collect();
    Judgement {
        reference_gbps: ctx.rf.gbps.map(r3),
        links,
        nodes: verdicts,
        notes,
    }
}

/// A suspect whose retest came out slow on a loaded host is still confirmed when a fact
/// explains it (a node's inventory differs from the fleet's in what limits its side: a shaper, a
/// PCIe link, a link rate; a pair's ceiling below the fleet's rate): the slowness then stands
/// on the fact, not on a measurement the load could have bent.
fn grounded(o: Outcome, explained: impl FnOnce() -> bool) -> Outcome {
    match o {
        Outcome::Unconfirmed {
            why: Unconfirmed::Loaded,
            gbps,
            ..
        } if explained() => Outcome::Confirmed {
            gbps,
            lossy_only: false,
        },
        o => o,
    }
}

/// What the suspected ends of a link decided, for a link slow in its round.
enum Ends {
    /// Degraded nodes (confirmed alone) account for it.
    Confirmed(Vec<RankId>),
    /// Its suspected end was fine alone.
    Cleared(Cleared),
    /// Its suspected end could not be decided.
    Unconfirmed(RankId, Unconfirmed, String),
}

fn ends(key: (RankId, RankId), ctx: &Ctx<'_>) -> Option<Ends> {
    let flagged: Vec<(RankId, Side, &Outcome)> = [(key.0, Side::Tx), (key.1, Side::Rx)]
        .into_iter()
        .filter_map(|(r, s)| ctx.outcomes.get(&(r, s)).map(|o| (r, s, o)))
        .collect();
    let confirmed: Vec<RankId> = flagged
        .iter()
        .filter(|(_, _, o)| matches!(o, Outcome::Confirmed { .. }))
        .map(|(r, _, _)| *r)
        .collect();
    if !confirmed.is_empty() {
        return Some(Ends::Confirmed(confirmed));
    }
    if let Some((r, _, Outcome::Unconfirmed { why, detail, .. })) = flagged
        .iter()
        .find(|(_, _, o)| matches!(o, Outcome::Unconfirmed { .. }))
    {
        return Some(Ends::Unconfirmed(*r, *why, detail.clone()));
    }
    flagged.first().map(|&(rank, side, o)| {
        Ends::Cleared(Cleared {
            rank,
            side,
            retest_gbps: o.gbps().map_or(0.0, r3),
        })
    })
}

/// The verdict on one link: the rounds suspect it, its own retest or its suspected ends'
/// decide, a lost end makes it unreachable or cut short.
fn decide(key: (RankId, RankId), d: &LinkData, rounds: &Rounds, ctx: &Ctx<'_>) -> LinkVerdict {
    let rf = &ctx.rf;
    // Only its latency stood out: its retest is judged on its latency.
    let check = if rounds.latency_outlier && !rounds.bw() {
        Check::Latency
    } else if rounds.bw() {
        Check::Bandwidth {
            slow: rounds.slow,
            lossy: rounds.lossy,
        }
    } else {
        Check::RATE
    };
    let ceiling = match (ceiling_of(&ctx.nodes, key.0), ceiling_of(&ctx.nodes, key.1)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let alone: Vec<&Alone> = d.alone.iter().collect();
    let below_ceiling = ceiling
        .zip(rf.gbps)
        .is_some_and(|(c, m)| check.bandwidth() && c < SLOW_FRACTION * m);
    let own = (!alone.is_empty()).then(|| {
        let o = grounded(ctx.outcome(&alone, check, d.rdma), || below_ceiling);
        ctx.off_the_wire(o, &[key])
    });
    let retest = median(&d.alone.iter().filter_map(Alone::clean).collect::<Vec<_>>());
    let mut v = LinkVerdict {
        tx: key.0,
        rx: key.1,
        status: LinkStatus::Ok,
        gbps: rounds.gbps.map(r3),
        retest_gbps: retest.map(r3),
        fraction_of_reference: rounds
            .gbps
            .zip(rf.gbps.filter(|m| *m > 0.0))
            .map(|(g, m)| r3(g / m)),
        ceiling_gbps: ceiling,
        latency: d.latency,
        latency_outlier: rounds.latency_outlier,
        retransmits: d.retransmits,
        concurrency: d.concurrency,
        explained_by: Vec::new(),
        cleared_by: None,
        unconfirmed: None,
        error: d.errors.first().cloned(),
        explanation: String::new(),
    };
    let measured = measured_phrase(&v, rf);
    let lost: Vec<RankId> = [key.0, key.1]
        .into_iter()
        .filter(|r| ctx.dead.contains(r))
        .collect();
    let cleared_alone = matches!(own, Some(Outcome::Cleared { .. }));
    let (status, explanation) = if !lost.is_empty() {
        lost_end(&mut v, d, rounds, &lost, ctx, &measured)
    } else if rounds.gbps.is_none() {
        if cleared_alone {
            (
                LinkStatus::Ok,
                format!(
                    "its round measurement failed ({}); alone it carried {}",
                    v.error.as_deref().unwrap_or("no result"),
                    gb(retest)
                ),
            )
        } else {
            failed(d, &v, &measured)
        }
    } else if !rounds.suspect() {
        if d.round_failed && !cleared_alone {
            failed(d, &v, &measured)
        } else {
            (LinkStatus::Ok, measured)
        }
    } else {
        suspect(&mut v, rounds, own, key, ctx, &measured)
    };
    v.status = status;
    v.explanation = explanation;
    v
}

fn gb(x: Option<f64>) -> String {
    x.map_or_else(|| "nothing".to_string(), |g| format!("{} Gb/s", fmt_sig(g)))
}

/// `9.39 Gb/s, 100% of the fleet's 9.39 Gb/s`.
fn measured_phrase(l: &LinkVerdict, rf: &Reference) -> String {
    let g = |x: f64| format!("{} Gb/s", fmt_sig(x));
    match (l.gbps, l.fraction_of_reference, rf.gbps) {
        (Some(x), Some(f), Some(m)) => {
            format!("{}, {:.0}% of the fleet's {}", g(x), 100.0 * f, g(m))
        }
        (Some(x), _, _) => g(x),
        (None, _, _) => String::new(),
    }
}

/// A link with a lost end: never a cable, never a node.
fn lost_end(
    v: &mut LinkVerdict,
    d: &LinkData,
    rounds: &Rounds,
    lost: &[RankId],
    ctx: &Ctx<'_>,
    measured: &str,
) -> (LinkStatus, String) {
    let who: Vec<String> = lost.iter().map(|&r| ctx.label(r)).collect();
    let who = who.join(" and ");
    let err = v.error.clone().unwrap_or_default();
    if rounds.gbps.is_none() {
        if d.round_cut.is_empty() {
            return (
                LinkStatus::Unreachable,
                format!("nothing measured: {who} unreachable"),
            );
        }
        let cut = median(&d.round_cut).unwrap_or(0.0);
        return (
            LinkStatus::CutShort,
            format!(
                "{} Gb/s before the test was cut short ({err}): {who} unreachable",
                fmt_sig(cut)
            ),
        );
    }
    if d.round_failed {
        return (
            LinkStatus::CutShort,
            format!("{measured}, then a test ended with an error ({err}): {who} unreachable"),
        );
    }
    if rounds.suspect() {
        v.unconfirmed = Some(Unconfirmed::RankLost);
        return (
            LinkStatus::Unconfirmed,
            format!("{measured}: slow in its round, and {who} was lost before a retest could run"),
        );
    }
    (LinkStatus::Ok, measured.to_string())
}

/// A link between live ranks whose measurements failed.
fn failed(d: &LinkData, v: &LinkVerdict, measured: &str) -> (LinkStatus, String) {
    let err = v.error.as_deref().unwrap_or("no result");
    if !d.round_cut.is_empty() {
        let cut = median(&d.round_cut).unwrap_or(0.0);
        return (
            LinkStatus::CutShort,
            format!("{} Gb/s before the test was cut short ({err}), though both ranks answered elsewhere", fmt_sig(cut)),
        );
    }
    if v.gbps.is_some() {
        return (
            LinkStatus::CutShort,
            format!("{measured}, then a test ended with an error ({err}), though both ranks answered elsewhere"),
        );
    }
    (
        LinkStatus::Unreachable,
        format!("nothing measured ({err}), though both ranks answered elsewhere"),
    )
}

/// A link slow (or lossy, or late) in its round between live ranks: its own retest, else its
/// suspected ends, decide.
fn suspect(
    v: &mut LinkVerdict,
    rounds: &Rounds,
    own: Option<Outcome>,
    key: (RankId, RankId),
    ctx: &Ctx<'_>,
    measured: &str,
) -> (LinkStatus, String) {
    let ends = if rounds.bw() { ends(key, ctx) } else { None };
    // Slow alone, but on a loaded host or between ranks of one host: a node cleared elsewhere
    // does not make it contention.
    let excused = matches!(
        own,
        Some(Outcome::Unconfirmed {
            why: Unconfirmed::Loaded | Unconfirmed::SameHost,
            ..
        })
    );
    let ends = ends.filter(|e| !excused || !matches!(e, Ends::Cleared(_)));
    let flows = v.concurrency.unwrap_or(1);
    let bad_status = |lossy_only: bool| {
        if rounds.lossy && (lossy_only || !rounds.slow) && !rounds.latency_outlier {
            LinkStatus::Lossy
        } else {
            LinkStatus::Slow
        }
    };
    match (own, ends) {
        (Some(Outcome::Confirmed { lossy_only, .. }), ends) => {
            if let Some(Ends::Confirmed(by)) = ends {
                v.explained_by = by;
            }
            let status = bad_status(lossy_only);
            let text = confirmed_text(v, status, rounds, ctx, measured);
            (status, text)
        }
        (Some(Outcome::Cleared { gbps }), _) => (
            LinkStatus::Contention,
            format!(
                "{measured} with {flows} flows at once, {} alone: the fabric was oversubscribed, not this link",
                gb(gbps)
            ),
        ),
        (_, Some(Ends::Confirmed(by))) => {
            v.explained_by = by;
            let status = bad_status(false);
            let text = confirmed_text(v, status, rounds, ctx, measured);
            (status, text)
        }
        (_, Some(Ends::Cleared(c))) => {
            let text = format!(
                "{measured} with {flows} flows at once; {} {} at {} Gb/s alone against good peers: the fabric was oversubscribed, not this link",
                ctx.label(c.rank),
                match c.side {
                    Side::Tx => "sent",
                    Side::Rx => "received",
                },
                fmt_sig(c.retest_gbps)
            );
            v.cleared_by = Some(c);
            (LinkStatus::Contention, text)
        }
        (_, Some(Ends::Unconfirmed(r, why, detail))) => {
            v.explained_by = vec![r];
            v.unconfirmed = Some(why);
            let side = if r == key.0 { Side::Tx } else { Side::Rx };
            (
                LinkStatus::Unconfirmed,
                format!(
                    "{measured}: {} was slow {} in its rounds, unconfirmed: {}",
                    ctx.label(r),
                    side.sending(),
                    why_text(why, None, &detail)
                ),
            )
        }
        (own, None) => {
            let (why, gbps, detail) = match own {
                Some(Outcome::Unconfirmed { why, gbps, detail }) => (why, gbps, detail),
                _ => (Unconfirmed::NotRetested, None, String::new()),
            };
            v.unconfirmed = Some(why);
            let what = if rounds.bw() {
                "slow in its round"
            } else {
                "its latency stood out in its round"
            };
            (
                LinkStatus::Unconfirmed,
                format!("{measured}: {what}, unconfirmed: {}", why_text(why, gbps, &detail)),
            )
        }
    }
}

/// Why a suspect stays unconfirmed, in words.
fn why_text(why: Unconfirmed, gbps: Option<f64>, detail: &str) -> String {
    match why {
        Unconfirmed::NotRetested => {
            "it was not retested alone (the retest phase's bound was spent, or the run ended first)"
                .to_string()
        }
        Unconfirmed::RetestFailed => format!("its retest alone failed ({detail})"),
        Unconfirmed::Loaded => {
            let figure = gbps.map_or_else(String::new, |g| format!(" ({} Gb/s)", fmt_sig(g)));
            format!("its retest alone{figure} ran while {detail}: that load, not the hardware, may explain it")
        }
        Unconfirmed::RankLost => "a rank was lost before a retest could run".to_string(),
        Unconfirmed::SameHost => format!(
            "its retest alone ran between ranks that share {detail}: the traffic never leaves that host, so its rate is the host's CPU and scheduling, shared with every rank and program there, not a link or a node"
        ),
    }
}

/// The explanation of a confirmed slow or lossy link.
fn confirmed_text(
    l: &LinkVerdict,
    status: LinkStatus,
    rounds: &Rounds,
    ctx: &Ctx<'_>,
    measured: &str,
) -> String {
    let rf = &ctx.rf;
    let alone = l
        .retest_gbps
        .map_or_else(String::new, |g| format!(", {} Gb/s alone", fmt_sig(g)));
    if !l.explained_by.is_empty() {
        let who: Vec<String> = l
            .explained_by
            .iter()
            .map(|&r| {
                let side = if r == l.tx { Side::Tx } else { Side::Rx };
                format!("{} is slow {}", ctx.label(r), side.sending())
            })
            .collect();
        return format!("{measured}: {}", who.join(" and "));
    }
    if status == LinkStatus::Lossy {
        return format!(
            "{measured}{alone}; {} retransmits, more than {:.0} ({}× the median link's), in its round and alone: packets are lost on this path",
            l.retransmits.unwrap_or(0),
            rf.lossy_retransmits,
            LOSSY_FACTOR
        );
    }
    if let (Some(c), Some(m)) = (l.ceiling_gbps, rf.gbps) {
        if c < SLOW_FRACTION * m {
            let low = if ceiling_of(&ctx.nodes, l.tx) == Some(c) {
                l.tx
            } else {
                l.rx
            };
            return format!(
                "{measured}: the pair's ceiling is {} Gb/s ({}'s port)",
                fmt_sig(c),
                ctx.label(low)
            );
        }
    }
    if rounds.latency_outlier && !rounds.bw() {
        let p50 = l.latency.map_or(0.0, |x| x.p50_us);
        return format!(
            "latency p50 {} µs, more than {LATENCY_FACTOR}× the median {} µs, in its round and alone",
            fmt_sig(p50),
            fmt_sig(rf.latency_p50_us.unwrap_or(0.0))
        );
    }
    format!(
        "{measured}{alone}: both nodes are fine with other peers: suspect this link (cable, transceiver, switch ports or route)"
    )
}

pub(crate) fn ceiling_of(nodes: &BTreeMap<RankId, &NodeFacts>, r: RankId) -> Option<f64> {
    nodes.get(&r)?.port.as_ref()?.ceiling_gbps
}

fn node_verdict(
    r: RankId,
    row: &[&LinkVerdict],
    col: &[&LinkVerdict],
    ctx: &Ctx<'_>,
) -> NodeVerdict {
    let med =
        |ls: &[&LinkVerdict]| median(&ls.iter().filter_map(|l| l.gbps).collect::<Vec<_>>()).map(r3);
    let bad = |ls: &[&LinkVerdict]| ls.iter().filter(|l| l.status.is_bad()).count() as u32;
    let (tx_median_gbps, rx_median_gbps) = (med(row), med(col));
    let tx = ctx.outcomes.get(&(r, Side::Tx));
    let rx = ctx.outcomes.get(&(r, Side::Rx));
    let is = |o: Option<&Outcome>, f: fn(&Outcome) -> bool| o.is_some_and(f);
    let conf = |o: &Outcome| matches!(o, Outcome::Confirmed { .. });
    let unconf = |o: &Outcome| matches!(o, Outcome::Unconfirmed { .. });
    let (ct, cr) = (is(tx, conf), is(rx, conf));
    let (ut, ur) = (is(tx, unconf), is(rx, unconf));
    let unconfirmed = [tx, rx].into_iter().flatten().find_map(|o| match o {
        Outcome::Unconfirmed { why, .. } => Some(*why),
        _ => None,
    });
    let (status, suspect) = if ctx.dead.contains(&r) {
        (NodeStatus::Unreachable, None)
    } else if let Some(s) = NodeStatus::of(ct, cr) {
        (s, NodeStatus::of(ct || ut, cr || ur).filter(|x| *x != s))
    } else if let Some(s) = NodeStatus::of(ut, ur) {
        (NodeStatus::Unconfirmed, Some(s))
    } else {
        (NodeStatus::Ok, NodeStatus::of(tx.is_some(), rx.is_some()))
    };
    let mut v = NodeVerdict {
        rank: r,
        host: ctx
            .nodes
            .get(&r)
            .map_or_else(|| format!("rank {r}"), |n| n.host.clone()),
        label: ctx.label(r),
        status,
        suspect,
        unconfirmed: unconfirmed.filter(|_| status != NodeStatus::Unreachable && suspect.is_some()),
        tx_median_gbps,
        rx_median_gbps,
        retest_tx_gbps: tx.and_then(Outcome::gbps).map(r3),
        retest_rx_gbps: rx.and_then(Outcome::gbps).map(r3),
        bad_tx_links: bad(row),
        bad_rx_links: bad(col),
        explanation: String::new(),
    };
    v.explanation = node_explanation(&v, row, col, [tx, rx], ctx);
    v
}

fn node_explanation(
    v: &NodeVerdict,
    row: &[&LinkVerdict],
    col: &[&LinkVerdict],
    outcomes: [Option<&Outcome>; 2],
    ctx: &Ctx<'_>,
) -> String {
    let (rf, label) = (&ctx.rf, &v.label);
    let figures = |s: NodeStatus| match s {
        NodeStatus::TxDegraded => side(v.tx_median_gbps, rf.gbps, "as sender"),
        NodeStatus::RxDegraded => side(v.rx_median_gbps, rf.gbps, "as receiver"),
        _ => format!(
            "{}, {}",
            side(v.tx_median_gbps, rf.gbps, "as sender"),
            side(v.rx_median_gbps, rf.gbps, "as receiver")
        ),
    };
    let ways = |s: NodeStatus| match s {
        NodeStatus::TxDegraded => "sending",
        NodeStatus::RxDegraded => "receiving",
        _ => "both ways",
    };
    let alone = |s: NodeStatus| {
        let parts: Vec<String> = [(Side::Tx, v.retest_tx_gbps), (Side::Rx, v.retest_rx_gbps)]
            .into_iter()
            .filter(|(side, _)| s.covers(*side))
            .filter_map(|(side, g)| g.map(|g| format!("{} {} Gb/s", side.as_role(), fmt_sig(g))))
            .collect();
        parts.join(", ")
    };
    match v.status {
        NodeStatus::Ok => match v.suspect {
            None => String::new(),
            Some(s) => format!(
                "{label} was slow {} in its rounds ({}), fine alone against good peers ({}): contention, not the node",
                ways(s),
                figures(s),
                alone(s)
            ),
        },
        NodeStatus::Unreachable => {
            let why = if ctx.input.lost.contains(&v.rank) {
                "the coordinator lost it (it died, never arrived or stopped answering)".to_string()
            } else {
                let n = row
                    .iter()
                    .chain(col.iter())
                    .filter(|l| l.status == LinkStatus::Unreachable)
                    .count();
                format!("{n} of its links measured nothing")
            };
            format!("{label} unreachable: {why}")
        }
        NodeStatus::Unconfirmed => {
            let s = v.suspect.unwrap_or(NodeStatus::Both);
            let (why, gbps, detail) = outcomes
                .into_iter()
                .flatten()
                .find_map(|o| match o {
                    Outcome::Unconfirmed { why, gbps, detail } => Some((*why, *gbps, detail.clone())),
                    _ => None,
                })
                .unwrap_or((Unconfirmed::NotRetested, None, String::new()));
            format!(
                "{label} unconfirmed: slow {} in its rounds ({}), but {}",
                ways(s),
                figures(s),
                why_text(why, gbps, &detail)
            )
        }
        s => {
            let why = cause(v.rank, s, ctx.input).unwrap_or_else(|| {
                "nothing in its inventory differs from the other nodes: look at shapers, the cable and its switch port".to_string()
            });
            format!(
                "{label} {}: {why} ({}; alone against good peers {})",
                s.as_str(),
                figures(s),
                alone(s)
            )
        }
    }
}

fn side(node: Option<f64>, fleet: Option<f64>, what: &str) -> String {
    match (node, fleet) {
        (Some(n), Some(f)) => format!(
            "{what} {} Gb/s against the fleet's {} Gb/s",
            fmt_sig(n),
            fmt_sig(f)
        ),
        (Some(n), None) => format!("{what} {} Gb/s", fmt_sig(n)),
        _ => format!("{what}: not measured"),
    }
}

/// The fleet difference (or a probe finding only this node has) that explains a degraded node,
/// most telling first for the direction.
fn cause(r: RankId, status: NodeStatus, input: &JudgeInput<'_>) -> Option<String> {
    use FleetAttribute as A;
    let order: &[FleetAttribute] = match status {
        NodeStatus::TxDegraded => &[
            A::EgressLimit,
            A::LinkRate,
            A::PcieLink,
            A::Card,
            A::Mtu,
            A::IpoibMode,
            A::TcpWmemMax,
            A::Firmware,
            A::Governor,
            A::Kernel,
        ],
        NodeStatus::RxDegraded => &[
            A::IngressLimit,
            A::LinkRate,
            A::PcieLink,
            A::Card,
            A::Mtu,
            A::IpoibMode,
            A::TcpRmemMax,
            A::Firmware,
            A::Governor,
            A::Kernel,
        ],
        _ => &[
            A::EgressLimit,
            A::IngressLimit,
            A::LinkRate,
            A::PcieLink,
            A::Card,
            A::Mtu,
            A::IpoibMode,
            A::TcpRmemMax,
            A::TcpWmemMax,
            A::Firmware,
            A::Governor,
            A::Kernel,
        ],
    };
    let me = input.nodes.iter().find(|n| n.rank == r);
    let card = me
        .and_then(|n| n.port.as_ref())
        .and_then(|p| p.card.clone());
    let mine: Vec<&FleetFinding> = input
        .fleet
        .iter()
        .filter(|f| f.ranks.contains(&r))
        .collect();
    for a in order {
        let Some(f) = mine
            .iter()
            .find(|f| f.attribute == Some(*a) && f.value.is_some())
        else {
            continue;
        };
        let (value, majority) = (f.value.as_deref()?, f.majority.as_deref()?);
        let compared = f.compared? as usize;
        let others = others_phrase(f.majority_count? as usize, compared - f.ranks.len());
        if let Some(dir) = a.direction() {
            // The shaper itself, by device, direction and kind.
            let s = me?
                .shapers
                .as_ref()?
                .iter()
                .filter(|s| s.direction == dir)
                .min_by_key(|s| s.rate_bps)?;
            // This node against every other one (others may share its limit).
            let others = others_phrase(f.majority_count? as usize, compared - 1);
            let theirs = majority
                .parse::<u64>()
                .map_or_else(|_| format!("have no {} limit", dir.as_str()), fmt_rate);
            return Some(format!(
                "{} limits it to {}, {others} {theirs}",
                s.label(),
                fmt_rate(s.rate_bps)
            ));
        }
        let subject = match (&card, a) {
            (Some(c), A::PcieLink | A::LinkRate | A::Firmware | A::Mtu | A::IpoibMode) => {
                format!("its {c}")
            }
            _ => "it".to_string(),
        };
        return Some(format!(
            "{subject} runs {}, {others} {}",
            a.describe(value),
            a.describe(majority)
        ));
    }
    // A probe finding on this node that most nodes do not have.
    let total = input.nodes.len();
    mine.iter()
        .find(|f| matches!(f.id, FleetId::Probe(_)) && 2 * f.ranks.len() < total)
        .map(|f| format!("its probe reports {}: {}", f.id.as_str(), f.message))
}

/// The fleet finding on the whole fleet's rate against its ceilings, when it runs far below.
pub fn below_ceiling(j: &Judgement, nodes: &[NodeFacts]) -> Option<FleetFinding> {
    let ceilings: Vec<f64> = j.links.iter().filter_map(|l| l.ceiling_gbps).collect();
    let (m, c) = (j.reference_gbps?, median(&ceilings)?);
    (m < FLEET_CEILING_FRACTION * c).then(|| FleetFinding {
        id: FleetId::BelowCeiling,
        attribute: None,
        ranks: nodes.iter().map(|n| n.rank).collect(),
        hosts: nodes.iter().map(|n| n.host.clone()).collect(),
        value: Some(fmt_sig(m)),
        majority: Some(fmt_sig(c)),
        majority_count: None,
        compared: Some(nodes.len() as u32),
        message: format!(
            "the fleet's links carry {} Gb/s (upper quartile), {:.0}% of the median pair ceiling ({} Gb/s): the limit is common to every node (one stream per pair, CPU, TCP buffers), not one node or cable",
            fmt_sig(m),
            100.0 * m / c,
            fmt_sig(c)
        ),
    })
}
