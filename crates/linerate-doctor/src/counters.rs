//! The error counters of the port doctor's tests go through, before and after the tests. One
//! reader and one judge for the files a soak watches too: `linerate_inventory::counters`
//! samples them, and `linerate_soak::Tracker` reads the pair of samples as one interval, so a
//! counter that pegged at its maximum or was reset by someone else during the tests is said
//! (its rise is then "at least"), never misread as a rise of zero or a huge one.
//!
//! Judged: the counters the counter table says doctor judges (`linerate_facts::CounterDef`,
//! its `doctor` column): the InfiniBand PMA error counters (`counters/`, all but
//! `port_xmit_wait`, which counts congestion, not errors) and the netdev's error statistics:
//! the files doctor has always watched. Driver statistics and `hw_counters` are sampled with
//! them but not judged here (corrected FEC blocks rise on every healthy PAM4 link; `linerate
//! soak` judges those with its thresholds).

use std::path::Path;
use std::time::Instant;

use linerate_facts::{CounterDef, CounterDelta, CounterSource, Inventory};
use linerate_inventory::counters::{soak_targets, CounterSampler};
use linerate_proto::soak::{End, SoakSample};
use linerate_soak::{CounterTrack, Tracker};

/// Whether doctor judges counter `name` of `source`.
fn judged(source: CounterSource, name: &str) -> bool {
    CounterDef::of(source, name).judges.doctor
}

/// The port's counters from the first sample on; [`CounterWatch::finish`] takes the second.
#[derive(Debug)]
pub struct CounterWatch {
    sampler: CounterSampler,
    tracker: Tracker,
    t0: Instant,
    problems: Vec<String>,
}

impl CounterWatch {
    /// Samples the counters of the port behind `netdev` (under `root`, `/` on a live system)
    /// now. None when the inventory has no port for it.
    pub fn start(root: &Path, inv: &Inventory, netdev: &str) -> Option<Self> {
        let targets: Vec<_> = soak_targets(inv, &[netdev.to_string()])
            .into_iter()
            .filter(|t| t.netdev.as_deref() == Some(netdev))
            .collect();
        if targets.is_empty() {
            return None;
        }
        let mut w = Self {
            sampler: CounterSampler::new(root, targets),
            tracker: Tracker::new(),
            t0: Instant::now(),
            problems: Vec::new(),
        };
        let first = w.sampler.sample(End::Local, 0, 0.0);
        w.take(&first);
        Some(w)
    }

    fn take(&mut self, s: &SoakSample) {
        self.tracker.push(s);
        // The driver statistics are not judged here: what stops them being read is no news.
        self.problems.extend(
            s.problems
                .iter()
                .filter(|p| !p.contains("ethtool"))
                .map(|p| format!("error counters: {p}")),
        );
    }

    /// Samples again: the counters that moved in between, and what could not be read.
    pub fn finish(mut self) -> (Vec<CounterDelta>, Vec<String>) {
        let second = self
            .sampler
            .sample(End::Local, 1, self.t0.elapsed().as_secs_f64());
        self.take(&second);
        (deltas(&self.tracker), self.problems)
    }
}

impl CounterWatch {
    /// Samples again: every counter of the RDMA port (its PMA `counters/` and the driver's
    /// `hw_counters/`, data and errors alike) that moved, for `bench --rdma` to say what the
    /// device itself counted; and what could not be read.
    pub fn finish_rdma(mut self) -> (Vec<CounterDelta>, Vec<String>) {
        let second = self
            .sampler
            .sample(End::Local, 1, self.t0.elapsed().as_secs_f64());
        self.take(&second);
        let moved = self
            .tracker
            .counters()
            .iter()
            .filter(|c| {
                matches!(
                    c.key.source,
                    CounterSource::IbCounters | CounterSource::IbHwCounters
                )
            })
            .filter_map(delta)
            .collect();
        (moved, self.problems)
    }
}

/// The judged counters the tracker saw rise, peg or reset between its samples. A counter
/// already pegged before the first sample shows nothing of the tests and is left out (probe's
/// `link.errors` names it with its value).
pub fn deltas(t: &Tracker) -> Vec<CounterDelta> {
    t.counters()
        .iter()
        .filter(|c| judged(c.key.source, &c.key.name))
        .filter_map(delta)
        .collect()
}

