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
    // net.core.rmem_max and wmem_max belong to the initial network namespace: on kernels that
    // keep them there (Linux 6.1 is one) they are absent from /proc/sys in every other one (a
    // rank under `ip netns exec`, a container), where the initial namespace's limits still
    // apply. Absent beside the namespace's own tcp_rmem, they are unknown here, not unreadable.
    let per_netns = r.path("proc/sys/net/ipv4/tcp_rmem").exists();
    for (name, slot) in [
        ("rmem_max", &mut h.sockets.rmem_max),
        ("wmem_max", &mut h.sockets.wmem_max),
    ] {
        let p = r.path(&format!("proc/sys/net/core/{name}"));
        *slot = if per_netns {
            r.opt_parse(&p, HOST, "a byte count", num)
        } else {
            r.req_parse(&p, HOST, "a byte count", num)
        };
    }
    let p = r.path("proc/sys/net/ipv4/tcp_rmem");
    h.sockets.tcp_rmem = r.req_parse(&p, HOST, "three byte counts: min default max", triple);
    let p = r.path("proc/sys/net/ipv4/tcp_wmem");
    h.sockets.tcp_wmem = r.req_parse(&p, HOST, "three byte counts: min default max", triple);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn problems_of(root: &std::path::Path) -> (Host, Vec<String>) {
        let mut r = Root::new(root);
        let h = read(&mut r);
        (h, r.problems.iter().map(|p| p.path.clone()).collect())
    }

    #[test]
    fn a_network_namespace_without_core_socket_limits_is_no_unreadable_file() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "sys/devices/system/cpu/online", "0-1\n");
        write(
            d.path(),
            "proc/sys/net/ipv4/tcp_rmem",
            "4096 131072 6291456\n",
        );
        write(
            d.path(),
            "proc/sys/net/ipv4/tcp_wmem",
            "4096 16384 4194304\n",
        );
        let (h, problems) = problems_of(d.path());
        assert_eq!(h.sockets.rmem_max, None);
        assert_eq!(h.sockets.tcp_rmem, Some([4096, 131_072, 6_291_456]));
        assert!(problems.is_empty(), "{problems:?}");

        // The initial namespace has them: a missing one there is a problem named by its path.
        write(d.path(), "proc/sys/net/core/rmem_max", "212992\n");
        let (h, problems) = problems_of(d.path());
        assert_eq!(h.sockets.rmem_max, Some(212_992));
        assert!(problems.is_empty(), "{problems:?}");
        write(d.path(), "proc/sys/net/core/wmem_max", "lots\n");
        let (h, problems) = problems_of(d.path());
        assert_eq!(h.sockets.wmem_max, None);
        assert!(
            problems
                .iter()
                .any(|p| p.ends_with("proc/sys/net/core/wmem_max")),
            "{problems:?}"
        );
    }
}
