//! Results: plain data with their units in their names.

use linerate_stats::LatencyHistogram;
use serde::{Deserialize, Serialize};

/// One row of [`crate::Fabric::providers`]: a provider offering message endpoints with RMA/MSG.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderInfo {
    /// libfabric provider: `verbs`, `tcp`, `sockets`, ...
    pub provider: String,
    /// Fabric name (verbs: `IB-0xfe80...`; tcp: the subnet).
    pub fabric: String,
    /// Domain: the device (verbs: `mlx5_0`; tcp: the netdev).
    pub domain: String,
    /// Source address the provider would use, if it named one.
    pub src_addr: Option<String>,
}

/// One interval of a bandwidth run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RdmaInterval {
    /// Seconds since the run started.
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
    pub messages: u64,
    pub gbps: f64,
}

/// A bandwidth run: completed operations only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BwResult {
    pub size: usize,
    pub bytes: u64,
    pub messages: u64,
    /// From the first post to the last completion.
    pub seconds: f64,
    /// Payload gigabits per second (10^9).
    pub gbps: f64,
    pub messages_per_s: f64,
    /// Bytes that did not match the pattern (verify on; 0 otherwise).
    pub verify_errors: u64,
    pub intervals: Vec<RdmaInterval>,
}

impl BwResult {
    pub(crate) fn finish(&mut self) {
        if self.seconds > 0.0 {
            self.gbps = self.bytes as f64 * 8.0 / self.seconds / 1e9;
            self.messages_per_s = self.messages as f64 / self.seconds;
        }
    }
}

/// How perftest's `*_lat` reports one operation's latency (`perftest_parameters.c`:
/// `rtt_factor` is 2 for write and send, 1 for read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyConvention {
    /// `ib_write_lat`, `ib_send_lat`: a ping-pong's round trip halved (one way).
    #[default]
    HalfRoundTrip,
    /// `ib_read_lat`: one read's whole completion time, not halved (a read is a request and
    /// its response: there is no one-way figure of it).
    Completion,
}

impl LatencyConvention {
    /// perftest's convention for `op`.
    pub fn of(op: crate::Op) -> Self {
        match op {
            crate::Op::Read => Self::Completion,
            crate::Op::Write | crate::Op::Send => Self::HalfRoundTrip,
        }
    }

    /// What a round trip is divided by to give the figure perftest prints.
    pub fn divisor(self) -> f64 {
        match self {
            Self::HalfRoundTrip => 2.0,
            Self::Completion => 1.0,
        }
    }

    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HalfRoundTrip => "half_round_trip",
            Self::Completion => "completion",
        }
    }
}

/// A latency run. `*_us` figures are **round trips** (ping-pong: there and back; read: one
/// read's completion); `perftest_*_us` are what perftest's `*_lat` prints for the same
/// operations, by its [`LatencyConvention`]: half the round trip for write and send, the whole
/// completion for read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatResult {
    pub size: usize,
    pub samples: u64,
    pub min_us: f64,
    pub mean_us: f64,
    /// Standard deviation of the round trips.
    #[serde(default)]
    pub stddev_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// perftest's `t_typical` (the median) by its convention for the operation.
    pub perftest_p50_us: f64,
    /// perftest's `t_avg` by its convention.
    pub perftest_mean_us: f64,
    pub convention: LatencyConvention,
    /// Completed round trips per second of the run.
    pub transactions_per_s: f64,
}

/// Summarises the round trips of `h` over a run of `seconds`, with perftest's figures by
/// `convention`.
pub(crate) fn summarize(
    size: usize,
    h: &LatencyHistogram,
    seconds: f64,
    convention: LatencyConvention,
) -> LatResult {
    let Some(l) = h.summary() else {
        return LatResult {
            size,
            convention,
            ..LatResult::default()
        };
    };
    let n = h.count();
    LatResult {
        size,
        samples: n,
        min_us: l.min.unwrap_or(0.0),
        mean_us: l.mean,
        stddev_us: l.stddev.unwrap_or(0.0),
        p50_us: l.p50,
        p90_us: l.p90,
        p99_us: l.p99,
        p999_us: l.p999,
        max_us: l.max,
        perftest_p50_us: l.p50 / convention.divisor(),
        perftest_mean_us: l.mean / convention.divisor(),
        convention,
        transactions_per_s: if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        },
    }
}

/// What the target saw over its whole connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetStats {
    pub runs: u64,
    /// Messages the target received or checked (sends; writes with verify).
    pub messages: u64,
    pub bytes: u64,
    pub verify_errors: u64,
}

/// `FI_VERSION(major, minor)` as "major.minor.0" (libfabric reports no revision at run time).
pub(crate) fn version_string(v: u32) -> String {
    format!("{}.{}.0", v >> 16, v & 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_unpacks() {
        assert_eq!(version_string((1 << 16) | 0x11), "1.17.0");
        assert_eq!(version_string((2 << 16) | 3), "2.3.0");
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record_ns(v * 1000); // 1..1000 µs
        }
        let r = summarize(8, &h, 2.0, LatencyConvention::HalfRoundTrip);
        assert_eq!(r.samples, 1000);
        assert!((r.min_us - 1.0).abs() < 0.01);
        assert!((r.p50_us - 500.0).abs() < 1.0, "{}", r.p50_us);
        assert!((r.p99_us - 990.0).abs() < 1.5, "{}", r.p99_us);
        assert!((r.max_us - 1000.0).abs() < 1.0);
        assert!((r.mean_us - 500.5).abs() < 0.6);
        // Uniform 1..=1000: σ = sqrt((1000² - 1) / 12) = 288.67 (it was reported as 0).
        assert!((r.stddev_us - 288.67).abs() < 0.5, "{}", r.stddev_us);
        assert_eq!(r.perftest_p50_us, r.p50_us / 2.0);
        // ib_read_lat does not halve: a read's completion is its figure.
        let read = summarize(8, &h, 2.0, LatencyConvention::of(crate::Op::Read));
        assert_eq!(
            (read.perftest_p50_us, read.convention),
            (read.p50_us, LatencyConvention::Completion)
        );
        assert_eq!(LatencyConvention::of(crate::Op::Send).divisor(), 2.0);
        assert_eq!(r.transactions_per_s, 500.0);
    }

    #[test]
    fn empty_histogram_gives_zeroes() {
        let r = summarize(
            8,
            &LatencyHistogram::new(),
            1.0,
            LatencyConvention::Completion,
        );
        assert_eq!(r.samples, 0);
        assert_eq!(r.p50_us, 0.0);
    }

    #[test]
    fn bandwidth_rates() {
        let mut r = BwResult {
            bytes: 1_000_000_000,
            messages: 1000,
            seconds: 2.0,
            ..BwResult::default()
        };
        r.finish();
        assert_eq!(r.gbps, 4.0);
        assert_eq!(r.messages_per_s, 500.0);
    }
}
