//! The path and its two ends: both ends' inventory findings, `mtu.mismatch`, `net.shaper`
//! (every qdisc with a rate, and whether it limits what was measured) and `path.asymmetric`
//! (one direction far slower than the other with nothing else to say why).

use linerate_facts::{EndFacts, Finding, FindingId, Severity};
use linerate_proto::Direction;
use linerate_units::{bps_to_gbps, fmt_num, fmt_round};

use super::context::Ctx;
use super::input::{dir_name, EndView};
use super::loss::lost_on_the_path;
use super::registry::{rule, FromFacts};
use super::window::window_candidate;
use crate::thresholds::{ASYMMETRIC_FRACTION, SHAPER_REACHED_FRACTION};

/// Prefix a finding's subject with the end it concerns.
fn at_end(mut f: Finding, end: &str) -> Finding {
    f.subject = format!("{end}:{}", f.subject);
    f
}

/// The inventory findings of both ends, their subjects prefixed with the end.
impl FromFacts for rule::Inventory {
    type Output = Vec<Finding>;

    fn run(self, c: &Ctx<'_>) -> Vec<Finding> {
        c.ends
            .iter()
            .flat_map(|(end, f)| f.findings.iter().cloned().map(move |x| at_end(x, end)))
            .collect()
    }
}

/// `mtu.mismatch`: the two ends use different MTUs.
impl FromFacts for rule::MtuMismatch {
    type Output = Option<Finding>;

    fn run(self, c: &Ctx<'_>) -> Option<Finding> {
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
}

/// `net.shaper`: every qdisc with a rate on either end, and whether it limits what was measured.
impl FromFacts for rule::Shapers {
    type Output = Vec<Finding>;

    fn run(self, c: &Ctx<'_>) -> Vec<Finding> {
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
}

/// `path.asymmetric`: one direction carries far less than the other, with no shaper to say why.
impl FromFacts for rule::PathAsymmetric {
    type Output = Option<Finding>;

    fn run(self, c: &Ctx<'_>) -> Option<Finding> {
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
        if hi.gbps <= 0.0 || lo.gbps >= ASYMMETRIC_FRACTION * hi.gbps || shaped || lost || windowed
        {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic, tcp};
    use crate::diagnose::Measured;
    use linerate_facts::{QdiscDelta, QdiscSide, QdiscsSeen, ShaperFact};

    fn tbf(mut e: EndFacts, rate_bps: u64) -> EndFacts {
        e.shapers.push(ShaperFact {
            kind: "tbf".into(),
            handle: "8001:".into(),
            rate_bps,
        });
        e
    }

    #[test]
    fn inventory_findings_carry_their_end() {
        let mut local = nic("eth0", 10.0);
        local.findings = vec![Finding::new(
            FindingId::CpuPowersave,
            Severity::Warning,
            "host",
        )];
        let mut remote = nic("eth1", 10.0);
        remote.findings = vec![Finding::new(FindingId::MtuSmall, Severity::Info, "eth1")];
        let i = input(local, Some(remote), Vec::new());
        let subjects: Vec<String> = rule::Inventory
            .run(&Ctx::new(&i))
            .into_iter()
            .map(|f| f.subject)
            .collect();
        assert_eq!(subjects, ["local:host", "remote:eth1"]);
    }

    #[test]
    fn different_mtus_are_a_mismatch() {
        let mut jumbo = nic("eth1", 10.0);
        jumbo.mtu = Some(9000);
        let i = input(nic("eth0", 10.0), Some(jumbo), Vec::new());
        let f = rule::MtuMismatch.run(&Ctx::new(&i)).expect("a mismatch");
        assert!(
            f.message.contains("(1500 here, 9000 there)"),
            "{}",
            f.message
        );
        assert!(f.fix.contains("mtu 9000"), "{}", f.fix);
        let same = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), Vec::new());
        assert!(rule::MtuMismatch.run(&Ctx::new(&same)).is_none());
        let alone = input(nic("eth0", 10.0), None, Vec::new());
        assert!(rule::MtuMismatch.run(&Ctx::new(&alone)).is_none());
    }

    #[test]
    fn a_shaper_is_named_and_whether_it_limits_its_direction() {
        let shaped = |gbps| {
            input(
                tbf(nic("eth0", 10.0), 1_000_000_000),
                Some(nic("eth1", 10.0)),
                vec![tcp(Direction::Send, 1, gbps)],
            )
        };
        let [f] = rule::Shapers
            .run(&Ctx::new(&shaped(0.95)))
            .try_into()
            .expect("one shaper");
        assert_eq!(f.subject, "local:eth0");
        // A noun first: the verdict quotes what comes before the first colon.
        assert!(
            f.message
                .starts_with("a tbf shaper at 1 Gbit/s on the wire on the local eth0:"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("it is what limits the send direction (measured 0.95 Gb/s"),
            "{}",
            f.message
        );
        let [f] = rule::Shapers
            .run(&Ctx::new(&shaped(0.5)))
            .try_into()
            .expect("one shaper");
        assert!(!f.message.contains("what limits"), "{}", f.message);
    }

    #[test]
    fn a_slower_direction_with_nothing_to_say_why_is_asymmetric() {
        let tests = vec![
            tcp(Direction::Send, 1, 9.0),
            tcp(Direction::Receive, 1, 4.0),
        ];
        let i = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), tests.clone());
        let f = rule::PathAsymmetric.run(&Ctx::new(&i)).expect("asymmetric");
        assert!(
            f.message.starts_with("the send direction carries 9 Gb/s but the receive direction only 4 Gb/s: this host receives slower"),
            "{}",
            f.message
        );
        // A shaper on the slower direction's egress (the far end's, for a receive) says why.
        let shaped = input(
            nic("eth0", 10.0),
            Some(tbf(nic("eth1", 10.0), 4_500_000_000)),
            tests.clone(),
        );
        assert!(rule::PathAsymmetric.run(&Ctx::new(&shaped)).is_none());
        // So does a qdisc that dropped its packets.
        let mut dropped = i.clone();
        dropped.qdiscs = QdiscsSeen {
            local: Some(Vec::new()),
            remote: Some(vec![QdiscDelta {
                interface: "eth1".into(),
                kind: "netem".into(),
                handle: "8001:".into(),
                parent: "root".into(),
                side: QdiscSide::Egress,
                packets: 30_000,
                drops: 600,
                overlimits: 0,
                requeues: 0,
                reset: false,
                reorders: false,
                tests: Vec::new(),
            }]),
        };
        assert!(rule::PathAsymmetric.run(&Ctx::new(&dropped)).is_none());
        // Within a quarter of each other: no asymmetry.
        let close = input(
            nic("eth0", 10.0),
            Some(nic("eth1", 10.0)),
            vec![
                tcp(Direction::Send, 1, 9.0),
                tcp(Direction::Receive, 1, 7.0),
            ],
        );
        assert!(rule::PathAsymmetric.run(&Ctx::new(&close)).is_none());
        let one_way: Vec<Measured> = tests.into_iter().take(1).collect();
        let one_way = input(nic("eth0", 10.0), Some(nic("eth1", 10.0)), one_way);
        assert!(rule::PathAsymmetric.run(&Ctx::new(&one_way)).is_none());
    }
}
