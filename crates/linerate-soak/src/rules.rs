//! The rules of the judge, one function per family, over one port's counters.
//!
//! A threshold rule is a [`Check`]: the figure it compared, the limit that applied (floors
//! included) and whether it fired (`value > limit`, on the very numbers the document and the
//! text file carry, so a PromQL comparison of the two agrees with the verdict). A fired check
//! is also a [`SoakFinding`] with its text; notes (saturation, resets, PAM4) are findings only.
//! Rates are over the time each counter was observed ([`CounterTrack::observed_s`]); counts
//! are the whole soak's. The thresholds and their sources are in [`crate::thresholds`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use linerate_units::{fmt_num, fmt_sig};

use crate::port::{fmt_duration, PortCtx};
use crate::report::{BerEstimate, Check, SoakFinding, SymbolBudget};
use crate::tracker::{is_health_counter, CounterTrack, Mark};
use crate::verdict::{RuleId, Source, Unit, Verdict};
use linerate_proto::soak::CounterSource;

use CounterSource::{Carrier, Ethtool, IbCounters, NetdevStatistics};

/// The IB error counters that say the link itself is at fault (IBswcountlimits' reading).
pub(crate) const IB_ERRORS: [&str; 6] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
];
/// Receive errors: each count is one packet dropped on receive because it arrived damaged
/// (InfiniBand's `port_rcv_errors`: ICRC, VCRC, malformed; Ethernet's FCS/CRC, alignment and
/// physical coding errors).
pub(crate) const RCV_ERRORS: [(CounterSource, &str); 5] = [
    (IbCounters, "port_rcv_errors"),
    (NetdevStatistics, "rx_crc_errors"),
    (NetdevStatistics, "rx_frame_errors"),
    (Ethtool, "rx_crc_errors_phy"),
    (Ethtool, "rx_symbol_err_phy"),
];
/// Packets the host did not take off the receive ring in time: receive-side loss that is the
/// host's, not the cable's.
pub(crate) const RX_MISSED: (CounterSource, &str) = (NetdevStatistics, "rx_missed_errors");
const IB_CONGESTION: [&str; 3] = [
    "port_xmit_discards",
    "port_xmit_wait",
    "port_rcv_remote_physical_errors",
];

/// A port's checks and findings as the rules produce them.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub checks: Vec<Check>,
    pub findings: Vec<SoakFinding>,
}

impl Out {
    /// Records a check; true when it fired.
    fn record(
        &mut self,
        rule: RuleId,
        c: Option<&CounterTrack>,
        value: f64,
        limit: f64,
        unit: Unit,
    ) -> bool {
        let fired = value > limit;
        self.checks.push(Check {
            rule,
            verdict: rule.verdict(),
            counter: c.map(|c| c.key.name.clone()),
            value,
            limit,
            unit,
            fired,
        });
        fired
    }

    /// Records a check and, when it fired, its finding (returned, for a source of its own).
    fn check(
        &mut self,
        rule: RuleId,
        c: Option<&CounterTrack>,
        value: f64,
        limit: f64,
        unit: Unit,
        text: impl FnOnce() -> String,
    ) -> Option<&mut SoakFinding> {
        if !self.record(rule, c, value, limit, unit) {
            return None;
        }
        self.findings
            .push(finding(rule, c, Some(value), Some(limit), unit, text()));
        self.findings.last_mut()
    }

    fn push(&mut self, f: SoakFinding) {
        self.findings.push(f);
    }
}

/// A finding about counter `c`: a rate is "at least" when the counter saturated while observed,
/// a count when its total is a lower bound.
pub(crate) fn finding(
    rule: RuleId,
    c: Option<&CounterTrack>,
    value: Option<f64>,
    threshold: Option<f64>,
    unit: Unit,
    text: String,
) -> SoakFinding {
    SoakFinding {
        rule,
        verdict: rule.verdict(),
        source: rule.source(),
        counter: c.map(|c| c.key.name.clone()),
        value,
        threshold,
        unit,
        at_least: c.is_some_and(|c| {
            if matches!(unit, Unit::PerS | Unit::PerMin | Unit::PerHour) {
                c.observed_at_least()
            } else {
                c.at_least
            }
        }),
        text,
    }
}

