//! The active side: connects, then runs bandwidth and latency measurements against a target.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::link::{ctx, Ev, Link, K_DATA, K_LAT};
use crate::params::{check_size, Op, Params};
use crate::proto::{read_seq, Ctrl, Mode, CTRL_TIMEOUT, SEQ_MASK};
use linerate_stats::LatencyHistogram;

use crate::results::{summarize, LatencyConvention};
use crate::{pattern, BwResult, LatResult, RdmaError, RdmaInterval};

/// The connected active side. Runs are sequential on one connection; a size sweep calls
/// [`Initiator::bandwidth`] once per size.
#[derive(Debug)]
pub struct Initiator {
    link: Link,
    params: Params,
    run: u64,
    evs: Vec<Ev>,
    inbox: VecDeque<Ctrl>,
    data_done: Vec<u64>,
    rx_data: usize,
    rx_ready: Vec<usize>,
    acked: u64,
}

/// Counters of one bandwidth run.
#[derive(Debug, Default)]
struct Run {
    posted: u64,
    completed: u64,
    last_progress: Option<Instant>,
}

/// The interval a bandwidth run is counting: when it began, and what completed since.
struct Interval {
    start: Instant,
    bytes: u64,
    messages: u64,
}

impl Interval {
    fn starting(start: Instant) -> Interval {
        Interval {
            start,
            bytes: 0,
            messages: 0,
        }
    }

    /// The sample of the interval ending `now` (times relative to the run's `origin`);
    /// the next interval starts at `now`.
    fn close(&mut self, origin: Instant, now: Instant) -> RdmaInterval {
        let s = now.duration_since(self.start).as_secs_f64();
        let sample = RdmaInterval {
            start_s: self.start.duration_since(origin).as_secs_f64(),
            end_s: now.duration_since(origin).as_secs_f64(),
            bytes: self.bytes,
            messages: self.messages,
            gbps: self.bytes as f64 * 8.0 / s / 1e9,
        };
        *self = Interval::starting(now);
        sample
    }
}

impl Initiator {
    pub(crate) fn new(link: Link, params: Params) -> Initiator {
        Initiator {
            link,
            params,
            run: 0,
            evs: Vec::with_capacity(64),
            inbox: VecDeque::new(),
            data_done: Vec::with_capacity(64),
            rx_data: 0,
            rx_ready: Vec::new(),
            acked: 0,
        }
    }

    pub fn provider(&self) -> &str {
        &self.link.conn.provider
    }
    pub fn domain(&self) -> &str {
        &self.link.conn.domain_name
    }
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Polls once and sorts what happened. Receives consumed by the previous poll are reposted
    /// first (so a latency sample is taken before, not after, reposting).
    fn pump(&mut self) -> Result<(), RdmaError> {
        for idx in std::mem::take(&mut self.rx_ready) {
            self.link.repost_rx(idx)?;
        }
        self.evs.clear();
        let mut evs = std::mem::take(&mut self.evs);
        let r = self.link.poll(&mut evs);
        for ev in evs.drain(..) {
            match ev {
                Ev::Data(seq) => self.data_done.push(seq),
                Ev::Ctrl(Ctrl::Ack { .. }) => self.acked += 1,
                Ev::Ctrl(m) => self.inbox.push_back(m),
                Ev::RxData { idx, .. } => {
                    self.rx_data += 1;
                    self.rx_ready.push(idx);
                }
                Ev::RemoteWrite { .. } | Ev::LatTx => {}
            }
        }
        self.evs = evs;
        r
    }

    fn send_ctrl(&mut self, m: Ctrl) -> Result<(), RdmaError> {
        let deadline = Instant::now() + CTRL_TIMEOUT;
        while !self.link.try_send_ctrl(m)? {
            if Instant::now() >= deadline {
                return Err(RdmaError::Timeout {
                    what: format!("sending a control message {}", self.link.peer),
                    after: CTRL_TIMEOUT,
                });
            }
            self.pump()?;
        }
        Ok(())
    }

    fn wait_ctrl(&mut self, what: &str) -> Result<Ctrl, RdmaError> {
        let deadline = Instant::now() + CTRL_TIMEOUT;
        loop {
            if let Some(m) = self.inbox.pop_front() {
                return Ok(m);
            }
            if Instant::now() >= deadline {
                return Err(RdmaError::Timeout {
                    what: format!("waiting for the target's {what} {}", self.link.peer),
                    after: CTRL_TIMEOUT,
                });
            }
            self.pump()?;
        }
    }

    fn begin(&mut self, mode: Mode, size: usize, count: u64) -> Result<(), RdmaError> {
        self.send_ctrl(Ctrl::Begin {
            mode,
            size: size as u64,
            count,
        })?;
        match self.wait_ctrl("ready")? {
            Ctrl::Ready { status: 0 } => Ok(()),
            Ctrl::Ready { .. } => Err(RdmaError::InvalidParams(format!(
                "the target refused {size}-byte messages (beyond its region)"
            ))),
            m => Err(RdmaError::Protocol(format!("expected ready, got {m:?}"))),
        }
    }

