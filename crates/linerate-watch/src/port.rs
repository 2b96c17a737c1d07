//! The ports `linerate watch` shows, drawn from an inventory (at the start, and again whenever
//! a link file or the set of ports changes): who each port is, its link, its ceiling from the
//! ceiling chain, its PCIe link and NUMA node, and for a bond its members. Pure: the inventory
//! and the bonds come in, plain data goes out.

use linerate_facts::{Bond, Inventory, Netdev, Port, PortKind};
use linerate_model::{Ceiling, LimitedBy, Stage};
use linerate_units::fmt_num;
use serde::{Deserialize, Serialize};

/// Which port: soak's identity, the labels of node_exporter's infiniband collector. An RDMA
/// port is its device and number (`mlx5_0`, `1`); a netdev without one is its own device with
/// an empty port (`eth0`, ``).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PortId {
    pub device: String,
    pub port: String,
}

impl PortId {
    pub fn new(device: &str, port: &str) -> Self {
        Self {
            device: device.to_string(),
            port: port.to_string(),
        }
    }

    /// `mlx5_0/1`, or `eth0`.
    pub fn label(&self) -> String {
        if self.port.is_empty() {
            self.device.clone()
        } else {
            format!("{}/{}", self.device, self.port)
        }
    }
}

/// What kind of port a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchKind {
    /// An InfiniBand port, with its IPoIB netdev when it has one.
    Infiniband,
    /// RDMA over Converged Ethernet.
    Roce,
    /// An iWARP RNIC's port.
    Iwarp,
    Ethernet,
    /// A bonding interface over other ports.
    Bond,
    /// A paravirtual NIC (virtio, vmxnet3...): the hypervisor sets its ceiling.
    Paravirtual,
    /// A software device (veth, bridge, tun...): no hardware ceiling of its own.
    Virtual,
}

impl WatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Infiniband => "infiniband",
            Self::Roce => "roce",
            Self::Iwarp => "iwarp",
            Self::Ethernet => "ethernet",
            Self::Bond => "bond",
            Self::Paravirtual => "paravirtual",
            Self::Virtual => "virtual",
        }
    }

    /// The short form the screen's KIND column shows.
    pub fn short(self) -> &'static str {
        match self {
            Self::Infiniband => "ib",
            Self::Roce => "roce",
            Self::Iwarp => "iwarp",
            Self::Ethernet => "eth",
            Self::Bond => "bond",
            Self::Paravirtual => "pv",
            Self::Virtual => "virt",
        }
    }
}

/// The facts of a link whose change is an event: its state, rate, width, PCIe link and MTU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkFacts {
    /// The link can pass traffic: InfiniBand ACTIVE, a netdev up with carrier.
    pub up: bool,
    /// `active`, `init`, `down (polling)`, `up`, `down (no carrier)`, `lowerlayerdown`...
    pub state: String,
    /// The link's rate, as its port reports it (`4X EDR`, `25GbE`); `None` while it has none.
    pub rate: Option<String>,
    /// InfiniBand lanes (`4X`).
    pub width: Option<String>,
    /// The PCIe link data crosses (`PCIe 3.0 x8`): the function's, narrowed by any upstream
    /// link that trained lower.
    pub pcie: Option<String>,
    pub mtu: Option<u32>,
}

/// The ceiling of a port as the screen and the exports show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingFacts {
    /// Gb/s the hardware carries one way; `None` without a hardware ceiling (a virtual port,
    /// a link down, an unknown rate: `summary` says which).
    pub gbps: Option<f64>,
    /// The stage that sets it: `link`, `encoding`, `pcie`, `mtu`, `port_down`,
    /// `no_subnet_manager` or `unknown`.
    pub limited_by: LimitedBy,
    /// The chain in one sentence.
    pub summary: String,
    /// The stages, from the signalling rate down.
    pub chain: Vec<Stage>,
}

impl CeilingFacts {
    fn from_chain(c: &Ceiling) -> Self {
        let usable = c.gbps > 0.0 && !matches!(c.limited_by, LimitedBy::Unknown);
        Self {
            gbps: usable.then_some(c.gbps),
            limited_by: c.limited_by,
            summary: c.summary.clone(),
            chain: c.chain.clone(),
        }
    }
}

/// The PCIe function behind a port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcieFacts {
    pub address: String,
    /// `PCIe 3.0 x8` as negotiated (narrowed by an upstream link that trained lower).
    pub current: Option<String>,
    /// What the card can do.
    pub max: Option<String>,
    /// What the slot above it can do.
    pub slot: Option<String>,
    pub numa_node: Option<u32>,
}

/// A bond's mode and members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BondFacts {
    pub mode: Option<String>,
    pub members: Vec<String>,
    pub active: Option<String>,
}

/// Everything the view knows about a port besides its counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchedPort {
    pub id: PortId,
    /// The netdev when there is one, else `device/port`.
    pub name: String,
    pub netdev: Option<String>,
    pub kind: WatchKind,
    pub link: LinkFacts,
    pub ceiling: CeilingFacts,
    pub pcie: Option<PcieFacts>,
    pub bond: Option<BondFacts>,
}

