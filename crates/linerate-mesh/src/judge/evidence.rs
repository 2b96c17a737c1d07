//! What the verdicts are drawn from: each link's measurements (rounds and retests alone,
//! with their hosts' load), the fleet's reference, what a link's rounds suspect, what a
//! suspect's retests decide, and the names of the ranks.

use std::collections::{BTreeMap, BTreeSet};

use linerate_units::fmt_sig;

use super::{
    is_loaded, is_loaded_for_latency, median, quantile, JudgeInput, NodeSide, Unconfirmed,
    LATENCY_FACTOR, LATENCY_MIN_EXCESS_US, LATENCY_REFERENCE_QUANTILE, LOSSY_FACTOR,
    LOSSY_MIN_RATE, LOSSY_MIN_RETRANSMITS, LOSSY_MIN_RETRANSMITS_UNTIMED, REFERENCE_QUANTILE,
    SLOW_FRACTION,
};
use crate::types::{HostLoad, MeshLatency, NodeFacts, Phase, RankId, Transport};

/// One retest alone of a link.
#[derive(Debug, Clone)]
pub(super) struct Alone {
    pub(super) gbps: Option<f64>,
    pub(super) error: Option<String>,
    pub(super) latency: Option<MeshLatency>,
    pub(super) retransmits: Option<u64>,
    /// The busier of its two hosts while it ran, and whose it is.
    pub(super) load: Option<(RankId, HostLoad)>,
}

impl Alone {
    /// Its rate, when it ended cleanly.
    pub(super) fn clean(&self) -> Option<f64> {
        self.gbps.filter(|_| self.error.is_none())
    }

    pub(super) fn loaded(&self) -> bool {
        self.load.is_some_and(|(_, l)| is_loaded(&l))
    }

    /// Loaded enough to bend what `check` measures: a round trip is bent by less load than a
    /// rate ([`is_loaded_for_latency`]).
    pub(super) fn loaded_for(&self, check: Check) -> bool {
        match check {
            Check::Latency => self.load.is_some_and(|(_, l)| is_loaded_for_latency(&l)),
            Check::Bandwidth { .. } => self.loaded(),
        }
    }
}

/// Everything measured on one directed link.
#[derive(Debug, Default)]
pub(super) struct LinkData {
    /// Rates of the round measurements that ended cleanly.
    pub(super) round: Vec<f64>,
    /// Rates of the round measurements that ended with an error.
    pub(super) round_cut: Vec<f64>,
    /// A round measurement ended with an error or measured nothing.
    pub(super) round_failed: bool,
    pub(super) alone: Vec<Alone>,
    /// Every error, rounds and retests, in order.
    pub(super) errors: Vec<String>,
    pub(super) latency: Option<MeshLatency>,
    pub(super) retransmits: Option<u64>,
    pub(super) concurrency: Option<u32>,
    pub(super) rdma: bool,
}

