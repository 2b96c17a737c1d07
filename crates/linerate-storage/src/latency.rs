//! Latency percentiles from an HDR histogram of nanoseconds.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Per-operation latency, µs: submission to completion as the program sees it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyUs {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

/// A histogram for 1 ns to 100 s at 3 significant digits (< 0.1% error).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}

/// Record one latency.
pub fn record(h: &mut Histogram<u64>, d: std::time::Duration) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
    h.saturating_record(ns);
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Percentiles in µs (rounded to ns), or `None` when nothing was recorded.
pub fn summarize(h: &Histogram<u64>) -> Option<LatencyUs> {
    if h.is_empty() {
        return None;
    }
    let us = |ns: u64| r3(ns as f64 / 1000.0);
    Some(LatencyUs {
        p50: us(h.value_at_quantile(0.50)),
        p90: us(h.value_at_quantile(0.90)),
        p99: us(h.value_at_quantile(0.99)),
        p999: us(h.value_at_quantile(0.999)),
        max: us(h.max()),
        mean: r3(h.mean() / 1000.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= b * 0.001 + 0.001
    }

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut h = histogram();
        // 1..=1000 µs once each.
        for us in 1..=1000u64 {
            record(&mut h, Duration::from_micros(us));
        }
        let l = summarize(&h).unwrap();
        assert!(close(l.p50, 500.0), "{l:?}");
        assert!(close(l.p90, 900.0), "{l:?}");
        assert!(close(l.p99, 990.0), "{l:?}");
        assert!(close(l.p999, 999.0), "{l:?}");
        assert!(close(l.max, 1000.0), "{l:?}");
        assert!(close(l.mean, 500.5), "{l:?}");
        assert!(l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max);
    }

    #[test]
    fn a_tail_shows_in_the_high_percentiles_only() {
        let mut h = histogram();
        for _ in 0..9_990 {
            record(&mut h, Duration::from_micros(100));
        }
        for _ in 0..10 {
            record(&mut h, Duration::from_millis(50));
        }
        let l = summarize(&h).unwrap();
        assert!(close(l.p99, 100.0), "{l:?}");
        assert!(close(l.max, 50_000.0), "{l:?}");
        // mean = (9990 × 100 + 10 × 50000) / 10000 = 149.9
        assert!(close(l.mean, 149.9), "{l:?}");
    }

    #[test]
    fn empty_and_zero() {
        assert_eq!(summarize(&histogram()), None);
        let mut h = histogram();
        record(&mut h, Duration::ZERO);
        assert!(summarize(&h).unwrap().p50 <= 0.002);
    }
}
