//! UDP streams in iperf3's datagrams (`linerate_iperf3::udp`): a paced sender and a receiver,
//! each on a socket of its own stream, connected to the peer (iperf3 connects one socket per
//! stream at both ends). The receiver counts by iperf3's definitions (`linerate_iperf3::udp::
//! Receiver`: gap-based loss, out of order, RFC 1889 jitter in seconds), so what an iperf3 peer
//! is told is what an iperf3 end would have counted; the meters carry the bytes (and the
//! receiver's loss) for the intervals.

use std::io::ErrorKind;
use std::net::UdpSocket;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use linerate_iperf3::udp::{DatagramHeader, Receiver, SeqWidth, Sequence, Timestamp};
use linerate_proto::UdpStats;

use crate::meter::{Meter, Stop};
use crate::StreamOutcome;

/// The clock of iperf3's timestamps, here: time since the first use in this process (iperf3
/// writes its `CLOCK_MONOTONIC`; a receiver uses only differences between datagrams).
fn now_stamp(now: Instant) -> Timestamp {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    Timestamp::from_duration(now.saturating_duration_since(origin))
}

/// One stream's counts by iperf3's definitions: what an iperf3 end puts in its results.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Datagrams sent (sender), or the highest sequence number seen (receiver).
    pub packets: u64,
    /// Datagrams lost, gap-based (receiver; a sender's is 0).
    pub errors: i64,
    /// Datagrams at or below the highest sequence seen (receiver).
    pub out_of_order: u64,
    /// Seconds (receiver).
    pub jitter: f64,
    /// `packets` and `errors` when the omitted seconds ended; `None` without them.
    pub omitted: Option<(u64, i64)>,
}

/// How a sender sends.
#[derive(Debug, Clone)]
pub struct SendPlan {
    pub width: SeqWidth,
    /// Bytes per datagram (at least the header's).
    pub length: usize,
    /// bit/s; 0 = as fast as possible.
    pub bitrate_bps: u64,
    pub deadline: Instant,
    /// When the omitted seconds end (`-O`), to note the count then.
    pub omit_until: Option<Instant>,
}

/// Send paced datagrams on the connected `sock` until the deadline or `stop`. An error after
/// `stop` is the stop's doing (the sockets are closed under the stream) and is not reported.
pub fn send(
    sock: &UdpSocket,
    plan: &SendPlan,
    meter: &Meter,
    stop: &Stop,
) -> (StreamOutcome, Counts) {
    let mut out = StreamOutcome::default();
    let mut counts = Counts::default();
    let mut buf = vec![0u8; plan.length.max(plan.width.header_len())];
    let start = Instant::now();
    let mut seq = Sequence::default();
    let mut sent_bytes: u64 = 0;
    let mut errors = 0u32;
    while !stop.is_set() {
        let now = Instant::now();
        if now >= plan.deadline {
            break;
        }
        if counts.omitted.is_none() && plan.omit_until.is_some_and(|t| now >= t) {
            counts.omitted = Some((seq.sent(), 0));
        }
        if plan.bitrate_bps > 0 {
            let due =
                start + Duration::from_secs_f64(sent_bytes as f64 * 8.0 / plan.bitrate_bps as f64);
            if due > now {
                std::thread::sleep((due - now).min(plan.deadline - now));
                continue;
            }
        }
        let header = seq.next(now_stamp(now));
        // The buffer is at least the header's length: writing cannot fail.
        let _ = header.write(plan.width, &mut buf);
        match sock.send(&buf) {
            Ok(n) => {
                sent_bytes += n as u64;
                meter.add(n as u64);
            }
            Err(e) => {
                seq.unsend();
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted)
                    || e.raw_os_error() == Some(libc::ENOBUFS)
                {
                    // The local queue is full: not a loss on the path; try again.
                    std::thread::yield_now();
                    continue;
                }
                errors += 1;
                // ECONNREFUSED from an ICMP error of an earlier datagram: the peer went away.
                if errors > 100 && !stop.is_set() {
                    out.error = Some(format!("sending UDP: {e}"));
                    break;
                }
            }
        }
    }
    if counts.omitted.is_none() && plan.omit_until.is_some() {
        counts.omitted = Some((seq.sent(), 0));
    }
    counts.packets = seq.sent();
    out.ended = Some(Instant::now());
    out.bytes = sent_bytes;
    out.udp = Some(UdpStats {
        packets: seq.sent(),
        ..UdpStats::default()
    });
    (out, counts)
}

