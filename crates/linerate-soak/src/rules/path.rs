//! The path beyond the port: retransmits while the port's error counters moved (the link's
//! losses), congestion and errors from elsewhere in the fabric (only when no error counter
//! moved), and TCP's retransmitted share of what this host sent.

use linerate_facts::CounterRole::{
    RemotePhysical, SentData, TcpRetrans, TcpSpurious, XmitDiscards, XmitWait,
};
use linerate_facts::CounterUnit;
use linerate_units::fmt_sig;

use super::{count, finding, Out};
use crate::port::PortCtx;
use crate::tracker::CounterTrack;
use crate::verdict::{RuleId, Unit};

/// Retransmits with errors, and congestion (only when no error counter moved). `errors`: the
/// port's [`error_counters`].
pub(crate) fn path_rules(ctx: &PortCtx, errors: &[&CounterTrack], out: &mut Out) {
    let moved: Vec<&CounterTrack> = errors.iter().copied().filter(|c| c.delta > 0).collect();
    if let (Some(c), Some(r)) = (moved.first(), ctx.host(TcpRetrans).next()) {
        let retrans = r.delta;
        out.check(
            RuleId::RetransWithErrors,
            Some(c),
            retrans as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                    "{retrans} TCP retransmits while {} moved on this port: the losses are this \
                     link's",
                    c.key.name
                )
            },
        );
    }
    if !moved.is_empty() {
        return;
    }
    let wait_ticks = ctx.jp.xmit_wait_ticks;
    for (role, limit) in [(XmitDiscards, 0.0), (XmitWait, wait_ticks as f64)] {
        for c in ctx.role(role) {
            let name = &c.key.name;
            out.check(
                RuleId::XmitCongestion,
                Some(c),
                c.delta as f64,
                limit,
                Unit::Count,
                || {
                    format!(
                        "only {name} rose ({}): a symptom of congestion, not of this cable",
                        count(c)
                    )
                },
            );
        }
    }
    for c in ctx.role(RemotePhysical) {
        out.check(
            RuleId::RemotePhysicalErrors,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                    "only {} rose ({}): the packets arrived already marked bad, the fault is \
                     elsewhere in the fabric",
                    c.key.name,
                    count(c)
                )
            },
        );
    }
}

/// The port carried what this end sent: its own count of what it sent (role `SentData`:
/// bytes, the netdev's `tx_bytes`, else 4-byte words, InfiniBand's `port_xmit_data`) rose by at
/// least half the bytes the engines sent (any rise when they sent none, a passive soak); a port
/// without such a counter is not excluded.
fn carried_sends(ctx: &PortCtx) -> bool {
    let bytes_of = |c: &CounterTrack| c.def().unit.bytes().map(|b| (b, c.delta.saturating_mul(b)));
    // The finest unit first: bytes before words.
    let own = ctx
        .role(SentData)
        .filter_map(bytes_of)
        .min_by_key(|(unit, _)| *unit)
        .map(|(_, b)| b);
    match own {
        None => true,
        Some(b) if ctx.totals.bytes_sent == 0 => b > 0,
        Some(b) => b.saturating_mul(2) >= ctx.totals.bytes_sent,
    }
}

/// TCP's own count of the retransmits it found spurious over the soak (role `TcpSpurious`):
/// the segments the receivers D-SACKed (`TCPDSACKRecvSegs`), else, on a kernel without it
/// (before 5.10), the D-SACKs received (one per event).
fn spurious<'a>(ctx: &PortCtx<'a>) -> Option<&'a CounterTrack> {
    ctx.host(TcpSpurious)
        .min_by_key(|c| u8::from(c.def().unit != CounterUnit::Segments))
}

/// TCP's retransmits without an error counter moving: the share of the segments this host sent
/// that were sent again and lost (`RetransSegs` less the retransmits TCP found spurious,
/// [`spurious`], ÷ `OutSegs`, host-wide) above `tcp_retrans_fraction` says this end's send
/// direction lost packets on the path beyond the port. A share over the line only with the
/// spurious ones is said as what it is (`tcp_spurious_retransmits`, a note): the sender's timer
/// fired early, nothing was lost. Judged on the ports that carried what this end sent; with an
/// error counter moving, `retrans_with_errors` names the same retransmits (the port's loss).
/// Not judged without the segments sent (a peer of an earlier release). `errors`: the port's
/// [`error_counters`].
pub(crate) fn tcp_retransmits(ctx: &PortCtx, errors: &[&CounterTrack], out: &mut Out) {
    let t = ctx.totals;
    let (Some(_), Some(sent)) = (t.tcp_retrans_last, t.tcp_out_segs) else {
        return;
    };
    if sent == 0 || !carried_sends(ctx) {
        return;
    }
    if errors.iter().any(|c| c.delta > 0) {
        return;
    }
    let retrans = t.tcp_retrans;
    let dsack = spurious(ctx);
    let found = dsack.map_or(0, |c| c.delta.min(retrans));
    let lost = retrans - found;
    let share = lost as f64 / sent as f64;
    let limit = ctx.jp.tcp_retrans_fraction;
    let apart = match dsack {
        Some(c) if found > 0 => format!(
            " ({found} more TCP found spurious: {} rose by {}, the receivers had those \
             segments already)",
            c.key.name,
            count(c)
        ),
        _ => String::new(),
    };
    let fired = out
        .check(
            RuleId::TcpRetransmits,
            None,
            share,
            limit,
            Unit::Fraction,
            || {
                format!(
                    "{lost} TCP retransmits of {sent} segments this host sent ({}%, above \
                     {}%){apart}: packets this end sent were lost on the way, this end's send \
                     direction (host-wide counters: every TCP connection of the host); no \
                     error counter of this port moved, so they were lost on the path beyond \
                     this cable (congestion, a lossy hop, a drop policy), not on it",
                    fmt_sig(share * 100.0),
                    fmt_sig(limit * 100.0)
                )
            },
        )
        .is_some();
    let all = retrans as f64 / sent as f64;
    if let (false, Some(c)) = (fired, dsack.filter(|_| all > limit && found > 0)) {
        out.push(finding(
            RuleId::TcpSpuriousRetransmits,
            Some(c),
            Some(found as f64),
            None,
            Unit::Count,
            format!(
                "{retrans} TCP retransmits of {sent} segments this host sent ({}%, above {}%), \
                 but {found} of them TCP itself found spurious ({} rose by {}: the receivers \
                 had those segments already), leaving {}%: the sender's timer fired early (a \
                 stalled host or guest, a long queue), not loss",
                fmt_sig(all * 100.0),
                fmt_sig(limit * 100.0),
                c.key.name,
                count(c),
                fmt_sig(share * 100.0)
            ),
        ));
    }
}
