//! `udp_bw`: UDP at a paced rate per stream; the receiver counts loss, order and jitter.

use super::{
    direction_words, limit_length, streams_each_way, streams_words, udp_length, EndsBy, Facts,
    Measures, Spec, Takes,
};
use crate::defaults;
use crate::params::{Limits, Refusal, RefusalKind, ShapeError, TestParams};

pub(super) struct UdpBw;

const FACTS: Facts = Facts {
    name: "udp_bw",
    result_kinds: &["udp_bw"],
    measures: Measures::Throughput,
    ends_by: EndsBy::Time,
    takes: Takes {
        file: false,
        rdma: false,
        discard: false,
        no_rcvlowat: false,
        soak: false,
    },
    default_bitrate_bps: defaults::UDP_BITRATE_BPS,
    default_duration_ms: defaults::DURATION_MS,
};

impl Spec for UdpBw {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn default_length(&self, _: &TestParams) -> u32 {
        defaults::UDP_LENGTH
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    fn connections(&self, p: &TestParams) -> u32 {
        streams_each_way(p)
    }

    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        super::per_connection_memory(p)
    }

    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError> {
        udp_length(
            p,
            defaults::UDP_BW_MIN_LENGTH,
            "UDP length must be at least 24 bytes (stream, sequence number and timestamp)",
        )
    }

    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        limit_length(p, l)?;
        if let Some(why) = l.udp_bitrate_refusal(p.bitrate_bps) {
            return Err(Refusal::new(RefusalKind::OverLimit, why));
        }
        Ok(())
    }

    fn words(&self, p: &TestParams) -> String {
        let rate = if p.bitrate_bps == 0 {
            "full speed".to_string()
        } else {
            format!(
                "{} Gb/s",
                linerate_units::fmt_sig(linerate_units::bps_to_gbps(p.bitrate_bps as f64))
            )
        };
        let dir = direction_words(p.direction);
        if p.streams == 1 {
            format!("UDP {dir} at {rate}")
        } else {
            format!("UDP {dir}, {} at {rate} each", streams_words(p.streams))
        }
    }
}
