//! doctor's rules on a path with no hardware (loopback, veth): the host stack's bound is the
//! ceiling of one TCP stream, a stream above it says so (`ceiling.exceeded`), and the advice
//! of `cpu.saturated` fits the path (no NIC advice without a NIC).

use std::path::Path;

use linerate_facts::{EndFacts, Finding, PortKind, SocketLimits};
use linerate_model::{host_stack_ceiling, HostStackInput};
use linerate_proto::{Direction, TestKind};
mod common;

use common::run;
use linerate_rules::{end_facts, DiagnoseInput, Diagnosis, Measured};
use linerate_units::{fmt_num, r1, r2, r3};

/// This host's loopback interface, as `end_facts` gives it on a machine with `cpus` CPUs.
fn loopback(cpus: usize) -> EndFacts {
    EndFacts {
        netdev: Some("lo".into()),
        port_kind: Some(PortKind::Loopback),
        mtu: Some(65_536),
        ipoib_mode: None,
        ceiling: None,
        numa_node: None,
        cpus,
        sockets: SocketLimits::default(),
        shapers: Vec::new(),
        findings: Vec::new(),
        paravirtual: None,
        optics: None,
        fec: None,
    }
}

/// A TCP bandwidth result; `cpu` is the busiest thread's share of a core.
fn tcp(direction: Direction, streams: u32, gbps: f64, cpu: f64) -> Measured {
    Measured {
        kind: TestKind::TcpBw,
        direction,
        rdma: None,
        latency: false,
        streams,
        gbps,
        sender_cpu_percent: Some(cpu),
        receiver_cpu_percent: Some(cpu * 0.8),
        max_stream_cpu_percent: Some(cpu),
        busiest_core_percent: Some(cpu),
        busiest_core_others_percent: None,
        other_cores: Some(0.02),
        steal_cores: Some(0.0),
        retransmits: Some(0),
        segments: Some((gbps * 1e9 / 8.0 * 10.0 / 65_483.0) as u64),
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

/// The self-check on loopback: one core copies `copy_gb_per_s`, the ends may use `cores` CPUs.
fn self_check(copy_gb_per_s: f64, cores: usize, tests: Vec<Measured>) -> DiagnoseInput {
    DiagnoseInput {
        local: loopback(cores),
        remote: None,
        tests,
        host_stack: host_stack_ceiling(&HostStackInput {
            copy_gb_per_s,
            cores,
        }),
        counter_deltas: Vec::new(),
        qdiscs: linerate_facts::QdiscsSeen::default(),
    }
}

fn with_id<'a>(d: &'a Diagnosis, id: &str) -> Option<&'a Finding> {
    d.findings.iter().find(|f| f.id.as_str() == id)
}

/// The summary gives the ceiling as doctor's readers see it.
fn shows_ceiling(d: &Diagnosis, ceiling: f64) -> bool {
    [fmt_num(r1(ceiling)), fmt_num(r2(ceiling))]
        .iter()
        .any(|c| d.verdict.summary.contains(&format!("{c} Gb/s")))
}

#[test]
fn two_cores_carry_twice_what_one_core_does() {
    let tests = || {
        vec![
            tcp(Direction::Send, 1, 25.0, 70.0),
            tcp(Direction::Send, 4, 28.0, 70.0),
        ]
    };
    let two = run("two cores", &self_check(7.8, 2, tests()));
    let one = run("one core", &self_check(7.8, 1, tests()));
    // One copy per byte on each of two cores: the copy rate itself, 7.8 GB/s = 62.4 Gb/s.
    assert_eq!(two.verdict.ceiling_gbps, 62.4);
    // Both copies on one core: half that.
    assert_eq!(one.verdict.ceiling_gbps, 31.2);
    for (d, c) in [(&two, 62.4), (&one, 31.2)] {
        // Below an upper bound with nothing to explain it: a note, not a warning.
        let u = with_id(d, "unexplained").expect("unexplained");
        assert_eq!(u.severity.as_str(), "info");
        // One stream is judged, not the four.
        assert_eq!(d.verdict.gbps, 25.0);
        assert!(shows_ceiling(d, c), "{}", d.verdict.summary);
        assert!(
            d.verdict.summary.contains("the host stack can carry"),
            "{}",
            d.verdict.summary
        );
        assert!(with_id(d, "ceiling.exceeded").is_none());
    }
    assert!(
        two.verdict
            .summary
            .contains("one memory copy per byte on each of 2 cores at 7.8 GB/s"),
        "{}",
        two.verdict.summary
    );
    assert!(
        one.verdict
            .summary
            .contains("two memory copies per byte on 1 core at 7.8 GB/s"),
        "{}",
        one.verdict.summary
    );
}

