//! Deltas from raw samples, per (end, device, port, source, counter), in bounded memory.
//!
//! Counters are never reset by a soak (sysfs cannot, and the operator's exporters should not
//! lose their history), so everything here works on differences between consecutive samples of
//! the same end. Three things can happen to a counter between two samples:
//! - it rises (or stays): the difference is counted;
//! - it reaches 2^width−1 ([`crate::width`]): it is **saturated**; its total becomes "at
//!   least", from that sample on, and nothing more is visible until someone clears it;
//! - it goes down: someone else reset it (`perfquery -R`, `ibqueryerrors -k`, a driver reload).
//!   The reset is recorded as an event, the value read becomes the new baseline, and the value
//!   itself is counted (the counter counted those events since the reset, inside this
//!   interval); whatever happened between the previous sample and the reset is lost, so the
//!   total becomes "at least".
//!
//! Rates are taken over the time each counter was actually **observed**: the intervals between
//! two consecutive samples of its end that both read it, where it was not pegged at the first
//! and not reset in between. A counter pegged from the start and cleared mid-soak is judged
//! over the time after the clear; one that pegs mid-soak, over the time before; one unreadable
//! for some samples (a file gone, a garbage value), over the rest (the increase across the gap
//! still counts in the total, which becomes "at least": a reset may hide in the gap).
//!
//! A 64-bit counter does not wrap within a soak (2^64 bytes at 800 Gb/s is 5.8 years; an error
//! counter never gets near it), so a value that goes down is always read as a reset.
//!
//! Memory: the tracker keeps one running record per counter (fixed by the ports and counters
//! the ends report, at most [`MAX_COUNTERS`], and at most [`MAX_HOST_COUNTERS`] host-wide ones)
//! and one small [`IntervalRecord`] per interval per
//! end for the timeline: about 100 bytes, plus 16 bytes per health counter that moved in that
//! interval. At 1 s intervals with both ends sampling that is 2 × 3600 × ~100 B ≈ 0.7 MB per
//! hour on a clean link (`interval_record_bytes` in the tests measures the struct). Samples
//! themselves are not kept.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use linerate_facts::{CounterDef, CounterSource, CounterWidth, COUNTERS};
use linerate_proto::soak::{End, SoakPortKind, SoakSample};

use crate::phy::{PhyTrack, PhyTracks};

/// At most this many counters are tracked; more (a driver with thousands of per-queue
/// statistics) are dropped with a problem saying so.
pub const MAX_COUNTERS: usize = 16_384;
/// At most this many host-wide counters are tracked (the sampler reads a few; more come from
/// a peer that sends what no release reads), kept apart from the ports'.
pub const MAX_HOST_COUNTERS: usize = 256;
/// Resets and saturations kept per counter (the count goes on).
pub const MAX_EVENTS_KEPT: usize = 16;
/// Problems kept per end (the count goes on).
pub const MAX_PROBLEMS_KEPT: usize = 64;
/// Moved counters kept per interval record (the count goes on).
pub const MAX_MOVED_PER_INTERVAL: usize = 64;

/// Which counter, on which end and port. A host-wide counter (`/proc/net/snmp`) has an empty
/// device and port ([`CounterKey::is_host`]): no port is named so.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CounterKey {
    pub end: End,
    pub device: String,
    pub port: String,
    pub source: CounterSource,
    pub name: String,
}

impl CounterKey {
    /// A host-wide counter of its end, not a port's.
    pub fn is_host(&self) -> bool {
        self.device.is_empty() && self.port.is_empty()
    }
}

/// One sample of one end: its sequence number and time on that end's clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub seq: u64,
    pub t_s: f64,
}

/// A counter found at its all-ones value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// 2^width−1.
    pub value: u64,
    /// The first sample that read it.
    pub since: Mark,
    /// Already pegged at the first sample: no increase during the soak was visible.
    pub from_start: bool,
    /// The sample where it counted again (cleared by someone, or a data counter proved 64
    /// bits); `None` while still saturated.
    pub until: Option<Mark>,
}

/// A counter found lower than before: reset by someone else.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reset {
    pub at: Mark,
    pub from: u64,
    pub to: u64,
}

