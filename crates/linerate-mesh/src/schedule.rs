//! Which links are measured in which round. A round is a set of directed flows that run at the
//! same time; rounds run one after another, separated by a barrier.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use thiserror::Error;

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

/// Both directions of each pair as two rounds: first `a → b` for every pair (with the pair's
/// latency ping-pong), then `b → a`.
fn both_directions(pairs: &[(RankId, RankId)], rounds: &mut Vec<Round>) {
    if pairs.is_empty() {
        return;
    }
    rounds.push(Round {
        flows: pairs
            .iter()
            .map(|&(a, b)| Flow {
                tx: a,
                rx: b,
                latency: true,
            })
            .collect(),
    });
    rounds.push(Round {
        flows: pairs
            .iter()
            .map(|&(a, b)| Flow {
                tx: b,
                rx: a,
                latency: false,
            })
            .collect(),
    });
}

/// Neighbours on a ring: the links `i — i+1 (mod n)`, both directions. The edges run in
/// disjoint sets so that no rank is in two flows at once: the edges that start at an even
/// rank, then those that start at an odd one, then (odd n) the closing edge `n−1 — 0` alone;
/// each set one direction at a time. n links (one for n = 2), 2n directed measurements.
pub fn ring(size: u32) -> Schedule {
    let mut rounds = Vec::new();
    if size == 2 {
        both_directions(&[(0, 1)], &mut rounds);
    } else if size > 2 {
        let edge = |i: u32| (i, (i + 1) % size);
        // With odd n the edge n−1 — 0 shares rank 0 with edge 0 — 1: it gets its own set.
        let last = if size % 2 == 1 { size - 1 } else { size };
        let even: Vec<_> = (0..last).step_by(2).map(edge).collect();
        let odd: Vec<_> = (1..last).step_by(2).map(edge).collect();
        both_directions(&even, &mut rounds);
        both_directions(&odd, &mut rounds);
        if last != size {
            both_directions(&[edge(size - 1)], &mut rounds);
        }
    }
    Schedule {
        kind: ScheduleKind::Ring,
        size,
        rounds,
    }
}

