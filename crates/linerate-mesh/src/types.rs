//! The plain data of a cluster run, shared by the runtime (which produces it), the verdicts
//! (which judge it) and the renderers. Rates in Gb/s (10^9 bit/s), latencies in µs.

use serde::{Deserialize, Serialize};

/// A rank: `0..size`, one process per node.
pub type RankId = u32;

/// Where a rank or a size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentitySource {
    /// `--rank` / `--size`.
    Flags,
    /// `OMPI_COMM_WORLD_RANK` / `OMPI_COMM_WORLD_SIZE`.
    OpenMpi,
    /// `PMI_RANK` / `PMI_SIZE` (MPICH, Slurm `--mpi=pmi2`).
    Pmi,
    /// `PMIX_RANK`.
    Pmix,
    /// `SLURM_PROCID` / `SLURM_NTASKS`.
    Slurm,
    /// `JOB_COMPLETION_INDEX` of a Kubernetes Indexed Job.
    IndexedJob,
    /// This host's position in `--hosts`.
    HostList,
}

impl IdentitySource {
    /// In precedence order.
    pub const ALL: [IdentitySource; 7] = [
        IdentitySource::Flags,
        IdentitySource::OpenMpi,
        IdentitySource::Pmi,
        IdentitySource::Pmix,
        IdentitySource::Slurm,
        IdentitySource::IndexedJob,
        IdentitySource::HostList,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IdentitySource::Flags => "flags",
            IdentitySource::OpenMpi => "open_mpi",
            IdentitySource::Pmi => "pmi",
            IdentitySource::Pmix => "pmix",
            IdentitySource::Slurm => "slurm",
            IdentitySource::IndexedJob => "indexed_job",
            IdentitySource::HostList => "host_list",
        }
    }

    /// An MPI launcher's own values, which win over stale `SLURM_*` ones.
    pub(crate) fn is_mpi(self) -> bool {
        matches!(
            self,
            IdentitySource::OpenMpi | IdentitySource::Pmi | IdentitySource::Pmix
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Tcp,
    Rdma,
}

/// Whether a measurement ran inside its scheduled round (with other pairs at the same time)
/// or alone, in the retest phase that tells contention from a bad link or node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Round,
    Retest,
}

/// Latency ping-pong of one pair, measured from `tx`'s side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeshLatency {
    pub p50_us: f64,
    pub p99_us: f64,
}

/// One directed measurement, complete or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkMeasurement {
    pub phase: Phase,
    /// Index of the round in the schedule (retests: the index of the retest step).
    pub round: u32,
    pub tx: RankId,
    pub rx: RankId,
    pub transport: Transport,
    /// How many flows ran at the same time, this one included.
    pub concurrency: u32,
    /// Receiver-side goodput over the test, Gb/s; None when nothing was measured.
    pub gbps: Option<f64>,
    pub latency: Option<MeshLatency>,
    /// TCP retransmits on the sender over the test.
    pub retransmits: Option<u64>,
    /// Why the measurement is missing or incomplete (a rank unreachable, a refused test...).
    pub error: Option<String>,
    /// The CPU of the sender's and of the receiver's host while the measurement's round ran,
    /// from the ranks' heartbeats: what other programs and the hypervisor took. `None` when
    /// the rank reported none (an older rank, no `/proc/stat`) or the run ended first.
    #[serde(default)]
    pub tx_load: Option<HostLoad>,
    #[serde(default)]
    pub rx_load: Option<HostLoad>,
}

/// How busy a rank's host was over an interval, apart from linerate itself (the CPU time of
/// every other program and the time the hypervisor gave to other guests), and how much CPU the
/// rank used and waited for, in cores (1.0: one core all the time). A measurement that wanted a
/// CPU other programs held says more about that load than about a link or a node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// The host's online CPUs.
    pub cores: u32,
    /// CPU time of the programs that are not linerate, cores.
    pub other_cores: f64,
    /// Hypervisor steal, cores.
    pub steal_cores: f64,
    /// Idle time, cores.
    pub idle_cores: f64,
    /// CPU time of the rank itself (its process), cores.
    #[serde(default)]
    pub rank_cores: Option<f64>,
    /// Time the rank's threads spent runnable but waiting for a CPU, in cores: whether the load
    /// took CPU the rank's tests wanted. `None` where the kernel keeps no per-thread scheduling
    /// statistics (`/proc/self/task/TID/schedstat`, CONFIG_SCHED_INFO) or from an older rank.
    #[serde(default)]
    pub waited_cores: Option<f64>,
    /// The interval the figures cover, seconds.
    pub seconds: f64,
}

/// One port of a node, as the fleet comparison sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortFacts {
    pub name: String,
    pub driver: Option<String>,
    pub firmware: Option<String>,
    /// The card as the card table names it (`ConnectX-3`), where known.
    pub card: Option<String>,
    /// PCIe link as trained and as capable: `8.0 GT/s x8`.
    pub pcie_current: Option<String>,
    pub pcie_max: Option<String>,
    pub mtu: Option<u32>,
    /// `connected` or `datagram` for IPoIB.
    pub ipoib_mode: Option<String>,
    /// The link's signalling rate, Gb/s.
    pub link_gbps: Option<f64>,
    /// The lowest stage of the port's ceiling chain, Gb/s.
    pub ceiling_gbps: Option<f64>,
}

/// What one rank tells the coordinator about its node: the facts nodes are compared on, and
/// every probe finding of the node (`id` and message).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeFacts {
    pub rank: RankId,
    pub host: String,
    /// The address the other ranks reach this rank's data server on (`ip:port`).
    pub data_addr: Option<String>,
    /// The port that carries `data_addr`, when probe found it.
    pub port: Option<PortFacts>,
    pub kernel: Option<String>,
    /// CPU frequency governor(s) in use, joined with `,` when mixed.
    pub governor: Option<String>,
    pub tcp_rmem_max: Option<u64>,
    pub tcp_wmem_max: Option<u64>,
    /// Probe findings of this node: (finding id, message).
    pub findings: Vec<(String, String)>,
    /// The rate limits on the data port, both directions; `None` when they were not read (no
    /// data port found, netlink refused, or a rank from before this field).
    #[serde(default)]
    pub shapers: Option<Vec<NodeShaper>>,
    /// Where this rank's number came from, as the rank tells the coordinator (`None` from a
    /// rank before this field); the final document moves it to the rank's entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_source: Option<IdentitySource>,
}

/// Which way a shaper limits the data port's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShaperDirection {
    /// What the node sends: a qdisc or class on the port's own egress.
    Egress,
    /// What the node receives: a qdisc on the device (an `ifb`) the port's ingress filters
    /// redirect to.
    Ingress,
}

impl ShaperDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Egress => "egress",
            Self::Ingress => "ingress",
        }
    }
}

/// One rate limit on a node's data path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeShaper {
    pub direction: ShaperDirection,
    /// The data port's netdev (`eth0`).
    pub netdev: String,
    /// The device the limit sits on when it is not the port itself: the `ifb` its ingress
    /// redirects to.
    pub via: Option<String>,
    /// `tbf`, `htb`, `fq`, `cake`.
    pub kind: String,
    /// The limit, bit/s.
    pub rate_bps: u64,
}

impl NodeShaper {
    /// `eth0 egress tbf`, `eth0 ingress tbf (on ifb0)`.
    pub fn label(&self) -> String {
        let via = self
            .via
            .as_ref()
            .map_or_else(String::new, |v| format!(" (on {v})"));
        format!(
            "{} {} {}{via}",
            self.netdev,
            self.direction.as_str(),
            self.kind
        )
    }
}
