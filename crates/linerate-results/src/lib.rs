//! The plain output data of linerate's tests: a bench result and its parts (per-direction and
//! per-stream figures, intervals, what held TCP back, UDP, file-copy and RDMA shapes, the
//! latency summary), and the header every JSON document carries (`schema_version`, `tool`).
//!
//! These types sit at the bottom of the dependency graph so that renderers (`linerate-report`)
//! depend on data, not on the engines that produce it: no sockets, no io_uring, no libfabric.
//! The assembly of a result from both sides' measurements stays in `linerate-bench`.
//! Field names are a contract (`schemas/bench.schema.json`, `schemas/doctor.schema.json`).

use linerate_proto::{Direction, TestParams};
use serde::Serialize;

/// Bumped when a field is renamed or removed; adding fields does not bump it.
pub const SCHEMA_VERSION: u32 = 1;

/// The `tool` object of every JSON document: which program wrote it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

/// This program (every crate of the workspace shares its version).
pub const TOOL: Tool = Tool {
    name: "linerate",
    version: env!("CARGO_PKG_VERSION"),
};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Endpoint {
    /// `local` (this host) or `remote` (the server).
    pub host: &'static str,
    pub bytes: u64,
    pub gbps: f64,
    /// CPU of the threads moving this direction's streams: 100 = one core saturated.
    pub cpu_percent: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntervalOut {
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
    pub gbps: f64,
    /// Per stream, Gb/s.
    pub streams: Vec<f64>,
    pub retransmits: Option<u64>,
    pub lost: Option<u64>,
    pub omitted: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StreamOut {
    pub id: u32,
    pub bytes: u64,
    pub gbps: f64,
    pub sender_cpu_percent: f64,
    pub receiver_cpu_percent: Option<f64>,
    pub retransmits: Option<u64>,
    pub rtt_us: Option<u32>,
    pub cwnd: Option<u32>,
    pub loss_percent: Option<f64>,
    pub jitter_us: Option<f64>,
}

/// One direction of a bandwidth test.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DirStats {
    pub direction: Direction,
    /// Received bytes after the omit period (sent bytes when the receiver's figures are missing).
    pub bytes: u64,
    /// The headline: the receiver's rate, Gb/s of payload.
    pub gbps: f64,
    /// On-the-wire rate as a switch or shaper counts it (payload + per-packet headers), Gb/s.
    pub l2_gbps: Option<f64>,
    pub sender: Endpoint,
    pub receiver: Option<Endpoint>,
    pub retransmits: Option<u64>,
    /// Data segments the sender sent (TCP_INFO), whole test.
    pub segments: Option<u64>,
    pub rtt_us: Option<f64>,
    pub cwnd: Option<u32>,
    pub mss: Option<u32>,
    /// What held the senders back, from the kernel's accounting (TCP_INFO, Linux ≥ 4.10).
    pub tcp_limited: Option<TcpLimitedOut>,
    pub packets: Option<u64>,
    pub lost_packets: Option<u64>,
    pub loss_percent: Option<f64>,
    pub out_of_order: Option<u64>,
    pub jitter_us: Option<f64>,
    pub intervals: Vec<IntervalOut>,
    pub per_stream: Vec<StreamOut>,
}

/// What held the TCP senders back, from the kernel's accounting (TCP_INFO chrono times summed
/// over the streams): `busy_percent` of the test they had data queued or in flight; of that
/// busy time, the share spent waiting on the receiver's window (`tcpi_rwnd_limited`) or on their
/// own send buffer (`tcpi_sndbuf_limited`). A bulk sender busy nearly all the time and waiting
/// on neither is not held back by the window.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct TcpLimitedOut {
    pub busy_s: f64,
    pub busy_percent: f64,
    pub receive_window_percent: f64,
    pub send_buffer_percent: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencyUs {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    pub stddev: f64,
}

/// A test result (schemas/bench.schema.json).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TestResult {
    pub kind: &'static str,
    pub direction: Direction,
    pub streams: u32,
    pub duration_s: f64,
    pub omit_s: f64,
    pub bytes: u64,
    /// Receiver side, Gb/s (both directions summed for bidir).
    pub gbps: f64,
    pub l2_gbps: Option<f64>,
    pub sender: Option<Endpoint>,
    pub receiver: Option<Endpoint>,
    pub retransmits: Option<u64>,
    /// TCP data segments sent (to put retransmits in proportion).
    pub segments: Option<u64>,
    pub rtt_us: Option<f64>,
    pub cwnd: Option<u32>,
    pub tcp_limited: Option<TcpLimitedOut>,
    pub packets: Option<u64>,
    pub lost_packets: Option<u64>,
    pub loss_percent: Option<f64>,
    pub out_of_order: Option<u64>,
    pub jitter_us: Option<f64>,
    pub latency_us: Option<LatencyUs>,
    pub transactions_per_s: Option<f64>,
    pub lost_transactions: Option<u64>,
    /// Latency distribution: (upper bound µs, count), log-spaced buckets.
    pub latency_histogram: Option<Vec<(f64, u64)>>,
    pub intervals: Vec<IntervalOut>,
    pub per_stream: Vec<StreamOut>,
    /// Bidir: each direction on its own.
    pub directions: Vec<DirStats>,
    pub server: String,
    pub local: Option<serde_json::Value>,
    pub remote: Option<serde_json::Value>,
    pub params: TestParams,
    /// File transfers: each layer of the copy and the one that held it back.
    pub file: Option<FileTransferOut>,
    /// RDMA tests: the operation, provider and device, message rate, the sweep.
    pub rdma: Option<RdmaOut>,
    /// Set when the test did not complete; the figures are what was measured until then.
    pub error: Option<String>,
}

