//! What doctor knows about one end of a path, and the rate limits on its interface.

use linerate_model::Ceiling;
use serde::{Deserialize, Serialize};

use crate::inventory::{IpoibMode, PortKind, SocketLimits};
use crate::Finding;

/// A rate limit on an interface (read by `linerate_inventory::qdisc`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShaperFact {
    pub kind: String,
    pub handle: String,
    pub rate_bps: u64,
}

/// What doctor knows about one end of the path.
///
/// The other end sends its facts over the control connection, and it may run a newer linerate
/// that knows a port kind, a chain stage or a finding this one does not: such a value is read
/// as unknown (a finding is left out) rather than losing the whole end. [`crate::HostFacts`]
/// names what was left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndFacts {
    /// The interface carrying the path.
    pub netdev: Option<String>,
    /// `infiniband`, `ethernet`, `loopback`, `virtual`, ...
    #[serde(default, deserialize_with = "lenient")]
    pub port_kind: Option<PortKind>,
    pub mtu: Option<u32>,
    /// IPoIB: `datagram` or `connected`.
    #[serde(default, deserialize_with = "lenient")]
    pub ipoib_mode: Option<IpoibMode>,
    /// The port's ceiling chain (as probe computes it).
    #[serde(default, deserialize_with = "lenient")]
    pub ceiling: Option<Ceiling>,
    pub numa_node: Option<u32>,
    pub cpus: usize,
    pub sockets: SocketLimits,
    pub shapers: Vec<ShaperFact>,
    /// Inventory findings about this port, its PCI function, or the host.
    #[serde(default, deserialize_with = "known_findings")]
    pub findings: Vec<Finding>,
    /// The driver of the paravirtual NIC under this end's port (`virtio_net`), also under a
    /// software RDMA device: the hypervisor carries its traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paravirtual: Option<String>,
}

/// A value this version can read, else None (a newer peer's enum value, a malformed field).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// The findings this version knows; the others (a newer peer's ids) are left out.
fn known_findings<'de, D>(d: D) -> Result<Vec<Finding>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let v = Vec::<serde_json::Value>::deserialize(d)?;
    Ok(v.into_iter()
        .filter_map(|f| serde_json::from_value(f).ok())
        .collect())
}

/// An error counter that moved during the tests (interface or InfiniBand error counters), as
/// the soak's tracker reads a pair of samples: a counter that pegged at its maximum or was reset
/// by someone else says so, and its rise is then a lower bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterDelta {
    /// `mlx4_0/1 symbol_error`, `eth0 rx_crc_errors`.
    pub name: String,
    /// The rise seen during the tests.
    pub delta: u64,
    /// The true rise may be larger: the counter pegged at its maximum, or was reset, during the
    /// tests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_least: bool,
    /// What happened to it besides rising, in words (`pegged at 65535, its maximum: …`,
    /// `reset during the tests …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl CounterDelta {
    /// A counter that rose by `delta`, and nothing else.
    pub fn rose(name: impl Into<String>, delta: u64) -> Self {
        Self {
            name: name.into(),
            delta,
            at_least: false,
            note: None,
        }
    }

    /// The rise in words: `12`, or `at least 12 (pegged at 15, …)`.
    pub fn amount(&self) -> String {
        let n = if self.at_least {
            format!("at least {}", self.delta)
        } else {
            self.delta.to_string()
        };
        match &self.note {
            Some(note) => format!("{n} ({note})"),
            None => n,
        }
    }
}
