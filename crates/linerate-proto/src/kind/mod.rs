//! The test kinds: one module per kind, each a table of [`Facts`] and a [`Spec`] that say
//! everything about the kind a pure crate can say (its name, what it measures, its defaults,
//! its connections and server memory, its shape and limit checks, its words), registered once
//! in [`TestKind::spec`].
//!
//! What each end *does* (the engines on its data connections, the server's admission, the
//! assembly of results) is I/O and lives in `linerate-bench`'s `kind` modules, one per kind
//! again, registered the same way. A new kind is a module here and one there, a variant of
//! [`TestKind`], and an arm in each registration; the compiler names every field, method and
//! arm left (the tables and traits have no defaults, the matches no catch-all).

use serde::{Deserialize, Serialize};

use crate::params::{Limits, Param, Refusal, RefusalKind, ShapeError, TestParams};
use crate::{defaults, Direction};

mod file_transfer;
mod rdma;
mod tcp_bw;
mod tcp_crr;
mod tcp_lat;
mod udp_bw;
mod udp_lat;

/// A kind of test, as it travels in `params.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// TCP bulk transfer: throughput per direction and stream.
    TcpBw,
    /// UDP at a paced rate: throughput, loss, jitter.
    UdpBw,
    /// TCP request/response round trips on one connection.
    TcpLat,
    /// UDP request/response round trips.
    UdpLat,
    /// Disk → network → disk: the client sends a file, the server writes it
    /// into the directory its operator allowed (`serve --write-dir`).
    FileTransfer,
    /// RDMA through libfabric: write, read or send; bandwidth or latency (`params.rdma`).
    Rdma,
    /// TCP connection rate (netperf's TCP_CRR): connect, request, response, close, repeated;
    /// connections per second and the latency of each.
    TcpCrr,
}

impl TestKind {
    /// Every kind, in the order of the enum (a test holds it to the enum).
    pub const ALL: [TestKind; 7] = [
        Self::TcpBw,
        Self::UdpBw,
        Self::TcpLat,
        Self::UdpLat,
        Self::FileTransfer,
        Self::Rdma,
        Self::TcpCrr,
    ];

    /// The kind's module: the registration of every kind.
    pub fn spec(self) -> &'static dyn Spec {
        match self {
            Self::TcpBw => &tcp_bw::TcpBw,
            Self::UdpBw => &udp_bw::UdpBw,
            Self::TcpLat => &tcp_lat::TcpLat,
            Self::UdpLat => &udp_lat::UdpLat,
            Self::FileTransfer => &file_transfer::FileTransfer,
            Self::Rdma => &rdma::Rdma,
            Self::TcpCrr => &tcp_crr::TcpCrr,
        }
    }

    /// The wire name (`tcp_bw`).
    pub fn as_str(self) -> &'static str {
        self.spec().facts().name
    }

    /// The kind of a wire name, if there is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// A transaction test (request/response round trips, connections): latency and rate, not
    /// bytes per second.
    pub fn is_latency(self) -> bool {
        self.transaction().is_some()
    }

    /// What one transaction of a transaction test is (None: not a transaction test).
    pub fn transaction(self) -> Option<Transaction> {
        match self.spec().facts().measures {
            Measures::Transactions(t) => Some(t),
            Measures::Throughput | Measures::Copy | Measures::Rdma => None,
        }
    }
}

impl std::fmt::Display for TestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a kind measures: the shape of its results, and so of its interval lines and summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measures {
    /// Bytes per second, per direction and stream.
    Throughput,
    /// Transactions: their latency distribution and their rate (intervals count transactions).
    Transactions(Transaction),
    /// A file copied disk to disk: each layer's rate and the slowest.
    Copy,
    /// RDMA operations: bandwidth per message size, or latency.
    Rdma,
}

/// What one transaction of a transaction test is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transaction {
    /// A request and its response on a connection (or flow) that stays open.
    RoundTrip,
    /// A connection of its own: connect, request, response, close.
    Connection,
}

impl Transaction {
    /// `round trip`, `connection`: what the latency figures are of.
    pub fn noun(self) -> &'static str {
        match self {
            Self::RoundTrip => "round trip",
            Self::Connection => "connection",
        }
    }

    /// `transactions/s`, `connections/s`: the rate's unit.
    pub fn rate_unit(self) -> &'static str {
        match self {
            Self::RoundTrip => "transactions/s",
            Self::Connection => "connections/s",
        }
    }
}

