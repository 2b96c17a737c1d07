//! doctor's rules on InfiniBand (and other hardware) paths that cannot run here: the facts of
//! both ends come from the fixture trees under `fixtures/sysfs`, the bench results are injected
//! as [`Measured`] values. Each test prints the verdict (`--nocapture`).

use std::path::{Path, PathBuf};

use linerate_facts::{CounterDelta, EndFacts, Finding, Inventory, IpoibMode, Severity, ShaperFact};
use linerate_model::{host_stack_ceiling, HostStackCeiling, HostStackInput};
use linerate_proto::{Direction, RdmaOp, TestKind};
mod common;

use common::{run, with_id};
use linerate_rules::{end_facts, DiagnoseInput, Diagnosis, Measured};

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(case)
}

fn inventory(case: &str) -> Inventory {
    linerate_inventory::probe(&fixture(case)).unwrap_or_else(|e| panic!("probe {case}: {e}"))
}

/// The facts of one end: `netdev` of fixture `case`.
fn facts(case: &str, netdev: &str) -> EndFacts {
    facts_with(case, netdev, Vec::new())
}

fn facts_with(case: &str, netdev: &str, shapers: Vec<ShaperFact>) -> EndFacts {
    let inv = inventory(case);
    assert!(
        inv.ports
            .iter()
            .any(|p| p.netdev.as_deref() == Some(netdev)),
        "{case}: no port with netdev {netdev}"
    );
    let f = end_facts(&inv, Some(netdev), shapers);
    assert_eq!(f.netdev.as_deref(), Some(netdev));
    f
}

/// The IB device behind `netdev` (`mlx5_0`), to name counters as doctor does (`mlx5_0/1 name`).
fn ib_port_of(case: &str, netdev: &str) -> String {
    let inv = inventory(case);
    let p = inv
        .ports
        .iter()
        .find(|p| p.netdev.as_deref() == Some(netdev))
        .expect("port");
    format!(
        "{}/{}",
        p.device.as_deref().expect("IB device"),
        p.port.expect("IB port number")
    )
}

fn dir(direction: &str) -> Direction {
    match direction {
        "send" => Direction::Send,
        "receive" => Direction::Receive,
        "bidir" => Direction::Bidir,
        _ => panic!("no direction {direction}"),
    }
}

/// The host stack's bound for one core copying `copy_gb_per_s` GB/s, the ends on `cores` CPUs.
fn host_stack(copy_gb_per_s: f64, cores: usize) -> Option<HostStackCeiling> {
    host_stack_ceiling(&HostStackInput {
        copy_gb_per_s,
        cores,
    })
}

/// A TCP bandwidth result with nothing but the rate set.
fn tcp(direction: &str, streams: u32, gbps: f64) -> Measured {
    Measured {
        kind: TestKind::TcpBw,
        direction: dir(direction),
        rdma: None,
        latency: false,
        streams,
        gbps,
        sender_cpu_percent: Some(35.0),
        receiver_cpu_percent: Some(30.0),
        max_stream_cpu_percent: Some(35.0),
        busiest_core_percent: Some(40.0),
        busiest_core_others_percent: None,
        other_cores: Some(0.02),
        steal_cores: Some(0.0),
        retransmits: Some(0),
        // About 10 s at this rate in 1448-byte segments.
        segments: Some((gbps * 1e9 / 8.0 * 10.0 / 1448.0) as u64),
        spurious_retransmits: None,
        rtt_us: None,
        tcp_busy_percent: None,
        rwnd_limited_percent: None,
        sndbuf_limited_percent: None,
        loss_percent: None,
        lost_packets: None,
        receiver_udp: None,
        error: None,
        discard: false,
        remote_cpu: None,
    }
}

/// A latency result (its figures are in the bench result; the rules only see the kind).
fn latency() -> Measured {
    Measured {
        kind: TestKind::TcpLat,
        direction: Direction::Send,
        rdma: None,
        latency: true,
        streams: 1,
        gbps: 0.0,
        sender_cpu_percent: Some(20.0),
        receiver_cpu_percent: Some(20.0),
        max_stream_cpu_percent: None,
        busiest_core_percent: Some(30.0),
        busiest_core_others_percent: None,
        other_cores: Some(0.02),
        steal_cores: Some(0.0),
        retransmits: None,
        segments: None,
        spurious_retransmits: None,
        rtt_us: None,
        tcp_busy_percent: None,
        rwnd_limited_percent: None,
        sndbuf_limited_percent: None,
        loss_percent: None,
        lost_packets: None,
        receiver_udp: None,
        error: None,
        discard: false,
        remote_cpu: None,
    }
}

