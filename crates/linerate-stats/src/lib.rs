//! Latency statistics: one histogram every engine records into (TCP/UDP round trips, disk
//! completions, RDMA round trips) and one summary type for the documents.
//!
//! The histogram is an HDR histogram of nanoseconds at 3 significant digits: every recorded
//! value is kept within 0.1%, in constant memory (about 270 KiB), whatever the number of
//! samples. Percentiles, mean and standard deviation come from it; the summary keeps full
//! precision, and [`LatencyUs::rounded`] rounds it where a document is written.

use std::ops::AddAssign;
use std::time::Duration;

use hdrhistogram::Histogram;
use linerate_units::r3;
use serde::Serialize;

/// Largest latency kept apart, ns: one hour. An RDMA operation can stall until the engine's
/// operation timeout and a disk completion for as long as a dying disk takes; a value above
/// this is recorded as this (`saturating_record`), never dropped.
const MAX_NS: u64 = 3_600_000_000_000;

/// Latencies in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram for 1 ns to one hour at 3 significant digits.
    pub fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, MAX_NS, 3)
                .expect("constant bounds: 1 <= MAX_NS and 3 significant digits are valid"),
        }
    }

    /// Record one latency. Zero (a clock that did not move) counts as 1 ns, more than an hour
    /// as an hour: a sample is never lost.
    pub fn record(&mut self, d: Duration) {
        self.record_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Record one latency given in nanoseconds (see [`Self::record`]).
    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// Percentiles, extremes, mean and standard deviation in µs, at full precision; `None`
    /// when nothing was recorded (an empty histogram has no percentiles, not zero ones).
    pub fn summary(&self) -> Option<LatencyUs> {
        let h = &self.hist;
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(LatencyUs {
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
            min: Some(us(h.min())),
            mean: h.mean() / 1000.0,
            stddev: Some(h.stdev() / 1000.0),
        })
    }

    /// Counts per bucket for plotting: (upper bound µs, count), log-spaced from 1 µs by
    /// factors of 1.25.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        self.hist
            .iter_log(1000, 1.25)
            .map(|v| {
                (
                    v.value_iterated_to() as f64 / 1000.0,
                    v.count_since_last_iteration(),
                )
            })
            .collect()
    }
}

/// Merge another histogram (threads, queue pairs or jobs of one test).
impl AddAssign<&LatencyHistogram> for LatencyHistogram {
    fn add_assign(&mut self, o: &LatencyHistogram) {
        // Both have the same bounds, so no value of `o` is out of range (the only error `add`
        // returns); counts saturate inside `add`.
        let added = self.hist.add(&o.hist);
        debug_assert!(added.is_ok(), "histograms of equal bounds: {added:?}");
    }
}

/// A latency distribution, µs. `min` and `stddev` are absent where a document never carried
/// them (the disk document: `schemas/disk.schema.json`); the bench and doctor documents carry
/// all eight (`schemas/bench.schema.json`, `schemas/doctor.schema.json`, `$defs/latency`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencyUs {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    pub mean: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
}

impl LatencyUs {
    /// Every figure to the nanosecond (3 decimals of µs), for a document.
    #[must_use]
    pub fn rounded(&self) -> Self {
        Self {
            p50: r3(self.p50),
            p90: r3(self.p90),
            p99: r3(self.p99),
            p999: r3(self.p999),
            max: r3(self.max),
            min: self.min.map(r3),
            mean: r3(self.mean),
            stddev: self.stddev.map(r3),
        }
    }

    /// The same without `min` and `stddev` (the disk document's shape).
    #[must_use]
    pub fn without_spread(self) -> Self {
        Self {
            min: None,
            stddev: None,
            ..self
        }
    }
}

