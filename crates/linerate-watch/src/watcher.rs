//! The state of a watch, fed one sample at a time: the ports (from the inventory, again when
//! it changes), soak's window over their counters, each port's rates, totals and history, and
//! the log of link events. [`Watcher::push`] gives the interval's [`Frame`]; the detail pane
//! and the metrics endpoint ask for the rest. Pure: the caller samples and keeps the time.

use std::collections::{BTreeMap, HashMap};

use linerate_facts::{CounterClass, CounterRole};
use linerate_facts::{CounterSource, PhyGauges};
use linerate_proto::soak::SoakSample;
use linerate_soak::{CounterTrack, JudgeParams, PortReport};

use crate::changes::{self, ChangeKind, LinkChange, Tick};
use crate::frame::{
    self, CountedFrom, CounterRate, Frame, Moved, PortFrame, WindowCounter, WindowFinding,
    WindowMark,
};
use crate::history::{RatePoint, Ring};
use crate::port::{PortId, WatchedPort};
use crate::window::WindowJudge;

/// What a watch keeps, and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WatchParams {
    /// How far back soak's verdict looks, seconds (it judges between half of it and all of it).
    pub window_s: f64,
    /// Rate points kept per port for the chart.
    pub history: usize,
    /// Link events kept in the log.
    pub log: usize,
}

/// A port's counts since the watch began: its traffic (from the counters its rates come
/// from) and each health counter's increase, through saturation (the count stops) and
/// resets (counted from the new value), as soak's tracker counts them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortTotals {
    pub counted_from: Option<CountedFrom>,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Health counters by source and name: (increase, at its maximum now).
    pub health: BTreeMap<CounterSource, BTreeMap<String, (u64, bool)>>,
    /// Link events seen, by kind.
    pub changes: BTreeMap<ChangeKind, u64>,
}

#[derive(Debug, Clone)]
struct PortState {
    history: Ring<RatePoint>,
    totals: PortTotals,
    last_change: Option<LinkChange>,
    /// The port's PHY gauges as last read (they come every few samples).
    phy: Option<PhyGauges>,
}

/// One port's counters in one interval, gathered from the tracker (one per port, kept from
/// one interval to the next: cleared, not made again).
#[derive(Debug, Clone, Default)]
struct Step {
    /// rx bytes, tx bytes, rx packets, tx packets: (increase, saturated now).
    traffic: [Option<(u64, bool)>; 4],
    moved: Vec<Moved>,
    link_down: Vec<(String, u64)>,
}

/// The traffic roles of the counter table, in `Step::traffic`'s order: what a port's rates
/// and totals come from (bytes by the unit of each counter: the PMA's data counters count
/// octets ÷ 4).
const TRAFFIC: [CounterRole; 4] = [
    CounterRole::ReceivedData,
    CounterRole::SentData,
    CounterRole::ReceivedPackets,
    CounterRole::SentPackets,
];

/// The state of a watch.
#[derive(Debug, Clone)]
pub struct Watcher {
    params: WatchParams,
    window: WindowJudge,
    ports: Vec<WatchedPort>,
    /// device → (port, index into `ports`).
    index: HashMap<String, Vec<(String, usize)>>,
    state: BTreeMap<PortId, PortState>,
    log: Ring<LinkChange>,
    /// Events seen since the last frame.
    pending: Vec<LinkChange>,
    last: Option<Tick>,
    samples: u64,
    /// Each port's step of the interval being pushed, in `ports`' order.
    steps: Vec<Step>,
}

impl Watcher {
    pub fn new(params: WatchParams, jp: JudgeParams) -> Self {
        Self {
            window: WindowJudge::new(params.window_s, jp),
            params,
            ports: Vec::new(),
            index: HashMap::new(),
            state: BTreeMap::new(),
            log: Ring::new(params.log),
            pending: Vec::new(),
            last: None,
            samples: 0,
            steps: Vec::new(),
        }
    }

