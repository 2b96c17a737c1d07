//! TCP bulk transfer: one sender or receiver loop per connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

use std::sync::Arc;

use crate::meter::{Budget, Meter, Stop};
use crate::{sys, StreamOutcome};

/// How a sender behaves.
#[derive(Debug, Clone)]
pub struct SendPlan {
    /// Bytes per write.
    pub length: usize,
    pub deadline: Instant,
    /// bit/s; 0 = as fast as possible.
    pub bitrate_bps: u64,
    /// sendfile(2) from an in-memory file instead of write(2).
    pub zerocopy: bool,
    /// A test that ends on data (iperf3's `-n`/`-k`): stop once it is spent.
    pub budget: Option<Arc<Budget>>,
}

/// A send that makes no progress for this long fails the stream.
pub const STALL: Duration = Duration::from_secs(10);

/// Pace to `bitrate_bps`: sleep while more was sent than the rate allows.
fn pace(start: Instant, sent: u64, bitrate_bps: u64, deadline: Instant) {
    if bitrate_bps == 0 {
        return;
    }
    let due = start + Duration::from_secs_f64(sent as f64 * 8.0 / bitrate_bps as f64);
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due.min(deadline) - now);
    }
}

/// Wait until `sock` is ready for `flags` (or has an error or hang-up), at most `limit`:
/// `Ok(false)` when the time ran out first.
fn wait_ready(sock: &TcpStream, flags: PollFlags, limit: Duration) -> std::io::Result<bool> {
    let timeout = Timespec::try_from(limit).map_err(std::io::Error::other)?;
    let mut fds = [PollFd::new(sock, flags)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Send until the deadline or `stop`, then close the write side. Never waits longer than
/// [`STALL`] for the receiver. An error once `stop` is set is not reported: the test ended,
/// and its connections may have been shut down under the stream.
///
/// The socket is non-blocking and the loop waits in poll(2) when the send buffer is full, as
/// iperf3 does: a blocking write(2) of a whole block sleeps inside the kernel with the socket's
/// send path half done, and the loop could not end at the deadline while the receiver is slow.
pub fn send(mut sock: &TcpStream, plan: &SendPlan, meter: &Meter, stop: &Stop) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Err(e) = sock.set_nonblocking(true) {
        out.error = Some(format!("making the socket non-blocking: {e}"));
        return out;
    }
    let len = plan.length.max(1);
    let file = if plan.zerocopy {
        match sys::memfd_with(len, 0x5a) {
            Ok(f) => Some(f),
            Err(e) => {
                out.error = Some(format!("--zerocopy: creating the in-memory file: {e}"));
                return out;
            }
        }
    } else {
        None
    };
    let buf = vec![0x5au8; len];
    let start = Instant::now();
    let mut sent: u64 = 0;
    let mut progress = start;
    while !stop.is_set() && Instant::now() < plan.deadline {
        let r = match &file {
            Some(f) => sys::sendfile(sock.as_raw_fd(), f.as_raw_fd(), 0, len),
            None => sock.write(&buf),
        };
        match r {
            Ok(n) => {
                sent += n as u64;
                meter.add(n as u64);
                progress = Instant::now();
                if plan.budget.as_ref().is_some_and(|b| b.sent(n as u64)) {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let now = Instant::now();
                if now.duration_since(progress) >= STALL {
                    out.error = Some(send_error(&e, STALL));
                    break;
                }
                let limit = (progress + STALL)
                    .min(plan.deadline)
                    .saturating_duration_since(now);
                if let Err(e) = wait_ready(sock, PollFlags::OUT, limit) {
                    if !stop.is_set() {
                        out.error = Some(describe(&e, "waiting to send"));
                    }
                    break;
                }
            }
            // After `stop`, the connection may have been shut down under the stream: that is
            // how the test ended, not an error of the stream.
            Err(e) => {
                if !stop.is_set() {
                    out.error = Some(send_error(&e, STALL));
                }
                break;
            }
        }
        pace(start, sent, plan.bitrate_bps, plan.deadline);
    }
    out.ended = Some(Instant::now());
    out.tcp = sys::tcp_info(sock);
    // Blocking again for the close: what is queued still goes out after the shutdown.
    let _ = sock.set_nonblocking(false);
    let _ = sock.shutdown(Shutdown::Write);
    out.bytes = sent;
    out
}

/// How a receiver takes the data off the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receive {
    /// read(2) into a user buffer, as every application does.
    Copy,
    /// recv(2) with `MSG_TRUNC`: the kernel drops the payload without copying it (`--discard`),
    /// so the stream's rate without the receiving application's copy shows.
    Discard,
}

/// When a receiver waiting for data is woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Once about [`WAKE_EVERY`] of data, at the rate measured so far, has queued (SO_RCVLOWAT,
    /// retuned as the rate changes, at most [`LOWAT_MAX`] or `cap` bytes): the default.
    ///
    /// Every wake-up of a sleeping receiver is work for the CPU that takes the packets in: the
    /// softirq that queues a segment wakes the reader (an inter-processor interrupt, a VM exit
    /// in a guest). On loopback that CPU is the sender's, which is the stream's limit; on a
    /// real link it is the receiving host's. Woken per arrival, as iperf3's receiver is, one
    /// 128 KiB stream on loopback gave 24 Gb/s (iperf3 30); woken per 512 KiB, 55-65 Gb/s
    /// with a CV of 1-8 % (8 alternating runs of 3 s, 2 vCPUs, Linux 6.18).
    Batched {
        /// The largest mark: half the receive buffer when the user fixed it (`--window`).
        cap: Option<usize>,
    },
    /// On every arrival (`bench --no-rcvlowat`): what a plain application sees.
    EachArrival,
}

