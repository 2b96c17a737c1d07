//! `rdma`: RDMA write, read or send through libfabric, bandwidth or latency (`params.rdma`).

use super::{EndsBy, Facts, Measures, Spec, Takes};
use crate::defaults;
use crate::params::{
    Limits, Param, RdmaOp, Refusal, RefusalKind, ShapeError, TestParams, RDMA_CTRL_EXTRA,
    RDMA_CTRL_SIZE, RDMA_MAX_MESSAGE, RDMA_MAX_QPS, RDMA_MAX_WINDOW,
};

pub(super) struct Rdma;

const FACTS: Facts = Facts {
    name: "rdma",
    result_kinds: &[
        "rdma_write_bw",
        "rdma_read_bw",
        "rdma_send_bw",
        "rdma_write_lat",
        "rdma_read_lat",
        "rdma_send_lat",
    ],
    measures: Measures::Rdma,
    ends_by: EndsBy::Time,
    takes: Takes {
        file: false,
        rdma: true,
        discard: false,
        no_rcvlowat: false,
        soak: false,
    },
    default_bitrate_bps: defaults::TCP_BITRATE_BPS,
    default_duration_ms: defaults::DURATION_MS,
};

impl Spec for Rdma {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn default_length(&self, p: &TestParams) -> u32 {
        match &p.rdma {
            Some(r) if r.sweep => defaults::RDMA_SWEEP_LENGTH,
            Some(r) if r.latency => defaults::RDMA_LATENCY_LENGTH,
            _ => defaults::RDMA_LENGTH,
        }
    }

    fn fit_length(&self, length: u32) -> u32 {
        length
    }

    /// One connection per queue pair.
    fn connections(&self, p: &TestParams) -> u32 {
        p.rdma.as_ref().map_or(p.streams, |r| r.qps)
    }

    fn server_memory_bytes(&self, p: &TestParams) -> u64 {
        let Some(r) = &p.rdma else {
            return super::per_connection_memory(p);
        };
        // The region each queue pair registers, laid out as the RDMA engine does (a test in
        // linerate-bench holds the two equal): the latency buffer and one data slot per
        // outstanding message when verifying (else one); a receive per outstanding message
        // plus RDMA_CTRL_EXTRA, each message-sized for sends (else control-sized); as many
        // control messages.
        let length = u64::from(p.length);
        let window = u64::from(r.window);
        let slots = if r.verify { window } else { 1 };
        let rx_size = if r.op == RdmaOp::Send {
            length.max(RDMA_CTRL_SIZE)
        } else {
            RDMA_CTRL_SIZE
        };
        let per_qp = length
            .saturating_mul(1 + slots)
            .saturating_add((window + RDMA_CTRL_EXTRA).saturating_mul(rx_size + RDMA_CTRL_SIZE));
        u64::from(r.qps).saturating_mul(per_qp)
    }

    fn check_shape(&self, p: &TestParams) -> Result<(), ShapeError> {
        let e = |param, message: String| Err(ShapeError::new(param, &message));
        let Some(x) = &p.rdma else {
            return e(Param::Rdma, "an RDMA test needs its operation".into());
        };
        if p.length > RDMA_MAX_MESSAGE {
            return e(
                Param::Length,
                format!(
                    "RDMA message of {} bytes: at most {RDMA_MAX_MESSAGE} (8 MiB)",
                    p.length
                ),
            );
        }
        if x.window == 0 || x.window > RDMA_MAX_WINDOW {
            return e(
                Param::Window,
                format!("RDMA window {}: between 1 and {RDMA_MAX_WINDOW}", x.window),
            );
        }
        if x.qps == 0 || x.qps > RDMA_MAX_QPS {
            return e(
                Param::Qps,
                format!("{} queue pairs: between 1 and {RDMA_MAX_QPS}", x.qps),
            );
        }
        if x.latency && x.qps > 1 {
            return e(
                Param::Qps,
                "an RDMA latency test runs on one queue pair".into(),
            );
        }
        if x.sweep && x.qps > 1 {
            return e(Param::Qps, "an RDMA sweep runs on one queue pair".into());
        }
        if x.provider.as_ref().is_some_and(|p| {
            p.is_empty()
                || p.len() > 32
                || !p
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b';')
        }) {
            return e(
                Param::Provider,
                "the RDMA provider name is not valid".into(),
            );
        }
        if p.direction != crate::Direction::Send {
            return e(
                Param::Direction,
                "an RDMA test runs from the client (no -R or --bidir; use --op read to pull)"
                    .into(),
            );
        }
        if p.streams != 1 {
            return e(
                Param::Streams,
                "-P does not apply to --rdma: use --qps N for parallel queue pairs".into(),
            );
        }
        Ok(())
    }

    /// Queue pairs and registered memory; the length has its own bound (8 MiB, not
    /// `--max-length`): the registered region is what a server holds.
    fn check_limits(&self, p: &TestParams, l: &Limits) -> Result<(), Refusal> {
        let Some(x) = &p.rdma else {
            return Ok(());
        };
        if x.qps > RDMA_MAX_QPS.min(l.max_streams) {
            return Err(Refusal::new(
                RefusalKind::OverLimit,
                format!(
                    "{} queue pairs: between 1 and {}",
                    x.qps,
                    RDMA_MAX_QPS.min(l.max_streams)
                ),
            ));
        }
        if p.server_memory_bytes() > l.memory_bound() {
            return Err(Refusal::new(RefusalKind::OverLimit, format!(
                "this RDMA test would register {} MiB on the server; it allows at most {} MiB per test (lower -l, --window or --qps)",
                p.server_memory_bytes() >> 20,
                l.memory_bound() >> 20
            )));
        }
        Ok(())
    }

    fn words(&self, p: &TestParams) -> String {
        let r = p.rdma.as_ref();
        let what = r.map_or("?", |r| r.op.as_str());
        let lat = r.is_some_and(|r| r.latency);
        let sweep = r.is_some_and(|r| r.sweep);
        format!(
            "RDMA {what} {}, {}{}{}{}",
            if lat { "latency" } else { "bandwidth" },
            if sweep {
                format!("2 B to {}", linerate_units::fmt_bytes(u64::from(p.length)))
            } else {
                format!(
                    "{} messages",
                    linerate_units::fmt_bytes(u64::from(p.length))
                )
            },
            r.filter(|_| !lat)
                .map_or(String::new(), |r| format!(", window {}", r.window)),
            r.filter(|r| r.qps > 1)
                .map_or(String::new(), |r| format!(", {} queue pairs", r.qps)),
            if r.is_some_and(|r| r.verify) {
                ", verified"
            } else {
                ""
            }
        )
    }
}
