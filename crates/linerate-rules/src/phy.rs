//! Below the port: the transceiver's light, laser and temperature against its own thresholds,
//! a module slower than its port or silent, FEC a link's standard needs, the NIC's own sensors,
//! drops at a full receive ring, too few queues for a fast port, and SR-IOV virtual functions.
//! Pure: every figure comes from the inventory (`Inventory::phy`, `PciFunction::hwmon`).

use linerate_facts::{
    dbm, Diagnostics, FecMode, Finding, FindingId, Inventory, Level, Media, Module, Netdev,
    PciFunction, PhyQuery, Port, PortAnalysis, PortKind, PortPhy, Severity, Thresholds, UnreadWhy,
    VfLinkState,
};
use linerate_model::EthSpeed;
use linerate_units::fmt_num;

/// A module's nominal lane rate may sit this far below the port's lane signalling before it is
/// "rated below the port" (10G SFP+ say 10 300 MBd for 10.3125 GBd lanes; 25G ones 25 500 for
/// 25.78125).
pub const MODULE_RATE_MARGIN: f64 = 0.95;
/// Ports at or above this rate want a receive queue per core of their NUMA node.
pub const CHANNELS_FROM_MBPS: u32 = 100_000;
/// A ring grown for drops goes to at least this many descriptors (the device's maximum when
/// smaller).
pub const RING_TARGET_MIN: u32 = 4096;

pub fn rules(inv: &Inventory, analysis: &[PortAnalysis], out: &mut Vec<Finding>) {
    let mut privilege = Vec::new();
    for (port, _) in inv.ports.iter().zip(analysis) {
        let Some(nd) = inv.port_netdev(port) else {
            continue;
        };
        guest_vf(inv, port, out);
        let Some(p) = inv.phy(&nd.name) else {
            continue;
        };
        if let Some(m) = &p.module {
            module(port, nd, m, out);
        }
        module_unread(port, nd, p, out, &mut privilege);
        fec(port, nd, p, out);
        ring_drops(port, nd, p, out);
        channels(inv, port, nd, p, out);
        vfs(port, p, out);
    }
    for f in &inv.pci {
        nic_temperature(f, out);
    }
    if !privilege.is_empty() {
        out.push(
            Finding::new(FindingId::ModuleNeedsPrivilege, Severity::Info, "host")
                .evidence("ethtool MODULE_EEPROM_GET", format!("refused on {}", privilege.join(", ")))
                .message(format!(
                    "the transceiver modules of {} were not read: the kernel lets only a process with CAP_NET_ADMIN read a module's memory (ethtool's MODULE_EEPROM_GET is admin-only), so their light levels, lasers and temperatures are unknown",
                    privilege.join(", ")
                ))
                .fix("Run `sudo linerate probe` (or give linerate the capability: `sudo setcap cap_net_admin+ep \"$(command -v linerate)\"`), or read one module with `sudo ethtool -m IFACE`."),
        );
    }
}

fn cmd(nd: &Netdev, q: PhyQuery) -> String {
    q.ethtool_command(&nd.name)
}

fn power(mw: f64) -> String {
    match dbm(mw) {
        Some(d) => format!("{mw:.4} mW ({d:.2} dBm)"),
        None => format!("{mw:.4} mW (-inf dBm: no light)"),
    }
}

fn threshold_words(t: &Thresholds, level: Level, f: &dyn Fn(f64) -> String) -> String {
    let v = match level {
        Level::HighAlarm => t.high_alarm,
        Level::LowAlarm => t.low_alarm,
        Level::HighWarning => t.high_warning,
        Level::LowWarning | Level::Normal => t.low_warning,
    };
    format!("{} {}", level.as_str(), f(v))
}

