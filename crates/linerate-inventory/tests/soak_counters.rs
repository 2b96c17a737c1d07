//! The soak's counter sampling: on a copy of a fixture tree whose files the test changes
//! between samples, and the driver statistics through the real SIOCETHTOOL ioctl on a veth
//! pair in namespaces the test creates, as root and as a user without root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use linerate_facts::CounterSource;
use linerate_inventory::counters::{soak_targets, CounterSampler};
use linerate_proto::soak::{End, PortSample, SoakPortKind};
use linerate_testkit::is_root;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name)
}

/// A private copy of a fixture tree (relative symlinks kept), which the test may change.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new("cp")
        .arg("-a")
        .arg(fixture(name).join("."))
        .arg(dir.path())
        .output()
        .expect("run cp");
    assert!(out.status.success(), "cp -a: {out:?}");
    dir
}

fn value(p: &PortSample, src: CounterSource, name: &str) -> Option<u64> {
    p.counters
        .iter()
        .find(|(s, n, _)| *s == src && n == name)
        .map(|(_, _, v)| *v)
}

fn sampler(root: &Path) -> CounterSampler {
    let inv = linerate_inventory::probe(root).expect("probe the fixture");
    CounterSampler::new(root, soak_targets(&inv, &[]))
}

#[test]
fn ib_port_counters_follow_the_files() {
    let tree = copy_fixture("cx3-fdr-at-qdr-datagram");
    let root = tree.path();
    std::fs::create_dir_all(root.join("proc/net")).unwrap();
    std::fs::write(
        root.join("proc/net/snmp"),
        "Tcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 7 0\n",
    )
    .unwrap();
    let mut s = sampler(root);
    let t = s.targets().to_vec();
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!((t[0].device.as_str(), t[0].port.as_str()), ("mlx4_0", "1"));

    let a = s.sample(End::Local, 0, 0.0);
    assert_eq!(a.end, End::Local);
    assert_eq!(a.tcp_retrans_segs, Some(7));
    // No /proc/net/netstat in the tree: none of its counters, and no problem said.
    assert!(a.host.is_empty(), "{a:?}");
    assert!(!a.problems.iter().any(|p| p.contains("netstat")), "{a:?}");
    // TCP's spurious retransmits come from /proc/net/netstat's `TcpExt:` lines, beside them.
    std::fs::write(
        root.join("proc/net/netstat"),
        "TcpExt: SyncookiesSent TCPDSACKRecv TCPDSACKRecvSegs\nTcpExt: 0 3 5\n\
         IpExt: InNoRoutes\nIpExt: 0\n",
    )
    .unwrap();
    let b = s.sample(End::Local, 1, 1.0);
    let host: Vec<(&str, u64)> = b.host.iter().map(|(_, n, v)| (n.as_str(), *v)).collect();
    assert_eq!(
        host,
        [("TcpExtTCPDSACKRecvSegs", 5), ("TcpExtTCPDSACKRecv", 3)]
    );
    assert!(b.host.iter().all(|(s, ..)| *s == CounterSource::Snmp));
    let p = &a.ports[0];
    assert_eq!(p.netdev.as_deref(), Some("ib0"));
    match &p.kind {
        SoakPortKind::Infiniband {
            speed,
            signalling_gbps,
        } => {
            assert_eq!(speed.as_deref(), Some("QDR"));
            // 4 lanes × 10 Gb/s signalling.
            assert!((signalling_gbps.unwrap() - 40.0).abs() < 1e-9);
        }
        k @ SoakPortKind::Ethernet { .. } => panic!("kind {k:?}"),
    }
    let sym0 = value(p, CounterSource::IbCounters, "symbol_error").expect("symbol_error read");
    assert!(value(p, CounterSource::NetdevStatistics, "rx_bytes").is_some());
    // A fixture root: the ioctl is skipped, said once.
    let notes = |x: &linerate_proto::soak::SoakSample| {
        x.problems.iter().filter(|m| m.contains("ethtool")).count()
    };
    assert_eq!(notes(&a), 1, "{:?}", a.problems);

    let counters = root.join("sys/class/infiniband/mlx4_0/ports/1/counters");
    std::fs::write(counters.join("symbol_error"), format!("{}\n", sym0 + 500)).unwrap();
    std::fs::write(counters.join("link_downed"), "garbage\n").unwrap();
    std::fs::remove_file(counters.join("port_xmit_wait")).unwrap();
    let b = s.sample(End::Local, 1, 0.5);
    let p = &b.ports[0];
    assert_eq!(
        value(p, CounterSource::IbCounters, "symbol_error"),
        Some(sym0 + 500)
    );
    assert_eq!(
        notes(&b),
        0,
        "the ethtool note is given once: {:?}",
        b.problems
    );
    assert!(
        b.problems.iter().any(|m| m
            .contains("/sys/class/infiniband/mlx4_0/ports/1/counters/link_downed")
            && m.contains("garbage")),
        "{:?}",
        b.problems
    );
    assert!(
        b.problems
            .iter()
            .any(|m| m.contains("port_xmit_wait") && m.contains("vanished")),
        "{:?}",
        b.problems
    );
    assert_eq!(b.seq, 1);
}

