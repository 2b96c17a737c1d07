//! Receive errors (each count one packet dropped on receive because it arrived damaged:
//! InfiniBand's `port_rcv_errors`, Ethernet's FCS/CRC, alignment and physical coding errors)
//! and the packets the host did not take off the ring in time (`rx_missed_errors`: the host's
//! loss, not the cable's).

use std::fmt::Write as _;

use linerate_facts::CounterRole::{RcvErrors, ReceivedPackets, RxMissed};
use linerate_facts::CounterSource;
use linerate_units::{fmt_num, fmt_sig};

use super::{count, finding, observed_count, over, per_hour, rate_at_least, Out};
use crate::port::PortCtx;
use crate::tracker::CounterTrack;
use crate::verdict::{RuleId, Source, Unit};

/// The packets a receive-error counter says were lost: the count, the rate an hour, and the
/// share of the packets received where the port counts them.
fn packets_lost(ctx: &PortCtx, c: &CounterTrack) -> String {
    let mut s = format!("{} packets dropped on receive", count(c));
    if let Some(h) = per_hour(c).filter(|h| *h > 0.0) {
        let _ = write!(s, ", {} an hour at this rate", rate_at_least(c, fmt_sig(h)));
    }
    // The packets the same counters count: InfiniBand's for InfiniBand's errors, the
    // netdev's for the rest.
    let ib = c.key.source == CounterSource::IbCounters;
    let packets = ctx
        .role(ReceivedPackets)
        .find(|p| (p.key.source == CounterSource::IbCounters) == ib);
    if let Some(p) = packets.filter(|p| p.delta > 0 && c.delta > 0) {
        let one_in = (p.delta as f64 / c.delta as f64).max(1.0).round();
        let _ = write!(s, " (1 in {one_in} of the {} received)", p.delta);
    }
    s
}

/// Receive errors, never silent: any rise is at least a note with the packets lost; over the
/// receive-error budget (`rcv_errors_per_bit` × the bits received, at least its floor) over the
/// time observed it is `marginal`; above `port_rcv_errors_per_s` it is `bad`. One finding per
/// counter, the highest rung that fired; every rung is a check.
pub(crate) fn receive_rules(ctx: &PortCtx, out: &mut Out) {
    for c in ctx.role(RcvErrors) {
        receive_ladder(ctx, c, out);
    }
}

/// The three rungs of one receive-error counter.
fn receive_ladder(ctx: &PortCtx, c: &CounterTrack, out: &mut Out) {
    let jp = ctx.jp;
    let name = c.key.name.as_str();
    let bits_per_s = if ctx.duration_s() > 0.0 {
        ctx.bits / ctx.duration_s()
    } else {
        0.0
    };
    let budget_source = if c.key.source == CounterSource::IbCounters {
        Source::Ibta
    } else {
        Source::Ieee8023
    };
    // The budget per hour over the time observed: the bits' share, or the floor spread over
    // that time where it allows more.
    let limit_h = (c.observed_s > 0.0).then(|| {
        let floor_h = jp.floor(jp.rcv_errors_per_bit) * 3600.0 / c.observed_s;
        (bits_per_s * jp.rcv_errors_per_bit * 3600.0).max(floor_h)
    });
    let mut top = None;
    if out.record(RuleId::RcvErrors, Some(c), c.delta as f64, 0.0, Unit::Count) {
        let within = limit_h.map_or(String::new(), |l| {
            format!(", within the receive-error budget of {}/h", fmt_sig(l))
        });
        let text = format!(
            "{name} rose by {}: {}{within}",
            count(c),
            packets_lost(ctx, c)
        );
        top = Some(finding(
            RuleId::RcvErrors,
            Some(c),
            Some(c.delta as f64),
            Some(0.0),
            Unit::Count,
            text,
        ));
    }
    if let (Some(limit_h), Some(rate_h)) = (limit_h, per_hour(c)) {
        if out.record(
            RuleId::RcvErrorsBudget,
            Some(c),
            rate_h,
            limit_h,
            Unit::PerHour,
        ) {
            let text = format!(
                "{name} {}/h ({}{}), above the receive-error budget of {}/h (one per {:e} bits \
                 received at {} Gb/s, and never fewer than {}): {}",
                rate_at_least(c, fmt_sig(rate_h)),
                observed_count(c),
                over(c, ctx),
                fmt_sig(limit_h),
                1.0 / jp.rcv_errors_per_bit,
                fmt_sig(bits_per_s / 1e9),
                fmt_num(jp.floor(jp.rcv_errors_per_bit)),
                packets_lost(ctx, c)
            );
            top = Some(finding(
                RuleId::RcvErrorsBudget,
                Some(c),
                Some(rate_h),
                Some(limit_h),
                Unit::PerHour,
                text,
            ));
        }
    }
    if let Some(rate_s) = c.observed_per_s() {
        let limit_s = jp.port_rcv_errors_per_s;
        if out.record(
            RuleId::PortRcvErrorsRate,
            Some(c),
            rate_s,
            limit_s,
            Unit::PerS,
        ) {
            let text = format!(
                "{name} {}/s ({}{}), above {}/s: {}; a bad link, check the cable",
                rate_at_least(c, fmt_sig(rate_s)),
                observed_count(c),
                over(c, ctx),
                fmt_num(limit_s),
                packets_lost(ctx, c)
            );
            top = Some(finding(
                RuleId::PortRcvErrorsRate,
                Some(c),
                Some(rate_s),
                Some(limit_s),
                Unit::PerS,
                text,
            ));
        }
    }
    if let Some(mut f) = top {
        if f.rule != RuleId::PortRcvErrorsRate {
            f.source = budget_source;
        }
        out.push(f);
    }
}

/// `rx_missed_errors`: receive-side loss, but the host's.
pub(crate) fn rx_missed(ctx: &PortCtx, out: &mut Out) {
    for c in ctx.role(RxMissed) {
        let name = &c.key.name;
        out.check(
            RuleId::RxMissed,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                "{name} rose by {}: packets this host did not take off the receive ring in time \
                 (the host: CPU, interrupts, ring size, which `linerate probe` shows and \
                 `linerate setup rings` raises; not the cable)",
                count(c)
            )
            },
        );
    }
}
