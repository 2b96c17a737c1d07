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
    /// RoCE: rdma_cm's defaults for this port (configfs), where they were set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_cm: Option<super::RdmaCmDefaults>,
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
    /// RoCE: the VLAN id of that netdev, when it is a VLAN (`/proc/net/vlan/config`; None
    /// where that is not readable, which it is for root only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
}

/// A RoCE GID's version: v1 (Ethertype 0x8915, one L2 segment) or v2 (UDP 4791, routable, and
/// the one ECN marks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoceVersion {
    V1,
    V2,
}

/// What a GID stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GidFamily {
    /// `::ffff:a.b.c.d`: an IPv4 address of the netdev (`rdma_ip2gid`).
    Ipv4,
    /// A global or unique-local IPv6 address of the netdev.
    Ipv6,
    /// `fe80::/64`: the default GID from the MAC (every RoCE port has it), or a link-local
    /// IPv6 address.
    LinkLocal,
}

impl Gid {
    /// The RoCE version from the type file (`RoCE v2`, `IB/RoCE v1`); None on InfiniBand.
    pub fn version(&self) -> Option<RoceVersion> {
        match self.kind.as_deref()? {
            "RoCE v2" => Some(RoceVersion::V2),
            "IB/RoCE v1" => Some(RoceVersion::V1),
            _ => None,
        }
    }

    /// The address this GID stands for (`198.18.0.1`, `2001:db8::1`, `fe80::...`).
    pub fn address(&self) -> Option<std::net::IpAddr> {
        if let Some(v4) = self.ipv4() {
            return Some(v4.into());
        }
        let groups: Vec<u16> = self
            .gid
            .split(':')
            .map(|g| u16::from_str_radix(g, 16).ok())
            .collect::<Option<Vec<_>>>()?;
        let g: [u16; 8] = groups.try_into().ok()?;
        Some(std::net::Ipv6Addr::from(g).into())
    }

    pub fn family(&self) -> Option<GidFamily> {
        match self.address()? {
            std::net::IpAddr::V4(_) => Some(GidFamily::Ipv4),
            std::net::IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80 => {
                Some(GidFamily::LinkLocal)
            }
            std::net::IpAddr::V6(_) => Some(GidFamily::Ipv6),
        }
    }

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
