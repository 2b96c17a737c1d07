//! A model fleet for the verdict and schema tests: the pairwise schedule measured over nodes
//! that each have a sending and a receiving capacity (a healthy link carries 0.94 Gb/s, like
//! the 1 Gbit/s shaped namespaces), with a few percent of deterministic spread between links.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use linerate_mesh::{
    build_report, pairwise, HostLoad, IdentitySource, LinkMeasurement, MeshInput, MeshLatency,
    MeshReport, NodeFacts, Phase, PortFacts, RankEntry, RankId, Round, ScheduleKind, Transport,
};

pub const HEALTHY: f64 = 0.94;

/// A fleet: per-node capacities and dead ranks (a dead rank measures nothing from `dies_at`).
#[derive(Clone)]
pub struct Fleet {
    pub n: u32,
    pub tx_cap: Vec<f64>,
    pub rx_cap: Vec<f64>,
    /// (rank, first round it misses)
    pub dead: Vec<(RankId, usize)>,
    /// Directed links slower than their nodes (a cable), in the rounds only or also alone.
    pub bad_links: Vec<(RankId, RankId, f64)>,
    pub contended: Vec<(RankId, RankId, f64)>,
    /// Ranks whose host other programs keep busy during the retests: (rank, other cores).
    pub loaded: Vec<(RankId, f64)>,
    /// Whether every measurement carries its hosts' load (a quiet host's where not loaded).
    pub report_load: bool,
}

impl Fleet {
    pub fn healthy(n: u32) -> Self {
        Fleet {
            n,
            tx_cap: vec![HEALTHY; n as usize],
            rx_cap: vec![HEALTHY; n as usize],
            dead: Vec::new(),
            bad_links: Vec::new(),
            contended: Vec::new(),
            loaded: Vec::new(),
            report_load: true,
        }
    }

    /// Rank `r`'s host load during a measurement: busy where [`Fleet::loaded`] says so in the
    /// retests, quiet otherwise.
    pub fn load(&self, r: RankId, phase: Phase) -> Option<HostLoad> {
        if !self.report_load {
            return None;
        }
        let other = self
            .loaded
            .iter()
            .find(|(x, _)| *x == r && phase == Phase::Retest)
            .map_or(0.02, |(_, c)| *c);
        Some(HostLoad {
            cores: 2,
            other_cores: other,
            steal_cores: 0.0,
            idle_cores: if other > 0.1 { 0.0 } else { 0.3 },
            rank_cores: Some(0.6),
            waited_cores: Some(if other > 0.1 { 0.8 } else { 0.01 }),
            seconds: 2.0,
        })
    }

    /// Spread of up to 4 % between healthy links, fixed per link.
    pub fn spread(tx: RankId, rx: RankId) -> f64 {
        1.0 - 0.01 * f64::from((tx * 7 + rx * 13) % 5)
    }

    pub fn alone(&self, tx: RankId, rx: RankId) -> f64 {
        let mut g = self.tx_cap[tx as usize].min(self.rx_cap[rx as usize]) * Self::spread(tx, rx);
        for &(a, b, v) in &self.bad_links {
            if (a, b) == (tx, rx) {
                g = g.min(v);
            }
        }
        g
    }

    pub fn in_round(&self, tx: RankId, rx: RankId) -> f64 {
        let mut g = self.alone(tx, rx);
        for &(a, b, v) in &self.contended {
            if (a, b) == (tx, rx) {
                g = g.min(v);
            }
        }
        g
    }

    pub fn is_dead(&self, r: RankId, round: usize) -> bool {
        self.dead.iter().any(|&(d, at)| d == r && round >= at)
    }

