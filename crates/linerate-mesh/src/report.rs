//! The final document of a cluster run (`schemas/mesh.schema.json`): the header every JSON
//! document carries, the schedule, each rank's facts and identity source, the measurements,
//! the matrix, the link and node verdicts, the fleet findings, and `healthy` for the exit
//! status. Built in one pure function from what the coordinator gathered.

use std::fmt::Write as _;

use linerate_facts::{Tool, SCHEMA_VERSION, TOOL};
use serde::Serialize;

use crate::fleet::{fleet_findings, FleetFinding};
use crate::judge::{
    below_ceiling, judge, JudgeInput, LinkStatus, LinkVerdict, NodeStatus, NodeVerdict,
};
use crate::schedule::ScheduleKind;
use crate::types::IdentitySource;
use crate::types::{LinkMeasurement, NodeFacts, Phase, RankId, Transport};

/// One rank in the document: its facts, and where its rank came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankEntry {
    #[serde(flatten)]
    pub facts: NodeFacts,
    /// `None` for a rank that never reported.
    pub identity_source: Option<IdentitySource>,
}

/// How rank 0 found where its coordinator listens (the rendezvous), and the methods it passed
/// over before that one, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RendezvousInfo {
    /// `flag`, `pmix`, `directory`, `slurm_nodelist`, `indexed_job` or `host_list`.
    pub method: String,
    /// As the options and docs name it: `--coordinator`, `PMIx`, `--rendezvous-dir`...
    pub label: String,
    /// The address the ranks connect to (`HOST:PORT`).
    pub addr: String,
    pub skipped: Vec<RendezvousSkip>,
}

/// A rendezvous method passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RendezvousSkip {
    pub method: String,
    pub label: String,
    pub why: String,
}

impl RendezvousInfo {
    /// `coordinator at node01:5302, found by --hosts (passed over: PMIx: ...; ...)`.
    pub fn line(&self) -> String {
        let mut s = format!("coordinator at {}, found by {}", self.addr, self.label);
        if !self.skipped.is_empty() {
            let skipped: Vec<String> = self
                .skipped
                .iter()
                .map(|k| format!("{}: {}", k.label, k.why))
                .collect();
            let _ = write!(s, " (passed over: {})", skipped.join("; "));
        }
        s
    }
}

/// What the coordinator gathered.
#[derive(Debug, Clone)]
pub struct MeshInput {
    pub schedule: ScheduleKind,
    pub size: u32,
    pub transport: Transport,
    /// Seconds each bandwidth test ran.
    pub duration_s: f64,
    /// Ranks that reported (any order; missing ranks allowed).
    pub ranks: Vec<RankEntry>,
    pub measurements: Vec<LinkMeasurement>,
    /// Ranks the coordinator lost (died, never arrived, stopped answering).
    pub lost: Vec<RankId>,
    /// Remarks of the run (identity notes, a run cut short...).
    pub notes: Vec<String>,
    /// How rank 0 found the coordinator's address; `None` when not known.
    pub rendezvous: Option<RendezvousInfo>,
    /// Why the run stopped before its end (`rank 0 was stopped by SIGTERM during round 3 of
    /// 6`); `None` for a run that ran to its end.
    pub interrupted: Option<String>,
}

/// The final document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeshReport {
    pub schema_version: u32,
    pub tool: Tool,
    pub schedule: ScheduleKind,
    pub size: u32,
    pub transport: Transport,
    pub duration_s: f64,
    /// The fleet's reference rate: the upper quartile of the links measured in their rounds, Gb/s.
    pub reference_gbps: Option<f64>,
    pub ranks: Vec<RankEntry>,
    pub measurements: Vec<LinkMeasurement>,
    /// Gb/s measured in the rounds: `matrix[tx][rx]` (sender rows, receiver columns); `null`
    /// on the diagonal and where nothing was measured.
    pub matrix: Vec<Vec<Option<f64>>>,
    pub links: Vec<LinkVerdict>,
    pub nodes: Vec<NodeVerdict>,
    pub fleet: Vec<FleetFinding>,
    pub lost: Vec<RankId>,
    pub notes: Vec<String>,
    /// How rank 0 found the coordinator's address, and the methods it passed over.
    pub rendezvous: Option<RendezvousInfo>,
    /// Why the run stopped before its end; the document holds what was measured until then.
    pub interrupted: Option<String>,
    /// The run ran to its end, and no node is degraded or unreachable and no link slow, lossy,
    /// unreachable or cut short: exit status 0 (contention and unconfirmed suspects are
    /// reported, not faults).
    pub healthy: bool,
}

impl MeshReport {
    /// How the reports name a rank: its host, or `host/rank` when several ranks share the host.
    pub fn host(&self, rank: RankId) -> String {
        self.nodes
            .get(rank as usize)
            .map_or_else(|| format!("rank {rank}"), |n| n.label.clone())
    }

    /// The retest phase for this (round-phase) report: see [`crate::retest::retest_plan`].
    pub fn retest_plan(&self, max_rounds: usize) -> Vec<crate::schedule::Round> {
        crate::retest::retest_plan(&self.nodes, &self.links, max_rounds)
    }

