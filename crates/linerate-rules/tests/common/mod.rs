//! What the diagnose tests share: running the rules with their output printed, the findings
//! of one id, and the check that nothing puts a loss on the CPU.
#![allow(dead_code)] // each test file uses some of these

use linerate_facts::{Cause, Finding};
use linerate_rules::{diagnose, DiagnoseInput, Diagnosis};

/// The rules over `i`, the verdict and every finding printed under `name` (shown on failure).
pub fn run(name: &str, i: &DiagnoseInput) -> Diagnosis {
    let d = diagnose(i);
    println!("[{name}] verdict: {}", d.verdict.summary);
    println!(
        "[{name}]   gbps {} ceiling {} limited_by {}",
        d.verdict.gbps, d.verdict.ceiling_gbps, d.verdict.limited_by
    );
    for f in &d.findings {
        println!(
            "[{name}]   {:<7} {:<26} {:<28} {}",
            f.severity.as_str(),
            f.id,
            f.subject,
            f.message
        );
    }
    d
}

/// The findings with id `id`.
pub fn with_id<'a>(d: &'a Diagnosis, id: &str) -> Vec<&'a Finding> {
    d.findings.iter().filter(|f| f.id.as_str() == id).collect()
}

/// No finding and not the verdict put the loss (or the reordering) on the CPU.
pub fn blames_no_cpu(d: &Diagnosis) {
    for f in &d.findings {
        for words in ["CPU contention", "fell behind", "receives slower"] {
            assert!(!f.message.contains(words), "{}: {}", f.id, f.message);
        }
    }
    assert_ne!(d.verdict.limited_by, Cause::Cpu, "{}", d.verdict.summary);
}
