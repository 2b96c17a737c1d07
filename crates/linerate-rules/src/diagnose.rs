//! Doctor's rules: measured results set against the ceiling of their path.
//!
//! Pure: [`diagnose`] takes the facts of both ends ([`EndFacts`], which
//! [`end_facts`] builds from an inventory) and the measured results
//! ([`Measured`]), and returns the findings, ranked, and a verdict.
//!
//! Shape: a context computed once (`Ctx`: the ends, the judged direction, its path ceiling
//! and best result), one function per rule returning its findings, and `verdict`.

use std::fmt::Write as _;

use linerate_facts::{
    Cause, CounterDelta, DoctorVerdict, EndFacts, Finding, FindingId, Inventory, IpoibMode,
    PortKind, QdiscDelta, QdiscSide, QdiscsSeen, Severity, ShaperFact, TcpBufferSizes, SYSCTL_FILE,
};
use linerate_model::{Ceiling, HostStackCeiling, LimitedBy, StageKind};
use linerate_proto::{Direction, HostCpuLoad, RdmaOp, TestKind, TestParams};
use linerate_units::{bps_to_gbps, fmt_num, fmt_round, r3};
use serde::{Deserialize, Serialize};

use crate::finding::rank;
use crate::thresholds::{
    ASYMMETRIC_FRACTION, BUFFER_MARGIN, CEILING_REACHED_FRACTION, CONTENDED_OTHER_CORES,
    CONTENDED_STEAL_CORES, COPY_VISIBLE_RATIO, CORE_SATURATED_PERCENT, IP_STACK_EXPLAINS_PERCENT,
    IP_STACK_VISIBLE_PERCENT, IP_STACK_WARNING_PERCENT, OTHERS_HELD_CORE_PERCENT, QDISC_DROPS_MIN,
    QUIET_OTHER_CORES, RDMA_NEAR_CEILING_FRACTION, RETRANSMITS_MIN, RETRANSMIT_RATE,
    SHAPER_REACHED_FRACTION, STACK_BOUND_SHOWN_WITHIN, THREAD_SATURATED_PERCENT, UDP_LOSS_PERCENT,
};

/// One measured result, reduced to what the rules need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub kind: TestKind,
    /// From this host's point of view: `Send` is local → remote.
    pub direction: Direction,
    /// RDMA tests: the operation (None for the other kinds).
    #[serde(default)]
    pub rdma: Option<RdmaOp>,
    /// A latency test (ping-pong) rather than a bandwidth test: `tcp_lat`, `udp_lat`, and RDMA
    /// `*_lat`.
    #[serde(default)]
    pub latency: bool,
    pub streams: u32,
    /// Receiver Gb/s.
    pub gbps: f64,
    pub sender_cpu_percent: Option<f64>,
    pub receiver_cpu_percent: Option<f64>,
    /// Highest CPU use of a single stream's thread, either end.
    pub max_stream_cpu_percent: Option<f64>,
    /// Busiest core of this host during the test (user + system + interrupts, from /proc/stat).
    #[serde(default)]
    pub busiest_core_percent: Option<f64>,
    /// Of that core's time, the share other processes held at least (its task time beyond all
    /// of linerate's CPU time: `linerate_engine::hostcpu`), percent.
    #[serde(default)]
    pub busiest_core_others_percent: Option<f64>,
    /// Cores' worth of CPU that other processes on this host used during the test
    /// (user + system not spent by linerate), and stolen by the hypervisor.
    #[serde(default)]
    pub other_cores: Option<f64>,
    #[serde(default)]
    pub steal_cores: Option<f64>,
    pub retransmits: Option<u64>,
    /// Segments the sender sent (≈ bytes / MSS), to put retransmits in proportion.
    pub segments: Option<u64>,
    pub rtt_us: Option<f64>,
    /// TCP_INFO's chrono times (None before Linux 4.10): % of the test the senders had data
    /// queued or in flight, and of that time, % spent waiting on the receiver's window and on
    /// their own send buffer.
    #[serde(default)]
    pub tcp_busy_percent: Option<f64>,
    #[serde(default)]
    pub rwnd_limited_percent: Option<f64>,
    #[serde(default)]
    pub sndbuf_limited_percent: Option<f64>,
    pub loss_percent: Option<f64>,
    pub error: Option<String>,
    /// A diagnostic run whose receiver dropped the data in the kernel (`bench --discard`):
    /// not a rate an application gets, so no rule judges the path by it; it only tells what
    /// the receiver's copy costs ([`receiver_copy`]).
    #[serde(default)]
    pub discard: bool,
    /// The far end's CPUs during the test, as it reported them (None: an older server, a stock
    /// iperf3 server, or a far end on this host, whose CPU this host's figures cover).
    #[serde(default)]
    pub remote_cpu: Option<HostCpuLoad>,
}

impl Measured {
    /// A TCP bandwidth test in direction `d` (not a `--discard` diagnostic run).
    fn is_tcp_bw(&self, d: Direction) -> bool {
        self.kind == TestKind::TcpBw && self.direction == d && !self.discard
    }

    /// A TCP bandwidth result of one direction that counts as "best TCP": not `--discard`,
    /// not failed.
    fn is_tcp_result(&self) -> bool {
        (self.is_tcp_bw(Direction::Send) || self.is_tcp_bw(Direction::Receive))
            && self.error.is_none()
    }

    /// The `--discard` twin of a single stream in direction `d`, if doctor ran one.
    fn is_discard_twin(&self, d: Direction) -> bool {
        self.kind == TestKind::TcpBw
            && self.discard
            && self.direction == d
            && self.streams == 1
            && self.error.is_none()
    }

    /// One TCP stream in one direction: what the host stack's ceiling is about.
    fn is_single_stream(&self, d: Direction) -> bool {
        self.is_tcp_bw(d) && self.streams == 1
    }

    /// An RDMA bandwidth test that completed.
    fn is_rdma_bw(&self) -> bool {
        self.kind == TestKind::Rdma && !self.latency && self.error.is_none()
    }

    /// The test in the words every output names it by (`TCP send, 1 stream`):
    /// `TestParams::words`, the one describer of a test.
    pub fn words(&self) -> String {
        TestParams {
            streams: self.streams,
            discard: self.discard,
            ..TestParams::new(self.kind, self.direction)
        }
        .words()
    }

    /// The result's kind as bench names it (`tcp_bw`, `rdma_write_bw`), for subjects and evidence.
    fn kind_name(&self) -> &'static str {
        match (self.kind, self.rdma, self.latency) {
            (TestKind::Rdma, Some(RdmaOp::Write), false) => "rdma_write_bw",
            (TestKind::Rdma, Some(RdmaOp::Read), false) => "rdma_read_bw",
            (TestKind::Rdma, Some(RdmaOp::Send), false) => "rdma_send_bw",
            (TestKind::Rdma, Some(RdmaOp::Write), true) => "rdma_write_lat",
            (TestKind::Rdma, Some(RdmaOp::Read), true) => "rdma_read_lat",
            (TestKind::Rdma, Some(RdmaOp::Send), true) => "rdma_send_lat",
            (k, _, _) => k.as_str(),
        }
    }
}

/// `send`, `receive`, `bidir`: the direction as results and findings name it.
fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Receive => "receive",
        Direction::Bidir => "bidir",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnoseInput {
    pub local: EndFacts,
    /// None for the self-check.
    pub remote: Option<EndFacts>,
    pub tests: Vec<Measured>,
    /// The host stack's upper bound for one TCP stream (`linerate_model::host`): the ceiling of a
    /// path with no hardware ceiling. None when the copy rate was not measured.
    pub host_stack: Option<HostStackCeiling>,
    pub counter_deltas: Vec<CounterDelta>,
    /// What the qdiscs of each end counted during the tests (drops, overlimits, requeues).
    #[serde(default)]
    pub qdiscs: QdiscsSeen,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    pub verdict: DoctorVerdict,
    pub findings: Vec<Finding>,
    /// What was checked (listed in `unexplained`).
    pub checked: Vec<String>,
    /// The best TCP result of all, for the pyramid's network row ([`best_tcp`]).
    pub best_tcp: Option<BestTcp>,
}

/// Facts of one end from its inventory, for the interface named `netdev`.
pub fn end_facts(inv: &Inventory, netdev: Option<&str>, shapers: Vec<ShaperFact>) -> EndFacts {
    let port = netdev.and_then(|n| inv.ports.iter().find(|p| p.netdev.as_deref() == Some(n)));
    let nd = netdev.and_then(|n| inv.netdev(n));
    let pci = port.and_then(|p| inv.port_pci(p));
    let analysis = crate::analyze(inv);
    let findings = analysis
        .findings
        .iter()
        .filter(|f| {
            f.subject == "host"
                || port.is_some_and(|p| {
                    f.subject == p.name || p.pci.as_deref() == Some(f.subject.as_str())
                })
        })
        .filter(|f| f.id != FindingId::SysfsUnreadable || f.severity > Severity::Info)
        .cloned()
        .collect();
    EndFacts {
        netdev: netdev.map(str::to_string),
        port_kind: port.map(|p| p.kind),
        mtu: nd.and_then(|n| n.mtu),
        ipoib_mode: nd.and_then(|n| n.ipoib.as_ref()).and_then(|i| i.mode),
        ceiling: port.map(|p| crate::port_ceiling(inv, p)),
        numa_node: pci.and_then(|f| f.numa_node),
        cpus: inv.host.cpus.len(),
        sockets: inv.host.sockets.clone(),
        shapers,
        findings,
        paravirtual: nd
            .filter(|n| n.paravirtual)
            .map(|n| n.driver.clone().unwrap_or_else(|| "paravirtual".into())),
    }
}

/// What the rules read off an end's facts.
trait EndView {
    fn is_virtual(&self) -> bool;
    fn tcp_ceiling(&self) -> Option<f64>;
    fn shaper_goodput(&self) -> Option<(f64, &ShaperFact)>;
    fn port_down(&self) -> bool;
}

impl EndView for EndFacts {
    /// No physical link behind this end (loopback, veth, bridge, paravirtual), or no port known.
    fn is_virtual(&self) -> bool {
        self.port_kind.is_none_or(PortKind::is_virtual) || self.paravirtual.is_some()
    }

    /// The hardware TCP ceiling of this end's port, Gb/s, when known.
    fn tcp_ceiling(&self) -> Option<f64> {
        let c = self.ceiling.as_ref()?;
        if c.gbps <= 0.0 {
            return None;
        }
        Some(c.tcp_gbps.unwrap_or(c.gbps))
    }

    /// The lowest shaper, as TCP goodput at this MTU (shapers count whole frames).
    fn shaper_goodput(&self) -> Option<(f64, &ShaperFact)> {
        let s = self.shapers.iter().min_by_key(|s| s.rate_bps)?;
        let mtu = f64::from(self.mtu.unwrap_or(1500).clamp(576, 65_536));
        Some((
            bps_to_gbps(s.rate_bps as f64) * (mtu - 52.0) / (mtu + 14.0),
            s,
        ))
    }

    /// The port state stops all traffic (port down, no subnet manager).
    fn port_down(&self) -> bool {
        self.ceiling.as_ref().is_some_and(|c| {
            matches!(
                c.limited_by,
                LimitedBy::PortDown | LimitedBy::NoSubnetManager
            )
        })
    }
}

/// Path ceiling for TCP and what sets it.
struct PathCeiling {
    gbps: Option<f64>,
    limited_by: Cause,
    why: String,
    /// The ceiling is the host stack's bound for one stream (a path with no hardware ceiling):
    /// one stream is judged by it, not the best of several.
    per_stream: bool,
}

/// Evidence key of `rdma.vs_tcp`: how much slower TCP is than RDMA, %.
const IP_STACK_COST: &str = "ip_stack_cost_percent";

/// Does this finding put TCP's gap down to the IP stack (TCP ≥ 10% below RDMA on the path)?
fn ip_stack_explains(f: &Finding) -> bool {
    f.id == FindingId::RdmaVsTcp
        && f.evidence
            .get(IP_STACK_COST)
            .and_then(|c| c.parse::<f64>().ok())
            .is_some_and(|c| c >= IP_STACK_EXPLAINS_PERCENT)
}

