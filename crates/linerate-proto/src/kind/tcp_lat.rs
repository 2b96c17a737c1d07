//! `tcp_lat`: request/response round trips on one TCP connection.

use super::{limit_length, one_client_stream, EndsBy, Facts, Measures, Spec, Takes, Transaction};
use crate::defaults;
use crate::params::{Limits, Refusal, ShapeError, TestParams};

pub(super) struct TcpLat;

const FACTS: Facts = Facts {
    name: "tcp_lat",
    result_kinds: &["tcp_lat"],
    measures: Measures::Transactions(Transaction::RoundTrip),
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

impl Spec for TcpLat {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn default_length(&self, _: &TestParams) -> u32 {
        defaults::LATENCY_LENGTH
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    fn connections(&self, _: &TestParams) -> u32 {
        1
    }

    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        super::per_connection_memory(p)
    }

    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError> {
        one_client_stream(p, "a latency test")
    }

    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        limit_length(p, l)
    }

    fn words(&self, p: &TestParams) -> String {
        format!(
            "TCP latency, {} messages",
            linerate_units::fmt_bytes(u64::from(p.length))
        )
    }
}
