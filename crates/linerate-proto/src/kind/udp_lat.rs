//! `udp_lat`: request/response round trips over UDP; a request unanswered in 200 ms is lost.

use super::{
    limit_length, one_client_stream, udp_length, EndsBy, Facts, Measures, Spec, Takes, Transaction,
};
use crate::defaults;
use crate::params::{Limits, Refusal, ShapeError, TestParams};

pub(super) struct UdpLat;

const FACTS: Facts = Facts {
    name: "udp_lat",
    result_kinds: &["udp_lat"],
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

impl Spec for UdpLat {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn default_length(&self, _: &TestParams) -> u32 {
        defaults::UDP_LAT_MIN_LENGTH
    }

    /// A request carries its sequence number: shorter ones are sent as that many bytes.
    fn fit_length(&self, length: u32) -> u32 {
        length.max(defaults::UDP_LAT_MIN_LENGTH)
    }

    fn connections(&self, _: &TestParams) -> u32 {
        1
    }

    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        super::per_connection_memory(p)
    }

    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError> {
        udp_length(
            p,
            defaults::UDP_LAT_MIN_LENGTH,
            "UDP request length must be at least 8 bytes (sequence number)",
        )?;
        one_client_stream(p, "a latency test")
    }

    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        limit_length(p, l)
    }

    fn words(&self, p: &TestParams) -> String {
        format!(
            "UDP latency, {} messages",
            linerate_units::fmt_bytes(u64::from(p.length))
        )
    }
}
