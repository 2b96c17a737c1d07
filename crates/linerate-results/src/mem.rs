//! `linerate mem --json` (`schemas/mem.schema.json`): memory bandwidth with one thread and all
//! cores (and per NUMA node where there are several), and the theoretical DRAM peak.

use linerate_facts::{Dimm, Tool};
use serde::Serialize;

/// The document.
#[derive(Debug, Clone, Serialize)]
pub struct MemReport {
    pub schema_version: u32,
    pub tool: Tool,
    pub tests: Vec<MemTest>,
    pub dram: DramPeak,
}

/// One measurement: an operation over buffers of a size, with some threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemTest {
    /// `mem_copy`, `mem_read`, `mem_write`.
    pub kind: &'static str,
    pub threads: usize,
    /// NUMA node the threads and their memory were bound to, when measured per node.
    pub node: Option<u32>,
    /// Bytes per buffer (a copy uses two per thread).
    pub buffer_bytes: usize,
    /// Bytes copied, read or written (a copy counts each byte once).
    pub bytes: u64,
    pub seconds: f64,
    /// 10^9 bytes/s.
    pub gb_per_s: f64,
    /// 10^9 bit/s, to set beside the network.
    pub gbps: f64,
}

/// The installed memory and what it can carry at most.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DramPeak {
    pub dimms: Vec<Dimm>,
    /// Sum over the DIMMs of MT/s × bus width: an upper bound assuming one DIMM per channel;
    /// None without SMBIOS records that give a speed.
    pub theoretical_gb_per_s: Option<f64>,
}

impl DramPeak {
    /// The peak of `dimms`, GB/s (10^9 bytes/s), rounded to 0.1.
    pub fn of(dimms: Vec<Dimm>) -> Self {
        let peak: f64 = dimms.iter().map(Dimm::peak_gb_per_s).sum();
        Self {
            dimms,
            theoretical_gb_per_s: (peak > 0.0).then_some(linerate_units::r1(peak)),
        }
    }
}