/// Whether `p` is one of the ports `asked` for on the command line (by its interface, its
/// `device/port` or its device), whatever its kind; with none asked for, every port but
/// loopback (a host's `lo` carries no link; a user who names it, as beside `bench 127.0.0.1`,
/// gets it).
pub fn asked_for(asked: &[String], p: &Port) -> bool {
    if asked.is_empty() {
        return p.kind != PortKind::Loopback;
    }
    let id = port_id(p);
    asked.iter().any(|a| {
        p.netdev.as_deref() == Some(a.as_str())
            || id
                .as_ref()
                .is_some_and(|id| id.label() == *a || id.device == *a)
    })
}

/// The ports to watch in `inv`: those `asked` for ([`asked_for`]), one per RDMA port or netdev
/// (an RDMA port with several netdevs is one port, named by its first), with their ceilings
/// from `linerate_rules::port_ceiling`; a bond's ceiling is its members'.
pub fn watched_ports(inv: &Inventory, bonds: &[Bond], asked: &[String]) -> Vec<WatchedPort> {
    let mut out: Vec<WatchedPort> = Vec::new();
    for p in inv.ports.iter().filter(|p| asked_for(asked, p)) {
        let Some(f) = facts_of(inv, bonds, p) else {
            continue;
        };
        if !out.iter().any(|o| o.id == f.id) {
            out.push(f);
        }
    }
    out
}

/// The identity soak's sampler gives the port (`linerate_inventory::counters::targets_where`).
pub fn port_id(p: &Port) -> Option<PortId> {
    match (&p.device, p.port) {
        (Some(dev), Some(n)) => Some(PortId::new(dev, &n.to_string())),
        _ => p.netdev.as_deref().map(|n| PortId::new(n, "")),
    }
}

fn facts_of(inv: &Inventory, bonds: &[Bond], p: &Port) -> Option<WatchedPort> {
    let id = port_id(p)?;
    let nd = inv.port_netdev(p);
    let bond = p
        .netdev
        .as_deref()
        .and_then(|n| bonds.iter().find(|b| b.name == n));
    let ib = inv.ib_port(p);
    let kind = match p.kind {
        _ if bond.is_some() => WatchKind::Bond,
        PortKind::Infiniband => WatchKind::Infiniband,
        PortKind::Roce if ib.is_some_and(|(d, _)| d.is_iwarp()) => WatchKind::Iwarp,
        PortKind::Roce => WatchKind::Roce,
        PortKind::Ethernet => WatchKind::Ethernet,
        PortKind::Paravirtual => WatchKind::Paravirtual,
        PortKind::Virtual | PortKind::Other | PortKind::Loopback => WatchKind::Virtual,
    };
    let chain = linerate_rules::port_ceiling(inv, p);
    let pci = inv.port_pci(p);
    let pcie = pci.map(|f| PcieFacts {
        address: f.address.clone(),
        current: f.effective_link().map(|l| l.label()),
        max: f.link.max().map(|l| l.label()),
        slot: f.slot_max().map(|(l, _)| l.label()),
        numa_node: f.numa_node,
    });
    let ceiling = match bond {
        Some(b) => bond_ceiling(inv, b),
        None => CeilingFacts::from_chain(&chain),
    };
    Some(WatchedPort {
        name: p.netdev.clone().unwrap_or_else(|| id.label()),
        id,
        netdev: p.netdev.clone(),
        kind,
        link: link_facts(p, nd, ib.map(|(_, port)| port), &chain, pcie.as_ref(), kind),
        ceiling,
        pcie,
        bond: bond.map(|b| BondFacts {
            mode: b.mode.clone(),
            members: b.members.clone(),
            active: b.active.clone(),
        }),
    })
}

fn link_facts(
    p: &Port,
    nd: Option<&Netdev>,
    ib: Option<&linerate_facts::IbPort>,
    chain: &Ceiling,
    pcie: Option<&PcieFacts>,
    kind: WatchKind,
) -> LinkFacts {
    let ib_link = ib.filter(|_| p.kind == PortKind::Infiniband);
    let (up, state) = match (ib_link, nd) {
        (Some(i), _) => {
            let st = i.state.map_or("unknown", |s| s.name()).to_ascii_lowercase();
            let phys = i.phys_state.map(|s| s.name().to_ascii_lowercase());
            let up = matches!(
                i.state,
                Some(linerate_model::IbState::Active | linerate_model::IbState::ActiveDefer)
            );
            match phys {
                Some(ph) if ph != "linkup" => (up, format!("{st} ({ph})")),
                _ => (up, st),
            }
        }
        (None, Some(n)) => {
            let op = n.operstate.clone().unwrap_or_else(|| "unknown".into());
            let carrier = n.carrier != Some(false);
            let up = carrier && n.admin_up != Some(false) && op != "down";
            if !carrier && n.admin_up != Some(false) {
                (false, format!("{op} (no carrier)"))
            } else if n.admin_up == Some(false) {
                (false, "down (admin)".into())
            } else {
                (up, op)
            }
        }
        (None, None) => (
            !matches!(chain.limited_by, LimitedBy::PortDown),
            "unknown".into(),
        ),
    };
    let (rate, width) = match (ib_link.and_then(linerate_facts::IbPort::link_rate), nd) {
        (Some(r), _) => (Some(r.label()), Some(format!("{}X", r.width))),
        // A software device's `speed` is the driver's constant (veth: 10000), no link.
        (None, Some(_)) if kind == WatchKind::Virtual => (None, None),
        (None, Some(n)) => (
            n.link_speed_mbps()
                .map(|m| linerate_model::EthSpeed::from_mbps(m).label()),
            None,
        ),
        (None, None) => (None, None),
    };
    LinkFacts {
        up,
        state,
        rate,
        width,
        pcie: pcie.and_then(|f| f.current.clone()),
        mtu: nd.and_then(|n| n.mtu),
    }
}