/// Light: Rx power against the module's own thresholds (an optic's; a copper cable has none).
fn rx_light(port: &Port, nd: &Netdev, m: &Module, d: &Diagnostics, out: &mut Vec<Finding>) {
    let Some(t) = d.rx_power_thresholds_mw.filter(Thresholds::is_ordered) else {
        return;
    };
    let key = |what: &str| format!("{}: {what}", cmd(nd, PhyQuery::Module));
    let name = m.name();

    let low: Vec<(u8, f64, Level)> = d
        .lanes
        .iter()
        .filter_map(|l| {
            let rx = l.rx_power_mw?;
            let lv = t.level(rx);
            matches!(lv, Level::LowWarning | Level::LowAlarm).then_some((l.lane, rx, lv))
        })
        .collect();
    if let Some(worst) = low.iter().map(|x| x.2).max() {
        let mut f = Finding::new(
            FindingId::ModuleRxPowerLow,
            if worst.is_alarm() {
                Severity::Error
            } else {
                Severity::Warning
            },
            &port.name,
        )
        .evidence(key("module"), &name)
        .evidence(
            key("Rx power low alarm / low warning"),
            format!("{} / {}", power(t.low_alarm), power(t.low_warning)),
        );
        for (lane, rx, _) in &low {
            f = f.evidence(key(&format!("Rx power lane {lane}")), power(*rx));
        }
        let lanes: Vec<String> = low
            .iter()
            .map(|(l, rx, lv)| {
                format!(
                    "lane {l} {} ({})",
                    power(*rx),
                    threshold_words(&t, *lv, &|v| power(v))
                )
            })
            .collect();
        let state = match m.module_state.as_deref() {
            Some(s @ ("ModuleLowPwr" | "ModuleFault" | "ModulePwrDn")) => {
                format!("; the module itself is in {s}, with its lasers off")
            }
            _ => String::new(),
        };
        out.push(
            f.message(format!(
                "{}: {name} receives too little light: {}{state}. The light comes from the far end: its transmitter is off, weak or wrong for this optic, or the fibre between is broken, dirty, bent or too long (doctor compares both ends' Tx and Rx to say which side)",
                port.name,
                lanes.join(", ")
            ))
            .fix("Clean both fibre ends and the far optic's connector (a one-click cleaner), check the patch cords and every patch panel between, read the far end's Tx power (`ethtool -m` there), and measure with an optical power meter; replace the fibre or the far optic."),
        );
    }
}

/// This optic's laser: bias and Tx power out of its range.
fn tx_range(port: &Port, nd: &Netdev, m: &Module, d: &Diagnostics, out: &mut Vec<Finding>) {
    let key = |what: &str| format!("{}: {what}", cmd(nd, PhyQuery::Module));
    let name = m.name();
    let mut bad = Vec::new();
    let mut worst = Level::Normal;
    for l in &d.lanes {
        if let (Some(b), Some(t)) = (
            l.tx_bias_ma,
            d.tx_bias_thresholds_ma.filter(Thresholds::is_ordered),
        ) {
            let lv = t.level(b);
            if lv != Level::Normal {
                worst = worst.max(lv);
                bad.push((
                    format!("Tx bias lane {}", l.lane),
                    format!("{b:.3} mA"),
                    threshold_words(&t, lv, &|v| format!("{v:.3} mA")),
                ));
            }
        }
        if let (Some(p), Some(t)) = (
            l.tx_power_mw,
            d.tx_power_thresholds_mw.filter(Thresholds::is_ordered),
        ) {
            let lv = t.level(p);
            if lv != Level::Normal {
                worst = worst.max(lv);
                bad.push((
                    format!("Tx power lane {}", l.lane),
                    power(p),
                    threshold_words(&t, lv, &|v| power(v)),
                ));
            }
        }
    }
    if !bad.is_empty() {
        let mut f = Finding::new(
            FindingId::ModuleTxOutOfRange,
            if worst.is_alarm() {
                Severity::Error
            } else {
                Severity::Warning
            },
            &port.name,
        )
        .evidence(key("module"), &name);
        for (k, v, _) in &bad {
            f = f.evidence(key(k), v);
        }
        let words: Vec<String> = bad
            .iter()
            .map(|(k, v, t)| format!("{k} {v}, {t}"))
            .collect();
        out.push(
            f.message(format!(
                "{}: this optic's transmitter is outside the range its maker set: {}. A laser whose bias climbs to hold its power is wearing out; low Tx power is a failing laser; the far end sees it as low Rx power",
                port.name,
                words.join("; ")
            ))
            .fix("Replace this module (check its temperature and supply voltage first: a hot module drives its laser harder); keep the old one's `ethtool -m` output for the vendor's RMA."),
        );
    }
}

