//! Messages. Adding an optional field is compatible; anything else bumps [`PROTOCOL_VERSION`],
//! except a message only sent inside a test that an older peer cannot request or accept
//! (`soak_sample`: only in a test with `params.soak`, which an older server refuses as an
//! unknown field, and which an older client never asks for).

use linerate_facts::{HostFacts, QdiscDelta, UdpReceive};
use serde::{Deserialize, Serialize};

use crate::soak::SoakSample;

use crate::{RefusalKind, TestParams};

/// Sent in every Hello so a stray client of another protocol is recognised at once.
pub const MAGIC: &str = "linerate";
/// Version of this protocol. A peer with another version is refused with a clear message.
pub const PROTOCOL_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Msg {
    /// Client → server, first frame of a control connection.
    Hello {
        magic: String,
        protocol: u32,
        version: String,
        /// Client nonce for mutual authentication (hex).
        nonce: String,
    },
    /// Server → client.
    ServerHello {
        protocol: u32,
        version: String,
        /// The server requires a pre-shared key.
        auth: bool,
        nonce: String,
    },
    /// Client → server: HMAC-SHA256(key, "linerate-client" ‖ server nonce ‖ client nonce), hex.
    Auth { proof: String },
    /// Server → client: HMAC-SHA256(key, "linerate-server" ‖ client nonce ‖ server nonce), hex.
    AuthOk { proof: String },
    /// Client → server: run this test.
    Request { params: TestParams },
    /// Server → client.
    Accepted {
        test_id: u64,
        /// Data connections present this to attach to the test.
        cookie: String,
        /// UDP tests: the server's UDP port.
        udp_port: Option<u16>,
        /// Bytes of buffer the server holds for this test.
        memory_bytes: u64,
        /// What the server says about itself and its interface on the path, if known. Read
        /// leniently: a peer's unknown fields and findings are named, never fatal.
        inventory: Option<Box<HostFacts>>,
        /// RDMA tests: where the server's libfabric listens, one port per queue pair.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rdma: Option<RdmaListen>,
        /// Tests whose client connects per transaction (`tcp_crr`): the TCP port of the
        /// server's listener for the test, on the control connection's address.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        listen_port: Option<u16>,
    },
    /// Server → client: the request was not accepted; the reason says which limit.
    Refused {
        reason: String,
        /// What kind of refusal (absent from older servers: `other`).
        #[serde(default)]
        kind: RefusalKind,
    },
    /// First frame of a data connection.
    DataHello { cookie: String, stream: u32 },
    /// Client → server: every data connection is up; go.
    Start,
    /// Live figures from the server's side, one per interval.
    Interval { sample: IntervalSample },
    /// A soak: the server's port counters (`End::Remote`), at the start and after each
    /// interval, following that interval's `interval`.
    SoakSample { sample: SoakSample },
    /// Client → server: the client's part is finished.
    Done,
    /// Measurements of one side, exchanged at the end (server first).
    Results { results: SideResults },
    /// Either way: a fatal problem, then the connection closes.
    Error { message: String },
}

impl Msg {
    /// The wire name of the message (its `type` field).
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "hello",
            Msg::ServerHello { .. } => "server_hello",
            Msg::Auth { .. } => "auth",
            Msg::AuthOk { .. } => "auth_ok",
            Msg::Request { .. } => "request",
            Msg::Accepted { .. } => "accepted",
            Msg::Refused { .. } => "refused",
            Msg::DataHello { .. } => "data_hello",
            Msg::Start => "start",
            Msg::Interval { .. } => "interval",
            Msg::SoakSample { .. } => "soak_sample",
            Msg::Done => "done",
            Msg::Results { .. } => "results",
            Msg::Error { .. } => "error",
        }
    }
}

/// The server's RDMA listeners for a test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaListen {
    /// One per queue pair, on the control connection's address (tcp provider: TCP ports;
    /// verbs: rdma_cm ports on the IPoIB/RoCE address).
    pub ports: Vec<u16>,
    pub provider: String,
    /// The device (verbs: `mlx5_0`).
    pub domain: String,
}

/// What the RDMA target saw (the server's side of an RDMA test).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RdmaTargetStats {
    pub provider: String,
    pub domain: String,
    /// Messages the target received or checked, and their bytes.
    pub messages: u64,
    pub bytes: u64,
    /// Bytes that did not match the pattern (`--verify`).
    pub verify_errors: u64,
}

