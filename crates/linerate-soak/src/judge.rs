//! The verdicts: pure functions from the tracker's running sums to a [`SoakReport`].
//!
//! Every rule reads deltas over the soak (never raw values), says which counter and numbers it
//! used, and cites where its threshold comes from ([`RuleId::source`]). Rates are the soak's
//! average over the span the counter was sampled; bursts show in the timeline. Thresholds are in
//! [`JudgeParams`] (defaults in [`crate::report::defaults`]), and `docs/soak.md` lists them.

use std::collections::BTreeMap;

use linerate_units::{fmt_num, fmt_round, fmt_sig};

use crate::report::{
    defaults, BerEstimate, BitsBasis, CounterOut, Dip, EndReport, JudgeParams, PortReport,
    SoakFinding, SoakInterval, SoakParams, SoakReport, SymbolBudget,
};
use crate::tracker::{is_health_counter, CounterTrack, EndTotals, PortInfo, Tracker};
use crate::verdict::{RuleId, Verdict};
use linerate_proto::soak::{CounterSource, End, SoakPortKind};

use CounterSource::{Carrier, Ethtool, IbCounters, NetdevStatistics};

/// Bits per PMA data unit: `port_rcv_data` counts octets ÷ 4.
const BITS_PER_PMA_DATA_UNIT: f64 = 32.0;

/// The IB error counters that say the link itself is at fault (IBswcountlimits' reading).
const IB_ERRORS: [&str; 6] = [
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
];
const NETDEV_ERRORS: [&str; 2] = ["rx_crc_errors", "rx_frame_errors"];
const ETHTOOL_ERRORS: [&str; 4] = [
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_pcs_symbol_err_phy",
    "link_down_events_phy",
];
const IB_CONGESTION: [&str; 3] = [
    "port_xmit_discards",
    "port_xmit_wait",
    "port_rcv_remote_physical_errors",
];

/// Speeds that run PAM4 with FEC, where raw symbol errors are normal.
pub fn is_pam4(speed: &str) -> bool {
    matches!(speed.to_ascii_uppercase().as_str(), "HDR" | "NDR" | "XDR")
}

/// The `symbol_error` budget at BER `ber`: signalling rate × 3600 s × BER per hour (144/h at
/// 4X QDR, 202/h at 4X FDR, 371/h at 4X EDR). Without a signalling rate, NVSentinel's fixed
/// 120/h. `None` for an Ethernet port.
pub fn symbol_budget(kind: &SoakPortKind, ber: f64) -> Option<SymbolBudget> {
    let SoakPortKind::Infiniband {
        speed,
        signalling_gbps,
    } = kind
    else {
        return None;
    };
    let pam4 = speed.as_deref().is_some_and(is_pam4);
    let rate = signalling_gbps.filter(|g| g.is_finite() && *g > 0.0);
    Some(SymbolBudget {
        per_hour: rate.map_or(defaults::NVSENTINEL_SYMBOL_ERRORS_PER_HOUR, |g| {
            g * 1e9 * 3600.0 * ber
        }),
        signalling_gbps: rate,
        pam4,
    })
}

/// The counters of one port, by source and name, with what the judge needs beside them.
struct PortCtx<'a> {
    info: &'a PortInfo,
    totals: &'a EndTotals,
    counters: BTreeMap<(CounterSource, &'a str), &'a CounterTrack>,
    order: Vec<&'a CounterTrack>,
}

impl<'a> PortCtx<'a> {
    fn new(tracker: &'a Tracker, info: &'a PortInfo) -> Self {
        let order: Vec<&CounterTrack> = tracker
            .counters()
            .iter()
            .filter(|c| {
                c.key.end == info.end && c.key.device == info.device && c.key.port == info.port
            })
            .collect();
        let counters = order
            .iter()
            .map(|c| ((c.key.source, c.key.name.as_str()), *c))
            .collect();
        Self {
            info,
            totals: tracker.totals(info.end),
            counters,
            order,
        }
    }