/// The running record of one counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterTrack {
    pub key: CounterKey,
    pub width: CounterWidth,
    pub first: u64,
    pub last: u64,
    pub max_seen: u64,
    /// Sum of the increases seen. A lower bound when `at_least`.
    pub delta: u64,
    /// Saturated or reset at some point: the true increase may be larger than `delta`.
    pub at_least: bool,
    pub first_mark: Mark,
    pub last_mark: Mark,
    pub saturations: Vec<Saturation>,
    pub saturated_now: bool,
    pub resets: Vec<Reset>,
    pub resets_total: u64,
    /// Intervals in which it rose, and the first and last of them.
    pub intervals_moved: u64,
    pub first_moved: Option<Mark>,
    pub last_moved: Option<Mark>,
    /// The largest rise in one interval.
    pub max_interval_delta: u64,
    /// Seconds over which an increase was visible (see the module documentation): the span
    /// rates are taken over.
    pub observed_s: f64,
    /// The increase within those seconds (at most `delta`).
    pub observed_delta: u64,
    /// What the latest sample that read it did: the increase it counted in the interval that
    /// sample closed, and whether it saturated or was reset there (a live view's per-interval
    /// rate; `last_mark` says which sample).
    #[serde(skip)]
    pub last_step: CounterStep,
    /// Its row of the counter table (an index into `linerate_facts::COUNTERS`), found once.
    #[serde(skip)]
    row: Option<usize>,
}

impl CounterTrack {
    fn new(key: CounterKey, value: u64, at: Mark) -> Self {
        let (row, def) = CounterDef::find(key.source, &key.name);
        let width = def.width;
        let pegged = width.saturation_value(value) == Some(value);
        Self {
            key,
            width,
            first: value,
            last: value,
            max_seen: value,
            delta: 0,
            at_least: pegged,
            first_mark: at,
            last_mark: at,
            saturations: if pegged {
                vec![Saturation {
                    value,
                    since: at,
                    from_start: true,
                    until: None,
                }]
            } else {
                Vec::new()
            },
            saturated_now: pegged,
            resets: Vec::new(),
            resets_total: 0,
            intervals_moved: 0,
            first_moved: None,
            last_moved: None,
            max_interval_delta: 0,
            observed_s: 0.0,
            observed_delta: 0,
            last_step: CounterStep {
                delta: 0,
                saturated: pegged,
                reset: false,
            },
            row: Some(row),
        }
    }

    /// Its row of the counter table (`linerate_facts::COUNTERS`): its class, width, unit and
    /// who judges it.
    pub fn def(&self) -> &'static CounterDef {
        self.row_def().1
    }

    /// [`CounterTrack::def`] and the row's index in `linerate_facts::COUNTERS`.
    pub fn row_def(&self) -> (usize, &'static CounterDef) {
        match self.row {
            Some(r) => (r, &COUNTERS[r]),
            None => CounterDef::find(self.key.source, &self.key.name),
        }
    }

    /// Seconds between the first and the last sample of this counter.
    pub fn span_s(&self) -> f64 {
        (self.last_mark.t_s - self.first_mark.t_s).max(0.0)
    }

    /// The increase observed (and so the rates) is a lower bound: the counter pegged during an
    /// interval it was observed in. (A counter pegged from the start, reset or unread counts
    /// nothing in the time observed, so those make only the total "at least".)
    pub fn observed_at_least(&self) -> bool {
        self.saturations.iter().any(|s| !s.from_start)
    }

    /// The rate per second over the time observed; `None` before any time was observed.
    pub fn observed_per_s(&self) -> Option<f64> {
        (self.observed_s > 0.0).then(|| self.observed_delta as f64 / self.observed_s)
    }

    /// Takes the next raw value, read at `at`; `prev` is the end's previous sample (this
    /// counter was read there too unless it was missing from it). Returns what it did in this
    /// interval.
    fn update(&mut self, value: u64, at: Mark, prev: Option<Mark>) -> CounterStep {
        let mut step = CounterStep::default();
        let contiguous = prev.is_some_and(|p| p.seq == self.last_mark.seq);
        let was_pegged = self.saturated_now;
        let reset = value < self.last;
        if !contiguous {
            // Unread in at least one sample since: a reset may hide in the gap.
            self.at_least = true;
        }
        let d = if reset {
            step.reset = true;
            self.resets_total += 1;
            if self.resets.len() < MAX_EVENTS_KEPT {
                self.resets.push(Reset {
                    at,
                    from: self.last,
                    to: value,
                });
            }
            self.at_least = true;
            self.end_saturation(at);
            value
        } else {
            if self.saturated_now && value > self.last {
                // Only a data counter can count past its "saturation": it was 64 bits.
                self.end_saturation(at);
            }
            value - self.last
        };
        self.max_seen = self.max_seen.max(value);
        let sat = self.width.saturation_value(self.max_seen);
        if !self.saturated_now && sat == Some(value) {
            self.saturated_now = true;
            self.at_least = true;
            step.saturated = true;
            if self.saturations.len() < MAX_EVENTS_KEPT {
                self.saturations.push(Saturation {
                    value,
                    since: at,
                    from_start: false,
                    until: None,
                });
            }
        }
        if contiguous && !was_pegged && !reset {
            self.observed_s += (at.t_s - self.last_mark.t_s).max(0.0);
            self.observed_delta = self.observed_delta.saturating_add(d);
        }
        if d > 0 {
            self.delta = self.delta.saturating_add(d);
            self.intervals_moved += 1;
            self.first_moved.get_or_insert(at);
            self.last_moved = Some(at);
            self.max_interval_delta = self.max_interval_delta.max(d);
        }
        self.last = value;
        self.last_mark = at;
        step.delta = d;
        self.last_step = step;
        step
    }

    fn end_saturation(&mut self, at: Mark) {
        if self.saturated_now {
            self.saturated_now = false;
            if let Some(s) = self.saturations.last_mut() {
                s.until = Some(at);
            }
        }
    }
}

