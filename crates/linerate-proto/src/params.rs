//! Test parameters and the server's limits.

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::testkind::{Takes, TestKind};

/// Which way data flows, from the client's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client sends, server receives (iperf3's default).
    Send,
    /// Server sends, client receives (`-R`).
    Receive,
    /// Both at once (`--bidir`): each stream index has one connection each way.
    Bidir,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestParams {
    pub kind: TestKind,
    pub direction: Direction,
    /// Parallel streams (per direction for bidir).
    pub streams: u32,
    pub duration_ms: u64,
    /// Warm-up excluded from the totals.
    pub omit_ms: u64,
    pub interval_ms: u64,
    /// Bytes per write (TCP), datagram payload (UDP) or request/response size (latency).
    pub length: u32,
    /// Socket buffer (SO_SNDBUF/SO_RCVBUF) to request, bytes.
    pub window: Option<u32>,
    /// Target bit rate per stream, bit/s; 0 = as fast as possible.
    pub bitrate_bps: u64,
    /// TCP congestion control algorithm.
    pub congestion: Option<String>,
    /// Send with sendfile(2) from an in-memory file.
    pub zerocopy: bool,
    /// Latency tests: poll this many µs for a reply before blocking (0 = block at once; None = the
    /// engine's default, `lat::DEFAULT_SPIN`, which is 0).
    #[serde(default)]
    pub spin_us: Option<u32>,
    /// TCP bandwidth tests: the receiver drops the payload in the kernel (`recv` with
    /// `MSG_TRUNC`) instead of copying it to user space (`bench --discard`), to show how much of
    /// a stream's limit is the receiving application's copy. Sent only when set, so a request
    /// without it is the same as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discard: bool,
    /// TCP bandwidth tests: the receiver is woken on every arrival (`bench --no-rcvlowat`), as
    /// a plain application is, instead of once about a millisecond's worth of data has queued
    /// (SO_RCVLOWAT). Sent only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_rcvlowat: bool,
    /// File transfers: the file the client sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileSpec>,
    /// RDMA tests: the operation and how (`length` is the message size, the largest for a sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaSpec>,
    /// A soak (`linerate soak`): a `tcp_bw` test during which each end samples its port
    /// counters every interval, and the server sends its samples as `soak_sample` messages.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub soak: bool,
}

/// The RDMA operation measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RdmaOp {
    Write,
    Read,
    Send,
}

impl RdmaOp {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Read => "read",
            Self::Send => "send",
        }
    }
}

/// Largest RDMA message a server accepts (perftest's sweep goes to 8 MiB).
pub const RDMA_MAX_MESSAGE: u32 = 8 << 20;
/// Largest window of outstanding RDMA operations, and most queue pairs.
pub const RDMA_MAX_WINDOW: u32 = 1024;
pub const RDMA_MAX_QPS: u32 = 16;

/// The RDMA side of a [`TestKind::Rdma`] test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaSpec {
    pub op: RdmaOp,
    /// Latency (ping-pong, or one read at a time) instead of bandwidth.
    pub latency: bool,
    /// libfabric provider (`verbs`, `tcp`, ...); None: the first that offers RMA.
    pub provider: Option<String>,
    /// Outstanding operations per queue pair (bandwidth).
    pub window: u32,
    /// Queue pairs (connections), each on its own thread.
    pub qps: u32,
    /// Check every byte of every message against a pattern.
    pub verify: bool,
    /// Every power of two from 2 bytes to `length` (perftest's `-a`).
    pub sweep: bool,
}

impl RdmaSpec {
    /// `rdma_write_bw`, `rdma_send_lat`, ...: the result's kind.
    pub fn kind(&self) -> &'static str {
        match (self.op, self.latency) {
            (RdmaOp::Write, false) => "rdma_write_bw",
            (RdmaOp::Read, false) => "rdma_read_bw",
            (RdmaOp::Send, false) => "rdma_send_bw",
            (RdmaOp::Write, true) => "rdma_write_lat",
            (RdmaOp::Read, true) => "rdma_read_lat",
            (RdmaOp::Send, true) => "rdma_send_lat",
        }
    }
}

