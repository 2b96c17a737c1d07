//! What the inventory reader could not use.

use serde::{Deserialize, Serialize};

/// Why a value is unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The file does not exist.
    Missing,
    /// The file exists but its content is not in the expected format.
    Malformed,
    /// Reading failed (permission, EINVAL from a device in D3, not a regular file, ...),
    /// or the file is empty: the kernel never prints an empty value for the attributes we
    /// parse, and capture tools store an attribute they could not read as an empty file.
    Unreadable,
}

/// A value that could not be used. Reported as a `sysfs.unreadable` finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The port or PCI address the value belongs to.
    pub subject: String,
    /// Path as it would be on a live system (`/sys/class/...`).
    pub path: String,
    pub kind: ProblemKind,
    /// What was found and what was expected.
    pub detail: String,
}