fn delta(c: &CounterTrack) -> Option<CounterDelta> {
    let pegged = c.saturations.iter().find(|s| !s.from_start);
    if c.delta == 0 && pegged.is_none() && c.resets_total == 0 {
        return None;
    }
    let name = if c.key.port.is_empty() {
        format!("{} {}", c.key.device, c.key.name)
    } else {
        format!("{}/{} {}", c.key.device, c.key.port, c.key.name)
    };
    let mut notes = Vec::new();
    if let Some(s) = pegged {
        notes.push(format!(
            "pegged at {}, the most its {} bits hold: rises past it do not show",
            s.value,
            c.width.label()
        ));
    }
    if let Some(r) = c.resets.first() {
        notes.push(format!(
            "reset during the tests (from {} to {}): what it counted before the reset is lost",
            r.from, r.to
        ));
    }
    Some(CounterDelta {
        at_least: c.at_least,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        ..CounterDelta::rose(name, c.delta)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_proto::soak::{PortSample, SoakPortKind};

    fn sample(seq: u64, ib: &[(&str, u64)], netdev: &[(&str, u64)]) -> SoakSample {
        let mut counters: Vec<(CounterSource, String, u64)> = ib
            .iter()
            .map(|(n, v)| (CounterSource::IbCounters, (*n).to_string(), *v))
            .collect();
        counters.extend(
            netdev
                .iter()
                .map(|(n, v)| (CounterSource::NetdevStatistics, (*n).to_string(), *v)),
        );
        SoakSample {
            end: End::Local,
            seq,
            t_s: seq as f64,
            ports: vec![PortSample {
                phy: None,
                device: "mlx4_0".into(),
                port: "1".into(),
                netdev: Some("ib0".into()),
                kind: SoakPortKind::Infiniband {
                    speed: Some("QDR".into()),
                    signalling_gbps: Some(40.0),
                },
                counters,
            }],
            tcp_retrans_segs: None,
            tcp_out_segs: None,
            bytes_sent: 0,
            bytes_received: 0,
            problems: Vec::new(),
            host: Vec::new(),
        }
    }

    fn judge(before: &SoakSample, after: &SoakSample) -> Vec<CounterDelta> {
        let mut t = Tracker::new();
        t.push(before);
        t.push(after);
        deltas(&t)
    }

    #[test]
    fn a_plain_rise_is_counted_as_before() {
        let d = judge(
            &sample(
                0,
                &[("symbol_error", 5), ("port_xmit_wait", 10)],
                &[("rx_errors", 0), ("rx_bytes", 1)],
            ),
            &sample(
                1,
                &[("symbol_error", 17), ("port_xmit_wait", 900)],
                &[("rx_errors", 3), ("rx_bytes", 9000)],
            ),
        );
        // Congestion ticks and traffic counters are not errors.
        assert_eq!(
            d,
            vec![
                CounterDelta::rose("mlx4_0/1 symbol_error", 12),
                CounterDelta::rose("mlx4_0/1 rx_errors", 3)
            ]
        );
    }

    #[test]
    fn a_counter_that_pegs_during_the_tests_is_a_lower_bound() {
        // `a > b` saw 6; the 4-bit counter stopped at 15, so it rose by at least that.
        let d = judge(
            &sample(0, &[("local_link_integrity_errors", 9)], &[]),
            &sample(1, &[("local_link_integrity_errors", 15)], &[]),
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!((d[0].delta, d[0].at_least), (6, true));
        assert_eq!(
            d[0].amount(),
            "at least 6 (pegged at 15, the most its 4 bits hold: rises past it do not show)"
        );
    }

    #[test]
    fn a_reset_during_the_tests_is_said_not_missed() {
        // `a > b` saw nothing (2 < 40): someone ran `perfquery -R`, and 2 errors came after.
        let d = judge(
            &sample(0, &[("symbol_error", 40)], &[]),
            &sample(1, &[("symbol_error", 2)], &[]),
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!((d[0].delta, d[0].at_least), (2, true));
        assert!(
            d[0].note
                .as_deref()
                .is_some_and(|n| n.starts_with("reset during the tests (from 40 to 2)")),
            "{d:?}"
        );
        // A reset to zero with nothing after still says that errors may have been lost.
        let d = judge(
            &sample(0, &[("symbol_error", 40)], &[]),
            &sample(1, &[("symbol_error", 0)], &[]),
        );
        assert_eq!((d.len(), d[0].delta, d[0].at_least), (1, 0, true));
    }

    #[test]
    fn a_counter_pegged_before_the_tests_is_no_rise() {
        let d = judge(
            &sample(0, &[("symbol_error", 65_535)], &[]),
            &sample(1, &[("symbol_error", 65_535)], &[]),
        );
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn a_fixture_port_is_watched_through_the_sampler() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sysfs/cx3-fdr-at-qdr-datagram");
        let inv = linerate_inventory::probe(&root).expect("the fixture");
        let w = CounterWatch::start(&root, &inv, "ib0").expect("ib0 is a port");
        // Nothing moves in a fixture tree: no deltas, and no problem but ones worth saying.
        let (d, problems) = w.finish();
        assert!(d.is_empty(), "{d:?}");
        assert!(
            problems.iter().all(|p| !p.contains("ethtool")),
            "{problems:?}"
        );
        assert!(CounterWatch::start(&root, &inv, "nosuch0").is_none());
    }
}
