//! Byte counters shared between stream threads and the interval sampler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_proto::defaults::MIN_INTERVAL_FRACTION;
use linerate_proto::IntervalSample;

/// A stream's running byte count and, for a UDP receiver, its lost datagrams so far (from the
/// sequence numbers: `udp::recv`). TCP retransmits are not here: the sampler reads them from
/// TCP_INFO.
#[derive(Debug, Default)]
pub struct Meter {
    bytes: AtomicU64,
    lost: AtomicU64,
}

impl Meter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    #[inline]
    pub fn add(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn add_lost(&self, n: u64) {
        self.lost.fetch_add(n, Ordering::Relaxed);
    }

    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

/// A flag every loop of a test checks: set on deadline, error, or peer gone.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for engines that take a plain `&AtomicBool` (RDMA).
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }
}

/// Where interval samples go (terminal, JSON stream, the control connection).
pub trait Sink {
    fn interval(&mut self, sample: &IntervalSample);
}

impl<F: FnMut(&IntervalSample)> Sink for F {
    fn interval(&mut self, sample: &IntervalSample) {
        self(sample);
    }
}

/// When and how often to sample.
#[derive(Debug, Clone, Copy)]
pub struct SampleSchedule {
    pub start: Instant,
    pub every: Duration,
    /// Intervals ending within the warm-up are flagged `omitted`.
    pub omit: Duration,
    /// Sampling ends here at the latest.
    pub until: Instant,
}

/// Sample the meters on `sched` until `stop` is set or `sched.until` passes;
/// push each sample into `sink`; return them all. `retransmits` is called at
/// each sample for the running retransmit total. No interval is shorter than
/// [`MIN_INTERVAL_FRACTION`] of `every`: a sampler that woke late (a busy host)
/// leaves the next sample due soon after, and that short interval is merged with
/// the one after it; the last, partial interval is kept when it is at least that
/// long (its bytes are in the streams' totals either way).
pub fn sample_intervals(
    meters: &[Arc<Meter>],
    sched: SampleSchedule,
    stop: &dyn Fn() -> bool,
    retransmits: &mut dyn FnMut() -> Option<u64>,
    sink: &mut dyn Sink,
) -> Vec<IntervalSample> {
    let SampleSchedule {
        start,
        every,
        omit,
        until,
    } = sched;
    let mut out = Vec::new();
    let mut prev: Vec<u64> = meters.iter().map(|m| m.bytes()).collect();
    let mut prev_lost: u64 = meters.iter().map(|m| m.lost()).sum();
    let mut prev_rtx = retransmits();
    let mut t0 = 0.0_f64;
    let mut k: u32 = 1;
    loop {
        let due = start + every * k;
        let end = due.min(until);
        // Sleep in short steps so a stop is noticed quickly.
        // Few wake-ups: a sampler waking often disturbs latency tests on small machines.
        while Instant::now() < end && !stop() {
            let left = end.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        let now = Instant::now();
        let t1 = now.duration_since(start).as_secs_f64();
        let cur: Vec<u64> = meters.iter().map(|m| m.bytes()).collect();
        let lost: u64 = meters.iter().map(|m| m.lost()).sum();
        let rtx = retransmits();
        let finished = stop() || now >= until;
        let long_enough = t1 - t0 >= every.as_secs_f64() * MIN_INTERVAL_FRACTION;
        if !finished && !long_enough {
            // Too short for a rate of its own: it runs on into the next interval.
            k += 1;
            continue;
        }
        if long_enough {
            let s = IntervalSample {
                start_s: t0,
                end_s: t1,
                bytes: cur.iter().zip(&prev).map(|(c, p)| c - p).collect(),
                retransmits: rtx.zip(prev_rtx).map(|(a, b)| a.saturating_sub(b)),
                lost: (lost > 0 || prev_lost > 0).then(|| lost - prev_lost),
                omitted: t1 <= omit.as_secs_f64() + 1e-3,
            };
            sink.interval(&s);
            out.push(s);
        }
        if finished {
            return out;
        }
        prev = cur;
        prev_lost = lost;
        prev_rtx = rtx;
        t0 = t1;
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A sampler that wakes late (here: `stop` stalls once for most of an interval, as a starved
    /// thread does) leaves the next sample due soon after; that interval is merged, never
    /// reported with a rate of its own.
    #[test]
    fn no_interval_is_much_shorter_than_asked() {
        let m = Meter::new();
        let every = Duration::from_millis(100);
        let start = Instant::now();
        let sched = SampleSchedule {
            start,
            every,
            omit: Duration::ZERO,
            until: start + Duration::from_millis(1000),
        };
        // Once, while waiting for the sample due at 0.2 s, stall until 0.29 s: that sample
        // comes 90 ms late and the next one is due 10 ms after it.
        let stalled = Cell::new(false);
        let stop = || {
            m.add(1000);
            let e = start.elapsed();
            if !stalled.get() && e >= Duration::from_millis(110) && e < Duration::from_millis(200) {
                stalled.set(true);
                std::thread::sleep(Duration::from_millis(290).saturating_sub(e));
            }
            false
        };
        let mut sink = |_: &IntervalSample| {};
        let out = sample_intervals(
            std::slice::from_ref(&m),
            sched,
            &stop,
            &mut || None,
            &mut sink,
        );
        assert!(!out.is_empty());
        for s in &out {
            assert!(
                s.end_s - s.start_s >= every.as_secs_f64() * MIN_INTERVAL_FRACTION,
                "a {:.3} s interval in {out:?}",
                s.end_s - s.start_s
            );
        }
        // Contiguous: nothing merged away is lost between intervals.
        for w in out.windows(2) {
            assert!((w[1].start_s - w[0].end_s).abs() < 1e-12, "{out:?}");
        }
        let total: u64 = out.iter().map(|s| s.bytes[0]).sum();
        assert!(total <= m.bytes());
    }
}
