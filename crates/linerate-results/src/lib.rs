//! The plain output data of linerate's tests: a bench result and its parts (per-direction and
//! per-stream figures, intervals, what held TCP back, UDP, file-copy and RDMA shapes, the
//! latency summary), disk results, memory results, and doctor's document, which holds them.
//!
//! These types sit at the bottom of the dependency graph so that renderers (`linerate-report`)
//! depend on data, not on the engines that produce it: no sockets, no io_uring, no libfabric.
//! The assembly of a result from both sides' measurements stays in `linerate-bench`.
//! Field names are a contract (`schemas/bench.schema.json`, `schemas/doctor.schema.json`).

use std::ops::AddAssign;

use linerate_facts::{InterfaceView, QdiscsSeen, UdpReceiveSeen};
use linerate_proto::{Direction, HostCpuLoad, LinkTraffic, Stalls, TestParams};
use linerate_stats::LatencyUs;
use serde::Serialize;

pub mod disk;
mod doctor;
pub mod mem;

pub use doctor::{DoctorReport, FarEndOut, FarEndProcess, JudgedFrom, SkippedStep};

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Endpoint {
    /// `local` (this host) or `remote` (the server).
    pub host: &'static str,
    pub bytes: u64,
    pub gbps: f64,
    /// CPU of the threads moving this direction's streams: 100 = one core saturated.
    pub cpu_percent: f64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
    /// Of the retransmits, those the receiver reported by D-SACK as duplicates (TCP_INFO
    /// `tcpi_dsack_dups`, Linux ≥ 4.19): spurious, the original had arrived. None when a sender
    /// did not report it (an older kernel or release, a stock iperf3).
    pub spurious_retransmits: Option<u64>,
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

impl DirStats {
    /// One direction before anything is measured (a direction has no default).
    pub fn new(direction: Direction) -> Self {
        Self {
            direction,
            bytes: 0,
            gbps: 0.0,
            l2_gbps: None,
            sender: Endpoint::default(),
            receiver: None,
            retransmits: None,
            spurious_retransmits: None,
            segments: None,
            rtt_us: None,
            cwnd: None,
            mss: None,
            tcp_limited: None,
            packets: None,
            lost_packets: None,
            loss_percent: None,
            out_of_order: None,
            jitter_us: None,
            intervals: Vec::new(),
            per_stream: Vec::new(),
        }
    }
}

/// What held the TCP senders back, from the kernel's accounting (TCP_INFO chrono times summed
/// over the streams): `busy_percent` of the test they had data queued or in flight; of that
/// busy time, the share spent waiting on the receiver's window (`tcpi_rwnd_limited`) or on their
/// own send buffer (`tcpi_sndbuf_limited`). A bulk sender busy nearly all the time and waiting
/// on neither is not held back by the window.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct TcpLimitedOut {
    pub busy_s: f64,
    pub busy_percent: f64,
    pub receive_window_percent: f64,
    pub send_buffer_percent: f64,
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
    /// Of the retransmits, those TCP found spurious (D-SACK: the receiver had the segment).
    pub spurious_retransmits: Option<u64>,
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
    /// Latency tests: whether each end busy-polled or blocked while waiting, and why.
    pub latency_mode: Option<LatencyMode>,
    /// Latency distribution: (upper bound µs, count), log-spaced buckets.
    pub latency_histogram: Option<Vec<(f64, u64)>>,
    pub intervals: Vec<IntervalOut>,
    pub per_stream: Vec<StreamOut>,
    /// Bidir: each direction on its own.
    pub directions: Vec<DirStats>,
    pub server: String,
    /// This host's interface for the path (probe's port shape, with the address).
    pub local: Option<InterfaceView>,
    /// The server's.
    pub remote: Option<InterfaceView>,
    pub params: TestParams,
    /// File transfers: each layer of the copy and the one that held it back.
    pub file: Option<FileTransferOut>,
    /// RDMA tests: the operation, provider and device, message rate, the sweep.
    pub rdma: Option<RdmaOut>,
    /// Tests against a stock iperf3 server (`bench --iperf3`): the test as iperf3's protocol
    /// carried it and the server's own figures from its results.
    pub iperf3: Option<Iperf3Out>,
    /// Set when the test did not complete; the figures are what was measured until then.
    pub error: Option<String>,
    /// What disturbed the test while it ran (other processes' CPU, steal, spans with no
    /// progress, intervals far below the median), and whether that was enough to call the
    /// figures disturbed. None where nothing was measured to judge by.
    pub disturbance: Option<Disturbance>,
    /// The qdiscs of each end's test interface (and of an ifb its ingress redirects to) whose
    /// drops, overlimits or requeues rose during the test (netem's losses, a full queue, a
    /// policer). None where neither end read them; an end's `null`: not read (an older server,
    /// a stock iperf3 server), empty: read, nothing counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qdiscs: Option<QdiscsSeen>,
    /// UDP tests: what each end's host counted on UDP receive during the test (delivered,
    /// dropped for a full socket buffer, every receive error; host-wide). None for other
    /// tests and where neither end read them; an end's `null`: not read (an older server, a
    /// stock iperf3 server). A server on this host counts this host's: its figures are then
    /// this end's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_receive: Option<UdpReceiveSeen>,
}

