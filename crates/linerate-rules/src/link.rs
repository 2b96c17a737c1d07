//! Port rules: IB port state, subnet manager, rate, VPI mode, IPoIB mode, MTU, error counters,
//! transmit discards.

use linerate_facts::{
    CounterDef, CounterSource, Finding, FindingId, IbDevice, IbPort, Inventory, IpoibMode,
    LinkLayer, Netdev, NetdevKind, Port, PortAnalysis, PortKind, Severity,
};
use linerate_model::{IbPhysState, IbState, LimitedBy};
use linerate_units::fmt_num;

fn ibp(dev: &IbDevice, p: &IbPort, file: &str) -> String {
    format!(
        "/sys/class/infiniband/{}/ports/{}/{file}",
        dev.name, p.number
    )
}

fn netp(n: &Netdev, file: &str) -> String {
    format!("/sys/class/net/{}/{file}", n.name)
}

fn state_str(p: &IbPort) -> String {
    p.state.map_or("?".into(), |s| s.name().to_string())
}

/// Evidence quotes the files as read (`2: INIT`, `5: LinkUp`, `40 Gb/sec (4X QDR)`).
fn verbatim(v: Option<&String>) -> &str {
    v.map_or("?", String::as_str)
}

pub fn rules(inv: &Inventory, analysis: &[PortAnalysis], out: &mut Vec<Finding>) {
    let ib_ports_total = inv
        .ports
        .iter()
        .filter(|p| p.kind == PortKind::Infiniband && p.port.is_some())
        .count();
    for (port, pa) in inv.ports.iter().zip(analysis) {
        let nd = inv.port_netdev(port);
        if let Some((dev, p)) = inv.ib_port(port) {
            ib_state(inv, port, dev, p, nd, ib_ports_total, out);
            ib_rate(inv, port, dev, p, out);
            vpi(inv, port, dev, p, out);
            counters(port, dev, p, out);
            xmit_discards(port, dev, p, out);
        }
        if let Some(n) = nd {
            // Configuration of a port without a link is moot until it has one.
            if pa.ceiling.limited_by != linerate_model::LimitedBy::PortDown {
                ipoib(inv, port, n, out);
                mtu(port, n, pa, out);
            }
            eth_down(port, n, out);
            netdev_errors(port, n, out);
        }
    }
}

fn ib_state(
    inv: &Inventory,
    port: &Port,
    dev: &IbDevice,
    p: &IbPort,
    nd: Option<&Netdev>,
    ib_ports_total: usize,
    out: &mut Vec<Finding>,
) {
    if port.link_layer == LinkLayer::Ethernet {
        return; // RoCE: the netdev rule speaks for it.
    }
    let ev = |f: Finding| {
        f.evidence(ibp(dev, p, "state"), verbatim(p.verbatim.state.as_ref()))
            .evidence(
                ibp(dev, p, "phys_state"),
                verbatim(p.verbatim.phys_state.as_ref()),
            )
    };
    match (p.state, p.phys_state) {
        (Some(IbState::Init | IbState::Armed), Some(IbPhysState::LinkUp)) => {
            let mut f = ev(Finding::new(
                FindingId::IbNoSubnetManager,
                Severity::Error,
                &port.name,
            ));
            if let Some(s) = p.sm_lid {
                f = f.evidence(ibp(dev, p, "sm_lid"), format!("{s:#x}"));
            }
            if let Some(l) = p.lid {
                f = f.evidence(ibp(dev, p, "lid"), format!("{l:#x}"));
            }
            let sm_known = p.sm_lid.is_some_and(|s| s != 0 && s != 0xffff);
            out.push(
                f.message(if sm_known {
                    format!(
                        "{}: the cable is up (LinkUp) but the port is stuck in {}: a subnet manager is known but has not brought the port to ACTIVE, so no traffic can pass",
                        port.name,
                        state_str(p)
                    )
                } else {
                    format!(
                        "{}: the cable is up (LinkUp) but the port is stuck in {} with no subnet manager (SM LID 0): no InfiniBand traffic, IPoIB included, can pass until one runs",
                        port.name,
                        state_str(p)
                    )
                })
                .fix("Run a subnet manager on exactly one node of the fabric (`apt install opensm && systemctl enable --now opensm`), or enable the managed switch's embedded SM. Then check `sminfo` and that the port reaches ACTIVE."),
            );
        }
        // A port whose logical state is unknown is down too when its physical state says so.
        (Some(IbState::Down), phys)
        | (None, phys @ Some(IbPhysState::Polling | IbPhysState::Disabled)) => {
            let sibling_active = dev.ports.iter().any(|o| {
                o.number != p.number
                    && matches!(o.state, Some(IbState::Active | IbState::ActiveDefer))
            });
            let admin_up = nd.and_then(|n| n.admin_up) == Some(true);
            let sev = if admin_up || ib_ports_total == 1 {
                Severity::Error
            } else if sibling_active {
                Severity::Info
            } else {
                Severity::Warning
            };
            let (what, fix) = match phys {
                Some(IbPhysState::Disabled) => (
                    "is Disabled: the port was switched off (by the subnet manager, `ibportstate`, or the switch)",
                    "Enable it: `ibportstate -C DEV -P PORT LID PORT enable` from a node that sees the switch, or check the SM's and the switch's port configuration.",
                ),
                Some(IbPhysState::Polling) => (
                    "is Polling: it sees no partner, so there is no cable, a dead cable, or the other end is down or of another link type",
                    "Check the cable is seated at both ends and the other end is up; try another cable; a VPI port at the other end must be in InfiniBand mode too.",
                ),
                _ => (
                    "is down",
                    "Check cabling and the other end of the link.",
                ),
            };
            let who = if sev == Severity::Info {
                " (an unused port: its sibling is active)"
            } else if admin_up {
                " although its IPoIB interface is configured up"
            } else {
                ""
            };
            out.push(
                ev(Finding::new(FindingId::IbPortDown, sev, &port.name))
                    .message(format!("{}{who}: the link {what}", port.name))
                    .fix(fix),
            );
        }
        _ => {}
    }
    let _ = inv;
}