/// "12" or "at least 12".
fn count(c: &CounterTrack) -> String {
    at_least(c, c.delta.to_string())
}

/// The increase within the time observed, "at least" when it is a lower bound.
fn observed_count(c: &CounterTrack) -> String {
    rate_at_least(c, c.observed_delta.to_string())
}

/// A figure of the whole soak: "at least" when the total is a lower bound.
fn at_least(c: &CounterTrack, figure: String) -> String {
    prefix(c.at_least, figure)
}

/// A figure over the time observed (a rate): "at least" when the counter pegged while observed.
fn rate_at_least(c: &CounterTrack, figure: String) -> String {
    prefix(c.observed_at_least(), figure)
}

fn prefix(at_least: bool, figure: String) -> String {
    if at_least {
        format!("at least {figure}")
    } else {
        figure
    }
}

/// `observed_delta` per hour of `observed_s` (multiplied first: 24 in 600 s is exactly 144/h).
pub(crate) fn per_hour(c: &CounterTrack) -> Option<f64> {
    (c.observed_s > 0.0).then(|| c.observed_delta as f64 * 3600.0 / c.observed_s)
}

/// " in 14 s observed (of 60 s)" or " in 60 s".
fn over(c: &CounterTrack, ctx: &PortCtx) -> String {
    let d = ctx.duration_s();
    if c.observed_s < d * (1.0 - 1e-9) {
        format!(
            " in {} observed (of {})",
            fmt_duration(c.observed_s),
            fmt_duration(d)
        )
    } else {
        format!(" in {}", fmt_duration(c.observed_s))
    }
}

/// Any increase of these is `bad` (NVSentinel: fatal on any delta; UFM flags Link_Down on any
/// delta).
pub(crate) fn any_increase(ctx: &PortCtx, out: &mut Out) {
    for (rule, name, what) in [
        (RuleId::LinkDowned, "link_downed", "the link went down"),
        (
            RuleId::LocalLinkIntegrity,
            "local_link_integrity_errors",
            "local physical errors exceeded the port's threshold",
        ),
        (
            RuleId::ExcessiveBufferOverrun,
            "excessive_buffer_overrun_errors",
            "the receive buffer overran (misconfiguration, or very poor signal integrity)",
        ),
    ] {
        if let Some(c) = ctx.get(IbCounters, name) {
            out.check(rule, Some(c), c.delta as f64, 0.0, Unit::Count, || {
                format!("{name} rose by {}: {what}", count(c))
            });
        }
    }
}

/// `symbol_error` against the BER budget at the port's signalling rate (with its floor), over
/// the time it was observed; with `link_error_recovery`, marginal on any speed.
pub(crate) fn symbol_rules(ctx: &PortCtx, budget: &SymbolBudget, out: &mut Out) {
    let Some(c) = ctx.get(IbCounters, "symbol_error") else {
        return;
    };
    let jp = ctx.jp;
    if budget.pam4 {
        if c.delta > 0 {
            let rate = per_hour(c).map_or(String::new(), |h| format!(", {}/h", fmt_sig(h)));
            out.push(finding(
                RuleId::Pam4SymbolErrors,
                Some(c),
                Some(c.delta as f64),
                None,
                Unit::Count,
                format!(
                    "symbol_error rose by {}{rate}: normal before FEC on PAM4, not judged alone",
                    count(c)
                ),
            ));
        }
    } else if let (Some(limit), Some(rate)) = (budget.limit_per_hour, per_hour(c)) {
        let basis = budget.signalling_gbps.map_or_else(
            || "NVSentinel's fixed budget (signalling rate unknown)".to_string(),
            |g| format!("the budget for BER {:e} at {} Gb/s", jp.ber, fmt_num(g)),
        );
        let text = || {
            let limit_words = if limit > budget.per_hour {
                format!(
                    "the floor of {} errors over that time ({}/h; {basis} is {}/h)",
                    fmt_num(budget.floor),
                    fmt_sig(limit),
                    fmt_sig(budget.per_hour)
                )
            } else {
                format!("{basis}: {}/h", fmt_sig(budget.per_hour))
            };
            format!(
                "symbol_error {}/h ({}{}), above {limit_words}",
                rate_at_least(c, fmt_sig(rate)),
                observed_count(c),
                over(c, ctx)
            )
        };
        if let Some(f) = out.check(
            RuleId::SymbolErrorBudget,
            Some(c),
            rate,
            limit,
            Unit::PerHour,
            text,
        ) {
            if budget.signalling_gbps.is_none() {
                f.source = Source::Nvsentinel;
            }
        }
    }
    let recoveries = ctx.delta(IbCounters, "link_error_recovery");
    if recoveries > 0 {
        out.check(
            RuleId::SymbolWithRecovery,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                    "symbol_error rose by {} together with link_error_recovery ({recoveries}): \
                     IBswcountlimits: act when symbol errors increase along with link error \
                     recoveries",
                    count(c)
                )
            },
        );
    }
}