/// What disturbed a test: what both hosts' CPUs did, the spans with no progress and the slow
/// intervals (measurements), and the judgement of them (`linerate_rules::disturbance`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Disturbance {
    /// Whether anything below was enough to disturb the figures: then they are a lower bound
    /// of what the path carries, and `causes` says why.
    pub disturbed: bool,
    /// What disturbed it, most important first.
    pub causes: Vec<DisturbanceCause>,
    /// This host's CPUs during the test (its linerate processes, a server beside it included,
    /// are linerate's own).
    pub local_cpu: Option<HostCpuLoad>,
    /// The server's, as it reported them; None from an older server, or when it runs on this
    /// host (then `local_cpu` covers it: `remote_same_host`).
    pub remote_cpu: Option<HostCpuLoad>,
    pub remote_same_host: bool,
    /// This host's spans with no progress on any stream, and the server's (None: not reported).
    pub local_stalls: Option<Stalls>,
    pub remote_stalls: Option<Stalls>,
    /// Intervals (after the warm-up) whose rate was below the judgement's fraction of the
    /// run's median interval rate, and that median (Gb/s; transactions/s in a latency test).
    pub slow_intervals: u32,
    pub median_interval_rate: Option<f64>,
    /// What the interface of this host's test address carried during the test (all
    /// traffic), and the server's (None: an older server, or the same host).
    pub local_link: Option<LinkTraffic>,
    pub remote_link: Option<LinkTraffic>,
    /// Traffic beyond the test's own on either interface, Gb/s (the larger).
    pub competing_gbps: Option<f64>,
}

/// What kind of thing disturbed a test (`causes[].cause` in the JSON).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DisturbanceKind {
    /// Spans with no progress on a side's streams.
    Stalls,
    /// Intervals far below the run's median.
    SlowIntervals,
    /// Other traffic on the test's interface.
    CompetingTraffic,
    /// Other processes' CPU.
    CpuContended,
    /// The hypervisor's steal.
    Steal,
}

/// One thing that disturbed a test.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DisturbanceCause {
    pub cause: DisturbanceKind,
    /// `local` (this host) or `remote` (the server); `both` for the run's intervals.
    pub host: &'static str,
    /// The cause in words, with its figures.
    pub message: String,
}

impl TestResult {
    /// The result of the test `params` before anything is measured: the test's own figures
    /// (kind, direction, streams, duration, warm-up) and nothing else. There is no `Default`:
    /// a result always belongs to a test, and no test is a default one.
    pub fn new(params: TestParams) -> Self {
        Self {
            kind: params.kind.as_str(),
            direction: params.direction,
            streams: params.streams,
            duration_s: params.duration_ms as f64 / 1000.0,
            omit_s: params.omit_ms as f64 / 1000.0,
            bytes: 0,
            gbps: 0.0,
            l2_gbps: None,
            sender: None,
            receiver: None,
            retransmits: None,
            spurious_retransmits: None,
            segments: None,
            rtt_us: None,
            cwnd: None,
            tcp_limited: None,
            packets: None,
            lost_packets: None,
            loss_percent: None,
            out_of_order: None,
            jitter_us: None,
            latency_us: None,
            transactions_per_s: None,
            lost_transactions: None,
            latency_mode: None,
            latency_histogram: None,
            intervals: Vec::new(),
            per_stream: Vec::new(),
            directions: Vec::new(),
            server: String::new(),
            local: None,
            remote: None,
            params,
            file: None,
            rdma: None,
            iperf3: None,
            error: None,
            disturbance: None,
            qdiscs: None,
            udp_receive: None,
        }
    }
}

