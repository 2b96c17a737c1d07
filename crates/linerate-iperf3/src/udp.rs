//! UDP streams: the datagram header, the connect handshake's magic, and the receiver's
//! accounting by iperf3's definitions (`iperf_udp.c`).
//!
//! **Header.** Every datagram starts with the sender's clock, `sec` then `usec` (big-endian
//! `u32`s), then the sequence number: a big-endian `u32` at bytes 8..12, or a `u64` at 8..16
//! when the client asked for `udp_counters_64bit`. Padding up to the datagram length follows.
//! Sequence numbers start at 1. The clock is the sender's `CLOCK_MONOTONIC` (3.7+; wall-clock
//! time before), so only differences between datagrams mean anything.
//!
//! **Handshake.** UDP streams carry no cookie. For each stream the client sends one 4-byte
//! datagram to the server's port and waits for a 4-byte reply from it; the server takes the
//! datagram's source as the stream's peer. The values were 123456789 and 987654321 written in
//! host byte order until 3.11; 3.12 made them `"9876"` and `"6789"`, still written in host
//! order, so on big-endian hosts 3.12 to 3.16 sent them reversed; 3.17 fixed the bytes
//! (9caff37f). [`Magic`] names the bytes; [`reply_to_connect`] and [`ReplyWait`] are the rules
//! of each side.
//!
//! **Accounting** ([`Receiver`]) is iperf3's, to the letter: loss is counted from gaps in the
//! sequence (datagrams in flight at the end are neither lost nor counted), a datagram at or
//! below the highest sequence seen is out of order and takes one back from the loss count, and
//! jitter is RFC 1889's smoothed difference of transit times, in seconds. Two of those rules
//! came later ([`Rules`]): 3.0 and 3.1 do not take a loss back, and before 3.8 the first
//! datagram's transit counts against a previous transit of 0.

use std::time::Duration;

use thiserror::Error;

/// The sequence number's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeqWidth {
    /// iperf3's default.
    Bits32,
    /// `--udp-counters-64bit` (3.1+), sent in the parameters as `udp_counters_64bit`.
    Bits64,
}

impl SeqWidth {
    pub const fn from_64bit_flag(udp_counters_64bit: bool) -> SeqWidth {
        if udp_counters_64bit {
            SeqWidth::Bits64
        } else {
            SeqWidth::Bits32
        }
    }

    /// The header's length: 12 or 16 bytes. iperf3 refuses datagrams shorter than 16 bytes
    /// (`-l`) whatever the width.
    pub const fn header_len(self) -> usize {
        match self {
            SeqWidth::Bits32 => 12,
            SeqWidth::Bits64 => 16,
        }
    }
}

/// A time as iperf3 writes it: whole seconds and microseconds, each a `u32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    pub sec: u32,
    pub usec: u32,
}

impl Timestamp {
    /// A clock reading (time since the clock's epoch, e.g. `CLOCK_MONOTONIC`'s): the seconds
    /// truncated to 32 bits as iperf3 stores them, the microseconds truncated.
    pub fn from_duration(d: Duration) -> Timestamp {
        Timestamp {
            sec: d.as_secs() as u32,
            usec: d.subsec_micros(),
        }
    }

    fn micros(self) -> i64 {
        i64::from(self.sec) * 1_000_000 + i64::from(self.usec)
    }
}

/// The header of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DatagramHeader {
    /// The sender's clock when it sent the datagram.
    pub sent: Timestamp,
    /// From 1.
    pub seq: u64,
}

/// A datagram too short for its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("a UDP datagram of {len} bytes is shorter than the {need}-byte iperf3 header")]
pub struct TooShort {
    pub len: usize,
    pub need: usize,
}

