//! The one-line answer: what limits the judged result, the first cause that holds in order of
//! how directly it explains the result (a port down, the ceiling reached, the window, a shaper,
//! IPoIB datagram mode, loss a qdisc counted, contention, a core, loss, the strongest finding,
//! the IP stack), and the figures, from the findings and what the rules' outputs say beyond
//! them ([`Reading`]).

use linerate_facts::{Cause, DoctorVerdict, Finding, FindingId, IpoibMode, Severity};
use linerate_model::StageKind;
use linerate_proto::Direction;
use linerate_units::{fmt_num, fmt_round, r3};

use super::context::Ctx;
use super::input::{dir_name, EndView, Measured};
use super::loss::loss_elsewhere;
use super::qdisc::{qdisc_drop_words, reorder_words};
use super::rdma::ip_stack_explains;
use super::registry::FactOutputs;
use super::window::WindowBound;
use crate::thresholds::{SHAPER_REACHED_FRACTION, STACK_BOUND_SHOWN_WITHIN};

/// What the verdict reads of the rules' typed outputs beyond the findings, each from the rule
/// that says it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading<'a> {
    /// `cpu.saturated` fired (whatever the window took back of it:
    /// `Edit::WindowExplainsItsTest`).
    pub(super) cpu_limited: bool,
    /// `cpu.contended` or `cpu.steal` explains the gap: the cause and its words.
    pub(super) contended: Option<(Cause, &'a str)>,
    /// The window that limits the judged direction: `tcp.buffers_small` of a test of it.
    pub(super) window: Option<&'a WindowBound>,
    /// `net.retransmits` found loss that explains the judged direction's result.
    pub(super) lossy: bool,
}