    fn get(&self, source: CounterSource, name: &str) -> Option<&'a CounterTrack> {
        self.counters.get(&(source, name)).copied()
    }

    fn delta(&self, source: CounterSource, name: &str) -> u64 {
        self.get(source, name).map_or(0, |c| c.delta)
    }

    /// Ethtool counters whose name contains all of `parts` (drivers name FEC statistics
    /// differently: `rx_fec_uncorrectable_blocks`, `fec_uncorrectable_errors`, ...).
    fn ethtool_matching(&self, parts: &[&str]) -> Vec<&'a CounterTrack> {
        self.order
            .iter()
            .filter(|c| c.key.source == Ethtool && parts.iter().all(|p| c.key.name.contains(p)))
            .copied()
            .collect()
    }

    fn pam4(&self) -> bool {
        matches!(&self.info.kind, SoakPortKind::Infiniband { speed: Some(s), .. } if is_pam4(s))
    }

    /// The error counters that moved (not the congestion ones; not `symbol_error` on PAM4).
    fn errors_moved(&self) -> Vec<&'a CounterTrack> {
        let pam4 = self.pam4();
        let mut named: Vec<(CounterSource, &str)> = Vec::new();
        named.extend(
            IB_ERRORS
                .iter()
                .filter(|n| !(pam4 && **n == "symbol_error"))
                .map(|n| (IbCounters, *n)),
        );
        named.extend(NETDEV_ERRORS.iter().map(|n| (NetdevStatistics, *n)));
        named.extend(ETHTOOL_ERRORS.iter().map(|n| (Ethtool, *n)));
        named.push((Carrier, self.carrier_down_name()));
        let mut moved: Vec<&CounterTrack> = named
            .into_iter()
            .filter_map(|(s, n)| self.get(s, n))
            .filter(|c| c.delta > 0)
            .collect();
        moved.extend(
            self.ethtool_matching(&["fec", "uncorrect"])
                .into_iter()
                .filter(|c| c.delta > 0),
        );
        moved
    }

    /// `carrier_down_count` where the kernel has it (4.16+), else `carrier_changes`.
    fn carrier_down_name(&self) -> &'static str {
        if self.get(Carrier, "carrier_down_count").is_some() {
            "carrier_down_count"
        } else {
            "carrier_changes"
        }
    }

    /// Bits this port received, and how they were counted: the larger of the port's own
    /// counter and the engines' bytes (a port counter includes headers; the engines' bytes are
    /// end-wide, and are all a fixture port has).
    fn bits_received(&self) -> (f64, BitsBasis) {
        let engine = self.totals.bytes_received as f64 * 8.0;
        let port = if let Some(c) = self.get(Ethtool, "rx_bits_phy") {
            Some((c.delta as f64, BitsBasis::RxBitsPhy))
        } else if let Some(c) = self.get(IbCounters, "port_rcv_data") {
            Some((
                c.delta as f64 * BITS_PER_PMA_DATA_UNIT,
                BitsBasis::PortRcvData,
            ))
        } else {
            self.get(NetdevStatistics, "rx_bytes")
                .map(|c| (c.delta as f64 * 8.0, BitsBasis::RxBytes))
        };
        match port {
            Some((bits, basis)) if bits >= engine => (bits, basis),
            _ => (engine, BitsBasis::Engine),
        }
    }

    fn duration_s(&self) -> f64 {
        self.totals.duration_s()
    }
}

fn finding(
    rule: RuleId,
    c: Option<&CounterTrack>,
    value: Option<f64>,
    threshold: Option<f64>,
    unit: &str,
    text: String,
) -> SoakFinding {
    SoakFinding {
        rule,
        verdict: rule.verdict(),
        source: rule.source(),
        counter: c.map(|c| c.key.name.clone()),
        value,
        threshold,
        unit: unit.into(),
        at_least: c.is_some_and(|c| c.at_least),
        text,
    }
}

/// "12" or "at least 12".
fn count(c: &CounterTrack) -> String {
    if c.at_least {
        format!("at least {}", c.delta)
    } else {
        c.delta.to_string()
    }
}

