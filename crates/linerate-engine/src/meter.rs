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

/// The end of a test that ends on data rather than time (iperf3's `-n BYTES` and `-k BLOCKS`):
/// the test is over once this end has sent, or received, `limit` bytes over all its streams,
/// counted from [`Budget::arm`] (the end of the warm-up; before it nothing counts). Senders stop
/// when it is over; receivers only count, and whoever watches [`Budget::over`] ends the test.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    armed: AtomicBool,
    sent: AtomicU64,
    received: AtomicU64,
    over: Stop,
}

impl Budget {
    /// A budget of `limit` bytes each way, not yet armed.
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            armed: AtomicBool::new(false),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            over: Stop::new(),
        })
    }

    /// Start counting: what moved before (the warm-up) does not count.
    pub fn arm(&self) {
        self.sent.store(0, Ordering::Relaxed);
        self.received.store(0, Ordering::Relaxed);
        self.armed.store(true, Ordering::Release);
        if self.limit == 0 {
            self.over.set();
        }
    }

    fn count(&self, counter: &AtomicU64, n: u64) -> bool {
        if self.armed.load(Ordering::Acquire) {
            let now = counter.fetch_add(n, Ordering::Relaxed).saturating_add(n);
            if now >= self.limit {
                self.over.set();
            }
        }
        self.over.is_set()
    }

    /// A sender moved `n` bytes: true when the test is over (stop sending).
    #[inline]
    pub fn sent(&self, n: u64) -> bool {
        self.count(&self.sent, n)
    }

    /// A receiver took `n` bytes: true when the test is over.
    #[inline]
    pub fn received(&self, n: u64) -> bool {
        self.count(&self.received, n)
    }

    /// Bytes counted so far (since armed): (sent, received).
    pub fn counted(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }

    /// Set once either count reached the limit.
    pub fn over(&self) -> &Stop {
        &self.over
    }

    /// The limit, bytes each way.
    pub fn limit(&self) -> u64 {
        self.limit
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

    #[test]
    fn a_budget_counts_only_once_armed_and_either_way_ends_it() {
        let b = Budget::new(100);
        assert!(!b.sent(1000), "the warm-up does not count");
        b.arm();
        assert!(!b.sent(60));
        assert!(!b.received(99));
        assert!(b.sent(40), "100 sent: over");
        assert!(b.over().is_set());
        assert!(b.received(0), "over for everyone");
        let r = Budget::new(10);
        r.arm();
        assert!(r.received(10));
        assert!(r.sent(0), "a sender stops when the receivers reached it");
        let zero = Budget::new(0);
        zero.arm();
        assert!(zero.over().is_set());
    }
}
