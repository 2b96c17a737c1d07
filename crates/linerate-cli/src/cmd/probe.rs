use anyhow::Context;
use linerate_report::Style;

use crate::cli::ProbeArgs;
use crate::out::print;

pub fn run(a: &ProbeArgs, style: Style) -> anyhow::Result<u8> {
    let inv = linerate_inventory::probe(&a.root)?;
    let analysis = linerate_rules::analyze(&inv);
    let root = a.root.display().to_string();
    if a.json {
        let doc = linerate_report::probe_doc(&inv, &analysis, &root);
        let mut s = serde_json::to_string_pretty(&doc).context("encoding JSON")?;
        s.push('\n');
        print(&s)?;
    } else {
        print(&linerate_report::render_probe(&inv, &analysis, style))?;
    }
    if inv.ports.is_empty() && !a.json {
        eprintln!(
            "linerate: no network interfaces under {root} (expected entries in {root}/sys/class/net or {root}/sys/class/infiniband)"
        );
    }
    let failed = super::fail_threshold(a.fail_on)
        .is_some_and(|t| analysis.findings.iter().any(|f| f.severity >= t));
    Ok(if failed { super::EXIT_FINDINGS } else { 0 })
}
