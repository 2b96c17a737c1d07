//! UDP bulk transfer with loss, reordering and RFC 3550 jitter.
//!
//! Datagrams carry one of two headers ([`Format`]). linerate's own is 24 bytes (little endian):
//! a 32-bit tag derived from the test cookie (stray datagrams are ignored), the stream index, a
//! 64-bit sequence number from 0, and the send time in ns since the sender's start; sequence
//! `u64::MAX` marks a registration datagram. iperf3's (`linerate_iperf3::udp`) is 12 or 16 bytes:
//! the send time in seconds and microseconds, then a 32- or 64-bit sequence number from 1; it
//! names no stream, as each iperf3 stream has a socket of its own.
//!
//! One sender and one receiver serve both formats and both ends (bench's client, serve's
//! server). In iperf3's format the receiver also counts each stream by iperf3's own definitions
//! ([`RecvState::iperf3`], `linerate_iperf3::udp::Receiver`: gap-based loss, out of order,
//! RFC 1889 jitter in seconds, the counts when the omitted seconds ended), the figures an
//! iperf3 peer is told; linerate's counts (a sender's exact count, duplicates told from late
//! datagrams) are kept beside them.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linerate_iperf3::udp::{DatagramHeader, Receiver, SeqWidth, Timestamp};
use linerate_proto::{UdpStats, UdpWarmup};

use crate::meter::{Budget, Meter, Stop};
use crate::StreamOutcome;

pub const HEADER: usize = 24;
pub const REGISTER_SEQ: u64 = u64::MAX;

/// 32-bit tag from a cookie (FNV-1a).
pub fn tag(cookie: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in cookie.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub tag: u32,
    pub stream: u32,
    pub seq: u64,
    pub send_ns: u64,
}

impl Header {
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&self.tag.to_le_bytes());
        buf[4..8].copy_from_slice(&self.stream.to_le_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_le_bytes());
        buf[16..24].copy_from_slice(&self.send_ns.to_le_bytes());
    }

    pub fn read(buf: &[u8]) -> Option<Self> {
        if buf.len() < HEADER {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap_or([0; 8]));
        Some(Self {
            tag: u32_at(0),
            stream: u32_at(4),
            seq: u64_at(8),
            send_ns: u64_at(16),
        })
    }
}

/// The header a test's datagrams carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// linerate's ([`Header`]), with the test's tag.
    Linerate { tag: u32 },
    /// iperf3's, with its sequence width (`--udp-counters-64bit`). One socket per stream: the
    /// stream is the socket's, not the datagram's.
    Iperf3 { width: SeqWidth },
}

impl Format {
    /// The smallest datagram: the header.
    pub fn header_len(self) -> usize {
        match self {
            Self::Linerate { .. } => HEADER,
            Self::Iperf3 { width } => width.header_len(),
        }
    }

    /// Write the header of datagram `seq` (from 0) of `stream`, sent `send_ns` after the
    /// sender's origin. `buf` holds at least [`Format::header_len`] bytes.
    #[inline]
    fn write(self, buf: &mut [u8], stream: u32, seq: u64, send_ns: u64) {
        match self {
            Self::Linerate { tag } => Header {
                tag,
                stream,
                seq,
                send_ns,
            }
            .write(buf),
            Self::Iperf3 { width } => {
                let _ = DatagramHeader {
                    sent: Timestamp::from_duration(Duration::from_nanos(send_ns)),
                    seq: seq + 1,
                }
                .write(width, buf);
            }
        }
    }

    /// The header of a datagram received on the socket of `stream`, when it is one of this
    /// test's: linerate's names its stream and tag; iperf3's is the socket's stream's, its
    /// sequence taken back to start at 0 (an iperf3 sequence of 0 is no datagram of a test).
    #[inline]
    fn read(self, buf: &[u8], stream: u32) -> Option<Header> {
        match self {
            Self::Linerate { tag } => Header::read(buf).filter(|h| h.tag == tag),
            Self::Iperf3 { width } => {
                let h = DatagramHeader::read(buf, width).ok()?;
                Some(Header {
                    tag: 0,
                    stream,
                    seq: h.seq.checked_sub(1)?,
                    send_ns: u64::from(h.sent.sec) * 1_000_000_000 + u64::from(h.sent.usec) * 1_000,
                })
            }
        }
    }
}

