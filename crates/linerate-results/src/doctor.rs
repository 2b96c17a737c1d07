//! The document `linerate doctor` produces (`schemas/doctor.schema.json`): the verdict and
//! findings of `linerate_rules::diagnose`, the tests, both ends' probe documents, the facts of
//! the path, memory, disks and the pyramid. Plain data: doctor fills it, `linerate-report`
//! renders it. Its parts are `linerate_facts`'s; it sits here because it holds the tests'
//! results.

use linerate_facts::{
    DoctorVerdict, Finding, FindingId, Inventories, MemOut, PathFacts, Pyramid, Tool,
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

impl DoctorReport {
    /// A measured stream beat the host stack's bound (`ceiling.exceeded`): renderers show the
    /// bound as what it is then, not as a ceiling.
    pub fn stack_bound_beaten(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.id == FindingId::CeilingExceeded)
    }
}
