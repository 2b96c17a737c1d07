//! The passive side: accepts one connection and serves the initiator's runs.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::link::{ctx, Ev, Link, K_LAT};
use crate::params::{Op, Params};
use crate::proto::{read_seq, Ctrl, Mode, SEQ_MASK};
use crate::{pattern, RdmaError, TargetStats};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Bandwidth { size: usize },
    WriteLatency { size: usize, iters: u64, i: u64 },
    SendLatency { size: usize },
}

#[derive(Debug, Clone, Copy)]
enum Out {
    Ctrl(Ctrl),
    Echo { size: usize },
}

/// The accepted side of a connection: its region is written, read or sent into by the
/// [`crate::Initiator`]; [`Target::serve`] drives progress (the tcp provider needs the target
/// to poll for RMA to complete), checks payloads and echoes in latency runs.
#[derive(Debug)]
pub struct Target {
    link: Link,
    params: Params,
    state: State,
    pending: VecDeque<Out>,
    stats: TargetStats,
    run: TargetStats,
    done: bool,
}

impl Target {
    pub(crate) fn new(link: Link, params: Params) -> Target {
        Target {
            link,
            params,
            state: State::Idle,
            pending: VecDeque::new(),
            stats: TargetStats::default(),
            run: TargetStats::default(),
            done: false,
        }
    }

