//! The parts of doctor's document (`schemas/doctor.schema.json`): the verdict, memory, both
//! ends' probe documents and facts, and the storage pyramid. The document itself
//! (`linerate_results::DoctorReport`) holds them with the test results.

use serde::{Deserialize, Serialize};

use crate::{Cause, CounterDelta, EndFacts, ProbeDoc, QdiscsSeen};

/// The one-line answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorVerdict {
    pub summary: String,
    /// Best TCP throughput measured, Gb/s.
    pub gbps: f64,
    /// What the path can carry for TCP, Gb/s (0 when unknown).
    pub ceiling_gbps: f64,
    /// The stage or cause that limits the result.
    pub limited_by: Cause,
}

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
    /// The probe document of this host.
    pub local: ProbeDoc,
    /// The server's, when testing against one that sent it.
    pub remote: Option<ProbeDoc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathFacts {
    pub local: EndFacts,
    pub remote: Option<EndFacts>,
    /// Interfaces that carried the tests.
    pub local_interface: Option<String>,
    pub remote_interface: Option<String>,
    pub counter_deltas: Vec<CounterDelta>,
    /// The qdiscs of each end that counted drops, overlimits or requeues during the tests,
    /// summed over them (each with the tests it counted in).
    pub qdiscs: QdiscsSeen,
    /// The host stack's upper bound for one TCP stream (one memory copy per byte on each core
    /// the stream runs on), Gb/s: the ceiling of a path without hardware.
    pub stack_ceiling_gbps: Option<f64>,
    /// How that bound was found, in words with its figures ("one memory copy per byte on each
    /// of 2 cores at 60.8 GB/s"); absent with the bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_basis: Option<String>,
}

/// One row of the pyramid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `memory`, `disk_read`, `disk_write`, `network`, `file_copy`.
    pub layer: String,
    /// `local` or `remote`.
    pub host: String,
    /// A path, an interface, or `all cores`.
    pub subject: String,
    #[serde(serialize_with = "three_decimals")]
    pub gbps: f64,
    pub ceiling_gbps: Option<f64>,
    /// A write made durable (fsync'd), as a file copy writes: slower than the disk test's
    /// direct writes where a write-back cache sits below. Absent for other rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub durable: bool,
}

/// Figures keep their precision for the comparisons; the document shows 0.001 Gb/s. (serde
/// hands a `serialize_with` function a reference.)
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with signature"
)]
fn three_decimals<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(linerate_units::r3(*x))
}

impl Row {
    /// A row without a ceiling.
    pub fn new(layer: &str, host: &str, subject: impl Into<String>, gbps: f64) -> Self {
        Self {
            layer: layer.into(),
            host: host.into(),
            subject: subject.into(),
            gbps,
            ceiling_gbps: None,
            durable: false,
        }
    }

    /// The same layer of the same disk (or interface) on the same host.
    pub fn same_place(&self, other: &Row) -> bool {
        self.layer == other.layer
            && self.host == other.host
            && self.subject == other.subject
            && self.durable == other.durable
    }
}

/// What limits a disk-to-disk copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyLimit {
    /// The expected rate of a copy, Gb/s: the slowest of reading, the network and writing.
    #[serde(serialize_with = "three_decimals")]
    pub gbps: f64,
    /// The row (layer, host, subject) that sets it.
    pub limited_by: Row,
    /// A copy was measured: its end-to-end rate, Gb/s.
    pub measured_gbps: Option<f64>,
    /// The measured copy's own layers as the copy saw them: reading its source file, the
    /// network during the copy, and the durable write at the other end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<Row>,
    pub sentence: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pyramid {
    pub rows: Vec<Row>,
    pub copy: Option<CopyLimit>,
    pub notes: Vec<String>,
}