/// The median of some figures, the one median of the workspace; None when none is a number.
/// An even count takes the mean of the middle two.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        f64::midpoint(v[m - 1], v[m])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0, f64::INFINITY]), Some(5.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN]), None);
    }

    /// Within the histogram's 0.1% (plus 1 ns of rounding).
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= b * 0.001 + 0.001
    }

    fn uniform() -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        h
    }

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let h = uniform();
        assert_eq!(h.count(), 1000);
        let l = h.summary().unwrap();
        assert!(close(l.p50, 500.0), "{l:?}");
        assert!(close(l.p90, 900.0), "{l:?}");
        assert!(close(l.p99, 990.0), "{l:?}");
        assert!(close(l.p999, 999.0), "{l:?}");
        assert!(close(l.max, 1000.0), "{l:?}");
        assert!(close(l.min.unwrap(), 1.0), "{l:?}");
        assert!(close(l.mean, 500.5), "{l:?}");
        // Uniform 1..=1000: σ = sqrt((1000² - 1) / 12) = 288.67.
        assert!((l.stddev.unwrap() - 288.67).abs() < 0.5, "{l:?}");
        assert!(l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max);
        assert_eq!(h.buckets().iter().map(|b| b.1).sum::<u64>(), 1000);
    }

    #[test]
    fn a_tail_shows_in_the_high_percentiles_only() {
        let mut h = LatencyHistogram::new();
        for _ in 0..9_990 {
            h.record(Duration::from_micros(100));
        }
        for _ in 0..10 {
            h.record(Duration::from_millis(50));
        }
        let l = h.summary().unwrap();
        assert!(close(l.p99, 100.0), "{l:?}");
        assert!(close(l.max, 50_000.0), "{l:?}");
        // mean = (9990 × 100 + 10 × 50000) / 10000 = 149.9
        assert!(close(l.mean, 149.9), "{l:?}");
    }

    #[test]
    fn one_value_has_no_spread() {
        let mut h = LatencyHistogram::new();
        for _ in 0..100 {
            h.record(Duration::from_micros(20));
        }
        let l = h.summary().unwrap();
        assert_eq!(l.stddev, Some(0.0));
        assert!(close(l.min.unwrap(), 20.0) && close(l.max, 20.0), "{l:?}");
    }

    #[test]
    fn empty_zero_and_huge() {
        assert_eq!(LatencyHistogram::new().summary(), None);
        let mut h = LatencyHistogram::new();
        h.record(Duration::ZERO);
        assert!(h.summary().unwrap().p50 <= 0.002);
        h.record(Duration::from_secs(1 << 40));
        assert_eq!(h.count(), 2);
        assert!(close(h.summary().unwrap().max, MAX_NS as f64 / 1000.0));
    }

    #[test]
    fn merging_is_recording_both() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        let mut both = LatencyHistogram::new();
        for us in 1..=500u64 {
            a.record(Duration::from_micros(us));
            both.record(Duration::from_micros(us));
        }
        for us in 501..=1000u64 {
            b.record(Duration::from_micros(us * 3));
            both.record(Duration::from_micros(us * 3));
        }
        a += &b;
        assert_eq!(a.count(), 1000);
        assert_eq!(a.summary(), both.summary());
    }

    #[test]
    fn rounded_to_the_nanosecond_and_the_disk_shape() {
        let l = LatencyUs {
            p50: 1.23456,
            min: Some(0.00049),
            stddev: Some(2.0005),
            ..LatencyUs::default()
        };
        let r = l.rounded();
        assert_eq!((r.p50, r.min, r.stddev), (1.235, Some(0.0), Some(2.001)));
        let json = |l: &LatencyUs| serde_json::to_string(l).unwrap();
        assert_eq!(
            json(&r),
            r#"{"p50":1.235,"p90":0.0,"p99":0.0,"p999":0.0,"max":0.0,"min":0.0,"mean":0.0,"stddev":2.001}"#
        );
        assert_eq!(
            json(&r.without_spread()),
            r#"{"p50":1.235,"p90":0.0,"p99":0.0,"p999":0.0,"max":0.0,"mean":0.0}"#
        );
    }
}
