//! Fleet findings: what the nodes' inventories say side by side. A node whose firmware, PCIe
//! link, MTU, IPoIB mode, link rate, card, kernel, CPU governor or TCP buffer maxima differ
//! from the majority is named with both values, and so is a node whose egress or ingress rate
//! limit (a shaper on the data port) is below the majority's or that has one where the majority
//! has none; every probe finding of every node is listed,
//! grouped by id. The verdicts use the differences to explain a degraded node.

use std::collections::BTreeMap;

use linerate_units::{bps_to_gbps, fmt_num};
use serde::{Deserialize, Serialize};

use crate::types::{NodeFacts, RankId, ShaperDirection};

/// What the nodes are compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FleetAttribute {
    EgressLimit,
    IngressLimit,
    LinkRate,
    PcieLink,
    Card,
    Mtu,
    IpoibMode,
    Firmware,
    Governor,
    TcpRmemMax,
    TcpWmemMax,
    Kernel,
}

impl FleetAttribute {
    pub const ALL: [FleetAttribute; 12] = [
        FleetAttribute::EgressLimit,
        FleetAttribute::IngressLimit,
        FleetAttribute::LinkRate,
        FleetAttribute::PcieLink,
        FleetAttribute::Card,
        FleetAttribute::Mtu,
        FleetAttribute::IpoibMode,
        FleetAttribute::Firmware,
        FleetAttribute::Governor,
        FleetAttribute::TcpRmemMax,
        FleetAttribute::TcpWmemMax,
        FleetAttribute::Kernel,
    ];

    /// The id of its fleet finding: `fleet.pcie_link`.
    pub fn id(self) -> &'static str {
        match self {
            Self::EgressLimit => "fleet.egress_limit",
            Self::IngressLimit => "fleet.ingress_limit",
            Self::LinkRate => "fleet.link_rate",
            Self::PcieLink => "fleet.pcie_link",
            Self::Card => "fleet.card",
            Self::Mtu => "fleet.mtu",
            Self::IpoibMode => "fleet.ipoib_mode",
            Self::Firmware => "fleet.firmware",
            Self::Governor => "fleet.governor",
            Self::TcpRmemMax => "fleet.tcp_rmem_max",
            Self::TcpWmemMax => "fleet.tcp_wmem_max",
            Self::Kernel => "fleet.kernel",
        }
    }

    /// The value as a reader sees it: `PCIe 5.0 GT/s x4`, `MTU 1500`.
    pub fn describe(self, value: &str) -> String {
        match self {
            Self::EgressLimit | Self::IngressLimit => {
                let dir = self.direction().map_or("", ShaperDirection::as_str);
                match value.parse::<u64>() {
                    Ok(bps) => format!("an {dir} limit of {}", fmt_rate(bps)),
                    Err(_) => format!("no {dir} limit"),
                }
            }
            Self::LinkRate => format!("a {value} Gb/s link"),
            Self::PcieLink => format!("PCIe at {value}"),
            Self::Card => format!("card {value}"),
            Self::Mtu => format!("MTU {value}"),
            Self::IpoibMode => format!("IPoIB in {value} mode"),
            Self::Firmware => format!("firmware {value}"),
            Self::Governor => format!("CPU governor {value}"),
            Self::TcpRmemMax => format!("tcp_rmem max {value} B"),
            Self::TcpWmemMax => format!("tcp_wmem max {value} B"),
            Self::Kernel => format!("kernel {value}"),
        }
    }

    /// This attribute's value on a node, as compared (`None`: not known there).
    pub fn value(self, n: &NodeFacts) -> Option<String> {
        let port = n.port.as_ref();
        match self {
            Self::EgressLimit | Self::IngressLimit => {
                let dir = self.direction()?;
                let lowest = n
                    .shapers
                    .as_ref()?
                    .iter()
                    .filter(|s| s.direction == dir)
                    .map(|s| s.rate_bps)
                    .min();
                Some(lowest.map_or_else(|| NO_LIMIT.to_string(), |b| b.to_string()))
            }
            Self::LinkRate => port.and_then(|p| p.link_gbps).map(fmt_num),
            Self::PcieLink => port.and_then(|p| p.pcie_current.clone()),
            Self::Card => port.and_then(|p| p.card.clone()),
            Self::Mtu => port.and_then(|p| p.mtu).map(|m| m.to_string()),
            Self::IpoibMode => port.and_then(|p| p.ipoib_mode.clone()),
            Self::Firmware => port.and_then(|p| p.firmware.clone()),
            Self::Governor => n.governor.clone(),
            Self::TcpRmemMax => n.tcp_rmem_max.map(|v| v.to_string()),
            Self::TcpWmemMax => n.tcp_wmem_max.map(|v| v.to_string()),
            Self::Kernel => n.kernel.clone(),
        }
    }

    /// The direction of a rate-limit attribute.
    pub fn direction(self) -> Option<ShaperDirection> {
        match self {
            Self::EgressLimit => Some(ShaperDirection::Egress),
            Self::IngressLimit => Some(ShaperDirection::Ingress),
            _ => None,
        }
    }
}