impl DatagramHeader {
    /// Write the header at the start of `buf` (the datagram); returns its length. With 32-bit
    /// counters the sequence is truncated to its low 32 bits, as iperf3 does (it wraps after
    /// 4 294 967 295 datagrams; the receiver then counts the rest as out of order).
    pub fn write(&self, width: SeqWidth, buf: &mut [u8]) -> Result<usize, TooShort> {
        let need = width.header_len();
        let Some(out) = buf.get_mut(..need) else {
            return Err(TooShort {
                len: buf.len(),
                need,
            });
        };
        out[0..4].copy_from_slice(&self.sent.sec.to_be_bytes());
        out[4..8].copy_from_slice(&self.sent.usec.to_be_bytes());
        match width {
            SeqWidth::Bits32 => out[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes()),
            SeqWidth::Bits64 => out[8..16].copy_from_slice(&self.seq.to_be_bytes()),
        }
        Ok(need)
    }

    /// Read the header at the start of a datagram.
    pub fn read(datagram: &[u8], width: SeqWidth) -> Result<DatagramHeader, TooShort> {
        let need = width.header_len();
        let Some(h) = datagram.get(..need) else {
            return Err(TooShort {
                len: datagram.len(),
                need,
            });
        };
        let word = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let seq = match width {
            SeqWidth::Bits32 => u64::from(word(8)),
            SeqWidth::Bits64 => {
                u64::from_be_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]])
            }
        };
        Ok(DatagramHeader {
            sent: Timestamp {
                sec: word(0),
                usec: word(4),
            },
            seq,
        })
    }
}

/// A sender's sequence numbers: 1, 2, 3, …
#[derive(Debug, Clone, Default)]
pub struct Sequence {
    sent: u64,
}

impl Sequence {
    /// The header of the next datagram.
    pub fn next(&mut self, now: Timestamp) -> DatagramHeader {
        self.sent += 1;
        DatagramHeader {
            sent: now,
            seq: self.sent,
        }
    }

    /// The last datagram was not sent after all: its number is used again (iperf3 does this
    /// when a send fails).
    pub fn unsend(&mut self) {
        self.sent = self.sent.saturating_sub(1);
    }

    /// Datagrams sent: the `packets` a sender reports.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

/// Byte order of the legacy (before 3.12) magic numbers, as the sending host wrote them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    Little,
    Big,
}

/// The 4-byte datagrams of the UDP handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Magic {
    /// `39 38 37 36`: a client's connect since 3.12 (from 3.17 on every host; on big-endian
    /// hosts 3.12 to 3.16 sent it as a reply instead).
    Text9876,
    /// `36 37 38 39`: a server's reply since 3.12 (from 3.17 on every host; on big-endian hosts
    /// 3.12 to 3.16 sent it as a connect instead).
    Text6789,
    /// 123456789: a client's connect before 3.12 (`15 cd 5b 07` from a little-endian host).
    Legacy123456789(ByteOrder),
    /// 987654321: a server's reply before 3.12 (`b1 68 de 3a` from a little-endian host).
    Legacy987654321(ByteOrder),
}

impl Magic {
    /// Every form, for classification.
    pub const ALL: [Magic; 6] = [
        Magic::Text9876,
        Magic::Text6789,
        Magic::Legacy123456789(ByteOrder::Little),
        Magic::Legacy123456789(ByteOrder::Big),
        Magic::Legacy987654321(ByteOrder::Little),
        Magic::Legacy987654321(ByteOrder::Big),
    ];

    /// The datagram's bytes.
    pub const fn bytes(self) -> [u8; 4] {
        match self {
            Magic::Text9876 => *b"9876",
            Magic::Text6789 => *b"6789",
            Magic::Legacy123456789(ByteOrder::Little) => 123_456_789u32.to_le_bytes(),
            Magic::Legacy123456789(ByteOrder::Big) => 123_456_789u32.to_be_bytes(),
            Magic::Legacy987654321(ByteOrder::Little) => 987_654_321u32.to_le_bytes(),
            Magic::Legacy987654321(ByteOrder::Big) => 987_654_321u32.to_be_bytes(),
        }
    }

