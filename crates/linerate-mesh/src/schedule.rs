//! Which links are measured in which round. A round is a set of directed flows that run at the
//! same time; rounds run one after another, separated by a barrier.

use serde::{Deserialize, Serialize};

use crate::types::RankId;

/// One directed measurement: `tx` sends to `rx` (rx runs the server side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Flow {
    pub tx: RankId,
    pub rx: RankId,
    /// Also run the latency ping-pong for this pair after the bandwidth test (once per
    /// unordered pair, on the first of its two directions).
    pub latency: bool,
}

/// Flows that run concurrently.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    pub flows: Vec<Flow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleKind {
    Pairwise,
    Ring,
    Quick,
    Incast,
    File,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub kind: ScheduleKind,
    pub size: u32,
    pub rounds: Vec<Round>,
}

/// The circle method: n−1 rounds (n rounded up to even, one rank sitting out each round when n
/// is odd) of ⌊n/2⌋ disjoint pairs; each round is measured one direction at a time, so the
/// schedule has 2(n−1) rounds of directed flows and every ordered pair appears exactly once.
pub fn pairwise(size: u32) -> Schedule {
    let mut rounds = Vec::new();
    if size >= 2 {
        // An odd count gets a phantom rank `m - 1`: its partner sits the round out.
        let m = size + size % 2;
        for r in 0..m - 1 {
            let mut pairs = Vec::new();
            // Rank m-1 is fixed; the others rotate around it.
            let rot = |i: u32| (r + i) % (m - 1);
            let mut add = |a: u32, b: u32| {
                if a < size && b < size {
                    pairs.push((a.min(b), a.max(b)));
                }
            };
            add(m - 1, rot(0));
            for i in 1..m / 2 {
                add(rot(i), rot(m - 1 - i));
            }
            pairs.sort_unstable();
            let forward = pairs
                .iter()
                .map(|&(a, b)| Flow {
                    tx: a,
                    rx: b,
                    latency: true,
                })
                .collect();
            let backward = pairs
                .iter()
                .map(|&(a, b)| Flow {
                    tx: b,
                    rx: a,
                    latency: false,
                })
                .collect();
            rounds.push(Round { flows: forward });
            rounds.push(Round { flows: backward });
        }
    }
    Schedule {
        kind: ScheduleKind::Pairwise,
        size,
        rounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn pairwise_covers_every_ordered_pair_once_and_no_rank_twice_in_a_round() {
        for n in 2..=64u32 {
            let s = pairwise(n);
            let m = n + n % 2;
            assert_eq!(s.rounds.len() as u32, 2 * (m - 1), "n={n}");
            let mut seen = BTreeSet::new();
            let mut lat = 0;
            for round in &s.rounds {
                assert_eq!(round.flows.len() as u32, n / 2, "n={n}");
                let mut busy = BTreeSet::new();
                for f in &round.flows {
                    assert!(f.tx < n && f.rx < n && f.tx != f.rx);
                    assert!(
                        busy.insert(f.tx) && busy.insert(f.rx),
                        "n={n}: rank twice in a round"
                    );
                    assert!(seen.insert((f.tx, f.rx)), "n={n}: {f:?} twice");
                    lat += usize::from(f.latency);
                }
            }
            assert_eq!(seen.len() as u32, n * (n - 1), "n={n}");
            assert_eq!(
                lat as u32,
                n * (n - 1) / 2,
                "n={n}: one latency test per pair"
            );
        }
    }

    #[test]
    fn fewer_than_two_ranks_have_nothing_to_measure() {
        assert!(pairwise(0).rounds.is_empty());
        assert!(pairwise(1).rounds.is_empty());
    }
}