fn input(local: EndFacts, remote: Option<EndFacts>, tests: Vec<Measured>) -> DiagnoseInput {
    DiagnoseInput {
        local,
        remote,
        tests,
        // What doctor measures on a typical server: one core copies 5.6 GB/s, so one stream
        // between two cores carries at most 45 Gb/s.
        host_stack: host_stack(5.625, 2),
        counter_deltas: Vec::new(),
        qdiscs: linerate_facts::QdiscsSeen::default(),
    }
}

fn one<'a>(d: &'a Diagnosis, id: &str, subject: &str) -> &'a Finding {
    d.findings
        .iter()
        .find(|f| f.id.as_str() == id && f.subject == subject)
        .unwrap_or_else(|| {
            panic!(
                "no {id} finding on {subject}; findings: {:?}",
                d.findings
                    .iter()
                    .map(|f| format!("{} {}", f.id, f.subject))
                    .collect::<Vec<_>>()
            )
        })
}

fn ids(d: &Diagnosis) -> Vec<&str> {
    d.findings.iter().map(|f| f.id.as_str()).collect()
}

fn approx(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn ipoib_datagram_mode_on_both_ends_limits_one_stream_by_cpu() {
    let case = "cx3-fdr-at-qdr-datagram";
    let local = facts(case, "ib0");
    assert_eq!(local.ipoib_mode.map(IpoibMode::as_str), Some("datagram"));
    assert_eq!(local.mtu, Some(2044));
    let remote = local.clone();
    let mut one_stream = tcp("send", 1, 9.8);
    one_stream.sender_cpu_percent = Some(100.0);
    one_stream.receiver_cpu_percent = Some(62.0);
    one_stream.max_stream_cpu_percent = Some(100.0);
    one_stream.busiest_core_percent = Some(100.0);
    let mut four = tcp("send", 4, 24.1);
    four.sender_cpu_percent = Some(310.0);
    four.max_stream_cpu_percent = Some(98.0);

    // One stream only, as the brief has it.
    let d = run(
        "datagram, 1 stream",
        &input(
            local.clone(),
            Some(remote.clone()),
            vec![one_stream.clone(), latency()],
        ),
    );
    for end in ["local", "remote"] {
        one(&d, "ipoib.datagram_mode", &format!("{end}:ib0"));
    }
    let cpu = one(&d, "cpu.saturated", "test:tcp_bw send 1 stream");
    assert!(cpu.message.contains("at 9.8 Gb/s"), "{}", cpu.message);
    assert_eq!(d.verdict.limited_by.as_str(), "ipoib_mode");
    assert!(
        d.verdict
            .summary
            .starts_with("limited by IPoIB datagram mode (small packets, one core per stream): 9.8 Gb/s (TCP send, 1 stream) of a 30.62 Gb/s ceiling"),
        "{}",
        d.verdict.summary
    );

    // With the multi-stream result doctor also runs.
    let d = run(
        "datagram",
        &input(local, Some(remote), vec![one_stream, four, latency()]),
    );

    for end in ["local", "remote"] {
        let f = one(&d, "ipoib.datagram_mode", &format!("{end}:ib0"));
        assert_eq!(f.severity, Severity::Warning, "{f:?}");
        assert!(f.fix.contains("connected"), "{}", f.fix);
    }
    let cpu = one(&d, "cpu.saturated", "test:tcp_bw send 1 stream");
    assert_eq!(cpu.severity, Severity::Warning);
    assert!(
        cpu.message.contains("sending core at 100%"),
        "{}",
        cpu.message
    );
    assert!(
        cpu.message.contains("4 streams the path carried 24.1 Gb/s"),
        "{}",
        cpu.message
    );
    // Same fixture on both ends: nothing to compare.
    assert!(with_id(&d, "mtu.mismatch").is_empty());
    assert!(with_id(&d, "unexplained").is_empty(), "{:?}", ids(&d));
    assert!(with_id(&d, "ceiling.reached").is_empty());

    let v = &d.verdict;
    assert_eq!(v.limited_by.as_str(), "ipoib_mode");
    assert!(approx(v.gbps, 24.1, 1e-9), "best TCP result: {}", v.gbps);
    // The figure is named by its test, in the summary and beside it.
    assert_eq!(v.test.as_deref(), Some("TCP send, 4 streams"));
    assert!(
        v.summary
            .contains("24.1 Gb/s (TCP send, 4 streams) of a 30.62 Gb/s ceiling"),
        "{}",
        v.summary
    );
    // FDR linked at QDR: 32 Gb/s after 8b/10b; TCP at MTU 2044 in datagram mode about 30.62.
    assert!(approx(v.ceiling_gbps, 30.62, 0.01), "{}", v.ceiling_gbps);
    assert!(
        v.summary.contains("of a 30.62 Gb/s ceiling"),
        "the summary names the ceiling: {}",
        v.summary
    );
    assert!(v.summary.contains("IPoIB datagram mode"), "{}", v.summary);
}

#[test]
fn pcie_gen2_x4_slot_is_reached() {
    let case = "cx2-qdr-m2-gen2x4";
    let local = facts(case, "ib0");
    assert_eq!(local.ipoib_mode.map(IpoibMode::as_str), Some("connected"));
    let c = local.ceiling.as_ref().expect("ceiling");
    assert!(approx(c.tcp_gbps.unwrap_or(0.0), 13.07, 0.01), "{c:?}");
    let remote = local.clone();
    let d = run(
        "pcie",
        &input(
            local,
            Some(remote),
            vec![
                tcp("send", 1, 12.9),
                tcp("receive", 1, 12.85),
                tcp("send", 4, 12.88),
                latency(),
            ],
        ),
    );

    let r = one(&d, "ceiling.reached", "path");
    assert_eq!(r.severity, Severity::Info);
    // The slower direction (receive, 12.85) is the one judged.
    assert_eq!(r.evidence.get("gbps").map(String::as_str), Some("12.85"));
    assert_eq!(
        r.evidence.get("ceiling_gbps").map(String::as_str),
        Some("13.07")
    );
    // Only the inventory's PCIe findings (of either end) may be warnings or worse.
    for f in d
        .findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
    {
        assert!(
            matches!(f.id.as_str(), "pcie.slot_limited" | "pcie.bottleneck")
                && (f.subject.starts_with("local:") || f.subject.starts_with("remote:")),
            "unexpected {} {} {}",
            f.id,
            f.subject,
            f.message
        );
    }
    assert!(!with_id(&d, "pcie.bottleneck").is_empty());
    assert!(with_id(&d, "unexplained").is_empty());
    assert!(with_id(&d, "cpu.saturated").is_empty());

    let v = &d.verdict;
    assert_eq!(v.limited_by.as_str(), "pcie");
    assert!(approx(v.gbps, 12.85, 1e-9));
    assert!(approx(v.ceiling_gbps, 13.07, 0.01));
    assert!(
        v.summary.starts_with(
            "limited by the PCIe 2.0 x4 slot on the local end: receive direction (the slower): 12.85 Gb/s (TCP receive, 1 stream) of a 13.07 Gb/s ceiling"
        ),
        "{}",
        v.summary
    );
}

fn failed_tcp(direction: &str) -> Measured {
    let mut t = tcp(direction, 1, 0.0);
    t.sender_cpu_percent = None;
    t.receiver_cpu_percent = None;
    t.max_stream_cpu_percent = None;
    t.retransmits = None;
    t.segments = None;
    t.error = Some("connecting to 10.0.0.2:5201: connection timed out".into());
    t
}

#[test]
fn no_subnet_manager_on_the_local_end() {
    let local = facts("cx4-edr-no-sm", "ib0");
    // The other end: a healthy EDR port (also in datagram mode at MTU 4092).
    let remote = facts("cx4-vpi-dual", "ib0");
    let d = run(
        "no-sm",
        &input(local, Some(remote), vec![failed_tcp("send")]),
    );
    let e = one(&d, "ib.no_subnet_manager", "local:ib0");
    assert_eq!(e.severity, Severity::Error);
    assert_eq!(
        d.findings[0].id.as_str(),
        "ib.no_subnet_manager",
        "ranked first"
    );
    assert!(with_id(&d, "unexplained").is_empty(), "{:?}", ids(&d));
    assert!(with_id(&d, "cpu.saturated").is_empty());
    let v = &d.verdict;
    assert_eq!(v.limited_by.as_str(), "no_subnet_manager");
    assert_eq!(v.gbps, 0.0);
    assert!(v.summary.contains("no subnet manager"), "{}", v.summary);
    assert!(v.summary.contains("local ib0 port"), "{}", v.summary);

    // No test result at all.
    let d = run(
        "no-sm, no results",
        &input(
            facts("cx4-edr-no-sm", "ib0"),
            Some(facts("cx4-vpi-dual", "ib0")),
            Vec::new(),
        ),
    );
    assert_eq!(
        one(&d, "ib.no_subnet_manager", "local:ib0").severity,
        Severity::Error
    );
    assert_eq!(d.verdict.limited_by.as_str(), "no_subnet_manager");
    assert!(
        d.verdict.summary.starts_with("no traffic can pass"),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn no_subnet_manager_path_ceiling_is_zero() {
    let d = run(
        "no-sm ceiling",
        &input(
            facts("cx4-edr-no-sm", "ib0"),
            Some(facts("cx4-vpi-dual", "ib0")),
            vec![failed_tcp("send")],
        ),
    );
    assert_eq!(d.verdict.ceiling_gbps, 0.0, "{}", d.verdict.summary);
    assert!(
        !d.verdict.summary.contains("97.82"),
        "the remote's ceiling is not the path's: {}",
        d.verdict.summary
    );
}

#[test]
fn mtu_mismatch_between_40gbe_ends() {
    let local = facts("cx3-fdr-eth40", "enp4s0");
    assert_eq!(local.mtu, Some(1500));
    let mut remote = local.clone();
    remote.mtu = Some(9000);
    let d = run(
        "mtu mismatch",
        &input(
            local,
            Some(remote),
            vec![tcp("send", 1, 21.3), tcp("send", 4, 36.2), latency()],
        ),
    );
    let m = one(&d, "mtu.mismatch", "path");
    assert_eq!(m.severity, Severity::Warning);
    assert_eq!(
        m.evidence.get("local enp4s0 mtu").map(String::as_str),
        Some("1500")
    );
    assert_eq!(
        m.evidence.get("remote enp4s0 mtu").map(String::as_str),
        Some("9000")
    );
    assert!(m.message.contains("1500 here, 9000 there"), "{}", m.message);
    assert!(m.fix.contains("mtu 9000"), "{}", m.fix);
    // The MTU-1500 end's own warning is still there.
    one(&d, "mtu.small", "local:enp4s0");
}

#[test]
fn retransmits_with_ib_symbol_errors_blame_the_cable() {
    let case = "cx6-hdr-gen3-slot";
    let local = facts(case, "ib0");
    let remote = local.clone();
    let port = ib_port_of(case, "ib0");
    // About 0.3% of the segments retransmitted (the rule wants more than 0.1% and at least 50).
    let mut t1 = tcp("send", 1, 18.4);
    t1.segments = Some(3_176_000);
    t1.retransmits = Some(9_842);
    let mut t4 = tcp("send", 4, 41.7);
    t4.sender_cpu_percent = Some(180.0);
    t4.segments = Some(7_198_000);
    t4.retransmits = Some(19_877);
    let mut i = input(local, Some(remote), vec![t1, t4, latency()]);
    i.counter_deltas = vec![
        CounterDelta::rose(format!("{port} symbol_error"), 1_382),
        CounterDelta::rose(format!("{port} port_rcv_errors"), 211),
    ];
    let d = run("retransmits", &i);
    let r = with_id(&d, "net.retransmits");
    assert_eq!(r.len(), 2, "one per lossy test: {:?}", ids(&d));
    for f in &r {
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("cable"),
            "blames the cable: {}",
            f.message
        );
        assert_eq!(
            f.evidence
                .get(&format!("counter {port} symbol_error rose by"))
                .map(String::as_str),
            Some("1382"),
            "{:?}",
            f.evidence
        );
    }
    let f = one(&d, "net.retransmits", "test:tcp_bw send 4 stream(s)");
    assert_eq!(
        f.evidence.get("retransmits").map(String::as_str),
        Some("19877")
    );
    assert!(
        f.message
            .contains("19877 segments were retransmitted (0.28%)"),
        "{}",
        f.message
    );
    // Below the rule's threshold (0.1%), retransmits are noise: only the counters are reported.
    let mut i2 = i.clone();
    for t in &mut i2.tests {
        t.retransmits = t.retransmits.map(|_| 40);
    }
    let d2 = run("retransmits below threshold", &i2);
    let f = one(&d2, "net.retransmits", "path");
    assert!(f.message.contains("error counters rose"), "{}", f.message);
    assert_eq!(d.verdict.limited_by.as_str(), "retransmits");
    assert!(
        d.verdict.summary.contains("retransmissions"),
        "{}",
        d.verdict.summary
    );
    assert!(with_id(&d, "unexplained").is_empty());
}

#[test]
fn counters_rising_without_retransmits_still_warn() {
    let case = "cx6-hdr-gen3-slot";
    let local = facts(case, "ib0");
    let port = ib_port_of(case, "ib0");
    let mut i = input(
        local.clone(),
        Some(local),
        vec![tcp("send", 1, 38.0), tcp("send", 4, 97.0)],
    );
    i.counter_deltas = vec![CounterDelta::rose(format!("{port} symbol_error"), 12)];
    let d = run("counters only", &i);
    let f = one(&d, "net.retransmits", "path");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("error counters rose"), "{}", f.message);
    assert!(f.fix.contains("cable"), "{}", f.fix);
    assert_eq!(
        f.evidence[&format!("counter {port} symbol_error rose by")],
        "12"
    );
    // A counter that pegged during the tests (the soak's tracker says so): a lower bound.
    i.counter_deltas = vec![CounterDelta {
        at_least: true,
        note: Some("pegged at 65535, the most its 16 bits hold".into()),
        ..CounterDelta::rose(format!("{port} symbol_error"), 65_000)
    }];
    let d = run("counter pegged", &i);
    let f = one(&d, "net.retransmits", "path");
    assert_eq!(
        f.evidence[&format!("counter {port} symbol_error rose by")],
        "at least 65000 (pegged at 65535, the most its 16 bits hold)"
    );
}

fn asymmetric_input() -> DiagnoseInput {
    let local = facts("cx6-hdr-gen3-slot", "ib0");
    let remote = local.clone();
    let send = tcp("send", 1, 30.0);
    let mut receive = tcp("receive", 1, 12.0);
    receive.receiver_cpu_percent = Some(64.0);
    receive.sender_cpu_percent = Some(21.0);
    input(local, Some(remote), vec![send, receive, latency()])
}

#[test]
fn asymmetric_directions_name_the_slower_one() {
    let d = run("asymmetric", &asymmetric_input());
    let f = one(&d, "path.asymmetric", "path");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message
            .contains("the send direction carries 30 Gb/s but the receive direction only 12 Gb/s"),
        "{}",
        f.message
    );
    // The receive direction is slow: this host is the receiver.
    assert!(
        f.message.contains("this host receives slower"),
        "{}",
        f.message
    );
    assert_eq!(f.evidence.get("send_gbps").map(String::as_str), Some("30"));
    assert_eq!(
        f.evidence.get("receive_gbps").map(String::as_str),
        Some("12")
    );
    assert_eq!(
        f.evidence
            .get("receive receiver_cpu_percent")
            .map(String::as_str),
        Some("64")
    );

    // The other way round: the remote end receives slower.
    let mut i = asymmetric_input();
    i.tests[0].gbps = 11.0;
    i.tests[1].gbps = 29.0;
    let d = run("asymmetric, reversed", &i);
    let f = one(&d, "path.asymmetric", "path");
    assert!(
        f.message
            .contains("but the send direction only 11 Gb/s: the remote end receives slower"),
        "{}",
        f.message
    );
}

