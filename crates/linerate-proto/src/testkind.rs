//! The kinds of test as data: [`TestKind`] as it travels in `params.kind`, and the shape of
//! each kind's table ([`Facts`]: what it measures, how it ends, the optional parameters it
//! takes). The tables themselves and each kind's behaviour are in [`crate::kind`].

use serde::{Deserialize, Serialize};

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
