//! RoCE ports: what their setup lets RDMA do ([`view`]: the InfiniBand MTU the netdev allows,
//! the GIDs and the one to use, the priority RoCE's traffic goes out on and what protects it)
//! and the findings: `roce.mtu_small`, `roce.no_v2_gid`, `roce.v1_only`, `roce.lossy`,
//! `roce.pfc_other_priority`. Pure.

use linerate_facts::{
    DcbRead, Finding, FindingId, GidFamily, IbDevice, IbPort, Inventory, LinkLayer, MtuSource,
    Port, PortAnalysis, PortQos, RoceGid, RoceMtu, RoceTraffic, RoceVersion, RoceView, Severity,
    Trust,
};
use linerate_model::roce as m;
use linerate_model::LimitedBy;

/// The RoCE port behind `port`: its device and port, when it is RoCE (an Ethernet link layer,
/// not iWARP, which runs over TCP).
fn roce_port<'a>(inv: &'a Inventory, port: &Port) -> Option<(&'a IbDevice, &'a IbPort)> {
    let (dev, p) = inv.ib_port(port)?;
    (p.link_layer == LinkLayer::Ethernet && !dev.is_iwarp()).then_some((dev, p))
}

fn ibp(dev: &IbDevice, p: &IbPort, file: &str) -> String {
    format!(
        "/sys/class/infiniband/{}/ports/{}/{file}",
        dev.name, p.number
    )
}

/// The view of every RoCE port of `inv` (None for the others), in `inv.ports`' order.
pub fn views(inv: &Inventory) -> Vec<Option<RoceView>> {
    inv.ports.iter().map(|p| view(inv, p)).collect()
}

/// What the setup of a RoCE port lets RDMA do.
pub fn view(inv: &Inventory, port: &Port) -> Option<RoceView> {
    let (dev, p) = roce_port(inv, port)?;
    let netdev = port.netdev.clone().or_else(|| p.roce_netdev.clone());
    let netdev_mtu = netdev
        .as_deref()
        .and_then(|n| inv.netdev(n))
        .and_then(|n| n.mtu);
    let headroom = m::headroom(dev.family());
    let max = p.max_mtu.unwrap_or(m::IB_MTU_MAX);
    let (active, source) = match p.active_mtu {
        Some(a) => (Some(a), MtuSource::Verbs),
        None => (
            netdev_mtu.and_then(|n| m::active_mtu(n, headroom, max)),
            MtuSource::Derived,
        ),
    };
    let gids: Vec<RoceGid> = p
        .gids
        .iter()
        .map(|g| RoceGid {
            index: g.index,
            gid: g.gid.clone(),
            version: g.version(),
            family: g.family(),
            address: g.address().map(|a| a.to_string()),
            netdev: g.ndev.clone(),
            vlan: g.vlan,
        })
        .collect();
    let use_gid = use_gid(&gids, netdev.as_deref());
    let traffic = netdev.as_deref().and_then(|n| inv.qos(n)).map(|q| {
        traffic(
            p,
            q,
            use_gid.and_then(|i| gids.iter().find(|g| g.index == i)),
        )
    });
    Some(RoceView {
        mtu: RoceMtu {
            active,
            max,
            source,
            netdev,
            netdev_mtu,
            headroom,
            netdev_mtu_for_max: m::netdev_mtu_for(max, headroom),
        },
        gids,
        use_gid,
        traffic,
    })
}

/// The GID rdma_cm takes for an address of the netdev: RoCE v2, IPv4 first, the port's own
/// netdev before its VLANs and uppers.
fn use_gid(gids: &[RoceGid], netdev: Option<&str>) -> Option<u32> {
    let v2 = |fam: GidFamily, own: bool| {
        gids.iter().find(|g| {
            g.version == Some(RoceVersion::V2)
                && g.family == Some(fam)
                && (!own || g.netdev.as_deref() == netdev)
        })
    };
    v2(GidFamily::Ipv4, true)
        .or_else(|| v2(GidFamily::Ipv6, true))
        .or_else(|| v2(GidFamily::Ipv4, false))
        .or_else(|| v2(GidFamily::Ipv6, false))
        .map(|g| g.index)
}

