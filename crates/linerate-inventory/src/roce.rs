//! What RoCE needs beyond its port: per netdev under a RoCE port, the DCB state (`dcb.rs`),
//! ECN's switches (MLNX_OFED's `/sys/class/net/IF/ecn/roce_{rp,np}/enable/N`), the driver's
//! pause and discard counters (`ethtool -S`: SIOCETHTOOL on the live root, a tree's
//! `ethtool/IFACE/statistics`); per RDMA port, rdma_cm's default ToS and GID type (configfs);
//! per GID, the VLAN of its netdev (`/proc/net/vlan/config`).

use std::path::Path;

use linerate_facts::{
    EcnSwitches, IbDevice, Inventory, LinkLayer, PortQos, RdmaCmDefaults, PRIORITIES,
};

use crate::dcb::DcbSource;
use crate::ethtool::Ethtool;
use crate::fs::Root;

/// Where a `--root` tree keeps `ethtool -S`'s output for an interface (the PHY readers'
/// `ethtool/IFACE/` directory): `ethtool/IFACE/statistics`.
pub const TREE_STATISTICS: &str = "statistics";

/// Is this one of the driver's counters that say what lossless Ethernet does: pause frames and
/// their time per priority and per port, discards for want of a buffer, ECN marks, pause
/// storms (mlx5's names: Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
/// counters.rst)?
pub fn is_qos_counter(name: &str) -> bool {
    if let Some(rest) = name
        .strip_prefix("rx_prio")
        .or_else(|| name.strip_prefix("tx_prio"))
    {
        let suffix = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        return suffix.len() < rest.len()
            && matches!(
                suffix,
                "_pause"
                    | "_pause_duration"
                    | "_pause_transition"
                    | "_discards"
                    | "_buf_discard"
                    | "_cong_discard"
                    | "_marked"
            );
    }
    matches!(
        name,
        "rx_pause_ctrl_phy"
            | "tx_pause_ctrl_phy"
            | "rx_global_pause"
            | "tx_global_pause"
            | "rx_global_pause_duration"
            | "tx_global_pause_duration"
            | "rx_discards_phy"
            | "tx_discards_phy"
            | "rx_out_of_buffer"
            | "tx_pause_storm_warning_events"
            | "tx_pause_storm_error_events"
    )
}