impl TestResult {
    /// The result in a few short phrases, most important first, for one line of text: doctor's
    /// progress lines join them with ", ", the report's table with wider gaps.
    pub fn summary_parts(&self) -> Vec<String> {
        use linerate_units::fmt_sig;
        let mut v = Vec::new();
        if let Some(f) = &self.file {
            v.push(format!(
                "{} GB/s end to end",
                fmt_sig(linerate_units::gbps_to_gb_per_s(f.end_to_end_gbps))
            ));
            if let Some(b) = f.bottleneck {
                v.push(format!("slowest layer: {b}"));
            }
        } else if let Some(l) = &self.latency_us {
            v.push(format!("p50 {} µs", fmt_sig(l.p50)));
            v.push(format!("p99 {} µs", fmt_sig(l.p99)));
            v.push(format!(
                "{} transactions/s",
                fmt_sig(self.transactions_per_s.unwrap_or(0.0))
            ));
            if let Some(m) = &self.latency_mode {
                v.push(m.label().to_string());
            }
        } else {
            v.push(format!("{} Gb/s", fmt_sig(self.gbps)));
            if let Some(l) = self.loss_percent {
                v.push(format!("loss {}%", fmt_sig(l)));
                if let Some(j) = self.jitter_us {
                    v.push(format!("jitter {} µs", fmt_sig(j)));
                }
            }
        }
        if self.file.is_none() && self.latency_us.is_none() {
            if let (Some(s), Some(r)) = (&self.sender, &self.receiver) {
                v.push(format!(
                    "CPU sender {}% receiver {}%",
                    fmt_sig(s.cpu_percent),
                    fmt_sig(r.cpu_percent)
                ));
            }
            if let Some(x) = self.retransmits.filter(|x| *x > 0) {
                v.push(format!("retransmits {x}"));
            }
        }
        if let Some(e) = &self.error {
            v.push(format!("(incomplete: {e})"));
        }
        v
    }
}

/// How a latency test waited for each request and reply: busy-polling (`recv` without blocking,
/// for up to the spin time) skips the scheduler's wake-up, which on a fast path is most of a
/// blocking round trip; blocking measures what an ordinary application sees.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LatencyMode {
    /// `busy_polled` (both ends), `client_polled` (this end only: the server blocked or did not
    /// say), or `blocking`.
    pub mode: &'static str,
    /// Busy-poll per wait, µs: this end's, and the server's (its grant, capped by its
    /// `serve --max-spin`; None: an older server that does not say).
    pub client_spin_us: u32,
    pub server_spin_us: Option<u32>,
    /// Who chose the mode and why (bench's `--spin`, doctor's check of idle cores), and any cap.
    pub reason: String,
}

impl LatencyMode {
    /// The mode of a test whose client polled `client_spin_us` and whose server reported
    /// `server_spin_us`; `reason` says who chose it. A server that polled less than asked is
    /// said in the reason.
    pub fn new(client_spin_us: u32, server_spin_us: Option<u32>, reason: String) -> Self {
        use std::fmt::Write as _;
        let mode = match (client_spin_us, server_spin_us) {
            (0, _) => "blocking",
            (_, Some(s)) if s > 0 => "busy_polled",
            _ => "client_polled",
        };
        let mut reason = reason;
        match server_spin_us {
            Some(s) if s < client_spin_us => {
                let _ = write!(
                    reason,
                    "; the server granted {s} µs of the {client_spin_us} µs asked (its serve --max-spin){}",
                    if s == 0 { ", so it blocked" } else { "" }
                );
            }
            None if client_spin_us > 0 => {
                reason
                    .push_str("; the server did not say whether it busy-polled (an older server)");
            }
            _ => {}
        }
        Self {
            mode,
            client_spin_us,
            server_spin_us,
            reason,
        }
    }

    /// The mode in words, for text and HTML.
    pub fn label(&self) -> &'static str {
        match self.mode {
            "busy_polled" => "busy-polled",
            "client_polled" => "busy-polled on this end only",
            _ => "blocking",
        }
    }
}