#[test]
fn far_below_the_ceiling_with_nothing_wrong_is_unexplained() {
    // ConnectX-4 EDR with enhanced IPoIB: nothing above info in the inventory.
    let local = facts("cx4-vpi-dual", "ib0");
    assert!(
        local.findings.iter().all(|f| f.severity == Severity::Info),
        "{:?}",
        local.findings
    );
    let remote = local.clone();
    let d = run(
        "unexplained",
        &input(
            local,
            Some(remote),
            vec![
                tcp("send", 1, 21.0),
                tcp("receive", 1, 20.6),
                tcp("send", 4, 38.5),
                latency(),
            ],
        ),
    );
    let u = one(&d, "unexplained", "path");
    assert_eq!(u.severity, Severity::Warning);
    assert!(
        u.message
            .starts_with("20.6 Gb/s is 21% of the 97.82 Gb/s ceiling"),
        "{}",
        u.message
    );
    // Lists what was checked.
    assert!(u.message.contains("Checked: "), "{}", u.message);
    for c in &d.checked {
        assert!(
            u.message.contains(c.as_str()),
            "{c} not listed: {}",
            u.message
        );
    }
    for c in [
        "MTU of both ends",
        "traffic shapers",
        "CPU use",
        "both directions",
    ] {
        assert!(u.message.contains(c), "{c}: {}", u.message);
    }
    assert!(d.findings.iter().all(|f| f.severity <= Severity::Warning));
    assert_eq!(
        d.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count(),
        1,
        "{:?}",
        ids(&d)
    );
    assert_eq!(d.verdict.limited_by.as_str(), "unknown");
    assert!(
        d.verdict.summary.contains("see `unexplained`"),
        "{}",
        d.verdict.summary
    );
}