#[test]
fn a_stream_above_the_bound_is_said_and_not_judged() {
    // The copy rate was measured in a busy moment: 3.9 GB/s gives 31.2 Gb/s, one stream did 37.
    let d = run(
        "exceeded",
        &self_check(3.9, 2, vec![tcp(Direction::Send, 1, 37.02, 60.0)]),
    );
    let f = with_id(&d, "ceiling.exceeded").expect("ceiling.exceeded");
    assert_eq!(f.severity.as_str(), "info");
    assert_eq!(f.subject, "path");
    assert_eq!(f.evidence["measured (Gb/s)"], "37.02");
    assert_eq!(f.evidence["host stack bound (Gb/s)"], "31.2");
    assert!(f.evidence["basis"].contains("3.9 GB/s"), "{:?}", f.evidence);
    assert!(f.message.contains("measured too low"), "{}", f.message);
    assert!(f.message.contains("not judged"), "{}", f.message);
    // No ceiling: the result is not judged against one.
    assert_eq!(d.verdict.ceiling_gbps, 0.0);
    assert_eq!(d.verdict.gbps, 37.02);
    assert_eq!(d.verdict.limited_by.as_str(), "unknown");
    assert!(
        d.verdict.summary.contains("no ceiling is known"),
        "{}",
        d.verdict.summary
    );
    assert!(
        d.verdict.summary.contains("ceiling.exceeded"),
        "{}",
        d.verdict.summary
    );
    assert!(with_id(&d, "ceiling.reached").is_none());
    assert!(with_id(&d, "unexplained").is_none());
    // A receive stream above the bound proves the same: the bound is the host's, not a direction's.
    let d = run(
        "exceeded, receive",
        &self_check(
            3.9,
            2,
            vec![
                tcp(Direction::Send, 1, 30.0, 60.0),
                tcp(Direction::Receive, 1, 35.0, 60.0),
            ],
        ),
    );
    assert!(with_id(&d, "ceiling.exceeded").is_some());
    assert_eq!(d.verdict.ceiling_gbps, 0.0);
}

#[test]
fn a_faster_machine_keeps_its_ceiling_below_the_bound() {
    // The machine: one core copies 7.8 GB/s and one stream carries 37-40 Gb/s. Half the
    // copy rate (31.2 Gb/s) was beaten; one copy per byte per core (62.4 Gb/s) is not.
    for copy in [3.9, 7.8, 15.6, 31.2] {
        let bound = copy * 8.0;
        for share in [0.3, 0.6, 0.95, 1.0] {
            let g = bound * share;
            let name = format!("copy {copy} GB/s, stream at {share} of the bound");
            let d = run(
                &name,
                &self_check(
                    copy,
                    4,
                    vec![
                        tcp(Direction::Send, 1, g, 99.0),
                        tcp(Direction::Receive, 1, g, 99.0),
                    ],
                ),
            );
            assert_eq!(d.verdict.ceiling_gbps, r3(bound), "{name}");
            assert!(with_id(&d, "ceiling.exceeded").is_none(), "{name}");
            assert!(shows_ceiling(&d, bound), "{name}: {}", d.verdict.summary);
        }
    }
}

/// The advice of the one `cpu.saturated` finding of `d`.
fn saturated_fix(d: &Diagnosis) -> &str {
    &with_id(d, "cpu.saturated").expect("cpu.saturated").fix
}

#[test]
fn cpu_saturated_on_loopback_gives_host_advice_only() {
    let d = run(
        "loopback, saturated",
        &self_check(7.8, 2, vec![tcp(Direction::Send, 1, 30.0, 100.0)]),
    );
    let fix = saturated_fix(&d);
    for want in ["-P 4", "-A", "governor"] {
        assert!(fix.contains(want), "{want}: {fix}");
    }
    for nic in ["NUMA", "interrupt", "jumbo", "IPoIB"] {
        assert!(!fix.contains(nic), "{nic} on loopback: {fix}");
    }
}

