//! One connected endpoint with its region and the shared completion dispatch of both sides.

use std::time::{Duration, Instant};

use crate::ffi::bindings as sys;
use crate::ffi::conn::{Completion, Conn, CqError, EqEvent, FiError};
use crate::params::{Layout, CTRL_SIZE};
use crate::proto::{Ctrl, RegionDesc, CTRL_IMM};
use crate::RdmaError;

/// Operation contexts: kind in the top byte, a value (sequence number, buffer index) below.
pub(crate) const K_DATA: u64 = 1;
pub(crate) const K_RX: u64 = 2;
pub(crate) const K_CTRL: u64 = 3;
pub(crate) const K_LAT: u64 = 4;
const VALUE_MASK: u64 = (1 << 56) - 1;

pub(crate) fn ctx(kind: u64, value: u64) -> u64 {
    kind << 56 | (value & VALUE_MASK)
}

/// What a completion meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    /// One of our data operations (write, read, send) completed: its sequence number.
    Data(u64),
    /// A control message arrived (its receive is already reposted).
    Ctrl(Ctrl),
    /// A data message arrived in receive buffer `idx`: the caller reposts it after use.
    RxData { idx: usize, len: usize, data: u64 },
    /// The peer wrote into our region with remote CQ data (write with verify).
    RemoteWrite { data: u64 },
    /// A latency-mode operation of ours completed.
    LatTx,
}

/// Time without completions after which a poller yields the CPU (then again each period).
const YIELD_AFTER: Duration = Duration::from_micros(50);

/// How often the event queue is checked for a disconnect while polling completions.
const EQ_CHECK: Duration = Duration::from_millis(20);
/// How long a link takes the peer's last control messages after its disconnect was seen.
const DRAIN_AFTER_SHUTDOWN: Duration = Duration::from_millis(50);

#[derive(Debug)]
pub(crate) struct Link {
    pub conn: Conn,
    pub layout: Layout,
    pub remote: RegionDesc,
    /// For messages: "to 127.0.0.1:40123" / "from 127.0.0.1:51234".
    pub peer: String,
    ctrl_free: Vec<usize>,
    comps: Vec<Completion>,
    last_eq: Instant,
    idle_since: Option<Instant>,
}

impl Link {
    pub(crate) fn new(conn: Conn, layout: Layout, peer: String) -> Link {
        Link {
            conn,
            layout,
            remote: RegionDesc {
                base: 0,
                key: 0,
                len: 0,
            },
            peer,
            ctrl_free: (0..layout.ctrl_count).rev().collect(),
            comps: Vec::with_capacity(64),
            last_eq: Instant::now(),
            idle_since: None,
        }
    }

    pub(crate) fn local_desc(&self) -> RegionDesc {
        let (base, key) = self.conn.remote_base();
        RegionDesc {
            base,
            key,
            len: self.conn.region_len() as u64,
        }
    }

    pub(crate) fn err(&self, e: FiError) -> RdmaError {
        if e.code == sys::FI_ETIMEDOUT {
            return RdmaError::Timeout {
                what: format!("in {} {}", e.call, self.peer),
                after: Duration::ZERO,
            };
        }
        RdmaError::Call {
            call: e.call.to_string(),
            target: self.peer.clone(),
            provider: self.conn.provider.clone(),
            text: e.text,
            code: e.code,
        }
    }

    fn cq_err(&self, e: CqError) -> RdmaError {
        let gone = [
            sys::FI_ECONNRESET,
            sys::FI_ENOTCONN,
            sys::FI_ESHUTDOWN,
            sys::FI_ECANCELED,
            libc::EPIPE,
            libc::EIO,
            libc::ECONNABORTED,
        ];
        if gone.contains(&e.err.code) {
            RdmaError::PeerGone(format!(
                "{} {} (provider {}): {}",
                e.err.call, self.peer, self.conn.provider, e.err.text
            ))
        } else {
            self.err(e.err)
        }
    }

    /// Posts every receive buffer (before connecting/accepting).
    pub(crate) fn post_all_rx(&self) -> Result<(), RdmaError> {
        for i in 0..self.layout.rx_count {
            self.repost_rx(i)?;
        }
        Ok(())
    }