/// Any increase of these is fatal (NVSentinel; UFM flags Link_Down on any delta).
fn any_increase(ctx: &PortCtx, out: &mut Vec<SoakFinding>) {
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
        if let Some(c) = ctx.get(IbCounters, name).filter(|c| c.delta > 0) {
            let text = format!("{name} rose by {}: {what}", count(c));
            out.push(finding(
                rule,
                Some(c),
                Some(c.delta as f64),
                Some(0.0),
                "count",
                text,
            ));
        }
    }
}

/// `symbol_error` against the BER budget at the port's signalling rate.
fn symbol_rules(
    ctx: &PortCtx,
    jp: &JudgeParams,
    budget: &SymbolBudget,
    out: &mut Vec<SoakFinding>,
) {
    let Some(c) = ctx.get(IbCounters, "symbol_error") else {
        return;
    };
    let hours = c.span_s() / 3600.0;
    if c.delta == 0 || hours <= 0.0 {
        return;
    }
    let per_hour = c.delta as f64 / hours;
    if budget.pam4 {
        let text = format!(
            "symbol_error rose by {} ({}/h): normal before FEC on PAM4, not judged alone",
            count(c),
            fmt_sig(per_hour)
        );
        out.push(finding(
            RuleId::Pam4SymbolErrors,
            Some(c),
            Some(per_hour),
            None,
            "per_hour",
            text,
        ));
    } else {
        // More than the budget for the time observed, and more than the budget of the
        // shortest soak that can judge it (min_bits × BER = 3 errors): a handful of errors in
        // ten seconds is not a rate.
        let allowed = (budget.per_hour * hours).max(jp.min_bits * jp.ber);
        if c.delta as f64 > allowed {
            let basis = budget.signalling_gbps.map_or_else(
                || "NVSentinel's fixed budget (signalling rate unknown)".to_string(),
                |g| format!("the budget for BER {:e} at {} Gb/s", jp.ber, fmt_num(g)),
            );
            let text = format!(
                "symbol_error {}/h ({} in {}), above {basis}: {}/h",
                fmt_sig(per_hour),
                count(c),
                fmt_duration(c.span_s()),
                fmt_sig(budget.per_hour)
            );
            let mut f = finding(
                RuleId::SymbolErrorBudget,
                Some(c),
                Some(per_hour),
                Some(budget.per_hour),
                "per_hour",
                text,
            );
            if budget.signalling_gbps.is_none() {
                f.source = crate::verdict::Source::Nvsentinel;
            }
            out.push(f);
        }
    }
    if ctx.delta(IbCounters, "link_error_recovery") > 0 {
        let text = format!(
            "symbol_error rose by {} together with link_error_recovery ({}): IBswcountlimits: \
             act when symbol errors increase along with link error recoveries",
            count(c),
            ctx.delta(IbCounters, "link_error_recovery")
        );
        out.push(finding(
            RuleId::SymbolWithRecovery,
            Some(c),
            Some(c.delta as f64),
            Some(0.0),
            "count",
            text,
        ));
    }
}

/// `port_rcv_errors` per second and `link_error_recovery` per minute.
fn rate_rules(ctx: &PortCtx, jp: &JudgeParams, out: &mut Vec<SoakFinding>) {
    for (rule, name, per, unit_s, limit) in [
        (
            RuleId::PortRcvErrorsRate,
            "port_rcv_errors",
            "s",
            1.0,
            jp.port_rcv_errors_per_s,
        ),
        (
            RuleId::LinkErrorRecoveryRate,
            "link_error_recovery",
            "min",
            60.0,
            jp.link_error_recovery_per_min,
        ),
    ] {
        let Some(c) = ctx.get(IbCounters, name) else {
            continue;
        };
        let span = c.span_s();
        if span <= 0.0 {
            continue;
        }
        let rate = c.delta as f64 / span * unit_s;
        if rate > limit {
            let text = format!(
                "{name} {}/{per} ({} in {}), above {}/{per}",
                fmt_sig(rate),
                count(c),
                fmt_duration(span),
                fmt_num(limit)
            );
            let unit = if per == "s" { "per_s" } else { "per_min" };
            out.push(finding(rule, Some(c), Some(rate), Some(limit), unit, text));
        }
    }
}

