//! The verdicts: pure functions from the tracker's running sums to a [`SoakReport`].
//!
//! Every rule (`rules.rs`) reads deltas over the soak (never raw values), says which counter
//! and numbers it used, and cites where its threshold comes from ([`RuleId::source`]). Rates are
//! over the time each counter was observed; bursts show in the timeline. Thresholds are in
//! [`JudgeParams`] (defaults and sources in [`crate::thresholds`]), and `docs/soak.md` lists
//! them.

use crate::port::{fmt_duration, is_pam4, PortCtx};
use crate::report::{
    BerEstimate, CounterOut, Dip, EndReport, PortReport, SoakInterval, SoakParams, SoakReport,
    SymbolBudget,
};
use crate::rules::{self, Judging, Out};
use crate::thresholds::{JudgeParams, NVSENTINEL_SYMBOL_ERRORS_PER_HOUR};
use crate::tracker::{CounterTrack, PortInfo, Tracker};
use crate::verdict::{RuleId, Unit, Verdict, VerdictRule};
use linerate_facts::CounterRole::{PostFec, PreFec, SymbolErrors};
use linerate_facts::CounterUnit;
use linerate_proto::soak::{End, SoakPortKind};

/// Dips listed in the document (the count goes on).
pub const MAX_DIPS: usize = 1000;

/// The `symbol_error` budget at BER `jp.ber`: signalling rate × 3600 s × BER per hour (144/h
/// at 4X QDR, 202/h at 4X FDR, 371/h at 4X EDR); without a signalling rate, NVSentinel's fixed
/// 120/h. Its floor is `min_bits` × `ber` (3 errors). `limit_per_hour` is left for the judge,
/// which knows how long the counter was observed ([`SymbolBudget::limit_over`]). `None` for an
/// Ethernet port.
pub fn symbol_budget(kind: &SoakPortKind, jp: &JudgeParams) -> Option<SymbolBudget> {
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
        per_hour: rate.map_or(NVSENTINEL_SYMBOL_ERRORS_PER_HOUR, |g| {
            g * 1e9 * 3600.0 * jp.ber
        }),
        signalling_gbps: rate,
        pam4,
        floor: jp.floor(jp.ber),
        limit_per_hour: None,
    })
}

impl SymbolBudget {
    /// The limit per hour over `observed_s` seconds: the budget, or the floor spread over that
    /// time when it allows more (a handful of errors in seconds is not a rate). `None` on PAM4
    /// (not judged alone) and for no time observed.
    pub fn limit_over(&self, observed_s: f64) -> Option<f64> {
        (!self.pam4 && observed_s > 0.0)
            .then(|| self.per_hour.max(self.floor * 3600.0 / observed_s))
    }
}

/// The shortest share of the soak any judged error counter (`errors`, as
/// [`rules::error_counters`] gives them) was observed (1 when all were throughout). A counter
/// pegged from the start and never cleared is left out: it has a rule of its own.
fn observed_fraction(ctx: &PortCtx, errors: &[&CounterTrack]) -> f64 {
    let d = ctx.duration_s();
    if d <= 0.0 {
        return 1.0;
    }
    errors
        .iter()
        .filter(|c| !(c.saturated_now && c.saturations.first().is_some_and(|s| s.from_start)))
        .map(|c| c.observed_s / d)
        .map(|f| if f >= 1.0 - 1e-9 { 1.0 } else { f })
        .fold(1.0, f64::min)
}

/// BER figures over the time observed: Ethernet's corrected and uncorrected bits over received
/// bits (or rate × time, an estimate), InfiniBand's symbol errors over signalling bits (an
/// estimate: symbols, not bits).
fn ber_estimate(ctx: &PortCtx) -> Option<BerEstimate> {
    match &ctx.info.kind {
        SoakPortKind::Infiniband {
            signalling_gbps, ..
        } => {
            let c = ctx.first(SymbolErrors)?;
            let bits = signalling_gbps.filter(|g| *g > 0.0)? * 1e9 * c.observed_s;
            (bits > 0.0).then(|| BerEstimate {
                pre_fec: None,
                post_fec: Some(c.observed_delta as f64 / bits),
                bits,
                estimate: true,
            })
        }
        SoakPortKind::Ethernet { speed_mbps, .. } => {
            let unit = |c: &CounterTrack| c.def().unit;
            // Corrected bits; errors after FEC counted per symbol, not per block (a block is
            // no count of bits); the PHY's own count of the bits received.
            let corrected = ctx.first(PreFec);
            let post = ctx.role(PostFec).find(|c| unit(c) != CounterUnit::Blocks);
            if corrected.is_none() && post.is_none() {
                return None;
            }
            if let Some(b) = ctx.received_data().filter(|c| unit(c) == CounterUnit::Bits) {
                let bits = b.delta as f64;
                return (bits > 0.0).then(|| BerEstimate {
                    pre_fec: corrected.map(|c| c.delta as f64 / bits),
                    post_fec: post.map(|c| c.delta as f64 / bits),
                    bits,
                    estimate: false,
                });
            }
            let bps = speed_mbps.map(|m| m as f64 * 1e6)?;
            let rate = |c: &CounterTrack| {
                (c.observed_s > 0.0).then(|| c.observed_delta as f64 / (bps * c.observed_s))
            };
            let span = corrected.or(post).map_or(0.0, |c| c.observed_s);
            (span > 0.0).then(|| BerEstimate {
                pre_fec: corrected.and_then(rate),
                post_fec: post.and_then(rate),
                bits: bps * span,
                estimate: true,
            })
        }
    }
}

