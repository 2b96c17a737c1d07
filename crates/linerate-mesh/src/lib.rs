//! The pure parts of `linerate mesh`: who each rank is, which links are measured in which
//! round, the plain data a cluster run produces, and the verdicts drawn from it. No I/O: the
//! runtime (rendezvous, coordinator, the pairs' tests) lives in `linerate-cluster`, the
//! renderers in `linerate-report`.

pub mod facts;
pub mod fleet;
pub mod hostlist;
pub mod judge;
pub mod launch;
pub mod report;
pub mod retest;
pub mod schedule;
pub mod types;

pub use facts::{node_facts, port_facts, FactsInput};
pub use fleet::{fleet_findings, FleetAttribute, FleetFinding, FleetId};
pub use judge::{
    judge, Cleared, JudgeInput, Judgement, LinkStatus, LinkVerdict, NodeSide, NodeStatus,
    NodeVerdict, Unconfirmed,
};
pub use launch::{
    coordinator_candidates, identify, CandidateSource, CoordinatorCandidate, Identity, LaunchArgs,
    LaunchError,
};
pub use report::{
    build_report, mesh_event, EventEnd, MeshEvent, MeshInput, MeshReport, RankEntry,
    RendezvousInfo, RendezvousSkip,
};
pub use retest::retest_plan;
pub use schedule::{
    cap_concurrency, incast, pairwise, parse_round_file, quick, ring, Flow, Round, Schedule,
    ScheduleError, ScheduleKind,
};
pub use types::{
    HostLoad, IdentitySource, LinkMeasurement, MeshLatency, NodeFacts, NodeShaper, Phase,
    PortFacts, RankId, ShaperDirection, Transport,
};
