//! Network interfaces (`/sys/class/net`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetdevKind {
    Ethernet,
    Ipoib,
    Loopback,
    /// Another ARPHRD type (tunnels, CAN, ...): listed, not analysed.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IpoibMode {
    Datagram,
    Connected,
}

impl IpoibMode {
    /// The name serde gives it (`datagram`, `connected`), as sysfs's `mode` file says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Datagram => "datagram",
            Self::Connected => "connected",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpoibInfo {
    /// `None` when the kernel has no connected-mode support (no `mode` file) or it is unreadable.
    pub mode: Option<IpoibMode>,
    /// Address byte 0 has 0x80: the HCA supports connected mode (mlx5 enhanced IPoIB does not).
    pub connected_capable: Option<bool>,
    pub pkey: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Netdev {
    pub name: String,
    pub kind: NetdevKind,
    /// ARPHRD type number.
    pub arp_type: Option<u32>,
    /// No hardware behind it (`devices/virtual`): loopback, bridge, veth, tun, bond...
    pub is_virtual: bool,
    /// A paravirtual NIC (virtio, vmxnet, netvsc): hardware from the guest's view, but no physical link.
    pub paravirtual: bool,
    pub driver: Option<String>,
    pub pci: Option<String>,
    pub mtu: Option<u32>,
    /// Mb/s; `None` when unknown (-1, no carrier, or not reported).
    pub speed_mbps: Option<u32>,
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    /// IFF_UP in `flags`: configured up by the administrator.
    pub admin_up: Option<bool>,
    pub dev_port: Option<u32>,
    pub address: Option<String>,
    pub ipoib: Option<IpoibInfo>,
    /// Non-zero error and drop counters from `statistics/`.
    pub errors: BTreeMap<String, u64>,
}

impl Netdev {
    /// The link speed when the link is up. Without carrier the `speed` file is EINVAL, -1,
    /// or on some drivers a stale or preset figure: only a carrier makes it a link rate.
    /// A capture without a `carrier` file is believed unless `operstate` says down.
    pub fn link_speed_mbps(&self) -> Option<u32> {
        match self.carrier {
            Some(false) => None,
            None if self.operstate.as_deref() == Some("down") => None,
            _ => self.speed_mbps,
        }
    }
}
