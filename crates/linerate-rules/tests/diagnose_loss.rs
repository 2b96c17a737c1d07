//! doctor's rules on a path that loses packets (issue #30): loss is put down to what counted it
//! (an error counter, a qdisc on either end with its counter, a receiver whose CPU figures show
//! it fell behind) and, with none of them, to the path between the ends, never to CPU contention
//! that was not there; a qdisc that dropped is named with its end, its direction and its
//! counter (`net.qdisc_drops`), `path.asymmetric` blames no end for it, and the loss finding
//! agrees with the verdict. All on constructed data: two guests' virtio NICs (the QEMU
//! lab, 2 % netem loss on one guest's egress), and veth ends.

mod common;

use common::{blames_no_cpu, run, with_id};

use linerate_facts::{
    Cause, EndFacts, Finding, PortKind, QdiscDelta, QdiscSide, QdiscsSeen, Severity, SocketLimits,
};
use linerate_model::{host_stack_ceiling, HostStackInput};
use linerate_proto::{Direction, HostCpuLoad, TestKind};
use linerate_rules::{diagnose, DiagnoseInput, Diagnosis, Measured};

/// One guest's end: a virtio NIC (a virtual path: no hardware ceiling).
fn guest(netdev: &str) -> EndFacts {
    EndFacts {
        netdev: Some(netdev.into()),
        port_kind: Some(PortKind::Ethernet),
        mtu: Some(1500),
        ipoib_mode: None,
        ceiling: None,
        numa_node: None,
        cpus: 2,
        sockets: SocketLimits::default(),
        shapers: Vec::new(),
        findings: Vec::new(),
        paravirtual: Some("virtio_net".into()),
        optics: None,
        fec: None,
    }
}

/// The far end's CPUs, quiet: linerate's own work and a few hundredths of housekeeping.
fn quiet_far_end() -> HostCpuLoad {
    HostCpuLoad {
        seconds: 2.0,
        cores: 2,
        busiest_core_percent: Some(24.0),
        busiest_core_others_percent: Some(1.0),
        own_cores: Some(0.4),
        other_cores: Some(0.03),
        steal_cores: Some(0.0),
    }
}

/// A TCP bandwidth result of about 2 s with both ends' CPUs under 25 %; `rtx` retransmits.
fn tcp(direction: Direction, streams: u32, gbps: f64, rtx: u64) -> Measured {
    Measured {
        kind: TestKind::TcpBw,
        direction,
        rdma: None,
        latency: false,
        streams,
        gbps,
        sender_cpu_percent: Some(22.0),
        receiver_cpu_percent: Some(18.0),
        max_stream_cpu_percent: Some(22.0),
        busiest_core_percent: Some(24.0),
        busiest_core_others_percent: Some(0.0),
        other_cores: Some(0.02),
        steal_cores: Some(0.0),
        retransmits: Some(rtx),
        segments: Some((gbps * 1e9 / 8.0 * 2.0 / 1448.0) as u64),
        spurious_retransmits: None,
        rtt_us: Some(400.0),
        tcp_busy_percent: Some(99.0),
        rwnd_limited_percent: Some(0.0),
        sndbuf_limited_percent: Some(0.0),
        loss_percent: None,
        lost_packets: None,
        receiver_udp: None,
        error: None,
        discard: false,
        remote_cpu: Some(quiet_far_end()),
    }
}

/// doctor's UDP test at a rate the path should carry, losing `loss` percent.
fn udp(direction: Direction, gbps: f64, loss: f64) -> Measured {
    Measured {
        kind: TestKind::UdpBw,
        retransmits: None,
        segments: None,
        spurious_retransmits: None,
        rtt_us: None,
        tcp_busy_percent: None,
        rwnd_limited_percent: None,
        sndbuf_limited_percent: None,
        loss_percent: Some(loss),
        lost_packets: None,
        receiver_udp: None,
        ..tcp(direction, 1, gbps, 0)
    }
}

/// A qdisc's counters over the tests.
fn qdisc(interface: &str, kind: &str, side: QdiscSide, drops: u64) -> QdiscDelta {
    QdiscDelta {
        interface: interface.into(),
        kind: kind.into(),
        handle: "8001:".into(),
        parent: "root".into(),
        side,
        packets: 37_000,
        drops,
        overlimits: 0,
        requeues: 0,
        reset: false,
        reorders: false,
        tests: vec!["TCP send, 1 stream".into(), "TCP send, 2 streams".into()],
    }
}