/// RDMA and TCP on the same path, side by side with the ceiling: what the IP stack costs,
/// and whether the hardware holds both back. None without an RDMA bandwidth result.
pub fn rdma_vs_tcp(i: &DiagnoseInput) -> Option<Finding> {
    let rdma = i
        .tests
        .iter()
        .filter(|t| t.is_rdma_bw())
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
    let tcp = i
        .tests
        .iter()
        .filter(|t| t.is_tcp_bw(Direction::Send))
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
    let pc = path_ceiling(i, Direction::Send);
    let (r, t) = (rdma.gbps, tcp.gbps);
    if r <= 0.0 {
        return None;
    }
    let cost = (1.0 - t / r) * 100.0;
    // The conclusion first (the verdict quotes what precedes the first colon).
    let mut msg = if cost >= IP_STACK_VISIBLE_PERCENT {
        format!("the IP stack and CPU, which cost {cost:.0}%")
    } else {
        "TCP keeps up with RDMA on this path".to_string()
    };
    let _ = write!(
        msg,
        ": RDMA {} Gb/s, TCP {} Gb/s ({} stream{})",
        fmt_round(r, 2),
        fmt_round(t, 2),
        tcp.streams,
        if tcp.streams == 1 { "" } else { "s" }
    );
    let near = pc
        .gbps
        .filter(|c| *c > 0.0 && r >= RDMA_NEAR_CEILING_FRACTION * c);
    match (pc.gbps, near) {
        (Some(c), Some(_)) => {
            let _ = write!(msg, "; {} caps both near {}", pc.why, fmt_round(c, 1));
        }
        (Some(_), None) if pc.per_stream => {
            msg.push_str("; the path has no hardware ceiling to set RDMA against");
        }
        (Some(c), None) if c > 0.0 => {
            let _ = write!(
                msg,
                "; RDMA itself reaches {:.0}% of the {} Gb/s ceiling, so the hardware path (link, PCIe, cable, switch) falls short too",
                r / c * 100.0,
                fmt_round(c, 1)
            );
        }
        _ => {}
    }
    let severity = if cost > IP_STACK_WARNING_PERCENT {
        Severity::Warning
    } else {
        Severity::Info
    };
    let fix = if cost > IP_STACK_WARNING_PERCENT {
        "TCP leaves much of what the hardware does unused: more streams (-P), IPoIB connected mode with MTU 65520 or jumbo frames, IRQs and threads on the NIC's NUMA node; or use RDMA directly (NFS over RDMA, MPI, ...)"
    } else if pc.per_stream {
        "nothing to fix in the IP stack"
    } else {
        "nothing to fix in the IP stack; the gap to the ceiling, if any, is in the hardware path"
    };
    Some(
        Finding::new(FindingId::RdmaVsTcp, severity, "path")
            .evidence("rdma (Gb/s)", format!("{r:.2}"))
            .evidence("rdma test", rdma.kind_name())
            .evidence("tcp (Gb/s)", format!("{t:.2}"))
            .evidence(IP_STACK_COST, format!("{cost:.1}"))
            .evidence(
                "ceiling (Gb/s)",
                pc.gbps.map_or("unknown".into(), |c| format!("{c:.2}")),
            )
            .message(msg)
            .fix(fix),
    )
}

/// The best TCP result of all: every stream count, both directions, not a `--discard` run,
/// not one that failed. The one figure every output calls "network, best TCP result" (the
/// pyramid's network row), chosen here only; the verdict's own figure (`DoctorVerdict::test`:
/// one stream on a virtual path, the slower direction) is named by its test and may be smaller.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestTcp {
    pub gbps: f64,
    /// The test whose result it is, in words (`TCP send, 2 streams`).
    pub test: String,
    /// What the path can carry in that test's direction, Gb/s, when known.
    pub ceiling_gbps: Option<f64>,
}

/// The best TCP result of all ([`BestTcp`]); `None` when no TCP test completed.
pub fn best_tcp(i: &DiagnoseInput) -> Option<BestTcp> {
    i.tests
        .iter()
        .filter(|t| t.is_tcp_result())
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .map(|t| BestTcp {
            gbps: t.gbps,
            test: t.words(),
            ceiling_gbps: path_ceiling(i, t.direction).gbps,
        })
}

/// The best single TCP stream in either direction when it beat the host stack's bound: the
/// bound's input (one core's copy rate) was measured too low, so the bound cannot be used.
fn stack_beaten(i: &DiagnoseInput) -> Option<(&Measured, &HostStackCeiling)> {
    let h = i.host_stack.as_ref()?;
    i.tests
        .iter()
        .filter(|t| t.is_single_stream(Direction::Send) || t.is_single_stream(Direction::Receive))
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .filter(|t| t.gbps > h.gbps)
        .map(|t| (t, h))
}

/// The words for a hardware ceiling set at `end`.
fn hardware_words(c: &Ceiling, end: &str) -> String {
    match c.limited_by {
        LimitedBy::Pcie => {
            let link = c
                .chain
                .iter()
                .find(|s| s.stage == StageKind::PcieLink)
                .map_or("PCIe".to_string(), |s| {
                    s.explain.split(':').next().unwrap_or("PCIe").to_string()
                });
            format!("the {link} slot on the {end} end")
        }
        LimitedBy::Encoding => format!("the {end} link's 8b/10b line encoding"),
        LimitedBy::Mtu => format!("the {end} MTU"),
        LimitedBy::Link | LimitedBy::PortDown | LimitedBy::NoSubnetManager | LimitedBy::Unknown => {
            format!("the {end} link rate")
        }
    }
}

/// The TCP ceiling of the path in one direction (`Send`: local → remote, `Receive`: back).
/// Hardware ceilings bind both directions; a shaper only limits what leaves its end. With
/// neither, the host stack's bound for one stream, unless a stream beat it.
fn path_ceiling(i: &DiagnoseInput, dir: Direction) -> PathCeiling {
    let mut best: Option<(f64, Cause, String)> = None;
    let consider = |best: &mut Option<(f64, Cause, String)>, g: f64, lb: Cause, why: String| {
        if best.as_ref().is_none_or(|b| g < b.0) {
            *best = Some((g, lb, why));
        }
    };
    for (end, f) in
        std::iter::once(("local", &i.local)).chain(i.remote.iter().map(|r| ("remote", r)))
    {
        if let (Some(g), Some(c)) = (f.tcp_ceiling(), &f.ceiling) {
            consider(&mut best, g, c.limited_by.into(), hardware_words(c, end));
        }
        let egress = match dir {
            Direction::Receive => end == "remote" || i.remote.is_none(),
            Direction::Send | Direction::Bidir => end == "local",
        };
        if let Some((g, s)) = f.shaper_goodput().filter(|_| egress) {
            consider(
                &mut best,
                g,
                Cause::Shaper,
                format!(
                    "a {} shaper at {} Gbit/s on the {end} {}",
                    s.kind,
                    fmt_num(bps_to_gbps(s.rate_bps as f64)),
                    f.netdev.as_deref().unwrap_or("interface")
                ),
            );
        }
    }
    if let Some((g, limited_by, why)) = best {
        return PathCeiling {
            gbps: Some(g),
            limited_by,
            why,
            per_stream: false,
        };
    }
    // No hardware ceiling (loopback, veth, bridge): the host stack's bound for one stream. A
    // stream above it proves its input too low; then there is no known ceiling, and
    // `ceiling.exceeded` says so.
    match i.host_stack.as_ref().filter(|_| stack_beaten(i).is_none()) {
        Some(h) => PathCeiling {
            gbps: Some(h.gbps),
            limited_by: Cause::Cpu,
            why: format!(
                "the host's memory copies (a virtual path has no hardware ceiling; {})",
                h.basis
            ),
            per_stream: true,
        },
        None => PathCeiling {
            gbps: None,
            limited_by: Cause::Unknown,
            why: "unknown".into(),
            per_stream: false,
        },
    }
}

/// Everything the rules share, computed once.
struct Ctx<'a> {
    i: &'a DiagnoseInput,
    ends: Vec<(&'static str, &'a EndFacts)>,
    /// Directions with a TCP bandwidth result (send, then receive).
    dirs: Vec<Direction>,
    /// The judged direction: the slower (what the user feels), each against its own ceiling.
    dir: Direction,
    /// The judged direction's ceiling.
    pc: PathCeiling,
    /// Its best TCP result (one stream when the ceiling is the host stack's).
    best: Option<&'a Measured>,
    /// Both ends without a physical link: no NIC, no cable.
    virtual_path: bool,
}

impl<'a> Ctx<'a> {
    fn new(i: &'a DiagnoseInput) -> Self {
        let ends: Vec<(&'static str, &EndFacts)> = std::iter::once(("local", &i.local))
            .chain(i.remote.iter().map(|r| ("remote", r)))
            .collect();
        let dirs: Vec<Direction> = [Direction::Send, Direction::Receive]
            .into_iter()
            .filter(|d| i.tests.iter().any(|t| t.is_tcp_bw(*d)))
            .collect();
        let pick = |d: Direction| -> (PathCeiling, Option<&'a Measured>) {
            let pc = path_ceiling(i, d);
            let best = i
                .tests
                .iter()
                .filter(|t| t.is_tcp_bw(d) && (!pc.per_stream || t.streams == 1))
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps));
            (pc, best)
        };
        let (pc, best, dir) = dirs
            .iter()
            .map(|d| {
                let (pc, b) = pick(*d);
                (pc, b, *d)
            })
            .min_by(|a, b| {
                let g = |x: Option<&Measured>| x.map_or(0.0, |t| t.gbps);
                g(a.1).total_cmp(&g(b.1))
            })
            .unwrap_or_else(|| {
                let (pc, b) = pick(Direction::Send);
                (pc, b, Direction::Send)
            });
        let virtual_path =
            i.local.is_virtual() && i.remote.as_ref().is_none_or(EndFacts::is_virtual);
        Self {
            i,
            ends,
            dirs,
            dir,
            pc,
            best,
            virtual_path,
        }
    }

    fn best_gbps(&self) -> f64 {
        self.best.map_or(0.0, |t| t.gbps)
    }

    /// The judged result reaches its ceiling ([`CEILING_REACHED_FRACTION`] of it).
    fn reached(&self) -> bool {
        let b = self.best_gbps();
        self.pc
            .gbps
            .is_some_and(|c| b >= CEILING_REACHED_FRACTION * c)
    }

    /// The best multi-stream TCP result in direction `d`.
    fn multi(&self, d: Direction) -> Option<&'a Measured> {
        self.i
            .tests
            .iter()
            .filter(|m| m.is_tcp_bw(d) && m.streams > 1)
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
    }

    /// Some end is down or waits for a subnet manager: no traffic can pass.
    fn any_port_down(&self) -> bool {
        self.ends.iter().any(|(_, f)| f.port_down())
    }
}

/// Prefix a finding's subject with the end it concerns.
fn at_end(mut f: Finding, end: &str) -> Finding {
    f.subject = format!("{end}:{}", f.subject);
    f
}

/// The inventory findings of both ends, their subjects prefixed with the end.
fn inventory(c: &Ctx<'_>) -> Vec<Finding> {
    c.ends
        .iter()
        .flat_map(|(end, f)| f.findings.iter().cloned().map(move |x| at_end(x, end)))
        .collect()
}

/// `mtu.mismatch`: the two ends use different MTUs.
fn mtu_mismatch(c: &Ctx<'_>) -> Option<Finding> {
    let i = c.i;
    let (a, b) = (i.local.mtu?, i.remote.as_ref().and_then(|r| r.mtu)?);
    (a != b).then(|| {
        Finding::new(FindingId::MtuMismatch, Severity::Warning, "path")
            .evidence(format!("local {} mtu", i.local.netdev.as_deref().unwrap_or("?")), a)
            .evidence(format!("remote {} mtu", i.remote.as_ref().and_then(|r| r.netdev.as_deref()).unwrap_or("?")), b)
            .message(format!(
                "the two ends use different MTUs ({a} here, {b} there): TCP segments follow the smaller one, and on a shared L2 segment frames above {} are dropped (black-holed) when path MTU discovery does not kick in",
                a.min(b)
            ))
            .fix(format!("Set the same MTU on both ends and every switch port in between (`ip link set DEV mtu {}`).", a.max(b)))
    })
}