/// The time's worth of data a batched receiver is woken for.
pub const WAKE_EVERY: Duration = Duration::from_millis(1);
/// The largest SO_RCVLOWAT a batched receiver asks for, and its read buffer.
pub const LOWAT_MAX: usize = linerate_proto::defaults::RECV_BATCH_BYTES as usize;
/// How often the mark follows the measured rate.
const LOWAT_RETUNE: Duration = Duration::from_millis(50);

/// A batched receiver's SO_RCVLOWAT, following the rate.
#[derive(Debug)]
struct Lowat {
    cap: usize,
    /// The mark in force (1: the kernel's default, wake on any data).
    mark: usize,
    since: Instant,
    got_then: u64,
}

impl Lowat {
    fn new(cap: Option<usize>, now: Instant) -> Self {
        Self {
            cap: cap.map_or(LOWAT_MAX, |c| c.clamp(1, LOWAT_MAX)),
            mark: 1,
            since: now,
            got_then: 0,
        }
    }

    /// The mark for `bytes` received over `secs`: [`WAKE_EVERY`] worth, within 1..=cap.
    fn mark_for(&self, bytes: u64, secs: f64) -> usize {
        let rate = bytes as f64 / secs.max(1e-6);
        ((rate * WAKE_EVERY.as_secs_f64()) as usize).clamp(1, self.cap)
    }

    /// After a read: every [`LOWAT_RETUNE`], the mark for the rate since the last retune, set
    /// when it moved by more than a quarter.
    fn follow(&mut self, sock: &TcpStream, got: u64, now: Instant) {
        let dt = now.duration_since(self.since);
        if dt < LOWAT_RETUNE {
            return;
        }
        let want = self.mark_for(got - self.got_then, dt.as_secs_f64());
        self.since = now;
        self.got_then = got;
        if want.abs_diff(self.mark) * 4 > self.mark {
            self.set(sock, want);
        }
    }

    fn set(&mut self, sock: &TcpStream, mark: usize) {
        // Advisory: where the kernel refuses, the receiver is woken per arrival.
        if sys::set_rcvlowat(sock, mark).is_ok() {
            self.mark = mark;
        }
    }
}

/// How long a receiver of a test that ends on data waits before it reads what queued below its
/// wake-up mark.
const BUDGET_LOOK: Duration = Duration::from_millis(20);