/// One stream whose receiver is the busy end, and its `--discard` twin at `discard_gbps`.
fn receiver_bound(discard_gbps: f64) -> Diagnosis {
    let copy = Measured {
        sender_cpu_percent: Some(70.0),
        receiver_cpu_percent: Some(99.0),
        ..tcp(Direction::Send, 1, 22.0, 99.0)
    };
    let twin = Measured {
        discard: true,
        ..tcp(Direction::Send, 1, discard_gbps, 70.0)
    };
    run("receiver-bound", &self_check(7.8, 2, vec![copy, twin]))
}

#[test]
fn a_receiver_bound_stream_is_told_what_its_copy_costs() {
    let d = receiver_bound(33.0);
    let sat = with_id(&d, "cpu.saturated").expect("cpu.saturated");
    assert!(sat.message.contains("receiving core"), "{}", sat.message);
    assert!(
        sat.message.contains(
            "22 Gb/s copying into the application, 33 Gb/s with the data dropped in the kernel"
        ),
        "{}",
        sat.message
    );
    assert!(
        sat.message.contains("holds the stream back by 33%"),
        "{}",
        sat.message
    );
    assert!(d
        .checked
        .iter()
        .any(|c| c.starts_with("the receiver's copy (send direction)")));
    // The diagnostic run is not a rate the path gives an application: it is never judged.
    assert_eq!(d.verdict.gbps, 22.0);

    let same = receiver_bound(22.5);
    let sat = with_id(&same, "cpu.saturated").expect("cpu.saturated");
    assert!(
        sat.message.contains("not faster without the copy"),
        "{}",
        sat.message
    );
}

#[test]
fn without_a_discard_twin_nothing_is_said_of_the_copy() {
    let d = run(
        "no twin",
        &self_check(7.8, 2, vec![tcp(Direction::Send, 1, 22.0, 99.0)]),
    );
    assert!(d.checked.iter().all(|c| !c.contains("receiver's copy")));
    assert!(d.findings.iter().all(|f| !f.message.contains("--discard")));
}

fn fixture_facts(case: &str, netdev: &str) -> EndFacts {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(case);
    let inv = linerate_inventory::probe(&root).unwrap_or_else(|e| panic!("probe {case}: {e}"));
    end_facts(&inv, Some(netdev), Vec::new())
}

fn nic_path(case: &str, netdev: &str, gbps: f64) -> Diagnosis {
    let end = fixture_facts(case, netdev);
    run(
        case,
        &DiagnoseInput {
            local: end.clone(),
            remote: Some(end),
            tests: vec![tcp(Direction::Send, 1, gbps, 100.0)],
            host_stack: None,
            counter_deltas: Vec::new(),
            qdiscs: linerate_facts::QdiscsSeen::default(),
        },
    )
}

#[test]
fn cpu_saturated_on_a_nic_fits_the_port() {
    // 40 GbE at MTU 1500: the NIC's placement and jumbo frames, no IPoIB.
    let d = nic_path("cx3-fdr-eth40", "enp4s0", 12.0);
    let fix = saturated_fix(&d);
    for want in [
        "-P 4",
        "NUMA node",
        "interrupt core",
        "jumbo frames",
        "governor",
    ] {
        assert!(fix.contains(want), "{want}: {fix}");
    }
    assert!(!fix.contains("IPoIB"), "IPoIB on Ethernet: {fix}");
    // IPoIB in datagram mode: connected mode, no jumbo frames.
    let d = nic_path("cx3-fdr-at-qdr-datagram", "ib0", 9.8);
    let fix = saturated_fix(&d);
    for want in ["-P 4", "NUMA node", "IPoIB connected mode"] {
        assert!(fix.contains(want), "{want}: {fix}");
    }
    assert!(!fix.contains("jumbo"), "jumbo frames on InfiniBand: {fix}");
}