/// Ethernet after FEC, link downs on any port, and the pre-FEC BER estimate.
fn ethernet_rules(
    ctx: &PortCtx,
    jp: &JudgeParams,
    ber: Option<&BerEstimate>,
    out: &mut Vec<SoakFinding>,
) {
    let mut post = ctx.ethtool_matching(&["fec", "uncorrect"]);
    post.extend(ctx.get(Ethtool, "rx_pcs_symbol_err_phy"));
    if let Some(c) = post.into_iter().find(|c| c.delta > 0) {
        let text = format!(
            "{} rose by {}: errors FEC did not correct, traffic is lost (replace the cable or \
             transceiver)",
            c.key.name,
            count(c)
        );
        out.push(finding(
            RuleId::PostFecErrors,
            Some(c),
            Some(c.delta as f64),
            Some(0.0),
            "count",
            text,
        ));
    }
    let downs = [
        ctx.get(Carrier, ctx.carrier_down_name()),
        ctx.get(Ethtool, "link_down_events_phy"),
    ];
    if let Some(c) = downs.into_iter().flatten().find(|c| c.delta > 0) {
        let text = format!("{} rose by {}: the link went down", c.key.name, count(c));
        out.push(finding(
            RuleId::LinkDown,
            Some(c),
            Some(c.delta as f64),
            Some(0.0),
            "count",
            text,
        ));
    }
    if let Some(pre) = ber.and_then(|b| b.pre_fec.map(|p| (p, b.estimate))) {
        if pre.0 > jp.pre_fec_ber {
            let label = if pre.1 {
                " (an estimate: corrected bits over rate × time, the driver exposes no rx_bits_phy)"
            } else {
                ""
            };
            let text = format!(
                "pre-FEC BER {:.2e}, above {:.0e}{label}",
                pre.0, jp.pre_fec_ber
            );
            out.push(finding(
                RuleId::PreFecBer,
                None,
                Some(pre.0),
                Some(jp.pre_fec_ber),
                "ber",
                text,
            ));
        }
    }
}

/// Congestion (only when no error counter moved), and retransmits with errors.
fn path_rules(ctx: &PortCtx, jp: &JudgeParams, out: &mut Vec<SoakFinding>) {
    let errors = ctx.errors_moved();
    if let (Some(c), true) = (errors.first(), ctx.totals.tcp_retrans > 0) {
        let text = format!(
            "{} TCP retransmits while {} moved on this port: the losses are this link's",
            ctx.totals.tcp_retrans, c.key.name
        );
        out.push(finding(
            RuleId::RetransWithErrors,
            Some(c),
            Some(ctx.totals.tcp_retrans as f64),
            Some(0.0),
            "count",
            text,
        ));
    }
    if !errors.is_empty() {
        return;
    }
    let discards = ctx
        .get(IbCounters, "port_xmit_discards")
        .filter(|c| c.delta > 0);
    let wait = ctx
        .get(IbCounters, "port_xmit_wait")
        .filter(|c| c.delta > jp.xmit_wait_ticks);
    if let Some(c) = discards.or(wait) {
        let text = format!(
            "only {} rose ({}): a symptom of congestion, not of this cable",
            c.key.name,
            count(c)
        );
        let limit = if c.key.name == "port_xmit_wait" {
            jp.xmit_wait_ticks as f64
        } else {
            0.0
        };
        out.push(finding(
            RuleId::XmitCongestion,
            Some(c),
            Some(c.delta as f64),
            Some(limit),
            "count",
            text,
        ));
    }
    if let Some(c) = ctx
        .get(IbCounters, "port_rcv_remote_physical_errors")
        .filter(|c| c.delta > 0)
    {
        let text = format!(
            "only port_rcv_remote_physical_errors rose ({}): the packets arrived already marked \
             bad, the fault is elsewhere in the fabric",
            count(c)
        );
        out.push(finding(
            RuleId::RemotePhysicalErrors,
            Some(c),
            Some(c.delta as f64),
            Some(0.0),
            "count",
            text,
        ));
    }
}

