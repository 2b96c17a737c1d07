//! Pause frames with the throughput they held back. A pause frame (802.3x, or PFC's per
//! priority) asks the port that receives it to stop sending for a while: frames received at
//! an end (role `PauseReceived`) mean its peer asked it to stop (the peer congested, or a pause
//! storm from it), and slow this end's send direction; frames sent (`PauseSent`) mean this end
//! asked its peer to stop (its receive side could not keep up), and slow the direction from
//! the peer to this end. Pause frames are how a lossless fabric works: they are named only
//! when that direction carried less while they came, in the intervals in which the counters
//! rose, than in the intervals in which none did, by more than `dip_fraction` allows.

use linerate_facts::CounterRole::{self, PauseReceived, PauseSent};
use linerate_units::{fmt_round, gbps};

use super::{count, Out};
use crate::port::PortCtx;
use crate::tracker::CounterTrack;
use crate::verdict::{RuleId, Unit};

/// Bytes and seconds of one direction over some intervals.
#[derive(Debug, Default, Clone, Copy)]
struct Carried {
    bytes: u64,
    secs: f64,
    intervals: u32,
}

impl Carried {
    fn add(&mut self, bytes: u64, secs: f64) {
        self.bytes = self.bytes.saturating_add(bytes);
        self.secs += secs;
        self.intervals += 1;
    }

    fn gbps(self) -> f64 {
        gbps(self.bytes, self.secs)
    }
}

/// Each direction of pause frames on the port: a check of how far the direction they slow
/// fell in the intervals in which they rose, below the intervals in which none did (the
/// fall as a share of the latter, against 1 − `dip_fraction`). Not judged when every interval
/// or none had pause frames, or the direction carried nothing while none came.
pub(crate) fn pause_rules(ctx: &PortCtx, out: &mut Out) {
    for role in [PauseReceived, PauseSent] {
        let tracks: Vec<&CounterTrack> = ctx.role(role).filter(|c| c.delta > 0).collect();
        // The counter named: the one that rose most (mlx5 counts the same frames per priority
        // and per port), the table's first of equals.
        let Some(named) = tracks.iter().copied().rev().max_by_key(|c| c.delta) else {
            continue;
        };
        let (mut paused, mut quiet) = (Carried::default(), Carried::default());
        for (r, rose) in ctx.intervals_with(&tracks) {
            let bytes = match role {
                PauseReceived => r.bytes_sent,
                _ => r.bytes_received,
            };
            let secs = r.end_s - r.start_s;
            if secs <= 0.0 {
                continue;
            }
            if rose > 0 {
                paused.add(bytes, secs);
            } else {
                quiet.add(bytes, secs);
            }
        }
        if paused.intervals == 0 || quiet.intervals == 0 || quiet.bytes == 0 {
            continue;
        }
        let (during, level) = (paused.gbps(), quiet.gbps());
        let fall = 1.0 - during / level;
        let limit = 1.0 - ctx.jp.dip_fraction;
        out.check(
            RuleId::PauseFrames,
            Some(named),
            fall,
            limit,
            Unit::Fraction,
            || text(role, named, paused, quiet, fall),
        );
    }
}

/// The finding's words: the counter, the end and direction it slowed, the throughput.
fn text(role: CounterRole, c: &CounterTrack, paused: Carried, quiet: Carried, fall: f64) -> String {
    let n = paused.intervals + quiet.intervals;
    let (who, direction) = match role {
        PauseReceived => (
            "this end's peer sent pause frames, asking it to stop sending: the peer is \
             congested (its receive side full), or a pause storm from it",
            "this end's send direction",
        ),
        _ => (
            "this end sent pause frames, asking its peer to stop sending: its own receive side \
             could not keep up (the host taking packets off the ring too slowly, or the NIC's \
             receive buffer full)",
            "the direction from the peer to this end",
        ),
    };
    format!(
        "{} rose by {} in {} of {n} intervals: {who}; {direction} carried {} Gb/s in them, {}% \
         under the {} Gb/s of the intervals without any",
        c.key.name,
        count(c),
        paused.intervals,
        fmt_round(paused.gbps(), 3),
        fmt_round(fall * 100.0, 1),
        fmt_round(quiet.gbps(), 3),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_carried_rate_is_bits_over_the_intervals_time() {
        let mut c = Carried::default();
        c.add(1_250_000_000, 1.0);
        c.add(0, 1.0);
        assert_eq!(c.intervals, 2);
        assert!((c.gbps() - 5.0).abs() < 1e-9);
    }
}
