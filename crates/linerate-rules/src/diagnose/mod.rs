//! Doctor's rules: measured results set against the ceiling of their path.
//!
//! Pure: [`diagnose`] takes the facts of both ends ([`EndFacts`](linerate_facts::EndFacts),
//! which [`end_facts`] builds from an inventory) and the measured results ([`Measured`]), and
//! returns the findings, ranked, and a verdict.
//!
//! Shape:
//! - `context`: what the rules share, computed once (`Ctx`: the ends, the judged direction, its
//!   path ceiling and best result);
//! - `registry`: the table of rules, each once, in the order they run; a rule is the impl of its
//!   table type, in the module of its family, beside its tests: `path` (both ends' inventory,
//!   MTU, shapers, asymmetry), `cpu` (saturation, contention, the receiver's copy), `window`
//!   (socket buffers), `loss` (retransmits), `optics` (one end's Rx against the other's Tx), `fec` (the two ends' FEC modes), `qdisc` (drops and reordering the qdiscs counted),
//!   `rdma` (RDMA against TCP), `ceiling` (the bound beaten; reached or unexplained);
//! - `edits`: the named edits of one rule's findings by another's output;
//! - `verdict`: the one-line answer, from the findings and the rules' typed outputs.

mod ceiling;
mod context;
mod cpu;
mod edits;
mod fec;
mod input;
mod loss;
mod optics;
mod path;
mod qdisc;
mod rdma;
mod registry;
mod verdict;
mod window;

#[cfg(test)]
mod testing;

use linerate_facts::{DoctorVerdict, Finding};
use serde::Serialize;

use crate::finding::rank;
use context::Ctx;
use registry::{FactOutputs, FindingsOutputs, Found};
use verdict::Reading;

pub use context::{best_tcp, BestTcp};
pub use cpu::receiver_copy;
pub use input::{end_facts, DiagnoseInput, Measured};
pub use window::{WINDOW_CLEAR_PERCENT, WINDOW_LIMITED_PERCENT};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    pub verdict: DoctorVerdict,
    pub findings: Vec<Finding>,
    /// What was checked (listed in `unexplained`).
    pub checked: Vec<String>,
    /// The best TCP result of all, for the pyramid's network row ([`best_tcp`]).
    pub best_tcp: Option<BestTcp>,
}

/// Apply every doctor rule. Pure.
pub fn diagnose(i: &DiagnoseInput) -> Diagnosis {
    let c = Ctx::new(i);
    let facts = FactOutputs::run(&c);
    let found = Found {
        findings: edits::apply(&facts),
        checked: registry::checked(&facts.each()),
    };
    let judged = FindingsOutputs::run(&c, &found);
    let Found {
        mut findings,
        mut checked,
    } = found;
    for (_, out) in judged.each() {
        findings.extend(out.findings().iter().cloned());
    }
    checked.extend(registry::checked(&judged.each()));
    let verdict = verdict::verdict(&c, &findings, Reading::of(&c, &facts));
    rank(&mut findings);
    Diagnosis {
        verdict,
        findings,
        checked,
        best_tcp: best_tcp(i),
    }
}