/// `net.shaper`: every qdisc with a rate on either end, and whether it limits what was measured.
fn shapers(c: &Ctx<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (end, f) in &c.ends {
        for s in &f.shapers {
            let g = bps_to_gbps(s.rate_bps as f64);
            // A shaper limits what leaves its end: the send direction for ours, receive for theirs.
            let shaped_dir = if *end == "remote" {
                Direction::Receive
            } else {
                Direction::Send
            };
            let shaped_best =
                c.i.tests
                    .iter()
                    .filter(|t| t.is_tcp_bw(shaped_dir))
                    .map(|t| t.gbps)
                    .fold(0.0_f64, f64::max);
            let limits =
                shaped_best >= SHAPER_REACHED_FRACTION * f.shaper_goodput().map_or(g, |x| x.0);
            out.push(
                Finding::new(FindingId::NetShaper, Severity::Warning, format!("{end}:{}", f.netdev.as_deref().unwrap_or("?")))
                    .evidence("qdisc", format!("{} {} rate {} bit/s", s.kind, s.handle, s.rate_bps))
                    // A noun first (the verdict quotes what comes before the first colon as
                    // what limits the result), then what it does.
                    .message(format!(
                        "a {} shaper at {} Gbit/s on the wire on the {end} {}: it limits what the {end} end sends{}",
                        s.kind,
                        fmt_num(g),
                        f.netdev.as_deref().unwrap_or("interface"),
                        if limits { format!(", and it is what limits the {} direction (measured {} Gb/s of TCP payload)", dir_name(shaped_dir), fmt_round(shaped_best, 2)) } else { String::new() }
                    ))
                    .fix(format!(
                        "If it is not intended: `tc qdisc del dev {} root` (check `tc -s qdisc show dev {0}` and any tc setup in the network configuration).",
                        f.netdev.as_deref().unwrap_or("DEV")
                    )),
            );
        }
    }
    out
}

/// The subject of `cpu.saturated` for one stream in direction `d`.
fn one_stream_subject(d: Direction) -> String {
    format!("test:tcp_bw {} 1 stream", dir_name(d))
}

/// What lifts a CPU-bound stream, for the path it is on. On a virtual path only the host
/// matters: there is no NIC whose interrupts, NUMA node or frame size could be changed.
fn cpu_saturated_fix(c: &Ctx<'_>) -> String {
    if c.virtual_path {
        // Each core copies each byte once (`linerate_model::host`): more streams use more
        // cores; zero copy on the sender leaves the receiver's copy, which alone sets the bound.
        return "Use several streams (`-P 4`): one stream's copies run on one core at each end. Keep the two ends on different idle cores (`-A`) and set the performance governor. `--zerocopy` does not raise the bound of a virtual path: the receiver still copies every byte.".into();
    }
    let ethernet = c.ends.iter().any(|(_, f)| {
        matches!(f.port_kind, Some(PortKind::Ethernet | PortKind::Roce))
            && f.mtu.is_none_or(|m| m < 9000)
    });
    let datagram_ib = c.ends.iter().any(|(_, f)| {
        f.port_kind == Some(PortKind::Infiniband) && f.ipoib_mode != Some(IpoibMode::Connected)
    });
    // Bigger packets cut the per-packet work (interrupts, headers, wake-ups) per byte.
    let per_packet: Vec<&str> = [
        ethernet.then_some("jumbo frames"),
        datagram_ib.then_some("IPoIB connected mode"),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!(
        "Use several streams (`-P 4`), pin the stream to the NIC's NUMA node and away from its interrupt core (`-A`), send with `--zerocopy`{}, and set the performance governor.",
        if per_packet.is_empty() {
            String::new()
        } else {
            format!(", use {} to cut per-packet work", per_packet.join(" or "))
        }
    )
}

/// What the receiving application's copy costs one stream in direction `d`: its rate against
/// its `--discard` twin's (the data dropped in the kernel), in words; None without a twin.
pub fn receiver_copy(tests: &[Measured], d: Direction) -> Option<String> {
    let copy = tests
        .iter()
        .find(|t| t.is_single_stream(d) && t.error.is_none())?;
    let twin = tests.iter().find(|t| t.is_discard_twin(d))?;
    if copy.gbps <= 0.0 || twin.gbps <= 0.0 {
        return None;
    }
    let ratio = twin.gbps / copy.gbps;
    let head = format!(
        "the receiver's copy ({} direction): one stream {} Gb/s copying into the application, {} Gb/s with the data dropped in the kernel (`bench --discard`, recv with MSG_TRUNC)",
        dir_name(d),
        fmt_round(copy.gbps, 2),
        fmt_round(twin.gbps, 2)
    );
    // Runs of the same test differ by a few percent; within that the copy costs nothing visible.
    Some(if ratio >= COPY_VISIBLE_RATIO {
        format!(
            "{head}: the copy to user space holds the stream back by {}% (×{} without it)",
            fmt_round((1.0 - 1.0 / ratio) * 100.0, 0),
            fmt_round(ratio, 2)
        )
    } else {
        format!("{head}: not faster without the copy, so the receiver's protocol work (softirq, wake-ups), not its copy, is what its core spends")
    })
}

/// The busiest core of a test was linerate's to name: other processes were quiet and could
/// have held at most a sliver of it ([`QUIET_OTHER_CORES`]; what they held of it at least stays
/// below what separates saturated from busy).
fn busiest_core_is_ours(t: &Measured) -> bool {
    t.other_cores.is_none_or(|o| o < QUIET_OTHER_CORES)
        && t.busiest_core_others_percent
            .is_none_or(|o| o < 100.0 - CORE_SATURATED_PERCENT)
}

/// `cpu.saturated`: one stream kept a core busy below the ceiling. Only a core linerate's own
/// threads saturated: a thread at [`THREAD_SATURATED_PERCENT`] of a core, or the busiest core at
/// [`CORE_SATURATED_PERCENT`] while it was linerate's ([`busiest_core_is_ours`]); a core other
/// processes kept busy is contention (`cpu.contended` says so), never this.
fn cpu_saturated(c: &Ctx<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for t in
        c.i.tests.iter().filter(|t| {
            t.is_single_stream(Direction::Send) || t.is_single_stream(Direction::Receive)
        })
    {
        let cpus = [
            t.sender_cpu_percent,
            t.receiver_cpu_percent,
            t.max_stream_cpu_percent,
        ];
        let cpu = cpus.into_iter().flatten().fold(0.0_f64, f64::max);
        let below =
            c.pc.gbps
                .is_none_or(|g| t.gbps < CEILING_REACHED_FRACTION * g);
        let busy_core = busiest_core_is_ours(t)
            && t.busiest_core_percent
                .is_some_and(|b| b >= CORE_SATURATED_PERCENT);
        let thread_busy = cpus
            .into_iter()
            .flatten()
            .any(|p| p >= THREAD_SATURATED_PERCENT);
        if !((thread_busy || busy_core) && below) {
            continue;
        }
        let side = if t.sender_cpu_percent >= t.receiver_cpu_percent {
            "sending"
        } else {
            "receiving"
        };
        // Name the figure that shows it: the busiest core (interrupts included) when the
        // threads' own accounting, which leaves softirq work out, stays lower.
        let kept = match t.busiest_core_percent.filter(|b| busy_core && *b > cpu) {
            Some(b) => format!(
                "kept this host's busiest core at {b:.0}% (interrupts included; other processes were idle, so the core was linerate's: its {side} thread {cpu:.0}% and the softirq work done for it)"
            ),
            None => format!("kept the {side} core at {cpu:.0}%"),
        };
        let more = c.multi(t.direction).map_or(String::new(), |m| {
            format!(
                "; with {} streams the path carried {} Gb/s",
                m.streams,
                fmt_round(m.gbps, 2)
            )
        });
        let more = match (side, receiver_copy(&c.i.tests, t.direction)) {
            ("receiving", Some(copy)) => format!("{more}; {copy}"),
            _ => more,
        };
        out.push(
            Finding::new(FindingId::CpuSaturated, Severity::Warning, one_stream_subject(t.direction))
                .evidence("gbps", fmt_round(t.gbps, 2))
                .evidence("sender_cpu_percent", t.sender_cpu_percent.map_or("?".into(), |p| format!("{p:.0}")))
                .evidence("receiver_cpu_percent", t.receiver_cpu_percent.map_or("?".into(), |p| format!("{p:.0}")))
                .evidence("busiest_core_percent (this host, incl. interrupts)", t.busiest_core_percent.map_or("?".into(), |p| format!("{p:.0}")))
                .message(format!(
                    "one stream ({} direction) {kept}: a single CPU core, not the network, limits one TCP stream at {} Gb/s{more}",
                    dir_name(t.direction),
                    fmt_round(t.gbps, 2)
                ))
                .fix(cpu_saturated_fix(c)),
        );
    }
    out
}

/// A test during which other processes or the hypervisor took CPU: the results are a lower
/// bound.
fn contended(t: &Measured) -> bool {
    cpu_taken(t.other_cores, t.steal_cores, t.busiest_core_others_percent)
}

/// Other processes or the hypervisor took the CPU: [`CONTENDED_OTHER_CORES`] cores or more,
/// [`CONTENDED_STEAL_CORES`] of steal, or [`OTHERS_HELD_CORE_PERCENT`] of the busiest core.
fn cpu_taken(other: Option<f64>, steal: Option<f64>, busiest_others: Option<f64>) -> bool {
    other.is_some_and(|o| o >= CONTENDED_OTHER_CORES)
        || steal.is_some_and(|s| s >= CONTENDED_STEAL_CORES)
        || busiest_others.is_some_and(|o| o >= OTHERS_HELD_CORE_PERCENT)
}

/// `cpu.contended`: someone else used the CPU while we measured. When other processes held the
/// busiest core, it says so, with the share they held at least.
fn cpu_contended(c: &Ctx<'_>) -> Option<Finding> {
    let busy: Vec<&Measured> = c.i.tests.iter().filter(|t| contended(t)).collect();
    if busy.is_empty() {
        return None;
    }
    let other = busy
        .iter()
        .filter_map(|t| t.other_cores)
        .fold(0.0_f64, f64::max);
    let steal = busy
        .iter()
        .filter_map(|t| t.steal_cores)
        .fold(0.0_f64, f64::max);
    let held = busy
        .iter()
        .filter_map(|t| Some((t.busiest_core_others_percent?, *t)))
        .filter(|(o, _)| *o >= OTHERS_HELD_CORE_PERCENT)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let of_cores = match c.i.local.cpus {
        0 => String::new(),
        n => format!(" of {n}"),
    };
    let mut f = Finding::new(FindingId::CpuContended, Severity::Warning, "local:host")
        .evidence("other_processes_cores", format!("{other:.2}"))
        .evidence("hypervisor_steal_cores", format!("{steal:.2}"))
        .evidence("tests_affected", busy.len());
    let mut msg = format!(
        "while linerate measured, other processes on this host used up to {other:.1}{of_cores} cores{}",
        if steal >= CONTENDED_STEAL_CORES {
            format!(" and the hypervisor took {steal:.1} cores")
        } else {
            String::new()
        }
    );
    if let Some((share, t)) = held {
        f = f
            .evidence(
                "busiest_core_others_percent (at least, during the test below)",
                format!("{share:.0}"),
            )
            .evidence(
                "busiest_core_test",
                format!(
                    "{} {} {} stream(s)",
                    t.kind_name(),
                    dir_name(t.direction),
                    t.streams
                ),
            );
        let _ = write!(
            msg,
            ", and held the busiest core: at least {share:.0}% of its time during the {} test ({} direction, {} stream{}), time linerate's own threads did not have",
            t.kind_name(),
            dir_name(t.direction),
            t.streams,
            if t.streams == 1 { "" } else { "s" }
        );
    }
    msg.push_str(": the results are lower than this machine can do");
    Some(
        f.message(msg)
            .fix("Run doctor again on an idle machine (check `top`), or pin linerate to idle cores with `bench -A`."),
    )
}

/// A test the TCP window may explain, and how strongly (higher wins): from 1 up when the
/// kernel counted the wait, negative (closeness of bytes in flight to the limit) when estimated.
struct WindowCandidate<'a> {
    score: f64,
    test: &'a Measured,
    inflight: f64,
    wmem: Option<u64>,
    rmem: Option<u64>,
}

