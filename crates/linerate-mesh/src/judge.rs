//! The verdicts of a cluster run: per directed link, per node (as sender and as receiver
//! separately), and the retest plan that tells contention from a bad link or node.
//!
//! Every link is judged against the fleet's reference (the upper quartile of all links
//! measured in their rounds: robust while fewer than three quarters of the links are bad) and explained against
//! the pair's ceiling (the lower of the two ports' ceilings from probe). A node is judged by its
//! row (its links as sender) and its column (as receiver) on their own: a node slow both ways
//! makes every link it is on slow in both directions, and its healthy peers must not be blamed
//! for that, so a node is degraded only when its links to peers not already explained by
//! another node are bad too (see [`attribute`]).

use std::collections::{BTreeMap, BTreeSet};

use linerate_stats::median;
use linerate_units::{fmt_sig, r3};
use serde::{Deserialize, Serialize};

use crate::fleet::{fmt_rate, others_phrase, FleetAttribute, FleetFinding};
use crate::schedule::{Flow, Round};
use crate::types::{LinkMeasurement, MeshLatency, NodeFacts, Phase, RankId, Transport};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkStatus {
    Ok,
    /// Below [`SLOW_FRACTION`] of the reference (or latency above [`LATENCY_FACTOR`] × the median).
    Slow,
    /// Retransmits far above the fleet's.
    Lossy,
    /// Nothing measured: a rank died, refused or never answered.
    Unreachable,
    /// Slow in its round, fine when retested alone: the fabric was oversubscribed.
    Contention,
}

impl LinkStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Slow => "slow",
            Self::Lossy => "lossy",
            Self::Unreachable => "unreachable",
            Self::Contention => "contention",
        }
    }

    /// What makes the run unhealthy (contention is the fabric's, reported but not a fault).
    pub fn is_bad(self) -> bool {
        matches!(self, Self::Slow | Self::Lossy | Self::Unreachable)
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
}

impl NodeStatus {
    /// As the text output says it: `tx-degraded`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::TxDegraded => "tx-degraded",
            Self::RxDegraded => "rx-degraded",
            Self::Both => "tx+rx-degraded",
            Self::Unreachable => "unreachable",
        }
    }

    fn of(tx: bool, rx: bool) -> Self {
        match (tx, rx) {
            (false, false) => Self::Ok,
            (true, false) => Self::TxDegraded,
            (false, true) => Self::RxDegraded,
            (true, true) => Self::Both,
        }
    }
}

/// The verdict on one directed link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkVerdict {
    pub tx: RankId,
    pub rx: RankId,
    pub status: LinkStatus,
    /// Measured in its round(s) (median when measured more than once), Gb/s.
    pub gbps: Option<f64>,
    /// Measured alone in the retest phase, Gb/s.
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
    /// The degraded nodes that account for this link being bad.
    pub explained_by: Vec<RankId>,
    /// Why a measurement of this link failed (the first error), if one did.
    pub error: Option<String>,
    pub explanation: String,
}

/// The verdict on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeVerdict {
    pub rank: RankId,
    pub host: String,
    pub status: NodeStatus,
    /// Median of its links as sender (its row) and as receiver (its column), Gb/s.
    pub tx_median_gbps: Option<f64>,
    pub rx_median_gbps: Option<f64>,
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
    /// The fleet's reference: the upper quartile of all links measured in their rounds
    /// ([`REFERENCE_QUANTILE`]), Gb/s.
    pub reference_gbps: Option<f64>,
    pub links: Vec<LinkVerdict>,
    pub nodes: Vec<NodeVerdict>,
    /// Measurements set aside (ranks out of range, impossible figures), with why.
    pub notes: Vec<String>,
}