/// A verdict that points at an `unexplained` finding must come with one.
fn assert_no_dangling_unexplained(d: &Diagnosis) {
    if d.verdict.summary.contains("see `unexplained`") {
        assert!(
            !with_id(d, "unexplained").is_empty(),
            "the verdict says \"{}\" but there is no unexplained finding: {:?}",
            d.verdict.summary,
            ids(d)
        );
    }
}

#[test]
fn verdict_never_points_at_a_missing_unexplained_finding() {
    // 30 of 101 Gb/s on the PCIe-limited HDR card: the pcie.* warnings explain the ceiling, not the gap.
    let local = facts("cx6-hdr-gen3-slot", "ib0");
    let d = run(
        "far below, pcie warnings",
        &input(
            local.clone(),
            Some(local),
            vec![tcp("send", 1, 24.0), tcp("send", 4, 30.0)],
        ),
    );
    assert_no_dangling_unexplained(&d);
    let d = run("asymmetric (verdict)", &asymmetric_input());
    assert_no_dangling_unexplained(&d);
    // Error counters rising (net.retransmits on `path`) far below the ceiling.
    let case = "cx6-hdr-gen3-slot";
    let port = ib_port_of(case, "ib0");
    let local = facts(case, "ib0");
    let mut i = input(local.clone(), Some(local), vec![tcp("send", 4, 41.7)]);
    i.counter_deltas = vec![CounterDelta::rose(format!("{port} symbol_error"), 1_382)];
    let d = run("counters rising (verdict)", &i);
    assert_no_dangling_unexplained(&d);
}