/// The share of its busy time a sender waited on the receive window or its send buffer
/// (TCP_INFO) from which the window, not the path, sets the rate. With 16 KiB buffers on a
/// veth pair the kernel counts 47-53%; healthy paths 0-2%.
pub const WINDOW_LIMITED_PERCENT: f64 = 25.0;

/// Below this share (and busy ≥ 90% of the test) the window is ruled out.
pub const WINDOW_CLEAR_PERCENT: f64 = 5.0;

/// The test the TCP window explains best, if any: of direction `only` when given.
fn window_candidate<'a>(c: &Ctx<'a>, only: Option<Direction>) -> Option<WindowCandidate<'a>> {
    let i = c.i;
    let mut candidate: Option<WindowCandidate<'a>> = None;
    for t in i
        .tests
        .iter()
        .filter(|t| t.is_tcp_bw(Direction::Send) || t.is_tcp_bw(Direction::Receive))
        .filter(|t| only.is_none_or(|d| t.direction == d))
    {
        let Some(rtt) = t.rtt_us.filter(|r| *r > 0.0) else {
            continue;
        };
        let (snd, rcv) = if t.direction == Direction::Send {
            (Some(&i.local), i.remote.as_ref())
        } else {
            (i.remote.as_ref(), Some(&i.local))
        };
        let wmem = snd.and_then(|e| e.sockets.tcp_wmem).map(|w| w[2]);
        let rmem = rcv.and_then(|e| e.sockets.tcp_rmem).map(|r| r[2]);
        // Linux gives about half of the receive buffer to the window.
        let limit = [wmem, rmem.map(|r| r / 2)].into_iter().flatten().min();
        let per_stream = t.gbps / f64::from(t.streams.max(1));
        let inflight = per_stream * 1e9 / 8.0 * rtt * 1e-6;
        let below_ceiling =
            c.pc.gbps
                .is_none_or(|g| t.gbps < CEILING_REACHED_FRACTION * g);
        let ratio = limit.filter(|l| *l > 0).map(|l| inflight / l as f64);
        let estimate = || {
            // The test whose bytes in flight sit closest to what the buffer limits allow,
            // between 0.25 (small buffers) or 0.5 (large) and 3 times the limit. Socket buffers
            // also pay for skb overhead, so a window of a quarter of a small buffer can be the
            // limit; a large buffer holds 64 KiB segments with little overhead. Smoothed RTT
            // samples are inflated by queueing and hypervisor stalls; far above the limit the
            // window cannot be what holds the rate.
            limit.zip(ratio).and_then(|(limit, ratio)| {
                let low = if limit < 256 * 1024 { 0.25 } else { 0.5 };
                (low..=3.0).contains(&ratio).then(|| -ratio.ln().abs())
            })
        };
        let score = match (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
            // TCP_INFO counted the sender waiting on the receive window or its send buffer, with
            // the window near what the limits allow: a receiver that does not read fast enough
            // also closes the window, and then in flight stays far below the limit.
            (Some(r), Some(s))
                if r + s >= WINDOW_LIMITED_PERCENT && ratio.is_none_or(|x| x >= 0.1) =>
            {
                Some(1.0 + (r + s) / 100.0)
            }
            // Waiting on neither, with buffers of 256 KiB or more (or busy nearly all the
            // test): whatever limits the rate, it is not the window, however large the RTT
            // makes it look. A loaded host inflates the smoothed RTT (1.4 ms measured on a
            // healthy veth path with the other core busy) and leaves a stream's queue empty
            // while its thread waits for a core, which lowers the busy share; neither makes a
            // multi-megabyte window the limit.
            (Some(r), Some(s))
                if r + s < WINDOW_CLEAR_PERCENT
                    && (limit.is_some_and(|l| l >= 256 * 1024)
                        || t.tcp_busy_percent.is_some_and(|b| b >= 90.0)) =>
            {
                None
            }
            // In between, or an idle sender (with tiny buffers on a short path the socket
            // drains before the sender is scheduled again, which the kernel counts as idle, not
            // limited), or no figures: the estimate decides.
            _ => estimate(),
        };
        if let Some(score) = score.filter(|_| below_ceiling) {
            if candidate.as_ref().is_none_or(|x| score > x.score) {
                candidate = Some(WindowCandidate {
                    score,
                    test: t,
                    inflight,
                    wmem,
                    rmem,
                });
            }
        }
    }
    candidate
}

/// What the window allows a path and what would lift it, for the verdict's words: the window
/// the buffer limits allow one stream, the round trip, the rate that window allows, and the
/// buffers `linerate setup sysctl --rtt-ms R --gbps G` writes for the path's ceiling.
#[derive(Debug, Clone, PartialEq)]
struct WindowBound {
    /// Bytes one stream may keep in flight under the limits (send buffer max, half the
    /// receive buffer max), when both ends' limits are known.
    window: Option<u64>,
    rtt_us: f64,
    /// `window` / RTT, Gb/s per stream.
    bound_gbps: Option<f64>,
    /// The round trip and rate the buffers are sized for (setup's `--rtt-ms`, `--gbps`).
    rtt_ms: u64,
    target_gbps: f64,
    sizes: TcpBufferSizes,
}

impl WindowBound {
    /// `linerate setup sysctl --rtt-ms 21 --gbps 25`: the command that writes the sizes.
    fn setup_command(&self) -> String {
        format!(
            "linerate setup sysctl --rtt-ms {} --gbps {} --apply",
            self.rtt_ms,
            fmt_num(self.target_gbps)
        )
    }

    /// The verdict's words (no colon: the verdict reads `limited by WHY: figures`).
    fn words(&self) -> String {
        let now = match (self.window, self.bound_gbps) {
            (Some(w), Some(g)) => format!(
                "a window of at most {w} bytes over a {} ms round trip allows {} Gb/s per stream",
                fmt_round(self.rtt_us / 1000.0, 1),
                fmt_round(g, 3)
            ),
            _ => format!(
                "window / RTT at a {} ms round trip",
                fmt_round(self.rtt_us / 1000.0, 1)
            ),
        };
        format!(
            "TCP socket buffer limits ({now}; buffers of {} bytes on both ends, which `{}` writes, allow {} Gb/s)",
            self.sizes.tcp_rmem[2],
            self.setup_command(),
            fmt_num(self.target_gbps)
        )
    }
}

/// The best TCP bandwidth result of any direction (not a `--discard` run, not a failed one).
fn best_tcp_gbps(i: &DiagnoseInput) -> f64 {
    i.tests
        .iter()
        .filter(|t| t.is_tcp_result())
        .map(|t| t.gbps)
        .fold(0.0, f64::max)
}

/// `tcp.buffers_small`: the kernel's own accounting when it has it, else the measured RTT.
/// The judged direction's test first (the verdict names the window only for it), else the
/// other's. Returns the finding, the direction of the test it explains and its bound.
fn tcp_buffers_small(c: &Ctx<'_>) -> Option<(Finding, Direction, WindowBound)> {
    let WindowCandidate {
        test: t,
        inflight,
        wmem,
        rmem,
        ..
    } = window_candidate(c, Some(c.dir)).or_else(|| window_candidate(c, None))?;
    let rtt = t.rtt_us.unwrap_or(0.0);
    let per_stream = t.gbps / f64::from(t.streams.max(1));
    // Unacknowledged data stays in the send buffer, so no more than it can be in flight: an
    // estimate above it (rate × a smoothed RTT inflated by stalls) is shown as the buffer.
    let inflight = wmem.map_or(inflight, |w| inflight.min(w as f64));
    // Sized for the path's hardware ceiling at the round trip measured, in whole milliseconds
    // up: the sizes `linerate setup sysctl` writes for them. A path with no hardware ceiling
    // (virtio, veth, a bridge) is sized for what it was seen to carry, with a margin: its
    // ceiling is only the host stack's bound, which may be far above what the hypervisor's
    // path carries (17-25 Gb/s of memory copies on a 0.13 Gb/s emulated link would ask for
    // 128-256 MiB of buffers).
    let target = match c.pc.gbps {
        Some(g) if !c.pc.per_stream => g,
        bound => {
            let seen = best_tcp_gbps(c.i) * BUFFER_MARGIN;
            bound.map_or(seen, |b| seen.min(b))
        }
    }
    .max(t.gbps);
    let target = if target >= 1.0 {
        target.ceil()
    } else {
        (target * 1000.0).ceil() / 1000.0
    };
    let rtt_ms = (rtt / 1000.0).ceil().max(1.0) as u64;
    let sizes = TcpBufferSizes::for_path(target, rtt_ms as f64);
    let window = wmem.zip(rmem).map(|(w, r)| linerate_facts::window_of(w, r));
    let bound = WindowBound {
        window,
        rtt_us: rtt,
        bound_gbps: window
            .filter(|_| rtt > 0.0)
            .map(|w| w as f64 * 8.0 / (rtt * 1e-6) / 1e9),
        rtt_ms,
        target_gbps: target,
        sizes,
    };
    let kernel = match (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
        (Some(r), Some(s)) => format!(
            "; of the time it had data to send, the kernel counted the sender waiting {}% on the receiver's window and {}% on its own send buffer",
            fmt_num(r.round()),
            fmt_num(s.round())
        ),
        _ => String::new(),
    };
    let mut f = Finding::new(
        FindingId::TcpBuffersSmall,
        Severity::Warning,
        format!(
            "test:tcp_bw {} {} stream(s)",
            dir_name(t.direction),
            t.streams
        ),
    )
    .evidence("rtt_us", fmt_num(rtt))
    .evidence("gbps_per_stream", fmt_round(per_stream, 3))
    .evidence("bytes_in_flight", format!("{inflight:.0}"));
    if let (Some(r), Some(s)) = (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
        f = f
            .evidence(
                "receive-window-limited % (TCP_INFO tcpi_rwnd_limited / busy)",
                fmt_num(r),
            )
            .evidence(
                "send-buffer-limited % (TCP_INFO tcpi_sndbuf_limited / busy)",
                fmt_num(s),
            );
    }
    let f = f
        .evidence("sender tcp_wmem max", wmem.map_or("?".into(), |w| w.to_string()))
        .evidence("receiver tcp_rmem max", rmem.map_or("?".into(), |r| r.to_string()))
        .message(format!(
            "each stream keeps about {} bytes in flight at a {} µs round trip, near what the socket buffer limits allow (send {} / receive {} bytes max){kernel}: the TCP window, not the path, sets the rate ({} Gb/s per stream = window / RTT)",
            inflight as u64,
            fmt_round(rtt, 1),
            wmem.map_or("?".into(), |w| w.to_string()),
            rmem.map_or("?".into(), |r| r.to_string()),
            fmt_round(per_stream, 2)
        ))
        .fix(format!(
            "On both ends: `{}` writes buffers for {} Gb/s at a {} ms round trip to {SYSCTL_FILE}, which load at boot, and `sysctl -p {SYSCTL_FILE}` loads them now (or now only, without the file: {})",
            bound.setup_command(),
            fmt_num(bound.target_gbps),
            bound.rtt_ms,
            sizes.sysctl_w()
        ));
    let f = match bound.bound_gbps {
        Some(g) => f.evidence("window_bound_gbps", fmt_round(g, 4)),
        None => f,
    }
    .evidence("buffers_for_gbps", fmt_num(bound.target_gbps))
    .evidence("buffers_for_rtt_ms", bound.rtt_ms)
    .evidence("net.ipv4.tcp_rmem max", sizes.tcp_rmem[2])
    .evidence("net.ipv4.tcp_wmem max", sizes.tcp_wmem[2])
    .evidence("net.core.rmem_max", sizes.core_max);
    Some((f, t.direction, bound))
}