fn module(port: &Port, nd: &Netdev, m: &Module, out: &mut Vec<Finding>) {
    let Some(d) = &m.diagnostics else { return };
    if m.media.is_optical() {
        rx_light(port, nd, m, d, out);
        tx_range(port, nd, m, d, out);
    }
    let key = |what: &str| format!("{}: {what}", cmd(nd, PhyQuery::Module));
    let name = m.name();
    // Temperature, for every module that reports it (AOCs and active copper heat too).
    if let (Some(c), Some(t)) = (
        d.temperature_c,
        d.temperature_thresholds_c.filter(Thresholds::is_ordered),
    ) {
        let lv = t.level(c);
        if matches!(lv, Level::HighWarning | Level::HighAlarm) {
            out.push(
                Finding::new(
                    FindingId::ModuleTemperatureHigh,
                    if lv.is_alarm() { Severity::Error } else { Severity::Warning },
                    &port.name,
                )
                .evidence(key("module"), &name)
                .evidence(key("module temperature"), format!("{c:.2} °C"))
                .evidence(key("temperature high warning / high alarm"), format!("{:.2} °C / {:.2} °C", t.high_warning, t.high_alarm))
                .message(format!(
                    "{}: {name} runs at {c:.2} °C, {} °C: too little air crosses the cage (a desktop case, blocked vents, a fan curve set for quiet, a hot neighbour card), or the module draws more power than the port cools. Past its alarm a module may turn its laser off",
                    port.name,
                    threshold_words(&t, lv, &|v| format!("{v:.2}")),
                ))
                .fix("Improve the airflow over the NIC and its cages (server fans at their data-centre profile, a slot in the fan's path, or a fan blowing across a card in a desktop case); check that the port's power class fits the module's (`ethtool -m`: max power)."),
            );
        }
    }
    rate_below_port(port, nd, m, out);
}

/// The module is rated slower than the link runs: SFF nominal lane rate below the port's lane
/// signalling (5 % margin), or a CMIS module whose applications stop below the port's speed.
fn rate_below_port(port: &Port, nd: &Netdev, m: &Module, out: &mut Vec<Finding>) {
    if !matches!(port.kind, PortKind::Ethernet | PortKind::Roce) {
        return;
    }
    let Some(mbps) = nd.link_speed_mbps() else {
        return;
    };
    let speed = EthSpeed::from_mbps(mbps);
    let key = |what: &str| format!("{}: {what}", cmd(nd, PhyQuery::Module));
    let (rated, needs) = if let Some(max) = m.max_gbps {
        if max * 1000.0 >= f64::from(mbps) {
            return;
        }
        (
            format!("{} Gb/s (its fastest application)", fmt_num(max)),
            format!("{} Gb/s", fmt_num(speed.data_gbps())),
        )
    } else if let (Some(nominal), Some(lane)) = (m.nominal_lane_mbd, speed.lane_signalling_gbps) {
        if f64::from(nominal) >= lane * 1000.0 * MODULE_RATE_MARGIN {
            return;
        }
        (
            format!(
                "{} GBd per lane (nominal)",
                fmt_num(f64::from(nominal) / 1000.0)
            ),
            format!("{} GBd per lane for {}", fmt_num(lane), speed.label()),
        )
    } else {
        return;
    };
    out.push(
        Finding::new(FindingId::ModuleRateBelowPort, Severity::Warning, &port.name)
            .evidence(key("module"), m.name())
            .evidence(key("rated"), &rated)
            .evidence(format!("/sys/class/net/{}/speed", nd.name), mbps)
            .message(format!(
                "{}: {} is rated for {rated} but the port runs {needs}: a cable or optic past its rating passes errors (CRC errors, FEC corrections, retransmits) or trains at a lower speed",
                port.name,
                m.name()
            ))
            .fix(format!(
                "Use a module or cable rated for {} (its part number, `ethtool -m {}`), or set the port to the module's speed on both ends (`ethtool -s {} speed ...`).",
                speed.label(),
                nd.name,
                nd.name
            )),
    );
}

