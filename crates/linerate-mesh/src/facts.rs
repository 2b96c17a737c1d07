//! A node's facts from its probe: what each rank sends the coordinator so the nodes can be
//! compared (firmware, PCIe link, MTU, IPoIB mode, link rate, ceiling, governor, socket
//! buffers) and every probe finding of the node. Pure: it reads an [`Inventory`] and the
//! [`Analysis`] of `linerate_rules::analyze` that the rank computed.

use linerate_facts::{Analysis, Inventory, PciFunction, Port};
use linerate_model::{PcieLink, PcieSpeed, StageKind};

use crate::types::{NodeFacts, PortFacts, RankId};

/// What identifies a rank's node and its data path.
#[derive(Debug, Clone, Copy)]
pub struct FactsInput<'a> {
    pub rank: RankId,
    pub host: &'a str,
    /// `ip:port` of the rank's data server.
    pub data_addr: Option<&'a str>,
    /// The interface that carries `data_addr` (the runtime finds it from the address: probe
    /// does not read IP addresses). A port is matched by its name or by its netdev.
    pub port: Option<&'a str>,
}

/// `8.0 GT/s x8`: the form [`PortFacts::pcie_current`] documents.
fn pcie_text(link: PcieLink) -> String {
    format!("{} x{}", PcieSpeed::Known(link.gen).label(), link.width)
}

/// The port carrying the data, by port name or netdev name.
fn find_port<'a>(inv: &'a Inventory, name: &str) -> Option<&'a Port> {
    inv.ports
        .iter()
        .find(|p| p.name == name)
        .or_else(|| inv.ports.iter().find(|p| p.netdev.as_deref() == Some(name)))
}

/// The facts of one port: `None` fields where probe could not tell.
pub fn port_facts(inv: &Inventory, analysis: &Analysis, port: &Port) -> PortFacts {
    let netdev = inv.port_netdev(port);
    let pci = inv.port_pci(port);
    let ib = inv.ib_port(port);
    let card = pci
        .and_then(PciFunction::card)
        .or_else(|| {
            ib.and_then(|(d, _)| d.hca_type.as_deref())
                .and_then(linerate_model::cards::lookup_hca_type)
        })
        .map(|c| c.model.to_string());
    let ceiling = analysis.port(&port.name).map(|a| &a.ceiling);
    PortFacts {
        name: port.name.clone(),
        driver: netdev
            .and_then(|n| n.driver.clone())
            .or_else(|| pci.and_then(|p| p.driver.clone())),
        firmware: ib.and_then(|(d, _)| d.fw_ver.clone()),
        card,
        pcie_current: pci.and_then(PciFunction::effective_link).map(pcie_text),
        pcie_max: pci.and_then(|p| p.link.max()).map(pcie_text),
        mtu: netdev.and_then(|n| n.mtu),
        ipoib_mode: netdev
            .and_then(|n| n.ipoib.as_ref())
            .and_then(|i| i.mode)
            .map(|m| m.as_str().to_string()),
        link_gbps: ceiling.and_then(|c| {
            c.chain
                .iter()
                .find(|s| s.stage == StageKind::Signalling)
                .map(|s| s.gbps)
        }),
        // The lowest stage: TCP goodput when the MTU is known, else the hardware's ceiling;
        // 0 means the model could not tell (or the port passes nothing), which is no ceiling
        // to judge a measurement against.
        ceiling_gbps: ceiling
            .map(|c| c.tcp_gbps.unwrap_or(c.gbps))
            .filter(|&g| g > 0.0),
    }
}

/// The facts one rank reports: its port's (when `input.port` names one probe found; `None`
/// otherwise), the host's kernel, governors and TCP buffer maxima, and every probe finding
/// (`id`, and the message, with the finding's subject in front when the message does not
/// name it).
pub fn node_facts(input: &FactsInput<'_>, inv: &Inventory, analysis: &Analysis) -> NodeFacts {
    let port = input
        .port
        .and_then(|name| find_port(inv, name))
        .map(|p| port_facts(inv, analysis, p));
    let governors: Vec<&str> = inv.host.governors.keys().map(String::as_str).collect();
    NodeFacts {
        rank: input.rank,
        host: input.host.to_string(),
        data_addr: input.data_addr.map(str::to_string),
        port,
        kernel: inv.host.kernel.clone(),
        governor: (!governors.is_empty()).then(|| governors.join(",")),
        tcp_rmem_max: inv.host.sockets.tcp_rmem.map(|t| t[2]),
        tcp_wmem_max: inv.host.sockets.tcp_wmem.map(|t| t[2]),
        findings: analysis
            .findings
            .iter()
            .map(|f| {
                // Most messages name their subject already; the others get it in front.
                let message = if f.message.contains(&f.subject) {
                    f.message.clone()
                } else {
                    format!("{}: {}", f.subject, f.message)
                };
                (f.id.as_str().to_string(), message)
            })
            .collect(),
        // Read by the runtime over netlink, not by probe.
        shapers: None,
        identity_source: None,
    }
}