/// A test's loss: its retransmits (count, share of the segments sent) when TCP counted them,
/// and whether they or the UDP loss cross the rule's lines ([`RETRANSMITS_MIN`] and
/// [`RETRANSMIT_RATE`], [`UDP_LOSS_PERCENT`]).
struct Loss {
    rtx: Option<(u64, f64)>,
    rtx_over: bool,
    udp_over: bool,
}

impl Loss {
    fn of(t: &Measured) -> Self {
        let rtx = match (t.retransmits, t.segments) {
            (Some(r), Some(s)) if s > 0 => Some((r, r as f64 / s as f64)),
            _ => None,
        };
        Self {
            rtx,
            rtx_over: rtx.is_some_and(|(r, rate)| r >= RETRANSMITS_MIN && rate > RETRANSMIT_RATE),
            udp_over: t.kind == TestKind::UdpBw
                && t.loss_percent.is_some_and(|l| l > UDP_LOSS_PERCENT),
        }
    }

    fn lossy(&self) -> bool {
        self.rtx_over || self.udp_over
    }
}

/// A UDP test's loss that the path did not cause: every TCP test of the same direction
/// retransmitted under a tenth of its loss rate (and under the line of [`RETRANSMITS_MIN`] and
/// [`RETRANSMIT_RATE`]), one of them at least at its rate. What the path carries for TCP it
/// carries for UDP; a UDP sender is not paced by its receiver as TCP's is, so a slow receiver
/// (the lab's emulated guests: 3% of datagrams with TCP losing none) overflows its socket
/// buffer or its receive ring. Returns the fastest such TCP test.
fn udp_loss_at_receiver<'a>(c: &Ctx<'a>, t: &Measured) -> Option<&'a Measured> {
    let loss = t.loss_percent.filter(|_| t.kind == TestKind::UdpBw)?;
    let tcp: Vec<&Measured> =
        c.i.tests
            .iter()
            .filter(|x| x.is_tcp_bw(t.direction) && x.error.is_none())
            .collect();
    let clean = |x: &Measured| {
        let l = Loss::of(x);
        !l.rtx_over && l.rtx.is_some_and(|(_, rate)| rate * 100.0 < loss / 10.0)
    };
    if !tcp.iter().all(|x| clean(x)) {
        return None;
    }
    tcp.into_iter()
        .filter(|x| x.gbps >= t.gbps)
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
}

/// A test lost packets on the path (not only at a UDP receiver: [`udp_loss_at_receiver`]).
fn path_lossy(c: &Ctx<'_>, t: &Measured) -> bool {
    let l = Loss::of(t);
    l.rtx_over || (l.udp_over && udp_loss_at_receiver(c, t).is_none())
}

/// The test directions whose packets a qdisc at `end` on `side` handles: what an end sends
/// leaves through its egress, what it receives comes through its ingress. On loopback (a
/// self-check, or a far end on this host) one interface carries both.
fn qdisc_dirs(c: &Ctx<'_>, end: &str, side: QdiscSide) -> &'static [Direction] {
    const SEND: &[Direction] = &[Direction::Send];
    const RECEIVE: &[Direction] = &[Direction::Receive];
    const BOTH: &[Direction] = &[Direction::Send, Direction::Receive];
    let loopback = c.i.local.port_kind == Some(PortKind::Loopback);
    match (end, side) {
        _ if loopback => BOTH,
        ("local", QdiscSide::Egress) | ("remote", QdiscSide::Ingress) => SEND,
        ("local", QdiscSide::Ingress) | ("remote", QdiscSide::Egress) => RECEIVE,
        _ => BOTH,
    }
}

/// The directions a qdisc carries, in words: `the send direction`, `both directions`.
fn dirs_words(dirs: &[Direction]) -> String {
    match dirs {
        [d] => format!("the {} direction", dir_name(*d)),
        _ => "both directions".into(),
    }
}

/// A finding about qdisc `q` at `end`: its subject (`local:veth0`), the qdisc, what it
/// handles and the tests during which it counted.
fn qdisc_finding(
    c: &Ctx<'_>,
    id: FindingId,
    severity: Severity,
    end: &str,
    q: &QdiscDelta,
) -> Finding {
    let f = Finding::new(id, severity, format!("{end}:{}", q.interface))
        .evidence(
            "qdisc",
            format!("{} {} parent {}", q.kind, q.handle, q.parent),
        )
        .evidence("side", qdisc_traffic(c, end, q.side));
    if q.tests.is_empty() {
        f
    } else {
        f.evidence("tests", q.tests.join("; "))
    }
}

/// What a qdisc at `end` on `side` drops, in words: `it sent (the send direction)`.
fn qdisc_traffic(c: &Ctx<'_>, end: &str, side: QdiscSide) -> String {
    let which = dirs_words(qdisc_dirs(c, end, side));
    let what = match side {
        QdiscSide::Egress => "it sent",
        QdiscSide::Ingress => "it received",
        QdiscSide::Both | QdiscSide::Unknown => "it sent or received",
    };
    format!("{what} ({which})")
}

/// A qdisc at `end` dropped enough of what it passed to cost a stream its rate: more than
/// [`RETRANSMIT_RATE`] of its packets, and [`QDISC_DROPS_MIN`] of them or fewer where a test
/// of a direction it carries lost packets ([`Loss::lossy`]). Linux 6.1 under netem loss 1%
/// counted 28 drops for 100 retransmits in the same test (a lost segment is often sent more
/// than twice: a tail-loss probe, then a timeout), so the loss rule's line is crossed well
/// before the qdisc's own.
fn qdisc_lossy(c: &Ctx<'_>, end: &str, q: &QdiscDelta) -> bool {
    let dirs = qdisc_dirs(c, end, q.side);
    q.drops > 0
        && q.drop_fraction() > RETRANSMIT_RATE
        && (q.drops >= QDISC_DROPS_MIN
            || c.i
                .tests
                .iter()
                .any(|t| dirs.contains(&t.direction) && path_lossy(c, t)))
}

/// The qdiscs of either end that dropped packets of direction `d` enough to cost a stream
/// ([`qdisc_lossy`]), the most drops first.
fn qdiscs_dropping<'a>(c: &Ctx<'a>, d: Direction) -> Vec<(&'static str, &'a QdiscDelta)> {
    qdiscs_of(c, d, |end, q| qdisc_lossy(c, end, q), |q| q.drops)
}

/// The qdiscs of either end that `keep` keeps and that carry direction `d` (any, for
/// [`Direction::Bidir`]), the largest `count` first.
fn qdiscs_of<'a>(
    c: &Ctx<'a>,
    d: Direction,
    keep: impl Fn(&str, &QdiscDelta) -> bool,
    count: impl Fn(&QdiscDelta) -> u64,
) -> Vec<(&'static str, &'a QdiscDelta)> {
    let mut v: Vec<(&'static str, &QdiscDelta)> =
        c.i.qdiscs
            .ends()
            .filter(|(end, q)| {
                keep(end, q) && (d == Direction::Bidir || qdisc_dirs(c, end, q.side).contains(&d))
            })
            .collect();
    v.sort_by_key(|x| std::cmp::Reverse(count(x.1)));
    v
}

/// The qdiscs that dropped direction `d`'s packets, in words with their counts: `the tbf qdisc
/// 8001 on the local veth0 dropped 755 packets it sent (the send direction)`.
fn qdisc_drop_words(c: &Ctx<'_>, d: Direction) -> Option<String> {
    let q = qdiscs_dropping(c, d);
    let words: Vec<String> = q
        .iter()
        .map(|(end, q)| {
            format!(
                "{} dropped {} packets {}",
                q.words(end),
                q.drops,
                qdisc_traffic(c, end, q.side)
            )
        })
        .collect();
    (!words.is_empty()).then(|| words.join("; "))
}

/// What a qdisc of this kind drops for, in words; and what to do about it on `dev`.
fn qdisc_kind_words(q: &QdiscDelta, end: &str) -> (&'static str, String) {
    let dev = &q.interface;
    let del = match q.parent.as_str() {
        "root" => format!("`tc qdisc del dev {dev} root`"),
        "ingress" => format!("`tc qdisc del dev {dev} ingress`"),
        p => format!("`tc qdisc del dev {dev} parent {p}`"),
    };
    let on = format!(" (on the {end} host)");
    match q.kind.as_str() {
        "netem" => (
            "netem emulates loss, delay and reordering: a test setup, not a fault",
            format!("If the emulation is not wanted any more: {del}{on}."),
        ),
        "ingress" | "clsact" => (
            "its filters drop what they match, a policer what exceeds its rate and burst",
            format!(
                "Read its filters (`tc -s filter show dev {dev} ingress`{on}): raise the policer's rate and burst, or remove the filter if it is not intended."
            ),
        ),
        "tbf" | "htb" | "hfsc" | "cake" | "cbq" => (
            "a shaper drops what exceeds its rate once its queue (`limit`, `burst`) is full",
            format!(
                "Raise its rate, `burst` and `limit` (`tc qdisc change dev {dev} ...`), or remove it if it is not intended: {del}{on}."
            ),
        ),
        "fq_codel" | "codel" | "pie" | "fq_pie" | "red" | "choke" | "sfq" | "fq" => (
            "an active queue manager drops to keep its queue short: what leaves through it is slower than what arrives",
            format!(
                "This queue is the bottleneck: find what is slower behind it (the link, a shaper, the NIC), or give the queue more room (`tc qdisc change dev {dev} ... limit N`){on}."
            ),
        ),
        _ => (
            "its queue was full (`limit`): what leaves through it is slower than what arrives, or the queue is too short",
            format!(
                "Give the queue more room (`tc qdisc change dev {dev} ... limit N`) or remove it if it is not intended: {del}{on}."
            ),
        ),
    }
}

/// `net.qdisc_drops`: each qdisc of either end that dropped packets during the tests, with its
/// counters and the direction it drops. A warning when it dropped enough to cost a stream
/// ([`qdisc_lossy`]) in a direction that stays below its ceiling; otherwise a note (a queue
/// that drops at the bottleneck of a path that reaches its ceiling is TCP finding the rate).
fn qdisc_drops(c: &Ctx<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (end, q) in c.i.qdiscs.ends().filter(|(_, q)| q.drops > 0) {
        let dirs = qdisc_dirs(c, end, q.side);
        let reached = dirs.iter().all(|d| direction_reached(c, *d));
        let rate = q.drop_fraction() * 100.0;
        let severity = if qdisc_lossy(c, end, q) && !reached {
            Severity::Warning
        } else {
            Severity::Info
        };
        let (why, fix) = qdisc_kind_words(q, end);
        let lost: u64 =
            c.i.tests
                .iter()
                .filter(|t| dirs.contains(&t.direction) && path_lossy(c, t))
                .filter_map(|t| t.retransmits)
                .sum();
        let mut msg = format!(
            "{} dropped {} packets {}, {}% of what it passed{}",
            q.words(end),
            q.drops,
            qdisc_traffic(c, end, q.side),
            fmt_round(rate, 2),
            if q.reset {
                " (at least: it was replaced during the tests)"
            } else {
                ""
            }
        );
        let _ = write!(msg, ": {why}");
        if severity == Severity::Warning {
            msg.push_str(if lost > 0 {
                "; TCP retransmitted them and backed off: this loss, not the receiver or a cable, holds the rate down"
            } else {
                "; TCP backs off from every drop (a sender's own qdisc refuses a packet before it counts as a retransmit): this loss holds the rate down"
            });
        } else if reached {
            msg.push_str("; the path reaches its ceiling, so this is the queue at its bottleneck doing its work");
        } else {
            msg.push_str("; too few to cost a stream its rate");
        }
        let f = qdisc_finding(c, FindingId::NetQdiscDrops, severity, end, q)
            .evidence("drops", q.drops)
            .evidence("packets", q.packets)
            .evidence("overlimits", q.overlimits)
            .evidence("requeues", q.requeues)
            .evidence("drop_rate_percent", format!("{rate:.3}"));
        out.push(f.message(msg).fix(format!(
            "`tc -s qdisc show dev {}` on the {end} host shows its counters. {fix}",
            q.interface
        )));
    }
    out
}

/// The netem qdiscs of either end that sent packets of direction `d` out of their order: netem
/// counts each packet it sends ahead of its turn (`reorder`) as a requeue.
fn qdiscs_reordering<'a>(c: &Ctx<'a>, d: Direction) -> Vec<(&'static str, &'a QdiscDelta)> {
    qdiscs_of(c, d, |_, q| reorders(q), |q| q.requeues)
}