    pub fn provider(&self) -> &str {
        &self.link.conn.provider
    }
    pub fn domain(&self) -> &str {
        &self.link.conn.domain_name
    }
    /// The parameters of this connection (the initiator's op, window, verify and max_size).
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Serves until the initiator says it is done (Ok), the stop flag is set (Ok), the peer
    /// disconnects (Ok if it had said done, else the error) or `deadline` passes (error).
    /// The statistics so far come with any error.
    #[allow(clippy::result_large_err)] // partial results travel with the error, by value
    pub fn serve(
        &mut self,
        stop: &AtomicBool,
        deadline: Instant,
    ) -> Result<TargetStats, (TargetStats, RdmaError)> {
        let mut evs = Vec::with_capacity(64);
        let started = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(self.stats);
            }
            if Instant::now() >= deadline {
                // Said with the time this target served, not "0.0 s".
                return Err((
                    self.stats,
                    RdmaError::Timeout {
                        what: format!(
                            "serving {}: the initiator did not finish by the test's end and its \
                             grace",
                            self.link.peer
                        ),
                        after: started.elapsed(),
                    },
                ));
            }
            evs.clear();
            if let Err(e) = self.link.poll(&mut evs) {
                // The initiator's Done may come with its disconnect (see Link::poll).
                self.done |= evs.iter().any(|e| matches!(e, Ev::Ctrl(Ctrl::Done)));
                return if self.done {
                    Ok(self.stats)
                } else {
                    Err((self.stats, e))
                };
            }
            for ev in evs.drain(..) {
                self.handle(ev).map_err(|e| (self.stats, e))?;
            }
            if self.done {
                return Ok(self.stats);
            }
            self.flush().map_err(|e| (self.stats, e))?;
            if let State::WriteLatency { size, iters, i } = self.state {
                self.write_back(size, iters, i)
                    .map_err(|e| (self.stats, e))?;
            }
        }
    }

    fn handle(&mut self, ev: Ev) -> Result<(), RdmaError> {
        let l = self.link.layout;
        match ev {
            Ev::Ctrl(Ctrl::Begin { mode, size, count }) => self.begin(mode, size as usize, count),
            Ev::Ctrl(Ctrl::End { .. }) => {
                let r = self.run;
                self.pending.push_back(Out::Ctrl(Ctrl::Stats {
                    verify_errors: r.verify_errors,
                    messages: r.messages,
                    bytes: r.bytes,
                }));
                self.state = State::Idle;
            }
            Ev::Ctrl(Ctrl::Done) => self.done = true,
            Ev::Ctrl(m) => {
                return Err(RdmaError::Protocol(format!(
                    "unexpected {m:?} from the initiator"
                )))
            }
            Ev::RxData { idx, len, data } => {
                match self.state {
                    State::Bandwidth { size } => {
                        let bad = if self.params.verify {
                            let seq = (data & SEQ_MASK) as u32;
                            self.link
                                .conn
                                .with_bytes(l.rx(idx), len, |b| pattern::mismatches(b, seq))
                                + size.abs_diff(len) as u64
                        } else {
                            0
                        };
                        self.count(len, bad);
                    }
                    State::SendLatency { size } => {
                        // Echo first, repost after: the receive is off the round trip's path.
                        self.pending.push_back(Out::Echo { size });
                        self.flush()?;
                    }
                    _ => {}
                }
                self.link.repost_rx(idx)?;
            }
            Ev::RemoteWrite { data } => {
                if let State::Bandwidth { size } = self.state {
                    let seq = (data & SEQ_MASK) as u32;
                    let slot = seq as usize % l.slots;
                    let bad = self
                        .link
                        .conn
                        .with_bytes(l.data(slot), size, |b| pattern::mismatches(b, seq));
                    self.count(size, bad);
                    self.pending.push_back(Out::Ctrl(Ctrl::Ack {
                        seq: u64::from(seq),
                    }));
                }
            }
            Ev::Data(_) | Ev::LatTx => {}
        }
        Ok(())
    }

    fn count(&mut self, bytes: usize, bad: u64) {
        for s in [&mut self.run, &mut self.stats] {
            s.messages += 1;
            s.bytes += bytes as u64;
            s.verify_errors += bad;
        }
    }

    fn begin(&mut self, mode: Mode, size: usize, count: u64) {
        let l = self.link.layout;
        if size == 0 || size > l.max_size {
            self.pending.push_back(Out::Ctrl(Ctrl::Ready { status: 1 }));
            return;
        }
        self.stats.runs += 1;
        self.run = TargetStats {
            runs: 1,
            ..TargetStats::default()
        };
        self.state = match (mode, self.params.op) {
            (Mode::Bandwidth, op) => {
                if op == Op::Read && self.params.verify {
                    for slot in 0..l.slots {
                        let seq = read_seq(count, slot);
                        self.link
                            .conn
                            .with_bytes_mut(l.data(slot), size, |b| pattern::fill(b, seq));
                    }
                }
                State::Bandwidth { size }
            }
            (Mode::Latency, Op::Write) => {
                self.link.conn.store_byte(l.data(0) + size - 1, 0);
                State::WriteLatency {
                    size,
                    iters: count,
                    i: 0,
                }
            }
            (Mode::Latency, Op::Send) => State::SendLatency { size },
            (Mode::Latency, Op::Read) => State::Idle,
        };
        self.pending.push_back(Out::Ctrl(Ctrl::Ready { status: 0 }));
    }

    /// Posts queued control messages and echoes, in order, until the provider pushes back.
    fn flush(&mut self) -> Result<(), RdmaError> {
        while let Some(&out) = self.pending.front() {
            let sent = match out {
                Out::Ctrl(m) => self.link.try_send_ctrl(m)?,
                Out::Echo { size } => {
                    let l = self.link.layout;
                    self.link
                        .conn
                        .post_send(l.lat_src(), size, None, ctx(K_LAT, 0))
                        .map_err(|e| self.link.err(e))?
                }
            };
            if !sent {
                break;
            }
            self.pending.pop_front();
        }
        Ok(())
    }

    /// Write latency: when the initiator's write `i` has landed (its last byte), write back.
    fn write_back(&mut self, size: usize, iters: u64, i: u64) -> Result<(), RdmaError> {
        let l = self.link.layout;
        let expect = (i % 255 + 1) as u8;
        if self.link.conn.load_byte(l.data(0) + size - 1) != expect {
            return Ok(());
        }
        self.link.conn.store_byte(l.lat_src() + size - 1, expect);
        let raddr = self.link.remote.base + l.data(0) as u64;
        if self
            .link
            .conn
            .post_write(
                l.lat_src(),
                size,
                raddr,
                self.link.remote.key,
                None,
                ctx(K_LAT, i),
            )
            .map_err(|e| self.link.err(e))?
        {
            self.state = if i + 1 >= iters {
                State::Idle
            } else {
                State::WriteLatency {
                    size,
                    iters,
                    i: i + 1,
                }
            };
        }
        Ok(())
    }
}