fn ib_rate(inv: &Inventory, port: &Port, dev: &IbDevice, p: &IbPort, out: &mut Vec<Finding>) {
    if port.link_layer != LinkLayer::Infiniband
        || !matches!(
            p.state,
            Some(IbState::Active | IbState::ActiveDefer | IbState::Init | IbState::Armed)
        )
    {
        return;
    }
    let Some(rate) = p.link_rate() else { return };
    let card = dev
        .pci
        .as_deref()
        .and_then(|a| inv.pci(a))
        .and_then(linerate_facts::PciFunction::card);
    let ev = |f: Finding| f.evidence(ibp(dev, p, "rate"), verbatim(p.verbatim.rate.as_ref()));
    if let Some(max) = card.and_then(|c| c.max_ib) {
        if rate.speed < max {
            let c = card.map_or("the card", |c| c.model);
            let extra = if rate.speed == linerate_model::IbSpeed::Fdr10 {
                " FDR10 (Mellanox's 10.3125 Gb/s lanes) usually means an FDR10-only switch or cable."
            } else {
                ""
            };
            out.push(
                ev(Finding::new(FindingId::IbRateBelowCapability, Severity::Warning, &port.name))
                    .evidence("card.max_ib", max.name())
                    .message(format!(
                        "{}: linked at {} but {c} can do {}: the cable, the switch port or the other HCA only does {}.{extra} Data rate {} Gb/s instead of {} Gb/s",
                        port.name,
                        rate.speed.name(),
                        max.name(),
                        rate.speed.name(),
                        fmt_num(rate.data_gbps()),
                        fmt_num(linerate_model::IbRate::new(max, rate.width).data_gbps()),
                    ))
                    .fix(format!(
                        "Use a cable rated for {} (check its part number: QDR cables are marked 40G), and a switch and peer that support it; `iblinkinfo` shows what each end supports.",
                        max.name()
                    )),
            );
        }
    }
    if rate.width < 4 {
        out.push(
            ev(Finding::new(FindingId::IbRateBelowCapability, Severity::Warning, &port.name))
                .message(format!(
                    "{}: the link runs {} lane(s) wide instead of 4: a lane failed to train (bad cable or connector), or a 1X/2X cable or splitter is used",
                    port.name, rate.width
                ))
                .fix("Reseat or replace the cable; check the switch port for errors (`ibqueryerrors`)."),
        );
    }
}