/// A netem qdisc that reordered what it passed: requeues it counted under `reorder`, or
/// packets it passed with delay jitter (which no counter counts).
fn reorders(q: &QdiscDelta) -> bool {
    q.kind == "netem" && q.reorders && (q.requeues > 0 || q.packets > 0)
}

/// What a reordering netem did, in words: the packets it counted sending ahead of their turn,
/// or, having counted none, that its jitter reorders.
fn reordered_words(q: &QdiscDelta) -> String {
    if q.requeues > 0 {
        format!("sent {} packets out of their order", q.requeues)
    } else {
        "reordered what it sent by its delay jitter".to_string()
    }
}

/// The reordering of direction `d`, in words: `the netem qdisc 8007 on the remote enp1s0 sent
/// 155 packets out of their order (the receive direction)`.
fn reorder_words(c: &Ctx<'_>, d: Direction) -> Option<String> {
    let words: Vec<String> = qdiscs_reordering(c, d)
        .iter()
        .map(|(end, q)| {
            format!(
                "{} {} ({})",
                q.words(end),
                reordered_words(q),
                dirs_words(qdisc_dirs(c, end, q.side))
            )
        })
        .collect();
    (!words.is_empty()).then(|| words.join("; "))
}

/// `net.reordering`: a netem qdisc of either end reordered packets (`reorder`): TCP takes a
/// segment that arrives after three later ones for lost and retransmits it, and backs off as
/// from loss. Named as reordering, not loss: nothing was dropped. A warning when the direction
/// it reorders stays below its ceiling and retransmitted; else a note.
fn reordering(c: &Ctx<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (end, q) in c.i.qdiscs.ends().filter(|(_, q)| reorders(q)) {
        let dirs = qdisc_dirs(c, end, q.side);
        // What reordering cost: the TCP tests of its directions retransmitted, and one of
        // those directions stays below its ceiling.
        let rtx: u64 =
            c.i.tests
                .iter()
                .filter(|t| dirs.iter().any(|d| t.is_tcp_bw(*d)))
                .filter_map(|t| t.retransmits)
                .sum();
        let below = dirs.iter().any(|d| !direction_reached(c, *d));
        let severity = if rtx > 0 && below {
            Severity::Warning
        } else {
            Severity::Info
        };
        let which = dirs_words(dirs);
        let how = if q.requeues > 0 {
            "netem counts each packet it sends ahead of its turn as a requeue"
        } else {
            "netem queues each packet by its own time to send, so one given less delay leaves before one sent earlier; it counts none of them"
        };
        let mut msg = format!(
            "{} {} ({which}; {how}) and dropped {}",
            q.words(end),
            reordered_words(q),
            q.drops
        );
        if severity == Severity::Warning {
            let _ = write!(
                msg,
                ": TCP took the reordering for loss, retransmitted {rtx} segments and backed off; the packets were reordered, not lost"
            );
        } else {
            msg.push_str(": TCP absorbed it");
        }
        let f = qdisc_finding(c, FindingId::NetReordering, severity, end, q)
            .evidence("requeues", q.requeues)
            .evidence("drops", q.drops)
            .evidence("packets", q.packets)
            .evidence("tcp_retransmits", rtx);
        out.push(f.message(msg).fix(format!(
            "`tc -s qdisc show dev {dev}` on the {end} host shows it (`reorder`, `gap` or a delay jitter in its options; `rate` or a pfifo child keeps jittered packets in order). netem emulates reordering: a test setup, not a fault; if it is not wanted any more: `tc qdisc del dev {dev} root` (on the {end} host). On a real path, reordering comes from packets of one flow spread over several links (ECMP, bonding with a per-packet policy): hash flows to one link.",
            dev = q.interface
        )));
    }
    out
}

/// The best TCP result in direction `d` reaches that direction's ceiling.
fn direction_reached(c: &Ctx<'_>, d: Direction) -> bool {
    let pc = path_ceiling(c.i, d);
    let best =
        c.i.tests
            .iter()
            .filter(|t| t.is_tcp_bw(d) && t.error.is_none() && (!pc.per_stream || t.streams == 1))
            .map(|t| t.gbps)
            .fold(0.0_f64, f64::max);
    pc.gbps
        .is_some_and(|g| g > 0.0 && best >= CEILING_REACHED_FRACTION * g)
}

/// The receiver of `t` fell behind for want of CPU, in words with the evidence: its thread
/// had a whole core, or other processes or the hypervisor took the CPUs of the host it runs
/// on (this host for a receive; the far end's figures for a send, or this host's when the far
/// end sent none on a virtual path, where both ends share this host or its hypervisor). None
/// when the figures show room.
fn receiver_starved(c: &Ctx<'_>, t: &Measured) -> Option<String> {
    if let Some(p) = t
        .receiver_cpu_percent
        .filter(|p| *p >= THREAD_SATURATED_PERCENT)
    {
        return Some(format!("its receiving thread used {p:.0}% of a core"));
    }
    let taken = |other: Option<f64>, steal: Option<f64>, busiest: Option<f64>, whose: &str| {
        cpu_taken(other, steal, busiest).then(|| {
            format!(
                "other processes or the hypervisor took {} cores of {whose}",
                fmt_round(other.unwrap_or(0.0) + steal.unwrap_or(0.0), 2)
            )
        })
    };
    let here = || {
        taken(
            t.other_cores,
            t.steal_cores,
            t.busiest_core_others_percent,
            "this host",
        )
    };
    let there = |h: &HostCpuLoad| {
        taken(
            h.other_cores,
            h.steal_cores,
            h.busiest_core_others_percent,
            "the far end",
        )
    };
    let far = || match (&t.remote_cpu, c.i.remote.is_some()) {
        (Some(h), _) => there(h),
        (None, false) => here(),
        (None, true) if c.virtual_path => here(),
        (None, true) => None,
    };
    match t.direction {
        Direction::Receive => here(),
        Direction::Send => far(),
        Direction::Bidir => here().or_else(far),
    }
}

/// The fix for loss that error counters may explain.
const COUNTERS_FIX: &str = "Read the interface and InfiniBand error counters (`linerate probe`, `ethtool -S`, `perfquery`); replace the cable if they rise; check switch port drops and flow control / ECN settings.";

/// Where a test's loss was counted, in words after its figure; the severity (a note only for a
/// virtual path's receiver short of CPU: a symptom of the CPU findings); and the fix.
fn loss_cause(c: &Ctx<'_>, t: &Measured, starved: Option<&str>) -> (String, Severity, String) {
    let i = c.i;
    let counters = !i.counter_deltas.is_empty();
    let qdiscs = qdisc_drop_words(c, t.direction);
    let unread = match (&i.qdiscs.local, &i.qdiscs.remote, &i.remote) {
        (None, _, _) => "; this end's qdiscs could not be read",
        (_, None, Some(_)) => "; the far end's qdiscs are unknown (it does not send them)",
        _ => "",
    };
    if counters {
        (
            "and error counters rose during the test: a bad cable, transceiver or port (see the counters)".to_string(),
            Severity::Warning,
            COUNTERS_FIX.to_string(),
        )
    } else if let Some(q) = &qdiscs {
        (
            format!("and {q}: the loss is that qdisc's (see `net.qdisc_drops`), not the receiver's CPU or a cable"),
            Severity::Warning,
            "Remove or resize the qdisc that drops (see `net.qdisc_drops`; `tc -s qdisc show dev IF` on that host).".to_string(),
        )
    } else if let Some(r) = reorder_words(c, t.direction) {
        (
            format!("and {r}, dropping nothing in that direction: TCP took the reordering for loss (see `net.reordering`); the packets were reordered, not lost"),
            Severity::Warning,
            "Remove the reordering (see `net.reordering`): netem's `reorder`, or packets of one flow spread over several links.".to_string(),
        )
    } else if let Some(why) = starved {
        (
            format!("and the receiver fell behind ({why}): the CPU, not the path, lost them"),
            if c.virtual_path {
                Severity::Info
            } else {
                Severity::Warning
            },
            if c.virtual_path {
                "Nothing to replace on a virtual path: free the CPUs the test shares (see the cpu findings) or pin the test's threads away from other work with `linerate bench -A CPUS`.".to_string()
            } else {
                "Free the receiving host's CPUs (see the cpu findings), spread the streams over more cores (`-P`), or pin them (`linerate bench -A CPUS`).".to_string()
            },
        )
    } else if let Some(tcp) = udp_loss_at_receiver(c, t) {
        (
            format!(
                "while TCP in the same direction carried {} Gb/s and retransmitted {}: the receiving end dropped them, not the path (a UDP sender is not paced by its receiver as TCP's is, so a slow receiver overflows its socket buffer or receive ring)",
                fmt_round(tcp.gbps, 3),
                Loss::of(tcp).rtx.map_or_else(String::new, |(r, rate)| format!("{r} segments ({:.2}%)", rate * 100.0))
            ),
            Severity::Info,
            "Nothing to fix on the path. If UDP matters here, give the receiver a larger socket buffer (`net.core.rmem_max`, `SO_RCVBUF`) or more CPU.".to_string(),
        )
    } else if c.virtual_path {
        (
            format!("with no error counter rising, no qdisc of either end counting a drop and the receiver's CPU not busy{unread}: they were lost between the two ends (a bridge, the hypervisor's switch, a qdisc such as netem on a host in between)"),
            Severity::Warning,
            "Look at what carries the path between the ends: `tc -s qdisc` on the hosts and bridges in between (netem, policers), the bridge's and the hypervisor's drop counters (`ip -s link`).".to_string(),
        )
    } else {
        (
            format!("with no error counters rising and no qdisc of either end counting a drop{unread}: congestion or a queue too small somewhere on the path"),
            Severity::Warning,
            COUNTERS_FIX.to_string(),
        )
    }
}

/// `net.retransmits`: retransmits, UDP loss, and error counters during the tests, each with
/// where the loss was counted: error counters (a cable, a port), a qdisc on either end (with
/// its counter: `net.qdisc_drops`), a receiver that fell behind for want of CPU (only when the
/// CPU figures show it), or, with none of them, the path between the ends. Also says whether a
/// test of the judged direction lost packets that explain its result (a warning there; the
/// verdict names the loss then). Loss in the other direction is its own warning, but the
/// verdict, which speaks of the judged direction, does not put its figure down to it.
fn retransmits(c: &Ctx<'_>) -> (Vec<Finding>, bool) {
    let i = c.i;
    let mut out = Vec::new();
    // Only loss in the judged direction explains the verdict's result: loss in the other
    // direction is named by its own finding, not quoted as the cause of this one.
    let mut lossy = false;
    for t in &i.tests {
        let loss = Loss::of(t);
        if !loss.lossy() {
            continue;
        }
        let starved = receiver_starved(c, t);
        let (cause, severity, fix) = loss_cause(c, t, starved.as_deref());
        lossy |= severity >= Severity::Warning
            && (t.direction == c.dir || t.direction == Direction::Bidir);
        let mut f = Finding::new(FindingId::NetRetransmits, severity, loss_subject(t));
        if let Some((r, rate)) = loss.rtx {
            f = f
                .evidence("retransmits", r)
                .evidence("retransmit_rate_percent", format!("{:.3}", rate * 100.0));
        }
        if let Some(l) = t.loss_percent {
            f = f.evidence("loss_percent", format!("{l:.3}"));
        }
        for d in &i.counter_deltas {
            f = f.evidence(format!("counter {} rose by", d.name), d.amount());
        }
        for (end, q) in qdiscs_dropping(c, t.direction) {
            f = f.evidence(
                format!("{end} {} qdisc {} {} drops", q.interface, q.kind, q.handle),
                q.drops,
            );
        }
        if let Some(s) = &starved {
            f = f.evidence("receiver CPU", s);
        }
        out.push(
            f.message(format!(
                "{} {}",
                if loss.udp_over {
                    format!(
                        "{:.2}% of datagrams were lost at a rate the path should carry",
                        t.loss_percent.unwrap_or(0.0)
                    )
                } else {
                    format!(
                        "{} segments were retransmitted ({:.2}%)",
                        loss.rtx.map_or(0, |x| x.0),
                        loss.rtx.map_or(0.0, |x| x.1 * 100.0)
                    )
                },
                cause
            ))
            .fix(fix),
        );
    }
    if !i.counter_deltas.is_empty() && out.is_empty() {
        lossy = true;
        let mut f = Finding::new(FindingId::NetRetransmits, Severity::Warning, "path");
        for d in &i.counter_deltas {
            f = f.evidence(format!("counter {} rose by", d.name), d.amount());
        }
        out.push(
            f.message("error counters rose during the tests although TCP recovered: the link is taking errors".to_string())
                .fix("Reseat or replace the cable or transceiver, then run doctor again."),
        );
    }
    (out, lossy)
}