/// Receive the stream's datagrams on the connected `sock` until `stop`: its outcome (bytes, and
/// UDP figures in linerate's words: datagrams that arrived, the gap-based loss) and its counts
/// in iperf3's. A datagram shorter than the header (a repeated connect of the handshake) is
/// not counted. `omit_until`: when the omitted seconds end, the counts so far become the
/// omitted ones and the jitter starts again, as iperf3's `iperf_reset_stats` does.
pub fn recv(
    sock: &UdpSocket,
    width: SeqWidth,
    omit_until: Option<Instant>,
    meter: &Meter,
    stop: &Stop,
) -> (StreamOutcome, Counts) {
    let mut out = StreamOutcome::default();
    let mut r = Receiver::new();
    let mut omit_ended = omit_until.is_none();
    let mut buf = vec![0u8; 65_536];
    let mut arrived: u64 = 0;
    if let Err(e) = sock.set_read_timeout(Some(Duration::from_millis(50))) {
        out.error = Some(format!("setting the UDP receive timeout: {e}"));
        return (out, Counts::default());
    }
    while !stop.is_set() {
        let result = sock.recv(&mut buf);
        let now = Instant::now();
        if !omit_ended && omit_until.is_some_and(|t| now >= t) {
            r.end_omit();
            omit_ended = true;
        }
        match result {
            Ok(n) => {
                let Ok(h) = DatagramHeader::read(&buf[..n], width) else {
                    continue;
                };
                r.record(h.seq, h.sent, now_stamp(now));
                arrived += 1;
                out.bytes += n as u64;
                meter.add(n as u64);
                let lost = u64::try_from(r.errors()).unwrap_or(0);
                let before = meter.lost();
                if lost > before {
                    meter.add_lost(lost - before);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock
                        | ErrorKind::TimedOut
                        | ErrorKind::Interrupted
                        | ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => {
                if !stop.is_set() {
                    out.error = Some(format!("receiving UDP: {e}"));
                }
                break;
            }
        }
    }
    if !omit_ended {
        r.end_omit();
    }
    // As iperf3's: the stream's time ends when the test is stopped, not at its last datagram.
    out.ended = Some(Instant::now());
    let counts = Counts {
        packets: r.packets(),
        errors: r.errors(),
        out_of_order: r.out_of_order(),
        jitter: r.jitter(),
        omitted: r.omitted().map(|o| (o.packets, o.errors)),
    };
    out.udp = Some(UdpStats {
        packets: arrived,
        lost: u64::try_from(r.errors()).unwrap_or(0),
        out_of_order: r.out_of_order(),
        duplicates: 0,
        jitter_us: r.jitter() * 1e6,
    });
    (out, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        (a, b)
    }

    #[test]
    fn a_paced_stream_is_counted_as_iperf3_counts_it() {
        for width in [SeqWidth::Bits32, SeqWidth::Bits64] {
            let (tx, rx) = pair();
            let stop = Stop::new();
            let (rmeter, smeter) = (Meter::new(), Meter::new());
            let receiver = {
                let (stop, m) = (stop.clone(), Arc::clone(&rmeter));
                std::thread::spawn(move || recv(&rx, width, None, &m, &stop))
            };
            // 10 Mbit/s of 1000-byte datagrams for 300 ms: about 375 datagrams.
            let plan = SendPlan {
                width,
                length: 1000,
                bitrate_bps: 10_000_000,
                deadline: Instant::now() + Duration::from_millis(300),
                omit_until: None,
            };
            let (sent, scounts) = send(&tx, &plan, &smeter, &Stop::new());
            // Loopback delivers what it queued; give the receiver a moment, then stop it.
            std::thread::sleep(Duration::from_millis(200));
            stop.set();
            let (got, rcounts) = receiver.join().unwrap();
            assert!(sent.error.is_none() && got.error.is_none());
            assert!(scounts.packets > 10, "{scounts:?}");
            assert_eq!(sent.bytes, scounts.packets * 1000);
            assert_eq!(smeter.bytes(), sent.bytes);
            assert_eq!(
                rcounts.packets, scounts.packets,
                "the highest sequence is the last sent"
            );
            assert_eq!((rcounts.errors, rcounts.out_of_order), (0, 0));
            assert_eq!(got.bytes, sent.bytes);
            assert_eq!(rmeter.bytes(), got.bytes);
            assert!(rcounts.jitter >= 0.0 && rcounts.jitter < 1.0);
        }
    }

    #[test]
    fn gaps_and_short_datagrams() {
        let (tx, rx) = pair();
        let width = SeqWidth::Bits32;
        let mut buf = [0u8; 64];
        // Sequences 1, 2, 5, then a repeated connect, then 4: 2 lost, 1 taken back.
        for seq in [1u64, 2, 5] {
            DatagramHeader {
                sent: Timestamp::default(),
                seq,
            }
            .write(width, &mut buf)
            .unwrap();
            tx.send(&buf).unwrap();
        }
        tx.send(b"9876").unwrap();
        DatagramHeader {
            sent: Timestamp::default(),
            seq: 4,
        }
        .write(width, &mut buf)
        .unwrap();
        tx.send(&buf).unwrap();
        let stop = Stop::new();
        let s2 = stop.clone();
        let t = std::thread::spawn(move || recv(&rx, width, None, &Meter::new(), &s2));
        std::thread::sleep(Duration::from_millis(300));
        stop.set();
        let (out, c) = t.join().unwrap();
        assert_eq!((c.packets, c.errors, c.out_of_order), (5, 1, 1));
        assert_eq!(out.bytes, 4 * 64, "the 4-byte connect is not data");
        assert_eq!(out.udp.unwrap().packets, 4);
    }
}
