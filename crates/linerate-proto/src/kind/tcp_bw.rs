//! `tcp_bw`: TCP bulk transfer, one connection per stream and direction.

use super::{
    direction_words, limit_length, streams_each_way, streams_words, EndsBy, Facts, Measures, Spec,
    Takes,
};
use crate::params::{Limits, Refusal, ShapeError, TestParams};
use crate::{defaults, Direction};

pub(super) struct TcpBw;

const FACTS: Facts = Facts {
    name: "tcp_bw",
    result_kinds: &["tcp_bw"],
    measures: Measures::Throughput,
    ends_by: EndsBy::Time,
    takes: Takes {
        file: false,
        rdma: false,
        discard: true,
        no_rcvlowat: true,
        soak: true,
    },
    default_bitrate_bps: defaults::TCP_BITRATE_BPS,
    default_duration_ms: defaults::DURATION_MS,
};

impl Spec for TcpBw {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn default_length(&self, p: &TestParams) -> u32 {
        defaults::default_length(p.streams, p.direction == Direction::Bidir)
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    fn connections(&self, p: &TestParams) -> u32 {
        streams_each_way(p)
    }

    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        let per = u64::from(p.length.max(64 * 1024));
        if p.no_rcvlowat {
            return u64::from(p.connections()) * per;
        }
        // A batched receiver reads up to RECV_BATCH_BYTES at a time.
        let recv = per.max(u64::from(defaults::RECV_BATCH_BYTES));
        let streams = u64::from(p.streams);
        match p.direction {
            Direction::Send => streams * recv,
            Direction::Receive => streams * per,
            Direction::Bidir => streams * (recv + per),
        }
    }

    fn check_shape(&self, _: &TestParams) -> Result<(), ShapeError> {
        Ok(())
    }

    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        limit_length(p, l)
    }

    fn words(&self, p: &TestParams) -> String {
        format!(
            "TCP {}, {}{}",
            direction_words(p.direction),
            streams_words(p.streams),
            if p.discard {
                ", receiver discarding (MSG_TRUNC)"
            } else {
                ""
            }
        )
    }
}
