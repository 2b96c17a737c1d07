//! The verdict on each link and node, with its explanation, from the rounds' suspicions and
//! the retests' outcomes.

use std::collections::BTreeMap;

use linerate_units::{fmt_sig, r3};

use super::evidence::{grounded, Alone, Check, Ctx, LinkData, Outcome, Reference, Rounds};
use super::{
    median, Cleared, JudgeInput, LinkStatus, LinkVerdict, NodeSide, NodeStatus, NodeVerdict,
    Unconfirmed, LATENCY_FACTOR, LOSSY_FACTOR, LOSSY_MIN_RATE, LOSSY_MIN_RETRANSMITS_UNTIMED,
    MIN_BAD_PEERS, NODE_BAD_FRACTION, SLOW_FRACTION,
};
use crate::fleet::{fmt_rate, others_phrase, FleetAttribute, FleetFinding, FleetId};
use crate::types::{NodeFacts, RankId};

/// What the suspected ends of a link decided, for a link slow in its round.
pub(super) enum Ends {
    /// Degraded nodes (confirmed alone) account for it.
    Confirmed(Vec<RankId>),
    /// Its suspected end was fine alone.
    Cleared(Cleared),
    /// Its suspected end could not be decided.
    Unconfirmed(RankId, Unconfirmed, String),
}

pub(super) fn ends(key: (RankId, RankId), ctx: &Ctx<'_>) -> Option<Ends> {
    let flagged: Vec<(RankId, NodeSide, &Outcome)> = [(key.0, NodeSide::Tx), (key.1, NodeSide::Rx)]
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
pub(super) fn decide(
    key: (RankId, RankId),
    d: &LinkData,
    rounds: &Rounds,
    ctx: &Ctx<'_>,
) -> LinkVerdict {
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
    let (status, explanation) = match latency_alone(d, rounds, ctx) {
        Some(Outcome::Confirmed { .. }) if rounds.bw() && lost.is_empty() && !status.is_bad() => {
            // Its rate was contention (or put down to a node fine alone), but its round trip
            // stood out in its round and again alone: the latency is the fault.
            let p50 = d.latency.map_or(0.0, |x| x.p50_us);
            (
                LinkStatus::Slow,
                format!(
                    "latency p50 {} µs, more than {LATENCY_FACTOR}× the fleet's typical {} µs (lower quartile of the pairs), in its round and alone; its rate: {explanation}",
                    fmt_sig(p50),
                    fmt_sig(rf.latency_p50_us.unwrap_or(0.0))
                ),
            )
        }
        _ => (status, explanation),
    };
    if status == LinkStatus::Slow {
        v.unconfirmed = None;
        v.cleared_by = None;
    }
    v.status = status;
    v.explanation = explanation;
    v
}

/// What a link's retests alone say of its round trip, when it stood out in its round and a
/// retest measured it.
pub(super) fn latency_alone(d: &LinkData, rounds: &Rounds, ctx: &Ctx<'_>) -> Option<Outcome> {
    let alone: Vec<&Alone> = d.alone.iter().filter(|a| a.latency.is_some()).collect();
    (rounds.latency_outlier && !alone.is_empty())
        .then(|| ctx.outcome(&alone, Check::Latency, d.rdma))
}

pub(super) fn gb(x: Option<f64>) -> String {
    x.map_or_else(|| "nothing".to_string(), |g| format!("{} Gb/s", fmt_sig(g)))
}

/// `9.39 Gb/s, 100% of the fleet's 9.39 Gb/s`.
pub(super) fn measured_phrase(l: &LinkVerdict, rf: &Reference) -> String {
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
pub(super) fn lost_end(
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
        // Its judgement was cut short with the rank: no retest can say what the slow round was.
        return (
            LinkStatus::CutShort,
            format!("{measured}: slow in its round, and {who} was lost before a retest could run: not judged"),
        );
    }
    (LinkStatus::Ok, measured.to_string())
}

/// A link between live ranks whose measurements failed.
pub(super) fn failed(d: &LinkData, v: &LinkVerdict, measured: &str) -> (LinkStatus, String) {
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
pub(super) fn suspect(
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
                    NodeSide::Tx => "sent",
                    NodeSide::Rx => "received",
                },
                fmt_sig(c.retest_gbps)
            );
            v.cleared_by = Some(c);
            (LinkStatus::Contention, text)
        }
        (_, Some(Ends::Unconfirmed(r, why, detail))) => {
            v.explained_by = vec![r];
            v.unconfirmed = Some(why);
            let side = if r == key.0 { NodeSide::Tx } else { NodeSide::Rx };
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

/// `84 retransmits, 2.8% of the packets sent (at least 1% and 3× the median link's 0.3% make a
/// link lossy)`; counts only when the test's length is unknown.
pub(super) fn loss_phrase(l: &LinkVerdict, rf: &Reference) -> String {
    let r = l.retransmits.unwrap_or(0);
    match rf.share(l.retransmits, l.gbps) {
        Some(share) => format!(
            "{r} retransmits, {}% of the packets sent (at least {}% and {LOSSY_FACTOR}× the median link's {}% make a link lossy)",
            fmt_sig(100.0 * share),
            fmt_sig(100.0 * LOSSY_MIN_RATE),
            fmt_sig(100.0 * rf.loss_rate.unwrap_or(0.0))
        ),
        None => format!(
            "{r} retransmits, more than {:.0} ({LOSSY_FACTOR}× the median link's, and at least {LOSSY_MIN_RETRANSMITS_UNTIMED})",
            rf.lossy_retransmits
        ),
    }
}

/// Why a suspect stays unconfirmed, in words.
pub(super) fn why_text(why: Unconfirmed, gbps: Option<f64>, detail: &str) -> String {
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
        Unconfirmed::SameHost => format!(
            "its retest alone ran between ranks that share {detail}: the traffic never leaves that host, so its rate is the host's CPU and scheduling, shared with every rank and program there, not a link or a node"
        ),
    }
}

