//! What the rules conclude from an inventory (`linerate_rules::analyze`).

use linerate_model::Ceiling;
use serde::{Deserialize, Serialize};

use crate::{Finding, Severity};

/// A port with its ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortAnalysis {
    pub name: String,
    pub ceiling: Ceiling,
    /// A RoCE port: its MTU, GIDs and the path of its traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roce: Option<crate::RoceView>,
}

/// Everything the rules conclude from an inventory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
