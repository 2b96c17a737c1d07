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

use crate::params::{Limits, Param, Refusal, RefusalKind, ShapeError, TestParams};
pub(crate) use crate::testkind::{EndsBy, Facts, Measures, Takes, Transaction};
use crate::{defaults, Direction, TestKind};

mod file_transfer;
mod rdma;
mod tcp_bw;
mod tcp_crr;
mod tcp_lat;
mod udp_bw;
mod udp_lat;

impl TestKind {
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

/// What depends on the kind, asked of the parameters: each goes to the kind's [`Spec`].
impl TestParams {
    /// A `kind` test in `direction` with the defaults of [`defaults`] and of its kind: one
    /// stream for the default time, no warm-up, one-second intervals, the kind's default length
    /// and rate, no window, congestion control, zero copy, spin, file or RDMA spec. Callers set
    /// what differs: `TestParams { streams: 4, ..TestParams::new(k, d) }`.
    pub fn new(kind: TestKind, direction: Direction) -> Self {
        let spec = kind.spec();
        let mut p = Self {
            kind,
            direction,
            streams: 1,
            duration_ms: defaults::DURATION_MS,
            omit_ms: defaults::OMIT_MS,
            interval_ms: defaults::INTERVAL_MS,
            length: 0,
            window: None,
            bitrate_bps: spec.facts().default_bitrate_bps,
            congestion: None,
            zerocopy: false,
            spin_us: None,
            discard: false,
            no_rcvlowat: false,
            file: None,
            rdma: None,
            soak: false,
        };
        p.length = spec.default_length(&p);
        p
    }

    /// Data connections (directions × streams, queue pairs, ...), as the kind counts them.
    pub fn connections(&self) -> u32 {
        self.kind.spec().connections(self)
    }

    /// Buffer memory the server holds for this test, bytes.
    pub fn server_memory_bytes(&self) -> u64 {
        self.kind.spec().server_memory_bytes(self)
    }

    /// The test in words, without its duration (`TCP send, 4 streams`): its kind's describer.
    pub fn words(&self) -> String {
        self.kind.spec().words(self)
    }

    /// The test in a few words with its duration, for progress lines and reports
    /// (`TCP send, 1 stream, 4 s`); a test that ends with its data says no duration.
    pub fn describe(&self) -> String {
        match self.kind.spec().facts().ends_by {
            EndsBy::Time => format!("{}, {} s", self.words(), self.duration_ms as f64 / 1000.0),
            EndsBy::Data => self.words(),
        }
    }

    /// What the server adjusts instead of refusing: the duration of a test that ends with its
    /// data (a file copy) is a time limit, so it becomes the lower of the client's and the
    /// server's. Call before [`Self::validate`]. A latency test's busy-poll is a request too:
    /// the server's echo polls at most `max_spin_us` (the caller compares to say it was capped).
    pub fn fit(&mut self, l: &Limits) {
        if self.kind.spec().facts().ends_by == EndsBy::Data {
            self.duration_ms = self.duration_ms.min(l.max_duration_ms);
        }
        if let Some(s) = self.spin_us.as_mut() {
            *s = (*s).min(l.max_spin_us);
        }
    }

    /// Is this a test at all, whatever a server allows? The client checks this before it
    /// connects; the server checks it first in [`Self::validate`]. The checks every kind
    /// shares, then the kind's own.
    pub fn check_shape(&self) -> Result<(), ShapeError> {
        let spec = self.kind.spec();
        self.shape_timing()?;
        self.shape_carries(spec.facts().takes)?;
        spec.check_shape(self)?;
        self.shape_names()
    }

    /// Check against the server's limits (after [`Self::check_shape`], which it calls).
    pub fn validate(&self, l: &Limits) -> Result<(), Refusal> {
        self.check_shape()
            .map_err(|e| Refusal::new(RefusalKind::InvalidParams, e.message))?;
        self.limits_shared(l)?;
        self.kind.spec().check_limits(self, l)
    }
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
