//! The samples of a soak (`linerate soak`): what one end reads every interval. They travel in
//! `soak_sample` messages, so they live with the protocol; `linerate-soak` re-exports them.
//!
//! What one end reads every interval. Raw counter values, never reset: the judge works on
//! deltas between samples of the same end (the two ends' clocks are not assumed to agree).

use linerate_facts::{CounterSource, PhyGauges};
use serde::{Deserialize, Serialize};

/// Which end of the link took a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The host running `linerate soak`.
    Local,
    /// The `linerate serve` end, sampled there and sent over the control connection.
    Remote,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SoakPortKind {
    Infiniband {
        /// The speed's name from the rate file (`QDR`, `FDR`, `HDR`...), when it has one.
        speed: Option<String>,
        /// Signalling rate of the port (all lanes), Gb/s: the basis of the BER budget.
        signalling_gbps: Option<f64>,
    },
    Ethernet {
        /// `speed` of the netdev, Mb/s (10^6 bit/s), when the link reports one.
        speed_mbps: Option<u64>,
        /// The port carries RoCE (an RDMA device sits on it).
        roce: bool,
    },
}

/// One port's counters at one instant. `device` and `port` are the labels node_exporter's
/// infiniband collector uses (`mlx4_0`, `1`); for a netdev without an RDMA device, `device`
/// is the interface name and `port` is empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortSample {
    pub device: String,
    pub port: String,
    /// The netdev on this port, when it has one.
    pub netdev: Option<String>,
    pub kind: SoakPortKind,
    /// (source, counter name, raw value), in the order read. Where each is read, its width and
    /// who judges it: `linerate_facts::CounterDef`.
    pub counters: Vec<(CounterSource, String, u64)>,
    /// The NIC's temperatures and the module's diagnostics, in the samples that read them (at
    /// most every `linerate_facts::PHY_SAMPLE_PERIOD_S`; absent between, and from a peer of an
    /// earlier release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<PhyGauges>,
}

/// Everything one end read at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakSample {
    pub end: End,
    /// Consecutive per end, from 0.
    pub seq: u64,
    /// Seconds since this end's soak started, on this end's monotonic clock.
    pub t_s: f64,
    pub ports: Vec<PortSample>,
    /// Host-wide TCP retransmitted segments (`TcpRetransSegs` of /proc/net/snmp), raw.
    pub tcp_retrans_segs: Option<u64>,
    /// Host-wide TCP segments sent (`TcpOutSegs`, retransmissions excluded), raw: the basis of
    /// the retransmitted share. Absent from a peer of an earlier release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_out_segs: Option<u64>,
    /// Bytes this end's traffic engines sent and received since the previous sample.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Problems reading the counters (a file that vanished, an ioctl refused), named.
    pub problems: Vec<String>,
    /// Host-wide counters (`/proc/net/snmp`, ...) but the two above that travel in fields of
    /// their own: (source, name, raw value). Absent from a peer of an earlier release, and
    /// ignored by one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host: Vec<(CounterSource, String, u64)>,
}

/// The host-wide counters that travel in fields of their own (`tcp_retrans_segs`,
/// `tcp_out_segs`), as their peers of earlier releases send them.
const IN_FIELDS: [(CounterSource, &str); 2] = [
    (CounterSource::Snmp, "TcpRetransSegs"),
    (CounterSource::Snmp, "TcpOutSegs"),
];

impl SoakSample {
    /// A sample of nothing yet: no port, no host counter, no bytes.
    pub fn new(end: End, seq: u64, t_s: f64) -> Self {
        Self {
            end,
            seq,
            t_s,
            ports: Vec::new(),
            tcp_retrans_segs: None,
            tcp_out_segs: None,
            bytes_sent: 0,
            bytes_received: 0,
            problems: Vec::new(),
            host: Vec::new(),
        }
    }

    /// Records host-wide counter `name` of `source`: in its own field for the two that have
    /// one, else in [`SoakSample::host`].
    pub fn set_host(&mut self, source: CounterSource, name: &str, value: u64) {
        match IN_FIELDS.iter().position(|k| *k == (source, name)) {
            Some(0) => self.tcp_retrans_segs = Some(value),
            Some(_) => self.tcp_out_segs = Some(value),
            None => self.host.push((source, name.to_string(), value)),
        }
    }

    /// Every host-wide counter of the sample, those in fields of their own first.
    pub fn host_counters(&self) -> impl Iterator<Item = (CounterSource, &str, u64)> {
        let fields = [self.tcp_retrans_segs, self.tcp_out_segs];
        IN_FIELDS
            .iter()
            .zip(fields)
            .filter_map(|((s, n), v)| v.map(|v| (*s, *n, v)))
            .chain(self.host.iter().map(|(s, n, v)| (*s, n.as_str(), *v)))
    }
}