/// The id of a fleet finding: `fleet.<attribute>` for a group of nodes that differs from the
/// majority, `fleet.below_ceiling` for the fleet against its ceilings, or a probe finding's id
/// ([findings.md](../../../docs/findings.md)) as a node reported it. Written and read as the
/// string; a string that names none of the fleet's own ids is a probe finding's (a newer
/// rank's ids are kept as they came).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FleetId {
    Attribute(FleetAttribute),
    BelowCeiling,
    Probe(String),
}

impl FleetId {
    /// Every id the fleet comparison itself gives (not the probe findings'): the ids
    /// `docs/mesh.md` and `schemas/mesh.schema.json` must list.
    pub fn own() -> Vec<FleetId> {
        FleetAttribute::ALL
            .iter()
            .map(|&a| FleetId::Attribute(a))
            .chain([FleetId::BelowCeiling])
            .collect()
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Attribute(a) => a.id(),
            Self::BelowCeiling => "fleet.below_ceiling",
            Self::Probe(id) => id,
        }
    }

    /// The id `s` names: one of the fleet's own, else a probe finding's.
    pub fn parse(s: &str) -> FleetId {
        Self::own()
            .into_iter()
            .find(|id| id.as_str() == s)
            .unwrap_or_else(|| FleetId::Probe(s.to_string()))
    }
}

impl std::fmt::Display for FleetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for FleetId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FleetId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for FleetId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FleetId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(FleetId::parse(&s))
    }
}

/// The value of a rate-limit attribute on a node with no shaper in that direction.
pub const NO_LIMIT: &str = "none";

/// `0.3 Gb/s`: a shaper's rate (bit/s) as the reports write rates.
pub fn fmt_rate(bps: u64) -> String {
    format!("{} Gb/s", fmt_num(bps_to_gbps(bps as f64)))
}

/// A rate-limit value as a number to compare: no limit is the highest.
fn limit_bps(value: &str) -> u64 {
    value.parse().unwrap_or(u64::MAX)
}

/// One fleet finding: a group of nodes that differs from the majority (`attribute` set), a
/// probe finding and the nodes that have it (`attribute` none, `id` the probe finding's), or a
/// remark on the whole fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetFinding {
    pub id: FleetId,
    pub attribute: Option<FleetAttribute>,
    pub ranks: Vec<RankId>,
    pub hosts: Vec<String>,
    /// The group's value, and the majority's (differences only).
    pub value: Option<String>,
    pub majority: Option<String>,
    /// How many nodes hold the majority value, and how many were compared.
    pub majority_count: Option<u32>,
    pub compared: Option<u32>,
    pub message: String,
}

/// `node01, node02 and 3 more`: a readable list of hosts.
pub(crate) fn host_list(hosts: &[String]) -> String {
    const SHOWN: usize = 6;
    if hosts.len() <= SHOWN {
        hosts.join(", ")
    } else {
        format!(
            "{} and {} more",
            hosts[..SHOWN].join(", "),
            hosts.len() - SHOWN
        )
    }
}