/// `EndFacts` travels as JSON (the server's facts, doctor's `path`): the typed port kind and
/// IPoIB mode are written and read as the same strings as before.
#[test]
fn end_facts_keep_their_json_shape() {
    let lo = loopback(2);
    let v = serde_json::to_value(&lo).unwrap();
    assert_eq!(v["port_kind"], "loopback");
    assert!(v["ipoib_mode"].is_null());
    assert_eq!(serde_json::from_value::<EndFacts>(v).unwrap(), lo);
    let ib = fixture_facts("cx3-fdr-at-qdr-datagram", "ib0");
    let v = serde_json::to_value(&ib).unwrap();
    assert_eq!(v["port_kind"], "infiniband");
    assert_eq!(v["ipoib_mode"], "datagram");
    // Findings keep their string ids.
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "ipoib.datagram_mode"));
    assert_eq!(serde_json::from_value::<EndFacts>(v).unwrap(), ib);
}

/// A single stream on loopback while other processes held the cores: the self-check
/// during a build on 2 cores (the sender's threads at 18 %, the busiest core at 100 %, most of
/// it the build's), against a bound measured at 50.3 GB/s (402.6 Gb/s).
fn contended_stream(other_cores: f64, others_on_busiest: Option<f64>, thread: f64) -> Measured {
    Measured {
        sender_cpu_percent: Some(thread),
        receiver_cpu_percent: Some(thread * 0.9),
        busiest_core_percent: Some(100.0),
        busiest_core_others_percent: others_on_busiest,
        other_cores: Some(other_cores),
        ..tcp(Direction::Send, 1, 6.46, thread)
    }
}

#[test]
fn a_core_held_by_other_processes_is_contention_not_saturation() {
    let d = run(
        "build on both cores",
        &self_check(
            50.32,
            2,
            vec![
                contended_stream(1.6, Some(62.0), 18.0),
                Measured {
                    other_cores: Some(1.5),
                    ..tcp(Direction::Send, 2, 7.1, 20.0)
                },
            ],
        ),
    );
    assert!(with_id(&d, "cpu.saturated").is_none(), "{:?}", d.findings);
    let c = with_id(&d, "cpu.contended").expect("cpu.contended");
    assert!(c.message.contains("1.6 of 2 cores"), "{}", c.message);
    assert!(
        c.message
            .contains("held the busiest core: at least 62% of its time during the tcp_bw test (send direction, 1 stream)"),
        "{}",
        c.message
    );
    assert_eq!(
        c.evidence["busiest_core_others_percent (at least, during the test below)"],
        "62"
    );
    // The verdict leads with what limits, and a bound 62 times the result is not quoted.
    let v = &d.verdict;
    assert!(
        v.summary
            .starts_with("limited by other processes competing for the CPU"),
        "{}",
        v.summary
    );
    assert!(
        v.summary.contains("one TCP stream 6.46 Gb/s"),
        "{}",
        v.summary
    );
    assert!(!v.summary.contains("402.6"), "{}", v.summary);
    assert!(!v.summary.contains("host stack can carry"), "{}", v.summary);
    // The bound stays in the data: it is the path's ceiling.
    assert_eq!(v.ceiling_gbps, r3(50.32 * 8.0));

    // Others' share of the cores misread as quiet (unrelated linerate processes counted as
    // linerate's, as before): the busiest core's share still shows it was not linerate's.
    let d = run(
        "busiest core held, cores misread",
        &self_check(50.32, 2, vec![contended_stream(0.1, Some(62.0), 18.0)]),
    );
    assert!(with_id(&d, "cpu.saturated").is_none(), "{:?}", d.findings);
    assert!(with_id(&d, "cpu.contended").is_some());
}

#[test]
fn a_thread_of_linerate_at_a_full_core_is_saturation_even_when_busy() {
    // Under contention, a linerate thread that still had 95 % of a core: that core is its own.
    let d = run(
        "own thread saturated under load",
        &self_check(50.32, 2, vec![contended_stream(0.8, Some(10.0), 95.0)]),
    );
    let s = with_id(&d, "cpu.saturated").expect("cpu.saturated");
    assert!(
        s.message.contains("kept the sending core at 95%"),
        "{}",
        s.message
    );
    assert!(with_id(&d, "cpu.contended").is_some());
    // Quiet host, threads at 80 % and the busiest core at 98 %: the softirq work on top of the
    // thread filled it, so it is linerate's core.
    let quiet = Measured {
        busiest_core_percent: Some(98.0),
        busiest_core_others_percent: Some(0.0),
        ..tcp(Direction::Send, 1, 30.0, 80.0)
    };
    let d = run("quiet busiest core", &self_check(7.8, 2, vec![quiet]));
    let s = with_id(&d, "cpu.saturated").expect("cpu.saturated");
    assert!(
        s.message.contains("kept this host's busiest core at 98%"),
        "{}",
        s.message
    );
    assert!(
        s.message.contains("other processes were idle"),
        "{}",
        s.message
    );
    assert!(with_id(&d, "cpu.contended").is_none());
}