/// One interval on one side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    pub start_s: f64,
    pub end_s: f64,
    /// Bytes moved in the interval, per stream (sent by a sender, received by a receiver).
    pub bytes: Vec<u64>,
    /// Retransmits in the interval, all streams (TCP sender only).
    pub retransmits: Option<u64>,
    /// UDP receiver: packets lost in the interval.
    pub lost: Option<u64>,
    /// True for intervals inside the --omit warm-up.
    pub omitted: bool,
}

impl IntervalSample {
    /// Seconds the interval lasted.
    pub fn seconds(&self) -> f64 {
        self.end_s - self.start_s
    }

    /// This interval and the one after it as one: from this start to its end, with the
    /// counts added (saturating: a peer's figures may be hostile). Warm-up only when both were.
    #[must_use]
    pub fn merged_with(&self, next: &IntervalSample) -> IntervalSample {
        let n = self.bytes.len().max(next.bytes.len());
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
        };
        IntervalSample {
            start_s: self.start_s,
            end_s: next.end_s,
            bytes: (0..n)
                .map(|i| at(&self.bytes, i).saturating_add(at(&next.bytes, i)))
                .collect(),
            retransmits: add(self.retransmits, next.retransmits),
            lost: add(self.lost, next.lost),
            omitted: self.omitted && next.omitted,
        }
    }

    /// `samples` with every interval shorter than [`defaults::MIN_INTERVAL_FRACTION`] of
    /// `every_s` (the requested interval) merged with its neighbour: the one before, or for a
    /// short first interval the one after. Whatever a peer sent, no rate is then taken over a
    /// few milliseconds.
    ///
    /// [`defaults::MIN_INTERVAL_FRACTION`]: crate::defaults::MIN_INTERVAL_FRACTION
    pub fn merge_short(samples: &[IntervalSample], every_s: f64) -> Vec<IntervalSample> {
        let min = every_s * crate::defaults::MIN_INTERVAL_FRACTION;
        let mut out: Vec<IntervalSample> = Vec::with_capacity(samples.len());
        for s in samples {
            match out.last_mut() {
                Some(prev) if s.seconds() < min => *prev = prev.merged_with(s),
                // A short first interval waits for the next one.
                Some(prev) if prev.seconds() < min => *prev = prev.merged_with(s),
                _ => out.push(s.clone()),
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpStats {
    pub retransmits: u64,
    /// Smoothed round trip and its variance, µs (TCP_INFO).
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// Congestion window in segments, and the segment size in bytes.
    pub cwnd: u32,
    pub mss: u32,
    /// Data segments sent (TCP_INFO tcpi_data_segs_out), for the on-wire rate.
    pub data_segs_out: u64,
    /// What held the sender back, from the kernel's own accounting (None: kernel < 4.10).
    #[serde(default)]
    pub limited: Option<TcpLimited>,
    /// Segments the receiver reported by D-SACK as duplicates (TCP_INFO `tcpi_dsack_dups`,
    /// Linux ≥ 4.19): retransmits TCP itself found spurious, the original having arrived.
    /// None: an older kernel or release, which did not send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsack_dups: Option<u64>,
}

/// TCP_INFO's chrono times of a sending socket, µs since it opened: how long it had data to
/// send (`busy`), and how much of that it waited on the peer's receive window or on its own
/// send buffer (`tcpi_busy_time`, `tcpi_rwnd_limited`, `tcpi_sndbuf_limited`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpLimited {
    pub busy_us: u64,
    pub rwnd_us: u64,
    pub sndbuf_us: u64,
}

/// A UDP stream's counts. They run from the start of the test, warm-up included, as they
/// always have on the wire; a receiver's `warmup` says how much of them was the warm-up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpStats {
    pub packets: u64,
    pub lost: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// RFC 3550 interarrival jitter, µs.
    pub jitter_us: f64,
    /// A receiver's count of the warm-up (`-O`); `None` without one, from a sender, or from a
    /// release before it was sent (whose counts are then taken whole, at both ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<UdpWarmup>,
}

/// The warm-up of a UDP stream by the receiver's sequence numbers, so that both ends' counts
/// are cut at the same datagram: those numbered below `seq` were sent in the warm-up (`seq` is
/// one past the highest the receiver had seen when its warm-up ended), and `packets` of them
/// arrived (some after it ended, late).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpWarmup {
    pub seq: u64,
    pub packets: u64,
}