/// The subject of `net.retransmits` for test `t`: `test:tcp_bw send 2 stream(s)`.
fn loss_subject(t: &Measured) -> String {
    format!(
        "test:{} {} {} stream(s)",
        t.kind_name(),
        dir_name(t.direction),
        t.streams
    )
}

/// A loss finding about the other direction only: `net.retransmits` of a test in it, or
/// `net.qdisc_drops` of qdiscs that carry only it. It stays a warning of its own, but the
/// verdict, which speaks of the judged direction, neither names it nor counts the judged
/// direction's gap as explained by it.
fn loss_elsewhere(c: &Ctx<'_>, f: &Finding) -> bool {
    match f.id {
        FindingId::NetRetransmits => {
            c.i.tests
                .iter()
                .any(|t| t.direction != c.dir && loss_subject(t) == f.subject)
        }
        FindingId::NetQdiscDrops => {
            let mut qdiscs =
                c.i.qdiscs
                    .ends()
                    .filter(|(end, q)| q.drops > 0 && format!("{end}:{}", q.interface) == f.subject)
                    .peekable();
            qdiscs.peek().is_some()
                && qdiscs.all(|(end, q)| !qdisc_dirs(c, end, q.side).contains(&c.dir))
        }
        _ => false,
    }
}

/// Direction `d` lost packets on the path in a way that explains its rate: a qdisc dropped
/// them, or a test of it lost them with no CPU to blame. Then the receiving end is not slower.
fn lost_on_the_path(c: &Ctx<'_>, d: Direction) -> bool {
    !qdiscs_dropping(c, d).is_empty()
        || !qdiscs_reordering(c, d).is_empty()
        || c.i
            .tests
            .iter()
            .any(|t| t.direction == d && path_lossy(c, t) && receiver_starved(c, t).is_none())
}

/// `path.asymmetric`: one direction carries far less than the other, with no shaper to say why.
fn path_asymmetric(c: &Ctx<'_>) -> Option<Finding> {
    let single = |d: Direction| c.i.tests.iter().find(|t| t.is_single_stream(d));
    let (s, r) = (single(Direction::Send)?, single(Direction::Receive)?);
    let (hi, lo) = if s.gbps >= r.gbps { (s, r) } else { (r, s) };
    // A shaper on the slower direction's egress already explains the difference.
    let lo_sends = lo.direction == Direction::Send;
    let shaper_end = if lo_sends {
        Some(&c.i.local)
    } else {
        c.i.remote.as_ref()
    };
    // It does too when its rate alone is far enough below the faster direction's result to
    // make the two differ this much (the lab under load: a netem rate's direction at 77% of
    // it, stalled).
    let shaped = shaper_end
        .and_then(EndFacts::shaper_goodput)
        .is_some_and(|(g, _)| {
            lo.gbps >= SHAPER_REACHED_FRACTION * g || g < ASYMMETRIC_FRACTION * hi.gbps
        });
    // So does loss on the path in that direction (a qdisc that dropped its packets, or loss
    // no CPU explains): `net.qdisc_drops` and `net.retransmits` say where, and the receiving
    // end is not slower for it.
    let lost = lost_on_the_path(c, lo.direction);
    // And the window, when it holds the slower direction's result (`tcp.buffers_small`): with
    // different round trips each way (netem delay or jitter on one egress), the same buffers
    // allow each direction a different rate.
    let windowed = window_candidate(c, Some(lo.direction)).is_some();
    if hi.gbps <= 0.0 || lo.gbps >= ASYMMETRIC_FRACTION * hi.gbps || shaped || lost || windowed {
        return None;
    }
    let slow_receiver = if lo_sends {
        "the remote end"
    } else {
        "this host"
    };
    let lo_dir = dir_name(lo.direction);
    Some(
        Finding::new(FindingId::PathAsymmetric, Severity::Warning, "path")
            .evidence("send_gbps", fmt_round(s.gbps, 2))
            .evidence("receive_gbps", fmt_round(r.gbps, 2))
            .evidence(format!("{lo_dir} receiver_cpu_percent"), lo.receiver_cpu_percent.map_or("?".into(), |p| format!("{p:.0}")))
            .evidence(format!("{lo_dir} sender_cpu_percent"), lo.sender_cpu_percent.map_or("?".into(), |p| format!("{p:.0}")))
            .message(format!(
                "the {} direction carries {} Gb/s but the {lo_dir} direction only {} Gb/s: {slow_receiver} receives slower (a slower CPU, a shaper, offloads or a different configuration on that end)",
                dir_name(hi.direction),
                fmt_round(hi.gbps, 2),
                fmt_round(lo.gbps, 2)
            ))
            .fix("Compare the two ends (`linerate probe` on each): CPU model and governor, MTU, IPoIB mode, shapers, NIC offloads (`ethtool -k`)."),
    )
}

/// `ceiling.exceeded`: a stream beat the host stack's bound, which holds by construction
/// (each core copies each byte at most at its copy rate), so the copy rate fed into it was
/// measured too low. Said out loud, and the result is judged as having no known ceiling.
fn ceiling_exceeded(c: &Ctx<'_>) -> Option<Finding> {
    if c.pc.gbps.is_some() {
        // The judged direction has a hardware or shaper ceiling: the bound was not used.
        return None;
    }
    let (t, h) = stack_beaten(c.i)?;
    Some(
        Finding::new(FindingId::CeilingExceeded, Severity::Info, "path")
            .evidence("measured (Gb/s)", fmt_round(t.gbps, 2))
            .evidence("host stack bound (Gb/s)", fmt_round(h.gbps, 2))
            .evidence("basis", &h.explain)
            .message(format!(
                "one TCP stream ({} direction) carried {} Gb/s, above the {} Gb/s the host stack's memory copies allow ({}): the copy rate was measured too low (a busy moment), so the result is not judged against it",
                dir_name(t.direction),
                fmt_round(t.gbps, 2),
                fmt_round(h.gbps, 2),
                h.basis
            ))
            .fix("Run doctor again on an idle machine for a ceiling to judge against; nothing on the path needs fixing."),
    )
}

/// `ceiling.reached` when the judged result reaches its ceiling; `unexplained` when it stays
/// below and no finding explains the gap. Nothing when a port is down (its finding says it all).
fn ceiling_or_unexplained(c: &Ctx<'_>, out: &[Finding], checked: &[String]) -> Option<Finding> {
    if c.any_port_down() {
        return None;
    }
    let attributed = out.iter().any(|f| {
        f.severity >= Severity::Warning && f.id.explains_gap() && !loss_elsewhere(c, f)
            || ip_stack_explains(f)
    });
    let pc = &c.pc;
    if let Some(f) = paravirtual(c, attributed, checked) {
        return Some(f);
    }
    match (pc.gbps, c.best) {
        (Some(g), Some(t)) if c.reached() => Some(
            Finding::new(FindingId::CeilingReached, Severity::Info, "path")
                .evidence("gbps", fmt_round(t.gbps, 2))
                .evidence("ceiling_gbps", fmt_round(g, 2))
                .message(format!(
                    "{} of {} Gb/s ({:.0}%), limited by {}",
                    fmt_round(t.gbps, 2),
                    fmt_round(g, 2),
                    t.gbps / g * 100.0,
                    pc.why
                ))
                .fix(if pc.per_stream {
                    "Nothing to fix for one stream: this is what one core pushes through the host's TCP stack; use more streams for more."
                } else if pc.limited_by == Cause::Shaper {
                    "The traffic shaper sets this rate: raise or remove it if that is not intended (see net.shaper)."
                } else {
                    "Nothing to fix in software: this is what the hardware carries."
                }),
        ),
        (Some(g), Some(t)) if !attributed => Some(
            Finding::new(
                FindingId::Unexplained,
                // A virtual path's ceiling is an upper bound: missing it is worth a note, not a warning.
                if pc.per_stream { Severity::Info } else { Severity::Warning },
                "path",
            )
                .evidence("gbps", fmt_round(t.gbps, 2))
                .evidence("ceiling_gbps", fmt_round(g, 2))
                .message(format!(
                    "{} Gb/s is {:.0}% of the {} Gb/s ceiling and no check explains the gap. Checked: {}",
                    fmt_round(t.gbps, 2),
                    t.gbps / g * 100.0,
                    fmt_round(g, 2),
                    checked.join("; ")
                ))
                .fix("Look at the switch (port counters, congestion, other traffic), the NIC's firmware and offloads (`ethtool -k`, `ethtool -S`), IRQ placement (`/proc/interrupts`), and run doctor --thorough."),
        ),
        // `ceiling.exceeded` already says why there is no ceiling to judge against.
        (None, Some(t))
            if t.gbps > 0.0
                && !attributed
                && !out.iter().any(|f| f.id == FindingId::CeilingExceeded) =>
        {
            Some(
                Finding::new(FindingId::Unexplained, Severity::Info, "path")
                    .message(format!(
                        "no ceiling is known for this path, so the result cannot be judged against one. Checked: {}",
                        checked.join("; ")
                    ))
                    .fix("Run probe on both ends; a virtual interface has no hardware ceiling."),
            )
        }
        _ => None,
    }
}