/// The run: the send direction loses 2 % (retransmits and UDP loss), the receive
/// direction is clean and faster; both ends' qdiscs read (`local` and `remote`).
fn lossy_send(local: Vec<QdiscDelta>, remote: Option<Vec<QdiscDelta>>) -> DiagnoseInput {
    DiagnoseInput {
        local: guest("enp1s0"),
        remote: Some(guest("enp1s0")),
        tests: vec![
            tcp(Direction::Send, 1, 0.9, 3_100),
            tcp(Direction::Receive, 1, 2.6, 0),
            tcp(Direction::Send, 2, 1.4, 4_800),
            udp(Direction::Send, 0.45, 2.1),
        ],
        host_stack: host_stack_ceiling(&HostStackInput {
            copy_gb_per_s: 3.1,
            cores: 2,
        }),
        counter_deltas: Vec::new(),
        qdiscs: QdiscsSeen {
            local: Some(local),
            remote,
        },
    }
}

#[test]
fn a_netem_on_this_ends_egress_is_named_with_its_counter() {
    let d = run(
        "netem on the local egress",
        &lossy_send(
            vec![qdisc("enp1s0", "netem", QdiscSide::Egress, 755)],
            Some(Vec::new()),
        ),
    );
    // The verdict says loss, where it was counted, in the send direction.
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict.summary.starts_with(
            "limited by packet loss and retransmissions (the netem qdisc 8001 on the local enp1s0 dropped 755 packets it sent (the send direction)): send direction (the slower)"
        ),
        "{}",
        d.verdict.summary
    );
    // The qdisc: its end, its direction, its counter.
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1, "{q:?}");
    let q = q[0];
    assert_eq!(q.severity, Severity::Warning);
    assert_eq!(q.subject, "local:enp1s0");
    assert_eq!(q.evidence["drops"], "755");
    assert_eq!(q.evidence["qdisc"], "netem 8001: parent root");
    assert_eq!(q.evidence["side"], "it sent (the send direction)");
    assert_eq!(
        q.evidence["tests"],
        "TCP send, 1 stream; TCP send, 2 streams"
    );
    assert!(
        q.message.contains("a test setup, not a fault"),
        "{}",
        q.message
    );
    assert!(
        q.fix.contains("tc qdisc del dev enp1s0 root") && q.fix.contains("local host"),
        "{}",
        q.fix
    );
    // Every loss finding of the send direction is a warning with that cause.
    let r = with_id(&d, "net.retransmits");
    assert_eq!(r.len(), 3, "both TCP sends and the UDP send: {r:?}");
    for f in r {
        assert_eq!(f.severity, Severity::Warning, "{}", f.message);
        assert!(
            f.message
                .contains("the netem qdisc 8001 on the local enp1s0 dropped 755 packets it sent"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence["local enp1s0 qdisc netem 8001: drops"], "755");
    }
    assert!(with_id(&d, "path.asymmetric").is_empty(), "no end blamed");
    blames_no_cpu(&d);
}

#[test]
fn a_qdisc_on_the_far_ends_ingress_drops_the_send_direction() {
    // An ifb the far end's ingress redirects to, with a tbf whose queue overflows.
    let d = run(
        "ifb on the remote ingress",
        &lossy_send(
            Vec::new(),
            Some(vec![qdisc("ifb0", "tbf", QdiscSide::Ingress, 4_087)]),
        ),
    );
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(q[0].subject, "remote:ifb0");
    assert_eq!(q[0].evidence["side"], "it received (the send direction)");
    assert!(q[0].fix.contains("remote host"), "{}", q[0].fix);
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict
            .summary
            .contains("the tbf qdisc 8001 on the remote ifb0 dropped 4087 packets it received (the send direction)"),
        "{}",
        d.verdict.summary
    );
    assert!(with_id(&d, "path.asymmetric").is_empty());
    blames_no_cpu(&d);
}

