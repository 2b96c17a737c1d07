//! The samples of a soak (`linerate soak`): what one end reads every interval. They travel in
//! `soak_sample` messages, so they live with the protocol; `linerate-soak` re-exports them.
//!
//! What one end reads every interval. Raw counter values, never reset: the judge works on
//! deltas between samples of the same end (the two ends' clocks are not assumed to agree).

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

/// Where a counter was read. The width (and so the saturation value) of a counter follows
/// from its source and name: the PMA counters under `counters/` are 4, 8, 16 or 32 bits (the
/// data counters 64 with the extended attribute), everything else is 64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterSource {
    /// `/sys/class/infiniband/<dev>/ports/<n>/counters/<name>`
    IbCounters,
    /// `/sys/class/infiniband/<dev>/ports/<n>/hw_counters/<name>` (mlx5)
    IbHwCounters,
    /// `/sys/class/net/<if>/statistics/<name>`
    NetdevStatistics,
    /// `/sys/class/net/<if>/{carrier_changes,carrier_up_count,carrier_down_count}`
    Carrier,
    /// The driver's statistics through the SIOCETHTOOL ioctl (`ethtool -S`).
    Ethtool,
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
    /// (source, counter name, raw value), in the order read.
    pub counters: Vec<(CounterSource, String, u64)>,
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
}