fn vpi(inv: &Inventory, port: &Port, dev: &IbDevice, p: &IbPort, out: &mut Vec<Finding>) {
    if p.link_layer != LinkLayer::Ethernet {
        return;
    }
    let Some(f) = dev.pci.as_deref().and_then(|a| inv.pci(a)) else {
        return;
    };
    let Some(card) = f.card().filter(|c| c.vpi) else {
        return;
    };
    let mut x = Finding::new(FindingId::VpiEthernetMode, Severity::Info, &port.name)
        .evidence(ibp(dev, p, "link_layer"), "Ethernet");
    let mlx4 = f.mlx4_port_types.get_key_value(&p.number);
    if let Some((n, t)) = mlx4 {
        x = x.evidence(
            format!("/sys/bus/pci/devices/{}/mlx4_port{n}", f.address),
            t,
        );
    }
    let fix = if mlx4.is_some() {
        format!(
            "If you meant InfiniBand: `echo ib > /sys/bus/pci/devices/{}/mlx4_port{}` (persist with the mlx4_core `port_type_array` option or `connectx_port_config`).",
            f.address, p.number
        )
    } else {
        format!(
            "If you meant InfiniBand: `mlxconfig -d {} set LINK_TYPE_P{}=1` (1 = IB, 2 = Ethernet), then reboot or reset the card.",
            f.address, p.number
        )
    };
    out.push(
        x.message(format!(
            "{}: a VPI port of a {} (InfiniBand-capable, up to {}) running as Ethernet",
            port.name,
            card.model,
            card.max_ib.map_or("?", linerate_model::IbSpeed::name)
        ))
        .fix(fix),
    );
}

/// A PMA error counter whose count accuses the link itself (the counter table's roles that
/// do: symbol errors, recoveries, link downs, receive errors, integrity, overruns), as soak
/// judges its rise.
fn accuses_link(name: &str) -> bool {
    CounterDef::of(CounterSource::IbCounters, name)
        .judges
        .soak
        .is_some_and(linerate_facts::CounterRole::accuses_link)
}

fn counters(port: &Port, dev: &IbDevice, p: &IbPort, out: &mut Vec<Finding>) {
    let bad: Vec<_> = p
        .counters
        .iter()
        .filter(|c| c.value > 0 && accuses_link(&c.name))
        .collect();
    if bad.is_empty() {
        return;
    }
    let mut f = Finding::new(FindingId::LinkErrors, Severity::Warning, &port.name);
    for c in &bad {
        f = f.evidence(
            ibp(dev, p, &format!("counters/{}", c.name)),
            if c.pegged {
                format!("{} (saturated)", c.value)
            } else {
                c.value.to_string()
            },
        );
    }
    let names: Vec<String> = bad
        .iter()
        .map(|c| format!("{} = {}", c.name, c.value))
        .collect();
    let pegged = bad.iter().any(|c| c.pegged);
    out.push(
        f.message(format!(
            "{}: physical-layer error counters are non-zero ({}){}. They count since the last reset; rising values during traffic mean a bad cable, connector or port",
            port.name,
            names.join(", "),
            if pegged { "; some are saturated at their maximum, so the true count is higher" } else { "" }
        ))
        .fix("Clear them (`perfquery -x -R`), run traffic, and read them again (`linerate doctor` does this); if they rise, reseat or replace the cable, then try another switch port."),
    );
}