fn module_unread(
    port: &Port,
    nd: &Netdev,
    p: &PortPhy,
    out: &mut Vec<Finding>,
    privilege: &mut Vec<String>,
) {
    let Some(u) = p.unread(PhyQuery::Module) else {
        return;
    };
    match u.why {
        UnreadWhy::Privilege => privilege.push(nd.name.clone()),
        UnreadWhy::NoAnswer | UnreadWhy::Malformed => {
            let up = nd.carrier == Some(true);
            out.push(
                Finding::new(
                    FindingId::ModuleNoAnswer,
                    if up { Severity::Warning } else { Severity::Info },
                    &port.name,
                )
                .evidence(cmd(nd, PhyQuery::Module), &u.detail)
                .evidence(format!("/sys/class/net/{}/carrier", nd.name), nd.carrier.map_or("?", |c| if c { "1" } else { "0" }))
                .message(if up {
                    format!(
                        "{}: the link is up but its module does not answer (its memory: {}): a faulty or counterfeit module, one this NIC does not support, or a poorly seated one; its light and temperature cannot be watched",
                        port.name, u.detail
                    )
                } else {
                    format!(
                        "{}: no module answers in this port (its memory: {}): an empty cage, or a module that is not seated or not working",
                        port.name, u.detail
                    )
                })
                .fix(format!(
                    "Reseat the module and read it again (`sudo ethtool -m {}`); try it in another port; a module the NIC's firmware rejects is named in `dmesg`.",
                    nd.name
                )),
            );
        }
        UnreadWhy::Unsupported | UnreadWhy::Failed => {}
    }
}

/// What a link needs FEC for, by its lane rate and the module's media: `Some(true)` required,
/// `Some(false)` not, `None` unknown (no module read).
fn fec_needed(lane_gbps: f64, m: Option<&Module>) -> Option<(bool, &'static str)> {
    if lane_gbps >= 50.0 {
        return Some((true, "PAM4 lanes of 50 Gb/s and more run RS(544,514) FEC always: IEEE 802.3cd Clause 134 (50/100/200GBASE-R), 802.3bs Clause 119 (200/400GBASE-R), 802.3ck (100 Gb/s lanes)"));
    }
    if lane_gbps < 20.0 {
        return Some((false, ""));
    }
    // 25 Gb/s NRZ lanes: 25GBASE-R, 50GBASE-R2, 100GBASE-R4.
    let m = m?;
    let by_code = match m.extended_compliance {
        Some(0x0d) => Some((false, "25GBASE-CR CA-25G-N (up to 3 m) runs without FEC (IEEE 802.3by Clause 110)")),
        Some(0x03 | 0x04) => Some((false, "100GBASE-LR4/ER4 and 25GBASE-LR/ER run without FEC (IEEE 802.3ba Clause 88, 802.3cc)")),
        Some(0x18 | 0x19) => Some((false, "an AOC or ACC specified for BER 1e-12 runs without FEC (SFF-8024 codes 0x18/0x19)")),
        Some(0x0c) => Some((true, "25GBASE-CR CA-25G-S needs BASE-R (Clause 74) or RS FEC (IEEE 802.3by Clause 110)")),
        Some(0x0b) => Some((true, "100GBASE-CR4 and 25GBASE-CR CA-25G-L need RS-FEC (IEEE 802.3bj Clause 92 with Clause 91; 802.3by Clause 110 with Clause 108)")),
        Some(0x02) => Some((true, "100GBASE-SR4 and 25GBASE-SR need RS-FEC (IEEE 802.3bm Clause 95 with Clause 91; 802.3by Clause 112 with Clause 108)")),
        Some(0x06 | 0x07) => Some((true, "100G CWDM4 and PSM4 need RS-FEC (their MSAs specify BER 5e-5 before Clause 91 FEC)")),
        Some(0x01 | 0x08) => Some((true, "an AOC or ACC specified for BER 5e-5 needs RS-FEC (SFF-8024 codes 0x01/0x08)")),
        _ => None,
    };
    by_code.or(match m.media {
        Media::MultimodeFiber => Some((true, "multimode optics on 25 Gb/s lanes (25GBASE-SR, 100GBASE-SR4) need RS-FEC (IEEE 802.3by Clause 112, 802.3bm Clause 95)")),
        Media::PassiveCopper => Some((true, "a copper cable on 25 Gb/s lanes needs RS-FEC unless it is a CA-25G-N cable of 3 m or less (IEEE 802.3by Clause 110)")),
        _ => None,
    })
}

