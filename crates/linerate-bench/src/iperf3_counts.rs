//! One UDP stream's counts by iperf3's definitions, from a side's run: what either end of an
//! iperf3 conversation puts in its results (serve answering a stock client, bench against a
//! stock server), so both ends count alike.

use linerate_iperf3::results::{Omitted, StreamResults};

use crate::side::SideRun;

/// One UDP stream's counts by iperf3's definitions, as its results carry them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct UdpCounts {
    /// Datagrams sent (sender), or the highest sequence number seen (receiver).
    pub packets: u64,
    /// Gap-based loss (receiver).
    pub errors: i64,
    /// Seconds (receiver).
    pub jitter: f64,
    /// `packets` and `errors` when the omitted seconds ended; `None` without them.
    pub omitted: Option<(u64, i64)>,
}

impl UdpCounts {
    /// Stream `i`'s counts: a sender's from its datagrams sent (every one of the test's
    /// `length`, so those of the omitted seconds are its bytes then over the length), a
    /// receiver's from the engine's iperf3 receiver ([`linerate_engine::udp::RecvState`]).
    /// `None` when the run has no such stream or, for a receiver, no iperf3 counts of it.
    pub fn of(run: &SideRun, i: usize, sends: bool, length: u32) -> Option<Self> {
        if sends {
            let sent = run.results.streams.get(i)?;
            let length = u64::from(length.max(1));
            let omitted = run.omit_marks.as_ref().map(|m| {
                let bytes = m.get(i).map_or(0, |m| m.bytes);
                (bytes / length, 0)
            });
            return Some(UdpCounts {
                packets: sent.udp.map_or(0, |u| u.packets),
                errors: 0,
                jitter: 0.0,
                omitted,
            });
        }
        let r = run.udp_received.as_ref()?.get(i)?.iperf3.as_ref()?;
        Some(UdpCounts {
            packets: r.packets(),
            errors: r.errors(),
            jitter: r.jitter(),
            omitted: r.omitted().map(|o| (o.packets, o.errors)),
        })
    }

    /// Into a stream's results: packets, errors, jitter and the omitted pair (zeros without a
    /// warm-up, as iperf3 3.14 and later send it; older releases ignore the keys).
    pub fn fill(&self, e: &mut StreamResults) {
        e.packets = self.packets.min(i64::MAX as u64).cast_signed();
        e.errors = self.errors;
        e.jitter = self.jitter;
        let (packets, errors) = self.omitted.unwrap_or((0, 0));
        e.omitted = Some(Omitted {
            errors,
            packets: packets.min(i64::MAX as u64).cast_signed(),
        });
    }
}