/// How a kind's test ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndsBy {
    /// At the end of its duration.
    Time,
    /// When its data is moved (a file copied); the duration is only a limit, which the server
    /// lowers to its own instead of refusing ([`TestParams::fit`]).
    Data,
}

/// The optional parameters a kind takes; the others must be absent, and a request carrying
/// one is refused naming its option. Each kind lists all of them (no default), so a new
/// optional parameter makes the compiler ask every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)]
pub struct Takes {
    /// `params.file` (`--file`).
    pub file: bool,
    /// `params.rdma` (`--rdma`).
    pub rdma: bool,
    /// `params.discard` (`--discard`).
    pub discard: bool,
    /// `params.no_rcvlowat` (`--no-rcvlowat`).
    pub no_rcvlowat: bool,
    /// `params.soak` (`linerate soak`).
    pub soak: bool,
}

/// What a kind is, as a table: one per kind, in its module, with every field (no default, so a
/// new field makes the compiler ask every kind).
#[derive(Debug)]
pub struct Facts {
    /// The wire name (`tcp_bw`).
    pub name: &'static str,
    /// The names its results carry in their `kind` (`[name]`; RDMA's name the operation and
    /// whether it was bandwidth or latency): what the schemas' enums must list.
    pub result_kinds: &'static [&'static str],
    /// What it measures.
    pub measures: Measures,
    /// How it ends.
    pub ends_by: EndsBy,
    /// The optional parameters it takes.
    pub takes: Takes,
    /// The rate per stream when none is given, bit/s (0: as fast as possible).
    pub default_bitrate_bps: u64,
    /// The duration when none is given, ms.
    pub default_duration_ms: u64,
}

/// Everything a pure crate knows about one kind of test: its table of facts, and what depends on
/// the parameters. Implemented once per kind, in the kind's module; no method has a default.
pub trait Spec: Sync {
    /// The kind's table.
    fn facts(&self) -> &'static Facts;
    /// The test's length when none is given (`-l`): bytes per write, datagram or message,
    /// chosen from the rest of `p` (streams, direction, the RDMA spec).
    fn default_length(&self, p: &TestParams) -> u32;
    /// The length a request for `length` bytes is sent as: what a message of this kind cannot
    /// be shorter than (a UDP latency request carries its sequence number), else `length`.
    fn fit_length(&self, length: u32) -> u32;
    /// Data connections (streams × directions, queue pairs, ...).
    fn connections(&self, p: &TestParams) -> u32;
    /// Buffer memory the server holds for the test, bytes.
    fn server_memory_bytes(&self, p: &TestParams) -> u64;
    /// Is `p` a test of this kind at all, beyond the checks every kind shares (timing, the
    /// optional parameters it does not take, names)?
    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError>;
    /// Is it within the server's limits, beyond those every kind shares (streams, duration,
    /// window)?
    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal>;
    /// The test in words, without its duration: `TCP send, 4 streams`. The one describer of a
    /// test: bench's header and summary, doctor's progress, text and HTML reports.
    fn words(&self, p: &TestParams) -> String;
}

// Helpers the kinds share.

/// `1 stream`, `4 streams`.
pub(crate) fn streams_words(n: u32) -> String {
    format!("{n} stream{}", if n == 1 { "" } else { "s" })
}

/// `send`, `receive`, `bidirectional`.
pub(crate) fn direction_words(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Receive => "receive",
        Direction::Bidir => "bidirectional",
    }
}