#[test]
fn loss_no_qdisc_counted_on_quiet_cpus_is_the_paths() {
    // Both ends' qdiscs read, none dropped, no counter rose, both CPUs under 25 %.
    let d = run("no qdisc, quiet", &lossy_send(Vec::new(), Some(Vec::new())));
    assert!(with_id(&d, "net.qdisc_drops").is_empty());
    let r = with_id(&d, "net.retransmits");
    assert!(!r.is_empty());
    for f in &r {
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("lost between the two ends"),
            "{}",
            f.message
        );
        assert!(!f.fix.contains("free the CPUs"), "{}", f.fix);
    }
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    assert!(
        d.verdict
            .summary
            .starts_with("limited by packet loss and retransmissions: send direction"),
        "{}",
        d.verdict.summary
    );
    assert!(with_id(&d, "path.asymmetric").is_empty());
    blames_no_cpu(&d);
    // The far end's qdiscs not read (an older server): said, not guessed.
    let d = run("no qdisc, far end unknown", &lossy_send(Vec::new(), None));
    let r = with_id(&d, "net.retransmits");
    assert!(
        r[0].message
            .contains("the far end's qdiscs are unknown (it does not send them)"),
        "{}",
        r[0].message
    );
}

#[test]
fn cpu_contention_is_said_only_where_the_figures_show_it() {
    // The far end, which receives the send direction, had other processes on 1.2 cores.
    let mut i = lossy_send(Vec::new(), Some(Vec::new()));
    for t in &mut i.tests {
        if t.direction == Direction::Send {
            t.remote_cpu = Some(HostCpuLoad {
                other_cores: Some(1.2),
                busiest_core_others_percent: Some(60.0),
                ..quiet_far_end()
            });
        }
    }
    let d = run("far end contended", &i);
    let r = with_id(&d, "net.retransmits");
    assert!(!r.is_empty());
    for f in &r {
        // A symptom of the CPU on a virtual path: a note with the evidence, naming what was
        // measured (other processes, not the hypervisor).
        assert_eq!(f.severity, Severity::Info, "{}", f.message);
        assert!(
            f.message.contains(
                "the receiver fell behind (other processes took 1.2 cores of the far end)"
            ),
            "{}",
            f.message
        );
    }
    // The loss is not the verdict then: a note does not explain the gap.
    assert_ne!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    // A receiving thread at a full core is evidence too.
    let mut i = lossy_send(Vec::new(), Some(Vec::new()));
    for t in &mut i.tests {
        t.receiver_cpu_percent = Some(97.0);
    }
    let d = run("receiving thread saturated", &i);
    assert!(
        with_id(&d, "net.retransmits")[0]
            .message
            .contains("its receiving thread used 97% of a core"),
        "{:?}",
        with_id(&d, "net.retransmits")
    );
    // A qdisc's drops are named first, whatever the CPUs did: it counted them.
    let mut i = lossy_send(
        vec![qdisc("enp1s0", "netem", QdiscSide::Egress, 755)],
        Some(Vec::new()),
    );
    for t in &mut i.tests {
        t.other_cores = Some(1.5);
    }
    let d = run("netem on a busy host", &i);
    for f in with_id(&d, "net.retransmits") {
        assert!(f.message.contains("netem"), "{}", f.message);
        assert!(!f.message.contains("fell behind"), "{}", f.message);
    }
    // And the verdict names them before the contention, which is said beside.
    assert_eq!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    assert!(d.verdict.summary.contains("netem"), "{}", d.verdict.summary);
    assert_eq!(with_id(&d, "cpu.contended").len(), 1);
}

#[test]
fn a_qdisc_drops_only_what_goes_its_way() {
    // The far end's egress (the receive direction) dropped; the send direction lost packets.
    let d = run(
        "drops the other way",
        &lossy_send(
            Vec::new(),
            Some(vec![qdisc("enp1s0", "pfifo", QdiscSide::Egress, 900)]),
        ),
    );
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].evidence["side"], "it sent (the receive direction)");
    assert!(
        q[0].message.contains("its queue was full"),
        "{}",
        q[0].message
    );
    for f in with_id(&d, "net.retransmits") {
        assert!(!f.message.contains("pfifo"), "{}", f.message);
        assert!(
            f.message.contains("lost between the two ends"),
            "{}",
            f.message
        );
    }
}

