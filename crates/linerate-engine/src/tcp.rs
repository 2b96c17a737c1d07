//! TCP bulk transfer: one sender or receiver loop per connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

use crate::meter::{Meter, Stop};
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
}

/// The default bytes per write and per read: a protocol default, kept with the others.
pub use linerate_proto::defaults::default_length;

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

/// Send until the deadline, then close the write side. Never waits longer than [`STALL`] for
/// the receiver.
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
                    out.error = Some(describe(&e, "waiting to send"));
                    break;
                }
            }
            Err(e) => {
                out.error = Some(send_error(&e, STALL));
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

/// Receive until end of stream, an error, `stop`, or `idle` without data.
///
/// Non-blocking reads until the queue is empty, then poll(2), as iperf3 does (see [`send`]).
pub fn recv(
    mut sock: &TcpStream,
    length: usize,
    how: Receive,
    idle: Duration,
    meter: &Meter,
    stop: &Stop,
) -> StreamOutcome {
    let mut out = StreamOutcome::default();
    if let Err(e) = sock.set_nonblocking(true) {
        out.error = Some(format!("making the socket non-blocking: {e}"));
        return out;
    }
    let mut buf = vec![0u8; length.clamp(64 * 1024, 4 * 1024 * 1024)];
    let mut got: u64 = 0;
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
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                match wait_ready(sock, PollFlags::IN, idle) {
                    Ok(true) => {}
                    Ok(false) => {
                        out.error = Some(recv_error(&e, idle));
                        break;
                    }
                    Err(e) => {
                        out.error = Some(describe(&e, "waiting for data"));
                        break;
                    }
                }
            }
            Err(e) => {
                out.error = Some(recv_error(&e, idle));
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

    /// Send `total` bytes over loopback and receive them `how`: the bytes the receiver counts.
    fn transfer(total: usize, how: Receive) -> StreamOutcome {
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
            128 * 1024,
            how,
            Duration::from_secs(10),
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
        for total in [1, 65_536, 10 * 1024 * 1024 + 17] {
            let copy = transfer(total, Receive::Copy);
            let discard = transfer(total, Receive::Discard);
            assert_eq!(copy.bytes, total as u64, "copy, {total} bytes");
            assert_eq!(discard.bytes, total as u64, "discard, {total} bytes");
            assert!(copy.error.is_none() && discard.error.is_none());
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

    #[test]
    fn a_receiver_without_data_fails_after_its_idle_limit() {
        let (_peer, s) = pair();
        let t0 = Instant::now();
        let out = recv(
            &s,
            128 * 1024,
            Receive::Copy,
            Duration::from_millis(300),
            &Meter::new(),
            &Stop::new(),
        );
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(5),
            "{took:?}"
        );
        let e = out.error.expect("an idle receiver fails");
        assert!(e.contains("no data"), "{e}");
        assert_eq!(out.bytes, 0);
    }
}
