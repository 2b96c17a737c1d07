//! The document `linerate doctor` produces (`schemas/doctor.schema.json`): the verdict and
//! findings of `linerate_rules::diagnose`, the tests, both ends' probe documents, the facts of
//! the path, memory, disks and the pyramid. Plain data: doctor fills it, `linerate-report`
//! renders it. Its parts are `linerate_facts`'s; it sits here because it holds the tests'
//! results.

use linerate_facts::{
    DoctorVerdict, FarEndCopy, Finding, FindingId, Inventories, MemOut, PathFacts, Pyramid, Tool,
};
use serde::Serialize;

use crate::disk::DiskReport;
use crate::TestResult;

#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub schema_version: u32,
    pub tool: Tool,
    /// `self_check` or `two_hosts`.
    pub mode: &'static str,
    pub server: String,
    /// What the far end is, what it told of itself, and the steps its protocol cannot express.
    pub far_end: FarEndOut,
    pub verdict: DoctorVerdict,
    pub findings: Vec<Finding>,
    pub tests: Vec<TestResult>,
    pub inventory: Inventories,
    pub path: PathFacts,
    pub memory: Vec<MemOut>,
    /// `linerate disk` of each directory given (a short plan).
    pub disks: Vec<DiskReport>,
    /// Memory, disks and network side by side; what limits a disk-to-disk copy.
    pub pyramid: Pyramid,
    pub checked: Vec<String>,
    /// Tests that could not run or did not complete.
    pub errors: Vec<String>,
    pub seconds: f64,
}

/// Doctor's far end: the protocol it speaks and what the verdict could be judged from.
#[derive(Debug, Clone, Serialize)]
pub struct FarEndOut {
    /// `linerate` (`linerate serve`, or the self-check's own server) or `iperf3` (a stock
    /// `iperf3 -s`).
    pub protocol: &'static str,
    /// What is known of the far end's release (`iperf3 3.12`, `iperf3 3.7 or later`); none
    /// when nothing told it, or for linerate's own protocol.
    pub version: Option<String>,
    /// The far end described its host (interface, link, driver, CPUs): false for a stock iperf3
    /// server, which says nothing of its hardware, so none of it is in the report.
    pub hardware_known: bool,
    /// `both_ends`, or `this_end`: the far end's hardware is unknown and the verdict is judged
    /// from this end's facts and the path's measurements alone.
    pub judged_from: JudgedFrom,
    /// Steps of the plan the far end's protocol cannot express, each with the reason: skipped,
    /// never guessed.
    pub skipped: Vec<SkippedStep>,
    /// The far end runs on this host: its processes, found by the listening socket they hold
    /// (a `linerate serve`, a stock `iperf3 -s`, any server). Their CPU is the far end's work,
    /// counted with linerate's own, never as other processes competing. Empty otherwise (and in
    /// a self-check, whose server runs in doctor's own process).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub on_this_host: Vec<FarEndProcess>,
    /// The far end runs a copy of this linerate, sent over ssh for the run (`--ssh-copy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copied: Option<FarEndCopy>,
}

/// A process of the far end that runs on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FarEndProcess {
    pub pid: u32,
    /// Its program (`/proc/PID/comm`): `iperf3`, `linerate`.
    pub program: String,
}

/// What doctor's verdict is judged from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgedFrom {
    BothEnds,
    ThisEnd,
}

/// A step doctor did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedStep {
    /// The step as its progress line names it (`TCP latency, 1 stream, 2 s`, `file copy`).
    pub step: String,
    pub reason: String,
}

impl DoctorReport {
    /// A measured stream beat the host stack's bound (`ceiling.exceeded`): renderers show the
    /// bound as what it is then, not as a ceiling.
    pub fn stack_bound_beaten(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.id == FindingId::CeilingExceeded)
    }
}