impl<'a> Reading<'a> {
    pub(super) fn of(c: &Ctx<'_>, facts: &'a FactOutputs) -> Self {
        Self {
            cpu_limited: !facts.cpu_saturated.is_empty(),
            contended: facts
                .cpu_contended
                .explains
                .as_deref()
                .map(|w| (Cause::Cpu, w))
                .or_else(|| {
                    facts
                        .cpu_steal
                        .explains
                        .as_deref()
                        .map(|w| (Cause::Hypervisor, w))
                }),
            // The verdict is about the judged direction: the window limits it only when the
            // test it explains is of that direction.
            window: facts
                .tcp_buffers_small
                .as_ref()
                .filter(|w| w.dir == c.dir)
                .map(|w| &w.bound),
            lossy: facts.retransmits.lossy,
        }
    }
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
fn counted_loss(c: &Ctx<'_>, out: &[Finding], lossy: bool) -> Option<(Cause, String)> {
    if let Some(q) = lossy.then(|| qdisc_drop_words(c, c.dir)).flatten() {
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
fn cause(c: &Ctx<'_>, out: &[Finding], r: Reading<'_>) -> (Cause, String) {
    let pc = &c.pc;
    if let Some((end, lb, s)) = port_state(c) {
        return (lb, format!("the {end} port: {s}"));
    }
    if c.reached() {
        return (pc.limited_by, pc.why.clone());
    }
    if let Some(w) = r.window {
        return (Cause::TcpBuffers, w.words());
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
    if let Some(counted) = counted_loss(c, out, r.lossy) {
        return counted;
    }
    if let Some((cause, words)) = r.contended {
        return (cause, words.to_string());
    }
    if r.cpu_limited {
        return (Cause::Cpu, "one CPU core per stream".into());
    }
    if r.lossy {
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
pub(super) fn verdict(c: &Ctx<'_>, out: &[Finding], r: Reading<'_>) -> DoctorVerdict {
    let (limited_by, why) = cause(c, out, r);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic, run, tcp};
    use crate::diagnose::{DiagnoseInput, Measured};
    use linerate_facts::{QdiscDelta, QdiscSide, QdiscsSeen};
    use linerate_model::LimitedBy;

    fn nics(tests: Vec<Measured>) -> DiagnoseInput {
        input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), tests)
    }

    fn busy(t: Measured) -> Measured {
        Measured {
            sender_cpu_percent: Some(99.0),
            ..t
        }
    }

    /// Other processes held the busiest core for 40% of its time: contention that explains
    /// a gap.
    fn contended(t: Measured) -> Measured {
        Measured {
            other_cores: Some(2.0),
            busiest_core_others_percent: Some(40.0),
            ..t
        }
    }

    fn dropping(mut i: DiagnoseInput) -> DiagnoseInput {
        i.qdiscs = QdiscsSeen {
            local: Some(vec![QdiscDelta {
                interface: "eth0".into(),
                kind: "tbf".into(),
                handle: "8001:".into(),
                parent: "root".into(),
                side: QdiscSide::Egress,
                packets: 37_000,
                drops: 800,
                overlimits: 0,
                requeues: 0,
                reset: false,
                reorders: false,
                tests: Vec::new(),
            }]),
            remote: Some(Vec::new()),
        };
        i
    }

    #[test]
    fn a_port_that_passes_nothing_comes_first() {
        let mut down = nic("eth0", 0.0);
        let ceiling = down.ceiling.as_mut().unwrap();
        ceiling.limited_by = LimitedBy::PortDown;
        ceiling.potential_gbps = Some(100.0);
        ceiling.summary = "port down".into();
        let d = run(&input(
            down,
            Some(nic("eth1", 10.0)),
            vec![busy(tcp(Direction::Send, 1, 0.0))],
        ));
        assert_eq!(d.verdict.limited_by, Cause::PortDown);
        assert_eq!(
            d.verdict.summary,
            "no traffic can pass: the local eth0 port: port down (once fixed: about 100 Gb/s)"
        );
        assert_eq!(d.verdict.ceiling_gbps, 0.0);
    }

    #[test]
    fn a_result_at_its_ceiling_is_limited_by_what_sets_it() {
        let d = run(&nics(vec![busy(tcp(Direction::Send, 1, 9.0))]));
        assert_eq!(d.verdict.limited_by, Cause::Link);
        assert_eq!(
            d.verdict.summary,
            "limited by the local link rate: 9 Gb/s (TCP send, 1 stream) of a 9.4 Gb/s ceiling"
        );
    }

    #[test]
    fn loss_a_qdisc_counted_comes_before_contention_and_a_busy_core() {
        let lossy = Measured {
            retransmits: Some(20_000),
            ..busy(contended(tcp(Direction::Send, 1, 3.0)))
        };
        let d = run(&dropping(nics(vec![lossy.clone()])));
        assert_eq!(d.verdict.limited_by, Cause::Retransmits);
        assert!(
            d.verdict.summary.starts_with("limited by packet loss and retransmissions (the tbf qdisc 8001 on the local eth0 dropped 800 packets"),
            "{}",
            d.verdict.summary
        );
        // Without the qdisc: contention, then the core.
        let d = run(&nics(vec![busy(contended(tcp(Direction::Send, 1, 3.0)))]));
        assert!(
            d.verdict
                .summary
                .starts_with("limited by other processes competing for the CPU"),
            "{}",
            d.verdict.summary
        );
        let d = run(&nics(vec![busy(tcp(Direction::Send, 1, 3.0))]));
        assert!(
            d.verdict
                .summary
                .starts_with("limited by one CPU core per stream:"),
            "{}",
            d.verdict.summary
        );
        assert_eq!(d.verdict.limited_by, Cause::Cpu);
    }

    #[test]
    fn the_slower_direction_is_named_and_judged() {
        let d = run(&nics(vec![
            tcp(Direction::Send, 1, 9.0),
            tcp(Direction::Receive, 1, 5.0),
        ]));
        assert!(
            d.verdict
                .summary
                .contains(": receive direction (the slower): 5 Gb/s (TCP receive, 1 stream)"),
            "{}",
            d.verdict.summary
        );
        assert_eq!(d.verdict.test.as_deref(), Some("TCP receive, 1 stream"));
    }

    #[test]
    fn nothing_measured_says_so() {
        let d = run(&nics(Vec::new()));
        assert!(
            d.verdict
                .summary
                .starts_with("no throughput was measured: "),
            "{}",
            d.verdict.summary
        );
        assert_eq!(d.verdict.gbps, 0.0);
    }
}
