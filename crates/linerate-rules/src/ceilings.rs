//! From inventory facts to the model's [`CeilingInput`].

use linerate_facts::{Inventory, IpoibMode, Netdev, NetdevKind, Port, PortKind};
use linerate_model::pcie::ASSUMED_MPS;
use linerate_model::{
    ceiling, Ceiling, CeilingInput, EthSpeed, IbPhysState, IbState, IpFraming, LinkInput, MtuInput,
    Usability, VfInput,
};

/// The ceiling of one port.
pub fn port_ceiling(inv: &Inventory, port: &Port) -> Ceiling {
    ceiling(&ceiling_input(inv, port))
}

/// Everything the model needs about one port.
pub fn ceiling_input(inv: &Inventory, port: &Port) -> CeilingInput {
    let nd = inv.port_netdev(port);
    let ib_dev = inv.ib_port(port);
    let ib = ib_dev.map(|(_, p)| p);
    let pci = inv.port_pci(port);
    // A soft RDMA device over a paravirtual or virtual NIC: the hypervisor's NIC is the port,
    // and no link, encoding or PCIe stage applies.
    let soft_over_virtual = ib_dev.filter(|(d, _)| d.is_soft()).and_then(|(d, _)| {
        nd.filter(|n| n.paravirtual || n.is_virtual)
            .map(|n| (d.name.as_str(), n))
    });
    // A rate is used only when it describes a link that is up: the rate file of a port that
    // is not up holds a driver placeholder, and a netdev without carrier has no speed.
    let link = match port.kind {
        PortKind::Infiniband => ib
            .and_then(linerate_facts::IbPort::link_rate)
            .map(LinkInput::Infiniband),
        // A soft device's rate copies its netdev's speed, or holds a placeholder (1X SDR) when
        // that is unknown: only the netdev speaks for the link.
        PortKind::Roce if ib_dev.is_some_and(|(d, _)| d.is_soft()) => nd
            .and_then(Netdev::link_speed_mbps)
            .map(EthSpeed::from_mbps)
            .map(LinkInput::Ethernet),
        PortKind::Roce => nd
            .and_then(Netdev::link_speed_mbps)
            .or_else(|| {
                // RoCE rate strings borrow IB names; the nominal figure is the Ethernet speed.
                // An iWARP driver's rate is made up, so only the netdev speaks for it.
                ib_dev
                    .filter(|(d, _)| !d.is_iwarp())
                    .and_then(|(_, p)| p.link_rate())
                    .map(|r| (r.nominal_gbps * 1000.0).round() as u32)
            })
            .map(EthSpeed::from_mbps)
            .map(LinkInput::Ethernet),
        PortKind::Ethernet => nd
            .and_then(Netdev::link_speed_mbps)
            .map(EthSpeed::from_mbps)
            .map(LinkInput::Ethernet),
        _ => None,
    };
    let pcie = pci
        .filter(|f| !f.is_virtual_function())
        .and_then(linerate_facts::PciFunction::effective_link);
    let link = link.filter(|_| soft_over_virtual.is_none());
    let mtu = nd.and_then(mtu_input);
    let usability = match soft_over_virtual {
        Some((dev, n)) => Usability::Virtual(format!(
            "software RDMA device {dev} over the {} NIC {}: no hardware of its own; {}",
            if n.paravirtual {
                "paravirtual"
            } else {
                "virtual"
            },
            n.name,
            if n.paravirtual {
                format!(
                    "the hypervisor sets the ceiling of {} ({}); measure it",
                    n.name,
                    n.driver.as_deref().unwrap_or("virtual")
                )
            } else {
                "it runs at the speed of whatever the NIC is attached to".to_string()
            }
        )),
        None => usability(port, nd, ib),
    };
    let paravirtual = matches!(port.kind, PortKind::Paravirtual | PortKind::Virtual)
        || soft_over_virtual.is_some();
    CeilingInput {
        link,
        pcie: if paravirtual { None } else { pcie },
        mps: ASSUMED_MPS,
        mps_known: false,
        mtu,
        usability,
        vf: pci.and_then(|f| vf_input(inv, f)),
    }
}

