//! What the rules do with findings: rank them, and turn the inventory's problems into
//! `sysfs.unreadable`. The finding types are `linerate_facts`'s.

use linerate_facts::{Finding, FindingId, Inventory, ProblemKind, Severity};

/// Most severe first; among equals, what stops a test from running at all (the RDMA stack's
/// missing pieces) first; then by subject and id, so output is stable.
pub fn rank(findings: &mut [Finding]) {
    let stops = |f: &Finding| {
        matches!(
            f.id,
            FindingId::RdmaNoUverbs
                | FindingId::RdmaNoRdmaCm
                | FindingId::RdmaNoVerbsProvider
                | FindingId::RdmaNoLibfabricVerbs
                | FindingId::RdmaMemlockLow
        )
    };
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| stops(b).cmp(&stops(a)))
            .then_with(|| a.subject.cmp(&b.subject))
            .then_with(|| a.id.as_str().cmp(b.id.as_str()))
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
            Finding::new(FindingId::SysfsUnreadable, sev, subject)
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