/// ClusterKit's quick test: the upper half against the lower half, `i — i + ⌊n/2⌋`, ⌊n/2⌋
/// links measured at the same time, both directions as two rounds. With odd n the last rank
/// would go untested: it gets one more link, to rank 0, in two rounds of its own. Every rank
/// is measured in both directions; the verdicts then judge a node on one or two links.
pub fn quick(size: u32) -> Schedule {
    let half = size / 2;
    let pairs: Vec<_> = (0..half).map(|i| (i, i + half)).collect();
    let mut rounds = Vec::new();
    both_directions(&pairs, &mut rounds);
    if size % 2 == 1 && size > 1 {
        both_directions(&[(size - 1, 0)], &mut rounds);
    }
    Schedule {
        kind: ScheduleKind::Quick,
        size,
        rounds,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScheduleError {
    #[error("incast of {senders} senders needs at least {} ranks; the job has {size}", senders + 1)]
    IncastTooWide { senders: u32, size: u32 },
    #[error("incast needs at least one sender")]
    IncastNoSender,
    #[error("round file line {line}: {what}")]
    RoundFile { line: usize, what: String },
    #[error("round file has no pairs: expected lines `<round> <rank-or-host> <rank-or-host>`")]
    RoundFileEmpty,
}

/// Many to one: `k` senders at the same time into one receiver, the test of a receiver's
/// buffers and of the switch port in front of it. One round per receiver, rotating so that
/// every rank receives once: in round r rank r receives from the k ranks after it
/// (r+1 … r+k, mod n). Each rank then also sends k times, each time with a different set of
/// peers. No latency ping-pong (latency under incast measures the queue, not the link).
pub fn incast(size: u32, senders: u32) -> Result<Schedule, ScheduleError> {
    if senders == 0 {
        return Err(ScheduleError::IncastNoSender);
    }
    if senders >= size {
        return Err(ScheduleError::IncastTooWide { senders, size });
    }
    let rounds = (0..size)
        .map(|rx| Round {
            flows: (1..=senders)
                .map(|d| Flow {
                    tx: (rx + d) % size,
                    rx,
                    latency: false,
                })
                .collect(),
        })
        .collect();
    Ok(Schedule {
        kind: ScheduleKind::Incast,
        size,
        rounds,
    })
}

/// Splits every round into rounds of at most `max_flows` concurrent flows, in order, for
/// oversubscribed fabrics (`--max-concurrent-pairs`): the flows and their order are kept, only
/// the barriers between them multiply.
pub fn cap_concurrency(schedule: &Schedule, max_flows: NonZeroUsize) -> Schedule {
    let rounds = schedule
        .rounds
        .iter()
        .flat_map(|r| {
            r.flows
                .chunks(max_flows.get())
                .map(|c| Round { flows: c.to_vec() })
        })
        .collect();
    Schedule {
        kind: schedule.kind,
        size: schedule.size,
        rounds,
    }
}

/// A custom schedule in ClusterKit's `-f` form: one `<round> <a> <b>` per line, where `a` and
/// `b` are ranks (`0..size`) or host names of `hosts` (rank i = `hosts[i]`); `#` starts a
/// comment, blank lines are skipped. Each line is a pair measured both ways, like `pairwise`:
/// the file's rounds run in ascending order of their numbers (gaps allowed), each as two
/// directed rounds. Errors carry the line number: a malformed line, an unknown host, a rank
/// out of range, a rank paired with itself, a rank twice in one round.
pub fn parse_round_file(
    text: &str,
    size: u32,
    hosts: &[String],
) -> Result<Schedule, ScheduleError> {
    let mut by_round: BTreeMap<u64, Vec<(RankId, RankId)>> = BTreeMap::new();
    let mut busy: BTreeMap<u64, BTreeMap<RankId, usize>> = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |what: String| ScheduleError::RoundFile { line, what };
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let fields: Vec<&str> = content.split_whitespace().collect();
        let [round, a, b] = fields[..] else {
            return Err(err(format!(
                "expected `<round> <rank-or-host> <rank-or-host>`, found {} fields in {content:?}",
                fields.len()
            )));
        };
        let round: u64 = round
            .parse()
            .map_err(|_| err(format!("round {round:?} is not a whole number")))?;
        let a = resolve(a, size, hosts).map_err(&err)?;
        let b = resolve(b, size, hosts).map_err(&err)?;
        if a == b {
            return Err(err(format!("rank {a} is paired with itself")));
        }
        let seen = busy.entry(round).or_default();
        for r in [a, b] {
            if let Some(first) = seen.insert(r, line) {
                return Err(err(format!(
                    "rank {r} is already in round {round} (line {first}): a rank runs one test at a time"
                )));
            }
        }
        by_round.entry(round).or_default().push((a, b));
    }
    if by_round.is_empty() {
        return Err(ScheduleError::RoundFileEmpty);
    }
    let mut rounds = Vec::new();
    for pairs in by_round.values() {
        both_directions(pairs, &mut rounds);
    }
    Ok(Schedule {
        kind: ScheduleKind::File,
        size,
        rounds,
    })
}

/// A rank number below `size`, or a name of `hosts`.
fn resolve(field: &str, size: u32, hosts: &[String]) -> Result<RankId, String> {
    if field.bytes().all(|b| b.is_ascii_digit()) {
        return match field.parse::<u32>() {
            Ok(r) if r < size => Ok(r),
            _ => Err(format!(
                "rank {field} is out of range: the job has ranks 0 to {}",
                size.saturating_sub(1)
            )),
        };
    }
    match hosts.iter().position(|h| h == field) {
        Some(r) if (r as u64) < u64::from(size) => Ok(r as RankId),
        Some(r) => Err(format!(
            "host {field:?} is name {r} of --hosts, but the job has only {size} ranks"
        )),
        None if hosts.is_empty() => Err(format!(
            "{field:?} is not a rank number, and there is no host list to find it in (pass --hosts)"
        )),
        None => Err(format!("host {field:?} is not in --hosts")),
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

    /// Every flow valid, no ordered pair twice, no rank in two flows of one round; returns the
    /// set of ordered pairs.
    fn check_disjoint(s: &Schedule) -> BTreeSet<(u32, u32)> {
        let n = s.size;
        let mut seen = BTreeSet::new();
        for (i, round) in s.rounds.iter().enumerate() {
            assert!(!round.flows.is_empty(), "n={n}: round {i} empty");
            let mut busy = BTreeSet::new();
            for f in &round.flows {
                assert!(f.tx < n && f.rx < n && f.tx != f.rx, "n={n}: {f:?}");
                assert!(
                    busy.insert(f.tx) && busy.insert(f.rx),
                    "n={n}: rank twice in round {i}"
                );
                assert!(seen.insert((f.tx, f.rx)), "n={n}: {f:?} twice");
            }
        }
        seen
    }

    /// One latency test per unordered pair.
    fn latency_pairs(s: &Schedule) -> BTreeSet<(u32, u32)> {
        let mut out = BTreeSet::new();
        for f in s.rounds.iter().flat_map(|r| &r.flows).filter(|f| f.latency) {
            assert!(
                out.insert((f.tx.min(f.rx), f.tx.max(f.rx))),
                "{f:?}: latency twice"
            );
        }
        out
    }

    #[test]
    fn ring_measures_both_directions_of_every_neighbour_link() {
        for n in 2..=64u32 {
            let s = ring(n);
            let seen = check_disjoint(&s);
            let mut want = BTreeSet::new();
            for i in 0..n {
                let j = (i + 1) % n;
                want.insert((i, j));
                want.insert((j, i));
            }
            assert_eq!(seen, want, "n={n}");
            assert_eq!(latency_pairs(&s).len(), want.len() / 2, "n={n}");
            let expect_rounds = match n {
                2 => 2,
                _ if n % 2 == 0 => 4,
                _ => 6,
            };
            assert_eq!(s.rounds.len(), expect_rounds, "n={n}");
        }
        assert!(ring(0).rounds.is_empty() && ring(1).rounds.is_empty());
    }

    #[test]
    fn quick_pairs_the_upper_half_with_the_lower_half() {
        for n in 2..=64u32 {
            let s = quick(n);
            let seen = check_disjoint(&s);
            let half = n / 2;
            assert_eq!(s.rounds[0].flows.len() as u32, half, "n={n}");
            for i in 0..half {
                assert!(
                    seen.contains(&(i, i + half)) && seen.contains(&(i + half, i)),
                    "n={n}"
                );
            }
            let links = half + n % 2;
            assert_eq!(seen.len() as u32, 2 * links, "n={n}");
            assert_eq!(latency_pairs(&s).len() as u32, links, "n={n}");
            // Every rank sends and receives at least once.
            for r in 0..n {
                assert!(
                    seen.iter().any(|p| p.0 == r) && seen.iter().any(|p| p.1 == r),
                    "n={n} r={r}"
                );
            }
        }
        assert!(quick(1).rounds.is_empty());
    }

    #[test]
    fn incast_rotates_the_receiver_through_every_rank() {
        for n in 2..=64u32 {
            for k in [1, 2, 3, n - 1] {
                if k >= n {
                    continue;
                }
                let s = incast(n, k).unwrap();
                assert_eq!(s.rounds.len() as u32, n);
                let mut seen = BTreeSet::new();
                let mut sends = vec![0u32; n as usize];
                for (r, round) in s.rounds.iter().enumerate() {
                    assert_eq!(round.flows.len() as u32, k, "n={n} k={k}");
                    let rx = round.flows[0].rx;
                    assert_eq!(rx as usize, r);
                    let mut txs = BTreeSet::new();
                    for f in &round.flows {
                        assert_eq!(f.rx, rx);
                        assert!(f.tx != rx && f.tx < n && txs.insert(f.tx), "n={n} k={k}");
                        assert!(seen.insert((f.tx, f.rx)));
                        assert!(!f.latency);
                        sends[f.tx as usize] += 1;
                    }
                }
                assert!(sends.iter().all(|&c| c == k), "n={n} k={k}: {sends:?}");
            }
        }
        assert_eq!(incast(4, 0), Err(ScheduleError::IncastNoSender));
        let e = incast(4, 4).unwrap_err();
        assert!(e.to_string().contains("at least 5 ranks"), "{e}");
    }

    #[test]
    fn capping_concurrency_keeps_every_flow_in_order() {
        for n in 2..=64u32 {
            for cap in [1usize, 2, 3, 7] {
                let s = pairwise(n);
                let c = cap_concurrency(&s, NonZeroUsize::new(cap).unwrap());
                assert!(c
                    .rounds
                    .iter()
                    .all(|r| !r.flows.is_empty() && r.flows.len() <= cap));
                let before: Vec<Flow> = s.rounds.iter().flat_map(|r| r.flows.clone()).collect();
                let after: Vec<Flow> = c.rounds.iter().flat_map(|r| r.flows.clone()).collect();
                assert_eq!(before, after, "n={n} cap={cap}");
                let want: usize = s.rounds.iter().map(|r| r.flows.len().div_ceil(cap)).sum();
                assert_eq!(c.rounds.len(), want);
                check_disjoint(&c);
            }
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn round_file_with_ranks_hosts_comments_and_gaps() {
        let text = "# ClusterKit -f form\n\n5 n0 n3  # hosts\n5 1 2\n1 0 1\n\n   1 2 n3\n";
        let s = parse_round_file(text, 4, &names(&["n0", "n1", "n2", "n3"])).unwrap();
        assert_eq!(s.kind, ScheduleKind::File);
        let directed: Vec<Vec<(u32, u32)>> = s
            .rounds
            .iter()
            .map(|r| r.flows.iter().map(|f| (f.tx, f.rx)).collect())
            .collect();
        assert_eq!(
            directed,
            [
                vec![(0, 1), (2, 3)],
                vec![(1, 0), (3, 2)],
                vec![(0, 3), (1, 2)],
                vec![(3, 0), (2, 1)]
            ]
        );
        check_disjoint(&s);
        assert_eq!(latency_pairs(&s).len(), 4);
    }

    #[test]
    fn round_file_errors_carry_the_line() {
        let hosts = names(&["n0", "n1", "n2"]);
        let cases = [
            ("0 0 1\n0 1 2\n", 2, "already in round 0 (line 1)"),
            ("0 0\n", 1, "found 2 fields"),
            ("0 0 1 2\n", 1, "found 4 fields"),
            ("x 0 1\n", 1, "round \"x\""),
            ("-1 0 1\n", 1, "round \"-1\""),
            ("# c\n0 0 3\n", 2, "rank 3 is out of range"),
            ("0 0 99999999999\n", 1, "out of range"),
            ("0 n0 n9\n", 1, "\"n9\" is not in --hosts"),
            ("0 1 n1\n", 1, "paired with itself"),
        ];
        for (text, line, what) in cases {
            let e = parse_round_file(text, 3, &hosts).unwrap_err();
            match &e {
                ScheduleError::RoundFile { line: l, what: w } => {
                    assert_eq!(*l, line, "{text:?}: {e}");
                    assert!(w.contains(what), "{text:?}: {e}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let e = parse_round_file("0 a b\n", 3, &[]).unwrap_err();
        assert!(e.to_string().contains("pass --hosts"), "{e}");
        let e = parse_round_file("0 n3 n0\n", 3, &names(&["n0", "n1", "n2", "n3"])).unwrap_err();
        assert!(e.to_string().contains("only 3 ranks"), "{e}");
        assert_eq!(
            parse_round_file("# nothing\n\n", 3, &hosts),
            Err(ScheduleError::RoundFileEmpty)
        );
    }
}