/// The path of RoCE's traffic through the port's priorities.
fn traffic(p: &IbPort, q: &PortQos, gid: Option<&RoceGid>) -> RoceTraffic {
    let cm = p.rdma_cm.as_ref();
    let (tos, tos_source) = match cm.and_then(|c| c.tos) {
        Some(t) => (t, "configfs".to_string()),
        None => (0, "default".to_string()),
    };
    let dcb = match &q.dcb {
        DcbRead::Read(d) => Ok(d),
        DcbRead::Unsupported => Err(format!("{} has no DCB (EOPNOTSUPP)", q.netdev)),
        DcbRead::Failed(e) => Err(e.clone()),
        DcbRead::NotAsked => Err("not read".to_string()),
    };
    let dscp = m::dscp_of_tos(tos);
    let (trust, priority, priority_why) = match &dcb {
        Ok(d) if d.trusts_dscp() => match d.dscp_priority(dscp) {
            Some(pr) => (
                Trust::Dscp,
                pr,
                format!("ToS {tos} is DSCP {dscp}, which the port's DSCP map puts on priority {pr}"),
            ),
            None => {
                let pr = m::default_dscp_priority(dscp);
                (
                    Trust::Dscp,
                    pr,
                    format!("ToS {tos} is DSCP {dscp}, which has no entry of its own in the port's DSCP map: priority {pr} (DSCP >> 3)"),
                )
            }
        },
        _ => match gid.and_then(|g| g.vlan) {
            Some(vid) => (
                Trust::Pcp,
                0,
                format!("the port trusts PCP and RoCE goes over VLAN {vid}: its egress map gives the priority (`cat /proc/net/vlan/*`), 0 where the map has no entry for skb priority {}", m::tos_to_skb_priority(tos)),
            ),
            None => (
                Trust::Pcp,
                0,
                "the port trusts PCP and RoCE's frames are untagged: priority 0".to_string(),
            ),
        },
    };
    let (ecn, ecn_why) = match &q.ecn {
        Some(e) => (e.on(priority), e.dir.clone()),
        None => (
            None,
            format!("no /sys/class/net/{}/ecn, MLNX_OFED's switches", q.netdev),
        ),
    };
    RoceTraffic {
        tos,
        tos_source,
        mode: cm.and_then(|c| c.mode.clone()),
        trust,
        priority,
        priority_why,
        pfc: dcb.as_ref().ok().map(|d| {
            d.pfc
                .as_ref()
                .map(linerate_facts::Pfc::priorities)
                .unwrap_or_default()
        }),
        dcb_unknown: dcb.err(),
        ecn,
        ecn_why,
    }
}

pub fn rules(inv: &Inventory, analysis: &[PortAnalysis], out: &mut Vec<Finding>) {
    for (port, pa) in inv.ports.iter().zip(analysis) {
        let (Some((dev, p)), Some(v)) = (roce_port(inv, port), pa.roce.as_ref()) else {
            continue;
        };
        // A port without a link has nothing to say about traffic yet.
        if pa.ceiling.limited_by == LimitedBy::PortDown {
            continue;
        }
        out.extend(mtu_small(port, dev, v));
        out.extend(gid_findings(port, dev, p, v));
        if let Some(t) = &v.traffic {
            if !dev.is_soft() {
                out.extend(lossy(inv, port, t));
                out.extend(pfc_other_priority(port, t));
            }
        }
    }
}