/// What one counter did in one interval.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CounterStep {
    /// The increase counted (after a reset: the value read, counted since the reset).
    pub delta: u64,
    /// It reached its all-ones value in this interval (or was at it when first read).
    pub saturated: bool,
    /// It was found lower than before: reset by someone else.
    pub reset: bool,
}

/// A counter that moved (or saturated, or was reset) in one interval: an index into
/// [`Tracker::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedIdx {
    pub counter: u32,
    pub delta: u64,
    pub saturated: bool,
    pub reset: bool,
}

/// One interval of one end, for the timeline: what the renderers need and nothing more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    pub end: End,
    /// The sample that closed the interval.
    pub seq: u64,
    pub start_s: f64,
    pub end_s: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// TCP retransmitted segments in the interval (host-wide), when the end reads them.
    pub tcp_retrans: Option<u64>,
    /// Health counters (`linerate_facts::CounterDef::is_health`) that moved, saturated or
    /// were reset.
    pub moved: Vec<MovedIdx>,
    /// How many more moved than `moved` holds.
    pub moved_dropped: u32,
}

impl IntervalRecord {
    /// Gb/s through this end in the interval, both directions together.
    pub fn gbps(&self) -> f64 {
        linerate_units::gbps(
            self.bytes_sent.saturating_add(self.bytes_received),
            self.end_s - self.start_s,
        )
    }
}

/// What a port is, as its end last reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortInfo {
    pub end: End,
    pub device: String,
    pub port: String,
    pub netdev: Option<String>,
    pub kind: SoakPortKind,
}

/// The running totals of one end.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EndTotals {
    pub samples: u64,
    pub first: Option<Mark>,
    pub last: Option<Mark>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub tcp_retrans_first: Option<u64>,
    pub tcp_retrans_last: Option<u64>,
    pub tcp_retrans: u64,
    /// TCP segments sent (`TcpOutSegs`), over the samples that read both it and the
    /// retransmits: the basis of their share.
    #[serde(default)]
    pub tcp_out_last: Option<u64>,
    #[serde(default)]
    pub tcp_out_segs: Option<u64>,
    /// A sample had one of the two without the other: no share for this soak.
    #[serde(default)]
    pub tcp_out_unknown: bool,
    pub problems: Vec<String>,
    pub problems_total: u64,
    /// Samples ignored because they were out of order or repeated.
    pub samples_ignored: u64,
    /// Retransmits in the interval the last sample closed.
    #[serde(skip)]
    last_tcp_step: Option<u64>,
}

impl EndTotals {
    pub fn duration_s(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => (b.t_s - a.t_s).max(0.0),
            _ => 0.0,
        }
    }

    fn problem(&mut self, text: String) {
        self.problems_total += 1;
        if self.problems.len() < MAX_PROBLEMS_KEPT && !self.problems.contains(&text) {
            self.problems.push(text);
        }
    }
}

/// Everything a soak keeps while it runs: both ends' totals, one record per counter, and the
/// timeline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tracker {
    index: BTreeMap<CounterKey, u32>,
    counters: Vec<CounterTrack>,
    /// The host-wide counters of both ends, apart from the ports' (their indices are the
    /// timeline's).
    host_index: BTreeMap<CounterKey, usize>,
    host: Vec<CounterTrack>,
    ports: BTreeMap<(End, String, String), PortInfo>,
    local: EndTotals,
    remote: EndTotals,
    timeline: Vec<IntervalRecord>,
    /// Each end's last sample as laid out: a sampler sends the same ports and counters in the
    /// same order every time, so the next sample's counters are found at the same places
    /// without a lookup by name.
    layout: [Vec<PortLayout>; 2],
    /// Each port's temperatures and light (`PortSample::phy`), where its end read them.
    phy: PhyTracks,
}

