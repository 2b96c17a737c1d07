//! Loss and reordering the qdiscs counted: `net.qdisc_drops` (each qdisc of either end that
//! dropped packets, with its counters and the direction it drops) and `net.reordering` (a netem
//! qdisc that reordered packets, which TCP takes for loss); and in words, for the loss rule and
//! the verdict, which qdiscs dropped or reordered a direction's packets.

use std::fmt::Write as _;

use linerate_facts::{Finding, FindingId, PortKind, QdiscDelta, QdiscSide, Severity};
use linerate_proto::Direction;
use linerate_units::fmt_round;

use super::context::{direction_reached, path_lossy, Ctx};
use super::input::dir_name;
use super::registry::{rule, FromFacts};
use crate::thresholds::{QDISC_DROPS_MIN, RETRANSMIT_RATE};

/// The test directions whose packets a qdisc at `end` on `side` handles: what an end sends
/// leaves through its egress, what it receives comes through its ingress. On loopback (a
/// self-check, or a far end on this host) one interface carries both.
pub(super) fn qdisc_dirs(c: &Ctx<'_>, end: &str, side: QdiscSide) -> &'static [Direction] {
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
pub(super) fn qdiscs_dropping<'a>(
    c: &Ctx<'a>,
    d: Direction,
) -> Vec<(&'static str, &'a QdiscDelta)> {
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
pub(super) fn qdisc_drop_words(c: &Ctx<'_>, d: Direction) -> Option<String> {
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
impl FromFacts for rule::QdiscDrops {
    type Output = Vec<Finding>;

    fn run(self, c: &Ctx<'_>) -> Vec<Finding> {
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
}

/// The netem qdiscs of either end that sent packets of direction `d` out of their order: netem
/// counts each packet it sends ahead of its turn (`reorder`) as a requeue.
pub(super) fn qdiscs_reordering<'a>(
    c: &Ctx<'a>,
    d: Direction,
) -> Vec<(&'static str, &'a QdiscDelta)> {
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
pub(super) fn reorder_words(c: &Ctx<'_>, d: Direction) -> Option<String> {
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
impl FromFacts for rule::Reordering {
    type Output = Vec<Finding>;

    fn run(self, c: &Ctx<'_>) -> Vec<Finding> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic, tcp, veth};
    use crate::diagnose::DiagnoseInput;
    use linerate_facts::{QdiscsSeen, Severity};

    fn qdisc(kind: &str, side: QdiscSide, drops: u64) -> QdiscDelta {
        QdiscDelta {
            interface: "eth0".into(),
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
            tests: vec!["TCP send, 1 stream".into()],
        }
    }

    /// Two 10 Gb/s NICs, one send test at `gbps`, this end's qdiscs `local`.
    fn path(gbps: f64, retransmits: u64, local: Vec<QdiscDelta>) -> DiagnoseInput {
        let mut i = input(
            nic("eth0", 10.0),
            Some(nic("eth0", 10.0)),
            vec![crate::diagnose::Measured {
                retransmits: Some(retransmits),
                ..tcp(Direction::Send, 1, gbps)
            }],
        );
        i.qdiscs = QdiscsSeen {
            local: Some(local),
            remote: Some(Vec::new()),
        };
        i
    }

    #[test]
    fn a_qdisc_carries_the_directions_of_its_end_and_side() {
        let i = path(3.0, 0, Vec::new());
        let c = Ctx::new(&i);
        assert_eq!(
            qdisc_dirs(&c, "local", QdiscSide::Egress),
            [Direction::Send]
        );
        assert_eq!(
            qdisc_dirs(&c, "remote", QdiscSide::Ingress),
            [Direction::Send]
        );
        assert_eq!(
            qdisc_dirs(&c, "remote", QdiscSide::Egress),
            [Direction::Receive]
        );
        assert_eq!(qdisc_dirs(&c, "local", QdiscSide::Unknown).len(), 2);
        let mut lo = veth("lo");
        lo.port_kind = Some(PortKind::Loopback);
        let alone = input(lo, None, Vec::new());
        assert_eq!(
            qdisc_dirs(&Ctx::new(&alone), "local", QdiscSide::Egress).len(),
            2
        );
    }

    #[test]
    fn a_qdisc_that_drops_enough_below_the_ceiling_is_a_warning() {
        let i = path(3.0, 0, vec![qdisc("tbf", QdiscSide::Egress, 200)]);
        let c = Ctx::new(&i);
        let [f] = rule::QdiscDrops.run(&c).try_into().expect("one finding");
        assert_eq!(
            (f.severity, f.subject.as_str()),
            (Severity::Warning, "local:eth0")
        );
        assert!(
            f.message.starts_with("the tbf qdisc 8001 on the local eth0 dropped 200 packets it sent (the send direction)"),
            "{}",
            f.message
        );
        // Nothing retransmitted: the sender's own qdisc refused the packets.
        assert!(
            f.message.contains("TCP backs off from every drop"),
            "{}",
            f.message
        );
        assert!(f.fix.contains("Raise its rate"), "{}", f.fix);
        assert_eq!(
            qdisc_drop_words(&c, Direction::Send).as_deref(),
            Some("the tbf qdisc 8001 on the local eth0 dropped 200 packets it sent (the send direction)")
        );
        assert_eq!(qdisc_drop_words(&c, Direction::Receive), None);
    }

    #[test]
    fn drops_at_the_ceiling_or_too_few_are_a_note() {
        let i = path(9.0, 0, vec![qdisc("fq_codel", QdiscSide::Egress, 200)]);
        let [f] = rule::QdiscDrops
            .run(&Ctx::new(&i))
            .try_into()
            .expect("one finding");
        assert_eq!(f.severity, Severity::Info);
        assert!(f.message.ends_with("doing its work"), "{}", f.message);
        let i = path(3.0, 0, vec![qdisc("tbf", QdiscSide::Egress, 10)]);
        let [f] = rule::QdiscDrops
            .run(&Ctx::new(&i))
            .try_into()
            .expect("one finding");
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.message.ends_with("too few to cost a stream its rate"),
            "{}",
            f.message
        );
        assert!(qdiscs_dropping(&Ctx::new(&i), Direction::Send).is_empty());
        let i = path(3.0, 0, vec![qdisc("tbf", QdiscSide::Egress, 0)]);
        assert!(rule::QdiscDrops.run(&Ctx::new(&i)).is_empty());
    }

    #[test]
    fn reordering_that_cost_retransmits_below_the_ceiling_is_a_warning() {
        let reordering = QdiscDelta {
            kind: "netem".into(),
            reorders: true,
            requeues: 155,
            ..qdisc("netem", QdiscSide::Egress, 0)
        };
        let i = path(3.0, 300, vec![reordering.clone()]);
        let c = Ctx::new(&i);
        let [f] = rule::Reordering.run(&c).try_into().expect("one finding");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.contains("sent 155 packets out of their order"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("retransmitted 300 segments"),
            "{}",
            f.message
        );
        assert!(reorder_words(&c, Direction::Send).is_some());
        assert!(reorder_words(&c, Direction::Receive).is_none());
        let absorbed = path(3.0, 0, vec![reordering.clone()]);
        let [f] = rule::Reordering
            .run(&Ctx::new(&absorbed))
            .try_into()
            .expect("one finding");
        assert_eq!(f.severity, Severity::Info);
        assert!(f.message.ends_with("TCP absorbed it"), "{}", f.message);
        // Only netem reorders.
        let tbf = QdiscDelta {
            kind: "tbf".into(),
            ..reordering
        };
        assert!(rule::Reordering
            .run(&Ctx::new(&path(3.0, 300, vec![tbf])))
            .is_empty());
    }
}