/// `roce.mtu_small`: the netdev's MTU holds RoCE below the largest MTU the port supports.
fn mtu_small(port: &Port, dev: &IbDevice, v: &RoceView) -> Option<Finding> {
    let mtu = &v.mtu;
    let (active, netdev, netdev_mtu) = (mtu.active?, mtu.netdev.as_deref()?, mtu.netdev_mtu?);
    if active >= mtu.max {
        return None;
    }
    let to_set = mtu.netdev_mtu_for_max;
    let soft = dev.is_soft();
    let f = Finding::new(
        FindingId::RoceMtuSmall,
        if soft {
            Severity::Info
        } else {
            Severity::Warning
        },
        &port.name,
    )
    .evidence(format!("/sys/class/net/{netdev}/mtu"), netdev_mtu)
    .evidence(
        match mtu.source {
            MtuSource::Verbs => "active_mtu (ibv_query_port)".to_string(),
            MtuSource::Derived => format!(
                "active_mtu (derived: the largest InfiniBand MTU within {netdev_mtu} − {} bytes of RoCE headers)",
                mtu.headroom
            ),
        },
        active,
    )
    .evidence("max_mtu", mtu.max)
    .evidence("netdev_mtu_to_set", to_set);
    Some(
        f.message(format!(
            "{}: RoCE on {} runs with an InfiniBand MTU of {active} bytes, held down by {netdev}'s MTU of {netdev_mtu}: the port can do {}, which needs a netdev MTU of at least {to_set} ({} keeps {} bytes for RoCE's headers){}",
            port.name,
            dev.name,
            mtu.max,
            dev.family(),
            mtu.headroom,
            if soft {
                "; on a software device the CPU's cost per packet is what grows"
            } else {
                ": every RDMA message is cut into packets a quarter of the size, at more headers and more packets per second"
            }
        ))
        .fix(format!(
            "Raise {netdev}'s MTU to {} (jumbo frames; at least {to_set}) on both hosts and make every switch port on the path carry it: `ip link set {netdev} mtu {}`, and in the interface's configuration (`linerate setup roce` writes it). Check with `ibv_devinfo -v`: `active_mtu: {} ({})`.",
            m::JUMBO_MTU.max(to_set),
            m::JUMBO_MTU.max(to_set),
            mtu.max,
            mtu_enum(mtu.max)
        )),
    )
}

/// libibverbs' enum of an MTU in bytes (`ibv_devinfo` prints `4096 (5)`).
fn mtu_enum(bytes: u32) -> u32 {
    m::IB_MTUS
        .iter()
        .position(|x| *x == bytes)
        .map_or(0, |i| u32::try_from(i).unwrap_or(0) + 1)
}

/// `roce.no_v2_gid` and `roce.v1_only`.
fn gid_findings(port: &Port, dev: &IbDevice, p: &IbPort, v: &RoceView) -> Option<Finding> {
    if v.gids.is_empty() {
        return None;
    }
    let ev = |f: Finding| {
        v.gids.iter().fold(f, |f, g| {
            f.evidence(
                ibp(dev, p, &format!("gids/{}", g.index)),
                format!(
                    "{} {} {}",
                    g.gid,
                    g.version.map_or("?", |x| match x {
                        RoceVersion::V1 => "v1",
                        RoceVersion::V2 => "v2",
                    }),
                    g.netdev.as_deref().unwrap_or("?")
                ),
            )
        })
    };
    let netdev = v.mtu.netdev.as_deref().unwrap_or("its netdev");
    if v.gids.iter().all(|g| g.version == Some(RoceVersion::V1)) {
        return Some(ev(Finding::new(FindingId::RoceV1Only, Severity::Warning, &port.name))
            .message(format!(
                "{}: {} has only RoCE v1 GIDs: v1 is Ethernet type 0x8915, bound to one Layer 2 segment (no router, no VLAN boundary) and carries no ECN, so congestion control (DCQCN) cannot work; rdma_cm and NCCL look for a RoCE v2 GID",
                port.name, dev.name
            ))
            .fix("RoCE v2 needs a kernel from 4.5 and a driver that offers it (mlx4 from ConnectX-3 Pro, mlx5, bnxt_re, qedr, irdma); check `cat /sys/class/infiniband/DEV/ports/N/gid_attrs/types/*`, and that rdma_cm's default is v2 (`/sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_mode`)."));
    }
    if v.use_gid.is_some() {
        return None;
    }
    Some(ev(Finding::new(FindingId::RoceNoV2Gid, Severity::Warning, &port.name))
        .message(format!(
            "{}: {} has no RoCE v2 GID for an IP address, only link-local ones: {netdev} (and its VLANs) has no IPv4 or global IPv6 address, so rdma_cm cannot resolve an address to this port, and tools that take a GID index (`ib_write_bw -x`, NCCL_IB_GID_INDEX) given the link-local one time out going to RTR across a router",
            port.name, dev.name
        ))
        .fix(format!(
            "Give {netdev} (or the VLAN RoCE is to use) an IP address: the kernel adds its RoCE v2 GID at once (`ip addr add ADDR/LEN dev {netdev}`, and in the interface's configuration); then `linerate probe` names the index to pass to `-x`."
        )))
}

