//! Byte counters shared between stream threads and the interval sampler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
/// each sample for the running retransmit total. The last, partial interval is
/// kept when it is at least a tenth of `every`.
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
        if !finished || t1 - t0 >= every.as_secs_f64() / 10.0 {
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
