//! `linerate mem`'s terminal text.

use std::fmt::Write as _;

use linerate_results::mem::MemReport;

use crate::Style;

/// One line per measurement, then the theoretical DRAM peak (or why it is unknown).
pub fn render_mem(r: &MemReport, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        style.bold("linerate mem: memory bandwidth (GB/s = 10^9 bytes/s)")
    );
    for t in &r.tests {
        let what = match t.node {
            Some(n) => format!("{} on node {n}, {} threads", t.kind, t.threads),
            None => format!(
                "{}, {} thread{}",
                t.kind,
                t.threads,
                if t.threads == 1 { "" } else { "s" }
            ),
        };
        let _ = writeln!(
            out,
            "    {what:<32} {:>8.2} GB/s   = {:>7.1} Gb/s",
            t.gb_per_s, t.gbps
        );
    }
    match r.dram.theoretical_gb_per_s {
        Some(peak) => {
            let _ = writeln!(
                out,
                "    theoretical DRAM peak            {peak:>8.1} GB/s   ({} DIMMs at {} MT/s; assumes one DIMM per channel)",
                r.dram.dimms.len(),
                r.dram.dimms.iter().map(|d| d.speed_mts).max().unwrap_or(0)
            );
        }
        None => {
            let _ = writeln!(out, "    {}", style.dim("theoretical DRAM peak unknown: no SMBIOS memory records with a speed (needs root; VMs rarely have them)"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::Dimm;
    use linerate_results::mem::{DramPeak, MemTest};

    fn t(kind: &'static str, threads: usize, node: Option<u32>, gb: f64) -> MemTest {
        MemTest {
            kind,
            threads,
            node,
            buffer_bytes: 1 << 26,
            bytes: 1 << 30,
            seconds: 0.2,
            gb_per_s: gb,
            gbps: gb * 8.0,
        }
    }

    #[test]
    fn every_measurement_and_the_peak_are_shown() {
        let dimms = vec![
            Dimm {
                size_mib: 16384,
                data_width_bits: 64,
                speed_mts: 3200,
            };
            2
        ];
        let r = MemReport {
            schema_version: linerate_facts::SCHEMA_VERSION,
            tool: linerate_facts::TOOL,
            tests: vec![
                t("mem_copy", 1, None, 12.5),
                t("mem_copy", 8, Some(1), 40.0),
            ],
            dram: DramPeak::of(dimms),
        };
        let s = render_mem(&r, Style::PLAIN);
        assert!(
            s.contains("mem_copy, 1 thread                  12.50 GB/s   =   100.0 Gb/s"),
            "{s}"
        );
        assert!(s.contains("mem_copy on node 1, 8 threads"), "{s}");
        assert!(
            s.contains("theoretical DRAM peak                51.2 GB/s   (2 DIMMs at 3200 MT/s"),
            "{s}"
        );
        let none = MemReport {
            dram: DramPeak::of(Vec::new()),
            ..r
        };
        assert!(render_mem(&none, Style::PLAIN).contains("peak unknown"));
    }
}