/// `roce.lossy`: nothing keeps RoCE's priority from loss under congestion.
fn lossy(inv: &Inventory, port: &Port, t: &RoceTraffic) -> Option<Finding> {
    let netdev = port.netdev.as_deref()?;
    let q = inv.qos(netdev)?;
    let no_pfc = t.pfc_on() == Some(false) || matches!(q.dcb, DcbRead::Unsupported);
    if !no_pfc || t.ecn == Some(true) {
        return None;
    }
    let severity = if t.ecn == Some(false) {
        Severity::Warning
    } else {
        Severity::Info
    };
    let mut f = Finding::new(FindingId::RoceLossy, severity, &port.name)
        .evidence(
            "roce_priority",
            format!("{} ({})", t.priority, t.priority_why),
        )
        .evidence(
            "pfc (RTM_GETDCB)",
            match (&t.pfc, &t.dcb_unknown) {
                (Some(p), _) if p.is_empty() => "off on every priority".to_string(),
                (Some(p), _) => format!("on for {}", join(p)),
                (None, Some(why)) => why.clone(),
                (None, None) => "unknown".to_string(),
            },
        )
        .evidence(
            "ecn",
            t.ecn.map_or_else(
                || format!("unknown: {}", t.ecn_why),
                |on| {
                    format!(
                        "{} on priority {} ({})",
                        if on { "on" } else { "off" },
                        t.priority,
                        t.ecn_why
                    )
                },
            ),
        )
        .evidence("default_roce_tos", format!("{} ({})", t.tos, t.tos_source));
    f = f.message(match t.ecn {
        Some(_) => format!(
            "{}: RoCE's traffic is lossy: {}, so a congested switch or receiver drops its packets and the transport goes back N on every loss (rates fall by half or more under load)",
            port.name,
            t.protection_words()
        ),
        None => format!(
            "{}: PFC does not protect RoCE's priority {} and ECN's switches cannot be read here: RoCE is lossless only if the firmware's congestion control (DCQCN) is on and the switches mark ECN (upstream mlx5 has no switch to read: its firmware enables DCQCN by default from ConnectX-4 on and keeps its parameters in debugfs; rising CNP counters show it acts); otherwise it retransmits under any congestion",
            port.name, t.priority
        ),
    });
    Some(f.fix(format!(
        "Either PFC on RoCE's priority end to end (`dcb pfc set dev {netdev} prio-pfc all:off {p}:on`, the same on the switch ports) or ECN with DCQCN (the switches marking ECN on that queue; MLNX_OFED: `echo 1 > /sys/class/net/{netdev}/ecn/roce_np/enable/{p}` and `roce_rp`), or both; `linerate setup roce` writes them as a unit that applies them at boot. Check under load with `linerate soak` (pause and CNP counters).",
        p = t.priority
    )))
}