impl UdpStats {
    /// Distinct datagrams received after the warm-up.
    pub fn packets_after_warmup(&self) -> u64 {
        self.packets
            .saturating_sub(self.warmup.map_or(0, |w| w.packets))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    pub id: u32,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Measured seconds (after the omit period).
    pub seconds: f64,
    pub tcp: Option<TcpStats>,
    pub udp: Option<UdpStats>,
    /// CPU seconds (user + system) of the thread that moved this stream.
    pub cpu_s: f64,
    /// Bytes moved over the whole test, warm-up included (to relate TCP_INFO's whole-test counters).
    #[serde(default)]
    pub total_bytes: u64,
    /// File transfers: this stream's disk side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileStats>,
}

/// The disk side of one file-transfer stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FileStats {
    /// Bytes read from (sender) or written to (receiver) the file.
    pub disk_bytes: u64,
    /// Seconds the disk thread spent in read(2) / write(2).
    pub disk_s: f64,
    /// Seconds the network thread waited for the disk thread (sender: for a
    /// filled buffer; receiver: for a free one).
    pub net_wait_s: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    pub user_s: f64,
    pub system_s: f64,
    pub wall_s: f64,
    /// (user + system) / wall × 100: 100 is one core saturated.
    pub percent: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    pub stddev: f64,
    pub transactions: u64,
    pub lost: u64,
}

/// What one side measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideResults {
    pub streams: Vec<StreamResult>,
    pub cpu: CpuUsage,
    pub intervals: Vec<IntervalSample>,
    /// Latency tests: round-trip statistics in µs (measured by the client).
    pub latency: Option<LatencyStats>,
    /// Set when this side stopped early; what it measured until then is still here.
    pub error: Option<String>,
    /// File transfers, the server: seconds fsync(2) took at the end (None: not asked or not reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsync_s: Option<f64>,
    /// RDMA tests, the server: what its targets saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaTargetStats>,
    /// TCP latency tests: the busy-poll this side used per wait, µs (0: it blocked). The
    /// server's is the client's request capped by `serve --max-spin`; None from older servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_us: Option<u32>,
    /// What this side's host CPUs did during the test (other processes, steal, the busiest
    /// core). None from older peers, or where `/proc/stat` could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<Box<HostCpuLoad>>,
    /// Spans during which this side's streams made no progress at all (boxed, as the two
    /// fields around it: results are the largest message, kept small where absent). None from older peers
    /// and from tests that have no byte counters to watch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalls: Option<Box<Stalls>>,
    /// What the interface of this side's test address carried during the test, all traffic
    /// (this test's and anyone else's). None from older peers, or where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Box<LinkTraffic>>,
    /// The qdiscs of this side's test interface (and of an ifb its ingress redirects to) whose
    /// drops, overlimits or requeues rose during the test, with what each counted. None from
    /// older peers, or where rtnetlink cannot be read; empty: read, and none counted anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdiscs: Option<Vec<QdiscDelta>>,
    /// UDP tests: what this side's host counted on UDP receive during the test (host-wide:
    /// delivered, dropped for a full socket buffer, every receive error). None from older
    /// peers, from other tests, or where `/proc/net/snmp` cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_receive: Option<UdpReceive>,
}

/// The byte counters of one interface over a test (`/sys/class/net/IF/statistics`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkTraffic {
    /// The interface (`lo`, `eth0`).
    pub interface: String,
    pub seconds: f64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

/// A host's CPUs during one test, as `linerate_engine::hostcpu` measures them between two
/// snapshots: cores' worth (1.0 = one core for the whole test) and shares of the busiest core.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpuLoad {
    /// Seconds between the two snapshots.
    pub seconds: f64,
    /// Cores seen in `/proc/stat`.
    pub cores: u32,
    /// The busiest core, % of its time busy (tasks, interrupts and steal).
    pub busiest_core_percent: Option<f64>,
    /// Of the busiest core's time, the % other processes held at least.
    pub busiest_core_others_percent: Option<f64>,
    /// Cores' worth of CPU linerate's own processes used.
    pub own_cores: Option<f64>,
    /// Cores' worth of CPU other processes used.
    pub other_cores: Option<f64>,
    /// Cores' worth the hypervisor took (steal).
    pub steal_cores: Option<f64>,
}

/// Most stall spans one side reports (the count and total cover all of them).
pub const MAX_STALL_SPANS: usize = 32;