/// `8 B`, `64 KiB`, `8 MiB`: message sizes as perftest and netperf users know them.
pub(crate) fn bytes_iec(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// Each connection at the test's length, at least 64 KiB (a socket's own buffers).
pub(crate) fn per_connection_memory(p: &TestParams) -> u64 {
    u64::from(p.connections()) * u64::from(p.length.max(64 * 1024))
}

/// Streams × directions: a bidirectional test has a connection each way per stream.
pub(crate) fn streams_each_way(p: &TestParams) -> u32 {
    if p.direction == Direction::Bidir {
        p.streams.saturating_mul(2)
    } else {
        p.streams
    }
}

/// One request/response stream, driven by the client.
pub(crate) fn one_client_stream(p: &TestParams, what: &str) -> Result<(), ShapeError> {
    if p.streams != 1 {
        return Err(ShapeError::new(
            Param::Streams,
            &format!("{what} runs one request/response stream: drop -P"),
        ));
    }
    from_the_client(p, what)
}

/// A test driven by the client: no `-R`, no `--bidir`.
pub(crate) fn from_the_client(p: &TestParams, what: &str) -> Result<(), ShapeError> {
    if p.direction != Direction::Send {
        return Err(ShapeError::new(
            Param::Direction,
            &format!("{what} runs from the client: drop -R and --bidir"),
        ));
    }
    Ok(())
}

/// A UDP payload between `min` bytes (the kind's header; `too_short` says so) and the largest
/// datagram.
pub(crate) fn udp_length(p: &TestParams, min: u32, too_short: &str) -> Result<(), ShapeError> {
    let e = |message: String| Err(ShapeError::new(Param::Length, &message));
    if p.length > defaults::UDP_MAX_LENGTH {
        return e(format!(
            "UDP length {} bytes exceeds the 65507-byte maximum datagram payload",
            p.length
        ));
    }
    if p.length < min {
        return e(too_short.to_string());
    }
    Ok(())
}

/// The length against the server's `--max-length`.
pub(crate) fn limit_length(p: &TestParams, l: &Limits) -> Result<(), Refusal> {
    if p.length > l.max_length {
        return Err(Refusal::new(
            RefusalKind::OverLimit,
            format!(
                "length {} bytes requested; this server allows at most {} (serve --max-length)",
                p.length, l.max_length
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_kind_once_in_the_order_of_the_enum() {
        // The match has no catch-all: a new variant makes the compiler ask for its place here,
        // and this test then holds ALL to it.
        let index = |k: TestKind| match k {
            TestKind::TcpBw => 0,
            TestKind::UdpBw => 1,
            TestKind::TcpLat => 2,
            TestKind::UdpLat => 3,
            TestKind::FileTransfer => 4,
            TestKind::Rdma => 5,
            TestKind::TcpCrr => 6,
        };
        for (i, k) in TestKind::ALL.into_iter().enumerate() {
            assert_eq!(index(k), i, "{k:?}");
        }
    }

    #[test]
    fn wire_names_are_the_serde_names_and_round_trip() {
        for k in TestKind::ALL {
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::from(k.as_str())
            );
            assert_eq!(TestKind::from_name(k.as_str()), Some(k));
        }
        assert_eq!(TestKind::from_name("tcp_rr"), None);
    }

    #[test]
    fn an_rdma_result_is_named_as_its_kind_says() {
        use crate::{RdmaOp, RdmaSpec};
        let names = TestKind::Rdma.spec().facts().result_kinds;
        for op in [RdmaOp::Write, RdmaOp::Read, RdmaOp::Send] {
            for latency in [false, true] {
                let r = RdmaSpec {
                    op,
                    latency,
                    provider: None,
                    window: 1,
                    qps: 1,
                    verify: false,
                    sweep: false,
                };
                assert!(names.contains(&r.kind()), "{}", r.kind());
            }
        }
        for k in TestKind::ALL.into_iter().filter(|k| *k != TestKind::Rdma) {
            assert_eq!(k.spec().facts().result_kinds, [k.as_str()], "{k:?}");
        }
    }

    #[test]
    fn every_kind_describes_its_default_test_and_states_its_defaults() {
        for k in TestKind::ALL {
            let p = TestParams::new(k, Direction::Send);
            let s = k.spec();
            assert!(!s.words(&p).is_empty(), "{k:?}");
            assert!(p.length >= 1, "{k:?}: default length {}", p.length);
            assert_eq!(p.length, s.fit_length(p.length), "{k:?}");
            assert_eq!(p.bitrate_bps, s.facts().default_bitrate_bps, "{k:?}");
            assert!(s.facts().default_duration_ms > 0, "{k:?}");
            assert!(p.connections() >= 1, "{k:?}");
            assert!(p.server_memory_bytes() > 0, "{k:?}");
        }
    }
}