/// `ib.xmit_discards`: packets the port dropped at transmit because the fabric did not take
/// them in time (sysfs-kb §1.4, after infiniband-diags' IBswcountlimits: `port_xmit_discards`
/// means congestion; row 10: with `port_xmit_wait`, congestion rather than a bad cable).
/// Counted since the last reset, like the error counters.
fn xmit_discards(port: &Port, dev: &IbDevice, p: &IbPort, out: &mut Vec<Finding>) {
    let Some(discards) = p
        .counters
        .iter()
        .find(|c| c.name == "port_xmit_discards" && c.value > 0)
    else {
        return;
    };
    if port.link_layer != LinkLayer::Infiniband {
        return;
    }
    let shown = |c: &linerate_facts::Counter| {
        if c.pegged {
            format!("{} (saturated)", c.value)
        } else {
            c.value.to_string()
        }
    };
    let mut f = Finding::new(FindingId::IbXmitDiscards, Severity::Warning, &port.name)
        .evidence(ibp(dev, p, "counters/port_xmit_discards"), shown(discards));
    let wait = p
        .counters
        .iter()
        .find(|c| c.name == "port_xmit_wait" && c.value > 0);
    if let Some(w) = wait {
        f = f.evidence(ibp(dev, p, "counters/port_xmit_wait"), shown(w));
    }
    let physical_clean = !p
        .counters
        .iter()
        .any(|c| c.value > 0 && accuses_link(&c.name));
    let count = if discards.pegged {
        format!("at least {}", discards.value)
    } else {
        discards.value.to_string()
    };
    out.push(
        f.message(format!(
            "{}: {count} packets were discarded at transmit since the counters were last cleared{}: the fabric did not take them in time (a congested or slow port downstream, a peer that stopped receiving, or the link going down with packets queued){}",
            port.name,
            if wait.is_some() { ", and the port waited for credits to send (port_xmit_wait)" } else { "" },
            if physical_clean { ". The physical error counters are clean: congestion, not the cable" } else { "" },
        ))
        .fix("Clear the counters (`perfquery -x -R`), run traffic, and read them again (`linerate soak` does, and tells congestion from errors); if discards rise, find the congested port on the route (`ibqueryerrors`, the switch's counters), spread the load (adaptive routing, fewer flows per uplink), and check that the receiving hosts keep up."),
    );
}

fn ipoib(inv: &Inventory, port: &Port, n: &Netdev, out: &mut Vec<Finding>) {
    let Some(i) = &n.ipoib else { return };
    if i.mode != Some(IpoibMode::Datagram) {
        return;
    }
    let enhanced = i.connected_capable == Some(false);
    let family = port
        .device
        .as_deref()
        .and_then(|d| inv.ib_device(d))
        .map(|d| d.family().to_string());
    let mut f = Finding::new(
        FindingId::IpoibDatagramMode,
        if enhanced {
            Severity::Info
        } else {
            Severity::Warning
        },
        &port.name,
    )
    .evidence(netp(n, "mode"), "datagram");
    if let Some(m) = n.mtu {
        f = f.evidence(netp(n, "mtu"), m);
    }
    if let Some(a) = &n.address {
        f = f.evidence(netp(n, "address"), a);
    }
    if enhanced {
        out.push(
            f.message(format!(
                "{}: datagram mode, the only mode of enhanced IPoIB ({}): it keeps stateless offloads, so this is expected",
                port.name,
                family.as_deref().unwrap_or("mlx5")
            ))
            .fix("Nothing to do. To use connected mode instead, disable enhanced IPoIB (MLNX_OFED: `ipoib_enhanced=0` module option); usually not worth it."),
        );
    } else {
        out.push(
            f.message(format!(
                "{}: IPoIB in datagram mode: every IP packet is one {}-byte InfiniBand datagram, so TCP runs on small packets and one CPU core per stream becomes the limit",
                port.name,
                n.mtu.unwrap_or(2044)
            ))
            .fix(format!(
                "Switch to connected mode with a 64 KiB MTU: `echo connected > /sys/class/net/{0}/mode && ip link set {0} mtu 65520` (persist: NetworkManager `infiniband.transport-mode connected`, or `CONNECTED_MODE=yes` / `MTU=65520` in ifcfg-{0}).",
                n.name
            )),
        );
    }
}

