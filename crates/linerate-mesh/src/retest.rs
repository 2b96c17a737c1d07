//! The retest phase: what to measure again, alone, once the rounds are over, so that the final
//! verdicts can tell a bad link or node from contention, load or a dead peer
//! ([`crate::judge`] confirms nothing without it).

use std::collections::{BTreeMap, BTreeSet};

use crate::judge::{LinkStatus, LinkVerdict, NodeSide, NodeStatus, NodeVerdict};
use crate::schedule::{Flow, Round};
use crate::types::RankId;

/// A link no node accounts for that a retest can decide: unconfirmed (slow, lossy or late in
/// its round), or failed, between two live ranks.
fn is_link_suspect(l: &LinkVerdict, dead: &BTreeSet<RankId>) -> bool {
    let suspect = match l.status {
        LinkStatus::Unconfirmed => l.explained_by.is_empty(),
        LinkStatus::CutShort | LinkStatus::Unreachable => true,
        LinkStatus::Ok | LinkStatus::Slow | LinkStatus::Lossy | LinkStatus::Contention => false,
    };
    suspect && !dead.contains(&l.tx) && !dead.contains(&l.rx)
}

/// The retest phase, from the verdicts on the rounds alone: each suspected node against two
/// good peers on its suspected side (`v → g` as sender, `g → v` as receiver), then each
/// suspect link no node accounts for, alone (slowest first), then each other link whose
/// latency stood out in its round, then each link whose measurement failed between two live
/// ranks; every retest of a link whose latency stood out carries its ping-pong.
/// One flow per round so nothing contends. Good peers are `ok` nodes their rounds did not
/// suspect, those on the fewest suspect links no node accounts for first (links put down to a
/// suspected node do not count), then the fastest (by the lower of their tx and rx medians).
/// At most `max_rounds` rounds, in that order.
pub fn retest_plan(nodes: &[NodeVerdict], links: &[LinkVerdict], max_rounds: usize) -> Vec<Round> {
    let dead: BTreeSet<RankId> = nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Unreachable)
        .map(|n| n.rank)
        .collect();
    let mut touched: BTreeMap<RankId, usize> = BTreeMap::new();
    for l in links.iter().filter(|l| is_link_suspect(l, &dead)) {
        *touched.entry(l.tx).or_default() += 1;
        *touched.entry(l.rx).or_default() += 1;
    }
    let mut good: Vec<&NodeVerdict> = nodes
        .iter()
        .filter(|n| n.status == NodeStatus::Ok && n.suspect.is_none())
        .collect();
    let speed = |n: &NodeVerdict| {
        n.tx_median_gbps
            .unwrap_or(0.0)
            .min(n.rx_median_gbps.unwrap_or(0.0))
    };
    let touches = |n: &NodeVerdict| touched.get(&n.rank).copied().unwrap_or(0);
    good.sort_by(|a, b| {
        touches(a)
            .cmp(&touches(b))
            .then(speed(b).total_cmp(&speed(a)))
            .then(a.rank.cmp(&b.rank))
    });
    let mut flows: Vec<Flow> = Vec::new();
    // A latency outlier's retest carries the ping-pong, whatever else it is retested for: its
    // rate may be contention while its round trip is the fault.
    let late: BTreeSet<(RankId, RankId)> = links
        .iter()
        .filter(|l| l.latency_outlier && !dead.contains(&l.tx) && !dead.contains(&l.rx))
        .map(|l| (l.tx, l.rx))
        .collect();
    let push = |f: Flow, flows: &mut Vec<Flow>| {
        if f.tx == f.rx {
            return;
        }
        let latency = f.latency || late.contains(&(f.tx, f.rx));
        match flows.iter_mut().find(|g| g.tx == f.tx && g.rx == f.rx) {
            Some(g) => g.latency |= latency,
            None => flows.push(Flow { latency, ..f }),
        }
    };
    for n in nodes {
        let suspected = match n.status {
            NodeStatus::Unconfirmed => n.suspect,
            NodeStatus::TxDegraded | NodeStatus::RxDegraded | NodeStatus::Both => Some(n.status),
            NodeStatus::Ok | NodeStatus::Unreachable => None,
        };
        let Some(s) = suspected else { continue };
        for g in good.iter().filter(|g| g.rank != n.rank).take(2) {
            if s.covers(NodeSide::Tx) {
                push(flow(n.rank, g.rank, false), &mut flows);
            }
            if s.covers(NodeSide::Rx) {
                push(flow(g.rank, n.rank, false), &mut flows);
            }
        }
    }
    let mut suspects: Vec<&LinkVerdict> = links
        .iter()
        .filter(|l| is_link_suspect(l, &dead) && l.status == LinkStatus::Unconfirmed)
        .collect();
    suspects.sort_by(|a, b| {
        a.fraction_of_reference
            .unwrap_or(0.0)
            .total_cmp(&b.fraction_of_reference.unwrap_or(0.0))
            .then((a.tx, a.rx).cmp(&(b.tx, b.rx)))
    });
    for l in suspects {
        push(flow(l.tx, l.rx, l.latency_outlier), &mut flows);
    }
    // Every other round trip that stood out: put down to a suspected node's rate, or slow in
    // a round its rate was contention in, its latency still needs a retest of its own.
    for &(tx, rx) in &late {
        push(flow(tx, rx, true), &mut flows);
    }
    for l in links
        .iter()
        .filter(|l| is_link_suspect(l, &dead) && l.status != LinkStatus::Unconfirmed)
    {
        push(flow(l.tx, l.rx, false), &mut flows);
    }
    flows
        .into_iter()
        .take(max_rounds)
        .map(|f| Round { flows: vec![f] })
        .collect()
}

fn flow(tx: RankId, rx: RankId, latency: bool) -> Flow {
    Flow { tx, rx, latency }
}