/// Everything measured on one directed link.
#[derive(Debug, Default)]
struct LinkData {
    round: Vec<f64>,
    retest: Vec<f64>,
    errors: Vec<String>,
    latency: Option<MeshLatency>,
    retransmits: Option<u64>,
    concurrency: Option<u32>,
    rdma: bool,
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
        let d = links.entry((m.tx, m.rx)).or_default();
        match m.gbps {
            Some(g) if g.is_finite() && g >= 0.0 => match m.phase {
                Phase::Round => d.round.push(g),
                Phase::Retest => d.retest.push(g),
            },
            Some(g) => notes.push(format!(
                "measurement {} → {} (round {}): {g} Gb/s set aside: not a rate",
                m.tx, m.rx, m.round
            )),
            None => d
                .errors
                .push(m.error.clone().unwrap_or_else(|| "nothing measured".into())),
        }
        d.rdma |= m.transport == Transport::Rdma;
        if m.phase == Phase::Round {
            d.latency = d.latency.or(m
                .latency
                .filter(|l| l.p50_us.is_finite() && l.p50_us >= 0.0));
            if let Some(r) = m.retransmits {
                d.retransmits = Some(d.retransmits.unwrap_or(0).max(r));
            }
            d.concurrency = d.concurrency.max(Some(m.concurrency));
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

fn reference(links: &BTreeMap<(RankId, RankId), LinkData>, duration_s: Option<f64>) -> Reference {
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

fn ceiling_of(nodes: &BTreeMap<RankId, &NodeFacts>, r: RankId) -> Option<f64> {
    nodes.get(&r)?.port.as_ref()?.ceiling_gbps
}

/// The first verdict of each link, before nodes are considered.
fn link_verdict(
    key: (RankId, RankId),
    d: &LinkData,
    rf: Reference,
    nodes: &BTreeMap<RankId, &NodeFacts>,
) -> LinkVerdict {
    let gbps = median(&d.round);
    let retest = median(&d.retest);
    let ceiling = match (ceiling_of(nodes, key.0), ceiling_of(nodes, key.1)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let slow = |g: f64| rf.gbps.is_some_and(|m| g < SLOW_FRACTION * m);
    // Packets the sender sent, at least (full-size 1448-byte TCP segments; jumbo frames send
    // fewer, so the loss rate is underestimated, never overestimated).
    let packets = gbps
        .zip(rf.duration_s)
        .map(|(g, secs)| g * 1e9 * secs / 8.0 / 1448.0);
    let lossy = d.retransmits.is_some_and(|r| {
        r as f64 > rf.lossy_retransmits && packets.is_none_or(|p| r as f64 >= LOSSY_MIN_RATE * p)
    });
    let excess = if d.rdma { 0.0 } else { LATENCY_MIN_EXCESS_US };
    let latency_outlier = match (d.latency, rf.latency_p50_us) {
        (Some(l), Some(m)) => l.p50_us > LATENCY_FACTOR * m && l.p50_us - m > excess,
        _ => false,
    };
    let status = match (gbps.or(retest), retest) {
        (None, _) => LinkStatus::Unreachable,
        (Some(g), Some(r)) if (slow(g) || lossy) && !slow(r) => {
            if gbps.is_some() {
                LinkStatus::Contention
            } else {
                LinkStatus::Ok
            }
        }
        (Some(_), Some(r)) if slow(r) => LinkStatus::Slow,
        _ if lossy => LinkStatus::Lossy,
        (Some(g), _) if slow(g) || latency_outlier => LinkStatus::Slow,
        _ => LinkStatus::Ok,
    };
    LinkVerdict {
        tx: key.0,
        rx: key.1,
        status,
        gbps: gbps.map(r3),
        retest_gbps: retest.map(r3),
        fraction_of_reference: gbps
            .zip(rf.gbps.filter(|m| *m > 0.0))
            .map(|(g, m)| r3(g / m)),
        ceiling_gbps: ceiling,
        latency: d.latency,
        latency_outlier,
        retransmits: d.retransmits,
        concurrency: d.concurrency,
        explained_by: Vec::new(),
        error: d.errors.first().cloned(),
        explanation: String::new(),
    }
}

/// A bandwidth fault the node verdicts may account for (latency-only outliers are left out:
/// the ping-pong runs once per pair, from one side, and says nothing about a direction).
fn is_bw_bad(v: &LinkVerdict) -> bool {
    match v.status {
        LinkStatus::Lossy => true,
        LinkStatus::Slow => {
            !v.latency_outlier || v.fraction_of_reference.is_some_and(|f| f < SLOW_FRACTION)
        }
        _ => false,
    }
}

/// Which node directions are degraded: greedy explain-away over the directed links
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
fn unreachable_ranks(input: &JudgeInput<'_>, links: &[LinkVerdict]) -> BTreeSet<RankId> {
    let mut out: BTreeSet<RankId> = input
        .lost
        .iter()
        .copied()
        .filter(|r| *r < input.size)
        .collect();
    let mut mine: Vec<Vec<(RankId, bool)>> = vec![Vec::new(); input.size as usize];
    for l in links {
        let dead = l.status == LinkStatus::Unreachable;
        mine[l.tx as usize].push((l.rx, dead));
        mine[l.rx as usize].push((l.tx, dead));
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

/// A node cleared by its retest: flagged in a direction, retested alone against good peers in
/// that direction, and every retest was fine. Its round-phase slowness was contention.
fn cleared_by_retest(v: RankId, as_tx: bool, links: &[LinkVerdict]) -> bool {
    let retests: Vec<&LinkVerdict> = links
        .iter()
        .filter(|l| (if as_tx { l.tx } else { l.rx }) == v && l.retest_gbps.is_some())
        .collect();
    !retests.is_empty()
        && retests
            .iter()
            .all(|l| matches!(l.status, LinkStatus::Contention | LinkStatus::Ok))
}

/// Judges every link and node.
pub fn judge(input: &JudgeInput<'_>) -> Judgement {
    let mut notes = Vec::new();
    let data = collect(input, &mut notes);
    let rf = reference(&data, input.duration_s);
    let nodes: BTreeMap<RankId, &NodeFacts> = input.nodes.iter().map(|n| (n.rank, n)).collect();
    let mut links: Vec<LinkVerdict> = data
        .iter()
        .map(|(&k, d)| link_verdict(k, d, rf, &nodes))
        .collect();
    let dead = unreachable_ranks(input, &links);
    let bad: Vec<(RankId, RankId, bool)> = links
        .iter()
        .filter(|l| l.status != LinkStatus::Unreachable)
        .map(|l| (l.tx, l.rx, is_bw_bad(l)))
        .collect();
    let (mut tx_flags, mut rx_flags) = attribute(input.size, &bad, &dead);
    // A node fine when retested alone against good peers was slow in its rounds because of
    // the fabric: its links in that direction become contention, not its fault.
    let cleared_tx: BTreeSet<RankId> = tx_flags
        .iter()
        .copied()
        .filter(|&v| cleared_by_retest(v, true, &links))
        .collect();
    let cleared_rx: BTreeSet<RankId> = rx_flags
        .iter()
        .copied()
        .filter(|&v| cleared_by_retest(v, false, &links))
        .collect();
    tx_flags.retain(|v| !cleared_tx.contains(v));
    rx_flags.retain(|v| !cleared_rx.contains(v));
    for l in &mut links {
        if is_bw_bad(l) {
            if tx_flags.contains(&l.tx) {
                l.explained_by.push(l.tx);
            }
            if rx_flags.contains(&l.rx) {
                l.explained_by.push(l.rx);
            }
            if l.explained_by.is_empty()
                && (cleared_tx.contains(&l.tx) || cleared_rx.contains(&l.rx))
            {
                l.status = LinkStatus::Contention;
            }
        }
        l.explanation = explain_link(l, rf, &nodes, &dead);
    }
    let mut rows: Vec<Vec<&LinkVerdict>> = vec![Vec::new(); input.size as usize];
    let mut cols: Vec<Vec<&LinkVerdict>> = vec![Vec::new(); input.size as usize];
    for l in &links {
        rows[l.tx as usize].push(l);
        cols[l.rx as usize].push(l);
    }
    let verdicts = (0..input.size)
        .map(|r| {
            let status = if dead.contains(&r) {
                NodeStatus::Unreachable
            } else {
                NodeStatus::of(tx_flags.contains(&r), rx_flags.contains(&r))
            };
            let ctx = NodeCtx {
                row: &rows[r as usize],
                col: &cols[r as usize],
                rf,
                input,
                nodes: &nodes,
            };
            node_verdict(r, status, &ctx)
        })
        .collect();
    Judgement {
        reference_gbps: rf.gbps.map(r3),
        links,
        nodes: verdicts,
        notes,
    }
}

pub(crate) fn host_of(nodes: &BTreeMap<RankId, &NodeFacts>, r: RankId) -> String {
    nodes
        .get(&r)
        .map_or_else(|| format!("rank {r}"), |n| n.host.clone())
}

fn explain_link(
    l: &LinkVerdict,
    rf: Reference,
    nodes: &BTreeMap<RankId, &NodeFacts>,
    dead: &BTreeSet<RankId>,
) -> String {
    let g = |x: f64| format!("{} Gb/s", fmt_sig(x));
    let measured = match (l.gbps, l.fraction_of_reference, rf.gbps) {
        (Some(x), Some(f), Some(m)) => {
            format!("{}, {:.0}% of the fleet's {}", g(x), 100.0 * f, g(m))
        }
        (Some(x), _, _) => g(x),
        (None, _, _) => String::new(),
    };
    match l.status {
        LinkStatus::Ok => measured,
        LinkStatus::Unreachable => {
            let who: Vec<String> = [l.tx, l.rx]
                .iter()
                .filter(|r| dead.contains(r))
                .map(|&r| host_of(nodes, r))
                .collect();
            if who.is_empty() {
                format!(
                    "nothing measured ({}), though both ranks answered elsewhere",
                    l.error.as_deref().unwrap_or("no result")
                )
            } else {
                format!("nothing measured: {} unreachable", who.join(" and "))
            }
        }
        LinkStatus::Contention => match l.retest_gbps {
            Some(alone) => format!(
                "{measured} with {} flows at once, {} alone: the fabric was oversubscribed, not this link",
                l.concurrency.unwrap_or(1),
                g(alone)
            ),
            None => format!(
                "{measured} with {} flows at once; the slow end was fine when retested alone against good peers: the fabric was oversubscribed",
                l.concurrency.unwrap_or(1)
            ),
        },
        LinkStatus::Lossy => format!(
            "{measured}; {} retransmits, more than {:.0} ({}× the median link's): packets are lost on this path",
            l.retransmits.unwrap_or(0),
            rf.lossy_retransmits,
            LOSSY_FACTOR
        ),
        LinkStatus::Slow => explain_slow(l, rf, nodes, &measured),
    }
}

fn explain_slow(
    l: &LinkVerdict,
    rf: Reference,
    nodes: &BTreeMap<RankId, &NodeFacts>,
    measured: &str,
) -> String {
    if !l.explained_by.is_empty() {
        let who: Vec<String> = l
            .explained_by
            .iter()
            .map(|&r| {
                let dir = if r == l.tx { "sending" } else { "receiving" };
                format!("{} is slow {dir}", host_of(nodes, r))
            })
            .collect();
        return format!("{measured}: {}", who.join(" and "));
    }
    if let (Some(c), Some(m)) = (l.ceiling_gbps, rf.gbps) {
        if c < SLOW_FRACTION * m {
            let low = if ceiling_of(nodes, l.tx) == Some(c) {
                l.tx
            } else {
                l.rx
            };
            return format!(
                "{measured}: the pair's ceiling is {} Gb/s ({}'s port)",
                fmt_sig(c),
                host_of(nodes, low)
            );
        }
    }
    if l.latency_outlier && l.fraction_of_reference.is_none_or(|f| f >= SLOW_FRACTION) {
        let p50 = l.latency.map_or(0.0, |x| x.p50_us);
        return format!(
            "latency p50 {} µs, more than {LATENCY_FACTOR}× the median {} µs",
            fmt_sig(p50),
            fmt_sig(rf.latency_p50_us.unwrap_or(0.0))
        );
    }
    if l.retest_gbps.is_some() {
        return format!("{measured}, and as slow alone: both nodes are fine with other peers: suspect this link (cable, transceiver, switch ports or route)");
    }
    format!("{measured}; both nodes are fine with other peers: suspect this link (cable, transceiver, switch ports or route)")
}

/// What a node's verdict is drawn from: its row and column of links, and the fleet.
struct NodeCtx<'a> {
    row: &'a [&'a LinkVerdict],
    col: &'a [&'a LinkVerdict],
    rf: Reference,
    input: &'a JudgeInput<'a>,
    nodes: &'a BTreeMap<RankId, &'a NodeFacts>,
}

fn node_verdict(r: RankId, status: NodeStatus, ctx: &NodeCtx<'_>) -> NodeVerdict {
    let (rf, input) = (ctx.rf, ctx.input);
    let host = host_of(ctx.nodes, r);
    let (row, col) = (ctx.row, ctx.col);
    let med =
        |ls: &[&LinkVerdict]| median(&ls.iter().filter_map(|l| l.gbps).collect::<Vec<_>>()).map(r3);
    let bad = |ls: &[&LinkVerdict]| ls.iter().filter(|l| l.status.is_bad()).count() as u32;
    let (tx_median_gbps, rx_median_gbps) = (med(row), med(col));
    let explanation = match status {
        NodeStatus::Ok => String::new(),
        NodeStatus::Unreachable => {
            let why = if input.lost.contains(&r) {
                "the coordinator lost it (it died, never arrived or stopped answering)".to_string()
            } else {
                let peers = row
                    .iter()
                    .chain(col.iter())
                    .filter(|l| l.status == LinkStatus::Unreachable)
                    .count();
                format!("{peers} of its links measured nothing")
            };
            format!("{host} unreachable: {why}")
        }
        _ => {
            let figures = match status {
                NodeStatus::TxDegraded => side(tx_median_gbps, rf.gbps, "as sender"),
                NodeStatus::RxDegraded => side(rx_median_gbps, rf.gbps, "as receiver"),
                _ => format!(
                    "{}, {}",
                    side(tx_median_gbps, rf.gbps, "as sender"),
                    side(rx_median_gbps, rf.gbps, "as receiver")
                ),
            };
            let why = cause(r, status, input).unwrap_or_else(|| {
                "nothing in its inventory differs from the other nodes: look at shapers, the cable and its switch port".to_string()
            });
            format!("{host} {}: {why} ({figures})", status.as_str())
        }
    };
    NodeVerdict {
        rank: r,
        host,
        status,
        tx_median_gbps,
        rx_median_gbps,
        bad_tx_links: bad(row),
        bad_rx_links: bad(col),
        explanation,
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
        .find(|f| f.attribute.is_none() && !f.id.starts_with("fleet.") && 2 * f.ranks.len() < total)
        .map(|f| format!("its probe reports {}: {}", f.id, f.message))
}

/// The retest phase: each node degraded in a direction, alone against two good peers in that
/// direction (`v → g` for tx, `g → v` for rx), then each bad link not explained by a node,
/// alone; one flow per round so nothing contends. Good peers are `Ok` nodes with no bad link
/// of their own (links put down to a degraded node do not count), the fastest (by the lower of their tx and rx medians) first. At most `max_rounds` rounds:
/// nodes first, then links from the slowest.
pub fn retest_plan(nodes: &[NodeVerdict], links: &[LinkVerdict], max_rounds: usize) -> Vec<Round> {
    // A good peer's bad links, if any, are all put down to a degraded node.
    let mut unexplained: BTreeMap<RankId, usize> = BTreeMap::new();
    for l in links
        .iter()
        .filter(|l| l.status.is_bad() && l.explained_by.is_empty())
    {
        *unexplained.entry(l.tx).or_default() += 1;
        *unexplained.entry(l.rx).or_default() += 1;
    }
    let mut good: Vec<&NodeVerdict> = nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Ok && !unexplained.contains_key(&n.rank))
        .collect();
    let key = |n: &NodeVerdict| {
        n.tx_median_gbps
            .unwrap_or(0.0)
            .min(n.rx_median_gbps.unwrap_or(0.0))
    };
    good.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.rank.cmp(&b.rank)));
    let mut flows: Vec<Flow> = Vec::new();
    let push = |tx: RankId, rx: RankId, flows: &mut Vec<Flow>| {
        if tx != rx && !flows.iter().any(|f| f.tx == tx && f.rx == rx) {
            flows.push(Flow {
                tx,
                rx,
                latency: false,
            });
        }
    };
    for n in nodes {
        let (t, r) = match n.status {
            NodeStatus::TxDegraded => (true, false),
            NodeStatus::RxDegraded => (false, true),
            NodeStatus::Both => (true, true),
            _ => continue,
        };
        for g in good.iter().filter(|g| g.rank != n.rank).take(2) {
            if t {
                push(n.rank, g.rank, &mut flows);
            }
            if r {
                push(g.rank, n.rank, &mut flows);
            }
        }
    }
    let mut suspects: Vec<&LinkVerdict> = links
        .iter()
        .filter(|l| {
            matches!(l.status, LinkStatus::Slow | LinkStatus::Lossy) && l.explained_by.is_empty()
        })
        .collect();
    suspects.sort_by(|a, b| {
        a.fraction_of_reference
            .unwrap_or(0.0)
            .total_cmp(&b.fraction_of_reference.unwrap_or(0.0))
            .then((a.tx, a.rx).cmp(&(b.tx, b.rx)))
    });
    for l in suspects {
        push(l.tx, l.rx, &mut flows);
    }
    flows
        .into_iter()
        .take(max_rounds)
        .map(|f| Round { flows: vec![f] })
        .collect()
}

/// The fleet finding on the whole fleet's rate against its ceilings, when it runs far below.
pub fn below_ceiling(j: &Judgement, nodes: &[NodeFacts]) -> Option<FleetFinding> {
    let ceilings: Vec<f64> = j.links.iter().filter_map(|l| l.ceiling_gbps).collect();
    let (m, c) = (j.reference_gbps?, median(&ceilings)?);
    (m < FLEET_CEILING_FRACTION * c).then(|| FleetFinding {
        id: "fleet.below_ceiling".to_string(),
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