#[test]
fn ethernet_port_reads_statistics_and_carrier() {
    let tree = copy_fixture("cx3-fdr-eth40");
    let root = tree.path();
    let mut s = sampler(root);
    let a = s.sample(End::Remote, 0, 0.0);
    assert_eq!(a.end, End::Remote);
    let p = a
        .ports
        .iter()
        .find(|p| p.netdev.as_deref() == Some("enp4s0"))
        .expect("the RoCE port");
    assert!(
        matches!(p.kind, SoakPortKind::Ethernet { roce: true, .. }),
        "{:?}",
        p.kind
    );
    assert!(value(p, CounterSource::NetdevStatistics, "rx_bytes").is_some());
    let carrier = root.join("sys/class/net/enp4s0/carrier_changes");
    std::fs::write(&carrier, "9\n").unwrap();
    let b = s.sample(End::Remote, 1, 1.0);
    let p = b
        .ports
        .iter()
        .find(|p| p.netdev.as_deref() == Some("enp4s0"))
        .unwrap();
    assert_eq!(value(p, CounterSource::Carrier, "carrier_changes"), Some(9));
}

/// Run by the parent test through `ip netns exec` (and `setpriv`): prints the statistics
/// the ioctl gives for `LINERATE_ETHTOOL_CHILD` as `@@ name=value` lines.
fn child(iface: &str) {
    let mut s = CounterSampler::new(
        Path::new("/"),
        vec![linerate_inventory::counters::SoakTarget {
            device: iface.to_string(),
            port: String::new(),
            netdev: Some(iface.to_string()),
            rdma: false,
            infiniband: false,
            ..Default::default()
        }],
    );
    let x = s.sample(End::Local, 0, 0.0);
    // The harness prints `test NAME ... ` without a newline first: the lines are marked.
    println!();
    for p in &x.problems {
        println!("@@ problem={p}");
    }
    for (src, n, v) in &x.ports[0].counters {
        if *src == CounterSource::Ethtool {
            println!("@@ {n}={v}");
        }
    }
}