/// The differences of one attribute: one finding per minority value, or one `mixed` finding
/// when no value holds more nodes than every other.
fn differences(attr: FleetAttribute, nodes: &[NodeFacts]) -> Vec<FleetFinding> {
    let mut groups: BTreeMap<String, Vec<&NodeFacts>> = BTreeMap::new();
    for n in nodes {
        if let Some(v) = attr.value(n) {
            groups.entry(v).or_default().push(n);
        }
    }
    if groups.len() < 2 {
        return Vec::new();
    }
    let compared: usize = groups.values().map(Vec::len).sum();
    let top = groups.values().map(Vec::len).max().unwrap_or(0);
    let leaders: Vec<&String> = groups
        .iter()
        .filter(|(_, g)| g.len() == top)
        .map(|(v, _)| v)
        .collect();
    let ranks_hosts = |g: &[&NodeFacts]| -> (Vec<RankId>, Vec<String>) {
        (
            g.iter().map(|n| n.rank).collect(),
            g.iter().map(|n| n.host.clone()).collect(),
        )
    };
    if leaders.len() > 1 {
        let parts: Vec<String> = groups
            .iter()
            .map(|(v, g)| format!("{} on {}", attr.describe(v), host_list(&ranks_hosts(g).1)))
            .collect();
        let all: Vec<&NodeFacts> = groups.values().flatten().copied().collect();
        let (ranks, hosts) = ranks_hosts(&all);
        return vec![FleetFinding {
            id: FleetId::Attribute(attr),
            attribute: Some(attr),
            ranks,
            hosts,
            value: None,
            majority: None,
            majority_count: None,
            compared: Some(compared as u32),
            message: format!("no majority: {}", parts.join("; ")),
        }];
    }
    let majority = leaders[0].clone();
    groups
        .iter()
        .filter(|(v, _)| **v != majority)
        // A rate limit is a finding only where it is lower than the majority's (or the
        // majority has none): a node without the fleet's shaper is not slower for it.
        .filter(|(v, _)| attr.direction().is_none() || limit_bps(v) < limit_bps(&majority))
        .map(|(v, g)| {
            let (ranks, hosts) = ranks_hosts(g);
            let others = others_phrase(top, compared - g.len());
            FleetFinding {
                id: FleetId::Attribute(attr),
                attribute: Some(attr),
                message: format!(
                    "{} {} {}, {others} {}",
                    host_list(&hosts),
                    if g.len() == 1 { "has" } else { "have" },
                    attr.describe(v),
                    attr.describe(&majority)
                ),
                ranks,
                hosts,
                value: Some(v.clone()),
                majority: Some(majority.clone()),
                majority_count: Some(top as u32),
                compared: Some(compared as u32),
            }
        })
        .collect()
}

/// `the other 15 nodes` or `13 of the other 15 nodes`.
pub(crate) fn others_phrase(majority: usize, others: usize) -> String {
    let noun = if others == 1 { "node" } else { "nodes" };
    if majority == others {
        format!("the other {others} {noun}")
    } else {
        format!("{majority} of the other {others} {noun}")
    }
}

/// The nodes' probe findings, one fleet finding per id with the nodes that have it.
fn probe_findings(nodes: &[NodeFacts]) -> Vec<FleetFinding> {
    let mut by_id: BTreeMap<&str, Vec<(&NodeFacts, &str)>> = BTreeMap::new();
    for n in nodes {
        for (id, msg) in &n.findings {
            let list = by_id.entry(id.as_str()).or_default();
            // One entry per node and id (a node can have the finding on several ports).
            if !list.iter().any(|(m, _)| m.rank == n.rank) {
                list.push((n, msg.as_str()));
            }
        }
    }
    by_id
        .into_iter()
        .map(|(id, list)| {
            let hosts: Vec<String> = list.iter().map(|(n, _)| n.host.clone()).collect();
            let (first, msg) = list[0];
            let message = if list.len() == 1 {
                format!("{}: {msg}", first.host)
            } else {
                format!(
                    "on {} of {} nodes ({}); on {}: {msg}",
                    list.len(),
                    nodes.len(),
                    host_list(&hosts),
                    first.host
                )
            };
            FleetFinding {
                id: FleetId::Probe(id.to_string()),
                attribute: None,
                ranks: list.iter().map(|(n, _)| n.rank).collect(),
                hosts,
                value: None,
                majority: None,
                majority_count: None,
                compared: Some(nodes.len() as u32),
                message,
            }
        })
        .collect()
}