/// The packets a receive-error counter says were lost: the count, the rate an hour, and the
/// share of the packets received where the port counts them.
fn packets_lost(ctx: &PortCtx, c: &CounterTrack) -> String {
    let mut s = format!("{} packets dropped on receive", count(c));
    if let Some(h) = per_hour(c).filter(|h| *h > 0.0) {
        let _ = write!(s, ", {} an hour at this rate", rate_at_least(c, fmt_sig(h)));
    }
    let packets = if c.key.source == IbCounters {
        ctx.get(IbCounters, "port_rcv_packets")
    } else {
        ctx.get(NetdevStatistics, "rx_packets")
    };
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
    for (source, name) in RCV_ERRORS {
        if let Some(c) = ctx.get(source, name) {
            receive_ladder(ctx, c, out);
        }
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
    let budget_source = if c.key.source == IbCounters {
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
    let (source, name) = RX_MISSED;
    if let Some(c) = ctx.get(source, name) {
        out.check(
            RuleId::RxMissed,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                "{name} rose by {}: packets this host did not take off the receive ring in time \
                 (the host: CPU, interrupts, ring size; not the cable)",
                count(c)
            )
            },
        );
    }
}

/// `link_error_recovery` per minute over the time observed.
pub(crate) fn recovery_rate(ctx: &PortCtx, out: &mut Out) {
    let Some(c) = ctx.get(IbCounters, "link_error_recovery") else {
        return;
    };
    if c.observed_s <= 0.0 {
        return;
    }
    // Multiplied first: 50 in 600 s is exactly 5/min.
    let rate = c.observed_delta as f64 * 60.0 / c.observed_s;
    let limit = ctx.jp.link_error_recovery_per_min;
    out.check(
        RuleId::LinkErrorRecoveryRate,
        Some(c),
        rate,
        limit,
        Unit::PerMin,
        || {
            format!(
                "link_error_recovery {}/min ({}{}), above {}/min",
                rate_at_least(c, fmt_sig(rate)),
                observed_count(c),
                over(c, ctx),
                fmt_num(limit)
            )
        },
    );
}

/// Ethernet after FEC, link downs on any port, and the pre-FEC BER estimate.
pub(crate) fn ethernet_rules(ctx: &PortCtx, ber: Option<&BerEstimate>, out: &mut Out) {
    for c in post_fec(ctx) {
        out.check(
            RuleId::PostFecErrors,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                    "{} rose by {}: errors FEC did not correct, traffic is lost (replace the \
                     cable or transceiver)",
                    c.key.name,
                    count(c)
                )
            },
        );
    }
    for c in link_downs(ctx) {
        out.check(
            RuleId::LinkDown,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || format!("{} rose by {}: the link went down", c.key.name, count(c)),
        );
    }
    let limit = ctx.jp.pre_fec_ber;
    if let Some((pre, estimate)) = ber.and_then(|b| b.pre_fec.map(|p| (p, b.estimate))) {
        out.check(RuleId::PreFecBer, None, pre, limit, Unit::Ber, || {
            let label = if estimate {
                " (an estimate: corrected bits over rate × time, the driver exposes no rx_bits_phy)"
            } else {
                ""
            };
            format!("pre-FEC BER {pre:.2e}, above {limit:.0e}{label}")
        });
    }
}

