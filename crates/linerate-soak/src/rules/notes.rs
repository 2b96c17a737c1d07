//! Notes on every health counter of a port: saturations (pegged from the start, cleared,
//! pegged during the soak) and resets by someone else.

use std::collections::BTreeMap;

use linerate_units::fmt_num;

use super::{count, finding, Out};
use crate::port::{fmt_duration, PortCtx};
use crate::report::SoakFinding;
use crate::tracker::Mark;
use crate::verdict::{RuleId, Unit, Verdict};

/// Resets listed per port at most; the rest are counted in one more note.
const MAX_RESET_NOTES: usize = 16;

/// Saturations and resets: a counter pegged from the start and never cleared hides
/// everything; one cleared during the soak is judged over the rest; later saturations are notes
/// that make the numbers "at least". Resets are one note per sample, listing the counters.
pub(crate) fn counter_notes(ctx: &PortCtx, out: &mut Out) {
    for c in ctx.order.iter().filter(|c| c.def().is_health()) {
        let Some(s) = c.saturations.first() else {
            continue;
        };
        let judged = c.def().judged_by_soak();
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
    for c in ctx.order.iter().filter(|c| c.def().is_health()) {
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