fn tbf_10g() -> Vec<ShaperFact> {
    vec![ShaperFact {
        kind: "tbf".into(),
        handle: "1:".into(),
        rate_bps: 10_000_000_000,
    }]
}

fn check_shaper(name: &str, local: EndFacts, mtu: f64) {
    let remote = facts("broadcom-25g-healthy", "enp59s0f0np0");
    let remote = EndFacts {
        mtu: local.mtu,
        ..remote
    };
    let d = run(
        name,
        &input(
            local,
            Some(remote),
            vec![tcp("send", 1, 9.55), tcp("send", 4, 9.54), latency()],
        ),
    );
    let s = one(&d, "net.shaper", "local:enp59s0f0np0");
    assert_eq!(s.severity, Severity::Warning);
    assert_eq!(
        s.evidence.get("qdisc").map(String::as_str),
        Some("tbf 1: rate 10000000000 bit/s")
    );
    assert!(s.message.contains("10 Gbit/s"), "{}", s.message);
    assert!(
        s.message.contains("it is what limits the send direction"),
        "{}",
        s.message
    );
    assert!(
        s.fix.contains("tc qdisc del dev enp59s0f0np0 root"),
        "{}",
        s.fix
    );
    let v = &d.verdict;
    assert_eq!(v.limited_by.as_str(), "shaper");
    // A tbf counts whole frames: TCP payload (MTU - 52) per MTU + 14 bytes.
    let want = 10.0 * (mtu - 52.0) / (mtu + 14.0);
    assert!(
        approx(v.ceiling_gbps, want, 0.002),
        "{} != {want}",
        v.ceiling_gbps
    );
    assert!(
        v.summary
            .contains("tbf shaper at 10 Gbit/s on the local enp59s0f0np0"),
        "{}",
        v.summary
    );
    assert!(with_id(&d, "unexplained").is_empty());
    one(&d, "ceiling.reached", "path");
}