    /// Which form the first four bytes of a datagram are, if any.
    pub fn classify(datagram: &[u8]) -> Option<Magic> {
        let head = datagram.get(..4)?;
        Magic::ALL.into_iter().find(|m| m.bytes() == head)
    }
}

/// What linerate's client sends to open a UDP stream: what 3.17+ sends.
pub const CONNECT: [u8; 4] = *b"9876";

/// The server's rule: the reply to a datagram on the UDP port, or `None` when it is not a
/// connect (to be ignored).
///
/// iperf3's server takes **any** datagram as a connect and replies to its source. A server of
/// ours that runs several tests cannot afford that (a stray datagram would take a stream's
/// place), so it takes only the four connects clients send, each exactly 4 bytes, and answers
/// each in its sender's dialect, the reply that sender's version accepts: `"9876"` (3.12+) gets
/// `"6789"`; `"6789"` (3.12 to 3.16 on a big-endian host) gets `"9876"`; 123456789 gets
/// 987654321 in the same byte order (before 3.12, any reply is accepted).
pub fn reply_to_connect(datagram: &[u8]) -> Option<[u8; 4]> {
    if datagram.len() != 4 {
        return None;
    }
    let reply = match Magic::classify(datagram)? {
        Magic::Text9876 => Magic::Text6789,
        Magic::Text6789 => Magic::Text9876,
        Magic::Legacy123456789(order) => Magic::Legacy987654321(order),
        Magic::Legacy987654321(_) => return None,
    };
    Some(reply.bytes())
}

/// The client's rule, waiting for the server's reply on a new UDP stream (3.12+'s
/// `iperf_udp_connect`).
///
/// A reply is any datagram whose first four bytes are a server's reply in any of its forms:
/// `"6789"`, `"9876"` (a big-endian 3.12 to 3.16 server) or 987654321 in either byte order
/// (before 3.12). 3.17+ clients take only `"6789"` and the little-endian 987654321, and clients
/// before 3.12 take any datagram.
///
/// In a reverse test the server may send data before the reply arrives, so other datagrams are
/// skipped within a budget: iperf3 allows `4 + 2 × len` bytes, counting each datagram as the
/// 4 bytes it reads of it (it meant two datagrams, `MAX_REVERSE_OUT_OF_ORDER_PACKETS`, but
/// counts bytes read). Otherwise the first datagram must be the reply. An empty datagram counts
/// as one byte here, so the wait is bounded (iperf3 would count it as 0). The time bound (iperf3:
/// 30 s, `SO_RCVTIMEO`) is the caller's.
#[derive(Debug, Clone)]
pub struct ReplyWait {
    budget: u64,
}

/// What a datagram did to a [`ReplyWait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyOutcome {
    /// The reply: the stream is open.
    Accepted(Magic),
    /// Not the reply; keep waiting.
    Skipped,
    /// Not the reply, and the budget is spent: the stream failed (iperf3: IESTREAMREAD).
    Failed,
}

impl ReplyWait {
    /// A wait for a stream of datagrams of `len` bytes, in a reverse test or not.
    pub fn new(reverse: bool, len: u32) -> ReplyWait {
        let extra = if reverse { 2 * u64::from(len) } else { 0 };
        ReplyWait { budget: 4 + extra }
    }

    pub fn on_datagram(&mut self, datagram: &[u8]) -> ReplyOutcome {
        if let Some(m @ (Magic::Text6789 | Magic::Text9876 | Magic::Legacy987654321(_))) =
            Magic::classify(datagram)
        {
            return ReplyOutcome::Accepted(m);
        }
        let counted = datagram.len().clamp(1, 4) as u64;
        self.budget = self.budget.saturating_sub(counted);
        if self.budget == 0 {
            ReplyOutcome::Failed
        } else {
            ReplyOutcome::Skipped
        }
    }
}

