use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use linerate_engine::mem::{measure_pinned, MemOp, MemResult};
use linerate_report::Style;
use serde::Serialize;

use crate::cli::MemArgs;
use crate::out::print;

#[derive(Debug, Serialize)]
struct MemTest {
    kind: &'static str,
    threads: usize,
    /// NUMA node the threads and their memory were bound to, when measured per node.
    node: Option<u32>,
    buffer_bytes: usize,
    bytes: u64,
    seconds: f64,
    /// 10^9 bytes/s.
    gb_per_s: f64,
    /// 10^9 bit/s, to set beside the network.
    gbps: f64,
}

fn test(r: &MemResult, node: Option<u32>) -> MemTest {
    MemTest {
        kind: r.op.as_str(),
        threads: r.threads,
        node,
        buffer_bytes: r.buffer_bytes,
        bytes: r.bytes,
        seconds: linerate_units::r3(r.seconds),
        gb_per_s: linerate_units::r2(r.gb_per_s()),
        gbps: linerate_units::r1(r.gb_per_s() * 8.0),
    }
}

pub fn run(a: &MemArgs, style: Style) -> anyhow::Result<u8> {
    let inv = linerate_inventory::probe(Path::new("/"))?;
    let cpus: Vec<usize> = inv.host.cpus.iter().map(|c| *c as usize).collect();
    let threads = a.threads.map_or(cpus.len().max(1), |t| t as usize);
    let len = a.size as usize;
    let free = linerate_engine::sys::available_memory_bytes();
    // Copy needs two buffers per thread: refuse what does not fit comfortably.
    let need = (2 * len * threads) as u64;
    if free.is_some_and(|f| need > f / 2) {
        anyhow::bail!(
            "--size {len} × 2 buffers × {threads} threads = {need} bytes, more than half of the {} bytes available: use a smaller --size",
            free.unwrap_or(0)
        );
    }
    let d = Duration::from_millis(a.time.max(100));
    let mut tests = Vec::new();
    for op in [MemOp::Copy, MemOp::Read, MemOp::Write] {
        tests.push(test(&measure_pinned(op, 1, &[], len, d), None));
        if threads > 1 {
            tests.push(test(&measure_pinned(op, threads, &cpus, len, d), None));
        }
    }
    if inv.host.numa_nodes.len() > 1 {
        for n in &inv.host.numa_nodes {
            let node_cpus: Vec<usize> = n.cpus.iter().map(|c| *c as usize).collect();
            if node_cpus.is_empty() {
                continue;
            }
            let r = measure_pinned(MemOp::Copy, node_cpus.len(), &node_cpus, len, d);
            tests.push(test(&r, Some(n.id)));
        }
    }
    let dimms = linerate_inventory::dram::dimms(Path::new("/"));
    let peak: f64 = dimms
        .iter()
        .map(linerate_inventory::dram::Dimm::peak_gb_per_s)
        .sum();
    if a.json {
        let doc = serde_json::json!({
            "schema_version": linerate_facts::SCHEMA_VERSION,
            "tests": tests,
            "dram": {
                "dimms": dimms,
                // Upper bound: every DIMM on its own channel.
                "theoretical_gb_per_s": (peak > 0.0).then_some(linerate_units::r1(peak)),
            },
        });
        let mut s = serde_json::to_string_pretty(&doc)?;
        s.push('\n');
        print(&s)?;
        return Ok(0);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}",
        style.bold("linerate mem: memory bandwidth (GB/s = 10^9 bytes/s)")
    );
    for t in &tests {
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
    if peak > 0.0 {
        let _ = writeln!(
            out,
            "    theoretical DRAM peak            {peak:>8.1} GB/s   ({} DIMMs at {} MT/s; assumes one DIMM per channel)",
            dimms.len(),
            dimms.iter().map(|d| d.speed_mts).max().unwrap_or(0)
        );
    } else {
        let _ = writeln!(out, "    {}", style.dim("theoretical DRAM peak unknown: no SMBIOS memory records with a speed (needs root; VMs rarely have them)"));
    }
    print(&out)?;
    Ok(0)
}
