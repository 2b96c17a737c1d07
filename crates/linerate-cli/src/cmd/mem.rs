use std::path::Path;
use std::time::Duration;

use linerate_engine::mem::{measure_pinned, MemOp, MemResult};
use linerate_report::Style;
use linerate_results::mem::{DramPeak, MemReport, MemTest};

use crate::cli::MemArgs;
use crate::out::print;

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
    let report = MemReport {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        tests,
        dram: DramPeak::of(linerate_inventory::dram::dimms(Path::new("/"))),
    };
    if a.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        print(&s)?;
    } else {
        print(&linerate_report::render_mem(&report, style))?;
    }
    Ok(0)
}