/// On a path with no hardware ceiling where an end is a paravirtual NIC, the result below the
/// host stack's bound that nothing in the guests explains: the hypervisor carries the traffic
/// and sets the ceiling (its device emulation, the host's CPUs and its other guests), which the
/// guests cannot see. Said instead of `unexplained`.
fn paravirtual(c: &Ctx<'_>, attributed: bool, checked: &[String]) -> Option<Finding> {
    let drivers: Vec<(&str, &str)> = c
        .ends
        .iter()
        .filter_map(|(end, f)| f.paravirtual.as_deref().map(|d| (*end, d)))
        .collect();
    let t = c.best.filter(|t| t.gbps > 0.0)?;
    let hardware = c.pc.gbps.is_some() && !c.pc.per_stream;
    if drivers.is_empty() || hardware || attributed || c.reached() {
        return None;
    }
    let which = match drivers.as_slice() {
        [(_, d)] if c.ends.len() == 1 => format!("{d} on this host"),
        [(_, a), (_, b)] if a == b => format!("{a} on both ends"),
        _ => drivers
            .iter()
            .map(|(end, d)| format!("{d} on the {end} end"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let mut f = Finding::new(FindingId::NetParavirtual, Severity::Warning, "path")
        .evidence("gbps", fmt_round(t.gbps, 2));
    for (end, d) in &drivers {
        f = f.evidence(format!("{end} driver"), *d);
    }
    let bound = match c.pc.gbps {
        Some(g) => {
            f = f.evidence("host stack bound (Gb/s)", fmt_round(g, 2));
            format!(
                ", {:.0}% of the {} Gb/s the host's TCP stack could carry,",
                t.gbps / g * 100.0,
                fmt_round(g, 2)
            )
        }
        None => String::new(),
    };
    Some(
        f.message(format!(
            "the hypervisor's paravirtual NIC ({which}): it carries this path's traffic and sets its ceiling, which no guest can read; {} Gb/s{bound} and no check inside the guests explains the gap. Checked: {}",
            fmt_round(t.gbps, 2),
            checked.join("; ")
        ))
        .fix("Measure on the host that runs the guests: its CPUs and other guests during the test, vhost-net (`-netdev tap,vhost=on`) and multiqueue virtio (`queues=N`) rather than emulation in QEMU's main thread, the host bridge or switch; under pure emulation (QEMU TCG, no KVM) every packet costs host CPU the guests do not see."),
    )
}

/// What the rules concluded that the verdict needs beyond the findings.
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    /// `cpu.saturated` fired (before `tcp.buffers_small` took a symptom back).
    cpu_limited: bool,
    contended: bool,
    window_limited: bool,
    lossy: bool,
}

/// What the rules found that the verdict quotes.
#[derive(Debug, Clone, Default)]
struct Quotes {
    /// The window that limits the judged direction.
    window: Option<WindowBound>,
}

/// The port that stops all traffic, if any: (`local ib0`, its cause, the state in words).
fn port_state(c: &Ctx<'_>) -> Option<(String, Cause, String)> {
    c.ends.iter().find_map(|(end, f)| {
        let ceiling = f.ceiling.as_ref().filter(|_| f.port_down())?;
        let state = ceiling
            .chain
            .iter()
            .find(|s| s.stage == StageKind::State)
            .map_or(ceiling.summary.clone(), |s| s.explain.clone());
        let once = ceiling.potential_gbps.map_or(String::new(), |p| {
            format!(" (once fixed: about {} Gb/s)", fmt_num(p))
        });
        Some((
            format!("{end} {}", f.netdev.as_deref().unwrap_or(""))
                .trim()
                .to_string(),
            ceiling.limited_by.into(),
            format!("{state}{once}"),
        ))
    })
}

/// Loss a qdisc counted in the judged direction, or reordering a netem qdisc counted there,
/// as the verdict's cause: counted facts, which explain the result more directly than a busy
/// CPU (TCP backs off from each).
fn counted_loss(c: &Ctx<'_>, out: &[Finding], flags: Flags) -> Option<(Cause, String)> {
    if let Some(q) = flags.lossy.then(|| qdisc_drop_words(c, c.dir)).flatten() {
        return Some((
            Cause::Retransmits,
            format!("packet loss and retransmissions ({q})"),
        ));
    }
    // Reordering a netem qdisc counted in the judged direction, which TCP took for loss.
    if let Some(r) = reorder_words(c, c.dir).filter(|_| {
        out.iter()
            .any(|f| f.id == FindingId::NetReordering && f.severity >= Severity::Warning)
    }) {
        return Some((
            Cause::Retransmits,
            format!("packet reordering, which TCP takes for loss ({r})"),
        ));
    }
    None
}

/// What limits the judged result, and the words for it: the first cause that holds, in order
/// of how directly it explains the result.
fn cause(c: &Ctx<'_>, out: &[Finding], flags: Flags, quotes: &Quotes) -> (Cause, String) {
    let pc = &c.pc;
    if let Some((end, lb, s)) = port_state(c) {
        return (lb, format!("the {end} port: {s}"));
    }
    if c.reached() {
        return (pc.limited_by, pc.why.clone());
    }
    if flags.window_limited {
        return (
            Cause::TcpBuffers,
            quotes.window.as_ref().map_or_else(
                || "TCP socket buffer limits (window / RTT)".into(),
                WindowBound::words,
            ),
        );
    }
    // A shaper limits only a result that reaches near its rate; far below it, something else
    // (its drops, say) holds the result down.
    let at_shaper = pc
        .gbps
        .is_some_and(|g| c.best_gbps() >= SHAPER_REACHED_FRACTION * g);
    if pc.limited_by == Cause::Shaper
        && at_shaper
        && out.iter().any(|f| f.id == FindingId::NetShaper)
    {
        return (Cause::Shaper, pc.why.clone());
    }
    let datagram = c.ends.iter().any(|(_, f)| {
        f.ipoib_mode == Some(IpoibMode::Datagram)
            && f.findings
                .iter()
                .any(|x| x.id == FindingId::IpoibDatagramMode && x.severity >= Severity::Warning)
    });
    if datagram {
        return (
            Cause::IpoibMode,
            "IPoIB datagram mode (small packets, one core per stream)".into(),
        );
    }
    if let Some(counted) = counted_loss(c, out, flags) {
        return counted;
    }
    if flags.contended {
        return (
            Cause::Cpu,
            "other processes competing for the CPU (the results are a lower bound)".into(),
        );
    }
    if flags.cpu_limited {
        return (Cause::Cpu, "one CPU core per stream".into());
    }
    if flags.lossy {
        // A qdisc that counted the loss was named above (`counted_loss`).
        return (Cause::Retransmits, "packet loss and retransmissions".into());
    }
    let quote = |f: &Finding| {
        f.message
            .split(':')
            .next()
            .unwrap_or(f.id.as_str())
            .to_string()
    };
    // A shaper limits only what leaves its end: one on the far end's egress says nothing of
    // the send direction (the lab under load: both directions at 0.015 Gb/s, the send direction
    // judged by a stall, and a netem rate on b's egress was its verdict).
    let shapes_judged = |f: &Finding| {
        f.id != FindingId::NetShaper
            || c.i.remote.is_none()
            || match c.dir {
                Direction::Send => f.subject.starts_with("local:"),
                Direction::Receive => f.subject.starts_with("remote:"),
                Direction::Bidir => true,
            }
    };
    if let Some((f, lb)) = out
        .iter()
        .filter(|f| f.severity >= Severity::Warning && !loss_elsewhere(c, f) && shapes_judged(f))
        .filter_map(|f| Some((f, f.id.cause()?)))
        .max_by_key(|(f, _)| f.severity)
    {
        return (lb, format!("{} (see the `{}` finding)", quote(f), f.id));
    }
    if let Some(f) = out.iter().find(|f| ip_stack_explains(f)) {
        return (
            Cause::Cpu,
            format!("{} (see the `{}` finding)", quote(f), FindingId::RdmaVsTcp),
        );
    }
    let why = match pc.gbps {
        Some(_) if out.iter().any(|f| f.id == FindingId::Unexplained) => {
            "something not identified (see `unexplained`)"
        }
        Some(_) => "nothing identified",
        None if out.iter().any(|f| f.id == FindingId::CeilingExceeded) => {
            "unknown (the host stack's bound was beaten: see `ceiling.exceeded`)"
        }
        None => "unknown (no ceiling known)",
    };
    (Cause::Unknown, why.into())
}

/// The bound a single stream on a virtual path is set against in the verdict's words: the
/// host stack's memory-copy bound when the stream is within [`STACK_BOUND_SHOWN_WITHIN`] of it,
/// else the same stream measured with the receiver's copy left out (its `--discard` twin), or
/// nothing. Returns the words after the rate.
fn stack_bound_words(c: &Ctx<'_>, t: &Measured) -> String {
    let Some(h) = c.i.host_stack.as_ref().filter(|_| c.pc.per_stream) else {
        return String::new();
    };
    if t.gbps > 0.0 && t.gbps * STACK_BOUND_SHOWN_WITHIN >= h.gbps {
        return format!(
            " of the at most {} Gb/s the host stack can carry ({})",
            fmt_round(h.gbps, 1),
            h.basis
        );
    }
    match c.i.tests.iter().find(|x| x.is_discard_twin(t.direction)) {
        Some(twin) => format!(
            " ({} Gb/s measured just after with the receiver's copy left out, `--discard`)",
            fmt_round(twin.gbps, 2)
        ),
        None => String::new(),
    }
}

/// The one-line answer, leading with what limits: `limited by WHY: the figures`.
fn verdict(c: &Ctx<'_>, out: &[Finding], flags: Flags, quotes: &Quotes) -> DoctorVerdict {
    let (limited_by, why) = cause(c, out, flags, quotes);
    let dir_prefix = if c.dirs.len() > 1 {
        format!("{} direction (the slower): ", dir_name(c.dir))
    } else {
        String::new()
    };
    let down = matches!(limited_by, Cause::PortDown | Cause::NoSubnetManager);
    let summary = match (c.best, c.pc.gbps) {
        _ if down => format!("no traffic can pass: {why}"),
        (None, _) => format!("no throughput was measured: {why}"),
        (Some(t), Some(_)) if c.pc.per_stream => format!(
            "limited by {why}: {dir_prefix}one TCP stream {} Gb/s{}{}",
            fmt_round(t.gbps, 2),
            stack_bound_words(c, t),
            c.multi(c.dir).map_or(String::new(), |m| format!(
                " ({} streams: {} Gb/s)",
                m.streams,
                fmt_round(m.gbps, 2)
            ))
        ),
        (Some(t), Some(g)) => {
            // Hundredths, or three significant digits below 0.1 Gb/s (a netem rate of 5 Mbit/s
            // read "0.01 Gb/s of a 0 Gb/s ceiling").
            let figure = |x: f64| {
                if x < 0.1 {
                    linerate_units::fmt_sig(x)
                } else {
                    fmt_round(x, 2)
                }
            };
            format!(
                "limited by {why}: {dir_prefix}{} Gb/s ({}) of a {} Gb/s ceiling",
                figure(t.gbps),
                t.words(),
                figure(g),
            )
        }
        (Some(t), None) => format!(
            "limited by {why}: {} Gb/s ({}); no ceiling is known for this path",
            fmt_round(t.gbps, 2),
            t.words()
        ),
    };
    let ceiling = if down { 0.0 } else { c.pc.gbps.unwrap_or(0.0) };
    DoctorVerdict {
        summary,
        gbps: r3(c.best_gbps()),
        test: c.best.map(Measured::words),
        ceiling_gbps: r3(ceiling),
        limited_by,
    }
}

/// Apply every doctor rule. Pure.
pub fn diagnose(i: &DiagnoseInput) -> Diagnosis {
    let c = Ctx::new(i);
    let mut checked: Vec<String> = Vec::new();
    let mut flags = Flags::default();

    let mut out = inventory(&c);
    checked.push("inventory of both ends (PCIe, link state and rate, IPoIB mode, MTU, NUMA, governor, error counters)".into());

    checked.push("MTU of both ends".into());
    out.extend(mtu_mismatch(&c));

    checked.push("traffic shapers (qdiscs with a rate) on both interfaces".into());
    out.extend(shapers(&c));

    checked.push("CPU use of the sending and receiving threads".into());
    let saturated = cpu_saturated(&c);
    flags.cpu_limited = !saturated.is_empty();
    out.extend(saturated);

    for d in [Direction::Send, Direction::Receive] {
        checked.extend(receiver_copy(&i.tests, d));
    }

    checked.push("other processes and hypervisor steal during the tests".into());
    let contended = cpu_contended(&c);
    flags.contended = contended.is_some();
    out.extend(contended);

    checked.push("socket buffer limits against the measured bandwidth-delay product".into());
    let mut quotes = Quotes::default();
    if let Some((f, dir, bound)) = tcp_buffers_small(&c) {
        // The window explains this test: a busy core on it is a symptom, not the cause.
        let subject = one_stream_subject(dir);
        out.retain(|x| !(x.id == FindingId::CpuSaturated && x.subject == subject));
        // The verdict is about the judged direction: the window limits it only when the test
        // it explains is of that direction.
        if dir == c.dir {
            flags.window_limited = true;
            quotes.window = Some(bound);
        }
        out.push(f);
    }

    checked.push("TCP retransmits, UDP loss, and error counters during the tests".into());
    let (lost, lossy) = retransmits(&c);
    flags.lossy = lossy;
    out.extend(lost);

    checked.push("packets reordered by the qdiscs of both ends (netem `reorder`)".into());
    out.extend(reordering(&c));

    checked.push(
        "drops counted by the qdiscs of both ends (netem, shapers, policers, full queues)".into(),
    );
    out.extend(qdisc_drops(&c));

    checked.push("both directions of the path".into());
    out.extend(path_asymmetric(&c));

    // RDMA on the same path tells the IP stack's share of a gap.
    if let Some(f) = rdma_vs_tcp(i) {
        checked.push("RDMA against TCP on the same path".into());
        out.push(f);
    }

    out.extend(ceiling_exceeded(&c));
    let judged = ceiling_or_unexplained(&c, &out, &checked);
    out.extend(judged);

    let verdict = verdict(&c, &out, flags, &quotes);
    rank(&mut out);
    Diagnosis {
        verdict,
        findings: out,
        checked,
        best_tcp: best_tcp(i),
    }
}