/// The explanation of a confirmed slow or lossy link.
pub(super) fn confirmed_text(
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
                let side = if r == l.tx {
                    NodeSide::Tx
                } else {
                    NodeSide::Rx
                };
                if status == LinkStatus::Lossy {
                    format!("{} loses packets {}", ctx.label(r), side.sending())
                } else {
                    format!("{} is slow {}", ctx.label(r), side.sending())
                }
            })
            .collect();
        // A slow link that also lost packets says so: the loss is what cost it its rate.
        if status == LinkStatus::Lossy || rounds.lossy {
            return format!("{measured}: {}; {}", who.join(" and "), loss_phrase(l, rf));
        }
        return format!("{measured}: {}", who.join(" and "));
    }
    if status == LinkStatus::Lossy {
        return format!(
            "{measured}{alone}; {}, in its round and alone: packets are lost on this path",
            loss_phrase(l, rf)
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
            "latency p50 {} µs, more than {LATENCY_FACTOR}× the fleet's typical {} µs (lower quartile of the pairs), in its round and alone",
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

pub(super) fn node_verdict(
    r: RankId,
    row: &[&LinkVerdict],
    col: &[&LinkVerdict],
    ctx: &Ctx<'_>,
) -> NodeVerdict {
    let med =
        |ls: &[&LinkVerdict]| median(&ls.iter().filter_map(|l| l.gbps).collect::<Vec<_>>()).map(r3);
    let bad = |ls: &[&LinkVerdict]| ls.iter().filter(|l| l.status.is_bad()).count() as u32;
    let (tx_median_gbps, rx_median_gbps) = (med(row), med(col));
    let tx = ctx.outcomes.get(&(r, NodeSide::Tx));
    let rx = ctx.outcomes.get(&(r, NodeSide::Rx));
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

pub(super) fn node_explanation(
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
        let parts: Vec<String> = [
            (NodeSide::Tx, v.retest_tx_gbps),
            (NodeSide::Rx, v.retest_rx_gbps),
        ]
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
            let why = match losses(s, row, col, rf) {
                Some(lost) => format!("{lost}; {why}"),
                None => why,
            };
            format!(
                "{label} {}: {why} ({}; alone against good peers {})",
                s.as_str(),
                figures(s),
                alone(s)
            )
        }
    }
}

/// `packets are lost receiving: 3 of its 3 links into it retransmitted 1.3-3.1% of their
/// packets`, when a degraded node's bad links on its degraded side(s) lose packets.
pub(super) fn losses(
    s: NodeStatus,
    row: &[&LinkVerdict],
    col: &[&LinkVerdict],
    rf: &Reference,
) -> Option<String> {
    let mut parts = Vec::new();
    for (side, links, dir) in [(NodeSide::Tx, row, "out of"), (NodeSide::Rx, col, "into")] {
        if !s.covers(side) {
            continue;
        }
        let peers: Vec<&&LinkVerdict> = links.iter().filter(|l| l.tx != l.rx).collect();
        let shares: Vec<f64> = peers
            .iter()
            .filter(|l| l.status.is_bad() && rf.lossy(l.retransmits, l.gbps))
            .filter_map(|l| rf.share(l.retransmits, l.gbps))
            .collect();
        if shares.is_empty() {
            continue;
        }
        let lo = shares.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = shares.iter().copied().fold(0.0, f64::max);
        let range = if fmt_sig(100.0 * lo) == fmt_sig(100.0 * hi) {
            format!("{}%", fmt_sig(100.0 * hi))
        } else {
            format!("{}-{}%", fmt_sig(100.0 * lo), fmt_sig(100.0 * hi))
        };
        parts.push(format!(
            "packets are lost {}: {} of its {} links {dir} it retransmitted {range} of their packets",
            side.sending(),
            shares.len(),
            peers.len()
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

pub(super) fn side(node: Option<f64>, fleet: Option<f64>, what: &str) -> String {
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
pub(super) fn cause(r: RankId, status: NodeStatus, input: &JudgeInput<'_>) -> Option<String> {
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

/// What a pair's round trips say: it stood out in its round, and what its retests alone said
/// of it (`Some(true)`: late alone too, `Some(false)`: on time alone, `None`: not retested).
#[derive(Debug, Clone, Copy)]
pub(super) struct Late {
    pub(super) tx: RankId,
    pub(super) rx: RankId,
    pub(super) outlier: bool,
    pub(super) alone: Option<bool>,
}

impl Late {
    /// Counts against its nodes: late in its round and not on time alone.
    fn counts(&self) -> bool {
        self.outlier && self.alone != Some(false)
    }
}

/// The nodes every round trip through which is late: greedily, the node with the most
/// latency outliers among its pairs not yet put down to another (outliers on time alone do
/// not count), while they are at least [`MIN_BAD_PEERS`] and [`NODE_BAD_FRACTION`] of its pairs
/// measured, and at least one of them was late alone too (as a degraded node's retests
/// against good peers confirm its links slow in their rounds). A delay on a node's link
/// lengthens every round trip through it, while its peers' pairs with each other stay on time;
/// a round trip cannot tell in which direction the delay is.
pub(super) fn late_nodes(size: u32, pairs: &[Late]) -> Vec<RankId> {
    let mut late: Vec<RankId> = Vec::new();
    loop {
        let best = (0..size)
            .filter(|r| !late.contains(r))
            .map(|r| {
                let mine: Vec<&Late> = pairs
                    .iter()
                    .filter(|p| !late.contains(&p.tx) && !late.contains(&p.rx))
                    .filter(|p| p.tx == r || p.rx == r)
                    .collect();
                let outliers = mine.iter().filter(|p| p.counts()).count();
                let confirmed = mine.iter().any(|p| p.counts() && p.alone == Some(true));
                (confirmed, outliers, mine.len(), std::cmp::Reverse(r))
            })
            .filter(|&(confirmed, outliers, all, _)| {
                confirmed
                    && outliers >= MIN_BAD_PEERS
                    && outliers as f64 >= NODE_BAD_FRACTION * all as f64
            })
            .max_by_key(|&(_, outliers, _, r)| (outliers, r));
        match best {
            Some((_, _, _, std::cmp::Reverse(r))) => late.push(r),
            None => return late,
        }
    }
}

/// Puts each latency outlier of a late node ([`late_nodes`]) down to it: a link not judged
/// bad otherwise becomes `slow` on its latency, as a degraded node's retests account for its
/// links slow in their rounds; and says so in the node's explanation.
pub(super) fn explain_late(
    late: &[RankId],
    pairs: &[Late],
    links: &mut [LinkVerdict],
    nodes: &mut [NodeVerdict],
    ctx: &Ctx<'_>,
) {
    let mut done: Vec<RankId> = Vec::new();
    for &r in late {
        let label = ctx.label(r);
        let mine: Vec<&Late> = pairs
            .iter()
            .filter(|p| (p.tx == r || p.rx == r) && !done.contains(&p.tx) && !done.contains(&p.rx))
            .collect();
        let outliers: Vec<(RankId, RankId)> = mine
            .iter()
            .filter(|p| p.counts())
            .map(|p| (p.tx, p.rx))
            .collect();
        done.push(r);
        let pairs_text = format!("{} of its {} pairs", outliers.len(), mine.len());
        let mut p50s = Vec::new();
        for l in links
            .iter_mut()
            .filter(|l| outliers.contains(&(l.tx, l.rx)))
        {
            let p50 = l.latency.map_or(0.0, |x| x.p50_us);
            p50s.push(p50);
            if l.status.is_bad() {
                if !l.explained_by.contains(&r) {
                    l.explained_by.push(r);
                }
            } else {
                l.explained_by = vec![r];
                l.explanation = format!(
                    "latency p50 {} µs, more than {LATENCY_FACTOR}× the fleet's typical {} µs (lower quartile of the pairs), in its round; its rate: {}",
                    fmt_sig(p50),
                    fmt_sig(ctx.rf.latency_p50_us.unwrap_or(0.0)),
                    l.explanation
                );
                l.status = LinkStatus::Slow;
                l.unconfirmed = None;
                l.cleared_by = None;
            }
            l.explanation = format!(
                "{}; every round trip through {label} is late ({pairs_text}), and no pair without it: the delay is on {label}'s side (a round trip cannot tell in which direction)",
                l.explanation
            );
        }
        let lo = p50s.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = p50s.iter().copied().fold(0.0, f64::max);
        let range = if fmt_sig(lo) == fmt_sig(hi) {
            format!("{} µs", fmt_sig(hi))
        } else {
            format!("{}-{} µs", fmt_sig(lo), fmt_sig(hi))
        };
        if let Some(n) = nodes.iter_mut().find(|n| n.rank == r) {
            let text = format!(
                "round trips through {label} are late: {pairs_text} at p50 {range}, against the fleet's typical {} µs (a round trip cannot tell in which direction its link delays)",
                fmt_sig(ctx.rf.latency_p50_us.unwrap_or(0.0))
            );
            n.explanation = if n.explanation.is_empty() {
                text
            } else {
                format!("{}; {text}", n.explanation)
            };
        }
    }
}
