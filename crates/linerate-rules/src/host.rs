//! Host rules: NUMA placement, CPU frequency governor, TCP buffer limits.

use linerate_facts::{
    cpulist_string as cpulist, Finding, FindingId, Inventory, PortAnalysis, Severity,
};
use linerate_units::fmt_num;

/// Round trip assumed for a LAN path when none was measured.
pub const ASSUMED_RTT_US: f64 = 100.0;
/// Linux gives about half of a receive buffer to the window (tcp_adv_win_scale), so a
/// buffer should hold twice the bandwidth-delay product.
pub const BUFFER_TO_BDP: f64 = 2.0;

/// Bandwidth-delay product in bytes.
pub fn bdp_bytes(gbps: f64, rtt_us: f64) -> f64 {
    gbps * 1e9 * rtt_us * 1e-6 / 8.0
}

/// A byte count computed in floating point, as a size.
fn fmt_bytes(b: f64) -> String {
    linerate_units::fmt_bytes(b.round().max(0.0) as u64)
}

pub fn rules(inv: &Inventory, analysis: &[PortAnalysis], out: &mut Vec<Finding>) {
    numa(inv, out);
    governor(inv, out);
    let fastest = analysis
        .iter()
        .filter_map(|a| {
            let g = a.ceiling.potential_gbps.unwrap_or(a.ceiling.gbps);
            (g > 0.0).then_some((a.name.as_str(), g))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((name, gbps)) = fastest {
        tcp_buffers(inv, name, gbps, ASSUMED_RTT_US, out);
    }
}

fn numa(inv: &Inventory, out: &mut Vec<Finding>) {
    let Some(allowed) = &inv.host.allowed_cpus else {
        return;
    };
    if inv.host.numa_nodes.len() < 2 {
        return;
    }
    for f in &inv.pci {
        let Some(node) = f.numa_node else { continue };
        let node_cpus = inv
            .host
            .numa_nodes
            .iter()
            .find(|n| n.id == node)
            .map(|n| n.cpus.clone())
            .or_else(|| f.local_cpus.clone())
            .unwrap_or_default();
        if node_cpus.is_empty() || allowed.iter().any(|c| node_cpus.contains(c)) {
            continue;
        }
        let ports: Vec<&str> = inv
            .ports
            .iter()
            .filter(|p| p.pci.as_deref() == Some(f.address.as_str()))
            .map(|p| p.name.as_str())
            .collect();
        out.push(
            Finding::new(FindingId::NumaMismatch, Severity::Warning, &f.address)
                .evidence(format!("/sys/bus/pci/devices/{}/numa_node", f.address), node)
                .evidence("/proc/self/status Cpus_allowed_list", cpulist(allowed))
                .evidence(format!("/sys/devices/system/node/node{node}/cpulist"), cpulist(&node_cpus))
                .message(format!(
                    "{} ({}) hangs off NUMA node {node}, but this process may only run on CPUs of other nodes: every byte crosses the inter-socket link",
                    f.address,
                    ports.join(", ")
                ))
                .fix(format!(
                    "Run the application and benchmarks on node {node}: `numactl --cpunodebind={node} --membind={node} CMD` (or `linerate bench -A` with a CPU from {}), and point the NIC's IRQs there.",
                    cpulist(&node_cpus)
                )),
        );
    }
}

fn governor(inv: &Inventory, out: &mut Vec<Finding>) {
    let Some(cpus) = inv.host.governors.get("powersave") else {
        return;
    };
    let driver = inv.host.scaling_driver.as_deref().unwrap_or("unknown");
    let dynamic = matches!(
        driver,
        "intel_pstate" | "amd-pstate" | "amd-pstate-epp" | "intel_cpufreq"
    );
    let sev = if dynamic {
        Severity::Info
    } else {
        Severity::Warning
    };
    let msg = if dynamic {
        format!(
            "{} CPU(s) use the powersave governor of {driver}, which still scales the clock with load (like schedutil); latency and single-stream results can still suffer from ramp-up",
            cpus.len()
        )
    } else {
        format!(
            "{} CPU(s) use the powersave governor of {driver}, which pins the clock to its minimum: CPU-bound network streams run at a fraction of their speed",
            cpus.len()
        )
    };
    out.push(
        Finding::new(FindingId::CpuPowersave, sev, "host")
            .evidence("/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor", format!("powersave on CPUs {}", cpulist(cpus)))
            .evidence("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", driver)
            .message(msg)
            .fix("For benchmarks and busy links: `cpupower frequency-set -g performance` (or echo performance > /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor); tuned's `network-throughput` profile does the same."),
    );
}

/// `tcp.buffers_small` against a rate and a round trip. Also used by doctor with a measured RTT.
pub fn tcp_buffers(inv: &Inventory, port: &str, gbps: f64, rtt_us: f64, out: &mut Vec<Finding>) {
    let s = &inv.host.sockets;
    let need = BUFFER_TO_BDP * bdp_bytes(gbps, rtt_us);
    let mut short = Vec::new();
    if let Some([_, _, max]) = s.tcp_rmem {
        if (max as f64) < need {
            short.push(("/proc/sys/net/ipv4/tcp_rmem", max, "net.ipv4.tcp_rmem"));
        }
    }
    if let Some([_, _, max]) = s.tcp_wmem {
        if (max as f64) < need {
            short.push(("/proc/sys/net/ipv4/tcp_wmem", max, "net.ipv4.tcp_wmem"));
        }
    }
    if short.is_empty() {
        return;
    }
    let target = (need as u64).next_power_of_two();
    let mut f = Finding::new(FindingId::TcpBuffersSmall, Severity::Warning, "host")
        .evidence("ceiling.gbps", format!("{} ({port})", fmt_num(gbps)))
        .evidence(
            "rtt_us",
            format!("{} (assumed LAN round trip)", fmt_num(rtt_us)),
        );
    for (path, max, _) in &short {
        f = f.evidence(*path, format!("max {max}"));
    }
    if let Some(r) = s.rmem_max {
        f = f.evidence("/proc/sys/net/core/rmem_max", r);
    }
    if let Some(w) = s.wmem_max {
        f = f.evidence("/proc/sys/net/core/wmem_max", w);
    }
    let names: Vec<String> = short
        .iter()
        .map(|(_, m, n)| format!("{n} max {}", fmt_bytes(*m as f64)))
        .collect();
    let window = short.iter().map(|(_, m, _)| *m).min().unwrap_or(0) as f64 / BUFFER_TO_BDP;
    let cap = window * 8.0 / (rtt_us * 1e-6) / 1e9;
    out.push(
        f.message(format!(
            "{}: at {} Gb/s and a {} µs round trip one TCP stream needs about {} of buffer (twice the {} bandwidth-delay product); with these limits one stream tops out near {} Gb/s",
            names.join(", "),
            fmt_num(gbps),
            fmt_num(rtt_us),
            fmt_bytes(need),
            fmt_bytes(bdp_bytes(gbps, rtt_us)),
            fmt_num(linerate_units::r1(cap))
        ))
        .fix(format!(
            "sysctl -w net.core.rmem_max={target} net.core.wmem_max={target} net.ipv4.tcp_rmem='4096 131072 {target}' net.ipv4.tcp_wmem='4096 16384 {target}' (persist in /etc/sysctl.d/90-linerate.conf)"
        )),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdp() {
        // 40 Gb/s × 100 µs = 500 KB (sysfs-kb row 14).
        assert!((bdp_bytes(40.0, 100.0) - 500_000.0).abs() < 1e-6);
        assert!((bdp_bytes(40.0, 1000.0) - 5_000_000.0).abs() < 1e-6);
    }
}
