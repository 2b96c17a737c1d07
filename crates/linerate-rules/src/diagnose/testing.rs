//! Constructed data for the rules' unit tests (as `tests/common` and the integration tests
//! build theirs): ends, results and inputs, and [`run`], the rules with each finding checked
//! against the ids its rule's row says it emits.

use linerate_facts::{EndFacts, Finding, FindingId, PortKind, SocketLimits};
use linerate_model::{Ceiling, LimitedBy};
use linerate_proto::{Direction, RdmaOp, TestKind};

use super::context::Ctx;
use super::registry::{self, FactOutputs, FindingsOutputs, Found};
use super::{diagnose, edits, DiagnoseInput, Diagnosis, Measured};

/// An Ethernet NIC `netdev` whose hardware carries `gbps` (TCP payload: 94% of it), MTU 1500.
pub(super) fn nic(netdev: &str, gbps: f64) -> EndFacts {
    EndFacts {
        netdev: Some(netdev.into()),
        port_kind: Some(PortKind::Ethernet),
        mtu: Some(1500),
        ipoib_mode: None,
        ceiling: Some(Ceiling {
            gbps,
            limited_by: LimitedBy::Link,
            chain: Vec::new(),
            tcp_gbps: Some(gbps * 0.94),
            potential_gbps: None,
            summary: format!("{gbps} Gb/s link"),
        }),
        numa_node: Some(0),
        cpus: 16,
        sockets: SocketLimits::default(),
        shapers: Vec::new(),
        findings: Vec::new(),
        paravirtual: None,
        optics: None,
        fec: None,
    }
}

/// A veth end: no physical link, no hardware ceiling.
pub(super) fn veth(netdev: &str) -> EndFacts {
    EndFacts {
        port_kind: Some(PortKind::Virtual),
        ceiling: None,
        numa_node: None,
        cpus: 2,
        ..nic(netdev, 0.0)
    }
}

/// A guest's virtio NIC: a virtual path the hypervisor carries.
pub(super) fn guest(netdev: &str) -> EndFacts {
    EndFacts {
        port_kind: Some(PortKind::Ethernet),
        paravirtual: Some("virtio_net".into()),
        ..veth(netdev)
    }
}

/// A TCP bandwidth result of about 10 s, the CPUs of both ends quiet, nothing lost.
pub(super) fn tcp(direction: Direction, streams: u32, gbps: f64) -> Measured {
    Measured {
        kind: TestKind::TcpBw,
        direction,
        rdma: None,
        latency: false,
        streams,
        gbps,
        sender_cpu_percent: Some(30.0),
        receiver_cpu_percent: Some(25.0),
        max_stream_cpu_percent: Some(30.0),
        busiest_core_percent: Some(35.0),
        busiest_core_others_percent: Some(0.0),
        other_cores: Some(0.02),
        steal_cores: Some(0.0),
        retransmits: Some(0),
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

/// A UDP bandwidth result that lost `loss` percent of its datagrams.
pub(super) fn udp(direction: Direction, gbps: f64, loss: f64) -> Measured {
    Measured {
        kind: TestKind::UdpBw,
        retransmits: None,
        segments: None,
        spurious_retransmits: None,
        loss_percent: Some(loss),
        lost_packets: None,
        receiver_udp: None,
        ..tcp(direction, 1, gbps)
    }
}

/// An RDMA write bandwidth result.
pub(super) fn rdma(gbps: f64) -> Measured {
    Measured {
        kind: TestKind::Rdma,
        rdma: Some(RdmaOp::Write),
        retransmits: None,
        segments: None,
        spurious_retransmits: None,
        ..tcp(Direction::Send, 1, gbps)
    }
}

/// Both ends and the results, nothing else counted.
pub(super) fn input(
    local: EndFacts,
    remote: Option<EndFacts>,
    tests: Vec<Measured>,
) -> DiagnoseInput {
    DiagnoseInput {
        local,
        remote,
        tests,
        host_stack: None,
        counter_deltas: Vec::new(),
        qdiscs: linerate_facts::QdiscsSeen::default(),
    }
}

/// The rules over `i`, every finding of the rules over the facts checked against its row's
/// ids, the verdict and the findings printed (shown on failure).
pub(super) fn run(i: &DiagnoseInput) -> Diagnosis {
    let c = Ctx::new(i);
    let facts = FactOutputs::run(&c);
    let found = Found {
        findings: edits::apply(&facts),
        checked: registry::checked(&facts.each()),
    };
    let judged = FindingsOutputs::run(&c, &found);
    for (rule, out) in facts.each().into_iter().chain(judged.each()) {
        for f in out.findings() {
            assert!(rule.emits(f.id), "{} emitted {}", rule.name(), f.id);
        }
    }
    let d = diagnose(i);
    println!("verdict: {}", d.verdict.summary);
    for f in &d.findings {
        println!(
            "  {} {} {}: {}",
            f.severity.as_str(),
            f.id,
            f.subject,
            f.message
        );
    }
    d
}

/// The findings of `d` with id `id`.
pub(super) fn with_id(d: &Diagnosis, id: FindingId) -> Vec<&Finding> {
    d.findings.iter().filter(|f| f.id == id).collect()
}

/// The one finding of `d` with id `id` (none or several fail).
pub(super) fn one(d: &Diagnosis, id: FindingId) -> &Finding {
    match with_id(d, id).as_slice() {
        [f] => f,
        other => panic!("{id}: {} findings", other.len()),
    }
}