/// Buffers per stream and side in a file transfer: the disk and the network
/// each work on their own while the other does (double buffering, twice).
pub const FILE_BUFFERS: u32 = 4;

/// The file of a [`TestKind::FileTransfer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Name to create in the server's write directory: one path component.
    pub name: String,
    /// Bytes the client will send.
    pub size: u64,
    /// The server makes the file durable (fsync) before it reports, and the time counts.
    pub fsync: bool,
    /// The server deletes the file once measured (repeated benchmarks).
    #[serde(default)]
    pub remove_after: bool,
}

impl FileSpec {
    /// Why `name` may not be created in a write directory, if it may not.
    /// One plain path component only: no `/`, no `..`, no hidden names, no control characters.
    pub fn check_name(name: &str) -> Result<(), String> {
        if name.is_empty() {
            return Err("the file name is empty".into());
        }
        if name.len() > 255 {
            return Err(format!(
                "the file name is {} bytes long; at most 255",
                name.len()
            ));
        }
        if name.contains('/') || name.contains('\\') {
            return Err(format!(
                "file name `{}`: a name, not a path, is expected (no `/`); the server writes only into its own directory",
                name.escape_debug()
            ));
        }
        if name.starts_with('.') {
            return Err(format!(
                "file name `{}`: names starting with `.` (hidden files, `..`) are refused",
                name.escape_debug()
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(format!(
                "file name `{}` contains control characters",
                name.escape_debug()
            ));
        }
        Ok(())
    }

    /// The byte range stream `idx` of `streams` carries: contiguous, in order, covering the file.
    pub fn range(&self, idx: u32, streams: u32) -> (u64, u64) {
        let n = u128::from(streams.max(1));
        let i = u128::from(idx.min(streams.saturating_sub(1)));
        let size = u128::from(self.size);
        let start = size * i / n;
        let end = size * (i + 1) / n;
        (start as u64, (end - start) as u64)
    }
}

/// Bytes of one RDMA control message, and the receives and control messages each queue pair
/// keeps beyond its window: the RDMA engine's layout, for [`TestParams::server_memory_bytes`].
pub const RDMA_CTRL_SIZE: u64 = 64;
pub const RDMA_CTRL_EXTRA: u64 = 8;

/// What the operator allows (`linerate serve` flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub max_tests: u32,
    pub max_streams: u32,
    pub max_duration_ms: u64,
    /// Per stream, bit/s; 0 = no limit.
    pub max_udp_bitrate_bps: u64,
    pub max_length: u32,
    pub max_window: u32,
    /// File transfers: the largest file accepted, bytes; 0 = bounded by free space only.
    #[serde(default)]
    pub max_file_bytes: u64,
    /// Latency tests: the longest busy-poll per wait the server's echo grants, µs (`serve
    /// --max-spin`); a client asking for more gets this much, and is told in the results.
    #[serde(default = "default_max_spin")]
    pub max_spin_us: u32,
    /// Soaks (`params.soak`): the longest one, ms (`serve --max-soak-duration`); other tests
    /// keep `max_duration_ms`.
    #[serde(default = "default_max_soak_duration")]
    pub max_soak_duration_ms: u64,
}

fn default_max_soak_duration() -> u64 {
    defaults::MAX_SOAK_DURATION_MS
}

fn default_max_spin() -> u32 {
    defaults::SERVE_MAX_SPIN_US
}

impl Limits {
    /// Whether UDP at `bitrate_bps` per stream (0: unlimited) is over `--max-udp-bitrate`: the
    /// words that say so, for either wire protocol's refusal.
    pub fn udp_bitrate_refusal(&self, bitrate_bps: u64) -> Option<String> {
        let max = self.max_udp_bitrate_bps;
        (max > 0 && (bitrate_bps == 0 || bitrate_bps > max)).then(|| {
            let asked = if bitrate_bps == 0 {
                "unlimited rate".to_string()
            } else {
                format!("{bitrate_bps} bit/s")
            };
            format!(
                "UDP at {asked} requested; this server allows at most {max} bit/s per stream \
                 (serve --max-udp-bitrate)"
            )
        })
    }