/// The accounting rules that changed between releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rules {
    /// A datagram out of order takes one back from the loss count (3.2+).
    pub take_back_loss: bool,
    /// The first datagram (after the start, or the omitted seconds) only sets the previous
    /// transit time (3.8+). Before, the previous transit started at 0, so the first datagram
    /// added its whole transit, a clock offset between two hosts, to the jitter.
    pub seed_first_transit: bool,
}

impl Rules {
    /// Today's rules (3.8 to 3.21).
    pub const CURRENT: Rules = Rules {
        take_back_loss: true,
        seed_first_transit: true,
    };
}

impl Default for Rules {
    fn default() -> Rules {
        Rules::CURRENT
    }
}

/// A UDP receiver's counts on one stream, by iperf3's definitions (`iperf_udp_recv`), fed each
/// datagram's sequence number, the sender's time in it and this end's arrival time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Receiver {
    rules: Rules,
    /// The highest sequence number seen (`packet_count`): the `packets` a receiver reports.
    highest: u64,
    /// Gap-based loss (`cnt_error`); never below 0.
    errors: i64,
    out_of_order: u64,
    /// Seconds.
    jitter: f64,
    prev_transit: f64,
    /// No datagram yet since the start or the end of the omitted seconds.
    fresh: bool,
    omitted: Option<OmittedCounts>,
}

/// The counts when the omitted seconds ended (`omitted_*` in the results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OmittedCounts {
    pub packets: u64,
    pub errors: i64,
    pub out_of_order: u64,
}

impl Receiver {
    /// A receiver counting by today's rules.
    pub fn new() -> Receiver {
        Receiver::with_rules(Rules::CURRENT)
    }

    /// A receiver counting as a given release does (to check an old peer's figures).
    pub fn with_rules(rules: Rules) -> Receiver {
        Receiver {
            rules,
            fresh: true,
            ..Receiver::default()
        }
    }

    /// One datagram arrived.
    ///
    /// - `seq > highest + 1`: the gap is lost, `errors += seq − 1 − highest`, then
    ///   `highest = seq`; `seq == highest + 1`: `highest = seq`.
    /// - `seq ≤ highest` (late, duplicated, or a 32-bit counter that wrapped): one more out of
    ///   order, and one less lost if any were counted (it was one of a gap).
    /// - transit `= |arrival − sent|` in seconds (the two clocks are unrelated; only changes
    ///   matter); the first datagram after the start or the omitted seconds only sets the
    ///   previous transit; then `jitter += (|transit − previous| − jitter) / 16`.
    ///
    /// A hostile sequence cannot overflow anything: `errors` saturates at `i64::MAX`.
    pub fn record(&mut self, seq: u64, sent: Timestamp, arrival: Timestamp) {
        if seq > self.highest {
            let gap = seq - 1 - self.highest;
            self.errors = self
                .errors
                .saturating_add(i64::try_from(gap).unwrap_or(i64::MAX));
            self.highest = seq;
        } else {
            self.out_of_order += 1;
            if self.errors > 0 && self.rules.take_back_loss {
                self.errors -= 1;
            }
        }
        let transit = transit_secs(sent, arrival);
        if self.fresh && self.rules.seed_first_transit {
            self.prev_transit = transit;
        }
        self.fresh = false;
        let d = (transit - self.prev_transit).abs();
        self.prev_transit = transit;
        self.jitter += (d - self.jitter) / 16.0;
    }

    /// The omitted seconds are over (`iperf_reset_stats`): the counts so far are kept as the
    /// omitted ones, jitter starts again from 0 and the next datagram starts the transit times
    /// afresh. `packets` and `errors` keep counting from where they are, as iperf3 reports them.
    pub fn end_omit(&mut self) {
        self.omitted = Some(OmittedCounts {
            packets: self.highest,
            errors: self.errors,
            out_of_order: self.out_of_order,
        });
        self.jitter = 0.0;
        self.fresh = true;
    }