#[test]
fn tbf_shaper_on_25gbe_at_mtu_1500() {
    // The 25GbE fixture runs MTU 9000; at MTU 1500 the shaper leaves 10 × 1448/1514 Gb/s of TCP.
    let mut local = facts_with("broadcom-25g-healthy", "enp59s0f0np0", tbf_10g());
    local.mtu = Some(1500);
    check_shaper("shaper, MTU 1500", local, 1500.0);
    assert!(approx(10.0 * 1448.0 / 1514.0, 9.564, 0.001));
}

#[test]
fn tbf_shaper_on_25gbe_at_the_fixture_mtu() {
    let local = facts_with("broadcom-25g-healthy", "enp59s0f0np0", tbf_10g());
    assert_eq!(local.mtu, Some(9000));
    check_shaper("shaper, MTU 9000", local, 9000.0);
}

fn rdma(gbps: f64) -> Measured {
    Measured {
        kind: TestKind::Rdma,
        rdma: Some(RdmaOp::Write),
        ..tcp("send", 1, gbps)
    }
}

/// The example: a ConnectX-3 behind a gen3 x4 M.2 slot, RDMA 25.3 against TCP 20.9.
#[test]
fn rdma_against_tcp_names_the_ip_stack_cost_and_the_slot() {
    let case = "cx6-hdr-gen3-slot";
    let local = facts(case, "ib0");
    let c = local.ceiling.clone().expect("ceiling");
    println!("ceiling {} limited by {:?}", c.gbps, c.limited_by);
    // Near the ceiling: the slot caps both.
    let r_gbps = c.tcp_gbps.unwrap_or(c.gbps) * 0.97;
    let t_gbps = r_gbps * 0.83;
    let d = run(
        "rdma-near",
        &input(
            local.clone(),
            Some(local.clone()),
            vec![
                tcp("send", 1, t_gbps),
                tcp("receive", 1, t_gbps),
                rdma(r_gbps),
            ],
        ),
    );
    let f = one(&d, "rdma.vs_tcp", "path");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains("the IP stack and CPU, which cost 17%"),
        "{}",
        f.message
    );
    assert!(f.message.contains("caps both near"), "{}", f.message);
    // RDMA near the ceiling explains TCP's 17% gap: the verdict says so, nothing is unexplained.
    assert!(
        d.findings.iter().all(|f| f.id.as_str() != "unexplained"),
        "{:?}",
        d.findings
    );
    assert!(
        d.verdict
            .summary
            .contains("the IP stack and CPU, which cost 17%"),
        "{}",
        d.verdict.summary
    );
    // Far below the ceiling and TCP far behind RDMA: a warning, and the hardware falls short too.
    let d = run(
        "rdma-far",
        &input(
            local.clone(),
            Some(local),
            vec![tcp("send", 1, 10.0), tcp("receive", 1, 10.0), rdma(20.0)],
        ),
    );
    let f = one(&d, "rdma.vs_tcp", "path");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("which cost 50%"), "{}", f.message);
    assert!(f.message.contains("falls short too"), "{}", f.message);
    // RDMA explains TCP's gap: no `unexplained`, and the verdict names the IP stack.
    assert!(
        d.findings.iter().all(|f| f.id.as_str() != "unexplained"),
        "{:?}",
        d.findings
    );
    assert_eq!(d.verdict.limited_by.as_str(), "cpu");
    assert!(
        d.verdict
            .summary
            .contains("the IP stack and CPU, which cost 50%"),
        "{}",
        d.verdict.summary
    );
}

