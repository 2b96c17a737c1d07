//! The test plan: short and sensible by default.

use linerate_proto::{defaults, Direction, TestKind, TestParams};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// About 8 s of tests.
    Quick,
    /// About 20 s.
    Normal,
    /// About 70 s: longer runs, bidirectional and reverse multi-stream.
    Thorough,
}

/// A test of the plan: `kind` with doctor's defaults (lengths, 0.5 s intervals).
pub(crate) fn p(
    kind: TestKind,
    direction: Direction,
    streams: u32,
    secs: f64,
    omit: f64,
) -> TestParams {
    TestParams {
        streams,
        duration_ms: (secs * 1000.0) as u64,
        omit_ms: (omit * 1000.0) as u64,
        interval_ms: 500,
        length: match kind {
            TestKind::TcpBw => defaults::default_length(streams, direction == Direction::Bidir),
            _ => TestParams::new(kind, direction).length,
        },
        // Each test sets its own rate where it has one (doctor picks the UDP rate from TCP's).
        bitrate_bps: 0,
        ..TestParams::new(kind, direction)
    }
}

/// The tests to run. `two_hosts`: a remote server (both directions matter);
/// `udp_rate_bps`: a rate the path should carry without loss; `streams`: for the multi-stream test.
pub fn plan(depth: Depth, two_hosts: bool, udp_rate_bps: u64, streams: u32) -> Vec<TestParams> {
    let (bw, omit, lat) = match depth {
        Depth::Quick => (2.0, 0.5, 1.0),
        Depth::Normal => (4.0, 1.0, 2.0),
        Depth::Thorough => (10.0, 2.0, 5.0),
    };
    let mut v = vec![p(TestKind::TcpBw, Direction::Send, 1, bw, omit)];
    if two_hosts {
        v.push(p(TestKind::TcpBw, Direction::Receive, 1, bw, omit));
    }
    v.push(p(
        TestKind::TcpBw,
        Direction::Send,
        streams.max(2),
        bw,
        omit,
    ));
    if depth == Depth::Thorough {
        v.push(p(
            TestKind::TcpBw,
            Direction::Receive,
            streams.max(2),
            bw,
            omit,
        ));
        v.push(p(TestKind::TcpBw, Direction::Bidir, 1, bw, omit));
        v.push(p(TestKind::UdpLat, Direction::Send, 1, lat, 0.0));
    }
    v.push(p(TestKind::TcpLat, Direction::Send, 1, lat, 0.0));
    let mut udp = p(TestKind::UdpBw, Direction::Send, 1, lat, 0.0);
    udp.bitrate_bps = udp_rate_bps;
    v.push(udp);
    v
}

/// doctor's UDP test runs at this share of the best TCP result: a rate the path should carry
/// with no loss, so that loss there is the path's, not the test's (`net.retransmits`).
pub const UDP_RATE_SHARE_OF_TCP: f64 = 0.5;

/// ...and at least this many bit/s (a path whose TCP failed is still tested at a trickle), at
/// most [`linerate_proto::defaults::UDP_BITRATE_BPS`] (1 Gb/s: gigabit paths carry it, and a
/// faster rate on a slow receiver measures the receiver).
pub const MIN_UDP_RATE_BPS: f64 = 10e6;

/// The UDP test's rate from the best TCP result so far (`best_gbps`, 0 without one).
pub fn udp_rate_bps(best_gbps: f64) -> u64 {
    let most = defaults::UDP_BITRATE_BPS as f64;
    (best_gbps * UDP_RATE_SHARE_OF_TCP * linerate_units::GIGA).clamp(MIN_UDP_RATE_BPS, most) as u64
}

/// How doctor's TCP latency test waits, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpinChoice {
    /// Busy-poll per wait, µs; 0: block.
    pub spin_us: u32,
    pub reason: String,
}

/// Of the CPUs a polling thread needs, the share that must have been idle just before the test:
/// a little under all of it, since doctor's own sampling thread and the kernel's housekeeping
/// take a few percent of an idle host.
const IDLE_SHARE_TO_POLL: f64 = 0.85;