fn counter_out(c: &CounterTrack) -> CounterOut {
    let per_s = c.observed_per_s();
    CounterOut {
        source: c.key.source,
        name: c.key.name.clone(),
        width: c.width.label(),
        first: c.first,
        last: c.last,
        delta: c.delta,
        at_least: c.at_least,
        observed_s: c.observed_s,
        observed_delta: c.observed_delta,
        observed_at_least: c.observed_at_least(),
        per_s,
        per_hour: rules::per_hour(c),
        intervals_moved: c.intervals_moved,
        saturations: c.saturations.clone(),
        saturated_now: c.saturated_now,
        resets: c.resets.clone(),
        resets_total: c.resets_total,
    }
}

/// The port is not called clean: no counters, or too few bits received while every judged
/// error counter was observed (unless a rule already found something conclusive).
fn sufficiency(ctx: &PortCtx, out: &mut Out, observed_fraction: f64) {
    let jp = ctx.jp;
    let conclusive = out.findings.iter().any(|f| f.verdict >= Verdict::Marginal);
    let bits = ctx.bits * observed_fraction;
    if ctx.order.is_empty() {
        out.findings.push(rules::finding(
            RuleId::NoCounters,
            None,
            None,
            None,
            Unit::Count,
            "no counters were read on this port".into(),
        ));
    } else if !conclusive && bits < jp.min_bits {
        let while_observed = if observed_fraction < 1.0 {
            format!(
                " in the {} every error counter was observed (of {})",
                fmt_duration(ctx.duration_s() * observed_fraction),
                fmt_duration(ctx.duration_s())
            )
        } else {
            String::new()
        };
        out.findings.push(rules::finding(
            RuleId::InsufficientTraffic,
            None,
            Some(bits),
            Some(jp.min_bits),
            Unit::Bits,
            format!(
                "{bits:.2e} bits received{while_observed}, fewer than the {:.0e} needed to judge \
                 BER {:e}: not called clean",
                jp.min_bits, jp.ber
            ),
        ));
    }
}

/// One port of `tracker`, judged: what [`judge`] does for each port, for a caller that judges
/// some ports only (`linerate watch` judges a port when its error counters move).
pub fn judge_port(tracker: &Tracker, info: &PortInfo, jp: &JudgeParams) -> PortReport {
    let ctx = PortCtx::new(tracker, info, jp);
    let budget = symbol_budget(&info.kind, jp).map(|mut b| {
        b.limit_per_hour = ctx
            .first(SymbolErrors)
            .and_then(|c| b.limit_over(c.observed_s));
        b
    });
    let ber = ber_estimate(&ctx);
    let errors = rules::error_counters(&ctx);
    let mut out = Out::default();
    rules::run(
        &Judging {
            ctx: &ctx,
            budget: budget.as_ref(),
            ber: ber.as_ref(),
            errors: &errors,
        },
        &mut out,
    );
    let fraction = observed_fraction(&ctx, &errors);
    sufficiency(&ctx, &mut out, fraction);
    let worst = out
        .findings
        .iter()
        .max_by_key(|f| (f.verdict, std::cmp::Reverse(f.rule)));
    let verdict = worst.map_or(Verdict::Clean, |f| f.verdict);
    let rule = worst
        .filter(|f| f.verdict > Verdict::Clean)
        .map_or(VerdictRule::Clean, |f| VerdictRule::Rule(f.rule));
    PortReport {
        device: info.device.clone(),
        port: info.port.clone(),
        netdev: info.netdev.clone(),
        kind: info.kind.clone(),
        duration_s: ctx.duration_s(),
        observed_s: ctx.duration_s() * fraction,
        bits_received: ctx.bits,
        bits_basis: ctx.bits_basis,
        data_gbps: ctx.data_gbps,
        symbol_budget: budget,
        ber,
        counters: ctx
            .order
            .iter()
            .filter(|c| {
                let def = c.def();
                def.is_health()
                    && (c.delta > 0
                        || !c.saturations.is_empty()
                        || c.resets_total > 0
                        || def.judged_by_soak())
            })
            .map(|c| counter_out(c))
            .collect(),
        checks: out.checks,
        findings: out.findings,
        verdict,
        rule,
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
        median_gbps: linerate_stats::median(&rates).unwrap_or(0.0),
        tcp_retrans: t.tcp_retrans_last.map(|_| t.tcp_retrans),
        tcp_out_segs: t.tcp_out_segs,
        ports,
        problems: t.problems.clone(),
        problems_total: t.problems_total,
        verdict,
    })
}

/// Intervals below `dip_fraction` of their end's median rate, with what moved then. An
/// interval shorter than half the soak's (the last, cut short when the soak ends, whose bytes
/// include the stream winding down) is not judged.
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
                if out.len() < MAX_DIPS {
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
        Some(p) if p.verdict == verdict => p.rule,
        _ if verdict == Verdict::Clean => VerdictRule::Clean,
        _ => VerdictRule::Rule(RuleId::NoCounters),
    };
    SoakReport {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        params: params.clone(),
        thresholds: jp.clone(),
        thresholds_set: jp.changed(),
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
        far_end_copy: None,
    }
}