#[test]
fn drops_at_a_ceiling_the_path_reaches_and_a_handful_are_notes() {
    // Three drops: a queue clipped a window's edge once.
    let mut i = lossy_send(
        vec![qdisc("enp1s0", "fq_codel", QdiscSide::Egress, 3)],
        Some(Vec::new()),
    );
    i.tests = vec![
        tcp(Direction::Send, 1, 2.6, 0),
        tcp(Direction::Receive, 1, 2.6, 0),
    ];
    let d = run("a handful", &i);
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q[0].severity, Severity::Info);
    assert!(
        q[0].message.contains("too few to cost a stream"),
        "{}",
        q[0].message
    );
    assert!(with_id(&d, "net.retransmits").is_empty());
    // Many drops at a shaper the send direction reaches: the bottleneck's queue at work.
    let mut i = lossy_send(
        vec![qdisc("enp1s0", "tbf", QdiscSide::Egress, 2_000)],
        Some(Vec::new()),
    );
    i.local.shapers = vec![linerate_facts::ShaperFact {
        kind: "tbf".into(),
        handle: "8001:".into(),
        rate_bps: 1_000_000_000,
    }];
    i.tests = vec![
        tcp(Direction::Send, 1, 0.94, 30),
        tcp(Direction::Receive, 1, 2.6, 0),
    ];
    let d = run("at the shaper", &i);
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q[0].severity, Severity::Info, "{}", q[0].message);
    assert!(
        q[0].message.contains("reaches its ceiling"),
        "{}",
        q[0].message
    );
    assert_eq!(d.verdict.limited_by, Cause::Shaper, "{}", d.verdict.summary);
}

#[test]
fn a_shaper_far_above_the_result_is_not_what_limits_it() {
    // A tbf at 100 Gbit/s with a 3000-byte queue: it drops nearly everything, its rate limits
    // nothing.
    let mut i = lossy_send(
        vec![qdisc("veth0", "tbf", QdiscSide::Egress, 4_087)],
        Some(Vec::new()),
    );
    i.local = EndFacts {
        port_kind: Some(PortKind::Virtual),
        paravirtual: None,
        netdev: Some("veth0".into()),
        shapers: vec![linerate_facts::ShaperFact {
            kind: "tbf".into(),
            handle: "8001:".into(),
            rate_bps: 100_000_000_000,
        }],
        ..guest("veth0")
    };
    i.tests = vec![
        tcp(Direction::Send, 1, 0.017, 4_084),
        tcp(Direction::Receive, 1, 9.5, 0),
    ];
    let d = run("a tiny tbf", &i);
    assert_eq!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    assert!(
        d.verdict
            .summary
            .contains("the tbf qdisc 8001 on the local veth0 dropped 4087 packets it sent"),
        "{}",
        d.verdict.summary
    );
    assert_eq!(
        with_id(&d, "net.qdisc_drops")[0].severity,
        Severity::Warning
    );
    assert!(with_id(&d, "path.asymmetric").is_empty());
    // Drops without a retransmit counted (a sender's own qdisc refused them): the qdisc still
    // explains the result.
    for t in &mut i.tests {
        t.retransmits = Some(0);
    }
    let d = run("a tiny tbf, no retransmits", &i);
    assert!(with_id(&d, "net.retransmits").is_empty());
    assert_eq!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    assert!(
        d.verdict
            .summary
            .contains("see the `net.qdisc_drops` finding"),
        "{}",
        d.verdict.summary
    );
}

#[test]
fn a_clean_path_with_its_qdiscs_read_says_nothing_of_loss() {
    let mut i = lossy_send(Vec::new(), Some(Vec::new()));
    i.tests = vec![
        tcp(Direction::Send, 1, 2.5, 0),
        tcp(Direction::Receive, 1, 2.6, 0),
        udp(Direction::Send, 1.2, 0.0),
    ];
    let d = run("clean", &i);
    for id in ["net.qdisc_drops", "net.retransmits", "path.asymmetric"] {
        assert!(with_id(&d, id).is_empty(), "{id}");
    }
    assert_ne!(d.verdict.limited_by, Cause::Retransmits);
}

