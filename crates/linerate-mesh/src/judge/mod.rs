//! The verdicts of a cluster run: per directed link, per node (as sender and as receiver
//! separately).
//!
//! Judging takes two steps. The rounds name the *suspects*: every link is compared with the
//! fleet's reference (the upper quartile of all links measured cleanly in their rounds: robust
//! while fewer than three quarters of the links are bad), and a node is suspected by its row
//! (its links as sender) and its column (as receiver) on their own: a node slow both ways makes
//! every link it is on slow in both directions, and its healthy peers must not be blamed for
//! that, so a node is suspected only when its links to peers not already explained by another
//! node are bad too (see [`attribute`]). Then the retests alone (`crate::retest::retest_plan`) decide: a
//! suspect is confirmed (`slow`, `lossy`, a degraded node) only by a retest of its own that
//! ran clean, on hosts whose CPU other programs did not hold ([`LOAD_MIN_OTHER_CORES`]); one
//! fine alone was contention (and a node fine alone clears every link it was blamed for); one
//! whose retest could not run, failed or ran under load stays `unconfirmed`, with the reason.
//! Links of a lost rank are `unreachable` or `cut_short`, never a cable or a node.

use std::collections::{BTreeMap, BTreeSet};

use linerate_units::{fmt_sig, r3};
use serde::{Deserialize, Serialize};

use crate::fleet::{FleetFinding, FleetId};
use crate::types::{HostLoad, LinkMeasurement, MeshLatency, NodeFacts, RankId};

mod evidence;
mod suspects;
mod verdict;

pub use evidence::busier;
use evidence::Outcome;
use evidence::{collect, grounded, labels, Alone, Check, Ctx, LinkData, Reference, Rounds};
pub use suspects::attribute;
use suspects::unreachable_ranks;
use verdict::{cause, decide, explain_late, late_nodes, latency_alone, node_verdict, Late};

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

/// A link whose ping-pong p50 exceeds this multiple of the fleet's typical p50
/// ([`LATENCY_REFERENCE_QUANTILE`]) is slow. ClusterKit uses 2.1 × the lowest; the lowest is
/// again one lucky sample, and ping-pong p50 on shared cores moves with scheduling, so we leave
/// more room above the typical pair.
pub const LATENCY_FACTOR: f64 = 3.0;

/// The fleet's typical ping-pong p50 is this quantile of every pair's: the lower quartile, not
/// the median. A delay on one node's link lengthens every round trip through it: n−1 of the
/// n(n−1)/2 pairs, two thirds of them at n = 3, half at n = 4. Measured on a real kernel (the
/// lab, 4 ranks, `netem delay 20ms` on one rank's egress): the three pairs through it at
/// 21.9-26.1 ms, the other three at 0.30-0.44 ms, so the median (the mean of the middle two,
/// 11 ms) hid all three. The lower quartile stays on the healthy pairs while fewer than three
/// quarters are late, the mirror of [`REFERENCE_QUANTILE`] for rates.
pub const LATENCY_REFERENCE_QUANTILE: f64 = 0.25;

/// A link is lossy when its sender retransmitted at least [`LOSSY_MIN_RATE`] of the packets it
/// sent, at least [`LOSSY_FACTOR`] × the median link's share, and at least
/// [`LOSSY_MIN_RETRANSMITS`] packets: TCP retransmits a little on every busy path (a shaper or a
/// switch buffer drops at the edge of the window), so only a link far above its fleet is losing
/// packets on the wire.
///
/// The shares come from a real kernel (the lab: 4 ranks on veths shaped to 50 Mbit/s by tbf,
/// `crates/linerate-mesh/tests/fixtures/lab-captures/`): healthy links retransmitted 0 to 0.7 %
/// of their packets in their rounds (median about 0.3 %; 1.4 % once, alone, on a path with
/// 20 ms of delay, where slow start overshoots the shaper's queue), while the links into a
/// rank behind `netem loss 2%` retransmitted 1.3-3.1 %. The earlier rule (10 × the median
/// link's *count*, above 100, and 0.1 % of the packets), tuned on synthetic counters, judged
/// every one of those lossy links `ok`: at modest rates 2 % of a 1-2 s test is 70-200 packets,
/// and the healthy links' own 20-30 retransmits put ten times the median above them.
pub const LOSSY_FACTOR: f64 = 3.0;
/// See [`LOSSY_FACTOR`]: fewer retransmits than this are too few to tell a lossy path from a
/// shaper's drops, whatever their share.
pub const LOSSY_MIN_RETRANSMITS: u64 = 20;
/// See [`LOSSY_FACTOR`]: a shaper's or a switch buffer's drops stay below 1 % of the packets of
/// a healthy path; a path losing 1 % of its packets on the wire is worth a ticket (on a fast
/// path it is slow as well).
pub const LOSSY_MIN_RATE: f64 = 0.01;
/// When the test's length is unknown (no share can be computed): more than this many
/// retransmits, and more than [`LOSSY_FACTOR`] × the median link's.
pub const LOSSY_MIN_RETRANSMITS_UNTIMED: u64 = 100;

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