    /// The ports as the inventory now has them. After the first call, each difference from
    /// the previous ports is a link event, logged with `at`.
    pub fn set_ports(&mut self, ports: Vec<WatchedPort>, at: Tick) {
        if self.samples > 0 || !self.ports.is_empty() {
            for c in changes::diff(&self.ports, &ports, at) {
                self.record(c);
            }
        }
        self.state.retain(|id, _| ports.iter().any(|p| &p.id == id));
        for p in &ports {
            self.state.entry(p.id.clone()).or_insert_with(|| PortState {
                history: Ring::new(self.params.history),
                totals: PortTotals::default(),
                last_change: None,
                phy: None,
            });
        }
        self.index.clear();
        for (i, p) in ports.iter().enumerate() {
            self.index
                .entry(p.id.device.clone())
                .or_default()
                .push((p.id.port.clone(), i));
        }
        self.ports = ports;
    }

    fn record(&mut self, c: LinkChange) {
        if let Some(st) = self.state.get_mut(&c.id) {
            *st.totals.changes.entry(c.what).or_default() += 1;
            st.last_change = Some(c.clone());
        }
        self.log.push(c.clone());
        self.pending.push(c);
    }

    /// Takes the sample taken at `at` (its `seq` and `t_s` are `at`'s) and returns the interval
    /// it closes.
    pub fn push(&mut self, s: SoakSample, at: Tick) -> Frame {
        let dt = self.last.map(|l| at.t_s() - l.t_s()).filter(|d| *d > 0.0);
        self.last = Some(at);
        self.samples += 1;
        let (seq, problems) = (s.seq, s.problems.clone());
        for p in &s.ports {
            let Some(g) = &p.phy else { continue };
            let id = slot(&self.index, &p.device, &p.port).map(|i| self.ports[i].id.clone());
            if let Some(st) = id.and_then(|id| self.state.get_mut(&id)) {
                st.phy = Some(g.clone());
            }
        }
        self.window.push(s);
        self.steps(seq);
        let mut steps = std::mem::take(&mut self.steps);
        let mut ports = Vec::with_capacity(self.ports.len());
        let mut flaps = Vec::new();
        for (f, step) in self.ports.iter().zip(&mut steps) {
            let st = self.state.get_mut(&f.id).expect("a state per port");
            let (rx, tx, rxp, txp, saturated) = rates(step, dt);
            add_totals(&mut st.totals, step);
            if rx.is_some() || tx.is_some() {
                st.history.push(RatePoint {
                    t_s: at.t_s(),
                    rx_gbps: rx.unwrap_or(0.0),
                    tx_gbps: tx.unwrap_or(0.0),
                });
            }
            let state_changed = self
                .pending
                .iter()
                .any(|c| c.id == f.id && c.what == ChangeKind::State);
            if !state_changed {
                flaps.extend(changes::flap(f, &step.link_down, at));
            }
            let peak = frame::peak_gbps(rx, tx);
            ports.push(PortFrame {
                id: f.id.clone(),
                name: f.name.clone(),
                netdev: f.netdev.clone(),
                kind: f.kind,
                up: f.link.up,
                state: f.link.state.clone(),
                link: f.link.rate.clone(),
                pcie: f.link.pcie.clone(),
                numa_node: f.pcie.as_ref().and_then(|p| p.numa_node),
                counted_from: st.totals.counted_from,
                rx_gbps: rx,
                tx_gbps: tx,
                rx_pps: rxp,
                tx_pps: txp,
                rate_saturated: saturated,
                ceiling_gbps: f.ceiling.gbps,
                limited_by: f.ceiling.limited_by,
                utilisation: peak.zip(f.ceiling.gbps).map(|(p, c)| p / c),
                moved: std::mem::take(&mut step.moved),
                window: None,
                last_change: None,
                temperature: st.phy.as_ref().and_then(PhyGauges::hottest),
                rx_power: st.phy.as_ref().and_then(PhyGauges::weakest_rx),
            });
        }
        self.steps = steps;
        for c in flaps {
            self.record(c);
        }
        for p in &mut ports {
            if self.window.has_moved(&p.id) {
                p.window = self.mark(&p.id);
            }
            p.last_change = self.state.get(&p.id).and_then(|s| s.last_change.clone());
        }
        Frame {
            seq: at.seq,
            t_s: at.t_s(),
            unix_ms: at.unix_ms,
            interval_s: dt.unwrap_or(0.0),
            window_s: self.window.span_s(),
            ports,
            changes: std::mem::take(&mut self.pending),
            problems,
        }
    }

