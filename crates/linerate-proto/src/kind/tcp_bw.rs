//! `tcp_bw`: TCP bulk transfer, one connection per stream and direction.

use super::{
    direction_words, limit_length, streams_each_way, streams_words, EndsBy, Measures, Spec, Takes,
};
use crate::params::{Limits, Refusal, ShapeError, TestParams};
use crate::{defaults, Direction};

pub(super) struct TcpBw;

impl Spec for TcpBw {
    fn name(&self) -> &'static str {
        "tcp_bw"
    }

    fn result_kinds(&self) -> &'static [&'static str] {
        &["tcp_bw"]
    }

    fn measures(&self) -> Measures {
        Measures::Throughput
    }

    fn ends_by(&self) -> EndsBy {
        EndsBy::Time
    }

    fn takes(&self) -> Takes {
        Takes {
            file: false,
            rdma: false,
            discard: true,
            no_rcvlowat: true,
            soak: true,
        }
    }

    fn default_length(&self, p: &TestParams) -> u32 {
        defaults::default_length(p.streams, p.direction == Direction::Bidir)
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    fn default_bitrate_bps(&self) -> u64 {
        defaults::TCP_BITRATE_BPS
    }

    fn default_duration_ms(&self) -> u64 {
        defaults::DURATION_MS
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