/// How a receiver behaves.
#[derive(Debug, Clone)]
pub struct RecvPlan {
    /// The sender's write size (the read buffer is at least this).
    pub length: usize,
    pub how: Receive,
    pub wake: Wake,
    /// Give up after this long without data.
    pub idle: Duration,
    /// A test that ends on data (iperf3's `-n`/`-k`): what this end received counts toward it.
    pub budget: Option<Arc<Budget>>,
}

/// Receive until end of stream, an error, `stop`, or `idle` without data (an error once `stop`
/// is set is not reported, as for [`send`]).
///
/// Non-blocking reads until the queue is empty, then poll(2), as iperf3 does (see [`send`]);
/// `wake` says how much must have queued before poll(2) returns.
pub fn recv(mut sock: &TcpStream, plan: &RecvPlan, meter: &Meter, stop: &Stop) -> StreamOutcome {
    let RecvPlan {
        length,
        how,
        wake,
        idle,
        ..
    } = *plan;
    let mut out = StreamOutcome::default();
    if let Err(e) = sock.set_nonblocking(true) {
        out.error = Some(format!("making the socket non-blocking: {e}"));
        return out;
    }
    // A batched receiver takes up to a whole mark per read.
    let floor = match wake {
        Wake::Batched { .. } => LOWAT_MAX,
        Wake::EachArrival => 64 * 1024,
    };
    let mut buf = vec![0u8; length.clamp(floor, 4 * 1024 * 1024)];
    let mut got: u64 = 0;
    let mut last_data = Instant::now();
    let mut lowat = match wake {
        Wake::Batched { cap } => Some(Lowat::new(cap, last_data)),
        Wake::EachArrival => None,
    };
    loop {
        if stop.is_set() {
            break;
        }
        let r = match how {
            Receive::Copy => sock.read(&mut buf),
            Receive::Discard => sys::recv_discard(sock, &mut buf),
        };
        match r {
            Ok(0) => break,
            Ok(n) => {
                got += n as u64;
                meter.add(n as u64);
                if let Some(b) = &plan.budget {
                    b.received(n as u64);
                }
                last_data = Instant::now();
                if let Some(l) = lowat.as_mut() {
                    l.follow(sock, got, last_data);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let left = idle.saturating_sub(last_data.elapsed());
                // A test that ends on data: its sender may stop below the mark without closing
                // (an iperf3 server stops at its count of -n), so look again soon.
                let wait = if plan.budget.is_some() {
                    left.min(BUDGET_LOOK)
                } else {
                    left
                };
                match wait_ready(sock, PollFlags::IN, wait) {
                    Ok(true) => {}
                    // Less than the mark may be waiting (the sender slowed or stopped without
                    // closing): wake on any data from now on, and read what is there.
                    Ok(false) if lowat.as_ref().is_some_and(|l| l.mark > 1) => {
                        if let Some(l) = lowat.as_mut() {
                            l.set(sock, 1);
                            if l.mark > 1 {
                                // The kernel refused to lower it: no batching from here.
                                lowat = None;
                            }
                        }
                    }
                    Ok(false) if last_data.elapsed() < idle => {}
                    Ok(false) => {
                        out.error = Some(recv_error(&e, idle));
                        break;
                    }
                    Err(e) => {
                        if !stop.is_set() {
                            out.error = Some(describe(&e, "waiting for data"));
                        }
                        break;
                    }
                }
            }
            Err(e) => {
                if !stop.is_set() {
                    out.error = Some(recv_error(&e, idle));
                }
                break;
            }
        }
    }
    out.ended = Some(Instant::now());
    out.tcp = sys::tcp_info(sock);
    out.bytes = got;
    out
}

/// Why a send failed: a send timeout (`stall`) means the receiver took nothing.
pub(crate) fn send_error(e: &std::io::Error, stall: Duration) -> String {
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        format!("the receiver took nothing for {} s", stall.as_secs())
    } else {
        describe(e, "sending")
    }
}

/// Why a receive failed: a receive timeout (`idle`) means no data came.
pub(crate) fn recv_error(e: &std::io::Error, idle: Duration) -> String {
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        format!("no data for {} s", idle.as_secs())
    } else {
        describe(e, "receiving")
    }
}

