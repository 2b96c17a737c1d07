//! soak's judgement over a rolling window: every sample goes into soak's [`Tracker`] (deltas
//! that survive saturation and foreign resets, rates over the time each counter was observed),
//! and a port is judged by soak's own [`judge_port`] with soak's thresholds. One judge.
//!
//! A tracker only grows, so the window is two of them, staggered by half the window: each
//! sample goes into both, a new one starts every `window / 2`, and the older one is judged. The
//! span judged is therefore between half the window and the whole window (a hopping window, as
//! Prometheus' summaries keep one), and memory stays bounded: each tracker holds one record per
//! counter and one small record per interval it has seen, at most `window / interval` of them.
//!
//! Host-wide TCP retransmits are not given to the tracker: `watch` sends no traffic of its own,
//! so it cannot tell which link retransmitted (soak's `retrans_with_errors` does not apply).

use std::collections::BTreeSet;

use linerate_facts::CounterDef;
use linerate_facts::CounterSource;
use linerate_proto::soak::SoakSample;
use linerate_soak::{judge_port, CounterTrack, JudgeParams, PortReport, Tracker};

use crate::port::PortId;

/// One tracker and when it began.
#[derive(Debug, Clone)]
struct Span {
    start_s: f64,
    tracker: Tracker,
    /// Ports whose health counters moved, saturated or were reset within this span.
    moved: BTreeSet<PortId>,
}

impl Span {
    fn new(start_s: f64) -> Self {
        Self {
            start_s,
            tracker: Tracker::new(),
            moved: BTreeSet::new(),
        }
    }

    fn push(&mut self, s: &SoakSample) {
        if self.tracker.push(s).is_none() {
            return;
        }
        // The interval just closed, read again without the tracker's mutable borrow.
        let Some(r) = self.tracker.timeline().last() else {
            return;
        };
        for m in &r.moved {
            if let Some(c) = self.tracker.counter(m.counter) {
                self.moved.insert(PortId::new(&c.key.device, &c.key.port));
            }
        }
    }
}

/// The rolling window: the judged tracker and the one that replaces it.
#[derive(Debug, Clone)]
pub struct WindowJudge {
    window_s: f64,
    jp: JudgeParams,
    old: Option<Span>,
    new: Option<Span>,
}

impl WindowJudge {
    /// `window_s`: how far back the judgement looks (between half of it and all of it).
    pub fn new(window_s: f64, jp: JudgeParams) -> Self {
        Self {
            window_s,
            jp,
            old: None,
            new: None,
        }
    }

    pub fn params(&self) -> &JudgeParams {
        &self.jp
    }

    pub fn window_s(&self) -> f64 {
        self.window_s
    }

    /// Takes a sample (its bytes, retransmits and ethtool per-queue counters are left out:
    /// see [`judged_sample`]).
    pub fn push(&mut self, s: SoakSample) {
        let s = judged_sample(s);
        let due = self
            .new
            .as_ref()
            .is_none_or(|n| s.t_s - n.start_s >= self.window_s / 2.0);
        if due {
            // The newer becomes the judged one; a fresh one starts at this sample.
            if let Some(n) = self.new.take() {
                self.old = Some(n);
            }
            self.new = Some(Span::new(s.t_s));
        }
        if let Some(n) = self.new.as_mut() {
            n.push(&s);
        }
        if let Some(o) = self.old.as_mut() {
            o.push(&s);
        }
    }

    fn judged(&self) -> Option<&Span> {
        self.old.as_ref().or(self.new.as_ref())
    }

    /// The tracker judged now: every counter's running record over the span.
    pub fn tracker(&self) -> Option<&Tracker> {
        self.judged().map(|s| &s.tracker)
    }

    /// Seconds the judged span covers.
    pub fn span_s(&self) -> f64 {
        self.tracker().map_or(0.0, |t| {
            t.totals(linerate_proto::soak::End::Local).duration_s()
        })
    }

    pub fn has_moved(&self, id: &PortId) -> bool {
        self.judged().is_some_and(|s| s.moved.contains(id))
    }

    /// soak's verdict on one port over the span judged; `None` before its first interval.
    pub fn judge(&self, id: &PortId) -> Option<PortReport> {
        let t = self.tracker()?;
        let info = t
            .ports()
            .find(|p| p.device == id.device && p.port == id.port)?;
        (t.totals(info.end).samples >= 2).then(|| judge_port(t, info, &self.jp))
    }

    /// The health counters of a port that moved in the span judged, with their records.
    pub fn moved_counters(&self, id: &PortId) -> Vec<&CounterTrack> {
        self.tracker()
            .into_iter()
            .flat_map(Tracker::counters)
            .filter(|c| c.key.device == id.device && c.key.port == id.port)
            .filter(|c| c.def().is_health())
            .filter(|c| c.delta > 0 || c.resets_total > 0 || !c.saturations.is_empty())
            .collect()
    }
}