    /// Every watched port's counters read at sample `seq`, as the judged tracker counted them,
    /// into `self.steps`.
    fn steps(&mut self, seq: u64) {
        self.steps.resize_with(self.ports.len(), Step::default);
        for s in &mut self.steps {
            s.traffic = [None; 4];
            s.moved.clear();
            s.link_down.clear();
        }
        let Some(t) = self.window.tracker() else {
            return;
        };
        // A port's counters come one after the other: its slot and state are looked up once
        // for each run of them.
        let mut last: Option<(&str, &str, Option<usize>)> = None;
        let mut state: Option<&mut PortState> = None;
        for c in t.counters().iter().filter(|c| c.last_mark.seq == seq) {
            let (device, port) = (c.key.device.as_str(), c.key.port.as_str());
            let slot = match last {
                Some((d, p, i)) if d == device && p == port => i,
                _ => {
                    let i = slot(&self.index, device, port);
                    last = Some((device, port, i));
                    state = i.map(|i| {
                        self.state
                            .get_mut(&self.ports[i].id)
                            .expect("a state per port")
                    });
                    i
                }
            };
            if let (Some(i), Some(st)) = (slot, state.as_deref_mut()) {
                take_counter(&mut self.steps[i], &mut st.totals, c);
            }
        }
    }

    /// soak's verdict over the window on a port whose health counters moved in it.
    fn mark(&self, id: &PortId) -> Option<WindowMark> {
        let r = self.window.judge(id)?;
        Some(window_mark(&r, &self.window.moved_counters(id)))
    }

    /// soak's verdict over the window on every port (the metrics endpoint's; `None` before a
    /// port's first interval).
    pub fn verdicts(&self) -> Vec<(PortId, Option<PortReport>)> {
        self.ports
            .iter()
            .map(|p| (p.id.clone(), self.window.judge(&p.id)))
            .collect()
    }

    pub fn ports(&self) -> &[WatchedPort] {
        &self.ports
    }

    pub fn port(&self, id: &PortId) -> Option<&WatchedPort> {
        self.ports.iter().find(|p| &p.id == id)
    }

    pub fn history(&self, id: &PortId) -> Option<&Ring<RatePoint>> {
        self.state.get(id).map(|s| &s.history)
    }

    /// Port `id`'s PHY gauges (the NIC's temperatures, the module's diagnostics) as last read.
    pub fn phy(&self, id: &PortId) -> Option<&PhyGauges> {
        self.state.get(id)?.phy.as_ref()
    }

    pub fn totals(&self, id: &PortId) -> Option<&PortTotals> {
        self.state.get(id).map(|s| &s.totals)
    }

