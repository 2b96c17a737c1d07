//! `tcp_crr`: the TCP connection rate, as netperf's TCP_CRR measures it. Each transaction is a
//! connection of its own: connect, send a request, read the response, see the server close,
//! close. It measures what a short-lived connection costs the path and both hosts (the
//! handshake, the kernel's connection setup and teardown, conntrack and firewall state), which
//! bulk and round-trip tests on one long-lived connection never touch: connections per second
//! and the latency of each, per stream and in total.
//!
//! The server closes first, as an HTTP/1.0 server does, so the TIME_WAIT state is kept on the
//! server (whose port is fixed) and the client's ephemeral ports come free at once.

use super::{
    from_the_client, limit_length, streams_words, EndsBy, Facts, Measures, Spec, Takes, Transaction,
};
use crate::defaults;
use crate::params::{Limits, Refusal, ShapeError, TestParams};

pub(super) struct TcpCrr;

const FACTS: Facts = Facts {
    name: "tcp_crr",
    result_kinds: &["tcp_crr"],
    measures: Measures::Transactions(Transaction::Connection),
    ends_by: EndsBy::Time,
    takes: Takes {
        file: false,
        rdma: false,
        discard: false,
        no_rcvlowat: false,
        soak: false,
    },
    default_bitrate_bps: defaults::TCP_BITRATE_BPS,
    default_duration_ms: defaults::DURATION_MS,
};

impl Spec for TcpCrr {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    /// netperf's TCP_CRR default: a 1-byte request and a 1-byte response.
    fn default_length(&self, _: &TestParams) -> u32 {
        defaults::LATENCY_LENGTH
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    /// One connecting loop per stream on the client, one accepting thread per stream on the
    /// server.
    fn connections(&self, p: &TestParams) -> u32 {
        p.streams
    }

    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        super::per_connection_memory(p)
    }

    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError> {
        from_the_client(p, "a connection-rate test")
    }

    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        limit_length(p, l)
    }

    fn words(&self, p: &TestParams) -> String {
        format!(
            "TCP connect/request/response, {} messages, {}",
            linerate_units::fmt_bytes(u64::from(p.length)),
            streams_words(p.streams)
        )
    }
}
