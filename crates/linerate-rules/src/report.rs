//! The document `linerate doctor` produces (schemas/doctor.schema.json): the verdict and
//! findings of [`crate::diagnose`], the tests, both inventories, the facts of the path, memory,
//! disks and the pyramid. Plain data beside the rules that fill it, so that renderers
//! (`linerate-report`) depend on data, not on doctor and the engines it runs; doctor builds it
//! and re-exports these types under their old paths (`linerate_doctor::DoctorReport`).

use linerate_results::disk::DiskReport;
use linerate_results::{TestResult, Tool};
use serde::Serialize;

use crate::pyramid::Pyramid;
use crate::{CounterDelta, EndFacts, Finding, Verdict};

/// Memory bandwidth of this host, one operation.
#[derive(Debug, Clone, Serialize)]
pub struct MemOut {
    pub kind: &'static str,
    pub threads: usize,
    pub buffer_bytes: usize,
    /// 10^9 bytes per second.
    pub gb_per_s: f64,
    /// The same in Gb/s, to set beside the network.
    pub gbps: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Inventories {
    /// `linerate probe --json` of this host.
    pub local: serde_json::Value,
    /// The server's probe document, when testing against one.
    pub remote: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathFacts {
    pub local: EndFacts,
    pub remote: Option<EndFacts>,
    /// Interfaces that carried the tests.
    pub local_interface: Option<String>,
    pub remote_interface: Option<String>,
    pub counter_deltas: Vec<CounterDelta>,
    /// The host stack's upper bound for one TCP stream (one memory copy per byte on each core
    /// the stream runs on), Gb/s: the ceiling of a path without hardware.
    pub stack_ceiling_gbps: Option<f64>,
    /// How that bound was found, in words with its figures ("one memory copy per byte on each
    /// of 2 cores at 60.8 GB/s"); absent with the bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_basis: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub schema_version: u32,
    pub tool: Tool,
    /// `self_check` or `two_hosts`.
    pub mode: &'static str,
    pub server: String,
    pub verdict: Verdict,
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
            .any(|f| f.id == crate::FindingId::CeilingExceeded)
    }
}
