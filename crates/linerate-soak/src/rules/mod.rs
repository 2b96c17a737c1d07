//! The rules of the judge, one module per family of `linerate_facts::SoakFamily`, over one
//! port's counters, which each family takes by role from the counter table
//! (`linerate_facts::CounterRole`): no rule keeps a list of counter names.
//!
//! A threshold rule is a [`Check`]: the figure it compared, the limit that applied (floors
//! included) and whether it fired (`value > limit`, on the very numbers the document and the
//! text file carry, so a PromQL comparison of the two agrees with the verdict). A fired check
//! is also a [`SoakFinding`] with its text; notes (saturation, resets, PAM4) are findings only.
//! Rates are over the time each counter was observed ([`CounterTrack::observed_s`]); counts
//! are the whole soak's. The thresholds and their sources are in [`crate::thresholds`]; each
//! rule's verdict and source are its row of `RuleId` (`verdict.rs`).
//!
//! The families run in [`SoakFamily::ALL`]'s order through one exhaustive match
//! ([`run`]): a family added to the table does not build until the judge runs it.

mod ethernet;
mod link;
mod notes;
mod path;
mod pause;
mod phy;
mod rdma;
mod receive;

use linerate_facts::{CounterRole, CounterSource, SoakFamily};

use crate::port::{fmt_duration, PortCtx};
use crate::report::{BerEstimate, Check, SoakFinding, SymbolBudget};
use crate::tracker::CounterTrack;
use crate::verdict::{RuleId, Unit};

/// What the families read on one port beside its counters: the symbol budget (InfiniBand), the
/// BER estimate and the port's error counters ([`error_counters`]).
pub(crate) struct Judging<'c, 'a> {
    pub ctx: &'c PortCtx<'a>,
    pub budget: Option<&'c SymbolBudget>,
    pub ber: Option<&'c BerEstimate>,
    pub errors: &'c [&'a CounterTrack],
}

/// Every family of rules on one port, in [`SoakFamily::ALL`]'s order.
pub(crate) fn run(j: &Judging, out: &mut Out) {
    for f in SoakFamily::ALL {
        run_family(f, j, out);
    }
}

/// One family: the one list of the judge's rules.
fn run_family(f: SoakFamily, j: &Judging, out: &mut Out) {
    let ctx = j.ctx;
    match f {
        SoakFamily::AnyIncrease => link::any_increase(ctx, out),
        SoakFamily::Symbol => {
            if let Some(b) = j.budget {
                link::symbol_rules(ctx, b, out);
            }
        }
        SoakFamily::Receive => receive::receive_rules(ctx, out),
        SoakFamily::RxMissed => receive::rx_missed(ctx, out),
        SoakFamily::Recovery => link::recovery_rate(ctx, out),
        SoakFamily::Ethernet => ethernet::ethernet_rules(ctx, j.ber, out),
        SoakFamily::Path => path::path_rules(ctx, j.errors, out),
        SoakFamily::Pause => pause::pause_rules(ctx, out),
        SoakFamily::TcpRetransmits => path::tcp_retransmits(ctx, j.errors, out),
        SoakFamily::RdmaTransport => rdma::rdma_transport(ctx, j.errors, out),
        SoakFamily::Phy => phy::phy_rules(ctx, out),
        SoakFamily::Notes => notes::counter_notes(ctx, out),
    }
}

/// A port's checks and findings as the rules produce them.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub checks: Vec<Check>,
    pub findings: Vec<SoakFinding>,
}

impl Out {
    /// Records a check; true when it fired.
    pub(crate) fn record(
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
    pub(crate) fn check(
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

    pub(crate) fn push(&mut self, f: SoakFinding) {
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
pub(crate) fn count(c: &CounterTrack) -> String {
    at_least(c, c.delta.to_string())
}

/// The increase within the time observed, "at least" when it is a lower bound.
pub(crate) fn observed_count(c: &CounterTrack) -> String {
    rate_at_least(c, c.observed_delta.to_string())
}

/// A figure of the whole soak: "at least" when the total is a lower bound.
pub(crate) fn at_least(c: &CounterTrack, figure: String) -> String {
    prefix(c.at_least, figure)
}

/// A figure over the time observed (a rate): "at least" when the counter pegged while observed.
pub(crate) fn rate_at_least(c: &CounterTrack, figure: String) -> String {
    prefix(c.observed_at_least(), figure)
}

pub(crate) fn prefix(at_least: bool, figure: String) -> String {
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
pub(crate) fn over(c: &CounterTrack, ctx: &PortCtx) -> String {
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

/// The port's counters whose rise accuses the link (not congestion, not `rx_missed_errors`,
/// not `symbol_error` on PAM4), present on the port: InfiniBand's first, each group in the
/// order of its roles and then of the table; the link downs last.
pub(crate) fn error_counters<'a>(ctx: &PortCtx<'a>) -> Vec<&'a CounterTrack> {
    let pam4 = ctx.pam4();
    let (mut out, other): (Vec<&CounterTrack>, Vec<&CounterTrack>) = ctx
        .roles_where(|r| {
            r.accuses_link()
                && !matches!(r, CounterRole::LinkDown | CounterRole::LinkChanges)
                && !(pam4 && r == CounterRole::SymbolErrors)
        })
        .into_iter()
        .partition(|c| c.key.source == CounterSource::IbCounters);
    out.extend(other);
    out.extend(link_downs(ctx));
    out
}

/// Counters of link downs: `carrier_changes` (ups and downs together) only where the kernel
/// counts no downs of its own.
pub(crate) fn link_downs<'a>(ctx: &PortCtx<'a>) -> Vec<&'a CounterTrack> {
    let downs = ctx.roles(&[CounterRole::LinkDown]);
    if downs.iter().any(|c| c.key.source == CounterSource::Carrier) {
        downs
    } else {
        ctx.roles(&[CounterRole::LinkDown, CounterRole::LinkChanges])
    }
}