/// Spans with no progress on any of a side's streams, each at least the watch's resolution
/// (`linerate_engine::meter::STALL_MIN`), from the test's start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stalls {
    /// How many spans with no progress.
    pub count: u32,
    /// Their total, seconds.
    pub seconds: f64,
    /// The longest, seconds.
    pub longest_s: f64,
    /// The first [`MAX_STALL_SPANS`] of them: (start, end) in seconds from the test's start.
    pub spans: Vec<(f64, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(json: &str) -> Msg {
        serde_json::from_str(json).unwrap()
    }

    fn iv(start_s: f64, end_s: f64, bytes: u64) -> IntervalSample {
        IntervalSample {
            start_s,
            end_s,
            bytes: vec![bytes],
            retransmits: Some(1),
            ..IntervalSample::default()
        }
    }

    #[test]
    fn short_intervals_merge_with_their_neighbour() {
        // The 55 Gb/s spike: 7 MB in 1 ms between two 0.5 s intervals of 400 MB.
        let v = [
            iv(0.004, 0.5, 400_000_000),
            iv(0.5, 1.0, 400_000_000),
            iv(1.0, 1.001, 7_000_000),
            iv(1.001, 1.5, 400_000_000),
            iv(1.5, 1.6, 80_000_000),
        ];
        let m = IntervalSample::merge_short(&v, 0.5);
        let spans: Vec<(f64, f64)> = m.iter().map(|s| (s.start_s, s.end_s)).collect();
        assert_eq!(spans, [(0.004, 0.5), (0.5, 1.001), (1.001, 1.6)]);
        assert_eq!(m[1].bytes, [407_000_000]);
        assert_eq!(m[1].retransmits, Some(2));
        let total: u64 = m.iter().map(|s| s.bytes[0]).sum();
        assert_eq!(total, v.iter().map(|s| s.bytes[0]).sum::<u64>());
        // A short first interval joins the next one; a run of one short interval stays.
        let m = IntervalSample::merge_short(&[iv(0.0, 0.01, 5), iv(0.01, 0.5, 5)], 0.5);
        assert_eq!((m.len(), m[0].end_s, m[0].bytes[0]), (1, 0.5, 10));
        assert_eq!(
            IntervalSample::merge_short(&[iv(0.0, 0.01, 5)], 0.5).len(),
            1
        );
        // Hostile counts saturate; streams missing on one side count 0.
        let a = IntervalSample {
            bytes: vec![u64::MAX, 1],
            ..iv(0.0, 0.5, 0)
        };
        let b = iv(0.5, 0.6, 10);
        assert_eq!(a.merged_with(&b).bytes, [u64::MAX, 1]);
    }

    #[test]
    fn refusals_carry_their_kind() {
        let m = Msg::Refused {
            reason: "server busy".into(),
            kind: RefusalKind::Busy,
        };
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"type":"refused","reason":"server busy","kind":"busy"}"#
        );
        assert_eq!(decode(&json), m);
    }

    #[test]
    fn a_refusal_without_a_kind_or_of_an_unknown_kind_is_other() {
        for json in [
            r#"{"type":"refused","reason":"r"}"#,
            r#"{"type":"refused","reason":"r","kind":"from_the_future"}"#,
        ] {
            assert_eq!(
                decode(json),
                Msg::Refused {
                    reason: "r".into(),
                    kind: RefusalKind::Other
                },
                "{json}"
            );
        }
    }

    #[test]
    fn a_soak_sample_round_trips_and_names_itself() {
        let m = Msg::SoakSample {
            sample: SoakSample {
                end: crate::soak::End::Remote,
                seq: 3,
                t_s: 1.5,
                ports: vec![crate::soak::PortSample {
                    phy: None,
                    device: "mlx4_0".into(),
                    port: "1".into(),
                    netdev: Some("ib0".into()),
                    kind: crate::soak::SoakPortKind::Infiniband {
                        speed: Some("FDR".into()),
                        signalling_gbps: Some(56.25),
                    },
                    counters: vec![(
                        linerate_facts::CounterSource::IbCounters,
                        "symbol_error".into(),
                        7,
                    )],
                }],
                tcp_retrans_segs: Some(9),
                tcp_out_segs: None,
                bytes_sent: 10,
                bytes_received: 20,
                problems: vec![],
                host: Vec::new(),
            },
        };
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.starts_with(r#"{"type":"soak_sample","#), "{json}");
        assert_eq!(decode(&json), m);
        assert_eq!(m.name(), "soak_sample");
    }

    #[test]
    fn kinds_have_their_wire_names() {
        for k in [
            RefusalKind::InvalidParams,
            RefusalKind::OverLimit,
            RefusalKind::Busy,
            RefusalKind::NoWriteDir,
            RefusalKind::FileRefused,
            RefusalKind::Unsupported,
            RefusalKind::ServerError,
            RefusalKind::Other,
        ] {
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::from(k.as_str())
            );
        }
    }
}
