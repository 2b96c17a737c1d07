//! The rules of linerate: pure functions from an [`Inventory`] to the ceiling of each port and a
//! ranked list of findings (`linerate_facts::Finding`), from an inventory to the facts of one end,
//! and from measured results to doctor's verdict ([`diagnose()`]).

mod ceilings;
pub mod diagnose;
pub mod disturbance;
mod finding;
mod host;
mod link;
mod pcie;
pub mod phy;
pub mod pyramid;
pub mod roce;
pub mod stack;
pub mod thresholds;

use linerate_facts::{Analysis, Inventory, PortAnalysis};

pub use ceilings::{ceiling_input, port_ceiling};
pub use diagnose::{diagnose, end_facts, DiagnoseInput, Diagnosis, Measured};

/// Apply every rule. Pure: the same inventory gives the same analysis.
pub fn analyze(inv: &Inventory) -> Analysis {
    let ports: Vec<PortAnalysis> = inv
        .ports
        .iter()
        .zip(roce::views(inv))
        .map(|(p, roce)| PortAnalysis {
            name: p.name.clone(),
            ceiling: port_ceiling(inv, p),
            roce,
        })
        .collect();
    let mut findings = Vec::new();
    pcie::rules(inv, &ports, &mut findings);
    link::rules(inv, &ports, &mut findings);
    host::rules(inv, &ports, &mut findings);
    phy::rules(inv, &ports, &mut findings);
    roce::rules(inv, &ports, &mut findings);
    stack::rules(inv, &mut findings);
    finding::unreadable(inv, &mut findings);
    finding::rank(&mut findings);
    Analysis { ports, findings }
}