    /// The most buffer memory one test may hold: every stream at the longest length, both
    /// directions (128 MiB with the defaults). RDMA tests' registered regions count the same.
    pub fn memory_bound(&self) -> u64 {
        u64::from(self.max_streams) * 2 * u64::from(self.max_length.max(64 * 1024))
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tests: defaults::MAX_TESTS,
            max_streams: defaults::MAX_STREAMS,
            max_duration_ms: defaults::MAX_DURATION_MS,
            max_udp_bitrate_bps: defaults::MAX_UDP_BITRATE_BPS,
            max_length: defaults::MAX_LENGTH,
            max_window: defaults::MAX_WINDOW,
            max_file_bytes: defaults::MAX_FILE_BYTES,
            max_spin_us: defaults::SERVE_MAX_SPIN_US,
            max_soak_duration_ms: defaults::MAX_SOAK_DURATION_MS,
        }
    }
}

/// Why a request is refused: the kind and the text go to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub reason: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, reason: impl Into<String>) -> Self {
        Self {
            kind,
            reason: reason.into(),
        }
    }
}

/// What kind of refusal a `refused` message is, so a client can act on it without reading
/// the text. A refusal from a server that sends no kind, or of a kind this side does not
/// know yet, is [`RefusalKind::Other`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// The parameters do not describe a test, whatever the limits ([`TestParams::check_shape`]).
    InvalidParams,
    /// Over one of the operator's limits (streams, duration, length, window, UDP rate,
    /// file size, RDMA memory): the reason names the `serve` option.
    OverLimit,
    /// The server runs as many tests, or holds as much buffer memory, as it may: try later.
    Busy,
    /// The server accepts no files: its operator gave no `serve --write-dir`.
    NoWriteDir,
    /// The write directory cannot take this file (the name exists, not enough space, ...).
    FileRefused,
    /// The server cannot run this kind of test (RDMA: no libfabric, provider or device).
    Unsupported,
    /// The server could not set the test up (a UDP socket could not be opened).
    ServerError,
    /// No kind given (an older server), or one this side does not know.
    #[default]
    #[serde(other)]
    Other,
}

impl RefusalKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidParams => "invalid_params",
            Self::OverLimit => "over_limit",
            Self::Busy => "busy",
            Self::NoWriteDir => "no_write_dir",
            Self::FileRefused => "file_refused",
            Self::Unsupported => "unsupported",
            Self::ServerError => "server_error",
            Self::Other => "other",
        }
    }
}

impl TestParams {
    /// Does this end (the client when `is_client`) send on data connection `idx`? In a bidir
    /// test the client sends on the first `streams` connections and receives on the rest.
    pub fn sends_on(&self, idx: u32, is_client: bool) -> bool {
        match self.direction {
            Direction::Send => is_client,
            Direction::Receive => !is_client,
            Direction::Bidir => (idx < self.streams) == is_client,
        }
    }

    pub(crate) fn shape_timing(&self) -> Result<(), ShapeError> {
        let e = |param, message: &str| Err(ShapeError::new(param, message));
        if self.streams == 0 {
            return e(Param::Streams, "streams must be at least 1");
        }
        if self.duration_ms == 0 {
            return e(Param::Duration, "duration must be positive");
        }
        if self.omit_ms >= self.duration_ms {
            return e(
                Param::Omit,
                &format!(
                    "--omit ({} s) must be shorter than --time ({} s)",
                    self.omit_ms as f64 / 1000.0,
                    self.duration_ms as f64 / 1000.0
                ),
            );
        }
        if self.interval_ms != 0 && self.interval_ms < defaults::MIN_INTERVAL_MS {
            return e(
                Param::Interval,
                "interval must be at least 0.1 s (or 0 for none)",
            );
        }
        if self.spin_us.is_some_and(|u| u > defaults::MAX_SPIN_US) {
            return e(Param::Spin, "spin must be at most 10000 µs");
        }
        if self.length == 0 {
            return e(Param::Length, "length must be at least 1 byte");
        }
        Ok(())
    }