/// Two EDR ends with 6 MiB receive and 4 MiB send buffer limits: a window of about 3 MiB.
fn buffered_ends() -> (EndFacts, EndFacts) {
    let mut local = facts("cx4-vpi-dual", "ib0");
    local.sockets.tcp_rmem = Some([4096, 131_072, 6 << 20]);
    local.sockets.tcp_wmem = Some([4096, 16_384, 4 << 20]);
    (local.clone(), local)
}

/// One stream at 21 Gb/s with a smoothed RTT and, when given, TCP_INFO's busy share and
/// limited shares.
fn windowed(rtt_us: f64, limited: Option<(f64, f64, f64)>) -> Measured {
    Measured {
        rtt_us: Some(rtt_us),
        tcp_busy_percent: limited.map(|l| l.0),
        rwnd_limited_percent: limited.map(|l| l.1),
        sndbuf_limited_percent: limited.map(|l| l.2),
        ..tcp("send", 1, 21.0)
    }
}

#[test]
fn tcp_info_names_a_window_limit_the_rtt_estimate_misses() {
    // 21 Gb/s × 400 µs = 1.05 MB in flight: a third of the 3 MiB window, below the estimate's
    // band for large buffers, but the kernel saw the sender wait on the window 85% of the time.
    let (local, remote) = buffered_ends();
    let d = run(
        "tcp_info window",
        &input(
            local,
            Some(remote),
            vec![windowed(400.0, Some((97.0, 85.0, 3.0)))],
        ),
    );
    let f = one(&d, "tcp.buffers_small", "test:tcp_bw send 1 stream(s)");
    assert!(
        f.message.contains(
            "; of the time it had data to send, the kernel counted the sender waiting 85% on the receiver's window and 3% on its own send buffer:"
        ),
        "{}",
        f.message
    );
    assert!(f
        .evidence
        .iter()
        .any(|(k, v)| k.starts_with("receive-window-limited %") && v == "85"));
    assert_eq!(
        d.verdict.limited_by.as_str(),
        "tcp_buffers",
        "{}",
        d.verdict.summary
    );
    // Without the kernel's figures the same test is not blamed on the window.
    let (local, remote) = buffered_ends();
    let d = run(
        "estimate misses",
        &input(local, Some(remote), vec![windowed(400.0, None)]),
    );
    assert!(with_id(&d, "tcp.buffers_small").is_empty(), "{:?}", ids(&d));
}