fn fec(port: &Port, nd: &Netdev, p: &PortPhy, out: &mut Vec<Finding>) {
    if !matches!(port.kind, PortKind::Ethernet | PortKind::Roce) {
        return;
    }
    let (Some(f), Some(mbps)) = (&p.fec, nd.link_speed_mbps()) else {
        return;
    };
    if f.active != Some(FecMode::None) {
        return;
    }
    let lanes = p
        .link_modes
        .as_ref()
        .and_then(|l| l.lanes)
        .or_else(|| EthSpeed::from_mbps(mbps).lanes.map(u32::from))
        .filter(|l| *l > 0)
        .unwrap_or(1);
    let lane_gbps = f64::from(mbps) / 1000.0 / f64::from(lanes);
    let known = fec_needed(lane_gbps, p.module.as_ref());
    let (severity, why) = match known {
        Some((false, _)) => return,
        Some((true, why)) => (Severity::Warning, why.to_string()),
        None => (
            Severity::Info,
            format!(
                "25 Gb/s lanes need RS-FEC for 25GBASE-SR and -CR CA-25G-L/S, 100GBASE-SR4 and -CR4 (IEEE 802.3by, 802.3bj, 802.3bm), though not for LR/ER optics or CA-25G-N cables; {}",
                if p.module.is_some() {
                    "this module's codes do not say which it is"
                } else {
                    "the module was not read to tell which"
                }
            ),
        ),
    };
    let mut x = Finding::new(FindingId::FecMissing, severity, &port.name)
        .evidence(cmd(nd, PhyQuery::Fec), "active FEC: none")
        .evidence(format!("/sys/class/net/{}/speed", nd.name), mbps)
        .evidence("lanes", lanes);
    if let Some(m) = &p.module {
        x = x.evidence(format!("{}: module", cmd(nd, PhyQuery::Module)), m.name());
    }
    out.push(
        x.message(format!(
            "{}: no FEC runs on this {} Gb/s link of {lanes} lane(s) at {} Gb/s: {why}. Without it the bit errors the link is designed to correct reach the frames: CRC errors, drops and retransmits; an end with FEC and one without do not link at all",
            port.name,
            fmt_num(f64::from(mbps) / 1000.0),
            fmt_num(lane_gbps)
        ))
        .fix(format!(
            "Turn RS-FEC on at both ends: `ethtool --set-fec {} encoding rs` (or `auto`), and the same on the switch port (e.g. `fec rs` / `forward-error-correction reed-solomon`); both ends must agree.",
            nd.name
        )),
    );
}

fn ring_drops(port: &Port, nd: &Netdev, p: &PortPhy, out: &mut Vec<Finding>) {
    let Some(r) = &p.rings else { return };
    let (Some(rx), Some(max)) = (r.rx, r.rx_max) else {
        return;
    };
    let mut counters: Vec<(String, u64)> = p
        .ring_drops
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| (format!("{}: {k}", cmd(nd, PhyQuery::Statistics)), *v))
        .collect();
    // The netdev's own counters: the same drops as the driver's of that name (the larger is
    // kept, never both), or the only ones a driver without statistics has.
    for k in ["rx_missed_errors", "rx_fifo_errors"] {
        let Some(v) = nd.errors.get(k).copied().filter(|v| *v > 0) else {
            continue;
        };
        if p.ring_drops.get(k).is_some_and(|d| *d >= v) {
            continue;
        }
        counters.retain(|(name, _)| !name.ends_with(&format!(": {k}")));
        counters.push((format!("/sys/class/net/{}/statistics/{k}", nd.name), v));
    }
    if counters.is_empty() {
        return;
    }
    let target = max.min(RING_TARGET_MIN.max(rx.saturating_mul(2)));
    let grow = target > rx;
    let mut f = Finding::new(
        FindingId::RingDrops,
        if grow {
            Severity::Warning
        } else {
            Severity::Info
        },
        &port.name,
    )
    .evidence(
        format!("{}: rx / rx max", cmd(nd, PhyQuery::Rings)),
        format!("{rx} / {max}"),
    );
    for (k, v) in &counters {
        f = f.evidence(k, v);
    }
    let total: u64 = counters.iter().map(|(_, v)| *v).sum();
    let names: Vec<String> = counters
        .iter()
        .map(|(k, v)| format!("{} = {v}", k.rsplit([':', '/']).next().unwrap_or(k).trim()))
        .collect();
    if grow {
        f = f.evidence("ring.rx_target", target);
        out.push(
            f.message(format!(
                "{}: {total} packets were dropped because the receive ring was full ({}), with {rx} descriptors of the {max} the device allows: a burst, or a core busy elsewhere, fills a short ring before the driver empties it",
                port.name,
                names.join(", ")
            ))
            .fix(format!(
                "Grow the ring: `ethtool -G {} rx {target}` now, and `linerate setup rings --apply` to keep it across reboots; if drops go on, spread the queues over more cores (`ethtool -L`, IRQ affinity on the NIC's NUMA node).",
                nd.name
            )),
        );
    } else {
        out.push(
            f.message(format!(
                "{}: {total} packets were dropped because the receive ring was full ({}), though it already has {rx} descriptors, the device's maximum: the cores that drain it do not keep up",
                port.name,
                names.join(", ")
            ))
            .fix(format!(
                "More receive queues on more cores (`ethtool -L {} combined N`), their IRQs on the NIC's NUMA node, and no other load on those cores; the performance CPU governor.",
                nd.name
            )),
        );
    }
}

