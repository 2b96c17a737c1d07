//! Host facts that bound throughput: CPUs, governors, NUMA, socket buffer limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::fs::{parse_cpulist, Root};

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaNode {
    pub id: u32,
    #[serde(serialize_with = "crate::fs::ser::cpulist")]
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Host {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    /// Online CPUs (serialized as a kernel CPU list, `0-27`).
    #[serde(serialize_with = "crate::fs::ser::cpulist")]
    pub cpus: Vec<u32>,
    /// Governor name → CPUs using it (empty without cpufreq, as in most VMs).
    #[serde(serialize_with = "crate::fs::ser::cpulist_map")]
    pub governors: BTreeMap<String, Vec<u32>>,
    pub scaling_driver: Option<String>,
    pub numa_nodes: Vec<NumaNode>,
    /// CPUs this process may run on (`Cpus_allowed_list`).
    #[serde(serialize_with = "crate::fs::ser::opt_cpulist")]
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

const HOST: &str = "host";

pub fn read(r: &mut Root) -> Host {
    let mut h = Host {
        hostname: Root::read_raw(&r.path("proc/sys/kernel/hostname"))
            .ok()
            .flatten(),
        kernel: Root::read_raw(&r.path("proc/sys/kernel/osrelease"))
            .ok()
            .flatten(),
        ..Host::default()
    };
    let online = r.path("sys/devices/system/cpu/online");
    h.cpus = r
        .req_parse(&online, HOST, "a CPU list like `0-7`", parse_cpulist)
        .unwrap_or_default();
    for cpu in &h.cpus {
        let dir = r.path(&format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
        if let Some(g) = r.opt(&dir.join("scaling_governor"), HOST) {
            if !g.is_empty() {
                h.governors.entry(g).or_default().push(*cpu);
            }
        }
        if h.scaling_driver.is_none() {
            h.scaling_driver = r.opt(&dir.join("scaling_driver"), HOST);
        }
    }
    let node_dir = r.path("sys/devices/system/node");
    for name in Root::list(&node_dir) {
        let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let p = node_dir.join(&name).join("cpulist");
        if let Some(cpus) = r.opt_parse(&p, HOST, "a CPU list like `0-13`", parse_cpulist) {
            h.numa_nodes.push(NumaNode { id, cpus });
        }
    }
    if let Ok(Some(status)) = Root::read_raw(&r.path("proc/self/status")) {
        h.allowed_cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(parse_cpulist);
    }
    let num = |s: &str| s.trim().parse::<u64>().ok();
    let triple = |s: &str| {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        <[u64; 3]>::try_from(v).ok()
    };
    let p = r.path("proc/sys/net/core/rmem_max");
    h.sockets.rmem_max = r.req_parse(&p, HOST, "a byte count", num);
    let p = r.path("proc/sys/net/core/wmem_max");
    h.sockets.wmem_max = r.req_parse(&p, HOST, "a byte count", num);
    let p = r.path("proc/sys/net/ipv4/tcp_rmem");
    h.sockets.tcp_rmem = r.req_parse(&p, HOST, "three byte counts: min default max", triple);
    let p = r.path("proc/sys/net/ipv4/tcp_wmem");
    h.sockets.tcp_wmem = r.req_parse(&p, HOST, "three byte counts: min default max", triple);
    h
}
