//! `linerate setup`: the configuration that makes a link fast, for this machine's distribution
//! and network renderer.
//!
//! The parts are separate: [`snapshot`] reads the configuration files under a root (the only
//! reading I/O), [`detect`] finds the distribution, the renderer in charge of an interface and
//! the package versions (pure), the plan builders ([`ipoib`], [`sysctl`], [`opensm`], [`nfs`],
//! [`irq`], [`governor`], [`rings`], [`roce`]) turn the inventory, its analysis and the snapshot into a [`linerate_facts::Plan`] (pure), and
//! [`apply`] writes a plan's files with backups and rolls them back (the only writing I/O).

pub mod apply;
pub mod detect;
pub mod edit;
pub mod governor;
pub mod ipoib;
pub mod irq;
pub mod nfs;
pub mod opensm;
pub mod plan;
pub mod rdma_stack;
pub mod rings;
pub mod roce;
pub mod snapshot;
pub mod sysctl;

use linerate_facts::{Analysis, Inventory, Plan, Topic};

pub use detect::Renderer;
pub use snapshot::Snapshot;

/// What the operator asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only this interface (`--iface`).
    pub iface: Option<String>,
    /// Only this renderer (`--renderer`); `None` detects it.
    pub renderer: Option<Renderer>,
    /// How the root is shown in messages (`/`, or the `--root` directory).
    pub root_shown: String,
    /// The round-trip time the socket buffers are sized for, in milliseconds.
    pub rtt_ms: f64,
    /// The rate the socket buffers are sized for, Gb/s (`--gbps`); `None`: the fastest port's.
    pub gbps: Option<f64>,
    /// This node is to run the subnet manager (`--sm-node`).
    pub sm_node: bool,
    /// A client's NFS export to mount over RDMA (`server:/export`).
    pub nfs_mount: Option<String>,
    /// The priority RoCE's traffic is to use (`--roce-priority`, 0-7).
    pub roce_priority: u8,
    /// The DSCP RoCE's traffic is to carry (`--roce-dscp`, 0-63).
    pub roce_dscp: u8,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            iface: None,
            renderer: None,
            root_shown: "/".to_string(),
            rtt_ms: 10.0,
            gbps: None,
            sm_node: false,
            nfs_mount: None,
            roce_priority: roce::DEFAULT_PRIORITY,
            roce_dscp: roce::DEFAULT_DSCP,
        }
    }
}

/// The plan for `topics` on the machine described by `inv`, `analysis` and `snap`. Pure.
pub fn build_plan(
    topics: &[Topic],
    inv: &Inventory,
    analysis: &Analysis,
    snap: &Snapshot,
    o: &Options,
) -> Plan {
    let mut plan = Plan::new(topics.to_vec());
    for t in topics {
        match t {
            Topic::Ipoib => ipoib::build(inv, analysis, snap, o, &mut plan),
            Topic::Sysctl => sysctl::build(inv, analysis, snap, o, &mut plan),
            Topic::Opensm => opensm::build(inv, analysis, snap, o, &mut plan),
            Topic::NfsRdma => nfs::build(inv, snap, o, &mut plan),
            Topic::Irq => irq::build(inv, analysis, snap, o, &mut plan),
            Topic::Governor => governor::build(analysis, snap, &mut plan),
            Topic::RdmaStack => rdma_stack::build(analysis, snap, &mut plan),
            Topic::Rings => rings::build(inv, analysis, snap, o, &mut plan),
            Topic::Roce => roce::build(inv, analysis, snap, o, &mut plan),
        }
    }
    plan
}