fn mtu(port: &Port, n: &Netdev, pa: &PortAnalysis, out: &mut Vec<Finding>) {
    let Some(m) = n.mtu else { return };
    let c = &pa.ceiling;
    match n.kind {
        NetdevKind::Ipoib => {
            let mode = n.ipoib.as_ref().and_then(|i| i.mode);
            let (small, why, fix) = match mode {
                Some(IpoibMode::Connected) if m < 65520 => (
                    true,
                    format!("connected mode with MTU {m}: connected mode allows 65520, and larger packets cost less CPU per byte"),
                    format!("`ip link set {} mtu 65520` (persist it in the interface configuration).", n.name),
                ),
                Some(IpoibMode::Datagram) if m < 4092 && n.ipoib.as_ref().and_then(|i| i.connected_capable) != Some(false) || m < 2044 => (
                    true,
                    format!("datagram mode with MTU {m}: the broadcast group's IB MTU is 2 KiB or less; a 4 KiB IB MTU gives MTU 4092"),
                    "Set the IPoIB broadcast group MTU to 4096 in the subnet manager (opensm partitions.conf: `Default=0x7fff, ipoib, mtu=5 : ALL=full;`), or use connected mode with MTU 65520.".to_string(),
                ),
                _ => (false, String::new(), String::new()),
            };
            if small {
                out.push(
                    Finding::new(FindingId::MtuSmall, Severity::Warning, &port.name)
                        .evidence(netp(n, "mtu"), m)
                        .evidence(
                            netp(n, "mode"),
                            mode.map_or("?", |x| {
                                if x == IpoibMode::Connected {
                                    "connected"
                                } else {
                                    "datagram"
                                }
                            }),
                        )
                        .message(format!("{}: {why}", port.name))
                        .fix(fix),
                );
            }
        }
        NetdevKind::Ethernet => {
            // Only a link has headers that cap it: a paravirtual NIC's speed is a setting of the
            // hypervisor, and a port with no ceiling gives no figure to quote.
            let Some(tcp) = c.tcp_gbps.filter(|_| c.limited_by != LimitedBy::Unknown) else {
                return;
            };
            let speed = n.speed_mbps.unwrap_or(0);
            if speed >= 25_000 && m < 9000 {
                let jumbo = linerate_model::MtuInput {
                    mtu: 9000,
                    transport: linerate_model::IpFraming::Ethernet,
                }
                .efficiency()
                .unwrap_or(1.0);
                let link = f64::from(speed) / 1000.0;
                out.push(
                    Finding::new(FindingId::MtuSmall, Severity::Warning, &port.name)
                        .evidence(netp(n, "mtu"), m)
                        .evidence(netp(n, "speed"), speed)
                        .message(format!(
                            "{}: MTU {m} on a {} Gb/s link: headers cap TCP near {} Gb/s, and small packets mean many more per second for the CPU (jumbo frames: {} Gb/s)",
                            port.name,
                            fmt_num(link),
                            fmt_num(tcp),
                            fmt_num(link * jumbo)
                        ))
                        .fix(format!(
                            "Use jumbo frames end to end: `ip link set {} mtu 9000` on both hosts and every switch port on the path (persist in the interface configuration).",
                            n.name
                        )),
                );
            }
        }
        _ => {}
    }
}

fn eth_down(port: &Port, n: &Netdev, out: &mut Vec<Finding>) {
    if !matches!(port.kind, PortKind::Ethernet | PortKind::Roce) {
        return;
    }
    let no_carrier = n.carrier == Some(false)
        || (n.operstate.as_deref() == Some("down") && n.carrier != Some(true));
    if !no_carrier || n.admin_up != Some(true) {
        return;
    }
    out.push(
        Finding::new(FindingId::LinkDown, Severity::Warning, &port.name)
            .evidence(netp(n, "operstate"), n.operstate.as_deref().unwrap_or("?"))
            .evidence(netp(n, "carrier"), n.carrier.map_or("?", |c| if c { "1" } else { "0" }))
            .message(format!(
                "{}: configured up but has no carrier: no cable, a dead transceiver, or the other end is down",
                port.name
            ))
            .fix("Check the cable and transceiver at both ends (`ethtool IFACE`, `ethtool -m IFACE` for the module), and that the switch port is enabled at a matching speed."),
    );
}

fn netdev_errors(port: &Port, n: &Netdev, out: &mut Vec<Finding>) {
    let phys = ["rx_crc_errors", "rx_errors", "tx_carrier_errors"];
    let bad: Vec<_> = n
        .errors
        .iter()
        .filter(|(k, _)| phys.contains(&k.as_str()))
        .collect();
    if bad.is_empty() || !matches!(port.kind, PortKind::Ethernet | PortKind::Roce) {
        return;
    }
    let mut f = Finding::new(FindingId::LinkErrors, Severity::Warning, &port.name);
    for (k, v) in &bad {
        f = f.evidence(netp(n, &format!("statistics/{k}")), v);
    }
    let names: Vec<String> = bad.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    out.push(
        f.message(format!(
            "{}: receive errors since the interface came up ({}); CRC errors that rise under load mean a bad cable, transceiver or port",
            port.name,
            names.join(", ")
        ))
        .fix("Run traffic and read the counters again (`linerate doctor` does); if they rise, replace the cable or transceiver."),
    );
}
