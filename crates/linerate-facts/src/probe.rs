//! The probe document (`linerate probe --json`, `schemas/probe.schema.json`): the host, each
//! port with its ceiling and the hardware behind it, and the findings. The same document is a
//! host's `probe` in [`crate::HostFacts`] and each end of doctor's `inventory`. Field names are
//! a contract.

use linerate_model::Ceiling;
use serde::{Deserialize, Serialize};

use crate::inventory::{Host, IbPort, Inventory, LinkLayer, Netdev, PciFunction, Port, PortKind};
use crate::{Analysis, Finding, Tool, SCHEMA_VERSION, TOOL};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeDoc {
    pub schema_version: u32,
    pub tool: Tool,
    /// The root probe read (`/`, or a fixture tree).
    pub root: String,
    pub host: Host,
    pub ports: Vec<PortDoc>,
    pub findings: Vec<Finding>,
    /// The NFS mounts, each with its transport and the interface that reaches its server.
    /// Absent when there are none, so a host without NFS says what a release before this
    /// field said (a peer of that release reads it whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nfs: Vec<NfsDoc>,
}

/// One NFS mount as probe sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NfsDoc {
    #[serde(flatten)]
    pub mount: crate::inventory::NfsMount,
    /// The interface the routing table reaches the server (`addr=`) through.
    pub via: Option<String>,
    /// That interface's RDMA device, when it has one.
    pub rdma_device: Option<String>,
}

impl NfsDoc {
    /// Each NFS mount of `inv`, with the interface and RDMA device on its server's route.
    pub fn of(inv: &Inventory) -> Vec<NfsDoc> {
        let s = &inv.rdma_stack;
        s.nfs_mounts
            .iter()
            .map(|m| {
                let via = m
                    .addr
                    .as_deref()
                    .and_then(|a| a.parse().ok())
                    .and_then(|a| s.route_to(a))
                    .map(str::to_string);
                let rdma_device = via
                    .as_deref()
                    .and_then(|v| inv.rdma_port_of_netdev(v))
                    .and_then(|p| p.device.clone());
                NfsDoc {
                    mount: m.clone(),
                    via,
                    rdma_device,
                }
            })
            .collect()
    }
}

/// One port: probe's port shape, also bench's `local` and `remote` (with the address).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortDoc {
    pub name: String,
    pub kind: PortKind,
    pub device: Option<String>,
    pub port: Option<u32>,
    pub netdev: Option<String>,
    pub link_layer: LinkLayer,
    pub ceiling: Ceiling,
    pub ib: Option<IbDoc>,
    pub net: Option<Netdev>,
    pub pci: Option<PciDoc>,
    /// What ethtool read below the netdev: module, FEC, link modes, rings, coalescing,
    /// channels, pause, ring drops, VFs. Absent when nothing was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<crate::inventory::PortPhy>,
    /// A RoCE port: its MTU against its netdev's, its GIDs with the index to use, and how its
    /// traffic is protected (PFC, ECN). Absent for other ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce: Option<crate::RoceView>,
    /// A RoCE port's netdev, as read: its DCB state (PFC with its frame counters, ETS, the
    /// APP and trust tables, DCBX), ECN's switches, the driver's pause and discard counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<crate::PortQos>,
}

/// The InfiniBand (or RoCE) device and port behind a port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IbDoc {
    pub device: String,
    pub fw_ver: Option<String>,
    pub board_id: Option<String>,
    pub hca_type: Option<String>,
    pub node_guid: Option<String>,
    /// A software RDMA device (rxe, siw): the netdev it runs over.
    #[serde(default)]
    pub soft_parent: Option<String>,
    /// The firmware against the newest known for the device's family (not for a soft device).
    #[serde(default)]
    pub firmware: Option<linerate_model::firmware::FirmwareStatus>,
    #[serde(flatten)]
    pub port: IbPort,
}

/// The PCI function behind a port, with its links in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PciDoc {
    #[serde(flatten)]
    pub function: PciFunction,
    /// `PCIe 3.0 x8`, as negotiated.
    pub current: Option<String>,
    pub capable: Option<String>,
    pub slot: Option<String>,
}

impl PciDoc {
    pub fn new(f: &PciFunction) -> Self {
        Self {
            function: f.clone(),
            current: f.link.current().map(|l| l.label()),
            capable: f.link.max().map(|l| l.label()),
            slot: f.slot_max().map(|(l, _)| l.label()),
        }
    }
}

impl PortDoc {
    /// `port` of `inv`, with its ceiling.
    pub fn new(inv: &Inventory, port: &Port, ceiling: &Ceiling) -> Self {
        Self {
            name: port.name.clone(),
            kind: port.kind,
            device: port.device.clone(),
            port: port.port,
            netdev: port.netdev.clone(),
            link_layer: port.link_layer,
            ceiling: ceiling.clone(),
            ib: inv.ib_port(port).map(|(d, p)| IbDoc {
                device: d.name.clone(),
                fw_ver: d.fw_ver.clone(),
                board_id: d.board_id.clone(),
                hca_type: d.hca_type.clone(),
                node_guid: d.node_guid.clone(),
                soft_parent: d.soft_parent.clone(),
                firmware: d.pci.as_deref().and_then(|a| inv.pci(a)).map(|f| {
                    linerate_model::firmware::judge(
                        f.vendor,
                        f.device,
                        d.fw_ver.as_deref(),
                        d.board_id.as_deref(),
                    )
                }),
                port: p.clone(),
            }),
            net: inv.port_netdev(port).cloned(),
            pci: inv.port_pci(port).map(PciDoc::new),
            phy: port.netdev.as_deref().and_then(|n| inv.phy(n)).cloned(),
            roce: None,
            qos: port.netdev.as_deref().and_then(|n| inv.qos(n)).cloned(),
        }
    }
}

impl ProbeDoc {
    /// The document of `inv` read under `root`, with the `analysis` of its rules.
    pub fn new(inv: &Inventory, analysis: &Analysis, root: &str) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            tool: TOOL,
            root: root.to_string(),
            host: inv.host.clone(),
            ports: inv
                .ports
                .iter()
                .zip(&analysis.ports)
                .map(|(p, a)| PortDoc {
                    roce: a.roce.clone(),
                    ..PortDoc::new(inv, p, &a.ceiling)
                })
                .collect(),
            findings: analysis.findings.clone(),
            nfs: NfsDoc::of(inv),
        }
    }

    /// The port whose netdev (or, failing that, whose name) is `name`.
    pub fn port(&self, name: &str) -> Option<&PortDoc> {
        self.ports
            .iter()
            .find(|p| p.netdev.as_deref() == Some(name))
            .or_else(|| self.ports.iter().find(|p| p.name == name))
    }
}