/// A test against a stock iperf3 server (`bench --iperf3`): the test as iperf3's protocol
/// carried it, and what the server said of each stream in iperf3's results exchange, by iperf3's
/// own definitions, beside linerate's figures (which this host measured, and which take the
/// server's counts where only the server saw them: the bytes it received).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Iperf3Out {
    /// What is known of the server's iperf3 release (`iperf3 3.12`, `iperf3 3.2 or later,
    /// before 3.14`; `iperf3 3.0 or later` when nothing told).
    pub server_version: String,
    /// What told it: `ssh` (`iperf3 --version` on the far end), `server_output` (its `-J`
    /// output), `results` (the shape of its results), `udp_reply` (its UDP handshake),
    /// `refused_stream` (a `--bidir` stream it refused).
    pub version_from: Vec<&'static str>,
    /// The test's time after the omitted seconds, and the omitted seconds, as sent: iperf3
    /// takes whole seconds (0 with an end on data).
    pub time_s: u64,
    pub omit_s: u64,
    /// `-n`: the test ended once this host had sent or received this many bytes after the
    /// omitted seconds.
    pub end_bytes: Option<u64>,
    /// `-k`: the same in blocks of `-l` bytes.
    pub end_blocks: Option<u64>,
    /// The server's whole process over the test, percent of one core (iperf3's
    /// `cpu_util_total`, `_user`, `_system`); none without its results.
    pub server_cpu_percent: Option<f64>,
    pub server_cpu_user_percent: Option<f64>,
    pub server_cpu_system_percent: Option<f64>,
    /// The server's TCP congestion control in use (iperf3 3.2 and later say it).
    pub server_congestion: Option<String>,
    /// Each stream as the server counted it, in iperf3's order of ids.
    pub streams: Vec<Iperf3StreamOut>,
    /// Where the test differs from what was asked, and why: whole seconds rounded up, an
    /// option the server's release ignores.
    pub notes: Vec<String>,
}

/// One stream as the iperf3 server counted it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Iperf3StreamOut {
    /// iperf3's stream id: 1, 3, 4, … (it never gives 2).
    pub id: u32,
    /// What the server did on it: `sender` or `receiver`.
    pub server: &'static str,
    /// Bytes the server sent or received on it after the omitted seconds.
    pub bytes: u64,
    /// The server's time on the stream (iperf3 3.2 and later).
    pub seconds: Option<f64>,
    /// `bytes` over `seconds`.
    pub gbps: Option<f64>,
    /// TCP, the server sending: its retransmissions (TCP_INFO on its host).
    pub retransmits: Option<u64>,
    /// UDP, the server receiving: iperf3's jitter (RFC 1889), µs.
    pub jitter_us: Option<f64>,
    /// UDP, the server receiving: iperf3's loss, gaps in the sequence less the datagrams that
    /// came late (datagrams still in flight at the end are not counted).
    pub lost_packets: Option<u64>,
    /// UDP: datagrams sent (the server sending) or the highest sequence number it saw
    /// (receiving).
    pub packets: Option<u64>,
}

/// The RDMA part of a result.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
    /// Latency of writes and sends: half the round trip (one way), as `ib_write_lat` and
    /// `ib_send_lat` report it; none for reads (a read is a request and its response: there
    /// is no one way of it).
    pub one_way_p50_us: Option<f64>,
    pub one_way_mean_us: Option<f64>,
    /// Latency tests: the figures perftest's `*_lat` prints for the same operations
    /// (`t_typical`, `t_avg`), by its convention: half the round trip for write and send,
    /// a read's whole completion for read (`ib_read_lat` does not halve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perftest_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perftest_mean_us: Option<f64>,
    /// `half_round_trip` or `completion`: how `perftest_*_us` were taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perftest_convention: Option<String>,
    /// Bandwidth per message size (one row without `--sweep`).
    pub sizes: Vec<SizeRow>,
    /// What this end's RDMA device itself counted during the test (its port's `counters/` and
    /// `hw_counters/` that moved: packets and data, retransmits and sequence errors), when its
    /// sysfs could be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub device_counters: Vec<linerate_facts::CounterDelta>,
}

/// One layer of a disk → network → disk copy.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SizeRow {
    pub size_bytes: usize,
    pub bytes: u64,
    pub messages: u64,
    pub seconds: f64,
    pub gbps: f64,
    pub messages_per_s: f64,
}

// Merging. Counters come from the peer too, so integer sums saturate: a hostile peer's figures
// cannot overflow them. Rates and percentages are summed at full precision; rounding is for
// whoever serializes the merged value.

/// Both figures known: their saturating sum; either unknown: unknown (a total over directions
/// is only given when every direction has the figure).
fn add_known(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.zip(b).map(|(a, b)| a.saturating_add(b))
}