    /// The link events kept, oldest first.
    pub fn log(&self) -> &Ring<LinkChange> {
        &self.log
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn window(&self) -> &WindowJudge {
        &self.window
    }

    pub fn judge_params(&self) -> &JudgeParams {
        self.window.params()
    }

    /// Every counter of a port with its rate in the last interval, in the order read.
    pub fn counters(&self, id: &PortId) -> Vec<CounterRate> {
        let Some(t) = self.window.tracker() else {
            return Vec::new();
        };
        let last = self.last.map(|l| l.seq);
        t.counters()
            .iter()
            .filter(|c| c.key.device == id.device && c.key.port == id.port)
            .map(|c| {
                let now = Some(c.last_mark.seq) == last;
                let step = if now {
                    c.last_step
                } else {
                    linerate_soak::CounterStep::default()
                };
                CounterRate {
                    source: c.key.source,
                    counter: c.key.name.clone(),
                    value: c.last,
                    delta: step.delta,
                    per_s: self
                        .interval_s()
                        .filter(|_| now)
                        .map(|d| step.delta as f64 / d),
                    health: c.def().is_health(),
                    saturated: c.saturated_now,
                    reset: step.reset,
                }
            })
            .collect()
    }

    /// The last interval's length, seconds.
    fn interval_s(&self) -> Option<f64> {
        let t = self.window.tracker()?;
        let r = t.timeline().last()?;
        Some(r.end_s - r.start_s).filter(|d| *d > 0.0)
    }
}

/// The index in `ports` of port `port` of `device`.
fn slot(index: &HashMap<String, Vec<(String, usize)>>, device: &str, port: &str) -> Option<usize> {
    index
        .get(device)?
        .iter()
        .find(|(p, _)| p == port)
        .map(|(_, i)| *i)
}

/// Adds one counter's last step to its port's step.
fn take_counter(step: &mut Step, totals: &mut PortTotals, c: &CounterTrack) {
    let name = c.key.name.as_str();
    let src = c.key.source;
    let s = c.last_step;
    let def = c.def();
    // The rates come from the port's InfiniBand data counters where it has them (everything
    // the port carried, RDMA included), else from the netdev's.
    let received_data = def.judges.soak == Some(CounterRole::ReceivedData);
    if received_data && src == CounterSource::IbCounters {
        totals.counted_from = Some(CountedFrom::IbCounters);
    } else if received_data
        && totals.counted_from.is_none()
        && src == CounterSource::NetdevStatistics
    {
        totals.counted_from = Some(CountedFrom::NetdevStatistics);
    }
    let from = match totals.counted_from {
        Some(CountedFrom::IbCounters) => Some(CounterSource::IbCounters),
        Some(CountedFrom::NetdevStatistics) => Some(CounterSource::NetdevStatistics),
        None => None,
    };
    let traffic = def
        .judges
        .soak
        .and_then(|r| TRAFFIC.iter().position(|t| *t == r));
    if let (Some(k), true) = (traffic, from == Some(src)) {
        let unit = def.unit.bytes().unwrap_or(1);
        step.traffic[k] = Some((s.delta.saturating_mul(unit), c.saturated_now));
        return;
    }
    if !def.is_health() {
        return;
    }
    let by_name = totals.health.entry(src).or_default();
    match by_name.get_mut(name) {
        Some(h) => {
            h.0 = h.0.saturating_add(s.delta);
            h.1 = c.saturated_now;
        }
        None => {
            by_name.insert(name.to_string(), (s.delta, c.saturated_now));
        }
    }
    if s.delta > 0 || s.saturated || s.reset {
        step.moved.push(Moved {
            source: src,
            counter: name.to_string(),
            delta: s.delta,
            saturated: s.saturated,
            reset: s.reset,
        });
        // A link-down counter (the counter table's class): the link went down, and came back
        // if it is up now.
        if s.delta > 0 && !s.reset && def.class == CounterClass::LinkDown {
            step.link_down.push((name.to_string(), s.delta));
        }
    }
}

fn add_totals(t: &mut PortTotals, step: &Step) {
    let add = |v: &mut u64, d: Option<(u64, bool)>| *v = v.saturating_add(d.map_or(0, |d| d.0));
    add(&mut t.rx_bytes, step.traffic[0]);
    add(&mut t.tx_bytes, step.traffic[1]);
    add(&mut t.rx_packets, step.traffic[2]);
    add(&mut t.tx_packets, step.traffic[3]);
}

/// rx and tx Gb/s, rx and tx packets/s, and whether a data counter is pegged.
#[allow(clippy::type_complexity)]
fn rates(
    step: &Step,
    dt: Option<f64>,
) -> (Option<f64>, Option<f64>, Option<f64>, Option<f64>, bool) {
    let per_s = |v: Option<(u64, bool)>| Some(v?.0 as f64 / dt?);
    let gbps = |v: Option<(u64, bool)>| per_s(v).map(|b| b * 8.0 / 1e9);
    let saturated = step.traffic[..2].iter().flatten().any(|(_, s)| *s);
    (
        gbps(step.traffic[0]),
        gbps(step.traffic[1]),
        per_s(step.traffic[2]),
        per_s(step.traffic[3]),
        saturated,
    )
}

/// A port's judgement over the window, as the frame carries it.
fn window_mark(r: &PortReport, moved: &[&CounterTrack]) -> WindowMark {
    WindowMark {
        verdict: r.verdict,
        rule: r.rule,
        span_s: r.duration_s,
        counters: moved
            .iter()
            .map(|c| WindowCounter {
                source: c.key.source,
                counter: c.key.name.clone(),
                increase: c.delta,
                at_least: c.at_least,
                saturated: c.saturated_now,
                resets: c.resets_total,
            })
            .collect(),
        findings: r
            .findings
            .iter()
            .map(|f| WindowFinding {
                rule: f.rule,
                verdict: f.verdict,
                text: f.text.clone(),
            })
            .collect(),
    }
}