/// Every difference from the majority (in the order of [`FleetAttribute::ALL`]), then every
/// probe finding grouped by id.
pub fn fleet_findings(nodes: &[NodeFacts]) -> Vec<FleetFinding> {
    let mut out: Vec<FleetFinding> = FleetAttribute::ALL
        .iter()
        .flat_map(|&a| differences(a, nodes))
        .collect();
    out.extend(probe_findings(nodes));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::PortFacts;

    pub(crate) fn node(rank: RankId, pcie: &str, mtu: u32) -> NodeFacts {
        NodeFacts {
            rank,
            host: format!("node{rank:02}"),
            port: Some(PortFacts {
                name: "ib0".into(),
                card: Some("ConnectX-3 (MT27500)".into()),
                pcie_current: Some(pcie.into()),
                mtu: Some(mtu),
                link_gbps: Some(56.25),
                ceiling_gbps: Some(40.0),
                ..PortFacts::default()
            }),
            governor: Some("performance".into()),
            ..NodeFacts::default()
        }
    }

    #[test]
    fn the_odd_node_out_is_named_with_both_values() {
        let mut nodes: Vec<NodeFacts> = (0..16).map(|r| node(r, "8.0 GT/s x8", 65520)).collect();
        nodes[7] = node(7, "5.0 GT/s x4", 65520);
        let f = fleet_findings(&nodes);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].id.as_str(), "fleet.pcie_link");
        assert_eq!(f[0].ranks, [7]);
        assert_eq!(f[0].value.as_deref(), Some("5.0 GT/s x4"));
        assert_eq!(f[0].majority.as_deref(), Some("8.0 GT/s x8"));
        assert_eq!(
            f[0].message,
            "node07 has PCIe at 5.0 GT/s x4, the other 15 nodes PCIe at 8.0 GT/s x8"
        );
    }

    #[test]
    fn a_tie_is_reported_as_mixed_and_unknown_values_are_not_compared() {
        let mut nodes: Vec<NodeFacts> = (0..4).map(|r| node(r, "8.0 GT/s x8", 2044)).collect();
        nodes[2].port.as_mut().unwrap().mtu = Some(65520);
        nodes[3].port.as_mut().unwrap().mtu = Some(65520);
        nodes[1].governor = None;
        let f = fleet_findings(&nodes);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].message.starts_with(
                "no majority: MTU 2044 on node00, node01; MTU 65520 on node02, node03"
            ),
            "{}",
            f[0].message
        );
    }

    fn shaped(mut n: NodeFacts, egress: Option<u64>, ingress: Option<u64>) -> NodeFacts {
        use crate::types::NodeShaper;
        let mut v = Vec::new();
        for (direction, rate, via) in [
            (ShaperDirection::Egress, egress, None),
            (ShaperDirection::Ingress, ingress, Some("ifb0".to_string())),
        ] {
            if let Some(rate_bps) = rate {
                v.push(NodeShaper {
                    direction,
                    netdev: "eth0".into(),
                    via,
                    kind: "tbf".into(),
                    rate_bps,
                });
            }
        }
        n.shapers = Some(v);
        n
    }

    #[test]
    fn a_lower_limit_or_one_the_majority_lacks_is_a_finding_a_missing_one_is_not() {
        const G: u64 = 1_000_000_000;
        let mut nodes: Vec<NodeFacts> = (0..8)
            .map(|r| shaped(node(r, "8.0 GT/s x8", 1500), Some(G), None))
            .collect();
        nodes[5] = shaped(node(5, "8.0 GT/s x8", 1500), Some(300_000_000), None);
        nodes[6] = shaped(node(6, "8.0 GT/s x8", 1500), Some(G), Some(300_000_000));
        // No egress shaper at all, and one whose shapers were not read: neither is a finding.
        nodes[3] = shaped(node(3, "8.0 GT/s x8", 1500), None, None);
        nodes[4].shapers = None;
        let f = fleet_findings(&nodes);
        let msgs: Vec<(&str, &str)> = f
            .iter()
            .map(|f| (f.id.as_str(), f.message.as_str()))
            .collect();
        assert_eq!(
            msgs,
            [
                (
                    "fleet.egress_limit",
                    "node05 has an egress limit of 0.3 Gb/s, 5 of the other 6 nodes an egress limit of 1 Gb/s"
                ),
                (
                    "fleet.ingress_limit",
                    "node06 has an ingress limit of 0.3 Gb/s, the other 6 nodes no ingress limit"
                ),
            ]
        );
        assert_eq!(f[0].ranks, [5]);
        assert_eq!(f[1].value.as_deref(), Some("300000000"));
        assert_eq!(f[1].majority.as_deref(), Some(NO_LIMIT));
    }

    #[test]
    fn three_groups_and_probe_findings() {
        let mut nodes: Vec<NodeFacts> = (0..5).map(|r| node(r, "8.0 GT/s x8", 4092)).collect();
        nodes[3].port.as_mut().unwrap().mtu = Some(2044);
        nodes[4].port.as_mut().unwrap().mtu = Some(1500);
        nodes[1].findings = vec![("tcp.buffers_small".into(), "host: small".into())];
        nodes[2].findings = vec![
            ("tcp.buffers_small".into(), "host: small".into()),
            ("tcp.buffers_small".into(), "host: again".into()),
        ];
        let f = fleet_findings(&nodes);
        let msgs: Vec<&str> = f.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "node04 has MTU 1500, 3 of the other 4 nodes MTU 4092",
                "node03 has MTU 2044, 3 of the other 4 nodes MTU 4092",
                "on 2 of 5 nodes (node01, node02); on node01: host: small"
            ]
        );
        assert_eq!(f[2].ranks, [1, 2]);
        assert!(fleet_findings(&nodes[..1]).is_empty());
    }
}