/// `roce.pfc_other_priority`: PFC is on, but not on the priority RoCE's traffic uses.
fn pfc_other_priority(port: &Port, t: &RoceTraffic) -> Option<Finding> {
    let pfc = t.pfc.as_ref()?;
    if pfc.is_empty() || pfc.contains(&t.priority) {
        return None;
    }
    let netdev = port.netdev.as_deref().unwrap_or(&port.name);
    let target = pfc[0];
    Some(
        Finding::new(FindingId::RocePfcOtherPriority, Severity::Warning, &port.name)
            .evidence("pfc (RTM_GETDCB)", format!("on for {}", join(pfc)))
            .evidence("roce_priority", format!("{} ({})", t.priority, t.priority_why))
            .evidence("trust", match t.trust {
                Trust::Dscp => "dscp",
                Trust::Pcp => "pcp",
            })
            .evidence("default_roce_tos", format!("{} ({})", t.tos, t.tos_source))
            .message(format!(
                "{}: PFC protects priority {} but RoCE's traffic goes out on priority {}: the pause frames protect something else, and RoCE is lossy",
                port.name,
                join(pfc),
                t.priority
            ))
            .fix(format!(
                "Send RoCE on the protected priority: trust DSCP and map RoCE's DSCP to it (`dcb app add dev {netdev} dscp-prio 26:{target}`), and give rdma_cm that DSCP (`echo 106 > /sys/kernel/config/rdma_cm/DEV/ports/1/default_roce_tos` after `mkdir /sys/kernel/config/rdma_cm/DEV`; applications that set their own traffic class: NCCL_IB_TC=106, `ib_write_bw --tclass=106`); `linerate setup roce --roce-priority {target}` writes it. Or move PFC to priority {}.",
                t.priority
            )),
    )
}