/// Whether a host was loaded enough to explain a slow round trip: other programs (and steal)
/// held [`LOAD_MIN_OTHER_CORES`], whatever was idle. A request/response test keeps no core
/// busy, so the CPU never looks full; but every reply waits for a thread to be woken, and a
/// core running another program delays that by up to a scheduler slice. An 8-rank mesh in
/// namespaces on 2 cores, beside two iperf3 test suites, measured one link's p50 at 77.7 µs
/// against a fleet median of 17.9 µs, and again in its retest, with half a core still idle.
pub fn is_loaded_for_latency(l: &HostLoad) -> bool {
    l.other_cores + l.steal_cores >= LOAD_MIN_OTHER_CORES
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
    /// was reset), or it was slow in its round and a rank was lost before its retest: the
    /// figure is not the link's.
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
    pub fn covers(self, side: NodeSide) -> bool {
        matches!(
            (self, side),
            (Self::Both, _) | (Self::TxDegraded, NodeSide::Tx) | (Self::RxDegraded, NodeSide::Rx)
        )
    }
}

/// A node's side of its links: as sender (its row of the matrix) or as receiver (its column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeSide {
    Tx,
    Rx,
}

impl NodeSide {
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
    /// Its ranks share one host's network stack (the same address, or loopback): the traffic
    /// never leaves the host, so its rate is that host's CPU and scheduling, shared with every
    /// rank and program there, never a link or a node of its own.
    SameHost,
}

impl Unconfirmed {
    pub const ALL: [Unconfirmed; 4] = [
        Self::NotRetested,
        Self::RetestFailed,
        Self::Loaded,
        Self::SameHost,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotRetested => "not_retested",
            Self::RetestFailed => "retest_failed",
            Self::Loaded => "loaded",
            Self::SameHost => "same_host",
        }
    }
}

/// The node whose retest alone cleared a link slow in its round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cleared {
    pub rank: RankId,
    /// The side the node was suspected on.
    pub side: NodeSide,
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
    /// The nodes that account for this link being bad: degraded ones, a node every round trip
    /// through which is late (for a latency outlier), or, for an unconfirmed link, the suspected
    /// node whose retest could not decide.
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

pub(crate) use linerate_stats::median;

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
    let suspects: BTreeSet<(RankId, NodeSide)> = tx_flags
        .iter()
        .map(|&v| (v, NodeSide::Tx))
        .chain(rx_flags.iter().map(|&v| (v, NodeSide::Rx)))
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
                    NodeSide::Tx => (tx, rx, NodeSide::Rx),
                    NodeSide::Rx => (rx, tx, NodeSide::Tx),
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
                NodeSide::Tx => NodeStatus::TxDegraded,
                NodeSide::Rx => NodeStatus::RxDegraded,
            };
            cause(v, status, input).is_some()
        });
        let o = ctx.off_the_wire(o, &pairs);
        ctx.outcomes.insert((v, side), o);
    }
    let mut links: Vec<LinkVerdict> = data
        .iter()
        .map(|(&k, d)| decide(k, d, &rounds[&k], &ctx))
        .collect();
    // Each pair's round trip: late in its round, and late or on time alone.
    let pairs: Vec<Late> = data
        .iter()
        .filter(|(&(tx, rx), d)| {
            d.latency.is_some() && !ctx.dead.contains(&tx) && !ctx.dead.contains(&rx)
        })
        .map(|(&(tx, rx), d)| {
            let r = &rounds[&(tx, rx)];
            let alone = match latency_alone(d, r, &ctx) {
                Some(Outcome::Confirmed { .. }) => Some(true),
                Some(Outcome::Cleared { .. }) => Some(false),
                _ => None,
            };
            Late {
                tx,
                rx,
                outlier: r.latency_outlier,
                alone,
            }
        })
        .collect();
    let late = late_nodes(input.size, &pairs);
    let mut rows: Vec<Vec<&LinkVerdict>> = vec![Vec::new(); input.size as usize];
    let mut cols: Vec<Vec<&LinkVerdict>> = vec![Vec::new(); input.size as usize];
    for l in &links {
        rows[l.tx as usize].push(l);
        cols[l.rx as usize].push(l);
    }
    let mut verdicts: Vec<NodeVerdict> = (0..input.size)
        .map(|r| node_verdict(r, &rows[r as usize], &cols[r as usize], &ctx))
        .collect();
    explain_late(&late, &pairs, &mut links, &mut verdicts, &ctx);
    Judgement {
        reference_gbps: ctx.rf.gbps.map(r3),
        links,
        nodes: verdicts,
        notes,
    }
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