#[test]
fn a_slow_reader_closing_the_window_is_not_small_buffers() {
    // 21 Gb/s × 50 µs = 131 kB in flight against a 3 MiB window: the sender waited on the
    // window, but the window was nowhere near its limit, so the receiver did not read fast
    // enough; bigger buffers would not help.
    let (local, remote) = buffered_ends();
    let d = run(
        "slow reader",
        &input(
            local,
            Some(remote),
            vec![windowed(50.0, Some((97.0, 85.0, 0.0)))],
        ),
    );
    assert!(with_id(&d, "tcp.buffers_small").is_empty(), "{:?}", ids(&d));
}

#[test]
fn tcp_info_clears_a_window_an_inflated_rtt_suggests() {
    // 21 Gb/s × 1.2 ms = 3.15 MB in flight, right at the window: a host stalled by its
    // hypervisor inflates the RTT like this. The kernel saw no waiting on the window.
    let (local, remote) = buffered_ends();
    let d = run(
        "tcp_info clear",
        &input(
            local,
            Some(remote),
            vec![windowed(1200.0, Some((99.5, 1.0, 0.4)))],
        ),
    );
    assert!(with_id(&d, "tcp.buffers_small").is_empty(), "{:?}", ids(&d));
    assert_ne!(d.verdict.limited_by.as_str(), "tcp_buffers");
}

#[test]
fn an_idle_sender_leaves_the_window_to_the_estimate() {
    // Tiny buffers on a short path: the socket drains before the sender runs again, which the
    // kernel counts as idle time (busy 80%), not as waiting on the window. 2 Gb/s × 40 µs =
    // 10 kB in flight against 16 KiB buffers (an 8 KiB window): the estimate names the window.
    let (mut local, _) = buffered_ends();
    local.sockets.tcp_rmem = Some([4096, 8192, 16_384]);
    local.sockets.tcp_wmem = Some([4096, 8192, 16_384]);
    let tiny = Measured {
        rtt_us: Some(40.0),
        tcp_busy_percent: Some(80.0),
        rwnd_limited_percent: Some(1.0),
        sndbuf_limited_percent: Some(0.0),
        ..tcp("send", 1, 2.0)
    };
    let d = run(
        "tcp_info idle",
        &input(local.clone(), Some(local), vec![tiny]),
    );
    let f = one(&d, "tcp.buffers_small", "test:tcp_bw send 1 stream(s)");
    // No more than the send buffer can be in flight.
    let shown: f64 = f.evidence["bytes_in_flight"].parse().unwrap();
    assert!(shown <= 16_384.0, "{shown}");
}

#[test]
fn a_loaded_hosts_inflated_rtt_does_not_make_a_large_window_the_limit() {
    // Seen on a healthy veth path with the other core busy: the smoothed RTT rose to 1.4 ms,
    // so rate × RTT came near the 3 MiB window, while the kernel counted the senders waiting
    // on the window 0.3% of the time (their queues ran empty while their threads waited for a
    // core, busy 80%). The kernel's accounting wins: not a window limit.
    let (local, remote) = buffered_ends();
    let d = run(
        "loaded host",
        &input(
            local,
            Some(remote),
            vec![windowed(1200.0, Some((80.0, 0.3, 0.0)))],
        ),
    );
    assert!(with_id(&d, "tcp.buffers_small").is_empty(), "{:?}", ids(&d));
    assert_ne!(d.verdict.limited_by.as_str(), "tcp_buffers");
}

#[test]
fn without_tcp_info_the_rtt_estimate_decides() {
    let (local, remote) = buffered_ends();
    let d = run(
        "estimate",
        &input(local, Some(remote), vec![windowed(1200.0, None)]),
    );
    let f = one(&d, "tcp.buffers_small", "test:tcp_bw send 1 stream(s)");
    assert!(!f.message.contains("the kernel counted"), "{}", f.message);
    assert!(!f.evidence.iter().any(|(k, _)| k.contains("TCP_INFO")));
}
