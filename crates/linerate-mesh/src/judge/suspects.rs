//! The suspects of the rounds: which node sides the bad links point to (greedy explain-away),
//! and which ranks are unreachable.

use std::collections::{BTreeMap, BTreeSet};

use super::evidence::LinkData;
use super::{JudgeInput, MIN_BAD_PEERS, NODE_BAD_FRACTION};
use crate::types::RankId;

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
pub(super) fn unreachable_ranks(
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