    pub fn measure(
        &self,
        phase: Phase,
        round: usize,
        tx: RankId,
        rx: RankId,
        conc: usize,
        lat: bool,
    ) -> LinkMeasurement {
        let dead = self.is_dead(tx, round) || self.is_dead(rx, round);
        let g = match phase {
            Phase::Round => self.in_round(tx, rx),
            Phase::Retest => self.alone(tx, rx),
        };
        LinkMeasurement {
            phase,
            round: round as u32,
            tx,
            rx,
            transport: Transport::Tcp,
            concurrency: conc as u32,
            gbps: (!dead).then_some(g),
            latency: (lat && !dead).then_some(MeshLatency {
                p50_us: 40.0 + f64::from((tx + rx) % 3),
                p99_us: 90.0,
            }),
            retransmits: (!dead).then_some(20 + u64::from((tx + rx) % 7)),
            error: dead.then(|| "connection refused".to_string()),
            tx_load: self.load(tx, phase),
            rx_load: self.load(rx, phase),
        }
    }

    pub fn rounds(&self) -> Vec<LinkMeasurement> {
        pairwise(self.n)
            .rounds
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.flows.iter().map(move |f| {
                    self.measure(Phase::Round, i, f.tx, f.rx, r.flows.len(), f.latency)
                })
            })
            .collect()
    }

    pub fn facts(&self) -> Vec<RankEntry> {
        (0..self.n)
            .filter(|r| !self.dead.iter().any(|&(d, at)| d == *r && at == 0))
            .map(|r| RankEntry {
                facts: NodeFacts {
                    rank: r,
                    host: format!("node{r:02}"),
                    data_addr: Some(format!("198.18.0.{}:7000", 10 + r)),
                    port: Some(PortFacts {
                        name: "eth0".into(),
                        card: Some("ConnectX-3 (MT27500)".into()),
                        pcie_current: Some("8.0 GT/s x8".into()),
                        mtu: Some(1500),
                        ..PortFacts::default()
                    }),
                    governor: Some("performance".into()),
                    ..NodeFacts::default()
                },
                identity_source: Some(IdentitySource::OpenMpi),
            })
            .collect()
    }

    pub fn report(&self, measurements: Vec<LinkMeasurement>, lost: Vec<RankId>) -> MeshReport {
        self.report_with(self.facts(), measurements, lost)
    }

    pub fn report_with(
        &self,
        ranks: Vec<RankEntry>,
        measurements: Vec<LinkMeasurement>,
        lost: Vec<RankId>,
    ) -> MeshReport {
        build_report(MeshInput {
            schedule: ScheduleKind::Pairwise,
            size: self.n,
            transport: Transport::Tcp,
            duration_s: 2.0,
            ranks,
            measurements,
            lost,
            notes: Vec::new(),
            rendezvous: None,
            interrupted: None,
        })
    }

    /// The retests `plan` asks for, measured alone after `after` rounds.
    pub fn retests(&self, plan: &[Round], after: usize) -> Vec<LinkMeasurement> {
        plan.iter()
            .enumerate()
            .map(|(i, r)| {
                let f = r.flows[0];
                self.measure(Phase::Retest, after + i, f.tx, f.rx, 1, f.latency)
            })
            .collect()
    }

    /// What the runtime does: the rounds, the report on them, the retest phase it plans (at
    /// most two rounds per rank, as `linerate mesh`), then the report on everything.
    pub fn run(&self, lost: Vec<RankId>) -> MeshReport {
        self.run_with(self.facts(), lost, |_| {})
    }

    /// [`Fleet::run`] with these facts, every measurement (round or retest) passed through
    /// `edit` first.
    pub fn run_with(
        &self,
        ranks: Vec<RankEntry>,
        lost: Vec<RankId>,
        edit: impl Fn(&mut LinkMeasurement),
    ) -> MeshReport {
        let mut all = self.rounds();
        all.iter_mut().for_each(&edit);
        let first = self.report_with(ranks.clone(), all.clone(), lost.clone());
        let after = pairwise(self.n).rounds.len();
        let mut retests = self.retests(&first.retest_plan(2 * self.n as usize), after);
        retests.iter_mut().for_each(&edit);
        all.extend(retests);
        self.report_with(ranks, all, lost)
    }
}
