//! Host facts that bound throughput: CPUs, governors, NUMA, socket buffer limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Kernel limits on socket buffers, bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketLimits {
    /// `net.core.rmem_max`: the most an application may ask for with SO_RCVBUF.
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    /// `net.ipv4.tcp_rmem`: min, default, max of TCP receive autotuning.
    pub tcp_rmem: Option<[u64; 3]>,
    pub tcp_wmem: Option<[u64; 3]>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    pub id: u32,
    #[serde(
        serialize_with = "super::cpulist::ser::cpulist",
        deserialize_with = "super::cpulist::ser::de_cpulist"
    )]
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    /// Online CPUs (serialized as a kernel CPU list, `0-27`).
    #[serde(
        serialize_with = "super::cpulist::ser::cpulist",
        deserialize_with = "super::cpulist::ser::de_cpulist"
    )]
    pub cpus: Vec<u32>,
    /// Governor name → CPUs using it (empty without cpufreq, as in most VMs).
    #[serde(
        serialize_with = "super::cpulist::ser::cpulist_map",
        deserialize_with = "super::cpulist::ser::de_cpulist_map"
    )]
    pub governors: BTreeMap<String, Vec<u32>>,
    pub scaling_driver: Option<String>,
    pub numa_nodes: Vec<NumaNode>,
    /// CPUs this process may run on (`Cpus_allowed_list`).
    #[serde(
        serialize_with = "super::cpulist::ser::opt_cpulist",
        deserialize_with = "super::cpulist::ser::de_opt_cpulist"
    )]
    pub allowed_cpus: Option<Vec<u32>>,
    pub sockets: SocketLimits,
}

impl Host {
    /// The NUMA node a CPU belongs to.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.numa_nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }
}

/// One memory device (DIMM), from its SMBIOS type 17 record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimm {
    pub size_mib: u64,
    /// Data width in bits (64 for a DIMM without ECC bits).
    pub data_width_bits: u16,
    /// Configured speed when known, else the rated speed, in MT/s.
    pub speed_mts: u16,
}

impl Dimm {
    /// Peak transfer rate of this DIMM, 10^9 bytes/s.
    pub fn peak_gb_per_s(&self) -> f64 {
        f64::from(self.speed_mts) * 1e6 * f64::from(self.data_width_bits) / 8.0 / 1e9
    }
}
