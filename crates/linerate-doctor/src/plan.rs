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

#[cfg(test)]
mod tests {
    use super::*;

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