/// Counters the judge reads: reported even when they did not move.
fn is_judged(source: CounterSource, name: &str) -> bool {
    match source {
        IbCounters => IB_ERRORS.contains(&name) || IB_CONGESTION.contains(&name),
        Ethtool => {
            ETHTOOL_ERRORS.contains(&name)
                || name == "rx_corrected_bits_phy"
                || (name.contains("fec") && name.contains("correct"))
        }
        NetdevStatistics => NETDEV_ERRORS.contains(&name),
        Carrier => name != "carrier_up_count",
        CounterSource::IbHwCounters => false,
    }
}

/// Saturations and resets: a counter pegged from the start hides everything; later ones are
/// notes that make the numbers "at least".
fn counter_notes(ctx: &PortCtx, out: &mut Vec<SoakFinding>) {
    for c in &ctx.order {
        if !is_health_counter(c.key.source, &c.key.name) {
            continue;
        }
        if let Some(s) = c.saturations.first() {
            let judged = is_judged(c.key.source, &c.key.name);
            let (rule, text) = if s.from_start && judged && s.until.is_none() {
                (
                    RuleId::PeggedFromStart,
                    format!(
                        "{} was pegged at {} before the soak began: no increase was visible \
                         (clear it, e.g. perfquery -R, and soak again)",
                        c.key.name, s.value
                    ),
                )
            } else {
                (
                    RuleId::Saturated,
                    format!(
                        "{} saturated at {} from sample {} ({} s): the total ({}) is a lower bound",
                        c.key.name,
                        s.value,
                        s.since.seq,
                        fmt_num(linerate_units::r1(s.since.t_s)),
                        count(c)
                    ),
                )
            };
            out.push(finding(
                rule,
                Some(c),
                Some(s.value as f64),
                None,
                "count",
                text,
            ));
        }
        if let Some(r) = c.resets.first() {
            let text = format!(
                "{} was reset by someone else {} time(s), first at sample {} ({} → {}): counted \
                 from the new baseline, the total ({}) is a lower bound",
                c.key.name,
                c.resets_total,
                r.at.seq,
                r.from,
                r.to,
                count(c)
            );
            out.push(finding(
                RuleId::CounterReset,
                Some(c),
                Some(c.resets_total as f64),
                None,
                "count",
                text,
            ));
        }
    }
}

/// BER figures: Ethernet's corrected and uncorrected bits over received bits (or rate × time,
/// an estimate), InfiniBand's symbol errors over signalling bits (an estimate: symbols, not
/// bits).
fn ber_estimate(ctx: &PortCtx) -> Option<BerEstimate> {
    let span = ctx.duration_s();
    match &ctx.info.kind {
        SoakPortKind::Infiniband {
            signalling_gbps, ..
        } => {
            let c = ctx.get(IbCounters, "symbol_error")?;
            let bits = signalling_gbps.filter(|g| *g > 0.0)? * 1e9 * c.span_s();
            (bits > 0.0).then(|| BerEstimate {
                pre_fec: None,
                post_fec: Some(c.delta as f64 / bits),
                bits,
                estimate: true,
            })
        }
        SoakPortKind::Ethernet { speed_mbps, .. } => {
            let corrected = ctx.get(Ethtool, "rx_corrected_bits_phy").or_else(|| {
                ctx.ethtool_matching(&["fec", "corrected_bits"])
                    .first()
                    .copied()
            });
            let post = ctx.get(Ethtool, "rx_pcs_symbol_err_phy");
            if corrected.is_none() && post.is_none() {
                return None;
            }
            let (bits, estimate) = match ctx.get(Ethtool, "rx_bits_phy") {
                Some(b) => (b.delta as f64, false),
                None => (speed_mbps.map(|m| m as f64 * 1e6 * span)?, true),
            };
            (bits > 0.0).then(|| BerEstimate {
                pre_fec: corrected.map(|c| c.delta as f64 / bits),
                post_fec: post.map(|c| c.delta as f64 / bits),
                bits,
                estimate,
            })
        }
    }
}