/// How a UDP sender behaves.
#[derive(Debug, Clone)]
pub struct DatagramPlan {
    /// Bytes per datagram (at least the header).
    pub length: usize,
    /// bit/s of payload; 0 = as fast as possible.
    pub bitrate_bps: u64,
    pub deadline: Instant,
    /// A test that ends on data (iperf3's `-n`/`-k`): stop once it is spent.
    pub budget: Option<Arc<Budget>>,
}

/// Send paced datagrams of `stream` to `dest` (or the connected peer) until the deadline.
pub fn send(
    sock: &UdpSocket,
    dest: Option<SocketAddr>,
    format: Format,
    stream: u32,
    plan: &DatagramPlan,
    meter: &Meter,
    stop: &Stop,
) -> StreamOutcome {
    let DatagramPlan {
        length,
        bitrate_bps,
        deadline,
        ..
    } = *plan;
    let mut out = StreamOutcome::default();
    let mut buf = vec![0u8; length.max(format.header_len())];
    let start = Instant::now();
    let mut seq: u64 = 0;
    let mut sent_bytes: u64 = 0;
    let mut errors = 0u32;
    while !stop.is_set() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        if bitrate_bps > 0 {
            let due = start + Duration::from_secs_f64(sent_bytes as f64 * 8.0 / bitrate_bps as f64);
            if due > now {
                std::thread::sleep((due - now).min(deadline - now));
                continue;
            }
        }
        format.write(
            &mut buf,
            stream,
            seq,
            now.duration_since(start).as_nanos() as u64,
        );
        let r = match dest {
            Some(d) => sock.send_to(&buf, d),
            None => sock.send(&buf),
        };
        match r {
            Ok(n) => {
                seq += 1;
                sent_bytes += n as u64;
                meter.add(n as u64);
                if plan.budget.as_ref().is_some_and(|b| b.sent(n as u64)) {
                    break;
                }
            }
            // The local queue is full (ENOBUFS/EAGAIN): not a loss on the path; try again.
            Err(e)
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted)
                    || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                std::thread::yield_now();
            }
            Err(e) => {
                errors += 1;
                // ECONNREFUSED from an ICMP error of an earlier datagram: the receiver went away.
                if errors > 100 {
                    out.error = Some(format!("sending UDP: {e}"));
                    break;
                }
            }
        }
    }
    out.ended = Some(Instant::now());
    out.bytes = sent_bytes;
    out.udp = Some(UdpStats {
        packets: seq,
        ..UdpStats::default()
    });
    out
}

/// Sequence numbers below the highest seen that the receiver remembers, to tell a late
/// datagram (counted out of order) from a copy of one already received (a duplicate). Reordering
/// deeper than this is still counted out of order; a copy that late is counted so too.
pub const SEQ_WINDOW: u64 = 1024;

/// Per-stream receive state.
#[derive(Debug, Default, Clone)]
pub struct RecvState {
    /// Distinct datagrams received (a duplicate is not counted again, so it cannot hide a loss).
    pub packets: u64,
    /// Payload bytes received, duplicates included (they crossed the path too).
    pub bytes: u64,
    pub next_seq: u64,
    pub out_of_order: u64,
    /// Copies of a datagram already received within [`SEQ_WINDOW`].
    pub duplicates: u64,
    pub jitter_ns: f64,
    last_transit: Option<i128>,
    pub last: Option<Instant>,
    pub peer: Option<SocketAddr>,
    /// In iperf3's format: the stream counted by iperf3's definitions (`None` in linerate's).
    pub iperf3: Option<Receiver>,
    /// When the warm-up ended: `next_seq` then, and the distinct datagrams below it received
    /// so far (late ones that come after are added).
    pub warmup: Option<UdpWarmup>,
    /// Bit `seq % SEQ_WINDOW`: whether `seq` arrived, for `seq` in
    /// `next_seq - SEQ_WINDOW .. next_seq`.
    seen: [u64; (SEQ_WINDOW / 64) as usize],
}

