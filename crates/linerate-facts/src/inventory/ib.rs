//! RDMA devices (`/sys/class/infiniband`): InfiniBand and RoCE ports.

use linerate_model::{IbPhysState, IbRate, IbState};
use serde::{Deserialize, Serialize};

/// The `link_layer` of an RDMA port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkLayer {
    Infiniband,
    Ethernet,
    Unknown,
}

impl LinkLayer {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "InfiniBand" => Some(Self::Infiniband),
            "Ethernet" => Some(Self::Ethernet),
            "Unknown" => Some(Self::Unknown),
            _ => None,
        }
    }
}

/// One PMA error or data counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counter {
    pub name: String,
    pub value: u64,
    /// At the all-ones value of its width: PMA counters stop there instead of wrapping.
    pub pegged: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IbPort {
    pub number: u32,
    pub state: Option<IbState>,
    pub phys_state: Option<IbPhysState>,
    pub rate: Option<IbRate>,
    pub link_layer: LinkLayer,
    pub lid: Option<u32>,
    pub sm_lid: Option<u32>,
    pub cap_mask: Option<u32>,
    pub gid0: Option<String>,
    /// RoCE: the netdev carrying GID 0.
    pub roce_netdev: Option<String>,
    /// Every GID in use (not all zeros), with its type and netdev where the kernel gives them.
    #[serde(default)]
    pub gids: Vec<Gid>,
    /// Error and data counters; empty when the port has no PMA.
    pub counters: Vec<Counter>,
    /// The driver's own counters (`hw_counters/`: rxe's retransmits and sequence errors,
    /// mlx5's congestion and retry counters), 64 bits wide; empty when it has none.
    #[serde(default)]
    pub hw_counters: Vec<Counter>,
    /// The MTU the port uses and the largest it supports, in bytes (256-4096), as libibverbs
    /// reports them (`ibv_query_port`): sysfs has neither. `None` where libibverbs was not
    /// asked (a fixture root) or is not installed.
    #[serde(default)]
    pub active_mtu: Option<u32>,
    #[serde(default)]
    pub max_mtu: Option<u32>,
    /// The state and rate files as read, quoted by evidence. Not serialized: the JSON keeps its shape.
    #[serde(skip)]
    pub verbatim: IbPortFiles,
}

/// One GID table entry in use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gid {
    pub index: u32,
    /// As sysfs prints it: eight groups of four hex digits.
    pub gid: String,
    /// `IB/RoCE v1` or `RoCE v2` (`gid_attrs/types/N`); `None` where the kernel has no type.
    pub kind: Option<String>,
    /// RoCE: the netdev this GID belongs to (`gid_attrs/ndevs/N`).
    pub ndev: Option<String>,
}

impl Gid {
    /// A RoCE v2 GID made from an IPv4 address (`::ffff:a.b.c.d`): that address.
    pub fn ipv4(&self) -> Option<std::net::Ipv4Addr> {
        let groups: Vec<u16> = self
            .gid
            .split(':')
            .map(|g| u16::from_str_radix(g, 16).ok())
            .collect::<Option<Vec<_>>>()?;
        let [0, 0, 0, 0, 0, 0xffff, hi, lo] = groups[..] else {
            return None;
        };
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Some(std::net::Ipv4Addr::new(a, b, c, d))
    }
}

/// `state`, `phys_state` and `rate` exactly as the kernel printed them
/// (`4: ACTIVE`, `5: LinkUp`, `10 Gb/sec (4X)` on old kernels).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IbPortFiles {
    pub state: Option<String>,
    pub phys_state: Option<String>,
    pub rate: Option<String>,
}

impl IbPort {
    /// The rate, when it describes a link: the port is ACTIVE, or at least physically LinkUp
    /// (INIT or ARMED, waiting for a subnet manager). On a port that is not up the drivers
    /// leave a placeholder in `rate` (mlx4: `10 Gb/sec (4X SDR)` or `2.5 Gb/sec (1X SDR)`;
    /// mlx5 RoCE with no active Ethernet protocol: `40 Gb/sec (4X QDR)`), and an unknown
    /// state proves nothing: `None` is the honest answer then.
    pub fn link_rate(&self) -> Option<IbRate> {
        let up = matches!(self.state, Some(IbState::Active | IbState::ActiveDefer))
            || self.phys_state == Some(IbPhysState::LinkUp);
        self.rate.filter(|_| up)
    }

    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IbDevice {
    pub name: String,
    pub pci: Option<String>,
    pub node_type: Option<String>,
    pub node_guid: Option<String>,
    pub fw_ver: Option<String>,
    pub hca_type: Option<String>,
    pub hw_rev: Option<String>,
    /// The PSID on Mellanox cards.
    pub board_id: Option<String>,
    pub node_desc: Option<String>,
    /// A software RDMA device (soft-RoCE `rxe`, soft-iWARP `siw`) over this netdev (its
    /// `parent` file): no hardware of its own, its port rate a copy of the netdev's speed (or a
    /// placeholder when that is unknown), its link and PCIe the netdev's.
    #[serde(default)]
    pub soft_parent: Option<String>,
    pub ports: Vec<IbPort>,
}

impl IbDevice {
    /// An iWARP device (i40iw, irdma in iWARP mode, `iw_cxgb4`): `node_type` is `4: RNIC`.
    /// Its ports run over Ethernet whatever `link_layer` says, and their `rate` is made up
    /// by the driver (`iw_cxgb4` always reports 4X DDR, i40iw 4X SDR): the netdev's speed is
    /// the link rate.
    pub fn is_iwarp(&self) -> bool {
        self.node_type
            .as_deref()
            .is_some_and(|t| t.split_once(':').map_or(t, |(_, name)| name).trim() == "RNIC")
    }

    /// A software RDMA device over a netdev (`rxe`, `siw`): see [`IbDevice::soft_parent`].
    pub fn is_soft(&self) -> bool {
        self.soft_parent.is_some()
    }

    /// Driver family from the device name: `mlx4`, `mlx5`, `mthca`, `rxe`, ...
    pub fn family(&self) -> &str {
        self.name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('_')
    }
}