fn channels(inv: &Inventory, port: &Port, nd: &Netdev, p: &PortPhy, out: &mut Vec<Finding>) {
    let Some(mbps) = nd.link_speed_mbps().filter(|m| *m >= CHANNELS_FROM_MBPS) else {
        return;
    };
    let Some(c) = &p.channels else { return };
    let (Some(have), Some(max)) = (c.rx_queues(), c.rx_queues_max()) else {
        return;
    };
    let f = inv.port_pci(port);
    let node = f.and_then(|f| f.numa_node);
    let cores = node
        .and_then(|n| inv.host.numa_nodes.iter().find(|x| x.id == n))
        .map(|n| n.cpus.len())
        .or_else(|| f.and_then(|f| f.local_cpus.as_ref()).map(Vec::len))
        .or_else(|| (!inv.host.cpus.is_empty()).then_some(inv.host.cpus.len()))
        .and_then(|n| u32::try_from(n).ok());
    let Some(cores) = cores else { return };
    let want = cores.min(max);
    if have >= want {
        return;
    }
    let node_words = node.map_or("this host".to_string(), |n| format!("NUMA node {n}"));
    out.push(
        Finding::new(FindingId::NicChannelsFew, Severity::Warning, &port.name)
            .evidence(format!("{}: combined+rx / max", cmd(nd, PhyQuery::Channels)), format!("{have} / {max}"))
            .evidence(format!("cores of {node_words}"), cores)
            .evidence(format!("/sys/class/net/{}/speed", nd.name), mbps)
            .message(format!(
                "{}: {have} receive queue(s) on a {} Gb/s port whose {node_words} has {cores} cores: the NIC spreads flows over its queues and each queue over one core, so at this rate a few queues make a few cores the limit",
                port.name,
                fmt_num(f64::from(mbps) / 1000.0)
            ))
            .fix(format!(
                "`ethtool -L {} combined {want}` (persist with NetworkManager's `ethtool.channels-combined {want}`, or `CombinedChannels={want}` in a systemd .link file), with the IRQs on {node_words}.",
                nd.name
            )),
    );
}

fn vfs(port: &Port, p: &PortPhy, out: &mut Vec<Finding>) {
    let key = |i: u32| format!("ip link show {} vf {i}", p.netdev);
    let limited: Vec<_> = p
        .vfs
        .iter()
        .filter(|v| v.max_tx_rate_mbps.is_some())
        .collect();
    if !limited.is_empty() {
        let mut f = Finding::new(FindingId::VfRateLimited, Severity::Info, &port.name);
        for v in &limited {
            f = f.evidence(
                key(v.index),
                format!("max_tx_rate {} Mb/s", v.max_tx_rate_mbps.unwrap_or(0)),
            );
        }
        let words: Vec<String> = limited
            .iter()
            .map(|v| {
                format!(
                    "VF {} at {} Gb/s",
                    v.index,
                    fmt_num(f64::from(v.max_tx_rate_mbps.unwrap_or(0)) / 1000.0)
                )
            })
            .collect();
        out.push(
            f.message(format!(
                "{}: its physical function caps what {} virtual function(s) send: {}. A test through such a VF stops at that rate, not at the port's (its ceiling says so when the VF's netdev is on this host)",
                port.name,
                limited.len(),
                words.join(", ")
            ))
            .fix(format!(
                "If the cap is not meant: `ip link set {} vf N max_tx_rate 0` (0 removes it); a VM manager (libvirt, Proxmox, OpenStack) may set it again from its own configuration.",
                p.netdev
            )),
        );
    }
    let down: Vec<_> = p
        .vfs
        .iter()
        .filter(|v| v.link_state == Some(VfLinkState::Disable))
        .collect();
    if !down.is_empty() {
        let mut f = Finding::new(FindingId::VfLinkDown, Severity::Warning, &port.name);
        for v in &down {
            f = f.evidence(key(v.index), "link-state disable");
        }
        let idx: Vec<String> = down.iter().map(|v| v.index.to_string()).collect();
        out.push(
            f.message(format!(
                "{}: virtual function(s) {} are forced down by their physical function (link-state disable): whatever uses them, a VM or a container, has no link whatever the port does",
                port.name,
                idx.join(", ")
            ))
            .fix(format!(
                "`ip link set {} vf N state auto` to follow the port (or `enable`); check the VM manager's configuration if it was set on purpose.",
                p.netdev
            )),
        );
    }
}