impl RecvState {
    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % SEQ_WINDOW;
        ((i / 64) as usize, 1 << (i % 64))
    }

    /// A stream's state before its first datagram, in a test of `format`.
    pub fn new(format: Format) -> Self {
        Self {
            iperf3: matches!(format, Format::Iperf3 { .. }).then(Receiver::new),
            ..Self::default()
        }
    }

    /// The warm-up (`-O`) ends: what was counted so far is its, and so is every datagram
    /// numbered below the highest seen that still comes.
    pub fn end_omit(&mut self) {
        if self.warmup.is_none() {
            self.warmup = Some(UdpWarmup {
                seq: self.next_seq,
                packets: self.packets,
            });
        }
        if let Some(r) = &mut self.iperf3 {
            r.end_omit();
        }
    }

    /// Account one datagram (RFC 3550 §6.4.1 for the jitter).
    pub fn on_packet(&mut self, h: &Header, len: usize, arrival_ns: u64, now: Instant) {
        self.bytes = self.bytes.saturating_add(len as u64);
        if let Some(r) = &mut self.iperf3 {
            // iperf3's sequence is from 1; both clocks only ever differ from themselves.
            r.record(
                h.seq.saturating_add(1),
                Timestamp::from_duration(Duration::from_nanos(h.send_ns)),
                Timestamp::from_duration(Duration::from_nanos(arrival_ns)),
            );
        }
        if h.seq < self.next_seq {
            let (w, b) = Self::bit(h.seq);
            if self.next_seq - h.seq > SEQ_WINDOW {
                // Too old to remember: late, as far as anyone can tell.
                self.out_of_order += 1;
            } else if self.seen[w] & b != 0 {
                self.duplicates += 1;
                // A copy says nothing new about the path's delay either.
                self.last = Some(now);
                return;
            } else {
                self.seen[w] |= b;
                self.out_of_order += 1;
            }
        } else {
            // Sequences skipped over (next_seq .. seq) have not arrived: forget what their
            // bits said about the sequences SEQ_WINDOW below them.
            let skipped = h.seq - self.next_seq;
            if skipped >= SEQ_WINDOW {
                self.seen = Default::default();
            } else {
                for q in self.next_seq..h.seq {
                    let (w, b) = Self::bit(q);
                    self.seen[w] &= !b;
                }
            }
            let (w, b) = Self::bit(h.seq);
            self.seen[w] |= b;
            // A hostile sender's u64::MAX must not overflow.
            self.next_seq = h.seq.saturating_add(1);
        }
        self.packets += 1;
        if let Some(w) = &mut self.warmup {
            if h.seq < w.seq {
                // Sent in the warm-up, late: counted with it at both ends.
                w.packets += 1;
            }
        }
        let transit = i128::from(arrival_ns) - i128::from(h.send_ns);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
        self.last = Some(now);
    }

    /// Lost so far, from the highest sequence seen.
    pub fn lost_so_far(&self) -> u64 {
        self.next_seq.saturating_sub(self.packets)
    }

    pub fn stats(&self, sent: Option<u64>) -> UdpStats {
        let expected = sent.unwrap_or(self.next_seq);
        UdpStats {
            packets: self.packets,
            // Reordered datagrams arrived, so they are not lost; duplicates are not counted
            // as arrivals, so they do not hide a loss.
            lost: expected.saturating_sub(self.packets),
            out_of_order: self.out_of_order,
            duplicates: self.duplicates,
            jitter_us: self.jitter_ns / 1000.0,
            warmup: self.warmup,
        }
    }
}