/// The verdict and the loss findings agree: a verdict of loss has a loss warning about the
/// direction it judges (a test of it that lost packets, or a qdisc that carries it), and a
/// verdict of anything else names no loss.
fn verdict_agrees_with_the_loss_findings(d: &Diagnosis) {
    let judged = d
        .verdict
        .test
        .as_deref()
        .map(|t| {
            if t.contains("receive") {
                "receive"
            } else {
                "send"
            }
        })
        .expect("a judged test");
    let about_judged = |f: &&Finding| {
        f.severity == Severity::Warning
            && match f.id.as_str() {
                "net.retransmits" => f.subject.contains(&format!(" {judged} ")),
                "net.qdisc_drops" => {
                    f.evidence["side"].contains(&format!("the {judged} direction"))
                        || f.evidence["side"].contains("both directions")
                }
                _ => false,
            }
    };
    let s = &d.verdict.summary;
    if d.verdict.limited_by == Cause::Retransmits {
        assert!(
            d.findings.iter().any(|f| about_judged(&f)),
            "a verdict of loss in the {judged} direction with no loss warning about it: {s}"
        );
    } else {
        for words in ["packet loss", "retransmi", "qdisc"] {
            assert!(
                !s.contains(words),
                "`{words}` in a verdict of {:?}: {s}",
                d.verdict.limited_by
            );
        }
    }
}

#[test]
fn loss_in_the_faster_direction_is_not_the_slower_ones_verdict() {
    // The receive direction loses packets at a netem on the far end's egress and still runs
    // faster; the send direction, the slower and so the judged one, lost nothing.
    let mut i = lossy_send(
        Vec::new(),
        Some(vec![qdisc("enp1s0", "netem", QdiscSide::Egress, 755)]),
    );
    i.tests = vec![
        tcp(Direction::Send, 1, 0.9, 0),
        tcp(Direction::Receive, 1, 2.6, 3_100),
        tcp(Direction::Send, 2, 1.4, 0),
    ];
    let d = run("loss the other way", &i);
    assert_eq!(d.verdict.test.as_deref(), Some("TCP send, 1 stream"));
    // The loss is said, as a warning of its own, about the direction it happened in.
    let r = with_id(&d, "net.retransmits");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].subject, "test:tcp_bw receive 1 stream(s)");
    assert_eq!(r[0].severity, Severity::Warning);
    assert!(r[0].message.contains("netem"), "{}", r[0].message);
    let q = with_id(&d, "net.qdisc_drops");
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(q[0].evidence["side"], "it sent (the receive direction)");
    assert_eq!(q[0].severity, Severity::Warning);
    // But the send direction's result is not put down to it.
    assert_ne!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    verdict_agrees_with_the_loss_findings(&d);
    // Nor when the two directions are close (within `path.asymmetric`'s 75 %): the loss
    // warnings of the receive direction neither become the send direction's verdict nor
    // explain its gap, which is left to what carries these guests' path (`net.paravirtual`,
    // said when no check inside the guests explains a gap).
    i.tests[0].gbps = 2.0;
    let d = run("loss the other way, directions close", &i);
    assert!(with_id(&d, "path.asymmetric").is_empty());
    assert_eq!(
        with_id(&d, "net.retransmits")[0].severity,
        Severity::Warning
    );
    assert_eq!(
        with_id(&d, "net.qdisc_drops")[0].severity,
        Severity::Warning
    );
    assert_eq!(
        with_id(&d, "net.paravirtual").len(),
        1,
        "the gap is unexplained"
    );
    assert_eq!(
        d.verdict.limited_by,
        Cause::Hypervisor,
        "{}",
        d.verdict.summary
    );
    verdict_agrees_with_the_loss_findings(&d);
    // With the loss in the send direction instead, the verdict is the loss, and says where.
    let d = run(
        "loss the judged way",
        &lossy_send(
            vec![qdisc("enp1s0", "netem", QdiscSide::Egress, 755)],
            Some(Vec::new()),
        ),
    );
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);
    verdict_agrees_with_the_loss_findings(&d);
}

