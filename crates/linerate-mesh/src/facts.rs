//! A node's facts from what its host says about itself (`linerate_facts::HostFacts`, the same
//! document serve sends in `accepted`): what each rank sends the coordinator so the nodes can be
//! compared (firmware, PCIe link, MTU, IPoIB mode, link rate, ceiling, governor, socket buffers)
//! and every probe finding of the node. Pure: it reads the probe document and the data port in
//! it.

use linerate_facts::{HostFacts, PciFunction, PortDoc};
use linerate_model::{PcieLink, PcieSpeed, StageKind};

use crate::types::{NodeFacts, PortFacts, RankId};

/// What identifies a rank's node and its data path.
#[derive(Debug, Clone, Copy)]
pub struct FactsInput<'a> {
    pub rank: RankId,
    pub host: &'a str,
    /// `ip:port` of the rank's data server.
    pub data_addr: Option<&'a str>,
}

/// `8.0 GT/s x8`: the form [`PortFacts::pcie_current`] documents.
fn pcie_text(link: PcieLink) -> String {
    format!("{} x{}", PcieSpeed::Known(link.gen).label(), link.width)
}

/// The facts of one port: `None` fields where probe could not tell.
pub fn port_facts(port: &PortDoc) -> PortFacts {
    let netdev = port.net.as_ref();
    let pci = port.pci.as_ref().map(|p| &p.function);
    let ib = port.ib.as_ref();
    let card = pci
        .and_then(PciFunction::card)
        .or_else(|| {
            ib.and_then(|d| d.hca_type.as_deref())
                .and_then(linerate_model::cards::lookup_hca_type)
        })
        .map(|c| c.model.to_string());
    let ceiling = &port.ceiling;
    PortFacts {
        name: port.name.clone(),
        driver: netdev
            .and_then(|n| n.driver.clone())
            .or_else(|| pci.and_then(|p| p.driver.clone())),
        firmware: ib.and_then(|d| d.fw_ver.clone()),
        card,
        pcie_current: pci.and_then(PciFunction::effective_link).map(pcie_text),
        pcie_max: pci.and_then(|p| p.link.max()).map(pcie_text),
        mtu: netdev.and_then(|n| n.mtu),
        ipoib_mode: netdev
            .and_then(|n| n.ipoib.as_ref())
            .and_then(|i| i.mode)
            .map(|m| m.as_str().to_string()),
        link_gbps: ceiling
            .chain
            .iter()
            .find(|s| s.stage == StageKind::Signalling)
            .map(|s| s.gbps),
        // The lowest stage: TCP goodput when the MTU is known, else the hardware's ceiling;
        // 0 means the model could not tell (or the port passes nothing), which is no ceiling
        // to judge a measurement against.
        ceiling_gbps: Some(ceiling.tcp_gbps.unwrap_or(ceiling.gbps)).filter(|&g| g > 0.0),
    }
}

/// The facts one rank reports: its data port's (the host facts' port, else the probe's port of
/// that name; `None` when probe did not find it), the host's kernel, governors and TCP buffer
/// maxima, and every probe finding (`id`, and the message, with the finding's subject in front
/// when the message does not name it). Only the host name and address when probe could not run.
pub fn node_facts(input: &FactsInput<'_>, h: &HostFacts) -> NodeFacts {
    let probe = h.probe.as_ref();
    let port = h
        .port
        .as_ref()
        .or_else(|| probe.zip(h.name.as_deref()).and_then(|(p, n)| p.port(n)))
        .map(port_facts);
    let host = probe.map(|p| &p.host);
    let governors: Vec<&str> = host
        .map(|h| h.governors.keys().map(String::as_str).collect())
        .unwrap_or_default();
    NodeFacts {
        rank: input.rank,
        host: input.host.to_string(),
        data_addr: input.data_addr.map(str::to_string),
        port,
        kernel: host.and_then(|h| h.kernel.clone()),
        governor: (!governors.is_empty()).then(|| governors.join(",")),
        tcp_rmem_max: host.and_then(|h| h.sockets.tcp_rmem).map(|t| t[2]),
        tcp_wmem_max: host.and_then(|h| h.sockets.tcp_wmem).map(|t| t[2]),
        findings: probe
            .into_iter()
            .flat_map(|p| &p.findings)
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