/// The RDMA part of a result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RdmaOut {
    pub op: &'static str,
    /// libfabric provider and domain (device) both ends used.
    pub provider: String,
    pub device: String,
    pub window: u32,
    pub qps: u32,
    pub verify: bool,
    /// Bytes that did not match the pattern, both ends (`verify`).
    pub verify_errors: u64,
    pub messages_per_s: Option<f64>,
    /// Latency tests: half the round trip, as perftest's `*_lat` reports.
    pub one_way_p50_us: Option<f64>,
    pub one_way_mean_us: Option<f64>,
    /// Bandwidth per message size (one row without `--sweep`).
    pub sizes: Vec<SizeRow>,
}

/// One layer of a disk → network → disk copy.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Layer {
    /// `source_read`, `network` or `destination_write`.
    pub layer: &'static str,
    /// The rate this layer moved data at while it worked, Gb/s: bytes / its busy seconds.
    pub gbps: f64,
    /// Seconds the layer was busy (averaged over streams; the destination includes fsync).
    pub busy_s: f64,
    /// Busy seconds as a share of the copy's time, %.
    pub busy_percent: f64,
}

/// A file transfer: what was copied and how each layer did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileTransferOut {
    pub name: String,
    pub size_bytes: u64,
    /// Bytes written by the server (equal to the size when complete).
    pub written_bytes: u64,
    /// Bytes per read(2)/write(2) and network buffer.
    pub block_bytes: u32,
    /// Buffer memory each side held, bytes (streams × buffers × block).
    pub buffer_bytes: u64,
    pub fsync: bool,
    /// Seconds until the last byte reached the server.
    pub transfer_s: f64,
    /// fsync(2) on the server at the end, seconds.
    pub fsync_s: Option<f64>,
    /// Bytes over the time until the file was on the server's disk (durable when fsync), Gb/s.
    pub end_to_end_gbps: f64,
    pub layers: Vec<Layer>,
    /// The layer with the lowest rate: what held the copy back.
    pub bottleneck: Option<&'static str>,
}

/// One message size of an RDMA bandwidth test, all queue pairs together.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SizeRow {
    pub size_bytes: usize,
    pub bytes: u64,
    pub messages: u64,
    pub seconds: f64,
    pub gbps: f64,
    pub messages_per_s: f64,
}