#[test]
fn every_verdict_here_agrees_with_its_loss_findings() {
    let netem = |side| vec![qdisc("enp1s0", "netem", side, 755)];
    let cases: Vec<(&str, DiagnoseInput)> = vec![
        (
            "netem local egress",
            lossy_send(netem(QdiscSide::Egress), Some(Vec::new())),
        ),
        (
            "netem local ingress",
            lossy_send(netem(QdiscSide::Ingress), Some(Vec::new())),
        ),
        (
            "netem remote egress",
            lossy_send(Vec::new(), Some(netem(QdiscSide::Egress))),
        ),
        (
            "netem remote ingress",
            lossy_send(Vec::new(), Some(netem(QdiscSide::Ingress))),
        ),
        ("no qdisc", lossy_send(Vec::new(), Some(Vec::new()))),
        ("far end unknown", lossy_send(Vec::new(), None)),
    ];
    for (name, i) in cases {
        verdict_agrees_with_the_loss_findings(&run(name, &i));
    }
}

#[test]
fn the_best_tcp_result_of_all_is_chosen_once_by_the_rules() {
    // The run, with a `--discard` run and a failed test beside: neither is a rate an
    // application gets.
    let mut i = lossy_send(Vec::new(), Some(Vec::new()));
    let mut discard = tcp(Direction::Receive, 1, 9.0, 0);
    discard.discard = true;
    let mut failed = tcp(Direction::Send, 4, 12.0, 0);
    failed.error = Some("connection refused".into());
    i.tests.extend([discard, failed]);
    let d = run("best of all", &i);
    let best = d.best_tcp.as_ref().expect("a best TCP result");
    // Every stream count, both directions: the receive direction's stream.
    assert_eq!(best.gbps, 2.6);
    assert_eq!(best.test, "TCP receive, 1 stream");
    // The verdict judges the slower direction's one stream, and names it.
    assert_eq!(d.verdict.gbps, 0.9);
    assert_eq!(d.verdict.test.as_deref(), Some("TCP send, 1 stream"));
    // On this virtual path both directions have the host stack's bound.
    let ceiling = best.ceiling_gbps.expect("the host stack's bound");
    assert!(
        (ceiling - d.verdict.ceiling_gbps).abs() < 1e-3,
        "{ceiling} against {}",
        d.verdict.ceiling_gbps
    );
    // Nothing measured, nothing chosen.
    i.tests.clear();
    assert!(diagnose(&i).best_tcp.is_none());
}

#[test]
fn udp_loss_is_the_receivers_when_tcp_in_that_direction_lost_nothing_faster() {
    // The send direction lost 2 % of TCP's segments and 2.1 % of UDP's datagrams, no qdisc
    // counting: the path's loss, both findings warnings.
    let i = lossy_send(Vec::new(), Some(Vec::new()));
    let d = run("TCP and UDP lose alike", &i);
    let udp_finding = |d: &Diagnosis| {
        with_id(d, "net.retransmits")
            .into_iter()
            .find(|f| f.subject == "test:udp_bw send 1 stream(s)")
            .cloned()
            .unwrap_or_else(|| panic!("no UDP net.retransmits"))
    };
    let u = udp_finding(&d);
    assert_eq!(u.severity, Severity::Warning, "{}", u.message);
    assert!(
        u.message.contains("lost between the two ends"),
        "{}",
        u.message
    );
    assert_eq!(d.verdict.limited_by, Cause::Retransmits);

    // TCP in the send direction retransmitted nothing, at two and three times the UDP test's rate: what the
    // path carried for TCP it carried for UDP; the receiving end dropped the datagrams.
    let mut clean = i.clone();
    for t in &mut clean.tests {
        if t.kind == TestKind::TcpBw {
            t.retransmits = Some(0);
        }
    }
    let d = run("UDP loses, TCP does not", &clean);
    let u = udp_finding(&d);
    assert_eq!(u.severity, Severity::Info, "{}", u.message);
    assert!(
        u.message
            .contains("TCP in the same direction carried 1.4 Gb/s and retransmitted 0 segments (0.00%): the receiving end dropped them, not the path"),
        "{}",
        u.message
    );
    assert_ne!(
        d.verdict.limited_by,
        Cause::Retransmits,
        "{}",
        d.verdict.summary
    );
    assert!(with_id(&d, "path.asymmetric").len() <= 1);

    // TCP lost a tenth of UDP's rate or more: the path may have lost both, a warning again.
    let mut some = clean;
    some.tests[0].retransmits = Some(some.tests[0].segments.unwrap() / 400);
    let d = run("TCP loses a quarter of UDP's rate", &some);
    assert_eq!(udp_finding(&d).severity, Severity::Warning);
}
