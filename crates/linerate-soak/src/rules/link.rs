//! InfiniBand's link families: the counters any rise of which is bad, `symbol_error` against
//! the BER budget (and with link recoveries), and link recoveries per minute.

use linerate_facts::CounterRole::{
    BufferOverrun, LinkDowned, LinkIntegrity, LinkRecovery, SymbolErrors,
};
use linerate_units::{fmt_num, fmt_sig};

use super::{count, finding, observed_count, over, per_hour, rate_at_least, Out};
use crate::port::PortCtx;
use crate::report::SymbolBudget;
use crate::verdict::{RuleId, Source, Unit};

/// Any increase of these is `bad` (NVSentinel: fatal on any delta; UFM flags Link_Down on any
/// delta).
pub(crate) fn any_increase(ctx: &PortCtx, out: &mut Out) {
    for (rule, role, what) in [
        (RuleId::LinkDowned, LinkDowned, "the link went down"),
        (
            RuleId::LocalLinkIntegrity,
            LinkIntegrity,
            "local physical errors exceeded the port's threshold",
        ),
        (
            RuleId::ExcessiveBufferOverrun,
            BufferOverrun,
            "the receive buffer overran (misconfiguration, or very poor signal integrity)",
        ),
    ] {
        for c in ctx.role(role) {
            out.check(rule, Some(c), c.delta as f64, 0.0, Unit::Count, || {
                format!("{} rose by {}: {what}", c.key.name, count(c))
            });
        }
    }
}

/// `symbol_error` against the BER budget at the port's signalling rate (with its floor), over
/// the time it was observed; with `link_error_recovery`, marginal on any speed.
pub(crate) fn symbol_rules(ctx: &PortCtx, budget: &SymbolBudget, out: &mut Out) {
    let Some(c) = ctx.first(SymbolErrors) else {
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
    let recoveries = ctx.delta(LinkRecovery);
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

/// `link_error_recovery` per minute over the time observed.
pub(crate) fn recovery_rate(ctx: &PortCtx, out: &mut Out) {
    let Some(c) = ctx.first(LinkRecovery) else {
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