/// Receive datagrams on one socket until `stop`; return the error, if any, and each stream's
/// state. In linerate's format a socket may carry every stream (each datagram names its own);
/// registration datagrams are answered (so the sender learns the path works) and recorded. In
/// iperf3's a socket carries one stream, `stream`. `budget`: a test that ends on data, to
/// which the payload received counts. `omit_until`: when the omitted seconds (`-O`) end, at
/// which iperf3's counts keep what they had as the omitted ones and the jitter starts again
/// (`iperf_reset_stats`).
pub fn recv(
    sock: &UdpSocket,
    format: Format,
    stream: u32,
    meters: &[Arc<Meter>],
    (budget, omit_until): (Option<&Budget>, Option<Instant>),
    stop: &Stop,
) -> (Option<String>, Vec<RecvState>) {
    // The state lives on this thread: no lock per datagram. Callers read it at the end.
    let mut state = vec![RecvState::new(format); meters.len()];
    let mut omit_until = omit_until;
    if let Err(e) = sock.set_read_timeout(Some(Duration::from_millis(50))) {
        return (Some(format!("setting the UDP receive timeout: {e}")), state);
    }
    let mut buf = vec![0u8; 65_536];
    let origin = Instant::now();
    // Arrival times are on this host's clock; jitter only uses differences.
    while !stop.is_set() {
        let got = sock.recv_from(&mut buf);
        if omit_until.is_some_and(|t| Instant::now() >= t) {
            omit_until = None;
            for s in &mut state {
                s.end_omit();
            }
        }
        match got {
            Ok((n, from)) => {
                let Some(h) = format.read(&buf[..n], stream) else {
                    continue;
                };
                if h.stream as usize >= meters.len() {
                    continue;
                }
                let s = &mut state[h.stream as usize];
                if h.seq == REGISTER_SEQ && matches!(format, Format::Linerate { .. }) {
                    s.peer = Some(from);
                    let _ = sock.send_to(&buf[..n], from);
                    continue;
                }
                let now = Instant::now();
                s.on_packet(&h, n, now.duration_since(origin).as_nanos() as u64, now);
                let lost = s.lost_so_far();
                let m = &meters[h.stream as usize];
                m.add(n as u64);
                if let Some(b) = budget {
                    b.received(n as u64);
                }
                let prev = m.lost();
                if lost > prev {
                    m.add_lost(lost - prev);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => return (Some(format!("receiving UDP: {e}")), state),
        }
    }
    // A test stopped within its omitted seconds: all it counted was omitted.
    if omit_until.is_some() {
        for s in &mut state {
            s.end_omit();
        }
    }
    (None, state)
}

/// Register stream `stream` with the receiver at the connected peer: send a
/// registration datagram until it is echoed (at most `tries` × 100 ms).
pub fn register(sock: &UdpSocket, tag: u32, stream: u32, tries: u32) -> Result<(), String> {
    let mut buf = [0u8; HEADER];
    Header {
        tag,
        stream,
        seq: REGISTER_SEQ,
        send_ns: 0,
    }
    .write(&mut buf);
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let mut reply = [0u8; 64];
    for _ in 0..tries {
        sock.send(&buf)
            .map_err(|e| format!("sending to the server's UDP port: {e}"))?;
        if let Ok(n) = sock.recv(&mut reply) {
            if Header::read(&reply[..n]).is_some_and(|h| h.tag == tag && h.seq == REGISTER_SEQ) {
                return Ok(());
            }
        }
    }
    Err(format!(
        "no answer from the server's UDP port after {tries} tries: a firewall may block UDP"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip() {
        let h = Header {
            tag: 7,
            stream: 3,
            seq: 1 << 40,
            send_ns: 123_456_789,
        };
        let mut b = [0u8; HEADER];
        h.write(&mut b);
        assert_eq!(Header::read(&b), Some(h));
        assert_eq!(Header::read(&b[..10]), None);
    }

    #[test]
    fn jitter_and_reordering() {
        let mut s = RecvState::default();
        let now = Instant::now();
        // Constant transit: no jitter.
        for i in 0..10u64 {
            let h = Header {
                tag: 0,
                stream: 0,
                seq: i,
                send_ns: i * 1000,
            };
            s.on_packet(&h, 100, i * 1000 + 50, now);
        }
        assert!(s.jitter_ns.abs() < 1e-9);
        // One packet 16 µs late: J moves by 16000/16 = 1000 ns.
        let h = Header {
            tag: 0,
            stream: 0,
            seq: 10,
            send_ns: 10_000,
        };
        s.on_packet(&h, 100, 10_000 + 50 + 16_000, now);
        assert!((s.jitter_ns - 1000.0).abs() < 1e-6);
        // A gap of 2 then a late one.
        let h = Header {
            tag: 0,
            stream: 0,
            seq: 13,
            send_ns: 13_000,
        };
        s.on_packet(&h, 100, 13_050, now);
        assert_eq!(s.lost_so_far(), 2);
        let h = Header {
            tag: 0,
            stream: 0,
            seq: 11,
            send_ns: 11_000,
        };
        s.on_packet(&h, 100, 14_000, now);
        assert_eq!(s.out_of_order, 1);
        let st = s.stats(Some(14));
        assert_eq!(st.packets, 13);
        assert_eq!(st.lost, 1, "only seq 12 is missing");
    }

    fn header(seq: u64) -> Header {
        Header {
            tag: 0,
            stream: 0,
            seq,
            send_ns: seq.wrapping_mul(1000),
        }
    }

    #[test]
    fn duplicates_are_told_from_late_datagrams() {
        let mut s = RecvState::default();
        let now = Instant::now();
        for q in [0, 1, 2, 3, 5, 6] {
            s.on_packet(&header(q), 100, q * 1000, now);
        }
        // A copy of the latest, a copy of an older one, then 4 late (not a copy).
        s.on_packet(&header(6), 100, 7000, now);
        s.on_packet(&header(2), 100, 7000, now);
        s.on_packet(&header(4), 100, 7000, now);
        assert_eq!((s.duplicates, s.out_of_order, s.packets), (2, 1, 7));
        // 4 arrived late once; a second copy of it is a duplicate.
        s.on_packet(&header(4), 100, 7000, now);
        assert_eq!((s.duplicates, s.out_of_order), (3, 1));
        let st = s.stats(Some(7));
        assert_eq!((st.packets, st.lost, st.duplicates), (7, 0, 3));
        assert_eq!(s.bytes, 1000, "all ten datagrams crossed the path");
    }

    /// The warm-up's share, cut at one sequence number: what had come when it ended, and
    /// the datagrams numbered below that which still come late; copies count in neither.
    #[test]
    fn the_warm_up_is_cut_at_a_sequence_number() {
        let mut s = RecvState::default();
        let now = Instant::now();
        for q in [0, 1, 3, 4] {
            s.on_packet(&header(q), 100, q * 1000, now);
        }
        s.end_omit();
        assert_eq!(s.warmup, Some(UdpWarmup { seq: 5, packets: 4 }));
        // After it: 2 late (sent in the warm-up), a copy of 3, then 5..=9 less 7.
        s.on_packet(&header(2), 100, 6000, now);
        s.on_packet(&header(3), 100, 6000, now);
        for q in [5, 6, 8, 9] {
            s.on_packet(&header(q), 100, q * 1000, now);
        }
        // A second end (the test stopping) changes nothing.
        s.end_omit();
        let st = s.stats(Some(10));
        assert_eq!(st.warmup, Some(UdpWarmup { seq: 5, packets: 5 }));
        // Whole: 9 of 10; after the warm-up: 4 of the 5 numbered 5..=9.
        assert_eq!((st.packets, st.lost), (9, 1));
        assert_eq!(st.packets_after_warmup(), 4);
        assert_eq!(10 - st.warmup.unwrap().seq - st.packets_after_warmup(), 1);
        // Without a warm-up nothing is cut.
        assert_eq!(RecvState::default().stats(None).warmup, None);
    }

    /// Datagrams in iperf3's format across loopback: on the wire as `linerate_iperf3::udp`
    /// reads them (sequence from 1), and counted by the receiver of the stream's socket.
    #[test]
    fn iperf3_datagrams_over_loopback() {
        for width in [SeqWidth::Bits32, SeqWidth::Bits64] {
            let format = Format::Iperf3 { width };
            let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            tx.connect(rx.local_addr().unwrap()).unwrap();
            let plan = DatagramPlan {
                length: 200,
                bitrate_bps: 0,
                deadline: Instant::now() + Duration::from_secs(5),
                budget: Some(Budget::new(20 * 200)),
            };
            plan.budget.as_ref().unwrap().arm();
            let sent = send(&tx, None, format, 0, &plan, &Meter::new(), &Stop::new());
            assert_eq!(sent.bytes, 20 * 200, "the budget ended it");
            assert_eq!(sent.udp.unwrap().packets, 20);
            // The first datagram, read by the protocol crate: sequence 1.
            let mut buf = [0u8; 256];
            rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(n, 200);
            assert_eq!(DatagramHeader::read(&buf[..n], width).unwrap().seq, 1);
            // The other 19 through the receiver, as stream 2 of 3.
            let meters: Vec<_> = (0..3).map(|_| Meter::new()).collect();
            let stop = Stop::new();
            let until = stop.clone();
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                until.set();
            });
            let (err, states) = recv(&rx, format, 2, &meters, (None, None), &stop);
            t.join().unwrap();
            assert!(err.is_none(), "{err:?}");
            assert_eq!(states[2].packets, 19);
            assert_eq!(meters[2].bytes(), 19 * 200);
            let st = states[2].stats(None);
            assert_eq!(
                (states[2].next_seq, st.lost),
                (20, 1),
                "highest 20; the first, taken above, missing"
            );
            assert_eq!(states[0].packets + states[1].packets, 0);
        }
    }

    /// iperf3's counts beside linerate's, on one receiver: sequences 1, 2, 5, a repeated
    /// connect (4 bytes, not a datagram of the test), then 4: two lost by the gap, one taken
    /// back; the highest sequence is iperf3's `packets`.
    #[test]
    fn iperf3_counts_gaps_late_datagrams_and_the_omitted_seconds() {
        let width = SeqWidth::Bits32;
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 64];
        let datagram = |seq: u64, buf: &mut [u8; 64]| {
            DatagramHeader {
                sent: Timestamp::default(),
                seq,
            }
            .write(width, buf)
            .unwrap();
        };
        for seq in [1u64, 2, 5] {
            datagram(seq, &mut buf);
            tx.send(&buf).unwrap();
        }
        tx.send(b"9876").unwrap();
        datagram(4, &mut buf);
        tx.send(&buf).unwrap();
        let meters = vec![Meter::new()];
        let stop = Stop::new();
        let until = stop.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            until.set();
        });
        // The omitted seconds end before the first datagram is read.
        let omit = Some(Instant::now());
        let (err, states) = recv(
            &rx,
            Format::Iperf3 { width },
            0,
            &meters,
            (None, omit),
            &stop,
        );
        t.join().unwrap();
        assert!(err.is_none(), "{err:?}");
        let r = states[0].iperf3.as_ref().expect("iperf3's counts");
        assert_eq!((r.packets(), r.errors(), r.out_of_order()), (5, 1, 1));
        assert_eq!(r.omitted().map(|o| o.packets), Some(0));
        assert_eq!(states[0].bytes, 4 * 64, "the 4-byte connect is not data");
        assert_eq!(states[0].packets, 4);
        assert!(
            RecvState::new(Format::Linerate { tag: 1 }).iperf3.is_none(),
            "linerate's datagrams are counted by linerate's definitions only"
        );
    }

    #[test]
    fn an_iperf3_sequence_of_zero_is_no_datagram() {
        let f = Format::Iperf3 {
            width: SeqWidth::Bits32,
        };
        let mut buf = [0u8; 16];
        assert!(f.read(&buf, 0).is_none());
        f.write(&mut buf, 0, 0, 1_500_000_000);
        let h = f.read(&buf, 4).unwrap();
        assert_eq!((h.stream, h.seq, h.send_ns), (4, 0, 1_500_000_000));
        assert!(f.read(&buf[..11], 0).is_none(), "shorter than the header");
    }

    #[test]
    fn a_gap_forgets_the_sequences_it_skipped() {
        let mut s = RecvState::default();
        let now = Instant::now();
        s.on_packet(&header(0), 100, 0, now);
        // Jump by more than the window, then by less: old bits must not pass for new arrivals.
        s.on_packet(&header(SEQ_WINDOW + 5), 100, 0, now);
        s.on_packet(&header(SEQ_WINDOW * 2), 100, 0, now);
        // SEQ_WINDOW + 6 .. 2 * SEQ_WINDOW never arrived: a late one is not a duplicate.
        s.on_packet(&header(SEQ_WINDOW + 6), 100, 0, now);
        assert_eq!((s.duplicates, s.out_of_order), (0, 1));
        // Older than the window: cannot tell, counted late.
        s.on_packet(&header(1), 100, 0, now);
        assert_eq!((s.duplicates, s.out_of_order), (0, 2));
        // A hostile sequence number does not overflow.
        s.on_packet(&header(u64::MAX), 100, 0, now);
        s.on_packet(&header(u64::MAX), 100, 0, now);
        assert_eq!(s.next_seq, u64::MAX);
        assert_eq!(
            s.duplicates, 0,
            "u64::MAX itself is at next_seq, never below it"
        );
    }
}