#[test]
fn the_stack_bound_is_quoted_only_where_it_informs() {
    // Within 12 times the bound: quoted (the idle machines' streams are 6-12 times below it).
    let near = run(
        "within",
        &self_check(7.8, 2, vec![tcp(Direction::Send, 1, 62.4 / 11.0, 50.0)]),
    );
    assert!(
        near.verdict.summary.contains("the host stack can carry"),
        "{}",
        near.verdict.summary
    );
    // Far below, with the receiver's copy measured without it on the spot: that is the figure.
    let far = run(
        "far, with a twin",
        &self_check(
            50.32,
            2,
            vec![
                contended_stream(1.6, Some(62.0), 18.0),
                Measured {
                    discard: true,
                    ..tcp(Direction::Send, 1, 7.02, 20.0)
                },
            ],
        ),
    );
    let s = &far.verdict.summary;
    assert!(!s.contains("host stack can carry"), "{s}");
    assert!(
        s.contains("one TCP stream 6.46 Gb/s (7.02 Gb/s measured just after with the receiver's copy left out, `--discard`)"),
        "{s}"
    );
}

/// Two guests whose ports are paravirtual NICs (virtio_net, also under a soft-RoCE device).
fn guests(tests: Vec<Measured>) -> DiagnoseInput {
    let end = || EndFacts {
        netdev: Some("enp1s0".into()),
        port_kind: Some(PortKind::Roce),
        paravirtual: Some("virtio_net".into()),
        mtu: Some(1500),
        ..loopback(2)
    };
    DiagnoseInput {
        local: end(),
        remote: Some(end()),
        tests,
        host_stack: host_stack_ceiling(&HostStackInput {
            copy_gb_per_s: 3.1,
            cores: 2,
        }),
        counter_deltas: Vec::new(),
        qdiscs: linerate_facts::QdiscsSeen::default(),
    }
}

#[test]
fn a_paravirtual_path_far_below_the_guests_stack_is_the_hypervisors() {
    // The lab's two guests under TCG: 0.14 Gb/s with the guests' CPUs at 17%.
    let d = run(
        "paravirtual",
        &guests(vec![
            tcp(Direction::Send, 1, 0.14, 17.0),
            tcp(Direction::Receive, 1, 0.14, 17.0),
        ]),
    );
    let f = with_id(&d, "net.paravirtual").expect("net.paravirtual");
    assert_eq!(f.severity.as_str(), "warning");
    assert!(
        f.message.contains("virtio_net on both ends"),
        "{}",
        f.message
    );
    assert_eq!(
        f.evidence.get("local driver").map(String::as_str),
        Some("virtio_net")
    );
    assert!(with_id(&d, "unexplained").is_none());
    assert_eq!(d.verdict.limited_by.as_str(), "hypervisor");
    assert!(
        d.verdict
            .summary
            .starts_with("limited by the hypervisor's paravirtual NIC"),
        "{}",
        d.verdict.summary
    );
    // A guest core at its limit is the answer instead: it is inside the guest.
    let d = run(
        "paravirtual, guest core saturated",
        &guests(vec![tcp(Direction::Send, 1, 0.14, 99.0)]),
    );
    assert!(with_id(&d, "net.paravirtual").is_none());
    assert_eq!(d.verdict.limited_by.as_str(), "cpu");
    // Without a paravirtual end the gap stays unexplained.
    let mut i = guests(vec![tcp(Direction::Send, 1, 0.14, 17.0)]);
    i.local.paravirtual = None;
    i.remote.as_mut().unwrap().paravirtual = None;
    i.local.port_kind = Some(PortKind::Virtual);
    i.remote.as_mut().unwrap().port_kind = Some(PortKind::Virtual);
    let d = run("veth", &i);
    assert!(with_id(&d, "net.paravirtual").is_none());
    assert!(with_id(&d, "unexplained").is_some());
}