fn counter_out(c: &CounterTrack) -> CounterOut {
    let span = c.span_s();
    let per_s = (span > 0.0).then(|| c.delta as f64 / span);
    CounterOut {
        source: c.key.source,
        name: c.key.name.clone(),
        width: c.width.label(),
        first: c.first,
        last: c.last,
        delta: c.delta,
        at_least: c.at_least,
        per_s,
        per_hour: per_s.map(|r| r * 3600.0),
        intervals_moved: c.intervals_moved,
        saturations: c.saturations.clone(),
        saturated_now: c.saturated_now,
        resets: c.resets.clone(),
        resets_total: c.resets_total,
    }
}

/// One port, judged.
pub(crate) fn judge_port(tracker: &Tracker, info: &PortInfo, jp: &JudgeParams) -> PortReport {
    let ctx = PortCtx::new(tracker, info);
    let budget = symbol_budget(&info.kind, jp.ber);
    let ber = ber_estimate(&ctx);
    let (bits, bits_basis) = ctx.bits_received();
    let mut findings = Vec::new();
    any_increase(&ctx, &mut findings);
    if let Some(b) = &budget {
        symbol_rules(&ctx, jp, b, &mut findings);
    }
    rate_rules(&ctx, jp, &mut findings);
    ethernet_rules(&ctx, jp, ber.as_ref(), &mut findings);
    path_rules(&ctx, jp, &mut findings);
    counter_notes(&ctx, &mut findings);
    let conclusive = findings.iter().any(|f| f.verdict >= Verdict::Marginal);
    if ctx.order.is_empty() {
        findings.push(finding(
            RuleId::NoCounters,
            None,
            None,
            None,
            "count",
            "no counters were read on this port".into(),
        ));
    } else if !conclusive && bits < jp.min_bits {
        let text = format!(
            "{bits:.2e} bits received, fewer than the {:.0e} needed to judge BER {:e}: not called \
             clean",
            jp.min_bits, jp.ber
        );
        findings.push(finding(
            RuleId::InsufficientTraffic,
            None,
            Some(bits),
            Some(jp.min_bits),
            "bits",
            text,
        ));
    }
    let worst = findings
        .iter()
        .max_by_key(|f| (f.verdict, std::cmp::Reverse(f.rule)));
    let verdict = worst.map_or(Verdict::Clean, |f| f.verdict);
    let rule = worst
        .filter(|f| f.verdict > Verdict::Clean)
        .map_or("clean", |f| f.rule.as_str());
    PortReport {
        device: info.device.clone(),
        port: info.port.clone(),
        netdev: info.netdev.clone(),
        kind: info.kind.clone(),
        duration_s: ctx.duration_s(),
        bits_received: bits,
        bits_basis,
        symbol_budget: budget,
        ber,
        counters: ctx
            .order
            .iter()
            .filter(|c| {
                is_health_counter(c.key.source, &c.key.name)
                    && (c.delta > 0
                        || !c.saturations.is_empty()
                        || c.resets_total > 0
                        || is_judged(c.key.source, &c.key.name))
            })
            .map(|c| counter_out(c))
            .collect(),
        findings,
        verdict,
        rule: rule.into(),
    }
}

/// The median of some figures; 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