/// Where the counters of one port of a sample were, by their order in it.
#[derive(Debug, Clone, Default, PartialEq)]
struct PortLayout {
    device: String,
    port: String,
    netdev: Option<String>,
    kind: Option<SoakPortKind>,
    /// The index of each counter in [`Tracker::counters`] ([`NOT_TRACKED`] for one refused).
    idx: Vec<u32>,
}

/// A counter of a sample past [`MAX_COUNTERS`].
const NOT_TRACKED: u32 = u32::MAX;

fn end_slot(end: End) -> usize {
    match end {
        End::Local => 0,
        End::Remote => 1,
    }
}

impl Tracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every port counter seen, in the order first seen (the host-wide ones are
    /// [`Tracker::host_counters`]).
    pub fn counters(&self) -> &[CounterTrack] {
        &self.counters
    }

    pub fn counter(&self, idx: u32) -> Option<&CounterTrack> {
        self.counters.get(idx as usize)
    }

    /// The record of one counter.
    pub fn find(
        &self,
        end: End,
        device: &str,
        port: &str,
        source: CounterSource,
        name: &str,
    ) -> Option<&CounterTrack> {
        let key = CounterKey {
            end,
            device: device.into(),
            port: port.into(),
            source,
            name: name.into(),
        };
        self.index.get(&key).and_then(|&i| self.counter(i))
    }

    /// The host-wide counters of `end` (`/proc/net/snmp`), in the order first seen.
    pub fn host_counters(&self, end: End) -> impl Iterator<Item = &CounterTrack> {
        self.host.iter().filter(move |c| c.key.end == end)
    }

    /// Every port seen, by end then device then port.
    pub fn ports(&self) -> impl Iterator<Item = &PortInfo> {
        self.ports.values()
    }

    pub fn totals(&self, end: End) -> &EndTotals {
        match end {
            End::Local => &self.local,
            End::Remote => &self.remote,
        }
    }

    fn totals_mut(&mut self, end: End) -> &mut EndTotals {
        match end {
            End::Local => &mut self.local,
            End::Remote => &mut self.remote,
        }
    }

    /// One record per interval per end, in the order the samples came.
    pub fn timeline(&self) -> &[IntervalRecord] {
        &self.timeline
    }

    /// Takes one end's sample. Returns the interval it closed (`None` for the first sample of
    /// an end, and for a sample ignored because its `seq` or time does not follow the last).
    pub fn push(&mut self, s: &SoakSample) -> Option<&IntervalRecord> {
        let at = Mark {
            seq: s.seq,
            t_s: s.t_s,
        };
        let prev = self.totals(s.end).last;
        let follows = prev.is_none_or(|p| s.seq > p.seq && s.t_s >= p.t_s);
        if !s.t_s.is_finite() || s.t_s < 0.0 || !follows {
            let t = self.totals_mut(s.end);
            t.samples_ignored += 1;
            let after = prev.map_or(String::new(), |p| {
                format!(": it does not follow sample {} at {} s", p.seq, p.t_s)
            });
            t.problem(format!(
                "sample {} at {} s ignored{after} (expected a later seq and a time >= 0 s)",
                s.seq, s.t_s
            ));
            return None;
        }
        self.take_totals(s, at);
        let (moved, moved_dropped) = self.take_ports(s, at, prev);
        // The host-wide counters: tracked like a port's, named in no interval's moved list
        // (the timeline is about the ports).
        for (source, name, value) in s.host_counters() {
            let key = CounterKey {
                end: s.end,
                device: String::new(),
                port: String::new(),
                source,
                name: name.to_string(),
            };
            self.take_host(key, value, at, prev);
        }
        let p = prev?;
        let tcp_retrans = self.totals(s.end).last_tcp_step;
        self.timeline.push(IntervalRecord {
            end: s.end,
            seq: s.seq,
            start_s: p.t_s,
            end_s: s.t_s,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            tcp_retrans,
            moved,
            moved_dropped,
        });
        self.timeline.last()
    }

    /// The counters of every port of `s`: each found where it was in the end's last sample
    /// (else by its key), updated; the health counters that moved, saturated or were reset (at
    /// most [`MAX_MOVED_PER_INTERVAL`]) and how many more did.
    fn take_ports(&mut self, s: &SoakSample, at: Mark, prev: Option<Mark>) -> (Vec<MovedIdx>, u32) {
        let mut moved = Vec::new();
        let mut moved_dropped = 0u32;
        let mut layout = std::mem::take(&mut self.layout[end_slot(s.end)]);
        layout.resize_with(s.ports.len(), PortLayout::default);
        for (p, lay) in s.ports.iter().zip(&mut layout) {
            let same_port = lay.device == p.device && lay.port == p.port;
            if !same_port || lay.netdev != p.netdev || lay.kind.as_ref() != Some(&p.kind) {
                self.ports.insert(
                    (s.end, p.device.clone(), p.port.clone()),
                    PortInfo {
                        end: s.end,
                        device: p.device.clone(),
                        port: p.port.clone(),
                        netdev: p.netdev.clone(),
                        kind: p.kind.clone(),
                    },
                );
                lay.device.clone_from(&p.device);
                lay.port.clone_from(&p.port);
                lay.netdev.clone_from(&p.netdev);
                lay.kind = Some(p.kind.clone());
            }
            if !same_port {
                lay.idx.clear();
            }
            lay.idx.resize(p.counters.len(), NOT_TRACKED);
            let mut downed = false;
            for ((source, name, value), slot) in p.counters.iter().zip(&mut lay.idx) {
                // The counter at this place last time, or found by its key.
                let here = (*slot != NOT_TRACKED).then_some(*slot).filter(|&i| {
                    let k = &self.counters[i as usize].key;
                    k.source == *source && k.name == *name
                });
                let found = match here {
                    Some(i) => Some((i, self.counters[i as usize].update(*value, at, prev))),
                    None => {
                        let key = CounterKey {
                            end: s.end,
                            device: p.device.clone(),
                            port: p.port.clone(),
                            source: *source,
                            name: name.clone(),
                        };
                        self.take_counter(key, *value, at, prev)
                    }
                };
                let Some((idx, step)) = found else {
                    *slot = NOT_TRACKED;
                    continue;
                };
                *slot = idx;
                downed |= step.delta > 0
                    && prev.is_some()
                    && self.counters[idx as usize].def().judges.soak
                        == Some(linerate_facts::CounterRole::LinkDown);
                if (step.delta > 0 || step.saturated || step.reset)
                    && self.counters[idx as usize].def().is_health()
                {
                    if moved.len() < MAX_MOVED_PER_INTERVAL {
                        moved.push(MovedIdx {
                            counter: idx,
                            delta: step.delta,
                            saturated: step.saturated,
                            reset: step.reset,
                        });
                    } else {
                        moved_dropped += 1;
                    }
                }
            }
            self.take_phy(s.end, p, at, downed);
        }
        self.layout[end_slot(s.end)] = layout;
        (moved, moved_dropped)
    }

    /// Port `p`'s PHY readings of the sample at `at`, and a link down counted in it.
    fn take_phy(&mut self, end: End, p: &linerate_proto::soak::PortSample, at: Mark, downed: bool) {
        if p.phy.is_none()
            && !downed
            && !self
                .phy
                .contains_key(&(end, p.device.clone(), p.port.clone()))
        {
            return;
        }
        let t = self
            .phy
            .entry((end, p.device.clone(), p.port.clone()))
            .or_default();
        if downed {
            t.link_down(at.t_s);
        }
        if let Some(g) = &p.phy {
            t.read(at.t_s, g);
        }
    }

    /// The PHY readings of port `device`/`port` of `end`, where its end read any.
    pub fn phy(&self, end: End, device: &str, port: &str) -> Option<&PhyTrack> {
        self.phy.get(&(end, device.to_string(), port.to_string()))
    }

    fn take_totals(&mut self, s: &SoakSample, at: Mark) {
        let t = self.totals_mut(s.end);
        t.samples += 1;
        t.first.get_or_insert(at);
        t.last = Some(at);
        t.bytes_sent = t.bytes_sent.saturating_add(s.bytes_sent);
        t.bytes_received = t.bytes_received.saturating_add(s.bytes_received);
        t.last_tcp_step = None;
        if let Some(v) = s.tcp_retrans_segs {
            t.tcp_retrans_first.get_or_insert(v);
            if let Some(last) = t.tcp_retrans_last {
                // A lower value: the counter was reset (another network namespace, a reboot
                // of the container); count from there, as for the port counters.
                let d = if v >= last { v - last } else { v };
                t.tcp_retrans = t.tcp_retrans.saturating_add(d);
                t.last_tcp_step = Some(d);
            }
            t.tcp_retrans_last = Some(v);
        }
        // Segments sent, counted beside the retransmits: a sample that reads one without the
        // other (a peer of an earlier release) leaves the soak without a share.
        match (s.tcp_retrans_segs, s.tcp_out_segs) {
            (Some(_), Some(v)) if !t.tcp_out_unknown => {
                if let Some(last) = t.tcp_out_last {
                    let d = if v >= last { v - last } else { v };
                    t.tcp_out_segs = Some(t.tcp_out_segs.unwrap_or(0).saturating_add(d));
                }
                t.tcp_out_last = Some(v);
            }
            _ => {
                t.tcp_out_unknown = true;
                t.tcp_out_last = None;
                t.tcp_out_segs = None;
            }
        }
        for text in &s.problems {
            t.problem(text.clone());
        }
    }

    fn take_counter(
        &mut self,
        key: CounterKey,
        value: u64,
        at: Mark,
        prev: Option<Mark>,
    ) -> Option<(u32, CounterStep)> {
        if let Some(&i) = self.index.get(&key) {
            let step = self.counters[i as usize].update(value, at, prev);
            return Some((i, step));
        }
        if self.counters.len() >= MAX_COUNTERS {
            let text = format!(
                "more than {MAX_COUNTERS} counters: {}/{} {} not tracked",
                key.device, key.port, key.name
            );
            self.totals_mut(key.end).problem(text);
            return None;
        }
        let i = u32::try_from(self.counters.len()).ok()?;
        let track = CounterTrack::new(key.clone(), value, at);
        let step = CounterStep {
            saturated: track.saturated_now,
            ..CounterStep::default()
        };
        self.counters.push(track);
        self.index.insert(key, i);
        Some((i, step))
    }

    /// [`Tracker::take_counter`] for a host-wide counter.
    fn take_host(&mut self, key: CounterKey, value: u64, at: Mark, prev: Option<Mark>) {
        if let Some(&i) = self.host_index.get(&key) {
            self.host[i].update(value, at, prev);
        } else if self.host.len() >= MAX_HOST_COUNTERS {
            let text = format!(
                "more than {MAX_HOST_COUNTERS} host-wide counters: {} not tracked",
                key.name
            );
            self.totals_mut(key.end).problem(text);
        } else {
            self.host_index.insert(key.clone(), self.host.len());
            self.host.push(CounterTrack::new(key, value, at));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_proto::soak::PortSample;

    fn ib() -> SoakPortKind {
        SoakPortKind::Infiniband {
            speed: Some("QDR".into()),
            signalling_gbps: Some(40.0),
        }
    }

    fn sample(end: End, seq: u64, counters: &[(&str, u64)]) -> SoakSample {
        SoakSample {
            end,
            seq,
            t_s: seq as f64,
            ports: vec![PortSample {
                phy: None,
                device: "mlx4_0".into(),
                port: "1".into(),
                netdev: None,
                kind: ib(),
                counters: counters
                    .iter()
                    .map(|(n, v)| (CounterSource::IbCounters, (*n).to_string(), *v))
                    .collect(),
            }],
            tcp_retrans_segs: Some(100 + seq),
            tcp_out_segs: None,
            bytes_sent: 1_000,
            bytes_received: 2_000,
            problems: Vec::new(),
            host: Vec::new(),
        }
    }

    fn run(values: &[u64], name: &str) -> Tracker {
        let mut t = Tracker::new();
        for (i, v) in values.iter().enumerate() {
            t.push(&sample(End::Local, i as u64, &[(name, *v)]));
        }
        t
    }

    fn track<'a>(t: &'a Tracker, name: &str) -> &'a CounterTrack {
        t.find(End::Local, "mlx4_0", "1", CounterSource::IbCounters, name)
            .expect("tracked")
    }

    #[test]
    fn deltas_sum_the_rises() {
        let t = run(&[5, 5, 8, 8, 20], "symbol_error");
        let c = track(&t, "symbol_error");
        assert_eq!((c.delta, c.at_least), (15, false));
        assert_eq!(c.intervals_moved, 2);
        assert_eq!(c.first_moved.map(|m| m.seq), Some(2));
        assert_eq!(c.last_moved.map(|m| m.seq), Some(4));
        assert_eq!(c.max_interval_delta, 12);
        assert_eq!(c.span_s(), 4.0);
        // Four intervals for five samples; the moved counter is named in two of them.
        assert_eq!(t.timeline().len(), 4);
        let named: Vec<u64> = t
            .timeline()
            .iter()
            .filter(|r| !r.moved.is_empty())
            .map(|r| r.seq)
            .collect();
        assert_eq!(named, [2, 4]);
        let totals = t.totals(End::Local);
        assert_eq!((totals.samples, totals.bytes_received), (5, 10_000));
        assert_eq!(totals.tcp_retrans, 4);
        assert_eq!(t.timeline()[0].tcp_retrans, Some(1));
        assert_eq!(totals.duration_s(), 4.0);
    }

    #[test]
    fn a_four_bit_counter_saturates_and_says_from_when() {
        let t = run(&[3, 9, 15, 15, 15], "local_link_integrity_errors");
        let c = track(&t, "local_link_integrity_errors");
        assert_eq!((c.delta, c.at_least, c.saturated_now), (12, true, true));
        let s = c.saturations[0];
        assert_eq!(
            (s.value, s.since.seq, s.from_start, s.until),
            (15, 2, false, None)
        );
        assert!(t.timeline()[1].moved[0].saturated);
        // One below the top is not saturated.
        let c2 = run(&[3, 14], "local_link_integrity_errors");
        assert!(!track(&c2, "local_link_integrity_errors").at_least);
    }

    #[test]
    fn pegged_from_the_start_sees_nothing() {
        let t = run(&[255, 255, 255], "link_downed");
        let c = track(&t, "link_downed");
        assert_eq!((c.delta, c.at_least), (0, true));
        assert!(c.saturations[0].from_start);
    }

    #[test]
    fn a_reset_starts_a_new_baseline_and_is_recorded() {
        let t = run(&[40, 45, 0, 2, 2], "symbol_error");
        let c = track(&t, "symbol_error");
        // 5 before the reset, 0 at it (reset to zero), 2 after: at least 7.
        assert_eq!((c.delta, c.at_least), (7, true));
        assert_eq!(c.resets_total, 1);
        let r = c.resets[0];
        assert_eq!((r.at.seq, r.from, r.to), (2, 45, 0));
        assert!(t.timeline()[1].moved[0].reset);
        // A reset to a value already above zero counts that value: it was counted since.
        let t = run(&[40, 3], "symbol_error");
        assert_eq!(track(&t, "symbol_error").delta, 3);
    }

    #[test]
    fn rates_are_over_the_time_observed() {
        // Steady: every interval observed.
        let t = run(&[5, 6, 8, 8, 9], "symbol_error");
        let c = track(&t, "symbol_error");
        assert_eq!((c.observed_s, c.observed_delta), (4.0, 4));
        assert_eq!(c.observed_per_s(), Some(1.0));
        // Pegged at the start, cleared at sample 3 (an interval not observed: the counter could
        // not move before the clear), then 5 more: judged over the 2 s after the clear.
        let t = run(&[65535, 65535, 65535, 0, 2, 5], "symbol_error");
        let c = track(&t, "symbol_error");
        assert_eq!((c.delta, c.observed_delta, c.observed_s), (5, 5, 2.0));
        assert!(c.saturations[0].from_start && c.saturations[0].until.is_some());
        // Pegging mid-soak ends the observed time.
        let t = run(&[3, 9, 15, 15, 15], "local_link_integrity_errors");
        let c = track(&t, "local_link_integrity_errors");
        assert_eq!((c.observed_s, c.observed_delta), (2.0, 12));
        // A reset interval is not observed; what it counted is in the total only.
        let t = run(&[40, 45, 3, 4], "symbol_error");
        let c = track(&t, "symbol_error");
        assert_eq!((c.delta, c.observed_delta, c.observed_s), (9, 6, 2.0));
    }

    #[test]
    fn a_counter_unread_in_a_sample_is_a_gap() {
        let mut t = Tracker::new();
        for (seq, v) in [
            (0, Some(1)),
            (1, Some(2)),
            (2, None),
            (3, Some(7)),
            (4, Some(8)),
        ] {
            let counters: Vec<(&str, u64)> =
                v.map(|v| ("port_rcv_errors", v)).into_iter().collect();
            t.push(&sample(End::Local, seq, &counters));
        }
        let c = track(&t, "port_rcv_errors");
        // The rise across the gap counts, "at least" (a reset may hide in it); the rate is over
        // the two intervals read at both ends.
        assert_eq!((c.delta, c.at_least), (7, true));
        assert_eq!((c.observed_s, c.observed_delta), (2.0, 2));
    }

    #[test]
    fn a_before_after_pair_is_one_interval() {
        // What doctor does: one sample before its tests, one after.
        let t = run(&[100, 104], "port_rcv_errors");
        let c = track(&t, "port_rcv_errors");
        assert_eq!((c.delta, c.at_least, c.observed_s), (4, false, 1.0));
        assert_eq!(t.timeline().len(), 1);
        let pegged = run(&[65535, 65535], "port_rcv_errors");
        let c = track(&pegged, "port_rcv_errors");
        assert_eq!((c.saturated_now, c.observed_s), (true, 0.0));
    }

    #[test]
    fn a_data_counter_proved_64_bits_stops_being_saturated() {
        let max = u64::from(u32::MAX);
        let t = run(&[max - 10, max, max + 100], "port_rcv_data");
        let c = track(&t, "port_rcv_data");
        assert_eq!(c.delta, 110);
        assert!(!c.saturated_now);
        assert_eq!(c.saturations[0].until.map(|m| m.seq), Some(2));
        // A data counter that stays at 2^32-1 is a pegged 32-bit one.
        let t = run(&[max - 10, max, max], "port_rcv_data");
        assert!(track(&t, "port_rcv_data").saturated_now);
        // Data counters are traffic: they never appear in the timeline's moved list.
        assert!(t.timeline().iter().all(|r| r.moved.is_empty()));
    }

    #[test]
    fn out_of_order_samples_are_ignored_with_a_problem() {
        let mut t = Tracker::new();
        assert!(t
            .push(&sample(End::Local, 0, &[("symbol_error", 1)]))
            .is_none());
        assert!(t
            .push(&sample(End::Local, 1, &[("symbol_error", 2)]))
            .is_some());
        assert!(t
            .push(&sample(End::Local, 1, &[("symbol_error", 9)]))
            .is_none());
        let mut back = sample(End::Local, 2, &[("symbol_error", 9)]);
        back.t_s = 0.5;
        assert!(t.push(&back).is_none());
        let mut nan = sample(End::Local, 3, &[("symbol_error", 9)]);
        nan.t_s = f64::NAN;
        assert!(t.push(&nan).is_none());
        assert_eq!(track(&t, "symbol_error").delta, 1);
        assert_eq!(t.totals(End::Local).samples_ignored, 3);
        assert!(t.totals(End::Local).problems[0].contains("does not follow"));
        // The other end keeps its own sequence and clock.
        assert!(t.push(&sample(End::Remote, 0, &[])).is_none());
        assert_eq!(t.totals(End::Remote).samples, 1);
    }

    #[test]
    fn memory_is_bounded() {
        let mut t = Tracker::new();
        let many: Vec<(CounterSource, String, u64)> = (0..=MAX_COUNTERS)
            .map(|i| (CounterSource::Ethtool, format!("rx{i}_err"), 0))
            .collect();
        let mut s = sample(End::Local, 0, &[]);
        s.ports[0].counters = many.clone();
        t.push(&s);
        assert_eq!(t.counters().len(), MAX_COUNTERS);
        assert!(t.totals(End::Local).problems[0].contains("not tracked"));
        // Every one moves: the interval names MAX_MOVED_PER_INTERVAL and counts the rest.
        s.seq = 1;
        s.t_s = 1.0;
        s.ports[0].counters = many.into_iter().map(|(a, b, v)| (a, b, v + 1)).collect();
        let r = t.push(&s).expect("an interval");
        assert_eq!(r.moved.len(), MAX_MOVED_PER_INTERVAL);
        assert_eq!(
            r.moved_dropped as usize,
            MAX_COUNTERS - MAX_MOVED_PER_INTERVAL
        );
        // Problems are kept once each, and at most MAX_PROBLEMS_KEPT of them.
        for i in 0..200u64 {
            let mut p = sample(End::Remote, i, &[]);
            p.problems = vec![format!("problem {i}"), "same".into()];
            t.push(&p);
        }
        assert_eq!(t.totals(End::Remote).problems.len(), MAX_PROBLEMS_KEPT);
        assert_eq!(t.totals(End::Remote).problems_total, 400);
    }

    #[test]
    fn interval_record_bytes() {
        // The per-interval cost the module documentation states (~100 bytes, plus 16 per
        // moved counter): a change to the record that breaks the budget fails here.
        assert!(std::mem::size_of::<IntervalRecord>() <= 112);
        assert_eq!(std::mem::size_of::<MovedIdx>(), 16);
    }
}
