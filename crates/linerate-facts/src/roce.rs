//! What a RoCE port is set up to do, as the rules derive it from the inventory
//! (`linerate_rules::roce`): the InfiniBand MTU its netdev allows, the GIDs a connection can
//! use (the index `ib_write_bw -x` and `NCCL_IB_GID_INDEX` take), and the path its traffic
//! takes through the port's priorities (ToS, trust, priority, PFC, ECN). Probe's `roce` per
//! port.

use serde::{Deserialize, Serialize};

use crate::{GidFamily, RoceVersion};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoceView {
    pub mtu: RoceMtu,
    /// Every GID in use, as `show_gids` lists them, with what it stands for.
    pub gids: Vec<RoceGid>,
    /// The GID rdma_cm picks for an address of the netdev (RoCE v2 first), and so the index
    /// to give tools that take one: the first RoCE v2 GID of an IPv4 address of the port's
    /// netdev, else of an IPv6 one. None when the port has none.
    pub use_gid: Option<u32>,
    /// How RoCE's traffic leaves the port: None where nothing of it was read.
    pub traffic: Option<RoceTraffic>,
}

/// The port's InfiniBand MTU against its netdev's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoceMtu {
    /// The MTU RoCE uses, bytes: libibverbs' `active_mtu` where it was asked, else derived
    /// from the netdev's MTU. None when neither is known.
    pub active: Option<u32>,
    /// The largest the port supports (libibverbs' `max_mtu`, else 4096).
    pub max: u32,
    /// `verbs` (from `ibv_query_port`) or `derived` (from the netdev's MTU).
    pub source: MtuSource,
    pub netdev: Option<String>,
    pub netdev_mtu: Option<u32>,
    /// Bytes of the netdev's MTU the driver keeps for RoCE's headers (96; soft-RoCE 80).
    pub headroom: u32,
    /// The smallest netdev MTU that gives the port its largest MTU.
    pub netdev_mtu_for_max: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MtuSource {
    Verbs,
    Derived,
}

/// One GID in use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoceGid {
    pub index: u32,
    pub gid: String,
    pub version: Option<RoceVersion>,
    pub family: Option<GidFamily>,
    /// The address it stands for (`198.18.0.1`; for a link-local GID its IPv6 form).
    pub address: Option<String>,
    pub netdev: Option<String>,
    pub vlan: Option<u16>,
}

/// How RoCE's traffic leaves the port: its ToS, how the port classifies it, the priority it
/// lands on and what protects that priority.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoceTraffic {
    /// The ToS rdma_cm gives a connection whose application sets none (configfs), else 0.
    pub tos: u8,
    /// `configfs` or `default`.
    pub tos_source: String,
    /// The GID type rdma_cm uses by default (configfs), where set.
    pub mode: Option<String>,
    /// How the port classifies what it sends: `dscp` or `pcp`.
    pub trust: Trust,
    /// The priority RoCE's packets go out on, and how that was found.
    pub priority: u8,
    pub priority_why: String,
    /// The priorities with PFC on; None where the DCB state was not read.
    pub pfc: Option<Vec<u8>>,
    /// Why the DCB state is not known (no DCB on the netdev, a failed read, not asked).
    pub dcb_unknown: Option<String>,
    /// ECN (DCQCN) on the RoCE priority at both the reaction and notification points: None
    /// where the driver has no switch to read.
    pub ecn: Option<bool>,
    /// Where the ECN switches were read, or why they could not be.
    pub ecn_why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    Dscp,
    Pcp,
}

impl RoceTraffic {
    /// PFC protects the RoCE priority; None where DCB was not read.
    pub fn pfc_on(&self) -> Option<bool> {
        self.pfc.as_ref().map(|p| p.contains(&self.priority))
    }

    /// In words: `PFC is off on priority 3 and ECN is off` (what soak and doctor quote).
    pub fn protection_words(&self) -> String {
        let pfc = match self.pfc_on() {
            Some(true) => format!("PFC is on for priority {}", self.priority),
            Some(false) => format!("PFC is off on priority {}", self.priority),
            None => format!(
                "PFC on priority {} is unknown ({})",
                self.priority,
                self.dcb_unknown.as_deref().unwrap_or("not read")
            ),
        };
        let ecn = match self.ecn {
            Some(true) => "ECN is on".to_string(),
            Some(false) => "ECN is off".to_string(),
            None => format!("ECN's switches are not readable ({})", self.ecn_why),
        };
        format!("{pfc} and {ecn}")
    }

    /// Nothing keeps RoCE from loss under congestion: PFC off on its priority and ECN off
    /// (or not readable, with `ecn_unknown_counts`).
    pub fn lossy(&self, ecn_unknown_counts: bool) -> bool {
        self.pfc_on() == Some(false)
            && match self.ecn {
                Some(on) => !on,
                None => ecn_unknown_counts,
            }
    }
}