    /// The optional parameters the kind does not take must be absent.
    pub(crate) fn shape_carries(&self, takes: Takes) -> Result<(), ShapeError> {
        let kind = self.kind.as_str();
        let e = |param, message: String| Err(ShapeError::new(param, &message));
        if self.rdma.is_some() && !takes.rdma {
            return e(
                Param::Rdma,
                format!("a {kind} test carries no RDMA parameters"),
            );
        }
        if self.file.is_some() && !takes.file {
            return e(Param::File, format!("a {kind} test carries no file"));
        }
        if self.discard && !takes.discard {
            return e(
                Param::Discard,
                format!("--discard applies to TCP bandwidth tests only, not {kind}"),
            );
        }
        if self.no_rcvlowat && !takes.no_rcvlowat {
            return e(
                Param::NoRcvlowat,
                format!("--no-rcvlowat applies to TCP bandwidth tests only, not {kind}"),
            );
        }
        if self.soak && !takes.soak {
            return e(Param::Soak, format!("a soak runs TCP traffic, not {kind}"));
        }
        Ok(())
    }

    pub(crate) fn shape_names(&self) -> Result<(), ShapeError> {
        if self.soak && self.interval_ms == 0 {
            return Err(ShapeError::new(
                Param::Interval,
                "a soak samples its counters every interval: the interval must not be 0",
            ));
        }
        if let Some(c) = &self.congestion {
            if c.is_empty()
                || c.len() > 16
                || !c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(ShapeError::new(
                    Param::Congestion,
                    &format!("congestion control `{c}` is not a valid algorithm name"),
                ));
            }
        }
        Ok(())
    }

    /// Streams, duration and window against the server's limits: every kind's.
    pub(crate) fn limits_shared(&self, l: &Limits) -> Result<(), Refusal> {
        let r = |s: String| Err(Refusal::new(RefusalKind::OverLimit, s));
        if self.streams > l.max_streams {
            return r(format!(
                "{} streams requested; this server allows at most {} (serve --max-streams)",
                self.streams, l.max_streams
            ));
        }
        let (max_ms, flag) = if self.soak {
            (l.max_soak_duration_ms, "serve --max-soak-duration")
        } else {
            (l.max_duration_ms, "serve --max-duration")
        };
        if self.duration_ms > max_ms {
            return r(format!(
                "{} s requested; this server allows at most {} s ({flag})",
                self.duration_ms / 1000,
                max_ms / 1000
            ));
        }
        if let Some(w) = self.window {
            if w > l.max_window {
                return r(format!(
                    "window {w} bytes requested; this server allows at most {}",
                    l.max_window
                ));
            }
        }
        Ok(())
    }
}

/// The parameter a [`ShapeError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Streams,
    Duration,
    Omit,
    Interval,
    Spin,
    Length,
    Window,
    Qps,
    Provider,
    Direction,
    File,
    FileName,
    Congestion,
    Rdma,
    Discard,
    NoRcvlowat,
    Soak,
}

impl Param {
    /// The `linerate bench` option that sets it.
    pub fn option(self) -> &'static str {
        match self {
            Self::Streams => "-P",
            Self::Duration => "--time",
            Self::Omit => "--omit",
            Self::Interval => "--interval",
            Self::Spin => "--spin",
            Self::Length => "-l",
            Self::Window => "--window",
            Self::Qps => "--qps",
            Self::Provider => "--provider",
            Self::Direction => "-R/--bidir",
            Self::File => "--file",
            Self::FileName => "--file-name",
            Self::Congestion => "-C",
            Self::Rdma => "--rdma",
            Self::Discard => "--discard",
            Self::NoRcvlowat => "--no-rcvlowat",
            Self::Soak => "linerate soak",
        }
    }
}