/// Whether a counter is a per-queue or per-channel driver statistic (`rx3_packets`,
/// `tx_queue_7_bytes`, `ch12_events`) that says nothing a port-wide one does not: left out of
/// the tracker, so that a host with many queues stays within its bounds. Health counters are
/// kept, whatever their name.
pub fn per_queue(source: CounterSource, name: &str) -> bool {
    if source != CounterSource::Ethtool || CounterDef::of(source, name).is_health() {
        return false;
    }
    let mut parts = name.split('_');
    let first = parts.next().unwrap_or("");
    let numbered = |p: &str, prefix: &str| {
        p.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    ["rx", "tx", "ch", "q"].iter().any(|p| numbered(first, p))
        || name.contains("_queue_")
        || parts.any(|p| numbered(p, "q"))
}

/// The sample as the judge sees it: no engine bytes and no host-wide counters (watch sends
/// no traffic), and no per-queue driver statistics.
pub fn judged_sample(mut s: SoakSample) -> SoakSample {
    s.tcp_retrans_segs = None;
    s.tcp_out_segs = None;
    s.host.clear();
    s.bytes_sent = 0;
    s.bytes_received = 0;
    for p in &mut s.ports {
        p.counters.retain(|(src, name, _)| !per_queue(*src, name));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_proto::soak::{End, PortSample, SoakPortKind};
    use linerate_soak::Verdict;

    fn sample(seq: u64, counters: &[(&str, u64)]) -> SoakSample {
        SoakSample {
            end: End::Local,
            seq,
            t_s: seq as f64,
            ports: vec![PortSample {
                phy: None,
                device: "mlx4_0".into(),
                port: "1".into(),
                netdev: None,
                kind: SoakPortKind::Infiniband {
                    speed: Some("QDR".into()),
                    signalling_gbps: Some(40.0),
                },
                counters: counters
                    .iter()
                    .map(|(n, v)| (CounterSource::IbCounters, (*n).to_string(), *v))
                    .collect(),
            }],
            tcp_retrans_segs: Some(seq * 1000),
            tcp_out_segs: None,
            bytes_sent: 0,
            bytes_received: 0,
            problems: Vec::new(),
            host: Vec::new(),
        }
    }

    fn id() -> PortId {
        PortId::new("mlx4_0", "1")
    }

    #[test]
    fn the_judged_span_hops_between_half_the_window_and_all_of_it() {
        let mut w = WindowJudge::new(10.0, JudgeParams::default());
        let mut spans = Vec::new();
        for seq in 0..=30 {
            w.push(sample(seq, &[("symbol_error", 0)]));
            spans.push(w.span_s());
        }
        // The first tracker grows to 10 s, then the judged span drops to 5 s and grows again.
        assert_eq!(spans[..6], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(spans[9], 9.0);
        assert_eq!(spans[10], 5.0);
        assert!(
            spans[10..].iter().all(|s| (5.0..=10.0).contains(s)),
            "{spans:?}"
        );
    }

    #[test]
    fn errors_are_judged_by_soak_and_leave_the_window() {
        let mut w = WindowJudge::new(10.0, JudgeParams::default());
        w.push(sample(0, &[("link_downed", 0)]));
        w.push(sample(1, &[("link_downed", 1)]));
        assert!(w.has_moved(&id()));
        let r = w.judge(&id()).expect("judged");
        assert_eq!(r.verdict, Verdict::Bad);
        assert_eq!(r.rule.as_str(), "link_downed");
        // Quiet for a whole window: the event has left the span judged.
        for seq in 2..=12 {
            w.push(sample(seq, &[("link_downed", 1)]));
        }
        assert!(!w.has_moved(&id()));
        assert_ne!(w.judge(&id()).map(|r| r.verdict), Some(Verdict::Bad));
    }

    #[test]
    fn a_reset_or_a_pegged_counter_is_no_burst() {
        let mut w = WindowJudge::new(60.0, JudgeParams::default());
        // port_rcv_errors reset by someone from 60000 to 0, symbol_error pegged throughout.
        w.push(sample(
            0,
            &[("port_rcv_errors", 60_000), ("symbol_error", 65535)],
        ));
        w.push(sample(
            1,
            &[("port_rcv_errors", 0), ("symbol_error", 65535)],
        ));
        w.push(sample(
            2,
            &[("port_rcv_errors", 0), ("symbol_error", 65535)],
        ));
        let r = w.judge(&id()).expect("judged");
        assert!(r.verdict < Verdict::Congested, "{r:?}");
        let rules: Vec<&str> = r.findings.iter().map(|f| f.rule.as_str()).collect();
        assert!(rules.contains(&"counter_reset"), "{rules:?}");
        assert!(rules.contains(&"pegged_from_start"), "{rules:?}");
    }

    #[test]
    fn retransmits_and_queue_counters_stay_out() {
        let mut s = sample(0, &[("symbol_error", 1)]);
        s.ports[0].counters.extend([
            (CounterSource::Ethtool, "rx3_packets".to_string(), 5),
            (CounterSource::Ethtool, "tx_queue_7_bytes".to_string(), 5),
            (CounterSource::Ethtool, "rx_crc_errors_phy".to_string(), 5),
            (CounterSource::Ethtool, "rx_bytes_phy".to_string(), 5),
            (CounterSource::Ethtool, "rx3_csum_err".to_string(), 5),
        ]);
        let j = judged_sample(s);
        assert_eq!(j.tcp_retrans_segs, None);
        let names: Vec<&str> = j.ports[0].counters.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(
            names,
            [
                "symbol_error",
                "rx_crc_errors_phy",
                "rx_bytes_phy",
                "rx3_csum_err"
            ]
        );
    }
}
