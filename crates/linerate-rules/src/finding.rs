//! Findings: stable id, severity, subject, evidence, message and fix.

use std::collections::BTreeMap;

use linerate_inventory::{Inventory, ProblemKind};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "info" => Some(Self::Info),
            "warning" => Some(Self::Warning),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// Where each fact came from → its value (`/sys/class/net/ib0/mode` → `datagram`).
pub type Evidence = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, e.g. `pcie.downtrained`.
    pub id: String,
    pub severity: Severity,
    /// A port name, a PCI address, or `host`.
    pub subject: String,
    pub evidence: Evidence,
    pub message: String,
    pub fix: String,
}

impl Finding {
    pub fn new(id: &str, severity: Severity, subject: impl Into<String>) -> Self {
        Self {
            id: id.to_string(),
            severity,
            subject: subject.into(),
            evidence: Evidence::new(),
            message: String::new(),
            fix: String::new(),
        }
    }

    #[must_use]
    pub fn evidence(mut self, key: impl Into<String>, value: impl std::fmt::Display) -> Self {
        self.evidence.insert(key.into(), value.to_string());
        self
    }

    #[must_use]
    pub fn message(mut self, m: impl Into<String>) -> Self {
        self.message = m.into();
        self
    }

    #[must_use]
    pub fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix = f.into();
        self
    }
}

/// Most severe first, then by subject and id, so output is stable.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.subject.cmp(&b.subject))
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// `sysfs.unreadable`: every value the inventory could not use.
pub fn unreadable(inv: &Inventory, out: &mut Vec<Finding>) {
    for p in &inv.problems {
        // A missing or unreadable file (an empty one included) is a gap in what probe can see,
        // not a fault of the machine; a malformed value may be a kernel or driver bug.
        let sev = match p.kind {
            ProblemKind::Missing | ProblemKind::Unreadable => Severity::Info,
            ProblemKind::Malformed => Severity::Warning,
        };
        let what = match p.kind {
            ProblemKind::Missing => "is missing",
            ProblemKind::Malformed => "is malformed",
            ProblemKind::Unreadable => "could not be read",
        };
        // Problems are recorded against `dev/port`; report them against the port's name.
        let subject = inv
            .ports
            .iter()
            .find(|port| {
                port.device
                    .as_deref()
                    .zip(port.port)
                    .is_some_and(|(d, n)| format!("{d}/{n}") == p.subject)
            })
            .map_or(p.subject.as_str(), |port| port.name.as_str());
        out.push(
            Finding::new("sysfs.unreadable", sev, subject)
                .evidence(&p.path, &p.detail)
                .message(format!(
                    "{} {what} ({}); the value is treated as unknown and the checks that need it are skipped",
                    p.path, p.detail
                ))
                .fix(match p.kind {
                    ProblemKind::Missing => "Nothing to fix if the kernel or driver does not provide this file; a newer kernel or driver may.",
                    ProblemKind::Malformed => "Check the kernel and driver versions; report the value to the linerate developers if the kernel really prints it.",
                    ProblemKind::Unreadable => "Run as a user that can read the file, or wake the device (a device in D3 returns errors); for a capture, read the file on the live system.",
                }),
        );
    }
}