/// Lost packets as a share of those sent, %: 0 for none sent, unknown when either is.
pub fn loss_percent(lost: Option<u64>, packets: Option<u64>) -> Option<f64> {
    match (lost, packets) {
        (Some(l), Some(n)) if n > 0 => Some(l as f64 / n as f64 * 100.0),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    }
}

/// Two endpoints' traffic together (bidir: both senders, or both receivers).
impl AddAssign<&Endpoint> for Endpoint {
    fn add_assign(&mut self, o: &Endpoint) {
        if self.host != o.host {
            self.host = "both";
        }
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.gbps += o.gbps;
        self.cpu_percent += o.cpu_percent;
    }
}

/// The same interval of two directions side by side: their streams one after the other.
impl AddAssign<&IntervalOut> for IntervalOut {
    fn add_assign(&mut self, o: &IntervalOut) {
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.gbps += o.gbps;
        self.streams.extend_from_slice(&o.streams);
        self.retransmits = add_known(self.retransmits, o.retransmits);
        self.lost = add_known(self.lost, o.lost);
    }
}

/// Two directions of a test together: the totals of a bidir test.
impl AddAssign<&DirStats> for DirStats {
    fn add_assign(&mut self, o: &DirStats) {
        if self.direction != o.direction {
            self.direction = Direction::Bidir;
        }
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.gbps += o.gbps;
        self.l2_gbps = self.l2_gbps.zip(o.l2_gbps).map(|(a, b)| a + b);
        self.sender += &o.sender;
        self.receiver = match (self.receiver.take(), &o.receiver) {
            (Some(mut a), Some(b)) => {
                a += b;
                Some(a)
            }
            _ => None,
        };
        self.retransmits = add_known(self.retransmits, o.retransmits);
        self.spurious_retransmits = add_known(self.spurious_retransmits, o.spurious_retransmits);
        self.segments = add_known(self.segments, o.segments);
        // Round trip and jitter are not additive: the first direction that measured them.
        self.rtt_us = self.rtt_us.or(o.rtt_us);
        self.jitter_us = self.jitter_us.or(o.jitter_us);
        // `None` < `Some`: the largest known.
        self.cwnd = self.cwnd.max(o.cwnd);
        self.mss = self.mss.max(o.mss);
        // Shares of each direction's own busy time do not add up: each direction keeps its own.
        self.tcp_limited = None;
        self.packets = add_known(self.packets, o.packets);
        self.lost_packets = add_known(self.lost_packets, o.lost_packets);
        self.loss_percent = loss_percent(self.lost_packets, self.packets);
        self.out_of_order = add_known(self.out_of_order, o.out_of_order);
        // Intervals side by side (as many as both directions have).
        for (a, b) in self.intervals.iter_mut().zip(&o.intervals) {
            *a += b;
        }
        self.intervals.truncate(o.intervals.len());
        self.per_stream.extend_from_slice(&o.per_stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_modes_say_who_polled_and_any_cap() {
        let both = LatencyMode::new(200, Some(200), "doctor".into());
        assert_eq!((both.mode, both.label()), ("busy_polled", "busy-polled"));
        assert_eq!(both.reason, "doctor");
        let capped = LatencyMode::new(500, Some(100), "bench --spin 500".into());
        assert_eq!(capped.mode, "busy_polled");
        assert!(
            capped.reason.contains("granted 100 µs of the 500 µs"),
            "{}",
            capped.reason
        );
        let refused = LatencyMode::new(500, Some(0), "x".into());
        assert_eq!(refused.mode, "client_polled");
        assert!(
            refused.reason.contains("so it blocked"),
            "{}",
            refused.reason
        );
        let old = LatencyMode::new(50, None, "x".into());
        assert_eq!(old.mode, "client_polled");
        assert!(old.reason.contains("older server"));
        let blocking = LatencyMode::new(0, Some(0), "default".into());
        assert_eq!((blocking.mode, blocking.label()), ("blocking", "blocking"));
        assert_eq!(blocking.reason, "default");
    }

    fn ep(host: &'static str, bytes: u64, gbps: f64, cpu: f64) -> Endpoint {
        Endpoint {
            host,
            bytes,
            gbps,
            cpu_percent: cpu,
        }
    }

    fn dir(direction: Direction, n: u64) -> DirStats {
        DirStats {
            bytes: n,
            gbps: n as f64,
            l2_gbps: Some(n as f64 + 0.5),
            sender: ep("local", n, n as f64, 10.0),
            receiver: Some(ep("remote", n, n as f64, 20.0)),
            retransmits: Some(n),
            packets: Some(10 * n),
            lost_packets: Some(n),
            cwnd: Some(u32::try_from(n).unwrap()),
            rtt_us: Some(n as f64),
            intervals: vec![
                IntervalOut {
                    bytes: n,
                    gbps: 1.0,
                    streams: vec![1.0],
                    retransmits: Some(1),
                    lost: None,
                    ..IntervalOut::default()
                };
                usize::try_from(n).unwrap()
            ],
            per_stream: vec![StreamOut {
                id: u32::try_from(n).unwrap(),
                ..StreamOut::default()
            }],
            ..DirStats::new(direction)
        }
    }

    #[test]
    fn directions_merge_into_totals() {
        let mut a = dir(Direction::Send, 2);
        let mut b = dir(Direction::Receive, 3);
        b.sender.host = "remote";
        b.receiver.as_mut().unwrap().host = "local";
        b.rtt_us = None;
        a += &b;
        assert_eq!(a.direction, Direction::Bidir);
        assert_eq!((a.bytes, a.gbps, a.l2_gbps), (5, 5.0, Some(6.0)));
        assert_eq!(a.sender, ep("both", 5, 5.0, 20.0));
        assert_eq!(a.receiver, Some(ep("both", 5, 5.0, 40.0)));
        assert_eq!(
            (a.retransmits, a.packets, a.lost_packets),
            (Some(5), Some(50), Some(5))
        );
        assert_eq!(a.loss_percent, Some(10.0));
        assert_eq!(
            (a.cwnd, a.rtt_us, a.tcp_limited),
            (Some(3), Some(2.0), None)
        );
        // Two intervals side by side (the shorter direction has two), streams concatenated.
        assert_eq!(a.intervals.len(), 2);
        assert_eq!(a.intervals[0].bytes, 5);
        assert_eq!(a.intervals[0].gbps, 2.0);
        assert_eq!(a.intervals[0].streams, [1.0, 1.0]);
        assert_eq!(a.intervals[0].retransmits, Some(2));
        assert_eq!(a.intervals[0].lost, None);
        assert_eq!(
            a.per_stream.iter().map(|s| s.id).collect::<Vec<_>>(),
            [2, 3]
        );
    }

    #[test]
    fn a_figure_missing_in_one_direction_is_missing_in_the_total() {
        let mut a = dir(Direction::Send, 1);
        let mut b = dir(Direction::Receive, 1);
        b.receiver = None;
        b.retransmits = None;
        b.l2_gbps = None;
        a += &b;
        assert_eq!((a.receiver, a.retransmits, a.l2_gbps), (None, None, None));
        assert_eq!(a.packets, Some(20));
    }

    #[test]
    fn hostile_counters_saturate() {
        let mut a = dir(Direction::Send, 1);
        a.bytes = u64::MAX - 1;
        a.retransmits = Some(u64::MAX);
        a.sender.bytes = u64::MAX;
        a.intervals[0].bytes = u64::MAX;
        let b = dir(Direction::Receive, 1);
        a += &b;
        assert_eq!(a.bytes, u64::MAX);
        assert_eq!(a.retransmits, Some(u64::MAX));
        assert_eq!(a.sender.bytes, u64::MAX);
        assert_eq!(a.intervals[0].bytes, u64::MAX);
    }

    #[test]
    fn loss_of_nothing_sent_is_zero() {
        assert_eq!(loss_percent(Some(0), Some(0)), Some(0.0));
        assert_eq!(loss_percent(Some(1), Some(4)), Some(25.0));
        assert_eq!(loss_percent(None, Some(4)), None);
    }

    #[test]
    fn a_new_result_carries_its_test() {
        let p: TestParams = serde_json::from_str(
            r#"{"kind":"udp_bw","direction":"bidir","streams":3,"duration_ms":2500,"omit_ms":500,"interval_ms":0,"length":1000,"window":null,"bitrate_bps":0,"congestion":null,"zerocopy":false}"#,
        )
        .unwrap();
        let t = TestResult::new(p.clone());
        assert_eq!(
            (t.kind, t.direction, t.streams),
            ("udp_bw", Direction::Bidir, 3)
        );
        assert_eq!((t.duration_s, t.omit_s), (2.5, 0.5));
        assert_eq!(t.params, p);
        assert!(t.latency_us.is_none() && t.intervals.is_empty() && t.error.is_none());
    }
}
