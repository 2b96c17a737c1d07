//! Doctor's rules: measured results set against the ceiling of their path.
//!
//! Pure: [`diagnose`] takes the facts of both ends ([`EndFacts`], which
//! [`end_facts`] builds from an inventory) and the measured results
//! ([`Measured`]), and returns the findings, ranked, and a verdict.

use std::fmt::Write as _;

use linerate_inventory::{Inventory, IpoibMode, SocketLimits};
use linerate_model::ceiling::fmt_num;
use linerate_model::{Ceiling, LimitedBy};
use serde::{Deserialize, Serialize};

use crate::finding::{rank, Finding, Severity};

/// A rate limit on an interface (from `linerate_inventory::qdisc`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShaperFact {
    pub kind: String,
    pub handle: String,
    pub rate_bps: u64,
}

/// What doctor knows about one end of the path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndFacts {
    /// The interface carrying the path.
    pub netdev: Option<String>,
    /// `infiniband`, `ethernet`, `loopback`, `virtual`, ...
    pub port_kind: Option<String>,
    pub mtu: Option<u32>,
    /// IPoIB: `datagram` or `connected`.
    pub ipoib_mode: Option<String>,
    /// The port's ceiling chain (as probe computes it).
    pub ceiling: Option<Ceiling>,
    pub numa_node: Option<u32>,
    pub cpus: usize,
    pub sockets: SocketLimits,
    pub shapers: Vec<ShaperFact>,
    /// Inventory findings about this port, its PCI function, or the host.
    pub findings: Vec<Finding>,
}

/// One measured result, reduced to what the rules need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// `tcp_bw`, `udp_bw`, `tcp_lat`, `udp_lat`.
    pub kind: String,
    /// `send` (local → remote), `receive`, `bidir`.
    pub direction: String,
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
    pub latency_p50_us: Option<f64>,
    pub error: Option<String>,
}

/// A counter that moved during the tests (interface or InfiniBand error counters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterDelta {
    pub name: String,
    pub delta: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnoseInput {
    pub local: EndFacts,
    /// None for the self-check.
    pub remote: Option<EndFacts>,
    pub tests: Vec<Measured>,
    /// Host stack ceiling for one TCP stream on a virtual path: half the single-core copy rate, Gb/s.
    pub stack_ceiling_gbps: Option<f64>,
    pub counter_deltas: Vec<CounterDelta>,
}

/// The one-line answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub summary: String,
    /// Best TCP throughput measured, Gb/s.
    pub gbps: f64,
    /// What the path can carry for TCP, Gb/s (0 when unknown).
    pub ceiling_gbps: f64,
    /// The stage or cause that limits the result: `link`, `encoding`, `pcie`, `mtu`, `shaper`,
    /// `cpu`, `tcp_buffers`, `ipoib_mode`, `retransmits`, `port_down`, `no_subnet_manager`, `unknown`.
    pub limited_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// What was checked (listed in `unexplained`).
    pub checked: Vec<String>,
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
        .filter(|f| f.id != "sysfs.unreadable" || f.severity > Severity::Info)
        .cloned()
        .collect();
    EndFacts {
        netdev: netdev.map(str::to_string),
        port_kind: port.map(|p| {
            serde_json::to_value(p.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        }),
        mtu: nd.and_then(|n| n.mtu),
        ipoib_mode: nd
            .and_then(|n| n.ipoib.as_ref())
            .and_then(|i| i.mode)
            .map(|m| {
                if m == IpoibMode::Connected {
                    "connected"
                } else {
                    "datagram"
                }
                .to_string()
            }),
        ceiling: port.map(|p| crate::port_ceiling(inv, p)),
        numa_node: pci.and_then(|f| f.numa_node),
        cpus: inv.host.cpus.len(),
        sockets: inv.host.sockets.clone(),
        shapers,
        findings,
    }
}

impl EndFacts {
    fn is_virtual(&self) -> bool {
        matches!(
            self.port_kind.as_deref(),
            Some("loopback" | "virtual" | "paravirtual") | None
        )
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
        Some((s.rate_bps as f64 / 1e9 * (mtu - 52.0) / (mtu + 14.0), s))
    }
}

/// Path ceiling for TCP and what sets it.
struct PathCeiling {
    gbps: Option<f64>,
    limited_by: String,
    why: String,
}

/// Evidence key of `rdma.vs_tcp`: how much slower TCP is than RDMA, %.
const IP_STACK_COST: &str = "ip_stack_cost_percent";

/// Does this finding put TCP's gap down to the IP stack (TCP ≥ 10% below RDMA on the path)?
fn ip_stack_explains(f: &Finding) -> bool {
    f.id == "rdma.vs_tcp"
        && f.evidence
            .get(IP_STACK_COST)
            .and_then(|c| c.parse::<f64>().ok())
            .is_some_and(|c| c >= 10.0)
}