impl LinkData {
    pub(super) fn nothing_measured(&self) -> bool {
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
pub(super) fn busier_end(
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
pub(super) fn collect(
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
pub(super) struct Reference {
    pub(super) gbps: Option<f64>,
    /// The fleet's typical ping-pong p50 ([`LATENCY_REFERENCE_QUANTILE`]), µs.
    pub(super) latency_p50_us: Option<f64>,
    /// Without the test's length: the retransmits above which a link is lossy.
    pub(super) lossy_retransmits: f64,
    /// The median link's retransmits as a share of the packets it sent (rounds, cleanly
    /// measured), when the test's length is known.
    pub(super) loss_rate: Option<f64>,
    pub(super) duration_s: Option<f64>,
}

impl Reference {
    pub(super) fn new(
        links: &BTreeMap<(RankId, RankId), LinkData>,
        duration_s: Option<f64>,
    ) -> Self {
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
        let duration_s = duration_s.filter(|d| d.is_finite() && *d > 0.0);
        let rates: Vec<f64> = links
            .values()
            .filter_map(|d| loss_share(d.retransmits?, median(&d.round)?, duration_s?))
            .collect();
        Reference {
            gbps: quantile(&all, REFERENCE_QUANTILE),
            latency_p50_us: quantile(&lat, LATENCY_REFERENCE_QUANTILE),
            lossy_retransmits: (LOSSY_FACTOR * median(&rtx).unwrap_or(0.0))
                .max(LOSSY_MIN_RETRANSMITS_UNTIMED as f64),
            loss_rate: median(&rates),
            duration_s,
        }
    }

    pub(super) fn slow(&self, g: f64) -> bool {
        self.gbps.is_some_and(|m| g < SLOW_FRACTION * m)
    }

    /// The share of its packets a link retransmitted, when the test's length is known.
    pub(super) fn share(&self, retransmits: Option<u64>, gbps: Option<f64>) -> Option<f64> {
        loss_share(retransmits?, gbps?, self.duration_s?)
    }

    /// The share a link must reach to be lossy: [`LOSSY_MIN_RATE`], or [`LOSSY_FACTOR`] × the
    /// median link's when that is higher.
    pub(super) fn lossy_share(&self) -> f64 {
        (LOSSY_FACTOR * self.loss_rate.unwrap_or(0.0)).max(LOSSY_MIN_RATE)
    }

    /// Retransmits a real share of the packets sent, far above the fleet's share, and enough
    /// of them to count ([`LOSSY_FACTOR`]); without the test's length, far above the fleet's
    /// count.
    pub(super) fn lossy(&self, retransmits: Option<u64>, gbps: Option<f64>) -> bool {
        let Some(r) = retransmits else {
            return false;
        };
        match self.share(retransmits, gbps) {
            Some(share) => r >= LOSSY_MIN_RETRANSMITS && share >= self.lossy_share(),
            None => r as f64 > self.lossy_retransmits,
        }
    }

    pub(super) fn latency_outlier(&self, l: Option<MeshLatency>, rdma: bool) -> bool {
        let excess = if rdma { 0.0 } else { LATENCY_MIN_EXCESS_US };
        match (l, self.latency_p50_us) {
            (Some(l), Some(m)) => l.p50_us > LATENCY_FACTOR * m && l.p50_us - m > excess,
            _ => false,
        }
    }
}

/// Retransmits as a share of the packets `gbps` carried for `secs` (full-size 1448-byte TCP
/// segments: jumbo frames send fewer, so the share is underestimated, never overestimated);
/// `None` when nothing was carried.
pub(super) fn loss_share(retransmits: u64, gbps: f64, secs: f64) -> Option<f64> {
    let packets = gbps * 1e9 * secs / 8.0 / 1448.0;
    (packets.is_finite() && packets >= 1.0).then(|| retransmits as f64 / packets)
}

/// What a link's rounds say: its figure, and whether it is a suspect.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rounds {
    pub(super) gbps: Option<f64>,
    pub(super) slow: bool,
    pub(super) lossy: bool,
    pub(super) latency_outlier: bool,
}

impl Rounds {
    pub(super) fn of(d: &LinkData, rf: &Reference) -> Self {
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
    pub(super) fn bw(&self) -> bool {
        self.slow || self.lossy
    }

    pub(super) fn suspect(&self) -> bool {
        self.bw() || self.latency_outlier
    }
}

/// What a suspect's retests alone decide.
#[derive(Debug, Clone)]
pub(super) enum Outcome {
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
    pub(super) fn gbps(&self) -> Option<f64> {
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
pub(super) enum Check {
    Bandwidth { slow: bool, lossy: bool },
    Latency,
}

impl Check {
    pub(super) const RATE: Check = Check::Bandwidth {
        slow: true,
        lossy: true,
    };

    pub(super) fn bandwidth(self) -> bool {
        matches!(self, Check::Bandwidth { .. })
    }
}

/// `other programs held 1.6 of node01's 2 cores (the rank waited 0.4 core for a CPU)`.
pub(super) fn load_phrase(label: &str, l: &HostLoad) -> String {
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
pub(super) struct Ctx<'a> {
    pub(super) input: &'a JudgeInput<'a>,
    pub(super) rf: Reference,
    pub(super) nodes: BTreeMap<RankId, &'a NodeFacts>,
    pub(super) labels: BTreeMap<RankId, String>,
    /// Lost by the coordinator, or unreachable from most of their peers.
    pub(super) dead: BTreeSet<RankId>,
    /// The node sides the rounds suspect ([`attribute`]).
    pub(super) suspects: BTreeSet<(RankId, NodeSide)>,
    /// What each suspected side's retests alone decided.
    pub(super) outcomes: BTreeMap<(RankId, NodeSide), Outcome>,
}

impl Ctx<'_> {
    pub(super) fn label(&self, r: RankId) -> String {
        self.labels
            .get(&r)
            .cloned()
            .unwrap_or_else(|| format!("rank {r}"))
    }

    /// The address two ranks' traffic stays on when they share one host's network stack (the
    /// same data address, or both on loopback); `None` when it crosses a link (or is unknown).
    pub(super) fn shared_stack(&self, a: RankId, b: RankId) -> Option<String> {
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
    pub(super) fn off_the_wire(&self, o: Outcome, pairs: &[(RankId, RankId)]) -> Outcome {
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
    pub(super) fn outcome(&self, alone: &[&Alone], check: Check, rdma: bool) -> Outcome {
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
        let unloaded: Vec<&Alone> = counted
            .iter()
            .copied()
            .filter(|a| !a.loaded_for(check))
            .collect();
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
pub(super) fn labels(size: u32, nodes: &BTreeMap<RankId, &NodeFacts>) -> BTreeMap<RankId, String> {
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

/// A suspect whose retest came out slow on a loaded host is still confirmed when a fact
/// explains it (a node's inventory differs from the fleet's in what limits its side: a shaper, a
/// PCIe link, a link rate; a pair's ceiling below the fleet's rate): the slowness then stands
/// on the fact, not on a measurement the load could have bent.
pub(super) fn grounded(o: Outcome, explained: impl FnOnce() -> bool) -> Outcome {
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