    /// The bad links, most telling first: links no node accounts for (a cable, a switch
    /// port), then links whose measurements failed between live nodes, then links put down to
    /// a degraded node, last the links of unreachable nodes; within each, slowest first.
    pub fn worst_links(&self) -> Vec<&LinkVerdict> {
        let dead = |r: RankId| {
            self.nodes
                .get(r as usize)
                .is_some_and(|n| n.status == NodeStatus::Unreachable)
        };
        let class = |l: &LinkVerdict| match l.status {
            LinkStatus::Unreachable | LinkStatus::CutShort if dead(l.tx) || dead(l.rx) => 3,
            LinkStatus::Unreachable | LinkStatus::CutShort => 1,
            _ if l.explained_by.is_empty() => 0,
            _ => 2,
        };
        let mut v: Vec<&LinkVerdict> = self.links.iter().filter(|l| l.status.is_bad()).collect();
        v.sort_by(|a, b| {
            let key = |l: &LinkVerdict| l.fraction_of_reference.unwrap_or(-1.0);
            class(a)
                .cmp(&class(b))
                .then(key(a).total_cmp(&key(b)))
                .then((a.tx, a.rx).cmp(&(b.tx, b.rx)))
        });
        v
    }
}

/// The matrix of round-phase medians, `size × size`.
fn matrix(size: u32, links: &[LinkVerdict]) -> Vec<Vec<Option<f64>>> {
    let mut m = vec![vec![None; size as usize]; size as usize];
    for l in links {
        if let Some(row) = m.get_mut(l.tx as usize) {
            if let Some(cell) = row.get_mut(l.rx as usize) {
                *cell = l.gbps;
            }
        }
    }
    m
}

/// Judges what the coordinator gathered and assembles the final document. A node without
/// facts is named `rank N`.
pub fn build_report(input: MeshInput) -> MeshReport {
    let mut ranks = input.ranks;
    // Each rank's own word on its identity source, in its entry (once, not in its facts too).
    for r in &mut ranks {
        if let Some(src) = r.facts.identity_source.take() {
            r.identity_source.get_or_insert(src);
        }
    }
    ranks.sort_by_key(|r| r.facts.rank);
    ranks.dedup_by_key(|r| r.facts.rank);
    ranks.retain(|r| r.facts.rank < input.size);
    let facts: Vec<NodeFacts> = ranks.iter().map(|r| r.facts.clone()).collect();
    let mut fleet = fleet_findings(&facts);
    let j = judge(&JudgeInput {
        size: input.size,
        nodes: &facts,
        measurements: &input.measurements,
        lost: &input.lost,
        fleet: &fleet,
        duration_s: Some(input.duration_s),
    });
    fleet.extend(below_ceiling(&j, &facts));
    let healthy = j.nodes.iter().all(|n| !n.status.is_bad())
        && j.links.iter().all(|l| !l.status.is_bad())
        && !j.links.is_empty()
        && input.interrupted.is_none();
    let mut notes = input.notes;
    notes.extend(j.notes);
    if j.links.is_empty() {
        notes.push("no link was measured: nothing to judge".to_string());
    }
    let retests = input
        .measurements
        .iter()
        .filter(|m| m.phase == Phase::Retest)
        .count();
    if retests > 0 {
        notes.push(format!(
            "{retests} measurements ran alone in the retest phase"
        ));
    }
    MeshReport {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        schedule: input.schedule,
        size: input.size,
        transport: input.transport,
        duration_s: input.duration_s,
        reference_gbps: j.reference_gbps,
        matrix: matrix(input.size, &j.links),
        ranks,
        measurements: input.measurements,
        links: j.links,
        nodes: j.nodes,
        fleet,
        lost: input.lost,
        notes,
        rendezvous: input.rendezvous,
        interrupted: input.interrupted,
        healthy,
    }
}

/// One end of a measurement in a stream event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventEnd {
    pub rank: RankId,
    pub host: Option<String>,
    /// The rank's data address (`ip:port`), when it reported one.
    pub addr: Option<String>,
}

/// One `--json-stream` line (`schemas/mesh-event.schema.json`): a measurement as it happens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeshEvent {
    /// Always `measurement`.
    pub event: &'static str,
    pub phase: Phase,
    pub round: u32,
    pub tx: EventEnd,
    pub rx: EventEnd,
    /// `forward` when the lower rank sends (the first direction a pair is measured in),
    /// `reverse` otherwise.
    pub direction: &'static str,
    pub transport: Transport,
    pub concurrency: u32,
    pub gbps: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub retransmits: Option<u64>,
    pub error: Option<String>,
}

/// The stream event of one measurement; hosts and addresses from the ranks' facts.
pub fn mesh_event(m: &LinkMeasurement, nodes: &[NodeFacts]) -> MeshEvent {
    let end = |r: RankId| {
        let facts = nodes.iter().find(|n| n.rank == r);
        EventEnd {
            rank: r,
            host: facts.map(|n| n.host.clone()),
            addr: facts.and_then(|n| n.data_addr.clone()),
        }
    };
    MeshEvent {
        event: "measurement",
        phase: m.phase,
        round: m.round,
        tx: end(m.tx),
        rx: end(m.rx),
        direction: if m.tx < m.rx { "forward" } else { "reverse" },
        transport: m.transport,
        concurrency: m.concurrency,
        gbps: m.gbps.map(linerate_units::r3),
        latency_p50_us: m.latency.map(|l| linerate_units::r2(l.p50_us)),
        latency_p99_us: m.latency.map(|l| linerate_units::r2(l.p99_us)),
        retransmits: m.retransmits,
        error: m.error.clone(),
    }
}