    /// The highest sequence number seen (`packets` in the results).
    pub fn packets(&self) -> u64 {
        self.highest
    }

    /// Datagrams lost, gap-based (`errors` in the results).
    pub fn errors(&self) -> i64 {
        self.errors
    }

    pub fn out_of_order(&self) -> u64 {
        self.out_of_order
    }

    /// Seconds.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The counts when the omitted seconds ended; `None` when none were omitted (iperf3 then
    /// reports zeros).
    pub fn omitted(&self) -> Option<OmittedCounts> {
        self.omitted
    }
}

/// `|arrival − sent|` in seconds, as `iperf_time_diff` and `iperf_time_in_secs` compute it:
/// whole seconds plus microseconds over a million.
fn transit_secs(sent: Timestamp, arrival: Timestamp) -> f64 {
    let d = (arrival.micros() - sent.micros()).unsigned_abs();
    (d / 1_000_000) as f64 + (d % 1_000_000) as f64 / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(sec: u32, usec: u32) -> Timestamp {
        Timestamp { sec, usec }
    }

    #[test]
    fn header_codec_both_widths() {
        // The first datagram of a 3.21 client with 64-bit counters, as captured
        // (tests/transcripts/3.21/udp64.txt).
        let wire = [
            0, 0, 0x02, 0x8e, 0, 0x0a, 0xf6, 0x3d, 0, 0, 0, 0, 0, 0, 0, 1,
        ];
        let h = DatagramHeader::read(&wire, SeqWidth::Bits64).unwrap();
        assert_eq!(
            h,
            DatagramHeader {
                sent: ts(654, 718_397),
                seq: 1
            }
        );
        let mut buf = [0xaa; 1400];
        assert_eq!(h.write(SeqWidth::Bits64, &mut buf), Ok(16));
        assert_eq!(&buf[..16], &wire);
        assert_eq!(buf[16], 0xaa, "the padding is the caller's");

        let h32 = DatagramHeader {
            sent: ts(1, 2),
            seq: 0x1_0000_0005,
        };
        let mut buf = [0u8; 12];
        assert_eq!(h32.write(SeqWidth::Bits32, &mut buf), Ok(12));
        assert_eq!(
            buf,
            [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 5],
            "truncated like iperf3"
        );
        assert_eq!(DatagramHeader::read(&buf, SeqWidth::Bits32).unwrap().seq, 5);

        assert_eq!(
            DatagramHeader::read(&buf, SeqWidth::Bits64),
            Err(TooShort { len: 12, need: 16 })
        );
        assert_eq!(
            h.write(SeqWidth::Bits32, &mut [0u8; 11]),
            Err(TooShort { len: 11, need: 12 })
        );
        assert_eq!(SeqWidth::from_64bit_flag(true), SeqWidth::Bits64);
    }

    #[test]
    fn timestamps_and_sequence() {
        let t = Timestamp::from_duration(Duration::new(654, 718_397_999));
        assert_eq!(t, ts(654, 718_397));
        let mut s = Sequence::default();
        assert_eq!(s.next(t).seq, 1);
        assert_eq!(s.next(t).seq, 2);
        s.unsend();
        assert_eq!(s.next(t).seq, 2);
        assert_eq!(s.sent(), 2);
    }

    #[test]
    fn magic_bytes() {
        assert_eq!(Magic::Text9876.bytes(), [0x39, 0x38, 0x37, 0x36]);
        assert_eq!(
            Magic::Legacy123456789(ByteOrder::Little).bytes(),
            [0x15, 0xcd, 0x5b, 0x07]
        );
        assert_eq!(
            Magic::Legacy123456789(ByteOrder::Big).bytes(),
            [0x07, 0x5b, 0xcd, 0x15]
        );
        assert_eq!(
            Magic::Legacy987654321(ByteOrder::Little).bytes(),
            [0xb1, 0x68, 0xde, 0x3a]
        );
        assert_eq!(
            Magic::Legacy987654321(ByteOrder::Big).bytes(),
            [0x3a, 0xde, 0x68, 0xb1]
        );
        for m in Magic::ALL {
            assert_eq!(Magic::classify(&m.bytes()), Some(m));
        }
        assert_eq!(Magic::classify(b"987"), None);
        assert_eq!(Magic::classify(b"9877"), None);
        assert_eq!(CONNECT, Magic::Text9876.bytes());
    }

    #[test]
    fn server_answers_each_dialect() {
        assert_eq!(reply_to_connect(b"9876"), Some(*b"6789"));
        assert_eq!(
            reply_to_connect(b"6789"),
            Some(*b"9876"),
            "3.12-3.16 big-endian"
        );
        assert_eq!(
            reply_to_connect(&[0x15, 0xcd, 0x5b, 0x07]),
            Some([0xb1, 0x68, 0xde, 0x3a]),
            "3.1.3 on x86"
        );
        assert_eq!(
            reply_to_connect(&[0x07, 0x5b, 0xcd, 0x15]),
            Some([0x3a, 0xde, 0x68, 0xb1])
        );
        // Anything else is not a connect: a reply, data, a stranger's probe.
        assert_eq!(reply_to_connect(&[0xb1, 0x68, 0xde, 0x3a]), None);
        assert_eq!(reply_to_connect(b"98765"), None);
        assert_eq!(reply_to_connect(b""), None);
        assert_eq!(reply_to_connect(&[0u8; 1400]), None);
    }

    #[test]
    fn client_takes_every_reply_form() {
        for m in [
            Magic::Text6789,
            Magic::Text9876,
            Magic::Legacy987654321(ByteOrder::Little),
            Magic::Legacy987654321(ByteOrder::Big),
        ] {
            assert_eq!(
                ReplyWait::new(false, 1400).on_datagram(&m.bytes()),
                ReplyOutcome::Accepted(m)
            );
        }
        // Forward: the first datagram must be the reply.
        let mut w = ReplyWait::new(false, 1400);
        assert_eq!(w.on_datagram(&[0; 1400]), ReplyOutcome::Failed);
        // Reverse: iperf3's budget of 4 + 2 × len bytes at 4 per datagram: 1 + len / 2
        // datagrams in all, so 700 skipped and the 701st must be the reply for len 1400.
        let mut w = ReplyWait::new(true, 1400);
        for i in 0..700 {
            assert_eq!(
                w.on_datagram(&[0; 1400]),
                ReplyOutcome::Skipped,
                "datagram {i}"
            );
        }
        assert_eq!(w.on_datagram(&[0; 1400]), ReplyOutcome::Failed);
        let mut w = ReplyWait::new(true, 16);
        for _ in 0..8 {
            assert_eq!(w.on_datagram(&[0; 16]), ReplyOutcome::Skipped);
        }
        assert_eq!(
            w.on_datagram(b"6789"),
            ReplyOutcome::Accepted(Magic::Text6789)
        );
        // Empty datagrams are bounded too.
        let mut w = ReplyWait::new(true, 16);
        let n = (0..100)
            .take_while(|_| w.on_datagram(b"") == ReplyOutcome::Skipped)
            .count();
        assert_eq!(n, 35);
        // The reply is recognised by its first four bytes, as iperf3 reads it.
        assert_eq!(
            ReplyWait::new(false, 16).on_datagram(b"6789 and more"),
            ReplyOutcome::Accepted(Magic::Text6789)
        );
    }

    #[test]
    fn in_order_no_loss_steady_jitter() {
        let mut r = Receiver::new();
        for seq in 1..=100u32 {
            // Sent every 1 ms, each 250 µs in transit.
            let sent = ts(10, seq * 1000);
            let arrival = ts(10, seq * 1000 + 250);
            r.record(u64::from(seq), sent, arrival);
        }
        assert_eq!((r.packets(), r.errors(), r.out_of_order()), (100, 0, 0));
        assert_eq!(r.jitter(), 0.0);
    }

    #[test]
    fn gap_loss_and_out_of_order_as_iperf3() {
        let mut r = Receiver::new();
        let t = ts(0, 0);
        for seq in [1, 2, 5] {
            r.record(seq, t, t);
        }
        assert_eq!(
            (r.packets(), r.errors(), r.out_of_order()),
            (5, 2, 0),
            "3 and 4 missing"
        );
        r.record(3, t, t);
        assert_eq!(
            (r.packets(), r.errors(), r.out_of_order()),
            (5, 1, 1),
            "3 was late"
        );
        r.record(3, t, t);
        assert_eq!(
            (r.errors(), r.out_of_order()),
            (0, 2),
            "a duplicate also takes one back"
        );
        r.record(2, t, t);
        assert_eq!((r.errors(), r.out_of_order()), (0, 3), "never below 0");
        r.record(6, t, t);
        assert_eq!((r.packets(), r.errors()), (6, 0));
        // Sequence 0 (never sent by iperf3) is out of order; a hostile jump saturates.
        r.record(0, t, t);
        assert_eq!(r.out_of_order(), 4);
        r.record(u64::MAX, t, t);
        assert_eq!(r.errors(), i64::MAX);
        assert_eq!(r.packets(), u64::MAX);
    }

    #[test]
    fn rfc1889_jitter_in_seconds() {
        let mut r = Receiver::new();
        // Transit 1 ms, then 3 ms: D = 2 ms, J = 2 ms / 16.
        r.record(1, ts(5, 0), ts(5, 1000));
        assert_eq!(r.jitter(), 0.0, "the first datagram only sets the transit");
        r.record(2, ts(5, 10_000), ts(5, 13_000));
        assert!((r.jitter() - 0.002 / 16.0).abs() < 1e-15, "{}", r.jitter());
        // Back to 1 ms: D = 2 ms again, J += (D − J) / 16.
        r.record(3, ts(5, 20_000), ts(5, 21_000));
        let j2 = 0.002 / 16.0;
        let expected = j2 + (0.002 - j2) / 16.0;
        assert!((r.jitter() - expected).abs() < 1e-15);
        // Clocks of two hosts: arrival "before" sending; iperf3 takes |arrival − sent|.
        let mut r = Receiver::new();
        r.record(1, ts(100, 0), ts(50, 0));
        r.record(2, ts(100, 500_000), ts(50, 400_000));
        // Transits 50 s and 50.1 s.
        assert!((r.jitter() - 0.1 / 16.0).abs() < 1e-12, "{}", r.jitter());
        assert_eq!(transit_secs(ts(1, 999_999), ts(3, 1)), 1.000_002);
    }

    #[test]
    fn omitted_seconds() {
        let mut r = Receiver::new();
        r.record(1, ts(0, 0), ts(0, 1000));
        r.record(3, ts(0, 1000), ts(0, 5000));
        assert!(r.jitter() > 0.0);
        r.end_omit();
        assert_eq!(
            r.omitted(),
            Some(OmittedCounts {
                packets: 3,
                errors: 1,
                out_of_order: 0
            })
        );
        assert_eq!(r.jitter(), 0.0);
        // The next datagram starts the transit afresh: a different transit adds no jitter.
        r.record(4, ts(1, 0), ts(1, 900_000));
        assert_eq!(r.jitter(), 0.0);
        r.record(6, ts(1, 1000), ts(1, 901_000));
        assert_eq!(
            (r.packets(), r.errors()),
            (6, 2),
            "counts go on from the omitted ones"
        );
        assert_eq!(Receiver::new().omitted(), None);
    }
}
