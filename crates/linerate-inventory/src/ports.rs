//! Joining RDMA ports, netdevs and PCI functions into the list of ports.

use linerate_facts::{IbDevice, IbPort, LinkLayer, Netdev, NetdevKind, Port, PortKind};

pub fn assemble(ib: &[IbDevice], netdevs: &[Netdev]) -> Vec<Port> {
    let mut ports: Vec<Port> = ib
        .iter()
        .flat_map(|dev| dev.ports.iter().flat_map(|p| rdma_ports(dev, p, netdevs)))
        .collect();
    // So far every port is an RDMA one: the netdevs they name are claimed.
    let unclaimed: Vec<&Netdev> = netdevs
        .iter()
        .filter(|n| !ports.iter().any(|p| p.netdev.as_ref() == Some(&n.name)))
        .collect();
    ports.extend(unclaimed.into_iter().map(netdev_port));
    ports
}

/// The ports of one RDMA port: one per netdev it carries, or a `device/port` one without.
fn rdma_ports(dev: &IbDevice, p: &IbPort, netdevs: &[Netdev]) -> Vec<Port> {
    // An iWARP port runs over Ethernet, whatever its `link_layer` file says.
    let link_layer = if dev.is_iwarp() {
        LinkLayer::Ethernet
    } else {
        p.link_layer
    };
    let kind = if link_layer == LinkLayer::Ethernet {
        PortKind::Roce
    } else {
        PortKind::Infiniband
    };
    let nd = netdevs_of_port(dev, p, link_layer, netdevs);
    // A soft device (rxe, siw) has no PCI function of its own: its hardware is its netdev's.
    let pci_of = |netdev: Option<&str>| {
        if dev.is_soft() {
            netdev
                .or(dev.soft_parent.as_deref())
                .and_then(|n| netdevs.iter().find(|x| x.name == n))
                .and_then(|x| x.pci.clone())
        } else {
            dev.pci.clone()
        }
    };
    let port = |name: String, netdev: Option<String>| Port {
        name,
        kind,
        device: Some(dev.name.clone()),
        port: Some(p.number),
        pci: pci_of(netdev.as_deref()),
        netdev,
        link_layer,
    };
    if nd.is_empty() {
        return vec![port(format!("{}/{}", dev.name, p.number), None)];
    }
    nd.into_iter()
        .map(|n| port(n.name.clone(), Some(n.name.clone())))
        .collect()
}

/// The netdevs an RDMA port carries: a RoCE port's GID-0 netdev, else the Ethernet or
/// IPoIB netdevs of the same PCI function whose `dev_port` matches the port number.
fn netdevs_of_port<'a>(
    dev: &IbDevice,
    p: &IbPort,
    link_layer: LinkLayer,
    netdevs: &'a [Netdev],
) -> Vec<&'a Netdev> {
    let same_fn = |n: &&Netdev| n.pci.is_some() && n.pci == dev.pci;
    let index_matches = |n: &&Netdev| {
        n.dev_port
            .map_or(dev.ports.len() == 1, |d| d + 1 == p.number)
    };
    if link_layer != LinkLayer::Ethernet {
        return netdevs
            .iter()
            .filter(|n| n.kind == NetdevKind::Ipoib)
            .filter(same_fn)
            .filter(index_matches)
            .collect();
    }
    let by_gid = p
        .roce_netdev
        .as_deref()
        .or(dev.soft_parent.as_deref())
        .and_then(|g| netdevs.iter().find(|n| n.name == g));
    match by_gid {
        Some(n) => vec![n],
        None => netdevs
            .iter()
            .filter(|n| n.kind == NetdevKind::Ethernet)
            .filter(same_fn)
            .filter(index_matches)
            .take(1)
            .collect(),
    }
}

/// A netdev no RDMA port claimed.
fn netdev_port(n: &Netdev) -> Port {
    let kind = match n.kind {
        NetdevKind::Loopback => PortKind::Loopback,
        _ if n.is_virtual => PortKind::Virtual,
        _ if n.paravirtual => PortKind::Paravirtual,
        NetdevKind::Ethernet => PortKind::Ethernet,
        // An IPoIB netdev whose RDMA device is not in sysfs: still an IB port.
        NetdevKind::Ipoib => PortKind::Infiniband,
        NetdevKind::Other => PortKind::Other,
    };
    let link_layer = match n.kind {
        NetdevKind::Ethernet => LinkLayer::Ethernet,
        NetdevKind::Ipoib => LinkLayer::Infiniband,
        _ => LinkLayer::Unknown,
    };
    let device = if matches!(
        kind,
        PortKind::Ethernet | PortKind::Infiniband | PortKind::Paravirtual
    ) {
        n.pci.clone()
    } else {
        None
    };
    Port {
        name: n.name.clone(),
        kind,
        device,
        port: None,
        netdev: Some(n.name.clone()),
        pci: n.pci.clone(),
        link_layer,
    }
}
