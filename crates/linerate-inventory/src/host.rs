//! Host facts that bound throughput: CPUs, governors, NUMA, socket buffer limits.

use linerate_facts::{parse_cpulist, Host, NumaNode};

use crate::fs::Root;

const HOST: &str = "host";

pub fn read(r: &mut Root) -> Host {
    let mut h = Host {
        hostname: Root::read_raw(&r.path("proc/sys/kernel/hostname"))
            .ok()
            .flatten(),
        kernel: Root::read_raw(&r.path("proc/sys/kernel/osrelease"))
            .ok()
            .flatten(),
        ..Host::default()
    };
    let online = r.path("sys/devices/system/cpu/online");
    h.cpus = r
        .req_parse(&online, HOST, "a CPU list like `0-7`", parse_cpulist)
        .unwrap_or_default();
    for cpu in &h.cpus {
        let dir = r.path(&format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
        if let Some(g) = r.opt(&dir.join("scaling_governor"), HOST) {
            if !g.is_empty() {
                h.governors.entry(g).or_default().push(*cpu);
            }
        }
        if h.scaling_driver.is_none() {
            h.scaling_driver = r.opt(&dir.join("scaling_driver"), HOST);
        }
    }
    let node_dir = r.path("sys/devices/system/node");
    for name in Root::list(&node_dir) {
        let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let p = node_dir.join(&name).join("cpulist");
        if let Some(cpus) = r.opt_parse(&p, HOST, "a CPU list like `0-13`", parse_cpulist) {
            h.numa_nodes.push(NumaNode { id, cpus });
        }
    }
    if let Ok(Some(status)) = Root::read_raw(&r.path("proc/self/status")) {
        h.allowed_cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(parse_cpulist);
    }
    let num = |s: &str| s.trim().parse::<u64>().ok();
    let triple = |s: &str| {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        <[u64; 3]>::try_from(v).ok()
    };
    let p = r.path("proc/sys/net/core/rmem_max");
    h.sockets.rmem_max = r.req_parse(&p, HOST, "a byte count", num);
    let p = r.path("proc/sys/net/core/wmem_max");
    h.sockets.wmem_max = r.req_parse(&p, HOST, "a byte count", num);
    let p = r.path("proc/sys/net/ipv4/tcp_rmem");
    h.sockets.tcp_rmem = r.req_parse(&p, HOST, "three byte counts: min default max", triple);
    let p = r.path("proc/sys/net/ipv4/tcp_wmem");
    h.sockets.tcp_wmem = r.req_parse(&p, HOST, "three byte counts: min default max", triple);
    h
}