fn join(p: &[u8]) -> String {
    p.iter().map(u8::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::{
        Dcb, DcbApp, EcnSwitches, Gid, IbPortFiles, Netdev, NetdevKind, Pfc, PortKind,
        RdmaCmDefaults, APP_SEL_DSCP,
    };
    use linerate_model::{IbPhysState, IbState};

    fn gid(index: u32, gid: &str, v2: bool, ndev: &str) -> Gid {
        Gid {
            index,
            gid: gid.into(),
            kind: Some(if v2 { "RoCE v2" } else { "IB/RoCE v1" }.into()),
            ndev: Some(ndev.into()),
            vlan: None,
        }
    }

    const LL: &str = "fe80:0000:0000:0000:ba59:9fff:fed4:2a10";
    const V4: &str = "0000:0000:0000:0000:0000:ffff:c612:0001";

    /// A ConnectX-5 RoCE port over `enp65s0f0` at `mtu` with `gids`, and its lossless state.
    fn inv(family: &str, mtu: u32, gids: Vec<Gid>, qos: Option<PortQos>) -> Inventory {
        let dev = IbDevice {
            name: format!("{family}_0"),
            pci: None,
            node_type: Some("1: CA".into()),
            node_guid: None,
            fw_ver: None,
            hca_type: None,
            hw_rev: None,
            board_id: None,
            node_desc: None,
            soft_parent: (family == "rxe").then(|| "enp65s0f0".into()),
            ports: vec![IbPort {
                number: 1,
                state: Some(IbState::Active),
                phys_state: Some(IbPhysState::LinkUp),
                rate: None,
                link_layer: LinkLayer::Ethernet,
                lid: None,
                sm_lid: None,
                cap_mask: None,
                gid0: None,
                roce_netdev: Some("enp65s0f0".into()),
                gids,
                counters: Vec::new(),
                hw_counters: Vec::new(),
                active_mtu: None,
                max_mtu: None,
                rdma_cm: None,
                verbatim: IbPortFiles::default(),
            }],
        };
        Inventory {
            ports: vec![Port {
                name: "enp65s0f0".into(),
                kind: PortKind::Roce,
                device: Some(dev.name.clone()),
                port: Some(1),
                netdev: Some("enp65s0f0".into()),
                pci: None,
                link_layer: LinkLayer::Ethernet,
            }],
            ib_devices: vec![dev],
            netdevs: vec![Netdev {
                name: "enp65s0f0".into(),
                kind: NetdevKind::Ethernet,
                arp_type: Some(1),
                is_virtual: false,
                paravirtual: false,
                driver: Some("mlx5_core".into()),
                pci: None,
                mtu: Some(mtu),
                speed_mbps: Some(100_000),
                operstate: Some("up".into()),
                carrier: Some(true),
                admin_up: Some(true),
                dev_port: Some(0),
                address: None,
                ipoib: None,
                errors: std::collections::BTreeMap::default(),
            }],
            qos: qos.into_iter().collect(),
            ..Inventory::default()
        }
    }

    fn qos(pfc_en: u8, apps: &[(u8, u16)], ecn: Option<bool>) -> PortQos {
        PortQos {
            netdev: "enp65s0f0".into(),
            dcb: DcbRead::Read(Dcb {
                dcbx: Some(0x0a),
                pfc: Some(Pfc {
                    cap: 8,
                    enabled: pfc_en,
                    requests: vec![0; 8],
                    indications: vec![0; 8],
                    ..Pfc::default()
                }),
                ets: None,
                apps: apps
                    .iter()
                    .map(|&(priority, protocol)| DcbApp {
                        selector: APP_SEL_DSCP,
                        priority,
                        protocol,
                    })
                    .collect(),
                trust: None,
            }),
            ecn: ecn.map(|on| EcnSwitches {
                dir: "/sys/class/net/enp65s0f0/ecn".into(),
                rp: vec![Some(on); 8],
                np: vec![Some(on); 8],
            }),
            counters: Vec::new(),
            counters_unread: None,
        }
    }

    fn ids(inv: &Inventory) -> Vec<(FindingId, Severity)> {
        crate::analyze(inv)
            .findings
            .into_iter()
            .filter(|f| f.id.as_str().starts_with("roce."))
            .map(|f| (f.id, f.severity))
            .collect()
    }

    fn good_gids() -> Vec<Gid> {
        vec![
            gid(0, LL, false, "enp65s0f0"),
            gid(1, LL, true, "enp65s0f0"),
            gid(2, V4, false, "enp65s0f0"),
            gid(3, V4, true, "enp65s0f0"),
        ]
    }

    #[test]
    fn the_mtu_finding_gives_the_netdev_mtu_that_lifts_it() {
        let i = inv(
            "mlx5",
            1500,
            good_gids(),
            Some(qos(8, &[(3, 26)], Some(true))),
        );
        let v = view(&i, &i.ports[0]).unwrap();
        assert_eq!(
            (v.mtu.active, v.mtu.source),
            (Some(1024), MtuSource::Derived)
        );
        assert_eq!(v.mtu.netdev_mtu_for_max, 4192);
        let a = crate::analyze(&i);
        let f = a
            .findings
            .iter()
            .find(|f| f.id == FindingId::RoceMtuSmall)
            .unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.evidence["netdev_mtu_to_set"], "4192");
        assert!(f.fix.contains("mtu 9000"), "{}", f.fix);
        assert!(f.fix.contains("active_mtu: 4096 (5)"), "{}", f.fix);
        // At 4192 there is nothing to say; at 4191 there is; rxe needs 16 bytes less.
        assert!(!ids(&inv("mlx5", 4192, good_gids(), None))
            .iter()
            .any(|x| x.0 == FindingId::RoceMtuSmall));
        assert!(ids(&inv("mlx5", 4191, good_gids(), None))
            .iter()
            .any(|x| x.0 == FindingId::RoceMtuSmall));
        let rxe = inv("rxe", 4176, good_gids(), None);
        assert!(!ids(&rxe).iter().any(|x| x.0 == FindingId::RoceMtuSmall));
        let rxe = inv("rxe", 1500, good_gids(), None);
        assert!(ids(&rxe).contains(&(FindingId::RoceMtuSmall, Severity::Info)));
        // libibverbs' figure wins over the derived one.
        let mut i = inv("mlx5", 9000, good_gids(), None);
        i.ib_devices[0].ports[0].active_mtu = Some(2048);
        let v = view(&i, &i.ports[0]).unwrap();
        assert_eq!((v.mtu.active, v.mtu.source), (Some(2048), MtuSource::Verbs));
    }

    #[test]
    fn the_gid_to_use_and_the_gid_findings() {
        let i = inv("mlx5", 9000, good_gids(), None);
        let v = view(&i, &i.ports[0]).unwrap();
        assert_eq!(v.use_gid, Some(3));
        assert_eq!(v.gids[3].address.as_deref(), Some("198.18.0.1"));
        assert_eq!(v.gids[3].family, Some(GidFamily::Ipv4));
        assert_eq!(v.gids[1].family, Some(GidFamily::LinkLocal));
        assert!(ids(&i).is_empty(), "{:?}", ids(&i));
        // No address: only the link-local GIDs.
        let i = inv("mlx5", 9000, good_gids()[..2].to_vec(), None);
        assert_eq!(view(&i, &i.ports[0]).unwrap().use_gid, None);
        assert_eq!(ids(&i), [(FindingId::RoceNoV2Gid, Severity::Warning)]);
        // Only v1.
        let i = inv(
            "mlx4",
            9000,
            vec![
                gid(0, LL, false, "enp65s0f0"),
                gid(1, V4, false, "enp65s0f0"),
            ],
            None,
        );
        assert_eq!(ids(&i), [(FindingId::RoceV1Only, Severity::Warning)]);
        // An address on a VLAN only: its GID is the one to use.
        let mut g = good_gids()[..2].to_vec();
        g.push(Gid {
            vlan: Some(100),
            ..gid(2, V4, true, "enp65s0f0.100")
        });
        let i = inv("mlx5", 9000, g, None);
        let v = view(&i, &i.ports[0]).unwrap();
        assert_eq!(v.use_gid, Some(2));
        assert!(ids(&i).is_empty());
    }

    #[test]
    fn pfc_ecn_and_the_priority_of_roce() {
        // PFC on 3, DSCP 26 → 3, ToS 106 from configfs: protected.
        let mut i = inv(
            "mlx5",
            9000,
            good_gids(),
            Some(qos(1 << 3, &[(3, 26)], None)),
        );
        i.ib_devices[0].ports[0].rdma_cm = Some(RdmaCmDefaults {
            tos: Some(106),
            mode: Some("RoCE v2".into()),
        });
        let t = view(&i, &i.ports[0]).unwrap().traffic.unwrap();
        assert_eq!(
            (t.trust, t.priority, t.pfc_on()),
            (Trust::Dscp, 3, Some(true))
        );
        assert!(ids(&i).is_empty(), "{:?}", ids(&i));
        // The default ToS 0 under DSCP trust is priority 0: PFC on 3 protects something else.
        i.ib_devices[0].ports[0].rdma_cm = None;
        let t = view(&i, &i.ports[0]).unwrap().traffic.unwrap();
        assert_eq!(t.priority, 0);
        assert_eq!(
            ids(&i),
            [
                (FindingId::RocePfcOtherPriority, Severity::Warning),
                (FindingId::RoceLossy, Severity::Info)
            ]
        );
        // No PFC and ECN off: lossy, a warning, said as soak and doctor quote it.
        let i = inv("mlx5", 9000, good_gids(), Some(qos(0, &[], Some(false))));
        let t = view(&i, &i.ports[0]).unwrap().traffic.unwrap();
        assert_eq!((t.trust, t.priority), (Trust::Pcp, 0));
        assert_eq!(
            t.protection_words(),
            "PFC is off on priority 0 and ECN is off"
        );
        assert_eq!(ids(&i), [(FindingId::RoceLossy, Severity::Warning)]);
        // ECN on: lossy RoCE with congestion control is a setup, not a fault.
        let i = inv("mlx5", 9000, good_gids(), Some(qos(0, &[], Some(true))));
        assert!(ids(&i).is_empty());
        // A NIC without DCB and no ECN switch: a note.
        let mut q = qos(0, &[], None);
        q.dcb = DcbRead::Unsupported;
        let i = inv("mlx5", 9000, good_gids(), Some(q));
        assert_eq!(ids(&i), [(FindingId::RoceLossy, Severity::Info)]);
        // Soft-RoCE has neither: nothing to say about it.
        let mut q = qos(0, &[], None);
        q.dcb = DcbRead::Unsupported;
        let i = inv("rxe", 9000, good_gids(), Some(q));
        assert!(ids(&i).is_empty());
    }
}