/// A request that is not a test whatever the server's limits: which parameter, and what was
/// expected of it (the text a server sends back).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ShapeError {
    pub param: Param,
    pub message: String,
}

impl ShapeError {
    pub(crate) fn new(param: Param, message: &str) -> Self {
        Self {
            param,
            message: message.into(),
        }
    }

    /// The message for the command line: prefixed with the option, unless it names it.
    pub fn with_option(&self) -> String {
        let o = self.param.option();
        if self.message.starts_with(o) {
            self.message.clone()
        } else {
            format!("{o}: {}", self.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soak_is_an_optional_field_of_tcp_tests_only() {
        let p = TestParams::new(TestKind::TcpBw, Direction::Bidir);
        let json = serde_json::to_value(&p).unwrap();
        assert!(json.get("soak").is_none(), "absent unless set: {json}");
        let soak = TestParams {
            soak: true,
            ..p.clone()
        };
        let json = serde_json::to_string(&soak).unwrap();
        assert!(json.contains(r#""soak":true"#), "{json}");
        assert_eq!(serde_json::from_str::<TestParams>(&json).unwrap(), soak);
        assert!(soak.check_shape().is_ok());
        let udp = TestParams {
            soak: true,
            ..TestParams::new(TestKind::UdpBw, Direction::Send)
        };
        let e = udp.check_shape().unwrap_err();
        assert_eq!(e.param, Param::Soak);
        assert!(e.message.contains("udp_bw"), "{}", e.message);
        let quiet = TestParams {
            interval_ms: 0,
            ..soak
        };
        assert_eq!(quiet.check_shape().unwrap_err().param, Param::Interval);
    }

    #[test]
    fn a_soak_has_a_duration_limit_of_its_own() {
        let l = Limits::default();
        let ten_min = |soak| TestParams {
            soak,
            duration_ms: 600_000,
            ..TestParams::new(TestKind::TcpBw, Direction::Bidir)
        };
        // The default soak (10 min) runs on a default server; a 10-minute bench does not.
        assert!(ten_min(true).validate(&l).is_ok());
        let e = ten_min(false).validate(&l).unwrap_err();
        assert!(e.reason.contains("serve --max-duration"), "{}", e.reason);
        let short = Limits {
            max_soak_duration_ms: 300_000,
            ..l.clone()
        };
        let e = ten_min(true).validate(&short).unwrap_err();
        assert!(
            e.reason.contains("serve --max-soak-duration"),
            "{}",
            e.reason
        );
        // A server from before the limit existed sends none: the default applies.
        let mut json = serde_json::to_value(&l).unwrap();
        json.as_object_mut().unwrap().remove("max_soak_duration_ms");
        let old: Limits = serde_json::from_value(json).unwrap();
        assert_eq!(old.max_soak_duration_ms, defaults::MAX_SOAK_DURATION_MS);
    }

    #[test]
    fn every_kind_has_a_default_test_that_passes_the_shape_check() {
        for kind in TestKind::ALL {
            let p = TestParams::new(kind, Direction::Send);
            // A file transfer or an RDMA test needs its spec: the defaults do not invent one.
            let takes = kind.spec().facts().takes;
            let needs_spec = takes.file || takes.rdma;
            assert_eq!(p.check_shape().is_ok(), !needs_spec, "{kind:?}");
            assert_eq!(p.streams, 1);
        }
        // Bulk tests run either way; tests driven by the client do not.
        for kind in [TestKind::TcpBw, TestKind::UdpBw] {
            let p = TestParams::new(kind, Direction::Receive);
            assert_eq!(p.check_shape(), Ok(()), "{kind:?}");
        }
        for kind in [TestKind::TcpLat, TestKind::UdpLat, TestKind::TcpCrr] {
            let e = TestParams::new(kind, Direction::Bidir)
                .check_shape()
                .unwrap_err();
            assert_eq!(e.param, Param::Direction, "{kind:?}");
            assert!(e.with_option().starts_with("-R/--bidir: "), "{e:?}");
        }
        for kind in [TestKind::TcpLat, TestKind::UdpLat] {
            let p = TestParams {
                streams: 2,
                ..TestParams::new(kind, Direction::Send)
            };
            assert_eq!(p.check_shape().unwrap_err().param, Param::Streams);
        }
        assert_eq!(
            TestParams::new(TestKind::UdpBw, Direction::Send).bitrate_bps,
            defaults::UDP_BITRATE_BPS
        );
    }

    #[test]
    fn the_describer_says_what_runs_and_for_how_long() {
        let tcp = TestParams {
            streams: 2,
            duration_ms: 2000,
            ..TestParams::new(TestKind::TcpBw, Direction::Send)
        };
        assert_eq!(tcp.describe(), "TCP send, 2 streams, 2 s");
        let udp = TestParams {
            duration_ms: 1000,
            ..TestParams::new(TestKind::UdpBw, Direction::Receive)
        };
        assert_eq!(udp.describe(), "UDP receive at 1.00 Gb/s, 1 s");
        let crr = TestParams {
            streams: 4,
            ..TestParams::new(TestKind::TcpCrr, Direction::Send)
        };
        assert_eq!(
            crr.describe(),
            "TCP connect/request/response, 1 B messages, 4 streams, 10 s"
        );
        let copy = TestParams {
            file: Some(FileSpec {
                name: "a.bin".into(),
                size: 134_217_728,
                fsync: true,
                remove_after: false,
            }),
            ..TestParams::new(TestKind::FileTransfer, Direction::Send)
        };
        assert_eq!(
            copy.describe(),
            "file copy to the server, 134 MB",
            "a copy ends with its data: no duration"
        );
    }

    pub fn tcp() -> TestParams {
        TestParams {
            length: 128 * 1024,
            ..TestParams::new(TestKind::TcpBw, Direction::Send)
        }
    }

    #[test]
    fn rdma_validation() {
        let l = Limits::default();
        let mut p = tcp();
        p.kind = TestKind::Rdma;
        assert!(p.validate(&l).is_err(), "no rdma spec");
        p.rdma = Some(RdmaSpec {
            op: RdmaOp::Write,
            latency: false,
            provider: Some("tcp".into()),
            window: 16,
            qps: 1,
            verify: false,
            sweep: false,
        });
        p.length = 8 << 20;
        assert!(p.validate(&l).is_ok());
        p.length = (8 << 20) + 1;
        assert!(p.validate(&l).is_err());
        p.length = 1 << 20;
        p.rdma.as_mut().unwrap().window = 0;
        assert!(p.validate(&l).is_err());
        p.rdma.as_mut().unwrap().window = 16;
        p.rdma.as_mut().unwrap().qps = 100;
        assert!(p.validate(&l).is_err());
        p.rdma.as_mut().unwrap().qps = 2;
        p.rdma.as_mut().unwrap().latency = true;
        assert!(p.validate(&l).is_err());
        p.rdma.as_mut().unwrap().latency = false;
        p.rdma.as_mut().unwrap().provider = Some("verbs; rm".into());
        assert!(p.validate(&l).is_err());
        p.rdma.as_mut().unwrap().provider = Some("verbs;ofi_rxm".into());
        assert!(p.validate(&l).is_ok());
        assert_eq!(p.connections(), 2);
        p.rdma.as_mut().unwrap().verify = true;
        assert!(p.validate(&l).is_ok());
        // 2 QPs × (the latency buffer and 16 verified slots of 1 MiB, and 24 control-sized
        // receives and 24 control messages of 64 bytes).
        assert_eq!(p.server_memory_bytes(), 2 * (17 * (1 << 20) + 24 * 128));
        p.length = 8 << 20;
        assert!(p
            .validate(&l)
            .unwrap_err()
            .reason
            .contains("MiB on the server"));
        assert_eq!(p.rdma.as_ref().unwrap().kind(), "rdma_write_bw");
    }

    #[test]
    fn file_names_are_one_plain_component() {
        for bad in [
            "",
            "..",
            ".",
            "../etc/passwd",
            "a/b",
            "/abs",
            ".hidden",
            "a\nb",
            "a\\b",
        ] {
            assert!(FileSpec::check_name(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["data.bin", "x", "file with spaces", "ü.dat", "a..b"] {
            assert!(FileSpec::check_name(good).is_ok(), "{good:?} refused");
        }
        assert!(FileSpec::check_name(&"a".repeat(256)).is_err());
    }

    #[test]
    fn file_ranges_cover_the_file() {
        for (size, n) in [(1u64, 1u32), (10, 3), (1 << 40, 7), (u64::MAX, 64), (5, 5)] {
            let f = FileSpec {
                name: "f".into(),
                size,
                fsync: false,
                remove_after: false,
            };
            let mut next = 0u64;
            for i in 0..n {
                let (start, len) = f.range(i, n);
                assert_eq!(start, next);
                next = start + len;
            }
            assert_eq!(next, size);
        }
    }

    #[test]
    fn file_transfer_validation() {
        let l = Limits {
            max_file_bytes: 1000,
            ..Limits::default()
        };
        let mut p = tcp();
        p.kind = TestKind::FileTransfer;
        assert!(p.validate(&l).is_err(), "no file");
        p.file = Some(FileSpec {
            name: "ok.bin".into(),
            size: 1000,
            fsync: true,
            remove_after: false,
        });
        assert!(p.validate(&l).is_ok());
        p.direction = Direction::Receive;
        assert!(p.validate(&l).is_err());
        p.direction = Direction::Send;
        p.duration_ms = u64::MAX;
        p.fit(&l);
        assert_eq!(
            p.duration_ms, l.max_duration_ms,
            "a copy's time limit is lowered"
        );
        assert!(p.validate(&l).is_ok());
        p.file.as_mut().unwrap().size = 1001;
        assert!(p
            .validate(&l)
            .unwrap_err()
            .reason
            .contains("--max-file-size"));
        p.file.as_mut().unwrap().size = 0;
        assert!(p.validate(&l).is_err());
        p.file.as_mut().unwrap().size = 10;
        p.file.as_mut().unwrap().name = "../x".into();
        assert!(p.validate(&l).is_err());
        let mut q = tcp();
        q.file = p.file.clone();
        q.file.as_mut().unwrap().name = "x".into();
        assert!(q.validate(&l).is_err(), "tcp_bw with a file");
        p.file.as_mut().unwrap().name = "x".into();
        assert_eq!(
            p.server_memory_bytes(),
            u64::from(FILE_BUFFERS) * 128 * 1024
        );
    }

    #[test]
    fn absurd_requests_refused() {
        let l = Limits::default();
        assert!(tcp().validate(&l).is_ok());
        let mut p = tcp();
        p.streams = 100_000;
        assert!(p.validate(&l).unwrap_err().reason.contains("--max-streams"));
        let mut p = tcp();
        p.duration_ms = 10 * 365 * 24 * 3600 * 1000;
        assert!(p
            .validate(&l)
            .unwrap_err()
            .reason
            .contains("--max-duration"));
        let mut p = tcp();
        p.length = u32::MAX;
        assert!(p.validate(&l).is_err());
        let mut p = tcp();
        p.window = Some(u32::MAX);
        assert!(p.validate(&l).is_err());
        let mut p = tcp();
        p.congestion = Some("bbr; rm -rf /".into());
        assert!(p.validate(&l).is_err());
        let mut p = tcp();
        p.omit_ms = 20_000;
        assert!(p.validate(&l).is_err());
    }

    #[test]
    fn spin_is_capped_to_the_servers_limit() {
        let l = Limits {
            max_spin_us: 50,
            ..Limits::default()
        };
        let mut p = TestParams {
            spin_us: Some(5000),
            ..TestParams::new(TestKind::TcpLat, Direction::Send)
        };
        p.fit(&l);
        assert_eq!(p.spin_us, Some(50));
        assert!(p.validate(&l).is_ok());
        let mut q = TestParams {
            spin_us: Some(20),
            ..TestParams::new(TestKind::TcpLat, Direction::Send)
        };
        q.fit(&l);
        assert_eq!(q.spin_us, Some(20), "a request within the limit is kept");
        let mut z = q.clone();
        z.fit(&Limits {
            max_spin_us: 0,
            ..Limits::default()
        });
        assert_eq!(z.spin_us, Some(0), "--max-spin 0: the server always blocks");
        // A server's limits from before --max-spin existed grant the default.
        let old: Limits = serde_json::from_str(
            r#"{"max_tests":1,"max_streams":1,"max_duration_ms":1000,"max_udp_bitrate_bps":0,"max_length":1024,"max_window":1024}"#,
        )
        .unwrap();
        assert_eq!(old.max_spin_us, defaults::SERVE_MAX_SPIN_US);
    }

    /// A TCP-bandwidth-only flag: absent from the wire when off, round-trips when on, refused
    /// with its option's name on another kind of test.
    fn tcp_bw_only_flag(set: fn(&mut TestParams), key: &str, param: Param, option: &str) {
        let mut p = tcp();
        assert!(!serde_json::to_string(&p).unwrap().contains(key));
        set(&mut p);
        assert!(p.check_shape().is_ok());
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(&format!(r#""{key}":true"#)), "{json}");
        assert_eq!(serde_json::from_str::<TestParams>(&json).unwrap(), p);
        for kind in [TestKind::TcpLat, TestKind::UdpBw] {
            let mut other = TestParams::new(kind, Direction::Send);
            set(&mut other);
            let e = other.check_shape().unwrap_err();
            assert_eq!(e.param, param);
            assert!(e.with_option().starts_with(option), "{}", e.with_option());
        }
    }

    #[test]
    fn discard_and_no_rcvlowat_are_for_tcp_bandwidth_and_absent_from_the_wire_when_off() {
        tcp_bw_only_flag(|p| p.discard = true, "discard", Param::Discard, "--discard");
        tcp_bw_only_flag(
            |p| p.no_rcvlowat = true,
            "no_rcvlowat",
            Param::NoRcvlowat,
            "--no-rcvlowat",
        );
    }

    #[test]
    fn udp_bitrate_limit() {
        let l = Limits {
            max_udp_bitrate_bps: 1_000_000_000,
            ..Limits::default()
        };
        let mut p = tcp();
        p.kind = TestKind::UdpBw;
        p.length = 1400;
        p.bitrate_bps = 0;
        assert!(p.validate(&l).is_err());
        p.bitrate_bps = 500_000_000;
        assert!(p.validate(&l).is_ok());
    }

    #[test]
    fn memory_is_bounded_by_limits() {
        let l = Limits::default();
        let mut p = tcp();
        p.streams = l.max_streams;
        p.direction = Direction::Bidir;
        p.length = l.max_length;
        assert!(p.validate(&l).is_ok());
        // 64 streams × 2 directions × 1 MiB = 128 MiB worst case with default limits.
        assert_eq!(p.server_memory_bytes(), 128 * 1024 * 1024);
        // Small writes: a batched receiver still reads up to 1 MiB, a sender holds its write.
        p.length = 128 * 1024;
        assert_eq!(p.server_memory_bytes(), 64 * ((1 << 20) + (128 << 10)));
        p.direction = Direction::Receive;
        assert_eq!(p.server_memory_bytes(), 64 * (128 << 10));
        p.direction = Direction::Send;
        assert_eq!(p.server_memory_bytes(), 64 << 20);
        p.no_rcvlowat = true;
        assert_eq!(p.server_memory_bytes(), 64 * (128 << 10));
    }
}