    fn end(&mut self, messages: u64) -> Result<(u64, u64), RdmaError> {
        self.send_ctrl(Ctrl::End { messages })?;
        match self.wait_ctrl("statistics")? {
            Ctrl::Stats {
                verify_errors,
                messages,
                ..
            } => Ok((verify_errors, messages)),
            m => Err(RdmaError::Protocol(format!(
                "expected statistics, got {m:?}"
            ))),
        }
    }

    /// Moves `size`-byte messages with `window` operations outstanding for `duration` (or until
    /// `stop`), pushing a sample every `params.interval`. On error the result holds what
    /// completed before it.
    #[allow(clippy::result_large_err)] // partial results travel with the error, by value
    pub fn bandwidth(
        &mut self,
        size: usize,
        duration: Duration,
        stop: &AtomicBool,
        on_interval: &mut dyn FnMut(RdmaInterval),
    ) -> Result<BwResult, (BwResult, RdmaError)> {
        let mut res = BwResult {
            size,
            ..BwResult::default()
        };
        if let Err(e) = check_size(size, self.params.max_size) {
            return Err((res, e));
        }
        self.run += 1;
        if let Err(e) = self.begin(Mode::Bandwidth, size, self.run) {
            return Err((res, e));
        }
        let mut run = Run::default();
        let start = Instant::now();
        let out = self.bw_loop(size, start, duration, stop, &mut run, &mut res, on_interval);
        let end = run.last_progress.unwrap_or(start);
        res.seconds = end.duration_since(start).as_secs_f64();
        res.finish();
        if let Err(e) = out {
            return Err((res, e));
        }
        match self.end(run.posted) {
            Ok((errors, received)) => {
                res.verify_errors += errors;
                if self.params.op == Op::Send && received != run.posted {
                    let e = RdmaError::Protocol(format!(
                        "the target received {received} of {} messages",
                        run.posted
                    ));
                    return Err((res, e));
                }
                Ok(res)
            }
            Err(e) => Err((res, e)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn bw_loop(
        &mut self,
        size: usize,
        start: Instant,
        duration: Duration,
        stop: &AtomicBool,
        run: &mut Run,
        res: &mut BwResult,
        on_interval: &mut dyn FnMut(RdmaInterval),
    ) -> Result<(), RdmaError> {
        let p = self.params.clone();
        let l = self.link.layout;
        let acked_at_start = self.acked;
        let write_acks = p.verify && p.op == Op::Write;
        let end = start + duration;
        let mut iv = Interval::starting(start);
        let mut stalled_since = start;
        let mut draining = false;
        loop {
            let now = Instant::now();
            if !draining && (now >= end || stop.load(Ordering::Relaxed)) {
                draining = true;
                stalled_since = now;
            }
            let acked = self.acked - acked_at_start;
            if draining && run.completed == run.posted && (!write_acks || acked == run.posted) {
                break;
            }
            // Post while the window has room.
            while !draining
                && run.posted - run.completed < p.window as u64
                && (!write_acks || run.posted - (self.acked - acked_at_start) < l.slots as u64)
            {
                let seq = run.posted;
                let s31 = (seq & SEQ_MASK) as u32;
                let slot = s31 as usize % l.slots;
                let off = l.data(slot);
                let raddr = self.link.remote.base + off as u64;
                let key = self.link.remote.key;
                if p.verify && p.op != Op::Read {
                    self.link
                        .conn
                        .with_bytes_mut(off, size, |b| pattern::fill(b, s31));
                }
                let c = ctx(K_DATA, seq);
                let conn = &self.link.conn;
                let ok = match p.op {
                    Op::Write => conn.post_write(
                        off,
                        size,
                        raddr,
                        key,
                        p.verify.then_some(u64::from(s31)),
                        c,
                    ),
                    Op::Read => conn.post_read(off, size, raddr, key, c),
                    Op::Send => conn.post_send(off, size, Some(u64::from(s31)), c),
                }
                .map_err(|e| self.link.err(e))?;
                if !ok {
                    break;
                }
                run.posted += 1;
            }
            self.pump()?;
            let now = Instant::now();
            if !self.data_done.is_empty() {
                stalled_since = now;
                run.last_progress = Some(now);
            }
            for seq in std::mem::take(&mut self.data_done) {
                run.completed += 1;
                res.messages += 1;
                res.bytes += size as u64;
                iv.bytes += size as u64;
                iv.messages += 1;
                if p.verify && p.op == Op::Read {
                    let s31 = (seq & SEQ_MASK) as u32;
                    let slot = s31 as usize % l.slots;
                    let want = read_seq(self.run, slot);
                    res.verify_errors += self
                        .link
                        .conn
                        .with_bytes(l.data(slot), size, |b| pattern::mismatches(b, want));
                }
            }
            if now.duration_since(stalled_since) > p.op_timeout {
                self.check_stalled(run, write_acks && draining)?;
            }
            if now.duration_since(iv.start) >= p.interval {
                let sample = iv.close(start, now);
                on_interval(sample);
                res.intervals.push(sample);
            }
        }
        Ok(())
    }

    /// Called once nothing completed for `op_timeout`: an error when operations are
    /// outstanding, or when the run waits for the target to check its writes.
    fn check_stalled(&self, run: &Run, awaiting_write_acks: bool) -> Result<(), RdmaError> {
        let after = self.params.op_timeout;
        if run.posted > run.completed {
            return Err(RdmaError::Timeout {
                what: format!(
                    "{} of {} operations outstanding {}: no completion",
                    run.posted - run.completed,
                    run.posted,
                    self.link.peer
                ),
                after,
            });
        }
        if awaiting_write_acks {
            return Err(RdmaError::Timeout {
                what: format!("waiting for the target to check writes {}", self.link.peer),
                after,
            });
        }
        Ok(())
    }

    /// Ping-pong latency: `iterations` round trips (fewer if `max_duration` passes first).
    /// Write: the initiator writes `size` bytes, the target polls the last byte and writes
    /// back (ib_write_lat); send: send and echo (ib_send_lat); read: one read per sample.
    #[allow(clippy::result_large_err)] // partial results travel with the error, by value
    pub fn latency(
        &mut self,
        size: usize,
        iterations: u64,
        max_duration: Duration,
    ) -> Result<LatResult, (LatResult, RdmaError)> {
        let empty = LatResult {
            size,
            ..LatResult::default()
        };
        if let Err(e) = check_size(size, self.params.max_size) {
            return Err((empty, e));
        }
        let l = self.link.layout;
        if self.params.op == Op::Write {
            self.link.conn.store_byte(l.data(0) + size - 1, 0);
        }
        if let Err(e) = self.begin(Mode::Latency, size, iterations) {
            return Err((empty, e));
        }
        let mut h = LatencyHistogram::new();
        let start = Instant::now();
        let out = self.lat_loop(size, iterations, start + max_duration, &mut h);
        let res = summarize(
            size,
            &h,
            start.elapsed().as_secs_f64(),
            LatencyConvention::of(self.params.op),
        );
        if let Err(e) = out {
            return Err((res, e));
        }
        match self.end(h.count()) {
            Ok(_) => Ok(res),
            Err(e) => Err((res, e)),
        }
    }

    fn lat_loop(
        &mut self,
        size: usize,
        iterations: u64,
        deadline: Instant,
        h: &mut LatencyHistogram,
    ) -> Result<(), RdmaError> {
        let l = self.link.layout;
        let op = self.params.op;
        let timeout = self.params.op_timeout;
        let raddr = self.link.remote.base + l.data(0) as u64;
        let key = self.link.remote.key;
        self.rx_data = 0;
        for i in 0..iterations {
            if Instant::now() >= deadline {
                break;
            }
            let expect = (i % 255 + 1) as u8;
            if op == Op::Write {
                self.link.conn.store_byte(l.lat_src() + size - 1, expect);
            }
            let t0 = Instant::now();
            loop {
                let conn = &self.link.conn;
                let posted = match op {
                    Op::Write => {
                        conn.post_write(l.lat_src(), size, raddr, key, None, ctx(K_LAT, i))
                    }
                    Op::Send => conn.post_send(l.lat_src(), size, None, ctx(K_LAT, i)),
                    Op::Read => conn.post_read(l.data(0), size, raddr, key, ctx(K_DATA, i)),
                }
                .map_err(|e| self.link.err(e))?;
                if posted {
                    break;
                }
                self.pump()?;
                self.check_stall(t0, timeout)?;
            }
            loop {
                let arrived = match op {
                    Op::Write => self.link.conn.load_byte(l.data(0) + size - 1) == expect,
                    Op::Send => self.rx_data > 0,
                    Op::Read => !self.data_done.is_empty(),
                };
                if arrived {
                    break;
                }
                self.pump()?;
                self.check_stall(t0, timeout)?;
            }
            h.record(t0.elapsed());
            self.rx_data = self.rx_data.saturating_sub(1);
            self.data_done.clear();
        }
        Ok(())
    }

    fn check_stall(&self, t0: Instant, timeout: Duration) -> Result<(), RdmaError> {
        if t0.elapsed() > timeout {
            return Err(RdmaError::Timeout {
                what: format!("waiting for a round trip {}", self.link.peer),
                after: timeout,
            });
        }
        Ok(())
    }

    /// Tells the target there are no more runs and closes the connection (bounded by `timeout`).
    pub fn finish(mut self, timeout: Duration) -> Result<(), RdmaError> {
        let deadline = Instant::now() + timeout;
        while !self.link.try_send_ctrl(Ctrl::Done)? {
            if Instant::now() >= deadline {
                return Err(RdmaError::Timeout {
                    what: format!("telling the target we are done {}", self.link.peer),
                    after: timeout,
                });
            }
            self.pump()?;
        }
        while !self.link.ctrl_idle() {
            if Instant::now() >= deadline {
                return Err(RdmaError::Timeout {
                    what: format!("telling the target we are done {}", self.link.peer),
                    after: timeout,
                });
            }
            self.pump()?;
        }
        self.link.conn.shutdown();
        Ok(())
    }
}
