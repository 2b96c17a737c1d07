//! The rules of linerate: pure functions from an [`Inventory`] to the
//! ceiling of each port and a ranked list of [`Finding`]s.

mod ceilings;
pub mod diagnose;
mod finding;
mod host;
mod link;
mod pcie;
pub mod pyramid;
pub mod report;

use linerate_inventory::Inventory;
use linerate_model::Ceiling;
use serde::Serialize;

pub use ceilings::{ceiling_input, port_ceiling};
pub use diagnose::{
    diagnose, end_facts, CounterDelta, DiagnoseInput, Diagnosis, EndFacts, Measured, ShaperFact,
    Verdict,
};
pub use finding::{Cause, Evidence, Finding, FindingId, Severity};

/// A port with its ceiling.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortAnalysis {
    pub name: String,
    pub ceiling: Ceiling,
}

/// Everything the rules conclude from an inventory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub ports: Vec<PortAnalysis>,
    pub findings: Vec<Finding>,
}

impl Analysis {
    pub fn port(&self, name: &str) -> Option<&PortAnalysis> {
        self.ports.iter().find(|p| p.name == name)
    }

    /// The most severe finding, if any.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }
}

/// Apply every rule. Pure: the same inventory gives the same analysis.
pub fn analyze(inv: &Inventory) -> Analysis {
    let ports: Vec<PortAnalysis> = inv
        .ports
        .iter()
        .map(|p| PortAnalysis {
            name: p.name.clone(),
            ceiling: port_ceiling(inv, p),
        })
        .collect();
    let mut findings = Vec::new();
    pcie::rules(inv, &ports, &mut findings);
    link::rules(inv, &ports, &mut findings);
    host::rules(inv, &ports, &mut findings);
    finding::unreadable(inv, &mut findings);
    finding::rank(&mut findings);
    Analysis { ports, findings }
}
