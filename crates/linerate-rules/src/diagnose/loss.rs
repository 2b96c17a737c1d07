//! Loss: `net.retransmits` (retransmits, UDP loss and error counters during the tests, each put
//! down to what counted it: error counters, a qdisc, reordering, a receiver short of CPU, a UDP
//! receiver, or the path between the ends), and for the other rules and the verdict, whether a
//! loss finding is about the other direction and whether a direction lost packets on the path.

use linerate_facts::{Finding, FindingId, Severity};
use linerate_proto::{Direction, TestKind};
use linerate_units::fmt_round;

use super::context::{path_lossy, udp_loss_at_receiver, udp_rcvbuf_drops, Ctx};
use super::cpu::receiver_starved;
use super::input::{dir_name, Loss, Measured};
use super::qdisc::{
    qdisc_dirs, qdisc_drop_words, qdiscs_dropping, qdiscs_reordering, reorder_words,
};
use super::registry::{rule, FromFacts, Output};

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
    } else if let Some(n) = udp_rcvbuf_drops(t) {
        (
            format!("and the receiving host counted {n} UDP datagrams dropped because the receiving socket's buffer was full (`RcvbufErrors`, host-wide) during the test: the receiving socket overflowed, the path lost nothing"),
            Severity::Info,
            "Nothing to fix on the path. If UDP matters here, let the receiving socket hold more (`net.core.rmem_max`, then `SO_RCVBUF`) or give the receiver more CPU.".to_string(),
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

/// `net.retransmits`'s output: its findings, and whether loss explains the judged direction's
/// result (the verdict names the loss then).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Losses {
    pub(super) findings: Vec<Finding>,
    /// A warning of loss in the judged direction (or both), or error counters that rose.
    pub(super) lossy: bool,
}

impl Output for Losses {
    fn findings(&self) -> &[Finding] {
        &self.findings
    }
}

/// `net.retransmits`: retransmits, UDP loss, and error counters during the tests, each with
/// where the loss was counted: error counters (a cable, a port), a qdisc on either end (with
/// its counter: `net.qdisc_drops`), a receiver that fell behind for want of CPU (only when the
/// CPU figures show it), or, with none of them, the path between the ends. Also says whether a
/// test of the judged direction lost packets that explain its result (a warning there; the
/// verdict names the loss then). Loss in the other direction is its own warning, but the
/// verdict, which speaks of the judged direction, does not put its figure down to it.
impl FromFacts for rule::Retransmits {
    type Output = Losses;

    fn run(self, c: &Ctx<'_>) -> Losses {
        let i = c.i;
        let mut out = Vec::new();
        // Only loss in the judged direction explains the verdict's result: loss in the other
        // direction is named by its own finding, not quoted as the cause of this one.
        let mut lossy = false;
        for t in &i.tests {
            let loss = Loss::of(t);
            if loss.spurious_over && !loss.udp_over {
                out.push(spurious_only(t, &loss));
            }
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
            let spurious = loss.spurious.filter(|d| *d > 0);
            if let Some(d) = spurious {
                f = f.evidence("spurious_retransmits (D-SACK, not counted as loss)", d);
            }
            if let Some(l) = t.loss_percent {
                f = f.evidence("loss_percent", format!("{l:.3}"));
            }
            if let (Some(u), TestKind::UdpBw) = (t.receiver_udp, t.kind) {
                f = f
                    .evidence("receiver UDP RcvbufErrors (host-wide)", u.rcvbuf_errors)
                    .evidence("receiver UDP InErrors (host-wide)", u.in_errors);
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
                            "{} segments were retransmitted ({:.2}%{})",
                            loss.rtx.map_or(0, |x| x.0),
                            loss.rtx.map_or(0.0, |x| x.1 * 100.0),
                            spurious.map_or(String::new(), |d| format!(
                                "; {d} more TCP found spurious, not counted"
                            ))
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
        Losses {
            findings: out,
            lossy,
        }
    }
}

/// `tcp.spurious_retransmits`: test `t` retransmitted past the lines of loss only counting
/// retransmits the receiver reported by D-SACK as duplicates. Nothing was lost: the sender's
/// timer fired before the acknowledgement came (a stalled host or guest, a long queue). Said as
/// what it is, a note; never loss, never the verdict.
fn spurious_only(t: &Measured, loss: &Loss) -> Finding {
    let all = t.retransmits.unwrap_or(0);
    let spurious = loss.spurious.unwrap_or(0);
    let (lost, rate) = loss.rtx.unwrap_or((0, 0.0));
    let all_rate = t
        .segments
        .filter(|s| *s > 0)
        .map_or(0.0, |s| all as f64 / s as f64 * 100.0);
    Finding::new(FindingId::TcpSpuriousRetransmits, Severity::Info, loss_subject(t))
        .evidence("retransmits", all)
        .evidence("spurious_retransmits (D-SACK)", spurious)
        .evidence("retransmits_for_loss", lost)
        .evidence("retransmit_for_loss_rate_percent", format!("{:.3}", rate * 100.0))
        .message(format!(
            "{all} segments were retransmitted ({all_rate:.2}%), but the receiver reported {spurious} of them by D-SACK as segments it already had: TCP's timer fired before their acknowledgement came (a stalled host or guest, or a queue longer than the retransmission timeout), nothing was lost; {lost} retransmitted for loss ({:.2}%) is under the line of loss",
            rate * 100.0
        ))
        .fix("Nothing was lost on the path. If it recurs, look for what stalls an end (the cpu findings: steal, other processes; a paused VM) or a queue that delays past the retransmission timeout (`tc -s qdisc`).")
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
pub(super) fn loss_elsewhere(c: &Ctx<'_>, f: &Finding) -> bool {
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
pub(super) fn lost_on_the_path(c: &Ctx<'_>, d: Direction) -> bool {
    !qdiscs_dropping(c, d).is_empty()
        || !qdiscs_reordering(c, d).is_empty()
        || c.i
            .tests
            .iter()
            .any(|t| t.direction == d && path_lossy(c, t) && receiver_starved(c, t).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{guest, input, nic, tcp, udp};
    use crate::diagnose::DiagnoseInput;
    use linerate_facts::{CounterDelta, QdiscDelta, QdiscSide, QdiscsSeen};

    /// `tcp` with `n` retransmits.
    fn lossy(direction: Direction, gbps: f64, n: u64) -> Measured {
        Measured {
            retransmits: Some(n),
            ..tcp(direction, 1, gbps)
        }
    }

    fn nics(tests: Vec<Measured>) -> DiagnoseInput {
        let mut i = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), tests);
        i.qdiscs = QdiscsSeen {
            local: Some(Vec::new()),
            remote: Some(Vec::new()),
        };
        i
    }

    fn losses(i: &DiagnoseInput) -> Losses {
        rule::Retransmits.run(&Ctx::new(i))
    }

    #[test]
    fn loss_with_error_counters_rising_is_the_links() {
        let mut i = nics(vec![lossy(Direction::Send, 3.0, 20_000)]);
        i.counter_deltas = vec![CounterDelta::rose("eth0 rx_crc_errors", 12)];
        let l = losses(&i);
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(f.subject, "test:tcp_bw send 1 stream(s)");
        assert!(
            f.message
                .starts_with("20000 segments were retransmitted (0.77%) and error counters rose"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence["counter eth0 rx_crc_errors rose by"], "12");
        assert_eq!(f.fix, COUNTERS_FIX);
        assert!(l.lossy);
    }

    /// Issue #37: a sender whose timer fired while nothing was dropped (a stalled guest)
    /// retransmits segments the receiver had; the receiver says so by D-SACK. Those are not
    /// loss: a note says what they are, no `net.retransmits`, no loss verdict. Where some were
    /// lost too, only those count, and the rest are named beside them.
    #[test]
    fn retransmits_tcp_found_spurious_are_not_loss() {
        let stalled = |spurious| Measured {
            spurious_retransmits: spurious,
            ..lossy(Direction::Send, 3.0, 20_000)
        };
        let i = nics(vec![stalled(Some(19_990))]);
        let l = losses(&i);
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(
            (f.id, f.severity),
            (FindingId::TcpSpuriousRetransmits, Severity::Info)
        );
        assert_eq!(f.subject, "test:tcp_bw send 1 stream(s)");
        assert!(
            f.message.starts_with("20000 segments were retransmitted (0.77%), but the receiver reported 19990 of them by D-SACK"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("nothing was lost; 10 retransmitted for loss"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence["retransmits_for_loss"], "10");
        assert!(!l.lossy);
        let d = crate::diagnose::diagnose(&i);
        assert!(
            d.findings.iter().all(|f| f.id != FindingId::NetRetransmits),
            "{:?}",
            d.findings
        );
        assert_ne!(
            d.verdict.limited_by,
            linerate_facts::Cause::Retransmits,
            "{}",
            d.verdict.summary
        );
        assert!(
            !d.verdict.summary.contains("retransmi"),
            "{}",
            d.verdict.summary
        );

        // A quarter of them spurious: the rest is loss, counted without them.
        let l = losses(&nics(vec![stalled(Some(5_000))]));
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(
            (f.id, f.severity),
            (FindingId::NetRetransmits, Severity::Warning)
        );
        assert!(
            f.message.starts_with("15000 segments were retransmitted (0.58%; 5000 more TCP found spurious, not counted)"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence["retransmits"], "15000");
        assert!(l.lossy);

        // The sender did not say (an older kernel, a stock iperf3): every retransmit counts.
        let l = losses(&nics(vec![stalled(None)]));
        assert_eq!(l.findings.len(), 1);
        assert_eq!(l.findings[0].id, FindingId::NetRetransmits);
        assert!(l.findings[0]
            .message
            .starts_with("20000 segments were retransmitted (0.77%) "));
        // A hostile or confused count above the retransmits is capped at them.
        let l = losses(&nics(vec![stalled(Some(u64::MAX))]));
        assert_eq!(l.findings[0].id, FindingId::TcpSpuriousRetransmits);
        assert_eq!(l.findings[0].evidence["retransmits_for_loss"], "0");
    }

    #[test]
    fn counters_that_rose_with_no_loss_say_the_link_takes_errors() {
        let mut i = nics(vec![tcp(Direction::Send, 1, 3.0)]);
        i.counter_deltas = vec![CounterDelta::rose("eth0 rx_crc_errors", 12)];
        let l = losses(&i);
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(
            (f.subject.as_str(), f.severity),
            ("path", Severity::Warning)
        );
        assert!(l.lossy);
        assert!(!losses(&nics(vec![tcp(Direction::Send, 1, 3.0)])).lossy);
    }

    #[test]
    fn loss_a_qdisc_counted_is_the_qdiscs() {
        let mut i = nics(vec![lossy(Direction::Send, 3.0, 20_000)]);
        i.qdiscs.local = Some(vec![QdiscDelta {
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
        }]);
        let l = losses(&i);
        let f = &l.findings[0];
        assert!(
            f.message
                .contains("the loss is that qdisc's (see `net.qdisc_drops`)"),
            "{}",
            f.message
        );
        assert_eq!(f.evidence["local eth0 qdisc tbf 8001: drops"], "800");
        assert!(l.lossy);
        let c = Ctx::new(&i);
        assert!(lost_on_the_path(&c, Direction::Send));
        assert!(!lost_on_the_path(&c, Direction::Receive));
    }

    #[test]
    fn loss_in_the_other_direction_does_not_explain_the_judged_one() {
        // The send direction is the slower, the verdict's; the receive direction lost packets.
        let i = nics(vec![
            tcp(Direction::Send, 1, 1.0),
            lossy(Direction::Receive, 3.0, 20_000),
        ]);
        let l = losses(&i);
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(f.severity, Severity::Warning);
        assert!(!l.lossy);
        let c = Ctx::new(&i);
        assert!(loss_elsewhere(&c, f));
        assert!(lost_on_the_path(&c, Direction::Receive));
    }

    #[test]
    fn a_virtual_paths_receiver_short_of_cpu_lost_them() {
        let t = Measured {
            receiver_cpu_percent: Some(95.0),
            ..lossy(Direction::Receive, 1.0, 1_000)
        };
        let i = input(guest("enp1s0"), Some(guest("enp1s0")), vec![t]);
        let l = losses(&i);
        let f = &l.findings[0];
        // A symptom of the CPU findings on a virtual path: a note.
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.contains("the CPU, not the path, lost them"),
            "{}",
            f.message
        );
        assert_eq!(
            f.evidence["receiver CPU"],
            "its receiving thread used 95% of a core"
        );
        assert!(!l.lossy);
        assert!(!lost_on_the_path(&Ctx::new(&i), Direction::Receive));
    }

    #[test]
    fn udp_loss_tcp_does_not_see_is_the_receiving_ends() {
        let i = nics(vec![
            tcp(Direction::Send, 1, 2.0),
            udp(Direction::Send, 1.0, 3.0),
        ]);
        let l = losses(&i);
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.starts_with("3.00% of datagrams were lost"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("the receiving end dropped them, not the path"),
            "{}",
            f.message
        );
        assert!(!l.lossy);
    }

    /// A UDP result that lost `lost` of 100000 datagrams, its receiver having counted `rcvbuf`
    /// socket-buffer drops (None: not read).
    fn udp_counted(lost: u64, rcvbuf: Option<u64>) -> Measured {
        Measured {
            lost_packets: Some(lost),
            receiver_udp: rcvbuf.map(|r| linerate_facts::UdpReceive {
                in_datagrams: 100_000 - lost,
                rcvbuf_errors: r,
                in_errors: r,
            }),
            ..udp(Direction::Send, 1.0, lost as f64 / 1000.0)
        }
    }

    #[test]
    fn udp_loss_the_receiver_counted_is_its_socket_buffers() {
        // 3000 of 100000 lost, 2900 of them counted by the receiver as RcvbufErrors: no TCP
        // result is needed to say where they went, and the path is not accused.
        let i = nics(vec![udp_counted(3000, Some(2900))]);
        let l = losses(&i);
        let [f] = l.findings.as_slice() else {
            panic!("{:?}", l.findings)
        };
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message
                .contains("the receiving host counted 2900 UDP datagrams dropped")
                && f.message.contains("the path lost nothing"),
            "{}",
            f.message
        );
        assert_eq!(
            f.evidence
                .get("receiver UDP RcvbufErrors (host-wide)")
                .map(String::as_str),
            Some("2900")
        );
        assert!(!l.lossy);
        assert!(!path_lossy(&Ctx::new(&i), &i.tests[0]));
        // The receiver counted too few to explain the loss (under half), or none, or did not
        // read them: the loss stays the path's.
        for rcvbuf in [Some(1000), Some(0), None] {
            let i = nics(vec![udp_counted(3000, rcvbuf)]);
            let l = losses(&i);
            assert!(
                l.lossy && l.findings[0].message.contains("somewhere on the path"),
                "{rcvbuf:?}: {:?}",
                l.findings
            );
        }
    }

    #[test]
    fn loss_nothing_counted_is_put_on_the_path() {
        let l = losses(&nics(vec![lossy(Direction::Send, 3.0, 20_000)]));
        let f = &l.findings[0];
        assert!(
            f.message
                .contains("congestion or a queue too small somewhere on the path"),
            "{}",
            f.message
        );
        assert!(l.lossy);
    }
}
