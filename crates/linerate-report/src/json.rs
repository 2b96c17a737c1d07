//! The JSON documents (schemas in `schemas/`). Field names are a contract.

use linerate_inventory::{Host, IbPort, Inventory, LinkLayer, Netdev, PciFunction, Port, PortKind};
use linerate_model::{Ceiling, CeilingInput};
use linerate_rules::{Analysis, Finding};
use serde::Serialize;

// The document header lives with the result types, so every producer reuses the same values.
pub use linerate_results::{Tool, SCHEMA_VERSION, TOOL};

#[derive(Debug, Serialize)]
pub struct ProbeDoc<'a> {
    pub schema_version: u32,
    pub tool: Tool,
    pub root: String,
    pub host: &'a Host,
    pub ports: Vec<PortDoc<'a>>,
    pub findings: &'a [Finding],
}

#[derive(Debug, Serialize)]
pub struct PortDoc<'a> {
    pub name: &'a str,
    pub kind: PortKind,
    pub device: Option<&'a str>,
    pub port: Option<u32>,
    pub netdev: Option<&'a str>,
    pub link_layer: LinkLayer,
    pub ceiling: &'a Ceiling,
    pub ib: Option<IbDoc<'a>>,
    pub net: Option<&'a Netdev>,
    pub pci: Option<PciDoc<'a>>,
}

#[derive(Debug, Serialize)]
pub struct IbDoc<'a> {
    pub device: &'a str,
    pub fw_ver: Option<&'a str>,
    pub board_id: Option<&'a str>,
    pub hca_type: Option<&'a str>,
    pub node_guid: Option<&'a str>,
    #[serde(flatten)]
    pub port: &'a IbPort,
}

#[derive(Debug, Serialize)]
pub struct PciDoc<'a> {
    #[serde(flatten)]
    pub function: &'a PciFunction,
    /// `PCIe 3.0 x8`, as negotiated.
    pub current: Option<String>,
    pub capable: Option<String>,
    pub slot: Option<String>,
}

fn pci_doc(f: &PciFunction) -> PciDoc<'_> {
    PciDoc {
        function: f,
        current: f.link.current().map(|l| l.label()),
        capable: f.link.max().map(|l| l.label()),
        slot: f.slot_max().map(|(l, _)| l.label()),
    }
}

pub fn port_doc<'a>(inv: &'a Inventory, port: &'a Port, ceiling: &'a Ceiling) -> PortDoc<'a> {
    PortDoc {
        name: &port.name,
        kind: port.kind,
        device: port.device.as_deref(),
        port: port.port,
        netdev: port.netdev.as_deref(),
        link_layer: port.link_layer,
        ceiling,
        ib: inv.ib_port(port).map(|(d, p)| IbDoc {
            device: &d.name,
            fw_ver: d.fw_ver.as_deref(),
            board_id: d.board_id.as_deref(),
            hca_type: d.hca_type.as_deref(),
            node_guid: d.node_guid.as_deref(),
            port: p,
        }),
        net: inv.port_netdev(port),
        pci: inv.port_pci(port).map(pci_doc),
    }
}

pub fn probe_doc<'a>(inv: &'a Inventory, analysis: &'a Analysis, root: &str) -> ProbeDoc<'a> {
    ProbeDoc {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        root: root.to_string(),
        host: &inv.host,
        ports: inv
            .ports
            .iter()
            .zip(&analysis.ports)
            .map(|(p, a)| port_doc(inv, p, &a.ceiling))
            .collect(),
        findings: &analysis.findings,
    }
}

#[derive(Debug, Serialize)]
pub struct PlanDoc<'a> {
    pub schema_version: u32,
    pub tool: Tool,
    pub input: &'a CeilingInput,
    pub ceiling: &'a Ceiling,
}

pub fn plan_doc<'a>(input: &'a CeilingInput, ceiling: &'a Ceiling) -> PlanDoc<'a> {
    PlanDoc {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        input,
        ceiling,
    }
}