fn describe(e: &std::io::Error, what: &str) -> String {
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => {
            format!("{what}: the peer closed the connection ({e})")
        }
        _ => format!("{what}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A receiver's plan with 128 KiB writes and no budget.
    fn plan(how: Receive, wake: Wake, idle: Duration) -> RecvPlan {
        RecvPlan {
            length: 128 * 1024,
            how,
            wake,
            idle,
            budget: None,
        }
    }

    /// Send `total` bytes over loopback and receive them `how`: the bytes the receiver counts.
    fn transfer(total: usize, how: Receive, wake: Wake) -> StreamOutcome {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            // Writes of odd sizes, so reads do not line up with them.
            let block = vec![0xa5u8; 70_001];
            let mut left = total;
            while left > 0 {
                let n = left.min(block.len());
                s.write_all(&block[..n]).unwrap();
                left -= n;
            }
        });
        let (s, _) = l.accept().unwrap();
        let meter = Meter::new();
        let out = recv(
            &s,
            &plan(how, wake, Duration::from_secs(10)),
            &meter,
            &Stop::new(),
        );
        sender.join().unwrap();
        assert_eq!(
            meter.bytes(),
            out.bytes,
            "the meter counts what the stream counts"
        );
        out
    }

    #[test]
    fn a_discarding_receiver_counts_every_byte_and_only_those() {
        for wake in [Wake::Batched { cap: None }, Wake::EachArrival] {
            for total in [1, 65_536, 10 * 1024 * 1024 + 17] {
                let copy = transfer(total, Receive::Copy, wake);
                let discard = transfer(total, Receive::Discard, wake);
                assert_eq!(copy.bytes, total as u64, "copy, {total} bytes, {wake:?}");
                assert_eq!(
                    discard.bytes, total as u64,
                    "discard, {total} bytes, {wake:?}"
                );
                assert!(copy.error.is_none() && discard.error.is_none());
            }
        }
    }

    /// A connected pair on loopback: (the accepted end, the connecting end).
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (s, c)
    }

    #[test]
    fn a_sender_ends_at_its_deadline_when_the_receiver_takes_nothing() {
        let (peer, s) = pair();
        let plan = SendPlan {
            length: 1 << 20,
            deadline: Instant::now() + Duration::from_millis(300),
            bitrate_bps: 0,
            zerocopy: false,
            budget: None,
        };
        let t0 = Instant::now();
        let out = send(&s, &plan, &Meter::new(), &Stop::new());
        // The buffers fill within the 300 ms; a sender asleep in write(2) would stay there
        // until the stall limit (10 s).
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the sender took {:?}",
            t0.elapsed()
        );
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(out.bytes > 0, "the buffers took something");
        drop(peer);
    }

    /// The D-SACK count is read where the kernel writes it (4.19 and later): a fresh loopback
    /// connection has it, at 0, beside the chrono times before it in the struct.
    #[test]
    fn tcp_info_reads_the_dsack_count_where_the_kernel_has_it() {
        let (_peer, s) = pair();
        let info = sys::tcp_info(&s).expect("TCP_INFO of a connected socket");
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut v = release
            .trim()
            .split(['.', '-'])
            .map(|x| x.parse::<u32>().unwrap_or(0));
        let (major, minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
        if (major, minor) >= (4, 19) {
            assert_eq!(info.dsack_dups, Some(0), "kernel {}", release.trim());
            assert!(info.limited.is_some(), "kernel {}", release.trim());
        } else {
            assert_eq!(info.dsack_dups, None, "kernel {}", release.trim());
        }
    }

    #[test]
    fn a_closed_peer_is_seen_in_tcp_info() {
        let (peer, s) = pair();
        assert!(!sys::tcp_peer_closed(&s));
        drop(peer);
        // Bounded: the FIN crosses loopback at once; a loaded machine gets 5 s.
        let t0 = Instant::now();
        while !sys::tcp_peer_closed(&s) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(sys::tcp_peer_closed(&s));
    }

    #[test]
    fn a_sender_with_a_budget_stops_once_it_is_spent() {
        let (peer, s) = pair();
        let budget = Budget::new(1_000_000);
        budget.arm();
        let plan = SendPlan {
            length: 64 * 1024,
            deadline: Instant::now() + Duration::from_secs(30),
            bitrate_bps: 0,
            zerocopy: false,
            budget: Some(Arc::clone(&budget)),
        };
        let reader = std::thread::spawn(move || {
            let mut sink = Vec::new();
            (&peer).read_to_end(&mut sink).map(|_| sink.len())
        });
        let out = send(&s, &plan, &Meter::new(), &Stop::new());
        drop(s);
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(budget.over().is_set());
        // A write may be partial: at least the budget, at most one write more.
        assert!(
            (1_000_000..1_000_000 + 64 * 1024).contains(&out.bytes),
            "{}",
            out.bytes
        );
        assert_eq!(reader.join().unwrap().unwrap() as u64, out.bytes);
    }

    #[test]
    fn a_receiver_without_data_fails_after_its_idle_limit() {
        for wake in [Wake::Batched { cap: None }, Wake::EachArrival] {
            let (_peer, s) = pair();
            let t0 = Instant::now();
            let out = recv(
                &s,
                &plan(Receive::Copy, wake, Duration::from_millis(300)),
                &Meter::new(),
                &Stop::new(),
            );
            let took = t0.elapsed();
            assert!(
                took >= Duration::from_millis(250) && took < Duration::from_secs(5),
                "{took:?}, {wake:?}"
            );
            let e = out.error.expect("an idle receiver fails");
            assert!(e.contains("no data"), "{e}");
            assert_eq!(out.bytes, 0);
        }
    }

    /// A fast start raises the wake-up mark; then the sender writes a few bytes and goes
    /// quiet without closing. The receiver must still take those bytes (they sit below the
    /// mark) before it gives up, and give up after its idle limit, not later.
    #[test]
    fn a_batched_receiver_takes_a_trickle_below_its_mark() {
        let (peer, mut c) = pair();
        let idle = Duration::from_millis(400);
        let sender = std::thread::spawn(move || {
            let block = vec![1u8; 64 * 1024];
            let t0 = Instant::now();
            let mut sent = 0u64;
            // Bounded: 200 ms or 4 GiB, whichever comes first.
            while t0.elapsed() < Duration::from_millis(200) && sent < 4 << 30 {
                c.write_all(&block).unwrap();
                sent += block.len() as u64;
            }
            // The receiver drains the queue and waits with the raised mark.
            std::thread::sleep(Duration::from_millis(100));
            c.write_all(&[2u8; 100]).unwrap();
            // Quiet, still open, for longer than the receiver's idle limit.
            std::thread::sleep(Duration::from_millis(1500));
            sent + 100
        });
        let t0 = Instant::now();
        let out = recv(
            &peer,
            &plan(Receive::Copy, Wake::Batched { cap: None }, idle),
            &Meter::new(),
            &Stop::new(),
        );
        let took = t0.elapsed();
        let sent = sender.join().unwrap();
        assert_eq!(
            out.bytes, sent,
            "every byte, the 100 below the mark included"
        );
        let e = out
            .error
            .expect("a quiet sender ends the stream after the idle limit");
        assert!(e.contains("no data"), "{e}");
        assert!(took < Duration::from_millis(1400), "gave up after {took:?}");
    }

    #[test]
    fn the_wake_up_mark_is_a_millisecond_of_data_within_its_cap() {
        let now = Instant::now();
        let l = Lowat::new(None, now);
        // 125 MB/s (1 Gb/s) for 0.1 s: 125 kB per millisecond.
        assert_eq!(l.mark_for(12_500_000, 0.1), 125_000);
        // 10 GB/s: capped.
        assert_eq!(l.mark_for(1_000_000_000, 0.1), LOWAT_MAX);
        // Nothing yet: wake on any data.
        assert_eq!(l.mark_for(0, 0.1), 1);
        // A fixed window of 256 KiB: at most half of it.
        let w = Lowat::new(Some(128 << 10), now);
        assert_eq!(w.mark_for(1_000_000_000, 0.1), 128 << 10);
    }
}