/// A virtual function whose physical function this host does not see: a guest's VF.
fn guest_vf(inv: &Inventory, port: &Port, out: &mut Vec<Finding>) {
    let Some(f) = inv.port_pci(port) else { return };
    if !f.is_virtual_function() || inv.vf_parent(f).is_some() {
        return;
    }
    let what = f.card().map_or_else(
        || "an SR-IOV virtual function".to_string(),
        |c| format!("a {} {}", c.vendor_name, c.model),
    );
    out.push(
        Finding::new(FindingId::VfSharedPort, Severity::Info, &port.name)
            .evidence(format!("/sys/bus/pci/devices/{}/device", f.address), f.device.map_or("?".into(), |d| format!("{d:#06x}")))
            .evidence(format!("/sys/bus/pci/devices/{}/physfn", f.address), "absent (a guest's VF)")
            .message(format!(
                "{}: {what} ({}): it shares its physical port with the host's physical function and every other VF, and the host may cap its rate (max_tx_rate), which cannot be seen from here: its ceiling is the port's at best",
                port.name, f.address
            ))
            .fix("On the host: `ip link show PF` lists each VF's max_tx_rate and link state, and `linerate probe` there names them; measure with `linerate doctor` against a peer outside the host."),
    );
}

fn nic_temperature(f: &PciFunction, out: &mut Vec<Finding>) {
    for s in &f.hwmon {
        let Some(now) = s.input_c else { continue };
        // mlx5 puts its warning threshold in `_crit` (mlx5/core/hwmon.c: "temp_crit ... the
        // sensor's warning threshold"); for the others `_crit` is the critical limit.
        let mlx5 = s.chip.as_deref() == Some("mlx5");
        let (sev, limit, what) = match (s.crit_c, s.max_c) {
            (Some(c), _) if now >= c => (
                if mlx5 {
                    Severity::Warning
                } else {
                    Severity::Error
                },
                c,
                if mlx5 {
                    "its warning threshold (`_crit`)"
                } else {
                    "its critical limit (`_crit`)"
                },
            ),
            (_, Some(m)) if now >= m => (
                Severity::Warning,
                m,
                "its limit for normal operation (`_max`)",
            ),
            _ => continue,
        };
        let label = s.label.as_deref().unwrap_or(&s.sensor);
        let model = f.model.as_deref().unwrap_or("the NIC");
        let mut x = Finding::new(FindingId::NicTemperatureHigh, sev, &f.address).evidence(
            format!("{}/{}_input", s.path, s.sensor),
            format!("{now:.1} °C"),
        );
        if let Some(c) = s.crit_c {
            x = x.evidence(
                format!("{}/{}_crit", s.path, s.sensor),
                format!("{c:.1} °C"),
            );
        }
        if let Some(m) = s.max_c {
            x = x.evidence(format!("{}/{}_max", s.path, s.sensor), format!("{m:.1} °C"));
        }
        if let Some(h) = s.highest_c {
            x = x.evidence(
                format!("{}/{}_highest", s.path, s.sensor),
                format!("{h:.1} °C"),
            );
        }
        out.push(
            x.message(format!(
                "{} ({model}): sensor {label} reads {now:.1} °C, at or above {what} of {limit:.1} °C: the card is cooking. Server NICs are passively cooled and need the chassis' airflow across their heatsink; a hot NIC throttles, drops links, or shuts down to protect itself",
                f.address
            ))
            .fix("Give the card airflow: a server slot in the fans' path at their data-centre profile, or in a desktop or quiet case a fan blowing across the heatsink; keep other hot cards out of the next slot; check `dmesg` for thermal events."),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fec_needs_follow_the_standards() {
        assert_eq!(fec_needed(53.125, None).map(|x| x.0), Some(true));
        assert_eq!(fec_needed(10.0, None).map(|x| x.0), Some(false));
        assert_eq!(fec_needed(25.0, None), None);
    }
}