/// A virtual function's rate limit, as its PF's netdev reports it (`IFLA_VFINFO_LIST`), when
/// this host has the PF and read it.
fn vf_input(inv: &Inventory, f: &linerate_facts::PciFunction) -> Option<VfInput> {
    if !f.is_virtual_function() {
        return None;
    }
    let info = inv.vf_parent(f).and_then(|(pf, index)| {
        inv.netdevs
            .iter()
            .filter(|n| n.pci.as_deref() == Some(pf.address.as_str()))
            .filter_map(|n| inv.phy(&n.name))
            .find_map(|p| p.vf(index))
    });
    Some(VfInput {
        max_tx_rate_mbps: info.and_then(|v| v.max_tx_rate_mbps),
        pf_visible: info.is_some(),
    })
}

fn mtu_input(n: &Netdev) -> Option<MtuInput> {
    let mtu = n.mtu?;
    let transport = match n.kind {
        NetdevKind::Ethernet => IpFraming::Ethernet,
        NetdevKind::Ipoib => match n.ipoib.as_ref().and_then(|i| i.mode) {
            Some(IpoibMode::Connected) => IpFraming::IpoibConnected,
            None if mtu > 4092 => IpFraming::IpoibConnected,
            Some(IpoibMode::Datagram) | None => IpFraming::IpoibDatagram,
        },
        _ => return None,
    };
    Some(MtuInput { mtu, transport })
}

fn usability(port: &Port, nd: Option<&Netdev>, ib: Option<&linerate_facts::IbPort>) -> Usability {
    match port.kind {
        PortKind::Loopback => {
            return Usability::Virtual(
                "loopback: no hardware ceiling; the CPU and memory copy rate limit it".into(),
            )
        }
        PortKind::Virtual | PortKind::Other => {
            return Usability::Virtual(
                "virtual device: no hardware ceiling of its own; it runs at the speed of whatever it is attached to".into(),
            )
        }
        PortKind::Paravirtual => {
            return Usability::Virtual(format!(
                "paravirtual NIC ({}): the hypervisor sets its ceiling; measure it",
                nd.and_then(|n| n.driver.as_deref()).unwrap_or("virtual")
            ))
        }
        PortKind::Infiniband | PortKind::Roce | PortKind::Ethernet => {}
    }
    if let Some(p) = ib {
        let phys = p.phys_state;
        match (p.state, phys) {
            (Some(IbState::Active | IbState::ActiveDefer), _)
            | (None, None | Some(IbPhysState::LinkUp)) => {}
            // The logical state could not be read, but the physical one says there is no link.
            (None, Some(ph)) => {
                return Usability::PortDown(format!(
                    "port state unknown, physical state {}: no link",
                    ph.name()
                ));
            }
            (Some(s @ (IbState::Init | IbState::Armed)), Some(IbPhysState::LinkUp)) => {
                if port.kind == PortKind::Infiniband {
                    return Usability::NoSubnetManager(format!(
                        "physical link up but port {}: no subnet manager has activated it",
                        s.name()
                    ));
                }
            }
            (Some(s), ph) => {
                let why = match ph {
                    Some(IbPhysState::Polling) => "physical state Polling: no cable, or nothing alive at the other end".to_string(),
                    Some(IbPhysState::Disabled) => "physical state Disabled: the port is disabled (by the subnet manager, ibportstate, or for a RoCE port its netdev is down)".to_string(),
                    Some(other) => format!("physical state {}", other.name()),
                    None => "physical state unknown".to_string(),
                };
                return Usability::PortDown(format!("port {}: {why}", s.name()));
            }
        }
        return Usability::Usable;
    }
    if let Some(n) = nd {
        if n.admin_up == Some(false)
            || n.operstate.as_deref() == Some("down") && n.carrier != Some(true)
        {
            let why = if n.admin_up == Some(false) {
                "interface administratively down"
            } else {
                "no carrier: cable unplugged, or the peer is down"
            };
            return Usability::PortDown(format!("{}: {why}", n.name));
        }
        if n.carrier == Some(false) {
            return Usability::PortDown(format!(
                "{}: no carrier: cable unplugged, or the peer is down",
                n.name
            ));
        }
    }
    Usability::Usable
}