fn end_report(tracker: &Tracker, end: End, jp: &JudgeParams) -> Option<EndReport> {
    let t = tracker.totals(end);
    if t.samples == 0 {
        return None;
    }
    // Zero-length intervals (two samples at the same instant) have no rate.
    let intervals: Vec<_> = tracker
        .timeline()
        .iter()
        .filter(|r| r.end == end && r.end_s > r.start_s)
        .collect();
    let rates: Vec<f64> = intervals.iter().map(|r| r.gbps()).collect();
    let moved_bytes: u64 = intervals
        .iter()
        .map(|r| r.bytes_sent.saturating_add(r.bytes_received))
        .sum();
    let ports: Vec<PortReport> = tracker
        .ports()
        .filter(|p| p.end == end)
        .map(|p| judge_port(tracker, p, jp))
        .collect();
    let verdict = ports
        .iter()
        .map(|p| p.verdict)
        .max()
        .unwrap_or(Verdict::Insufficient);
    Some(EndReport {
        end,
        samples: t.samples,
        samples_ignored: t.samples_ignored,
        duration_s: t.duration_s(),
        bytes_sent: t.bytes_sent,
        bytes_received: t.bytes_received,
        mean_gbps: linerate_units::gbps(moved_bytes, t.duration_s()),
        median_gbps: median(&rates),
        tcp_retrans: t.tcp_retrans_last.map(|_| t.tcp_retrans),
        ports,
        problems: t.problems.clone(),
        problems_total: t.problems_total,
        verdict,
    })
}

/// Intervals below `dip_fraction` of their end's median, with what moved then.
/// Intervals below `dip_fraction` of their end's median rate. An interval shorter than half the
/// soak's (the last, cut short when the soak ends, whose bytes include the stream winding down)
/// is not judged.
fn dips(
    tracker: &Tracker,
    ends: &[EndReport],
    jp: &JudgeParams,
    interval_s: f64,
) -> (Vec<Dip>, u64) {
    let mut out = Vec::new();
    let mut total = 0u64;
    for e in ends {
        if e.median_gbps <= 0.0 {
            continue;
        }
        for r in tracker
            .timeline()
            .iter()
            .filter(|r| r.end == e.end && r.end_s > r.start_s)
            .filter(|r| r.end_s - r.start_s >= interval_s / 2.0)
        {
            let g = r.gbps();
            if g < jp.dip_fraction * e.median_gbps {
                total += 1;
                if out.len() < defaults::MAX_DIPS {
                    out.push(Dip {
                        end: r.end,
                        seq: r.seq,
                        start_s: r.start_s,
                        end_s: r.end_s,
                        gbps: g,
                        median_gbps: e.median_gbps,
                        moved: SoakInterval::new(tracker, r).moved,
                    });
                }
            }
        }
    }
    (out, total)
}

/// The final document: every port of both ends judged, the dips, the timeline and the overall
/// verdict. `error` is `None`; the command sets it when the soak stopped early.
pub fn judge(tracker: &Tracker, params: &SoakParams, jp: &JudgeParams) -> SoakReport {
    let ends: Vec<EndReport> = [End::Local, End::Remote]
        .into_iter()
        .filter_map(|e| end_report(tracker, e, jp))
        .collect();
    let (dips, dips_total) = dips(tracker, &ends, jp, params.interval_s);
    let worst = ends.iter().flat_map(|e| &e.ports).max_by_key(|p| p.verdict);
    let verdict = ends
        .iter()
        .map(|e| e.verdict)
        .max()
        .unwrap_or(Verdict::Insufficient);
    let rule = match worst {
        Some(p) if p.verdict == verdict => p.rule.clone(),
        _ if verdict == Verdict::Clean => "clean".into(),
        _ => RuleId::NoCounters.as_str().into(),
    };
    SoakReport {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        params: params.clone(),
        thresholds: jp.clone(),
        duration_s: ends.iter().map(|e| e.duration_s).fold(0.0, f64::max),
        bytes_sent: ends.first().map_or(0, |e| e.bytes_sent),
        bytes_received: ends.first().map_or(0, |e| e.bytes_received),
        timeline: tracker
            .timeline()
            .iter()
            .map(|r| SoakInterval::new(tracker, r))
            .collect(),
        ends,
        dips,
        dips_total,
        verdict,
        rule,
        error: None,
    }
}

/// `90 s`, `12 min`, `2.5 h`.
pub fn fmt_duration(s: f64) -> String {
    if s >= 5400.0 {
        format!("{} h", fmt_round(s / 3600.0, 1))
    } else if s >= 120.0 {
        format!("{} min", fmt_round(s / 60.0, 1))
    } else {
        format!("{} s", fmt_round(s, 1))
    }
}