    pub(crate) fn repost_rx(&self, i: usize) -> Result<(), RdmaError> {
        // A receive queue sized above rx_count never reports EAGAIN in practice; retry briefly.
        for _ in 0..10_000 {
            if self
                .conn
                .post_recv(self.layout.rx(i), self.layout.rx_size, ctx(K_RX, i as u64))
                .map_err(|e| self.err(e))?
            {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        Err(RdmaError::Protocol(format!(
            "fi_recv {}: receive queue stays full",
            self.peer
        )))
    }

    /// Sends a control message if a control buffer is free and the provider takes it.
    pub(crate) fn try_send_ctrl(&mut self, m: Ctrl) -> Result<bool, RdmaError> {
        let Some(&i) = self.ctrl_free.last() else {
            return Ok(false);
        };
        let off = self.layout.ctrl(i);
        self.conn
            .with_bytes_mut(off, CTRL_SIZE, |b| b.copy_from_slice(&m.encode()));
        if self
            .conn
            .post_send(off, CTRL_SIZE, Some(CTRL_IMM), ctx(K_CTRL, i as u64))
            .map_err(|e| self.err(e))?
        {
            self.ctrl_free.pop();
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(crate) fn ctrl_idle(&self) -> bool {
        self.ctrl_free.len() == self.layout.ctrl_count
    }

    /// Polls the completion queue once (driving progress) and, every few ms, the event queue;
    /// appends what happened to `out`.
    pub(crate) fn poll(&mut self, out: &mut Vec<Ev>) -> Result<(), RdmaError> {
        let mut comps = std::mem::take(&mut self.comps);
        comps.clear();
        let r = self.conn.poll_cq(&mut comps);
        if matches!(r, Ok(0)) {
            // Both sides spin; on a loaded machine (or with both on one core) a spinning thread
            // keeps its peer off the CPU for a whole time slice. After a while without
            // completions, yield now and then (never within a fast round trip).
            let now = Instant::now();
            match self.idle_since {
                None => self.idle_since = Some(now),
                Some(t) if now.duration_since(t) >= YIELD_AFTER => {
                    std::thread::yield_now();
                    self.idle_since = Some(now);
                }
                Some(_) => {}
            }
        } else {
            self.idle_since = None;
        }
        let res = match r {
            Ok(_) => comps.iter().try_for_each(|c| self.dispatch(*c, out)),
            Err(e) => Err(self.cq_err(e)),
        };
        self.comps = comps;
        res?;
        if self.last_eq.elapsed() >= EQ_CHECK {
            self.last_eq = Instant::now();
            match self.conn.poll_eq() {
                Ok(Some(EqEvent::Shutdown)) => {
                    // The peer's last control message (its Done) can complete on this side
                    // after its disconnect is already on the event queue: rxe under a loaded
                    // emulator delivered them in that order. Take what the completion queue
                    // still holds before saying the peer is gone.
                    self.drain_ctrl(out);
                    return Err(RdmaError::PeerGone(format!(
                        "connection {} shut down (provider {})",
                        self.peer, self.conn.provider
                    )));
                }
                Ok(_) => {}
                Err(e) => return Err(self.err(e)),
            }
        }
        Ok(())
    }

    /// After the peer disconnected: the control messages still in the completion queue, for
    /// up to [`DRAIN_AFTER_SHUTDOWN`] (receives are not posted again, data is dropped; a
    /// completion in error ends the drain: the queue pair is flushing).
    fn drain_ctrl(&mut self, out: &mut Vec<Ev>) {
        let until = Instant::now() + DRAIN_AFTER_SHUTDOWN;
        let mut comps = std::mem::take(&mut self.comps);
        while Instant::now() < until {
            comps.clear();
            match self.conn.poll_cq(&mut comps) {
                Ok(0) => std::thread::sleep(Duration::from_millis(1)),
                Ok(_) => {
                    for c in comps.iter().filter(|c| c.ctx >> 56 == K_RX) {
                        if let Some(Ok(m)) = self.rx_ctrl(c, (c.ctx & VALUE_MASK) as usize) {
                            out.push(Ev::Ctrl(m));
                        }
                    }
                }
                Err(_) => break,
            }
        }
        self.comps = comps;
    }

    /// The control message a receive completion `c` brought into receive buffer `idx`, when
    /// it brought one (remote CQ data with [`CTRL_IMM`]); None for a data message or a write.
    #[inline]
    fn rx_ctrl(&self, c: &Completion, idx: usize) -> Option<Result<Ctrl, RdmaError>> {
        let cq_data = c.flags & sys::FI_REMOTE_CQ_DATA as u64 != 0;
        (cq_data && c.data & CTRL_IMM != 0).then(|| {
            self.conn
                .with_bytes(self.layout.rx(idx), CTRL_SIZE.min(c.len), Ctrl::decode)
        })
    }

    fn dispatch(&mut self, c: Completion, out: &mut Vec<Ev>) -> Result<(), RdmaError> {
        let kind = c.ctx >> 56;
        let value = c.ctx & VALUE_MASK;
        let cq_data = c.flags & sys::FI_REMOTE_CQ_DATA as u64 != 0;
        let remote_write = c.flags & sys::FI_REMOTE_WRITE as u64 != 0;
        match kind {
            K_RX => {
                let idx = value as usize;
                if let Some(m) = self.rx_ctrl(&c, idx) {
                    let m = m?;
                    self.repost_rx(idx)?;
                    out.push(Ev::Ctrl(m));
                } else if remote_write {
                    // A write with remote CQ data that consumed a receive (FI_RX_CQ_DATA).
                    self.repost_rx(idx)?;
                    out.push(Ev::RemoteWrite { data: c.data });
                } else {
                    out.push(Ev::RxData {
                        idx,
                        len: c.len,
                        data: c.data,
                    });
                }
            }
            K_CTRL => self.ctrl_free.push(value as usize),
            K_DATA => out.push(Ev::Data(value)),
            K_LAT => out.push(Ev::LatTx),
            _ if remote_write && cq_data => out.push(Ev::RemoteWrite { data: c.data }),
            _ => {}
        }
        Ok(())
    }
}