/// A bond's ceiling: its members' added up, or one member's where one carries the traffic at
/// a time (`active-backup`: the active one's; `broadcast`: the slowest's, since every member
/// carries everything). The stage is the members' when they agree.
fn bond_ceiling(inv: &Inventory, b: &Bond) -> CeilingFacts {
    let members: Vec<(String, Ceiling)> = b
        .members
        .iter()
        .filter_map(|m| {
            let port = inv.port_of_netdev(m)?;
            Some((m.clone(), linerate_rules::port_ceiling(inv, port)))
        })
        .collect();
    let usable: Vec<&(String, Ceiling)> = members
        .iter()
        .filter(|(_, c)| c.gbps > 0.0 && c.limited_by != LimitedBy::Unknown)
        .collect();
    let stages: Vec<LimitedBy> = usable.iter().map(|(_, c)| c.limited_by).collect();
    let limited_by = match stages.first() {
        Some(s) if stages.iter().all(|x| x == s) => *s,
        Some(_) => LimitedBy::Link,
        None => LimitedBy::Unknown,
    };
    let mode = b.mode.as_deref().unwrap_or("unknown mode");
    let gbps = if usable.is_empty() {
        None
    } else if b.one_member_at_a_time() {
        let active = b
            .active
            .as_deref()
            .and_then(|a| usable.iter().find(|(n, _)| n == a));
        match (mode, active) {
            ("active-backup", Some((_, c))) => Some(c.gbps),
            _ => usable.iter().map(|(_, c)| c.gbps).reduce(f64::min),
        }
    } else {
        Some(usable.iter().map(|(_, c)| c.gbps).sum())
    };
    let each: Vec<String> = members
        .iter()
        .map(|(n, c)| {
            if c.gbps > 0.0 {
                format!("{n} {} Gb/s ({})", fmt_num(c.gbps), c.limited_by.as_str())
            } else {
                format!("{n} no ceiling")
            }
        })
        .collect();
    let summary = match gbps {
        Some(g) => format!(
            "bond ({mode}) of {}: {} Gb/s{}",
            each.join(", "),
            fmt_num(g),
            if b.one_member_at_a_time() {
                " (one member at a time)"
            } else {
                " (the members added up; one flow stays on one member)"
            }
        ),
        None if members.is_empty() => format!("bond ({mode}) without members in the inventory"),
        None => format!(
            "bond ({mode}) of {}: no member with a ceiling",
            each.join(", ")
        ),
    };
    CeilingFacts {
        gbps,
        limited_by,
        summary,
        chain: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(name: &str) -> Inventory {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/sysfs")
            .join(name);
        linerate_inventory::probe(&root).expect("a fixture root")
    }

    fn names(inv: &Inventory, asked: &[&str]) -> Vec<String> {
        let asked: Vec<String> = asked.iter().map(ToString::to_string).collect();
        let mut n: Vec<String> = watched_ports(inv, &[], &asked)
            .into_iter()
            .map(|p| p.name)
            .collect();
        n.sort();
        n
    }

    #[test]
    fn loopback_is_shown_when_named_and_only_then() {
        let inv = inventory("virtual-only");
        let all = names(&inv, &[]);
        assert!(all.contains(&"veth0".to_string()), "{all:?}");
        assert!(!all.contains(&"lo".to_string()), "{all:?}");
        assert_eq!(names(&inv, &["lo"]), ["lo"]);
        let lo = watched_ports(&inv, &[], &["lo".to_string()]);
        assert_eq!(
            (lo[0].kind, lo[0].ceiling.gbps, lo[0].id.label().as_str()),
            (WatchKind::Virtual, None, "lo")
        );
        assert_eq!(names(&inv, &["lo", "veth0"]), ["lo", "veth0"]);
        assert!(names(&inv, &["nosuch0"]).is_empty());
    }

    #[test]
    fn an_rdma_port_is_asked_for_by_interface_device_port_or_device() {
        let inv = inventory("cx3-fdr-at-qdr-datagram");
        for asked in ["ib0", "mlx4_0/1", "mlx4_0"] {
            assert_eq!(names(&inv, &[asked]), ["ib0"], "{asked}");
        }
        assert!(names(&inv, &["mlx4_0/2"]).is_empty());
    }
}