/// The netdevs whose lossless state is read: those of RoCE ports (not iWARP, which runs over
/// TCP), hardware and soft alike.
fn roce_netdevs(inv: &Inventory) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &inv.ports {
        let Some((dev, port)) = inv.ib_port(p) else {
            continue;
        };
        if dev.is_iwarp() || port.link_layer != LinkLayer::Ethernet {
            continue;
        }
        if let Some(n) = &p.netdev {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// The statistics of a tree: `ethtool -S IFACE`'s words (`     rx_prio3_pause: 12`).
pub fn parse_ethtool_s(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Where the driver's statistics come from.
#[derive(Debug)]
pub enum Stats<'a> {
    Live(Option<Ethtool>),
    Tree(&'a Path),
}

impl Stats<'_> {
    fn read(&mut self, iface: &str) -> Result<Vec<(String, u64)>, String> {
        match self {
            Stats::Live(Some(e)) => e.stats(iface).map_err(|e| e.to_string()),
            Stats::Live(None) => Err("no socket for SIOCETHTOOL".into()),
            Stats::Tree(root) => {
                let p = root.join("ethtool").join(iface).join(TREE_STATISTICS);
                match std::fs::read_to_string(&p) {
                    Ok(t) => Ok(parse_ethtool_s(&t)),
                    Err(e) => Err(format!("{}: {e}", p.display())),
                }
            }
        }
    }
}

/// ECN's switches of `iface`, where the driver has them.
fn ecn(r: &Root, iface: &str) -> Option<EcnSwitches> {
    let dir = r.path("sys/class/net").join(iface).join("ecn");
    if !dir.is_dir() {
        return None;
    }
    let read = |point: &str| -> Vec<Option<bool>> {
        (0..PRIORITIES)
            .map(|p| {
                Root::read_raw(&dir.join(point).join("enable").join(p.to_string()))
                    .ok()
                    .flatten()
                    .and_then(|v| match v.as_str() {
                        "1" => Some(true),
                        "0" => Some(false),
                        _ => None,
                    })
            })
            .collect()
    };
    Some(EcnSwitches {
        dir: format!("/sys/class/net/{iface}/ecn"),
        rp: read("roce_rp"),
        np: read("roce_np"),
    })
}

/// The lossless state of every RoCE netdev of `inv`.
pub fn read_qos(
    r: &Root,
    inv: &Inventory,
    dcb: &mut dyn DcbSource,
    stats: &mut Stats<'_>,
) -> Vec<PortQos> {
    roce_netdevs(inv)
        .into_iter()
        .map(|n| {
            let (counters, counters_unread) = match stats.read(&n) {
                Ok(all) => (
                    all.into_iter().filter(|(k, _)| is_qos_counter(k)).collect(),
                    None,
                ),
                Err(e) => (Vec::new(), Some(e)),
            };
            PortQos {
                dcb: dcb.ieee(&n),
                ecn: ecn(r, &n),
                counters,
                counters_unread,
                netdev: n,
            }
        })
        .collect()
}

/// rdma_cm's defaults of each RoCE port (configfs), and the VLAN of each GID's netdev.
pub fn annotate_ports(r: &Root, devices: &mut [IbDevice]) {
    let vlans = r
        .path("proc/net/vlan/config")
        .to_str()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| parse_vlan_config(&t))
        .unwrap_or_default();
    let cm = r.path("sys/kernel/config/rdma_cm");
    for d in devices {
        for p in &mut d.ports {
            if p.link_layer != LinkLayer::Ethernet {
                continue;
            }
            let dir = cm.join(&d.name).join("ports").join(p.number.to_string());
            if dir.is_dir() {
                let raw = |f: &str| Root::read_raw(&dir.join(f)).ok().flatten();
                p.rdma_cm = Some(RdmaCmDefaults {
                    tos: raw("default_roce_tos").and_then(|v| v.parse().ok()),
                    mode: raw("default_roce_mode"),
                });
            }
            for g in &mut p.gids {
                g.vlan = g
                    .ndev
                    .as_deref()
                    .and_then(|n| vlans.iter().find(|(name, _)| name == n))
                    .map(|(_, id)| *id);
            }
        }
    }
}

/// `/proc/net/vlan/config`: `NAME | VID | PARENT` lines after two header lines.
pub fn parse_vlan_config(text: &str) -> Vec<(String, u16)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let name = f.next()?;
            let id = f.next()?.parse().ok()?;
            f.next()?;
            Some((name.to_string(), id))
        })
        .collect()
}

/// The DCB state: asked of the kernel on the live root, else read from the tree.
pub fn read(r: &Root, inv: &Inventory) -> Vec<PortQos> {
    let root = r.path("");
    if crate::is_live(&root) {
        read_qos(
            r,
            inv,
            &mut crate::dcb::LiveDcb::default(),
            &mut Stats::Live(Ethtool::new().ok()),
        )
    } else {
        read_qos(
            r,
            inv,
            &mut crate::dcb::Tree { root: &root },
            &mut Stats::Tree(&root),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::DcbRead;

    #[test]
    fn the_counters_of_lossless_ethernet() {
        for n in [
            "rx_prio3_pause",
            "tx_prio0_pause_duration",
            "rx_prio7_discards",
            "rx_prio3_buf_discard",
            "rx_discards_phy",
            "tx_pause_ctrl_phy",
            "rx_prio3_marked",
        ] {
            assert!(is_qos_counter(n), "{n}");
        }
        for n in [
            "rx_prio_pause",
            "rx_priox_pause",
            "rx_packets",
            "rx_prio3_bytes",
        ] {
            assert!(!is_qos_counter(n), "{n}");
        }
    }

    #[test]
    fn ethtool_s_and_vlan_config_parse() {
        let s = "NIC statistics:\n     rx_packets: 12\n     rx_prio3_pause: 4\n     bad: x\n";
        assert_eq!(
            parse_ethtool_s(s),
            [("rx_packets".into(), 12), ("rx_prio3_pause".into(), 4)]
        );
        let v = "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\nenp1s0.100     | 100  | enp1s0\n";
        assert_eq!(parse_vlan_config(v), [("enp1s0.100".into(), 100)]);
    }

    #[test]
    fn a_netdev_without_dcb_says_so_on_the_live_kernel() {
        // Loopback has no dcbnl_ops: the kernel answers EOPNOTSUPP, to anyone.
        let mut live = crate::dcb::LiveDcb::default();
        assert_eq!(live.ieee("lo"), DcbRead::Unsupported);
        // No such interface: a refusal with its reason, never a panic.
        let DcbRead::Failed(e) = live.ieee("nosuchif0") else {
            panic!()
        };
        assert!(e.contains("refused"), "{e}");
    }
}
