//! Byte counters shared between stream threads and the interval sampler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_proto::defaults::MIN_INTERVAL_FRACTION;
use linerate_proto::{IntervalSample, Stalls, MAX_STALL_SPANS};

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

/// How often the sampler looks at the meters between samples (and so at `stop`). Few
/// wake-ups: a sampler waking often disturbs latency tests on small machines.
pub const WATCH_STEP: Duration = Duration::from_millis(50);

/// The shortest span with no progress a [`StallWatch`] records: two of the sampler's steps, so
/// a stall is at least one whole step during which the meters did not move (a span is known
/// to within a step either side), and the scheduler's ordinary delays (a few ms) never count.
pub const STALL_MIN: Duration = Duration::from_millis(100);

/// Spans with no progress on any stream: what the sampler saw each time it looked at the
/// meters. A span runs from the first look that saw a byte count to the last look that saw the
/// same count: no byte moved in between (a lower bound, to within a step). Only spans inside
/// the window given are counted (the measured part of the test: after the warm-up, before the
/// deadline), clipped to it.
#[derive(Debug, Clone)]
pub struct StallWatch {
    from_s: f64,
    to_s: f64,
    /// The count last seen, and when it was first seen.
    last: Option<(u64, f64)>,
    /// When the same count was last seen.
    seen_s: f64,
    out: Stalls,
}

impl StallWatch {
    /// Watch the span `from_s..to_s` (seconds from the test's start).
    pub fn new(from_s: f64, to_s: f64) -> Self {
        Self {
            from_s,
            to_s,
            last: None,
            seen_s: 0.0,
            out: Stalls::default(),
        }
    }

    /// The meters' total was `total` at `t_s` seconds from the start.
    pub fn observe(&mut self, t_s: f64, total: u64) {
        match self.last {
            Some((b, _)) if b == total => self.seen_s = t_s,
            _ => {
                self.close();
                self.last = Some((total, t_s));
                self.seen_s = t_s;
            }
        }
    }

    /// Record the span of the current count, if it is a stall.
    fn close(&mut self) {
        let Some((_, first)) = self.last else {
            return;
        };
        let (a, b) = (first.max(self.from_s), self.seen_s.min(self.to_s));
        if b - a >= STALL_MIN.as_secs_f64() - 1e-9 {
            let s = &mut self.out;
            s.count = s.count.saturating_add(1);
            s.seconds += b - a;
            s.longest_s = s.longest_s.max(b - a);
            if s.spans.len() < MAX_STALL_SPANS {
                s.spans.push((a, b));
            }
        }
    }

    /// The stalls seen, the current span included.
    pub fn finish(mut self) -> Stalls {
        self.close();
        self.out
    }
}

/// Sample the meters on `sched` until `stop` is set or `sched.until` passes;
/// push each sample into `sink`; return them all. Between samples, every
/// [`WATCH_STEP`], the meters' total goes to `stalls`. `retransmits` is called at
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
    stalls: &mut StallWatch,
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
    let total = || {
        meters
            .iter()
            .map(|m| m.bytes())
            .fold(0u64, u64::wrapping_add)
    };
    stalls.observe(start.elapsed().as_secs_f64(), total());
    loop {
        let due = start + every * k;
        let end = due.min(until);
        // Sleep in short steps so a stop is noticed quickly.
        while Instant::now() < end && !stop() {
            let left = end.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(WATCH_STEP));
            stalls.observe(start.elapsed().as_secs_f64(), total());
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
            &mut StallWatch::new(0.0, 1.0),
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

    #[test]
    fn spans_without_progress_are_stalls() {
        // Looks every 50 ms over 2 s; the count stands still from 0.5 to 1.3 s (a stall of
        // 0.8 s) and from 1.6 s to 1.65 s (one step: not a stall); the end is clipped at 1.8 s.
        let mut w = StallWatch::new(0.1, 1.8);
        let mut bytes = 0u64;
        for i in 0..=40 {
            let t = f64::from(i) * 0.05;
            let still =
                (0.5..1.3 + 1e-9).contains(&t) || (1.6..1.65 + 1e-9).contains(&t) || t >= 1.7;
            if !still || (t - 0.5).abs() < 1e-9 || (t - 1.6).abs() < 1e-9 || (t - 1.7).abs() < 1e-9
            {
                bytes += 1000;
            }
            w.observe(t, bytes);
        }
        let s = w.finish();
        assert_eq!(s.count, 2, "{s:?}");
        assert!(
            (s.spans[0].0 - 0.5).abs() < 1e-9 && (s.spans[0].1 - 1.3).abs() < 1e-9,
            "{s:?}"
        );
        // The last span runs from 1.7 s to the end of the watch, not of the looks.
        assert!((s.spans[1].1 - 1.8).abs() < 1e-9, "{s:?}");
        assert!(
            (s.seconds - 0.9).abs() < 1e-9 && (s.longest_s - 0.8).abs() < 1e-9,
            "{s:?}"
        );
        // Progress at every look: nothing.
        let mut w = StallWatch::new(0.0, 1.0);
        for i in 0..=20 {
            w.observe(f64::from(i) * 0.05, u64::try_from(i).unwrap());
        }
        assert_eq!(w.finish(), Stalls::default());
        // Spans before the window (warm-up) are not counted.
        let mut w = StallWatch::new(1.0, 2.0);
        w.observe(0.0, 0);
        w.observe(0.9, 0);
        w.observe(1.0, 5);
        w.observe(2.0, 9);
        assert_eq!(w.finish().count, 0);
    }
}