/// Whether doctor's latency test busy-polls: only when every polling thread on this host has a
/// core to itself. `cpus`: the CPUs this process may run on; `idle_cores`: how many of them were
/// idle over the `window_s` before the test (from /proc/stat; None: unreadable); `ends_here`:
/// the polling threads on this host (2 in a self-check, where the server's echo runs here too;
/// 1 against a remote server). A polling thread on a host without a spare core takes the CPU
/// the other end needs, and the round trip then measures the contention instead of the path.
pub fn latency_spin(
    cpus: usize,
    idle_cores: Option<f64>,
    window_s: f64,
    ends_here: usize,
) -> SpinChoice {
    let block = |reason: String| SpinChoice { spin_us: 0, reason };
    let here = if ends_here > 1 {
        "both ends run on this host"
    } else {
        "this end runs here"
    };
    if cpus < 2 {
        return block(format!(
            "blocking: this host has {cpus} CPU, and a busy-polling thread would take it from the other end"
        ));
    }
    let Some(idle) = idle_cores else {
        return block(
            "blocking: /proc/stat could not be read to see whether cores are idle".into(),
        );
    };
    let need = ends_here as f64 * IDLE_SHARE_TO_POLL;
    if cpus < ends_here || idle < need {
        return block(format!(
            "blocking: cores are contended ({} of {cpus} CPUs idle over {} s before the test; busy-polling needs {} idle, as {here})",
            linerate_units::fmt_round(idle, 2),
            linerate_units::fmt_round(window_s, 2),
            linerate_units::fmt_round(need, 2),
        ));
    }
    SpinChoice {
        spin_us: defaults::DOCTOR_SPIN_US,
        reason: format!(
            "busy-polled up to {} µs per wait: {} of {cpus} CPUs idle over {} s before the test ({here}), so the round trip measures the path, not thread wake-ups",
            defaults::DOCTOR_SPIN_US,
            linerate_units::fmt_round(idle, 2),
            linerate_units::fmt_round(window_s, 2),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_polls_only_with_a_spare_core_per_polling_end() {
        let one = latency_spin(1, Some(1.0), 0.3, 1);
        assert_eq!(one.spin_us, 0);
        assert!(one.reason.contains("1 CPU"), "{}", one.reason);
        let idle_pair = latency_spin(2, Some(1.95), 0.3, 2);
        assert_eq!(idle_pair.spin_us, defaults::DOCTOR_SPIN_US);
        assert!(
            idle_pair.reason.starts_with("busy-polled"),
            "{}",
            idle_pair.reason
        );
        // One of two cores busy with something else: both ends here cannot each have one.
        let busy = latency_spin(2, Some(1.0), 0.3, 2);
        assert_eq!(busy.spin_us, 0);
        assert!(busy.reason.contains("contended"), "{}", busy.reason);
        assert!(busy.reason.contains("1 of 2 CPUs"), "{}", busy.reason);
        // Against a remote server only this end polls here: one idle core is enough.
        assert_eq!(
            latency_spin(2, Some(1.0), 0.3, 1).spin_us,
            defaults::DOCTOR_SPIN_US
        );
        assert_eq!(latency_spin(8, Some(0.5), 0.3, 1).spin_us, 0);
        assert_eq!(latency_spin(4, None, 0.3, 1).spin_us, 0);
        // Doctor's request is within a default server's grant, so both ends poll.
        const { assert!(defaults::DOCTOR_SPIN_US <= defaults::SERVE_MAX_SPIN_US) };
    }

    #[test]
    fn the_udp_rate_is_half_the_best_tcp_within_its_bounds() {
        assert_eq!(udp_rate_bps(0.6), 300_000_000);
        // No TCP result (or a trickle): 10 Mb/s; a fast path: 1 Gb/s at most.
        assert_eq!(udp_rate_bps(0.0), 10_000_000);
        assert_eq!(udp_rate_bps(0.001), 10_000_000);
        assert_eq!(udp_rate_bps(94.0), defaults::UDP_BITRATE_BPS);
    }

    #[test]
    fn plans_are_short_and_valid() {
        let l = linerate_proto::Limits::default();
        for d in [Depth::Quick, Depth::Normal, Depth::Thorough] {
            for two in [false, true] {
                let v = plan(d, two, 1_000_000_000, 4);
                assert!(v.iter().all(|t| t.validate(&l).is_ok()));
                let secs: u64 = v.iter().map(|t| t.duration_ms).sum::<u64>() / 1000;
                assert!(secs <= 70, "{d:?}: {secs} s");
                assert_eq!(
                    v.iter().any(|t| t.direction == Direction::Receive),
                    two || d == Depth::Thorough
                );
            }
        }
    }
}