/// Counters of errors FEC did not correct.
fn post_fec<'a>(ctx: &PortCtx<'a>) -> Vec<&'a CounterTrack> {
    let mut post = ctx.ethtool_matching(&["fec", "uncorrect"]);
    post.extend(ctx.get(Ethtool, "rx_pcs_symbol_err_phy"));
    post
}

/// Counters of link downs.
fn link_downs<'a>(ctx: &PortCtx<'a>) -> Vec<&'a CounterTrack> {
    [
        ctx.get(Carrier, ctx.carrier_down_name()),
        ctx.get(Ethtool, "link_down_events_phy"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The error counters whose rise accuses the link (not the congestion ones, not
/// `rx_missed_errors`, not `symbol_error` on PAM4), present on the port.
pub(crate) fn error_counters<'a>(ctx: &PortCtx<'a>) -> Vec<&'a CounterTrack> {
    let pam4 = ctx.pam4();
    let mut named: Vec<(CounterSource, &str)> = IB_ERRORS
        .iter()
        .filter(|n| !(pam4 && **n == "symbol_error"))
        .map(|n| (IbCounters, *n))
        .collect();
    named.extend(RCV_ERRORS.iter().filter(|(s, _)| *s != IbCounters));
    let mut out: Vec<&CounterTrack> = named
        .into_iter()
        .filter_map(|(s, n)| ctx.get(s, n))
        .collect();
    out.extend(post_fec(ctx));
    out.extend(link_downs(ctx));
    out
}

/// Retransmits with errors, and congestion (only when no error counter moved). `errors`: the
/// port's [`error_counters`].
pub(crate) fn path_rules(ctx: &PortCtx, errors: &[&CounterTrack], out: &mut Out) {
    let moved: Vec<&CounterTrack> = errors.iter().copied().filter(|c| c.delta > 0).collect();
    if let (Some(c), Some(_)) = (moved.first(), ctx.totals.tcp_retrans_last) {
        let retrans = ctx.totals.tcp_retrans;
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
    for (name, limit) in [
        ("port_xmit_discards", 0.0),
        ("port_xmit_wait", wait_ticks as f64),
    ] {
        if let Some(c) = ctx.get(IbCounters, name) {
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
    if let Some(c) = ctx.get(IbCounters, "port_rcv_remote_physical_errors") {
        out.check(
            RuleId::RemotePhysicalErrors,
            Some(c),
            c.delta as f64,
            0.0,
            Unit::Count,
            || {
                format!(
                    "only port_rcv_remote_physical_errors rose ({}): the packets arrived already \
                     marked bad, the fault is elsewhere in the fabric",
                    count(c)
                )
            },
        );
    }
}

/// The port carried what this end sent: its own sent-bytes counter (`tx_bytes`, or
/// `port_xmit_data` in 4-byte units) rose by at least half the bytes the engines sent (any rise
/// when they sent none, a passive soak); a port without such a counter is not excluded.
fn carried_sends(ctx: &PortCtx) -> bool {
    let own = ctx
        .get(NetdevStatistics, "tx_bytes")
        .map(|c| c.delta)
        .or_else(|| {
            ctx.get(IbCounters, "port_xmit_data")
                .map(|c| c.delta.saturating_mul(4))
        });
    match own {
        None => true,
        Some(b) if ctx.totals.bytes_sent == 0 => b > 0,
        Some(b) => b.saturating_mul(2) >= ctx.totals.bytes_sent,
    }
}

/// TCP's retransmits without an error counter moving: the share of the segments this host sent
/// that were sent again (`RetransSegs` ÷ `OutSegs`, host-wide) above `tcp_retrans_fraction`
/// says this end's send direction lost packets on the path beyond the port. Judged on the ports
/// that carried what this end sent; with an error counter moving, `retrans_with_errors` names
/// the same retransmits (the port's loss). Not judged without the segments sent (a peer of an
/// earlier release). `errors`: the port's [`error_counters`].
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
    let share = retrans as f64 / sent as f64;
    let limit = ctx.jp.tcp_retrans_fraction;
    out.check(
        RuleId::TcpRetransmits,
        None,
        share,
        limit,
        Unit::Fraction,
        || {
            format!(
                "{retrans} TCP retransmits of {sent} segments this host sent ({}%, above {}%): \
                 packets this end sent were lost on the way, this end's send direction (host-wide \
                 counters: every TCP connection of the host); no error counter of this port \
                 moved, so they were lost on the path beyond this cable (congestion, a lossy hop, \
                 a drop policy), not on it",
                fmt_sig(share * 100.0),
                fmt_sig(limit * 100.0)
            )
        },
    );
}

/// The RDMA transport's counters of what this end sent and lost (the requester's view): a
/// timeout waiting for an acknowledgement, a NAK for a sequence gap, retries run out (rxe's and
/// mlx5's `hw_counters` names). Linux 6.1's rxe over a link dropping 1 % of one direction
/// counts `rcvd_seq_err` (each NAK for a gap) and `completer_retry_err` (each go-back-N retry,
/// NAK or timeout) on the sender, `out_of_seq_request` on the receiver, and nothing when the
/// other direction drops its acknowledgements (cumulative: the next one covers them);
/// `retry_exceeded_err` is the retries running out (rxe_comp.c), the queue pair then in error.
pub(crate) const RDMA_SENT_LOST: [&str; 7] = [
    "completer_retry_err",
    "local_ack_timeout_err",
    "rcvd_seq_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "roce_adp_retrans",
    "retry_exceeded_err",
];
/// ... and of what was sent to this end and arrived out of sequence or twice (the responder's
/// view: the sender had to retransmit).
pub(crate) const RDMA_RECEIVED_LOST: [&str; 3] =
    ["out_of_seq_request", "out_of_sequence", "duplicate_request"];

/// The RDMA transport's own retransmits and sequence errors, per direction: with an error
/// counter of the port moving, the losses are this link's (`retrans_with_errors`); with none,
/// they happened on the path beyond it (`rdma_retransmits`). `errors`: the port's
/// [`error_counters`].
pub(crate) fn rdma_transport(ctx: &PortCtx, errors: &[&CounterTrack], out: &mut Out) {
    let moved = |names: &[&str]| -> Vec<&CounterTrack> {
        names
            .iter()
            .filter_map(|n| ctx.get(CounterSource::IbHwCounters, n))
            .filter(|c| c.delta > 0)
            .collect()
    };
    let moved_error = errors.iter().find(|c| c.delta > 0);
    let rule = if moved_error.is_some() {
        RuleId::RetransWithErrors
    } else {
        RuleId::RdmaRetransmits
    };
    for (counters, words) in [
        (
            moved(&RDMA_SENT_LOST),
            "packets this end sent (or their acknowledgements) were lost on the way: this end's send direction",
        ),
        (
            moved(&RDMA_RECEIVED_LOST),
            "packets sent to this end arrived out of sequence or twice, so its peer retransmitted: this end's receive direction",
        ),
    ] {
        for c in counters {
            out.check(rule, Some(c), c.delta as f64, 0.0, Unit::Count, || match moved_error {
                Some(e) => format!(
                    "the RDMA transport counted {} {} while {} moved on this port: {words}, and the losses are this link's",
                    count(c),
                    c.key.name,
                    e.key.name
                ),
                None => format!(
                    "the RDMA transport counted {} {}: {words}; no error counter of this port moved, so they were lost on the path beyond this cable (congestion, a lossy hop, a drop policy), not on it",
                    count(c),
                    c.key.name
                ),
            });
        }
    }
}

/// Counters the judge reads: reported even when they did not move.
pub(crate) fn is_judged(source: CounterSource, name: &str) -> bool {
    match source {
        IbCounters => IB_ERRORS.contains(&name) || IB_CONGESTION.contains(&name),
        Ethtool => {
            RCV_ERRORS.contains(&(Ethtool, name))
                || name == "rx_pcs_symbol_err_phy"
                || name == "link_down_events_phy"
                || name == "rx_corrected_bits_phy"
                || (name.contains("fec") && name.contains("correct"))
        }
        NetdevStatistics => RCV_ERRORS.contains(&(source, name)) || (source, name) == RX_MISSED,
        Carrier => name != "carrier_up_count",
        CounterSource::IbHwCounters => {
            RDMA_SENT_LOST.contains(&name) || RDMA_RECEIVED_LOST.contains(&name)
        }
    }
}

/// Resets listed per port at most; the rest are counted in one more note.
const MAX_RESET_NOTES: usize = 16;

/// Saturations and resets: a counter pegged from the start and never cleared hides
/// everything; one cleared during the soak is judged over the rest; later saturations are notes
/// that make the numbers "at least". Resets are one note per sample, listing the counters.
pub(crate) fn counter_notes(ctx: &PortCtx, out: &mut Out) {
    for c in ctx
        .order
        .iter()
        .filter(|c| is_health_counter(c.key.source, &c.key.name))
    {
        let Some(s) = c.saturations.first() else {
            continue;
        };
        let judged = is_judged(c.key.source, &c.key.name);
        let (rule, text) = match (s.from_start, s.until) {
            (true, None) if judged => (
                RuleId::PeggedFromStart,
                format!(
                    "{} was pegged at {} before the soak began: no increase was visible (clear \
                     it, e.g. perfquery -R, and soak again)",
                    c.key.name, s.value
                ),
            ),
            (true, Some(until)) => (
                RuleId::PeggedThenCleared,
                format!(
                    "{} was pegged at {} when the soak began, until someone cleared it at sample \
                     {} ({} s): judged over the {} it was observed",
                    c.key.name,
                    s.value,
                    until.seq,
                    fmt_num(linerate_units::r1(until.t_s)),
                    fmt_duration(c.observed_s)
                ),
            ),
            _ => (
                RuleId::Saturated,
                format!(
                    "{} saturated at {} from sample {} ({} s): the total ({}) and its rate are \
                     lower bounds, judged over the {} it was observed",
                    c.key.name,
                    s.value,
                    s.since.seq,
                    fmt_num(linerate_units::r1(s.since.t_s)),
                    count(c),
                    fmt_duration(c.observed_s)
                ),
            ),
        };
        out.push(finding(
            rule,
            Some(c),
            Some(s.value as f64),
            None,
            Unit::Count,
            text,
        ));
    }
    reset_notes(ctx, out);
}

/// One note per sample in which counters of the port were reset by someone else (one
/// `perfquery -R` resets them all at once), listing them; its value is how many were reset.
fn reset_notes(ctx: &PortCtx, out: &mut Out) {
    let mut by_sample: BTreeMap<u64, (Mark, Vec<String>)> = BTreeMap::new();
    for c in ctx
        .order
        .iter()
        .filter(|c| is_health_counter(c.key.source, &c.key.name))
    {
        for r in &c.resets {
            by_sample
                .entry(r.at.seq)
                .or_insert_with(|| (r.at, Vec::new()))
                .1
                .push(format!("{} ({} → {})", c.key.name, r.from, r.to));
        }
    }
    let samples = by_sample.len();
    for (at, names) in by_sample.into_values().take(MAX_RESET_NOTES) {
        let its = if names.len() == 1 {
            "its total is a lower bound"
        } else {
            "their totals are lower bounds"
        };
        let counter = (names.len() == 1).then(|| {
            names[0]
                .split_once(' ')
                .map_or(names[0].clone(), |(n, _)| n.to_string())
        });
        out.push(SoakFinding {
            rule: RuleId::CounterReset,
            verdict: Verdict::Clean,
            source: RuleId::CounterReset.source(),
            counter,
            value: Some(names.len() as f64),
            threshold: None,
            unit: Unit::Count,
            at_least: false,
            text: format!(
                "reset by someone else at sample {} ({} s): {}; counted from the new baseline, \
                 {its}",
                at.seq,
                fmt_num(linerate_units::r1(at.t_s)),
                names.join(", ")
            ),
        });
    }
    if samples > MAX_RESET_NOTES {
        out.push(SoakFinding {
            rule: RuleId::CounterReset,
            verdict: Verdict::Clean,
            source: RuleId::CounterReset.source(),
            counter: None,
            value: Some((samples - MAX_RESET_NOTES) as f64),
            threshold: None,
            unit: Unit::Count,
            at_least: false,
            text: format!(
                "and resets in {} more samples (each counter's resets are in its row)",
                samples - MAX_RESET_NOTES
            ),
        });
    }
}
