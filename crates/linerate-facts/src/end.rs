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
    /// The optic in this end's port and the light it measures per lane, for doctor to set one
    /// end's Rx against the other's Tx. None without a module that reports its diagnostics
    /// (a copper cable, no module, an older peer).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub optics: Option<OpticsEnd>,
    /// The FEC this end's port runs (`ethtool --show-fec`), for doctor to compare the two
    /// ends. None on a virtual port, a driver without FEC, or an older peer.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub fec: Option<FecEnd>,
}

/// An end's FEC as doctor compares it with the other end's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FecEnd {
    /// The mode running on the link now (never `auto`: that is a configuration, not a mode).
    pub active: crate::FecMode,
    /// The link's speed, Mb/s, when the netdev says.
    pub speed_mbps: Option<u32>,
    /// Blocks FEC could not correct since the driver's counters started.
    pub uncorrectable_blocks: Option<u64>,
}

/// An end's optic as doctor compares it with the other end's: its name, each lane's Tx and Rx
/// power and the module's own power thresholds (`ethtool -m`'s diagnostics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpticsEnd {
    /// Vendor, part number and form factor, as probe names it.
    pub module: String,
    pub lanes: Vec<crate::LaneDiagnostics>,
    pub tx_power_thresholds_mw: Option<crate::Thresholds>,
    pub rx_power_thresholds_mw: Option<crate::Thresholds>,
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

/// Where a queueing discipline sits on its end of the path, and so which of the end's traffic
/// it queues and drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QdiscSide {
    /// The interface's root tree (netem, tbf, htb, fq_codel, pfifo, a policer's filter on a
    /// classful qdisc): what this end sends.
    Egress,
    /// Its `ingress` qdisc (a policer's filters), or the root tree of an ifb its ingress
    /// redirects to: what this end receives.
    Ingress,
    /// `clsact`: its filters see both ways, and one counter counts both.
    Both,
    /// A value of a newer peer.
    #[serde(other)]
    Unknown,
}

impl QdiscSide {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Egress => "egress",
            Self::Ingress => "ingress",
            Self::Both => "both",
            Self::Unknown => "unknown",
        }
    }
}

/// A queueing discipline on an end's test interface, and what its counters (`tc -s qdisc`:
/// packets sent, dropped, over limit, requeued) rose by during a test, or during doctor's tests.
/// netem's losses, a tbf's or a full fifo's drops and a policer's all count as `drops`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QdiscDelta {
    /// The interface it is on: the test's, or an ifb its ingress redirects to.
    pub interface: String,
    /// `netem`, `tbf`, `htb`, `fq_codel`, `pfifo`, `ingress`, `clsact`, ...
    pub kind: String,
    /// Its handle as tc prints it (`8001:`).
    pub handle: String,
    /// `root`, `ingress` (the ingress hook: `ingress` and `clsact`), or the class it hangs
    /// from (`1:10`).
    pub parent: String,
    pub side: QdiscSide,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// A counter went back during the test (the qdisc was replaced): the figures count from
    /// then, a lower bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset: bool,
    /// A netem qdisc configured to reorder (`reorder`, or a `gap`): its requeues are then
    /// mostly the packets it sent ahead of their turn (netem counts each as a requeue; a
    /// driver whose ring is full also makes any root qdisc requeue).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reorders: bool,
    /// doctor: the tests during which its counters rose, in words (`TCP send, 1 stream`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<String>,
}

impl QdiscDelta {
    /// The qdisc in words without a colon (the verdict quotes a message up to its first colon):
    /// `the tbf qdisc 8001 on the local veth0`.
    pub fn words(&self, end: &str) -> String {
        format!(
            "the {} qdisc {} on the {end} {}",
            self.kind,
            self.handle.trim_end_matches(':'),
            self.interface
        )
    }

    /// The packets it was handed: those it passed on and those it dropped.
    pub fn passed(&self) -> u64 {
        self.packets.saturating_add(self.drops)
    }

    /// The share of what it was handed that it dropped (0 when it was handed nothing).
    pub fn drop_fraction(&self) -> f64 {
        self.drops as f64 / self.passed().max(1) as f64
    }

    /// The same qdisc (interface, kind, handle and parent) as `other`.
    pub fn same_qdisc(&self, other: &QdiscDelta) -> bool {
        self.interface == other.interface
            && self.kind == other.kind
            && self.handle == other.handle
            && self.parent == other.parent
    }

    /// Adds what `other`, the same qdisc in a later test, counted (saturating: a peer's
    /// figures may be hostile).
    pub fn add(&mut self, other: &QdiscDelta) {
        self.packets = self.packets.saturating_add(other.packets);
        self.drops = self.drops.saturating_add(other.drops);
        self.overlimits = self.overlimits.saturating_add(other.overlimits);
        self.requeues = self.requeues.saturating_add(other.requeues);
        self.reset |= other.reset;
        self.reorders |= other.reorders;
    }
}

/// One host's UDP receive counters over a test, host-wide: `/proc/net/snmp`'s `Udp:` lines and
/// `/proc/net/snmp6`'s `Udp6` ones (IPv4 and IPv6 together). Every UDP socket of the host
/// counts here, the test's and any other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpReceive {
    /// Datagrams delivered to sockets (`InDatagrams`).
    pub in_datagrams: u64,
    /// Datagrams dropped because the receiving socket's buffer was full (`RcvbufErrors`).
    pub rcvbuf_errors: u64,
    /// Every datagram dropped on receive (`InErrors`: the buffer drops above, bad checksums,
    /// no memory).
    pub in_errors: u64,
}

impl UdpReceive {
    /// What the counters rose by from `before` to `self` (0 for one that went back: reset).
    #[must_use]
    pub fn since(&self, before: &UdpReceive) -> UdpReceive {
        UdpReceive {
            in_datagrams: self.in_datagrams.saturating_sub(before.in_datagrams),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(before.rcvbuf_errors),
            in_errors: self.in_errors.saturating_sub(before.in_errors),
        }
    }
}

/// Both ends' UDP receive counters over a UDP test ([`UdpReceive`]). `None`: that end's were
/// not read (an older server, a stock iperf3 server, `/proc` unreadable). A server on this host
/// counts this host's: its figures are then this end's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpReceiveSeen {
    pub local: Option<UdpReceive>,
    pub remote: Option<UdpReceive>,
}

/// The qdiscs of both ends that counted something during doctor's tests. `None`: that end's were
/// not read (a far end that does not send them: an older `linerate serve`, a stock iperf3
/// server; or rtnetlink could not be read); empty: read, and none counted a drop, an overlimit
/// or a requeue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QdiscsSeen {
    pub local: Option<Vec<QdiscDelta>>,
    pub remote: Option<Vec<QdiscDelta>>,
}

impl QdiscsSeen {
    /// Each end (`local`, `remote`) with its qdiscs that were read.
    pub fn ends(&self) -> impl Iterator<Item = (&'static str, &QdiscDelta)> {
        let l = self.local.iter().flatten().map(|q| ("local", q));
        let r = self.remote.iter().flatten().map(|q| ("remote", q));
        l.chain(r)
    }
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