fn run(prog: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{prog} {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Removes the namespaces it names (and with them the veth pair) on drop.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

/// Statistics of `iface` in `ns` read by this test binary re-run there, optionally through
/// `setpriv` as nobody: (name, value) pairs and problems.
fn stats_in(ns: &str, iface: &str, unprivileged: bool) -> Result<Vec<(String, String)>, String> {
    let exe = std::env::current_exe().expect("the test binary");
    // nobody runs a copy in a directory open to all: the target directory may sit under one
    // closed to other users (a clone in a 0700 directory, /root).
    let copy_dir = tempfile::tempdir().expect("a temporary directory");
    let exe = if unprivileged {
        use std::os::unix::fs::PermissionsExt;
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(copy_dir.path(), open.clone())
            .expect("chmod the copy's directory");
        let copy = copy_dir.path().join("soak_counters");
        std::fs::copy(&exe, &copy).expect("copy the test binary");
        std::fs::set_permissions(&copy, open).expect("chmod the copy");
        copy
    } else {
        exe
    };
    let exe = exe.to_str().expect("a UTF-8 path");
    let mut args = vec!["netns", "exec", ns];
    if unprivileged {
        args.extend([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    let var = format!("LINERATE_ETHTOOL_CHILD={iface}");
    args.extend(["env", var.as_str()]);
    args.extend([
        exe,
        "--exact",
        "ethtool_stats_on_veth",
        "--nocapture",
        "--test-threads=1",
    ]);
    let out = run("ip", &args)?;
    Ok(out
        .lines()
        .filter_map(|l| l.strip_prefix("@@ ")?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

#[test]
fn ethtool_stats_on_veth() {
    if let Ok(iface) = std::env::var("LINERATE_ETHTOOL_CHILD") {
        child(&iface);
        return;
    }
    if !is_root() {
        linerate_testkit::skip("needs root for ip netns");
        return;
    }
    let pid = std::process::id();
    let ns = Namespaces(vec![format!("lrs-{pid}-a"), format!("lrs-{pid}-b")]);
    let (va, vb) = (format!("lrs{pid}a"), format!("lrs{pid}b"));
    for ns in &ns.0 {
        if let Err(e) = run("ip", &["netns", "add", ns]) {
            linerate_testkit::skip(format_args!("cannot create a network namespace: {e}"));
            return;
        }
    }
    let (a, b) = (ns.0[0].as_str(), ns.0[1].as_str());
    if let Err(e) = run(
        "ip",
        &[
            "-n", a, "link", "add", &va, "type", "veth", "peer", "name", &vb, "netns", b,
        ],
    ) {
        linerate_testkit::skip(format_args!("cannot create a veth pair: {e}"));
        return;
    }
    for args in [
        vec!["-n", a, "link", "set", &va, "up"],
        vec!["-n", b, "link", "set", &vb, "up"],
    ] {
        run("ip", &args).unwrap();
    }
    // veth's peer_ifindex is the ifindex of the other end, in its own namespace.
    let peer_ifindex = run(
        "ip",
        &[
            "netns",
            "exec",
            b,
            "cat",
            &format!("/sys/class/net/{vb}/ifindex"),
        ],
    )
    .unwrap()
    .trim()
    .to_string();

    let root_stats = stats_in(a, &va, false).unwrap();
    let find =
        |s: &[(String, String)], k: &str| s.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(
        find(&root_stats, "peer_ifindex").as_deref(),
        Some(peer_ifindex.as_str()),
        "{root_stats:?}"
    );
    assert!(
        root_stats.iter().any(|(n, _)| n.starts_with("rx_queue_0_")),
        "per-queue counters: {root_stats:?}"
    );
    assert!(find(&root_stats, "problem").is_none(), "{root_stats:?}");

    if run("setpriv", &["--version"]).is_err() {
        linerate_testkit::skip("setpriv (util-linux) is not installed");
        return;
    }
    match stats_in(a, &va, true) {
        Ok(nobody) => {
            assert_eq!(
                find(&nobody, "peer_ifindex").as_deref(),
                Some(peer_ifindex.as_str()),
                "as nobody: {nobody:?}"
            );
            assert_eq!(nobody.len(), root_stats.len(), "{nobody:?}");
        }
        Err(e) if e.contains("Permission denied") => {
            linerate_testkit::skip(format_args!(
                "the test binary cannot be run as nobody here: {e}"
            ));
        }
        Err(e) => panic!("as nobody: {e}"),
    }
}

/// Run by `netlink_and_files_read_the_same_on_veth` through `ip netns exec`: samples `iface`
/// both ways (the rtnetlink dump, and every file), and with a file opened once across traffic
/// it makes itself (a ping to `peer`), printing what it found as `@@ key=value` lines.
fn same_child(iface: &str, peer: &str) {
    let target = || {
        vec![linerate_inventory::counters::SoakTarget {
            device: iface.to_string(),
            port: String::new(),
            netdev: Some(iface.to_string()),
            rdma: false,
            infiniband: false,
            ..Default::default()
        }]
    };
    let mut dump = CounterSampler::new(Path::new("/"), target());
    let mut files = CounterSampler::new(Path::new("/"), target()).without_netlink();
    println!();
    println!("@@ netlink={}", dump.reads_netlink());
    println!("@@ files_netlink={}", files.reads_netlink());
    let netdev = |s: &linerate_proto::soak::SoakSample| -> Vec<(CounterSource, String, u64)> {
        s.ports[0]
            .counters
            .iter()
            .filter(|(src, ..)| *src != CounterSource::Ethtool)
            .cloned()
            .collect()
    };
    // The files, opened at the first sample, read again after traffic: pread from 0 on sysfs
    // gives the value of that moment.
    let before = files.sample(End::Local, 0, 0.0);
    let ping = Command::new("ping")
        .args(["-c", "3", "-i", "0.2", "-W", "1", peer])
        .stdout(Stdio::null())
        .status();
    println!("@@ ping={}", ping.is_ok_and(|s| s.success()));
    let after = files.sample(End::Local, 1, 1.0);
    let get = |s: &[(CounterSource, String, u64)], n: &str| {
        s.iter()
            .find(|(_, name, _)| name == n)
            .map_or(0, |(_, _, v)| *v)
    };
    println!(
        "@@ tx_packets_rose={}",
        get(&netdev(&after), "tx_packets") > get(&netdev(&before), "tx_packets")
    );
    // Both ways at the same moment: a dump, the files, a dump again; the same when nothing
    // moved meanwhile (a bounded number of tries: the link is quiet but for this test).
    for attempt in 0..5u64 {
        let a = dump.sample(End::Local, 2 * attempt, 0.0);
        let b = files.sample(End::Local, 2 + attempt, 0.0);
        let a2 = dump.sample(End::Local, 2 * attempt + 1, 0.0);
        if netdev(&a) != netdev(&a2) {
            continue;
        }
        println!("@@ counters={}", netdev(&a).len());
        println!("@@ kind_same={}", a.ports[0].kind == b.ports[0].kind);
        if netdev(&a) == netdev(&b) {
            println!("@@ same=true");
        } else {
            println!("@@ same=false");
            println!("@@ dump={:?}", netdev(&a));
            println!("@@ files={:?}", netdev(&b));
        }
        return;
    }
    println!("@@ same=unsettled");
}

#[test]
fn netlink_and_files_read_the_same_on_veth() {
    if let (Ok(iface), Ok(peer)) = (
        std::env::var("LINERATE_SAME_CHILD"),
        std::env::var("LINERATE_SAME_PEER"),
    ) {
        same_child(&iface, &peer);
        return;
    }
    if !is_root() {
        linerate_testkit::skip("needs root for ip netns");
        return;
    }
    let pid = std::process::id();
    let ns = Namespaces(vec![format!("lrn-{pid}-a"), format!("lrn-{pid}-b")]);
    let (va, vb) = (format!("lrn{pid}a"), format!("lrn{pid}b"));
    for ns in &ns.0 {
        if let Err(e) = run("ip", &["netns", "add", ns]) {
            linerate_testkit::skip(format_args!("cannot create a network namespace: {e}"));
            return;
        }
    }
    let (a, b) = (ns.0[0].as_str(), ns.0[1].as_str());
    if let Err(e) = run(
        "ip",
        &[
            "-n", a, "link", "add", &va, "type", "veth", "peer", "name", &vb, "netns", b,
        ],
    ) {
        linerate_testkit::skip(format_args!("cannot create a veth pair: {e}"));
        return;
    }
    for args in [
        // No IPv6 on the pair: nothing but this test's pings moves its counters.
        vec![
            "netns",
            "exec",
            a,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ],
        vec![
            "netns",
            "exec",
            b,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ],
        vec!["-n", a, "addr", "add", "198.18.0.1/30", "dev", &va],
        vec!["-n", b, "addr", "add", "198.18.0.2/30", "dev", &vb],
        vec!["-n", a, "link", "set", &va, "up"],
        vec!["-n", b, "link", "set", &vb, "up"],
    ] {
        run("ip", &args).unwrap();
    }
    let exe = std::env::current_exe().expect("the test binary");
    let (var, peer) = (
        format!("LINERATE_SAME_CHILD={va}"),
        "LINERATE_SAME_PEER=198.18.0.2".to_string(),
    );
    let out = run(
        "ip",
        &[
            "netns",
            "exec",
            a,
            "env",
            &var,
            &peer,
            exe.to_str().expect("a UTF-8 path"),
            "--exact",
            "netlink_and_files_read_the_same_on_veth",
            "--nocapture",
            "--test-threads=1",
        ],
    )
    .unwrap();
    let got: Vec<(&str, &str)> = out
        .lines()
        .filter_map(|l| l.strip_prefix("@@ ")?.split_once('='))
        .collect();
    let find = |k: &str| got.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    assert_eq!(find("netlink"), Some("true"), "{out}");
    assert_eq!(find("files_netlink"), Some("false"), "{out}");
    assert_eq!(find("ping"), Some("true"), "{out}");
    assert_eq!(find("tx_packets_rose"), Some("true"), "{out}");
    assert_eq!(find("same"), Some("true"), "{out}");
    assert_eq!(find("kind_same"), Some("true"), "{out}");
    // The 24 statistics of a current kernel and the three carrier counts.
    let n: usize = find("counters").and_then(|v| v.parse().ok()).unwrap_or(0);
    assert!(n >= 26, "{out}");
}

#[test]
fn phy_gauges_are_read_every_period_with_their_thresholds() {
    // A hot NIC (hwmon) and a QSFP-DD over its temperature warning (module diagnostics).
    for (name, want_sensor, want_module) in [
        ("cx5-100g-dac-no-fec-hot", true, false),
        ("cx7-400g-qsfp-dd-hot-module", false, true),
    ] {
        let root = fixture(name);
        let inv = linerate_inventory::probe(&root).unwrap();
        let targets = soak_targets(&inv, &[]);
        assert_eq!(
            (
                targets.iter().any(|t| t.hwmon_pci.is_some()),
                targets.iter().any(|t| t.module_diagnostics)
            ),
            (want_sensor, want_module),
            "{name}: {targets:?}"
        );
        let mut s = CounterSampler::new(&root, targets);
        let gauges = |x: &linerate_proto::soak::SoakSample| {
            x.ports
                .iter()
                .filter_map(|p| p.phy.clone())
                .collect::<Vec<_>>()
        };
        let first = gauges(&s.sample(End::Local, 0, 0.0));
        assert!(
            !first.is_empty(),
            "{name}: no PHY gauges in the first sample"
        );
        let hottest = first
            .iter()
            .filter_map(linerate_facts::PhyGauges::hottest)
            .max_by(|a, b| a.level.cmp(&b.level))
            .expect("a temperature");
        assert!(
            hottest.level >= linerate_facts::Level::HighWarning,
            "{name}: the fixture is hot: {hottest:?}"
        );
        if want_module {
            assert_eq!(hottest.what, "module", "{name}");
            assert!(first.iter().any(|g| g.weakest_rx().is_some()), "{name}");
        } else {
            assert!(first.iter().any(|g| !g.sensors.is_empty()), "{name}");
        }
        // Not again within the period; again after it.
        assert!(gauges(&s.sample(End::Local, 1, 1.0)).is_empty(), "{name}");
        assert!(gauges(&s.sample(End::Local, 2, 9.5)).is_empty(), "{name}");
        assert_eq!(gauges(&s.sample(End::Local, 3, 10.5)), first, "{name}");
    }
}