/// RDMA and TCP on the same path, side by side with the ceiling: what the IP stack costs,
/// and whether the hardware holds both back. None without an RDMA bandwidth result.
pub fn rdma_vs_tcp(i: &DiagnoseInput) -> Option<Finding> {
    let rdma = i
        .tests
        .iter()
        .filter(|t| t.kind.starts_with("rdma_") && t.kind.ends_with("_bw") && t.error.is_none())
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
    let tcp = i
        .tests
        .iter()
        .filter(|t| t.kind == "tcp_bw" && t.direction == "send")
        .max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
    let pc = path_ceiling(i, "send");
    let (r, t) = (rdma.gbps, tcp.gbps);
    if r <= 0.0 {
        return None;
    }
    let cost = (1.0 - t / r) * 100.0;
    // The conclusion first (the verdict quotes what precedes the first colon).
    let mut msg = if cost >= 1.0 {
        format!("the IP stack and CPU, which cost {cost:.0}%")
    } else {
        "TCP keeps up with RDMA on this path".to_string()
    };
    let _ = write!(
        msg,
        ": RDMA {} Gb/s, TCP {} Gb/s ({} stream{})",
        fmt_num((r * 100.0).round() / 100.0),
        fmt_num((t * 100.0).round() / 100.0),
        tcp.streams,
        if tcp.streams == 1 { "" } else { "s" }
    );
    let near = pc.gbps.filter(|c| *c > 0.0 && r >= 0.8 * c);
    match (pc.gbps, near) {
        (Some(c), Some(_)) => {
            let _ = write!(
                msg,
                "; {} caps both near {}",
                pc.why,
                fmt_num((c * 10.0).round() / 10.0)
            );
        }
        (Some(c), None) if c > 0.0 => {
            let _ = write!(
                msg,
                "; RDMA itself reaches {:.0}% of the {} Gb/s ceiling, so the hardware path (link, PCIe, cable, switch) falls short too",
                r / c * 100.0,
                fmt_num((c * 10.0).round() / 10.0)
            );
        }
        _ => {}
    }
    let severity = if cost > 25.0 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let fix = if cost > 25.0 {
        "TCP leaves much of what the hardware does unused: more streams (-P), IPoIB connected mode with MTU 65520 or jumbo frames, IRQs and threads on the NIC's NUMA node; or use RDMA directly (NFS over RDMA, MPI, ...)"
    } else {
        "nothing to fix in the IP stack; the gap to the ceiling, if any, is in the hardware path"
    };
    Some(
        Finding::new("rdma.vs_tcp", severity, "path")
            .evidence("rdma (Gb/s)", format!("{r:.2}"))
            .evidence("rdma test", &rdma.kind)
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

/// The TCP ceiling of the path from this host to the other end, Gb/s, when known.
pub fn send_ceiling_gbps(i: &DiagnoseInput) -> Option<f64> {
    path_ceiling(i, "send").gbps
}

/// The TCP ceiling of the path in one direction (`send`: local → remote, `receive`: back).
/// Hardware ceilings bind both directions; a shaper only limits what leaves its end.
fn path_ceiling(i: &DiagnoseInput, dir: &str) -> PathCeiling {
    let mut best: Option<(f64, String, String)> = None;
    let consider = |best: &mut Option<(f64, String, String)>, g: f64, lb: String, why: String| {
        if best.as_ref().is_none_or(|b| g < b.0) {
            *best = Some((g, lb, why));
        }
    };
    for (end, f) in
        std::iter::once(("local", &i.local)).chain(i.remote.iter().map(|r| ("remote", r)))
    {
        if let (Some(g), Some(c)) = (f.tcp_ceiling(), &f.ceiling) {
            let words = match c.limited_by {
                LimitedBy::Pcie => {
                    let link = c
                        .chain
                        .iter()
                        .find(|s| s.stage == linerate_model::StageKind::PcieLink)
                        .map_or("PCIe".to_string(), |s| {
                            s.explain.split(':').next().unwrap_or("PCIe").to_string()
                        });
                    format!("the {link} slot on the {end} end")
                }
                LimitedBy::Encoding => format!("the {end} link's 8b/10b line encoding"),
                LimitedBy::Mtu => format!("the {end} MTU"),
                _ => format!("the {end} link rate"),
            };
            consider(&mut best, g, c.limited_by.as_str().to_string(), words);
        }
        let egress = match dir {
            "receive" => end == "remote" || i.remote.is_none(),
            _ => end == "local",
        };
        if let Some((g, s)) = f.shaper_goodput().filter(|_| egress) {
            consider(
                &mut best,
                g,
                "shaper".into(),
                format!(
                    "a {} shaper at {} Gbit/s on the {end} {}",
                    s.kind,
                    fmt_num(s.rate_bps as f64 / 1e9),
                    f.netdev.as_deref().unwrap_or("interface")
                ),
            );
        }
    }
    // The host stack estimate is only an upper bound if no stream beat it (a busy moment while
    // measuring memory can make it too low): otherwise the path has no known ceiling.
    let best_single = i
        .tests
        .iter()
        .filter(|t| t.kind == "tcp_bw" && t.streams == 1 && t.direction == dir)
        .map(|t| t.gbps)
        .fold(0.0_f64, f64::max);
    if best.is_none() {
        if let Some(s) = i.stack_ceiling_gbps.filter(|s| *s >= best_single) {
            consider(&mut best, s, "cpu".into(), "the host's memory copy rate (a virtual path has no hardware ceiling; one TCP stream copies each byte twice)".into());
        }
    }
    match best {
        Some((g, lb, why)) => PathCeiling {
            gbps: Some(g),
            limited_by: lb,
            why,
        },
        None => PathCeiling {
            gbps: None,
            limited_by: "unknown".into(),
            why: "unknown".into(),
        },
    }
}

fn single<'a>(tests: &'a [Measured], dir: &str) -> Option<&'a Measured> {
    tests
        .iter()
        .find(|t| t.kind == "tcp_bw" && t.streams == 1 && t.direction == dir)
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

/// Findings that explain why a result stays below its ceiling (others describe the ceiling itself).
const EXPLAINS_A_GAP: [&str; 15] = [
    "rdma.vs_tcp",
    "cpu.saturated",
    "cpu.contended",
    "cpu.powersave",
    "tcp.buffers_small",
    "net.retransmits",
    "net.shaper",
    "ipoib.datagram_mode",
    "mtu.small",
    "mtu.mismatch",
    "path.asymmetric",
    "numa.mismatch",
    "link.errors",
    "ib.rate_below_capability",
    "pcie.downtrained",
];

/// Prefix a finding's subject with the end it concerns.
fn at_end(mut f: Finding, end: &str) -> Finding {
    f.subject = format!("{end}:{}", f.subject);
    f
}

/// Apply every doctor rule. Pure.
#[allow(clippy::too_many_lines)]
pub fn diagnose(i: &DiagnoseInput) -> Diagnosis {
    let mut out: Vec<Finding> = Vec::new();
    let mut checked: Vec<String> = Vec::new();
    let ends: Vec<(&str, &EndFacts)> = std::iter::once(("local", &i.local))
        .chain(i.remote.iter().map(|r| ("remote", r)))
        .collect();
    // Inventory findings of both ends.
    for (end, f) in &ends {
        out.extend(f.findings.iter().cloned().map(|x| at_end(x, end)));
    }
    checked.push("inventory of both ends (PCIe, link state and rate, IPoIB mode, MTU, NUMA, governor, error counters)".into());

    // Judge the slower direction (what the user feels), each against its own ceiling.
    let dirs: Vec<&str> = ["send", "receive"]
        .into_iter()
        .filter(|d| {
            i.tests
                .iter()
                .any(|t| t.kind == "tcp_bw" && t.direction == *d)
        })
        .collect();
    let pick = |d: &str| -> (PathCeiling, Option<&Measured>) {
        let pc = path_ceiling(i, d);
        // On a virtual path the ceiling is the host stack's for one stream: judge one stream by it.
        let one = pc.limited_by == "cpu";
        let best = i
            .tests
            .iter()
            .filter(|t| t.kind == "tcp_bw" && t.direction == d && (!one || t.streams == 1))
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps));
        (pc, best)
    };
    let (pc, best, dir) = dirs
        .iter()
        .map(|d| {
            let (pc, b) = pick(d);
            (pc, b, *d)
        })
        .min_by(|a, b| {
            let g = |x: Option<&Measured>| x.map_or(0.0, |t| t.gbps);
            g(a.1).total_cmp(&g(b.1))
        })
        .unwrap_or_else(|| {
            let (pc, b) = pick("send");
            (pc, b, "send")
        });
    let per_stream = pc.limited_by == "cpu";
    let dir_prefix = if dirs.len() > 1 {
        format!(
            "{} direction (the slower): ",
            if dir == "send" { "send" } else { "receive" }
        )
    } else {
        String::new()
    };
    let best_g = best.map_or(0.0, |t| t.gbps);
    let reached = pc.gbps.is_some_and(|c| best_g >= 0.9 * c);

    // mtu.mismatch
    checked.push("MTU of both ends".into());
    if let (Some(a), Some(b)) = (i.local.mtu, i.remote.as_ref().and_then(|r| r.mtu)) {
        if a != b {
            out.push(
                Finding::new("mtu.mismatch", Severity::Warning, "path")
                    .evidence(format!("local {} mtu", i.local.netdev.as_deref().unwrap_or("?")), a)
                    .evidence(format!("remote {} mtu", i.remote.as_ref().and_then(|r| r.netdev.as_deref()).unwrap_or("?")), b)
                    .message(format!(
                        "the two ends use different MTUs ({a} here, {b} there): TCP segments follow the smaller one, and on a shared L2 segment frames above {} are dropped (black-holed) when path MTU discovery does not kick in",
                        a.min(b)
                    ))
                    .fix(format!("Set the same MTU on both ends and every switch port in between (`ip link set DEV mtu {}`).", a.max(b))),
            );
        }
    }

    // net.shaper
    checked.push("traffic shapers (qdiscs with a rate) on both interfaces".into());
    for (end, f) in &ends {
        for s in &f.shapers {
            let g = s.rate_bps as f64 / 1e9;
            // A shaper limits what leaves its end: the send direction for ours, receive for theirs.
            let shaped_dir = if *end == "remote" { "receive" } else { "send" };
            let shaped_best = i
                .tests
                .iter()
                .filter(|t| t.kind == "tcp_bw" && t.direction == shaped_dir)
                .map(|t| t.gbps)
                .fold(0.0_f64, f64::max);
            let limits = shaped_best >= 0.85 * f.shaper_goodput().map_or(g, |x| x.0);
            out.push(
                Finding::new("net.shaper", Severity::Warning, format!("{end}:{}", f.netdev.as_deref().unwrap_or("?")))
                    .evidence("qdisc", format!("{} {} rate {} bit/s", s.kind, s.handle, s.rate_bps))
                    .message(format!(
                        "a {} qdisc limits {} on the {end} end to {} Gbit/s on the wire{}",
                        s.kind,
                        f.netdev.as_deref().unwrap_or("the interface"),
                        fmt_num(g),
                        if limits { format!(": it is what limits the {shaped_dir} direction (measured {} Gb/s of TCP payload)", fmt_num((shaped_best * 100.0).round() / 100.0)) } else { String::new() }
                    ))
                    .fix(format!(
                        "If it is not intended: `tc qdisc del dev {} root` (check `tc -s qdisc show dev {0}` and any tc setup in the network configuration).",
                        f.netdev.as_deref().unwrap_or("DEV")
                    )),
            );
        }
    }

    // cpu.saturated
    checked.push("CPU use of the sending and receiving threads".into());
    let mut cpu_limited = false;
    for t in i
        .tests
        .iter()
        .filter(|t| t.kind == "tcp_bw" && t.streams == 1 && t.direction != "bidir")
    {
        let cpu = [
            t.sender_cpu_percent,
            t.receiver_cpu_percent,
            t.max_stream_cpu_percent,
        ]
        .into_iter()
        .flatten()
        .fold(0.0_f64, f64::max);
        let below = pc.gbps.is_none_or(|c| t.gbps < 0.9 * c);
        // Thread CPU time leaves out softirq work done on the thread's behalf, so a
        // stream at 85% of a core is saturated; the busiest core (with interrupts) says so at 95%.
        // The busiest core is ours only when nothing else was running.
        let quiet = t.other_cores.is_none_or(|o| o < 0.2);
        let busy_core = quiet && t.busiest_core_percent.is_some_and(|c| c >= 95.0);
        let thread_busy = [
            t.sender_cpu_percent,
            t.receiver_cpu_percent,
            t.max_stream_cpu_percent,
        ]
        .into_iter()
        .flatten()
        .any(|c| c >= 85.0);
        if (thread_busy || busy_core) && below {
            cpu_limited = true;
            // Name the figure that shows it: the busiest core (interrupts included) when the
            // threads' own accounting, which leaves softirq work out, stays lower.
            let (cpu, what) = match t.busiest_core_percent.filter(|c| busy_core && *c > cpu) {
                Some(c) => (c, "busiest core (interrupts included)"),
                None => (cpu, "core"),
            };
            let multi = i
                .tests
                .iter()
                .filter(|m| m.kind == "tcp_bw" && m.streams > 1 && m.direction == t.direction)
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps));
            let more = multi.map_or(String::new(), |m| {
                format!(
                    "; with {} streams the path carried {} Gb/s",
                    m.streams,
                    fmt_num((m.gbps * 100.0).round() / 100.0)
                )
            });
            let side = if t.sender_cpu_percent >= t.receiver_cpu_percent {
                "sending"
            } else {
                "receiving"
            };
            out.push(
                Finding::new("cpu.saturated", Severity::Warning, format!("test:tcp_bw {} 1 stream", t.direction))
                    .evidence("gbps", fmt_num((t.gbps * 100.0).round() / 100.0))
                    .evidence("sender_cpu_percent", t.sender_cpu_percent.map_or("?".into(), |c| format!("{c:.0}")))
                    .evidence("receiver_cpu_percent", t.receiver_cpu_percent.map_or("?".into(), |c| format!("{c:.0}")))
                    .evidence("busiest_core_percent (this host, incl. interrupts)", t.busiest_core_percent.map_or("?".into(), |c| format!("{c:.0}")))
                    .message(format!(
                        "one stream ({} direction) kept the {side} {what} at {cpu:.0}%: a single CPU core, not the network, limits one TCP stream at {} Gb/s{more}",
                        t.direction,
                        fmt_num((t.gbps * 100.0).round() / 100.0)
                    ))
                    .fix("Use several streams (`-P 4`), pin the stream to the NIC's NUMA node and away from its interrupt core (`-A`), send with `--zerocopy`, use jumbo frames or IPoIB connected mode to cut per-packet work, and set the performance governor."),
            );
        }
    }

    // cpu.contended: someone else used the CPU while we measured.
    let mut contended = false;
    checked.push("other processes and hypervisor steal during the tests".into());
    let busy: Vec<&Measured> = i
        .tests
        .iter()
        .filter(|t| {
            t.other_cores.is_some_and(|c| c >= 0.3) || t.steal_cores.is_some_and(|c| c >= 0.1)
        })
        .collect();
    if !busy.is_empty() {
        let other = busy
            .iter()
            .filter_map(|t| t.other_cores)
            .fold(0.0_f64, f64::max);
        let steal = busy
            .iter()
            .filter_map(|t| t.steal_cores)
            .fold(0.0_f64, f64::max);
        contended = true;
        out.push(
            Finding::new("cpu.contended", Severity::Warning, "local:host")
                .evidence("other_processes_cores", format!("{other:.2}"))
                .evidence("hypervisor_steal_cores", format!("{steal:.2}"))
                .evidence("tests_affected", busy.len())
                .message(format!(
                    "while linerate measured, other processes on this host used up to {other:.1} cores{}: the results are lower than this machine can do",
                    if steal >= 0.1 { format!(" and the hypervisor took {steal:.1} cores") } else { String::new() }
                ))
                .fix("Run doctor again on an idle machine (check `top`), or pin linerate to idle cores with `bench -A`."),
        );
    }

    // tcp.buffers_small: the kernel's own accounting when it has it, else the measured RTT.
    checked.push("socket buffer limits against the measured bandwidth-delay product".into());
    let mut window_limited = false;
    let mut candidate: Option<WindowCandidate<'_>> = None;
    for t in i
        .tests
        .iter()
        .filter(|t| t.kind == "tcp_bw" && t.direction != "bidir")
    {
        let Some(rtt) = t.rtt_us.filter(|r| *r > 0.0) else {
            continue;
        };
        let (snd, rcv) = if t.direction == "send" {
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
        let below_ceiling = pc.gbps.is_none_or(|c| t.gbps < 0.9 * c);
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
            // Busy nearly all the test and waiting on neither: whatever limits the rate, it is
            // not the window, however large the (possibly inflated) RTT makes it look.
            (Some(r), Some(s))
                if r + s < WINDOW_CLEAR_PERCENT
                    && t.tcp_busy_percent.is_some_and(|b| b >= 90.0) =>
            {
                None
            }
            // In between, or an idle sender (with tiny buffers on a short path the socket
            // drains before the sender is scheduled again, which the kernel counts as idle, not
            // limited), or no figures: the estimate decides.
            _ => estimate(),
        };
        if let Some(score) = score.filter(|_| below_ceiling) {
            if candidate.as_ref().is_none_or(|c| score > c.score) {
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
    if let Some(WindowCandidate {
        test: t,
        inflight,
        wmem,
        rmem,
        ..
    }) = candidate
    {
        // The window explains this test: a busy core on it is a symptom, not the cause.
        let subject = format!("test:tcp_bw {} 1 stream", t.direction);
        out.retain(|f| !(f.id == "cpu.saturated" && f.subject == subject));
        let rtt = t.rtt_us.unwrap_or(0.0);
        let per_stream = t.gbps / f64::from(t.streams.max(1));
        window_limited = true;
        let target = pc.gbps.unwrap_or(t.gbps * 4.0).max(t.gbps);
        let need = (2.0 * target * 1e9 / 8.0 * rtt * 1e-6) as u64;
        let need = need.next_power_of_two().max(4 << 20);
        let kernel = match (t.rwnd_limited_percent, t.sndbuf_limited_percent) {
            (Some(r), Some(s)) => format!(
                "; of the time it had data to send, the kernel counted the sender waiting {}% on the receiver's window and {}% on its own send buffer",
                fmt_num(r.round()),
                fmt_num(s.round())
            ),
            _ => String::new(),
        };
        let mut f = Finding::new(
            "tcp.buffers_small",
            Severity::Warning,
            format!("test:tcp_bw {} {} stream(s)", t.direction, t.streams),
        )
        .evidence("rtt_us", fmt_num(rtt))
        .evidence(
            "gbps_per_stream",
            fmt_num((per_stream * 1000.0).round() / 1000.0),
        )
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
        out.push(
            f.evidence("sender tcp_wmem max", wmem.map_or("?".into(), |w| w.to_string()))
                .evidence("receiver tcp_rmem max", rmem.map_or("?".into(), |r| r.to_string()))
                .message(format!(
                    "each stream keeps about {} bytes in flight at a {} µs round trip, near what the socket buffer limits allow (send {} / receive {} bytes max){kernel}: the TCP window, not the path, sets the rate ({} Gb/s per stream = window / RTT)",
                    inflight as u64,
                    fmt_num((rtt * 10.0).round() / 10.0),
                    wmem.map_or("?".into(), |w| w.to_string()),
                    rmem.map_or("?".into(), |r| r.to_string()),
                    fmt_num((per_stream * 100.0).round() / 100.0)
                ))
                .fix(format!(
                    "On both ends: sysctl -w net.core.rmem_max={need} net.core.wmem_max={need} net.ipv4.tcp_rmem='4096 131072 {need}' net.ipv4.tcp_wmem='4096 16384 {need}' (persist in /etc/sysctl.d/)"
                )),
        );
    }

    // net.retransmits
    checked.push("TCP retransmits, UDP loss, and error counters during the tests".into());
    let virtual_path = i.local.is_virtual() && i.remote.as_ref().is_none_or(EndFacts::is_virtual);
    let mut lossy = false;
    for t in &i.tests {
        let rtx_rate = match (t.retransmits, t.segments) {
            (Some(r), Some(s)) if s > 0 => Some((r, r as f64 / s as f64)),
            _ => None,
        };
        let bad_rtx = rtx_rate.is_some_and(|(r, rate)| r >= 50 && rate > 0.001);
        let bad_loss = t.kind == "udp_bw" && t.loss_percent.is_some_and(|l| l > 0.5);
        if bad_rtx || bad_loss {
            lossy = true;
            let mut f = Finding::new(
                "net.retransmits",
                if virtual_path {
                    Severity::Info
                } else {
                    Severity::Warning
                },
                format!("test:{} {} {} stream(s)", t.kind, t.direction, t.streams),
            );
            if let Some((r, rate)) = rtx_rate {
                f = f
                    .evidence("retransmits", r)
                    .evidence("retransmit_rate_percent", format!("{:.3}", rate * 100.0));
            }
            if let Some(l) = t.loss_percent {
                f = f.evidence("loss_percent", format!("{l:.3}"));
            }
            for c in &i.counter_deltas {
                f = f.evidence(format!("counter {} rose by", c.name), c.delta);
            }
            let cause = if !i.counter_deltas.is_empty() {
                "and error counters rose during the test: a bad cable, transceiver or port (see the counters)"
            } else if virtual_path {
                "on a virtual path: the receiver fell behind (CPU contention), not a cable"
            } else {
                "with no error counters rising: congestion or a queue too small somewhere on the path"
            };
            out.push(
                f.message(format!(
                    "{} {}",
                    if bad_loss {
                        format!("{:.2}% of datagrams were lost at a rate the path should carry", t.loss_percent.unwrap_or(0.0))
                    } else {
                        format!("{} segments were retransmitted ({:.2}%)", rtx_rate.map_or(0, |x| x.0), rtx_rate.map_or(0.0, |x| x.1 * 100.0))
                    },
                    cause
                ))
                .fix("Read the interface and InfiniBand error counters (`linerate probe`, `ethtool -S`, `perfquery`); replace the cable if they rise; check switch port drops and flow control / ECN settings."),
            );
        }
    }
    if !i.counter_deltas.is_empty() && !lossy {
        let mut f = Finding::new("net.retransmits", Severity::Warning, "path");
        for c in &i.counter_deltas {
            f = f.evidence(format!("counter {} rose by", c.name), c.delta);
        }
        out.push(
            f.message("error counters rose during the tests although TCP recovered: the link is taking errors".to_string())
                .fix("Reseat or replace the cable or transceiver, then run doctor again."),
        );
    }

    // path.asymmetric
    checked.push("both directions of the path".into());
    if let (Some(s), Some(r)) = (single(&i.tests, "send"), single(&i.tests, "receive")) {
        let (hi, lo) = if s.gbps >= r.gbps { (s, r) } else { (r, s) };
        // A shaper on the slower direction's egress already explains the difference.
        let shaper_end = if lo.direction == "send" {
            Some(&i.local)
        } else {
            i.remote.as_ref()
        };
        let shaped = shaper_end
            .and_then(EndFacts::shaper_goodput)
            .is_some_and(|(g, _)| lo.gbps >= 0.85 * g);
        if hi.gbps > 0.0 && lo.gbps < 0.75 * hi.gbps && !shaped {
            let slow_receiver = if lo.direction == "send" {
                "the remote end"
            } else {
                "this host"
            };
            out.push(
                Finding::new("path.asymmetric", Severity::Warning, "path")
                    .evidence("send_gbps", fmt_num((s.gbps * 100.0).round() / 100.0))
                    .evidence("receive_gbps", fmt_num((r.gbps * 100.0).round() / 100.0))
                    .evidence(format!("{} receiver_cpu_percent", lo.direction), lo.receiver_cpu_percent.map_or("?".into(), |c| format!("{c:.0}")))
                    .evidence(format!("{} sender_cpu_percent", lo.direction), lo.sender_cpu_percent.map_or("?".into(), |c| format!("{c:.0}")))
                    .message(format!(
                        "the {} direction carries {} Gb/s but the {} direction only {} Gb/s: {slow_receiver} receives slower (a slower CPU, a shaper, offloads or a different configuration on that end)",
                        hi.direction,
                        fmt_num((hi.gbps * 100.0).round() / 100.0),
                        lo.direction,
                        fmt_num((lo.gbps * 100.0).round() / 100.0)
                    ))
                    .fix("Compare the two ends (`linerate probe` on each): CPU model and governor, MTU, IPoIB mode, shapers, NIC offloads (`ethtool -k`)."),
            );
        }
    }

    // RDMA on the same path tells the IP stack's share of a gap.
    if let Some(f) = rdma_vs_tcp(i) {
        checked.push("RDMA against TCP on the same path".into());
        out.push(f);
    }

    // ceiling.reached or unexplained
    let attributed = out.iter().any(|f| {
        f.severity >= Severity::Warning && EXPLAINS_A_GAP.contains(&f.id.as_str())
            || ip_stack_explains(f)
    });
    let any_port_down = ends.iter().any(|(_, f)| {
        f.ceiling.as_ref().is_some_and(|c| {
            matches!(
                c.limited_by,
                LimitedBy::PortDown | LimitedBy::NoSubnetManager
            )
        })
    });
    if any_port_down {
        // The port state explains everything; its finding is already there.
    } else if let (Some(c), Some(t)) = (pc.gbps, best) {
        if reached {
            out.push(
                Finding::new("ceiling.reached", Severity::Info, "path")
                    .evidence("gbps", fmt_num((t.gbps * 100.0).round() / 100.0))
                    .evidence("ceiling_gbps", fmt_num((c * 100.0).round() / 100.0))
                    .message(format!(
                        "{} of {} Gb/s ({:.0}%), limited by {}",
                        fmt_num((t.gbps * 100.0).round() / 100.0),
                        fmt_num((c * 100.0).round() / 100.0),
                        t.gbps / c * 100.0,
                        pc.why
                    ))
                    .fix(if per_stream {
                        "Nothing to fix for one stream: this is what one core pushes through the host's TCP stack; use more streams for more."
                    } else if pc.limited_by == "shaper" {
                        "The traffic shaper sets this rate: raise or remove it if that is not intended (see net.shaper)."
                    } else {
                        "Nothing to fix in software: this is what the hardware carries."
                    }),
            );
        } else if !attributed {
            out.push(
                Finding::new(
                    "unexplained",
                    // A virtual path's ceiling is an estimate: missing it is worth a note, not a warning.
                    if per_stream { Severity::Info } else { Severity::Warning },
                    "path",
                )
                    .evidence("gbps", fmt_num((t.gbps * 100.0).round() / 100.0))
                    .evidence("ceiling_gbps", fmt_num((c * 100.0).round() / 100.0))
                    .message(format!(
                        "{} Gb/s is {:.0}% of the {} Gb/s ceiling and no check explains the gap. Checked: {}",
                        fmt_num((t.gbps * 100.0).round() / 100.0),
                        t.gbps / c * 100.0,
                        fmt_num((c * 100.0).round() / 100.0),
                        checked.join("; ")
                    ))
                    .fix("Look at the switch (port counters, congestion, other traffic), the NIC's firmware and offloads (`ethtool -k`, `ethtool -S`), IRQ placement (`/proc/interrupts`), and run doctor --thorough."),
            );
        }
    } else if best.is_some_and(|t| t.gbps > 0.0) && !attributed && pc.gbps.is_none() {
        out.push(
            Finding::new("unexplained", Severity::Info, "path")
                .message(format!(
                    "no ceiling is known for this path, so the result cannot be judged against one. Checked: {}",
                    checked.join("; ")
                ))
                .fix("Run probe on both ends; a virtual interface has no hardware ceiling."),
        );
    }

    // Verdict.
    let port_state = ends.iter().find_map(|(end, f)| {
        f.ceiling.as_ref().and_then(|c| match c.limited_by {
            LimitedBy::PortDown | LimitedBy::NoSubnetManager => {
                let state = c
                    .chain
                    .iter()
                    .find(|s| s.stage == linerate_model::StageKind::State)
                    .map_or(c.summary.clone(), |s| s.explain.clone());
                let once = c.potential_gbps.map_or(String::new(), |p| {
                    format!(" (once fixed: about {} Gb/s)", fmt_num(p))
                });
                Some((
                    format!("{end} {}", f.netdev.as_deref().unwrap_or(""))
                        .trim()
                        .to_string(),
                    c.limited_by.as_str().to_string(),
                    format!("{state}{once}"),
                ))
            }
            _ => None,
        })
    });
    let (limited_by, why) = if let Some((end, lb, s)) = port_state {
        (lb, format!("the {end} port: {s}"))
    } else if reached {
        (pc.limited_by.clone(), pc.why.clone())
    } else if window_limited {
        (
            "tcp_buffers".into(),
            "TCP socket buffer limits (window / RTT)".into(),
        )
    } else if out.iter().any(|f| f.id == "net.shaper") && pc.limited_by == "shaper" {
        ("shaper".into(), pc.why.clone())
    } else if ends.iter().any(|(_, f)| {
        f.ipoib_mode.as_deref() == Some("datagram")
            && f.findings
                .iter()
                .any(|x| x.id == "ipoib.datagram_mode" && x.severity >= Severity::Warning)
    }) {
        (
            "ipoib_mode".into(),
            "IPoIB datagram mode (small packets, one core per stream)".into(),
        )
    } else if contended {
        (
            "cpu".into(),
            "other processes competing for the CPU (the results are a lower bound)".into(),
        )
    } else if cpu_limited {
        ("cpu".into(), "one CPU core per stream".into())
    } else if lossy {
        (
            "retransmits".into(),
            "packet loss and retransmissions".into(),
        )
    } else if let Some(f) = out
        .iter()
        .filter(|f| f.severity >= Severity::Warning && EXPLAINS_A_GAP.contains(&f.id.as_str()))
        .max_by_key(|f| f.severity)
    {
        let lb = match f.id.as_str() {
            "mtu.small" | "mtu.mismatch" => "mtu",
            "net.retransmits" | "link.errors" => "retransmits",
            "ib.rate_below_capability" => "link",
            "pcie.downtrained" => "pcie",
            "tcp.buffers_small" => "tcp_buffers",
            "net.shaper" => "shaper",
            _ => "cpu",
        };
        (
            lb.into(),
            format!(
                "{} (see the `{}` finding)",
                f.message.split(':').next().unwrap_or(&f.id),
                f.id
            ),
        )
    } else if let Some(f) = out.iter().find(|f| ip_stack_explains(f)) {
        (
            "cpu".into(),
            format!(
                "{} (see the `rdma.vs_tcp` finding)",
                f.message.split(':').next().unwrap_or(&f.id)
            ),
        )
    } else if pc.gbps.is_some() && out.iter().any(|f| f.id == "unexplained") {
        (
            "unknown".into(),
            "something not identified (see `unexplained`)".into(),
        )
    } else if pc.gbps.is_some() {
        ("unknown".into(), "nothing identified".into())
    } else {
        ("unknown".into(), "unknown (no ceiling known)".into())
    };
    let down = limited_by == "port_down" || limited_by == "no_subnet_manager";
    let c = if down { 0.0 } else { pc.gbps.unwrap_or(0.0) };
    let summary = match (best, pc.gbps) {
        _ if down => format!("no traffic can pass: {why}"),
        (None, _) => format!("no throughput was measured: {why}"),
        (Some(t), Some(c)) if per_stream => {
            let multi = i
                .tests
                .iter()
                .filter(|m| m.kind == "tcp_bw" && m.streams > 1 && m.direction == dir)
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps));
            format!(
                "{dir_prefix}one TCP stream: {} Gb/s of the ≈{} Gb/s one core can push through the host stack{}: limited by {why}",
                fmt_num((t.gbps * 100.0).round() / 100.0),
                fmt_num((c * 10.0).round() / 10.0),
                multi.map_or(String::new(), |m| format!(
                    " ({} streams: {} Gb/s)",
                    m.streams,
                    fmt_num((m.gbps * 100.0).round() / 100.0)
                ))
            )
        }
        (Some(t), Some(c)) => format!(
            "{dir_prefix}{} Gb/s of a {} Gb/s ceiling: limited by {why}",
            fmt_num((t.gbps * 100.0).round() / 100.0),
            fmt_num((c * 100.0).round() / 100.0),
        ),
        (Some(t), None) => format!(
            "{} Gb/s; no ceiling is known for this path: limited by {why}",
            fmt_num((t.gbps * 100.0).round() / 100.0)
        ),
    };
    rank(&mut out);
    Diagnosis {
        verdict: Verdict {
            summary,
            gbps: (best_g * 1000.0).round() / 1000.0,
            ceiling_gbps: (c * 1000.0).round() / 1000.0,
            limited_by,
        },
        findings: out,
        checked,
    }
}

/// True when this end's port is an InfiniBand or RoCE port (for RDMA plans later).
pub fn is_rdma(f: &EndFacts) -> bool {
    matches!(f.port_kind.as_deref(), Some("infiniband" | "roce"))
}
