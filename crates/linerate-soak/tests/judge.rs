//! The judge on constructed sample sequences: every rule firing and not firing at its
//! boundary, the six scripted scenarios of issue #13, the five cases of issue #23, and short
//! soaks not called clean. The scenarios themselves are in `scenarios/mod.rs`, shared with the
//! renderers' tests.

mod scenarios;

use linerate_facts::CounterSource;
use linerate_proto::soak::{End, SoakPortKind};

use linerate_soak::{
    judge, symbol_budget, BitsBasis, JudgeParams, RuleId, SoakParams, SoakReport, Threshold,
    Tracker, Unit, Verdict,
};
use scenarios::{
    eth, ib, port, qdr, ramp, soak, soak_with, verdict, Reading, Run, EDR_MINUTE, TEN_MIN,
};

use CounterSource::{Carrier, Ethtool, IbCounters, NetdevStatistics};

fn fired(r: &SoakReport, end: End, device: &str, rule: RuleId) -> bool {
    r.port(end, device, "1")
        .expect("port")
        .findings
        .iter()
        .any(|f| f.rule == rule)
}

/// A QDR port on the local end whose only counter is `name`, rising by `total` over the soak.
fn one_counter(run: Run, name: &'static str, total: u64) -> SoakReport {
    soak(
        run,
        &[port(End::Local, "mlx4_0", qdr(), move |s| {
            vec![(IbCounters, name, ramp(0, total, run.n, s))]
        })],
    )
}

#[test]
fn the_six_scripted_scenarios_each_on_the_right_end() {
    let r = scenarios::six_scripted();
    let want = [
        (End::Local, "mlx4_0", Verdict::Bad, "symbol_error_budget"),
        (End::Remote, "mlx4_1", Verdict::Bad, "link_downed"),
        (End::Local, "mlx4_2", Verdict::Bad, "local_link_integrity"),
        (End::Remote, "mlx4_3", Verdict::Clean, "clean"),
        (End::Local, "mlx4_4", Verdict::Congested, "xmit_congestion"),
        (End::Remote, "mlx4_5", Verdict::Clean, "clean"),
    ];
    for (end, dev, v, rule) in want {
        assert_eq!(verdict(&r, end, dev), (v, rule), "{end:?} {dev}");
    }
    // The saturated counter says "at least" and from when; the reset is reported.
    let lli = &r.port(End::Local, "mlx4_2", "1").unwrap().counters[0];
    assert!(lli.at_least && lli.saturated_now);
    assert_eq!(lli.saturations[0].since.seq, 30);
    assert!(fired(&r, End::Local, "mlx4_2", RuleId::Saturated));
    assert!(fired(&r, End::Remote, "mlx4_3", RuleId::CounterReset));
    let reset = &r.port(End::Remote, "mlx4_3", "1").unwrap().counters[0];
    assert_eq!((reset.resets_total, reset.resets[0].from), (1, 500));
    // The symbol-error finding shows the numbers and the budget it was held to.
    let f = &r.port(End::Local, "mlx4_0", "1").unwrap().findings[0];
    assert_eq!(f.threshold, Some(144.0));
    assert_eq!(f.value, Some(1800.0));
    assert!(
        f.text.contains("144/h") && f.text.contains("40 Gb/s"),
        "{}",
        f.text
    );
    assert_eq!((r.verdict, r.ends.len()), (Verdict::Bad, 2));
    assert_eq!(r.ends[1].verdict, Verdict::Bad);
}

#[test]
fn budgets_at_each_speed() {
    let jp = JudgeParams::default();
    let per_hour = |k| symbol_budget(&k, &jp).unwrap().per_hour;
    assert!((per_hour(ib("QDR", 40.0)) - 144.0).abs() < 1e-9);
    assert!((per_hour(ib("FDR", 56.25)) - 202.5).abs() < 1e-9);
    assert!((per_hour(ib("EDR", 103.125)) - 371.25).abs() < 1e-9);
    assert!(symbol_budget(&ib("HDR", 212.5), &jp).unwrap().pam4);
    assert!(symbol_budget(&eth(100_000), &jp).is_none());
    // Without a signalling rate, NVSentinel's fixed 120/h.
    let unknown = SoakPortKind::Infiniband {
        speed: None,
        signalling_gbps: None,
    };
    assert_eq!(symbol_budget(&unknown, &jp).unwrap().per_hour, 120.0);
}

#[test]
fn symbol_error_budget_boundary() {
    // QDR, ten minutes: the budget is 144/h × 1/6 h = 24 errors.
    let at = one_counter(TEN_MIN, "symbol_error", 24);
    assert_eq!(verdict(&at, End::Local, "mlx4_0").0, Verdict::Clean);
    let over = one_counter(TEN_MIN, "symbol_error", 25);
    assert_eq!(
        verdict(&over, End::Local, "mlx4_0"),
        (Verdict::Bad, "symbol_error_budget")
    );
    // FDR: 202.5/h → 33.75 in ten minutes.
    let fdr = |total| {
        soak(
            TEN_MIN,
            &[port(End::Local, "mlx4_0", ib("FDR", 56.25), move |s| {
                vec![(IbCounters, "symbol_error", ramp(0, total, 60, s))]
            })],
        )
    };
    assert_eq!(verdict(&fdr(33), End::Local, "mlx4_0").0, Verdict::Clean);
    assert_eq!(verdict(&fdr(34), End::Local, "mlx4_0").0, Verdict::Bad);
}

#[test]
fn a_short_soak_needs_more_than_three_errors_and_is_not_called_clean() {
    // Ten seconds at 10 Gb/s: 1e11 bits, far below 3e12.
    let short = Run {
        n: 10,
        dt: 1.0,
        bytes: 1_250_000_000,
        retrans: 0,
        out_segs: None,
    };
    let three = one_counter(short, "symbol_error", 3);
    assert_eq!(
        verdict(&three, End::Local, "mlx4_0"),
        (Verdict::Insufficient, "insufficient_traffic")
    );
    let four = one_counter(short, "symbol_error", 4);
    assert_eq!(verdict(&four, End::Local, "mlx4_0").0, Verdict::Bad);
    // No errors at all is still not clean.
    let none = one_counter(short, "symbol_error", 0);
    assert_eq!(
        verdict(&none, End::Local, "mlx4_0").0,
        Verdict::Insufficient
    );
    assert_eq!(none.verdict, Verdict::Insufficient);
    // And just enough bits (3e12 received, at 30 Gb/s: a QDR port carries 32) makes the same
    // quiet link clean.
    let enough = Run {
        n: 100,
        dt: 1.0,
        bytes: 3_750_000_000,
        retrans: 0,
        out_segs: None,
    };
    assert_eq!(
        verdict(
            &one_counter(enough, "symbol_error", 0),
            End::Local,
            "mlx4_0"
        )
        .0,
        Verdict::Clean
    );
}

#[test]
fn passive_soak_counts_bits_from_the_port() {
    // No engine traffic: port_rcv_data (octets ÷ 4) moved 1.6e11 units = 5.12e12 bits.
    let passive = Run {
        bytes: 0,
        ..TEN_MIN
    };
    let r = soak(
        passive,
        &[port(End::Local, "mlx4_0", qdr(), |s| {
            vec![
                (IbCounters, "symbol_error", 0),
                (
                    IbCounters,
                    "port_rcv_data",
                    5_000_000_000 + s * 2_666_666_667,
                ),
            ]
        })],
    );
    let p = r.port(End::Local, "mlx4_0", "1").unwrap();
    assert_eq!(p.verdict, Verdict::Clean);
    assert_eq!(p.bits_basis, linerate_soak::BitsBasis::PortRcvData);
    assert!(p.bits_received > 5e12);
}

#[test]
fn any_increase_rules() {
    for (name, rule) in [
        ("link_downed", "link_downed"),
        ("local_link_integrity_errors", "local_link_integrity"),
        (
            "excessive_buffer_overrun_errors",
            "excessive_buffer_overrun",
        ),
    ] {
        let still = one_counter(TEN_MIN, name, 0);
        assert_eq!(
            verdict(&still, End::Local, "mlx4_0").0,
            Verdict::Clean,
            "{name}"
        );
        let once = one_counter(TEN_MIN, name, 1);
        assert_eq!(
            verdict(&once, End::Local, "mlx4_0"),
            (Verdict::Bad, rule),
            "{name}"
        );
    }
}

#[test]
fn rate_rules_boundaries() {
    // port_rcv_errors: 10/s over 600 s is 6000: not bad, but far over the receive-error budget
    // (issue #23: it was called clean).
    assert_eq!(
        verdict(
            &one_counter(TEN_MIN, "port_rcv_errors", 6000),
            End::Local,
            "mlx4_0"
        ),
        (Verdict::Marginal, "rcv_errors_budget")
    );
    assert_eq!(
        verdict(
            &one_counter(TEN_MIN, "port_rcv_errors", 6001),
            End::Local,
            "mlx4_0"
        ),
        (Verdict::Bad, "port_rcv_errors_rate")
    );
    // link_error_recovery: 5/min over 10 min is 50.
    assert_eq!(
        verdict(
            &one_counter(TEN_MIN, "link_error_recovery", 50),
            End::Local,
            "mlx4_0"
        )
        .0,
        Verdict::Clean
    );
    assert_eq!(
        verdict(
            &one_counter(TEN_MIN, "link_error_recovery", 51),
            End::Local,
            "mlx4_0"
        ),
        (Verdict::Bad, "link_error_recovery_rate")
    );
}

#[test]
fn symbol_errors_with_recoveries_are_marginal() {
    let both = |recoveries: u64| {
        soak(
            TEN_MIN,
            &[port(End::Local, "mlx4_0", qdr(), move |s| {
                vec![
                    (IbCounters, "symbol_error", ramp(0, 10, 60, s)),
                    (
                        IbCounters,
                        "link_error_recovery",
                        ramp(0, recoveries, 60, s),
                    ),
                ]
            })],
        )
    };
    assert_eq!(verdict(&both(0), End::Local, "mlx4_0").0, Verdict::Clean);
    assert_eq!(
        verdict(&both(1), End::Local, "mlx4_0"),
        (Verdict::Marginal, "symbol_with_recovery")
    );
}

#[test]
fn pam4_symbol_errors_alone_are_no_alarm() {
    let hdr = |recoveries: u64| {
        soak(
            TEN_MIN,
            &[port(End::Local, "mlx5_0", ib("HDR", 212.5), move |s| {
                vec![
                    (IbCounters, "symbol_error", ramp(0, 50_000, 60, s)),
                    (
                        IbCounters,
                        "link_error_recovery",
                        ramp(0, recoveries, 60, s),
                    ),
                ]
            })],
        )
    };
    let alone = hdr(0);
    assert_eq!(verdict(&alone, End::Local, "mlx5_0").0, Verdict::Clean);
    assert!(fired(
        &alone,
        End::Local,
        "mlx5_0",
        RuleId::Pam4SymbolErrors
    ));
    // Not alone: with recoveries it is marginal there too.
    assert_eq!(verdict(&hdr(1), End::Local, "mlx5_0").0, Verdict::Marginal);
}

#[test]
fn congestion_only_when_no_error_moved() {
    let run = |wait: u64, discards: u64, remote: u64, errors: u64| {
        soak(
            TEN_MIN,
            &[port(End::Local, "mlx4_0", qdr(), move |s| {
                vec![
                    (IbCounters, "port_xmit_wait", ramp(0, wait, 60, s)),
                    (IbCounters, "port_xmit_discards", ramp(0, discards, 60, s)),
                    (
                        IbCounters,
                        "port_rcv_remote_physical_errors",
                        ramp(0, remote, 60, s),
                    ),
                    (IbCounters, "port_rcv_errors", ramp(0, errors, 60, s)),
                ]
            })],
        )
    };
    let v = |r: &SoakReport| verdict(r, End::Local, "mlx4_0");
    assert_eq!(v(&run(1000, 0, 0, 0)).0, Verdict::Clean);
    assert_eq!(
        v(&run(1001, 0, 0, 0)),
        (Verdict::Congested, "xmit_congestion")
    );
    assert_eq!(v(&run(0, 1, 0, 0)), (Verdict::Congested, "xmit_congestion"));
    assert_eq!(
        v(&run(0, 0, 1, 0)),
        (Verdict::Congested, "remote_physical_errors")
    );
    // With a local error moving it is not "only" congestion: no congestion finding.
    let mixed = run(0, 5, 5, 1);
    assert!(!fired(&mixed, End::Local, "mlx4_0", RuleId::XmitCongestion));
    assert!(!fired(
        &mixed,
        End::Local,
        "mlx4_0",
        RuleId::RemotePhysicalErrors
    ));
}

#[test]
fn retransmits_are_bad_only_with_error_counters_moving() {
    let run = |errors: u64| {
        soak(
            Run {
                retrans: 3,
                ..TEN_MIN
            },
            &[port(End::Local, "mlx4_0", qdr(), move |s| {
                vec![(IbCounters, "port_rcv_errors", ramp(0, errors, 60, s))]
            })],
        )
    };
    assert_eq!(verdict(&run(0), End::Local, "mlx4_0").0, Verdict::Clean);
    assert_eq!(
        verdict(&run(2), End::Local, "mlx4_0"),
        (Verdict::Bad, "retrans_with_errors")
    );
    assert_eq!(run(0).ends[0].tcp_retrans, Some(180));
}

#[test]
fn rdma_transport_losses_name_the_direction_and_blame_the_cable_only_with_errors() {
    use CounterSource::IbHwCounters;
    // A RoCE port (rxe over a 40 Gb/s NIC): the transport's own counters, and a port error.
    let run = |sent: &'static str, n: u64, errors: u64| {
        soak(
            TEN_MIN,
            &[port(End::Local, "rxe0", qdr(), move |s| {
                vec![
                    (IbHwCounters, sent, ramp(0, n, 60, s)),
                    (IbHwCounters, "rdma_sends", ramp(0, 1_000_000, 60, s)),
                    (IbCounters, "port_rcv_errors", ramp(0, errors, 60, s)),
                ]
            })],
        )
    };
    let v = |r: &SoakReport| verdict(r, End::Local, "rxe0");
    // Nothing moved: clean, and the counter was read and judged (a check that did not fire).
    let quiet = run("completer_retry_err", 0, 0);
    assert_eq!(v(&quiet).0, Verdict::Clean);
    let c = check(&quiet, End::Local, "rxe0", RuleId::RdmaRetransmits);
    assert!(c.is_none_or(|c| !c.fired), "{c:?}");
    // The requester retried: this end's send direction, lost beyond the cable.
    let sent = run("completer_retry_err", 40, 0);
    assert_eq!(v(&sent), (Verdict::Congested, "rdma_retransmits"));
    let f = finding(&sent, End::Local, "rxe0", RuleId::RdmaRetransmits);
    assert!(
        f.text.contains("40 completer_retry_err")
            && f.text.contains("send direction")
            && f.text.contains("not on it"),
        "{}",
        f.text
    );
    // The responder saw a gap: this end's receive direction.
    let got = run("out_of_seq_request", 7, 0);
    let f = finding(&got, End::Local, "rxe0", RuleId::RdmaRetransmits);
    assert!(
        f.text.contains("7 out_of_seq_request") && f.text.contains("receive direction"),
        "{}",
        f.text
    );
    // With the port's own error counter moving the same losses are this link's.
    let bad = run("local_ack_timeout_err", 40, 2);
    assert!(fired(&bad, End::Local, "rxe0", RuleId::RetransWithErrors));
    assert!(!fired(&bad, End::Local, "rxe0", RuleId::RdmaRetransmits));
    let f = finding(&bad, End::Local, "rxe0", RuleId::RetransWithErrors);
    assert!(
        f.text.contains("local_ack_timeout_err") && f.text.contains("port_rcv_errors"),
        "{}",
        f.text
    );
    // rdma_sends moved by a million in every run: a counter of traffic, never a finding.
    assert!(!fired(&quiet, End::Local, "rxe0", RuleId::RdmaRetransmits));
}

#[test]
fn roce_congestion_control_is_said_beside_the_transport_losses() {
    use CounterSource::IbHwCounters;
    // A RoCE port of a device that counts congestion notifications (mlx5): `retries` of what
    // it sent, `handled` notifications it slowed down for, `sent` it sent for marked packets.
    let run = |retries: u64, handled: u64, sent: u64| {
        soak(
            TEN_MIN,
            &[port(End::Local, "mlx5_0", eth(100_000), move |s| {
                vec![
                    (IbHwCounters, "packet_seq_err", ramp(0, retries, 60, s)),
                    (IbHwCounters, "rp_cnp_handled", ramp(0, handled, 60, s)),
                    (IbHwCounters, "np_cnp_sent", ramp(0, sent, 60, s)),
                ]
            })],
        )
    };
    let v = |r: &SoakReport| verdict(r, End::Local, "mlx5_0");
    let notes = |r: &SoakReport| -> Vec<(String, String)> {
        r.port(End::Local, "mlx5_0", "1")
            .unwrap()
            .findings
            .iter()
            .filter(|f| f.rule == RuleId::RdmaCongestionControl)
            .map(|f| (f.counter.clone().unwrap(), f.text.clone()))
            .collect()
    };
    // Losses with no notification handled: ECN did not act, and the loss says so.
    let lossy = run(40, 0, 0);
    assert_eq!(v(&lossy), (Verdict::Congested, "rdma_retransmits"));
    let f = finding(&lossy, End::Local, "mlx5_0", RuleId::RdmaRetransmits);
    assert!(
        f.text
            .contains("congestion control did not act (rp_cnp_handled did not move")
            && f.text.contains("roce.lossy"),
        "{}",
        f.text
    );
    assert!(notes(&lossy).is_empty());
    // Notifications handled and sent, nothing lost: congestion control working, a note each;
    // the port is clean.
    let working = run(0, 300, 120);
    assert_eq!(v(&working), (Verdict::Clean, "clean"));
    let n = notes(&working);
    assert_eq!(
        n.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>(),
        ["rp_cnp_handled", "np_cnp_sent"]
    );
    assert!(
        n[0].1.starts_with("rp_cnp_handled rose by 300")
            && n[0].1.contains("congestion control working"),
        "{}",
        n[0].1
    );
    // Both: the loss is not put on a congestion control that did not act, and the note says
    // it was overrun.
    let overrun = run(40, 300, 0);
    let f = finding(&overrun, End::Local, "mlx5_0", RuleId::RdmaRetransmits);
    assert!(!f.text.contains("did not act"), "{}", f.text);
    let n = notes(&overrun);
    assert!(n[0].1.contains("still lost packets"), "{n:?}");
    // rxe counts no notifications: nothing said of congestion control.
    let rxe = soak(
        TEN_MIN,
        &[port(End::Local, "rxe0", eth(40_000), |s| {
            vec![(IbHwCounters, "completer_retry_err", ramp(0, 40, 60, s))]
        })],
    );
    let f = finding(&rxe, End::Local, "rxe0", RuleId::RdmaRetransmits);
    assert!(!f.text.contains("congestion control"), "{}", f.text);
}

/// The counters of a lab run (Linux 6.1 guests, `crates/linerate-cli/tests/lab_soak.rs`):
/// `soak -P 1` from a to b over rxe, 15 s, `netem loss 2%` on a's egress. What the kernels
/// counted over the soak, spread over its intervals: a (local) sent 3873 TCP segments and
/// retransmitted 55, its rxe counted 6 `completer_retry_err` and 7 `rcvd_seq_err` for its RDMA
/// writes; b (remote) sent 21228 and retransmitted 6 (the clean direction), its rxe counted 6
/// `out_of_seq_request`. `loss` scales the retransmits and transport counters (0: the same
/// link without netem).
fn lab_capture(loss: u64) -> SoakReport {
    use CounterSource::IbHwCounters;
    let run = Run {
        n: 15,
        dt: 1.0,
        bytes: 2_000_000,
        retrans: 0,
        out_segs: None,
    };
    let rxe = || SoakPortKind::Ethernet {
        speed_mbps: Some(40_000),
        roce: true,
    };
    let jp = JudgeParams {
        min_bits: 1e6,
        ..JudgeParams::default()
    };
    soak_with(
        run,
        &[
            port(End::Local, "rxe0", rxe(), move |s| {
                vec![
                    (
                        IbHwCounters,
                        "completer_retry_err",
                        ramp(0, 6 * loss, 15, s),
                    ),
                    (IbHwCounters, "rcvd_seq_err", ramp(0, 7 * loss, 15, s)),
                    (IbHwCounters, "sent_pkts", ramp(0, 992, 15, s)),
                    (IbHwCounters, "out_of_seq_request", 0),
                    (IbHwCounters, "duplicate_request", 0),
                ]
            }),
            port(End::Remote, "rxe0", rxe(), move |s| {
                vec![
                    (IbHwCounters, "out_of_seq_request", ramp(0, 6 * loss, 15, s)),
                    (IbHwCounters, "rcvd_pkts", ramp(0, 846, 15, s)),
                    (IbHwCounters, "completer_retry_err", 0),
                    (IbHwCounters, "rcvd_seq_err", 0),
                ]
            }),
        ],
        &jp,
        move |sample, seq| {
            let (retrans, out) = match sample.end {
                End::Local => (55 * loss, 3873),
                End::Remote => (6, 21228),
            };
            sample.tcp_retrans_segs = Some(35 + ramp(0, retrans, 15, seq));
            sample.tcp_out_segs = Some(40878 + ramp(0, out, 15, seq));
        },
    )
}

#[test]
fn a_lab_capture_of_one_lossy_direction_names_that_direction_on_both_ends() {
    let r = lab_capture(1);
    // a: TCP's retransmits are 1.4 % of what it sent, its send direction; its rxe's NAKs and
    // retries name the same direction.
    let f = finding(&r, End::Local, "rxe0", RuleId::TcpRetransmits);
    assert!(
        f.text.contains("55 TCP retransmits of 3873 segments") && f.text.contains("send direction"),
        "{}",
        f.text
    );
    assert_eq!(f.unit, Unit::Fraction);
    assert!((f.value.unwrap() - 55.0 / 3873.0).abs() < 1e-12);
    let named: Vec<(&str, bool)> = r
        .port(End::Local, "rxe0", "1")
        .unwrap()
        .findings
        .iter()
        .filter(|f| f.rule == RuleId::RdmaRetransmits)
        .map(|f| {
            (
                f.counter.as_deref().unwrap(),
                f.text.contains("this end's send direction"),
            )
        })
        .collect();
    assert_eq!(
        named,
        [("completer_retry_err", true), ("rcvd_seq_err", true)]
    );
    // b: its send direction was clean (6 of 21228, 0.03 %: a check that did not fire); what
    // reached it out of sequence is its receive direction, the same a → b.
    let c = check(&r, End::Remote, "rxe0", RuleId::TcpRetransmits).expect("b's TCP check");
    assert!(!c.fired && c.value < c.limit, "{c:?}");
    let f = finding(&r, End::Remote, "rxe0", RuleId::RdmaRetransmits);
    assert_eq!(f.counter.as_deref(), Some("out_of_seq_request"));
    assert!(
        f.text.contains("this end's receive direction"),
        "{}",
        f.text
    );
    assert!(!r
        .port(End::Remote, "rxe0", "1")
        .unwrap()
        .findings
        .iter()
        .any(|f| f.text.contains("this end's send direction")));
    assert_eq!(r.ends[0].tcp_out_segs, Some(3873));
    assert_eq!(
        verdict(&r, End::Local, "rxe0"),
        (Verdict::Congested, "rdma_retransmits")
    );

    // The same link without the loss: clean at both ends, both TCP checks below the limit.
    let clean = lab_capture(0);
    for end in [End::Local, End::Remote] {
        assert_eq!(verdict(&clean, end, "rxe0"), (Verdict::Clean, "clean"));
        let c = check(&clean, end, "rxe0", RuleId::TcpRetransmits).expect("a TCP check");
        assert!(!c.fired, "{c:?}");
    }
}

#[test]
fn tcp_retransmits_are_judged_on_the_ports_that_carried_the_sends_and_need_segments_sent() {
    let run = Run {
        retrans: 20,
        out_segs: Some(10_000),
        ..TEN_MIN
    };
    // 20 in 10000 a interval (0.2 %): over 0.1 %. eth0 sent the traffic, eth1 (management)
    // sent a little: only eth0 is judged.
    let ports = |errors: u64| {
        [
            port(End::Local, "eth0", eth(100_000), move |s| {
                vec![
                    (
                        NetdevStatistics,
                        "tx_bytes",
                        ramp(0, 600_000_000_000, 60, s),
                    ),
                    (NetdevStatistics, "rx_crc_errors", ramp(0, errors, 60, s)),
                ]
            }),
            port(End::Local, "eth1", eth(1_000), |s| {
                vec![(NetdevStatistics, "tx_bytes", ramp(0, 1_000_000, 60, s))]
            }),
        ]
    };
    let r = soak(run, &ports(0));
    assert_eq!(
        verdict(&r, End::Local, "eth0"),
        (Verdict::Congested, "tcp_retransmits")
    );
    let c = check(&r, End::Local, "eth0", RuleId::TcpRetransmits).unwrap();
    assert!((c.value - 0.002).abs() < 1e-12 && c.limit == 1e-3, "{c:?}");
    assert!(check(&r, End::Local, "eth1", RuleId::TcpRetransmits).is_none());
    // The limit is settable: at 0.5 % the same share does not fire.
    let mut jp = JudgeParams::default();
    jp.set(Threshold::TcpRetransFraction, 0.005).unwrap();
    let r = soak_with(run, &ports(0), &jp, |_, _| {});
    assert!(!fired(&r, End::Local, "eth0", RuleId::TcpRetransmits));
    // With the port's own errors moving the retransmits are the cable's, named once.
    let r = soak(run, &ports(600));
    assert!(fired(&r, End::Local, "eth0", RuleId::RetransWithErrors));
    assert!(check(&r, End::Local, "eth0", RuleId::TcpRetransmits).is_none());
    // Without the segments sent (a peer of an earlier release) no share is claimed.
    let r = soak(
        Run {
            out_segs: None,
            ..run
        },
        &ports(0),
    );
    assert!(check(&r, End::Local, "eth0", RuleId::TcpRetransmits).is_none());
    assert_eq!(r.ends[0].tcp_out_segs, None);
}

#[test]
fn retransmits_tcp_found_spurious_are_not_loss() {
    let run = Run {
        retrans: 20,
        out_segs: Some(10_000),
        ..TEN_MIN
    };
    let ports = [port(End::Local, "eth0", eth(100_000), |s| {
        vec![(
            NetdevStatistics,
            "tx_bytes",
            ramp(0, 600_000_000_000, 60, s),
        )]
    })];
    // 20 retransmits in 10000 segments an interval (0.2 %), `spurious` of them D-SACKed by the
    // receiver (`name`: the segments on 5.10+, the D-SACKs before).
    let with = |name: &'static str, spurious: u64| {
        soak_with(run, &ports, &JudgeParams::default(), move |s, seq| {
            if s.end == End::Local {
                s.set_host(CounterSource::Snmp, name, 7 + seq * spurious);
            }
        })
    };
    // 15 of the 20 spurious: 0.05 % lost, under 0.1 %. The check ran on the lost share, and a
    // note says what the rest were; the port is clean.
    for name in ["TcpExtTCPDSACKRecvSegs", "TcpExtTCPDSACKRecv"] {
        let r = with(name, 15);
        let c = check(&r, End::Local, "eth0", RuleId::TcpRetransmits).unwrap();
        assert!(
            !c.fired && (c.value - 300.0 / 600_000.0).abs() < 1e-12,
            "{c:?}"
        );
        let f = finding(&r, End::Local, "eth0", RuleId::TcpSpuriousRetransmits);
        assert_eq!(f.counter.as_deref(), Some(name));
        assert_eq!(f.value, Some(900.0));
        assert!(
            f.text.contains("1200 TCP retransmits of 600000 segments")
                && f.text.contains("900 of them TCP itself found spurious")
                && f.text.contains("not loss"),
            "{}",
            f.text
        );
        assert_eq!(verdict(&r, End::Local, "eth0"), (Verdict::Clean, "clean"));
    }
    // 5 of the 20 spurious: 0.15 % lost is still loss, said without the spurious ones.
    let r = with("TcpExtTCPDSACKRecvSegs", 5);
    let f = finding(&r, End::Local, "eth0", RuleId::TcpRetransmits);
    assert!(
        f.text.contains("900 TCP retransmits of 600000 segments")
            && f.text.contains("300 more TCP found spurious"),
        "{}",
        f.text
    );
    assert!(!fired(
        &r,
        End::Local,
        "eth0",
        RuleId::TcpSpuriousRetransmits
    ));
    assert_eq!(
        verdict(&r, End::Local, "eth0"),
        (Verdict::Congested, "tcp_retransmits")
    );
    // Both counters read (5.10+): the segments are taken, not the D-SACK events.
    let r = soak_with(run, &ports, &JudgeParams::default(), |s, seq| {
        s.set_host(CounterSource::Snmp, "TcpExtTCPDSACKRecv", seq);
        s.set_host(CounterSource::Snmp, "TcpExtTCPDSACKRecvSegs", seq * 15);
    });
    let f = finding(&r, End::Local, "eth0", RuleId::TcpSpuriousRetransmits);
    assert_eq!(f.counter.as_deref(), Some("TcpExtTCPDSACKRecvSegs"));
    // More D-SACKed than retransmitted (another connection's, a counter reset): no more
    // spurious than retransmits.
    let r = with("TcpExtTCPDSACKRecvSegs", 50);
    let f = finding(&r, End::Local, "eth0", RuleId::TcpSpuriousRetransmits);
    assert_eq!(f.value, Some(1200.0));
}

fn eth_soak(counters: &'static [Reading]) -> SoakReport {
    soak(
        TEN_MIN,
        &[port(End::Remote, "eth0", eth(100_000), move |s| {
            counters
                .iter()
                .map(|(src, n, total)| (*src, *n, ramp(0, *total, 60, s)))
                .collect()
        })],
    )
}

#[test]
fn ethernet_post_fec_and_link_down() {
    let v = |r: &SoakReport| verdict(r, End::Remote, "eth0");
    assert_eq!(
        v(&eth_soak(&[(Ethtool, "rx_pcs_symbol_err_phy", 0)])).0,
        Verdict::Clean
    );
    assert_eq!(
        v(&eth_soak(&[(Ethtool, "rx_pcs_symbol_err_phy", 1)])),
        (Verdict::Bad, "post_fec_errors")
    );
    assert_eq!(
        v(&eth_soak(&[(Ethtool, "rx_fec_uncorrectable_blocks", 2)])),
        (Verdict::Bad, "post_fec_errors")
    );
    for name in ["carrier_down_count", "carrier_changes"] {
        let counters: &'static [Reading] = if name == "carrier_changes" {
            &[(Carrier, "carrier_changes", 2)]
        } else {
            &[
                (Carrier, "carrier_down_count", 1),
                (Carrier, "carrier_up_count", 1),
            ]
        };
        assert_eq!(
            v(&eth_soak(counters)),
            (Verdict::Bad, "link_down"),
            "{name}"
        );
    }
    // carrier_up_count alone is not a link down, and carrier_changes is not read where
    // carrier_down_count exists.
    assert_eq!(
        v(&eth_soak(&[
            (Carrier, "carrier_down_count", 0),
            (Carrier, "carrier_up_count", 3)
        ]))
        .0,
        Verdict::Clean
    );
    assert_eq!(
        v(&eth_soak(&[(Ethtool, "link_down_events_phy", 1)])),
        (Verdict::Bad, "link_down")
    );
}

#[test]
fn pre_fec_ber_estimate_boundary() {
    // 100 Gb/s for 600 s is 6e13 bits: BER 1e-12 is 60 corrected bits.
    let v = |r: &SoakReport| verdict(r, End::Remote, "eth0");
    assert_eq!(
        v(&eth_soak(&[(Ethtool, "rx_corrected_bits_phy", 60)])).0,
        Verdict::Clean
    );
    let over = eth_soak(&[(Ethtool, "rx_corrected_bits_phy", 61)]);
    assert_eq!(v(&over), (Verdict::Marginal, "pre_fec_ber"));
    let p = over.port(End::Remote, "eth0", "1").unwrap();
    let ber = p.ber.as_ref().unwrap();
    assert!(ber.estimate);
    assert!(
        p.findings[0].text.contains("estimate"),
        "{}",
        p.findings[0].text
    );
    // With rx_bits_phy the figure is measured, not estimated: 61 in 6.1e13 is 1e-12.
    let measured = eth_soak(&[
        (Ethtool, "rx_corrected_bits_phy", 61),
        (Ethtool, "rx_bits_phy", 61_000_000_000_000),
    ]);
    let p = measured.port(End::Remote, "eth0", "1").unwrap();
    assert_eq!(p.verdict, Verdict::Clean);
    assert!(!p.ber.as_ref().unwrap().estimate);
}

#[test]
fn pegged_from_the_start_is_not_clean() {
    let r = soak(
        TEN_MIN,
        &[port(End::Local, "mlx4_0", qdr(), |_| {
            vec![(IbCounters, "link_downed", 255)]
        })],
    );
    assert_eq!(
        verdict(&r, End::Local, "mlx4_0"),
        (Verdict::Insufficient, "pegged_from_start")
    );
}

#[test]
fn dips_name_the_counters_that_moved_with_them() {
    let r = soak_with(
        TEN_MIN,
        &[port(End::Local, "mlx4_0", qdr(), |s| {
            vec![(IbCounters, "link_error_recovery", u64::from(s >= 20))]
        })],
        &JudgeParams::default(),
        |s, seq| {
            if seq == 20 && s.end == End::Local {
                s.bytes_received /= 2;
            }
        },
    );
    assert_eq!(r.dips_total, 1);
    let d = &r.dips[0];
    assert_eq!((d.end, d.seq), (End::Local, 20));
    assert_eq!(d.moved[0].name, "link_error_recovery");
    assert!(d.gbps < 0.9 * d.median_gbps);
    assert_eq!(r.ends[0].median_gbps, 16.0);
    // Every interval of both ends is in the timeline.
    assert_eq!(r.timeline.len(), 120);
}

#[test]
fn unknown_signalling_rate_uses_nvsentinels_budget() {
    let unknown = SoakPortKind::Infiniband {
        speed: None,
        signalling_gbps: None,
    };
    // 120/h over ten minutes is 20.
    let run = |total: u64| {
        let kind = unknown.clone();
        soak(
            TEN_MIN,
            &[port(End::Local, "mlx4_0", kind, move |s| {
                vec![(IbCounters, "symbol_error", ramp(0, total, 60, s))]
            })],
        )
    };
    assert_eq!(verdict(&run(20), End::Local, "mlx4_0").0, Verdict::Clean);
    let over = run(21);
    let f = &over.port(End::Local, "mlx4_0", "1").unwrap().findings[0];
    assert_eq!(
        (f.rule, f.source),
        (RuleId::SymbolErrorBudget, linerate_soak::Source::Nvsentinel)
    );
    assert_eq!(f.threshold, Some(120.0));
}

#[test]
fn zero_length_intervals_are_no_dips() {
    let r = soak_with(
        TEN_MIN,
        &[port(End::Local, "mlx4_0", qdr(), |_| {
            vec![(IbCounters, "symbol_error", 0)]
        })],
        &JudgeParams::default(),
        |s, seq| {
            if seq == 30 {
                s.t_s = 290.0;
            }
        },
    );
    // The zero-length interval (29 → 30) is no dip; the next one, twice as long for the same
    // bytes, is, on both ends.
    assert_eq!(r.dips_total, 2);
    assert!(
        r.dips.iter().all(|d| d.seq == 31 && d.gbps == 8.0),
        "{:?}",
        r.dips
    );
    assert_eq!(r.ends[0].median_gbps, 16.0);
}

#[test]
fn a_last_interval_cut_short_is_no_dip() {
    let n = TEN_MIN.n;
    let r = soak_with(
        TEN_MIN,
        &[port(End::Local, "mlx4_0", qdr(), |_| {
            vec![(IbCounters, "symbol_error", 0)]
        })],
        &JudgeParams::default(),
        |s, seq| {
            if seq == n {
                // The soak ended 2 s into its last interval, the stream winding down in it.
                s.t_s = (n - 1) as f64 * TEN_MIN.dt + 2.0;
                s.bytes_sent /= 20;
                s.bytes_received /= 20;
            }
            if seq == 30 {
                // A whole interval at half the rate is one.
                s.bytes_received /= 2;
            }
        },
    );
    // Seq 30 on both ends (each end's rate counts both directions); not the short last one.
    assert_eq!(r.dips_total, 2, "{:?}", r.dips);
    assert!(r.dips.iter().all(|d| d.seq == 30), "{:?}", r.dips);
}

#[test]
fn no_ports_is_insufficient() {
    let r = soak(TEN_MIN, &[]);
    assert_eq!(r.verdict, Verdict::Insufficient);
    assert_eq!(r.rule, "no_counters");
    let empty = judge(
        &Tracker::new(),
        &SoakParams::default(),
        &JudgeParams::default(),
    );
    assert_eq!(
        (empty.verdict, empty.ends.len()),
        (Verdict::Insufficient, 0)
    );
}

fn finding<'a>(
    r: &'a SoakReport,
    end: End,
    device: &str,
    rule: RuleId,
) -> &'a linerate_soak::SoakFinding {
    r.port(end, device, "1")
        .expect("port")
        .findings
        .iter()
        .find(|f| f.rule == rule)
        .unwrap_or_else(|| panic!("{device}: no {rule} in {:#?}", r.port(end, device, "1")))
}

fn check<'a>(
    r: &'a SoakReport,
    end: End,
    device: &str,
    rule: RuleId,
) -> Option<&'a linerate_soak::Check> {
    r.port(end, device, "1")
        .expect("port")
        .checks
        .iter()
        .find(|c| c.rule == rule)
}

#[test]
fn receive_errors_are_never_silent() {
    let r = scenarios::receive_errors();
    let want = [
        (End::Local, "mlx4_0", Verdict::Marginal, "rcv_errors_budget"),
        (End::Local, "mlx4_1", Verdict::Bad, "port_rcv_errors_rate"),
        (End::Remote, "mlx4_2", Verdict::Clean, "clean"),
        (End::Remote, "eth0", Verdict::Marginal, "rcv_errors_budget"),
        (End::Remote, "eth1", Verdict::Congested, "rx_missed"),
    ];
    for (end, dev, v, rule) in want {
        assert_eq!(verdict(&r, end, dev), (v, rule), "{end:?} {dev}");
    }
    // 9/s: the count, the loss an hour and the share of the packets received are said.
    let f = finding(&r, End::Local, "mlx4_0", RuleId::RcvErrorsBudget);
    assert!(
        f.text
            .contains("5400 packets dropped on receive, 32400 an hour at this rate")
            && f.text.contains("(1 in 11111 of the 60000000 received)")
            && f.text.contains("above the receive-error budget of 28.8/h"),
        "{}",
        f.text
    );
    assert_eq!(
        (f.value, f.threshold, f.unit),
        (Some(32400.0), Some(28.8), Unit::PerHour)
    );
    assert_eq!(f.source, linerate_soak::Source::Ibta);
    // One finding per counter, the highest rung; every rung a check.
    let p = r.port(End::Local, "mlx4_1", "1").unwrap();
    let rungs: Vec<(RuleId, bool)> = p
        .checks
        .iter()
        .filter(|c| c.rule != RuleId::RetransWithErrors)
        .map(|c| (c.rule, c.fired))
        .collect();
    assert_eq!(
        rungs,
        [
            (RuleId::RcvErrors, true),
            (RuleId::RcvErrorsBudget, true),
            (RuleId::PortRcvErrorsRate, true)
        ]
    );
    assert_eq!(p.findings.len(), 1, "{:#?}", p.findings);
    assert!(
        p.findings[0].text.contains("6600 packets dropped"),
        "{}",
        p.findings[0].text
    );
    // Two in ten minutes: within the budget (4.8), still a note with the packets lost.
    let note = finding(&r, End::Remote, "mlx4_2", RuleId::RcvErrors);
    assert!(
        note.text
            .contains("port_rcv_errors rose by 2: 2 packets dropped"),
        "{}",
        note.text
    );
    assert_eq!(note.verdict, Verdict::Clean);
    // Ethernet: the same budget, from IEEE 802.3's BER objective.
    let crc = finding(&r, End::Remote, "eth0", RuleId::RcvErrorsBudget);
    assert_eq!(
        (crc.source, crc.counter.as_deref()),
        (linerate_soak::Source::Ieee8023, Some("rx_crc_errors"))
    );
    // rx_missed_errors is the host's: congested, and not an error of the link.
    let missed = finding(&r, End::Remote, "eth1", RuleId::RxMissed);
    assert!(missed.text.contains("not the cable"), "{}", missed.text);
}

#[test]
fn receive_errors_in_a_short_soak_as_reported() {
    // 179 in 20 s (9/s), traffic counted: over the floor of 3 for so few bits.
    let r = scenarios::receive_errors_short();
    assert_eq!(
        verdict(&r, End::Local, "mlx4_0"),
        (Verdict::Marginal, "rcv_errors_budget")
    );
    let f = finding(&r, End::Local, "mlx4_0", RuleId::RcvErrorsBudget);
    assert_eq!((f.value, f.threshold), (Some(32220.0), Some(540.0)));
    assert!(f.text.contains("never fewer than 3"), "{}", f.text);
}

#[test]
fn a_counter_pegged_then_cleared_is_judged_over_the_rest() {
    let r = scenarios::pegged_then_cleared();
    // Over the whole minute the budget would allow 6.19 (371.25/h): 5 looked clean. Over the
    // 14 s observed the limit is the floor, 3.
    assert_eq!(
        verdict(&r, End::Local, "mlx5_0"),
        (Verdict::Bad, "symbol_error_budget")
    );
    let f = finding(&r, End::Local, "mlx5_0", RuleId::SymbolErrorBudget);
    assert!(
        f.text.contains("(5 in 14 s observed (of 60 s))")
            && f.text.contains("the floor of 3 errors"),
        "{}",
        f.text
    );
    let limit = 3.0 * 3600.0 / 14.0;
    assert_eq!(f.threshold, Some(limit));
    let p = r.port(End::Local, "mlx5_0", "1").unwrap();
    assert_eq!(
        p.symbol_budget.as_ref().unwrap().limit_per_hour,
        Some(limit)
    );
    let c = &p.counters[0];
    assert_eq!((c.observed_s, c.observed_delta, c.delta), (14.0, 5, 5));
    // The note is kept, and says over how long.
    let note = finding(&r, End::Local, "mlx5_0", RuleId::PeggedThenCleared);
    assert!(
        note.text
            .contains("until someone cleared it at sample 46 (46 s): judged over the 14 s"),
        "{}",
        note.text
    );
    // No errors after the clear: 14 s of traffic is too few bits to call the port clean.
    assert_eq!(
        verdict(&r, End::Local, "mlx5_1"),
        (Verdict::Insufficient, "insufficient_traffic")
    );
    let f = finding(&r, End::Local, "mlx5_1", RuleId::InsufficientTraffic);
    assert!(
        f.text
            .contains("in the 14 s every error counter was observed (of 60 s)"),
        "{}",
        f.text
    );
    assert_eq!(r.port(End::Local, "mlx5_1", "1").unwrap().observed_s, 14.0);
}

#[test]
fn the_limit_in_the_document_is_the_one_that_applied() {
    let r = scenarios::budgets_and_pam4();
    // 3 errors in 20 s is 540/h, and the floor allows exactly that: not fired, and the check
    // says so with the same two numbers.
    let c = check(&r, End::Local, "mlx5_0", RuleId::SymbolErrorBudget).expect("judged");
    assert_eq!((c.value, c.limit, c.fired), (540.0, 540.0, false));
    assert_eq!(
        verdict(&r, End::Local, "mlx5_0"),
        (Verdict::Insufficient, "insufficient_traffic")
    );
    let b = r
        .port(End::Local, "mlx5_0", "1")
        .unwrap()
        .symbol_budget
        .clone()
        .unwrap();
    assert_eq!(
        (b.per_hour, b.floor, b.limit_per_hour),
        (371.25, 3.0, Some(540.0))
    );
    // 4 errors: over, with the limit that applied as the finding's threshold.
    let f = finding(&r, End::Local, "mlx5_1", RuleId::SymbolErrorBudget);
    assert_eq!((f.value, f.threshold), (Some(720.0), Some(540.0)));
    // PAM4: no check, no limit, a note only.
    assert!(check(&r, End::Remote, "mlx5_2", RuleId::SymbolErrorBudget).is_none());
    let ndr = r.port(End::Remote, "mlx5_2", "1").unwrap();
    assert_eq!(ndr.symbol_budget.as_ref().unwrap().limit_per_hour, None);
    assert_eq!(
        verdict(&r, End::Remote, "mlx5_2"),
        (Verdict::Clean, "clean")
    );
    assert!(fired(&r, End::Remote, "mlx5_2", RuleId::Pam4SymbolErrors));
}

#[test]
fn engine_traffic_is_credited_at_most_at_the_port_data_rate() {
    let r = scenarios::traffic_beyond_the_port();
    let p = r.port(End::Local, "mlx5_0", "1").unwrap();
    // 1X EDR: 25.78125 Gb/s signalling, 25 Gb/s after 64b/66b; 100 s of it is 2.5e12 bits,
    // though the engines received 49 Gb/s.
    assert_eq!(p.data_gbps, Some(25.0));
    assert_eq!(
        (p.bits_received, p.bits_basis),
        (2.5e12, BitsBasis::DataRate)
    );
    assert_eq!(
        verdict(&r, End::Local, "mlx5_0"),
        (Verdict::Insufficient, "insufficient_traffic")
    );
    // Below the data rate the engines' bytes stand.
    let slower = scenarios::soak(
        Run {
            bytes: 3_000_000_000,
            ..scenarios::EDR_MINUTE
        },
        &[port(End::Local, "mlx5_0", ib("EDR", 25.781_25), |_| {
            vec![(IbCounters, "symbol_error", 0)]
        })],
    );
    let p = slower.port(End::Local, "mlx5_0", "1").unwrap();
    assert_eq!(
        (p.bits_received, p.bits_basis),
        (1.44e12, BitsBasis::Engine)
    );
}

#[test]
fn saturated_rates_say_at_least_and_one_perfquery_is_one_note() {
    let r = scenarios::saturation_and_one_reset();
    let f = finding(&r, End::Local, "mlx4_0", RuleId::SymbolErrorBudget);
    assert!(
        f.at_least
            && f.text.starts_with(
                "symbol_error at least 332100/h (at least 5535 in 60 s observed (of 10 min))"
            ),
        "{}",
        f.text
    );
    let sat = finding(&r, End::Local, "mlx4_0", RuleId::Saturated);
    assert!(
        sat.text
            .contains("the total (at least 5535) and its rate are lower bounds"),
        "{}",
        sat.text
    );
    let p = r.port(End::Remote, "mlx4_1", "1").unwrap();
    let resets: Vec<_> = p
        .findings
        .iter()
        .filter(|f| f.rule == RuleId::CounterReset)
        .collect();
    assert_eq!(resets.len(), 1, "{resets:#?}");
    let note = resets[0];
    // Its value is how many counters were reset, exactly.
    assert_eq!(
        (note.value, note.at_least, note.counter.as_deref()),
        (Some(9.0), false, None)
    );
    assert!(
        note.text.starts_with("reset by someone else at sample 30 (300 s): symbol_error (3 → 0), link_error_recovery (3 → 0)")
            && note.text.contains("excessive_buffer_overrun_errors (3 → 0)"),
        "{}",
        note.text
    );
    assert_eq!(p.verdict, Verdict::Clean);
}

#[test]
fn a_check_fires_exactly_when_its_value_exceeds_its_limit() {
    // The invariant the PromQL recipe in docs/soak.md stands on, over every scenario: each
    // check fired iff value > limit; a port is marginal or bad iff a marginal or bad check
    // fired; every fired check of that kind has its finding; (rule, counter) is one series.
    for (name, r) in scenarios::all() {
        for e in &r.ends {
            for p in &e.ports {
                let mut series = std::collections::BTreeSet::new();
                for c in &p.checks {
                    assert_eq!(c.fired, c.value > c.limit, "{name} {}: {c:?}", p.device);
                    assert_eq!(c.verdict, c.rule.verdict());
                    assert!(
                        series.insert((c.rule, c.counter.clone())),
                        "{name}: {c:?} twice"
                    );
                    if c.fired && c.verdict >= Verdict::Marginal {
                        assert!(
                            p.findings
                                .iter()
                                .any(|f| f.rule == c.rule && f.counter == c.counter
                                    || f.rule.verdict() > c.verdict),
                            "{name} {}: {c:?} without its finding",
                            p.device
                        );
                    }
                }
                let by_checks = p
                    .checks
                    .iter()
                    .any(|c| c.fired && c.verdict >= Verdict::Marginal);
                assert_eq!(
                    by_checks,
                    p.verdict >= Verdict::Marginal,
                    "{name} {}",
                    p.device
                );
            }
        }
    }
}

#[test]
fn thresholds_set_by_the_operator_change_the_verdict_and_are_listed() {
    let run = |jp: &JudgeParams, total: u64| {
        soak_with(
            TEN_MIN,
            &[port(End::Local, "mlx4_0", qdr(), move |s| {
                vec![(IbCounters, "port_rcv_errors", ramp(0, total, 60, s))]
            })],
            jp,
            |_, _| {},
        )
    };
    let mut jp = JudgeParams::default();
    assert_eq!(run(&jp, 3600).thresholds_set, []);
    assert_eq!(
        verdict(&run(&jp, 3600), End::Local, "mlx4_0").0,
        Verdict::Marginal
    );
    jp.set(Threshold::PortRcvErrorsPerS, 5.0).unwrap();
    let r = run(&jp, 3600);
    assert_eq!(
        verdict(&r, End::Local, "mlx4_0"),
        (Verdict::Bad, "port_rcv_errors_rate")
    );
    assert_eq!(r.thresholds_set, [Threshold::PortRcvErrorsPerS]);
    assert_eq!(r.thresholds.port_rcv_errors_per_s, 5.0);
    // A looser receive-error budget (1 per 10^8 bits: 288/h at 8 Gb/s) lets 40 through.
    let mut loose = JudgeParams::default();
    loose.set(Threshold::RcvErrorsPerBit, 1e-8).unwrap();
    assert_eq!(
        verdict(&run(&loose, 40), End::Local, "mlx4_0"),
        (Verdict::Clean, "clean")
    );
    assert_eq!(
        verdict(&run(&JudgeParams::default(), 40), End::Local, "mlx4_0").0,
        Verdict::Marginal
    );
    // The same for EDR_MINUTE's symbol budget: ber 1e-10 allows 100 times more.
    let mut ber = JudgeParams::default();
    ber.set(Threshold::Ber, 1e-10).unwrap();
    let b = symbol_budget(&scenarios::edr(), &ber).unwrap();
    assert!(
        (b.per_hour - 37_125.0).abs() < 1e-6 && b.floor == 300.0,
        "{b:?}"
    );
    let _ = EDR_MINUTE;
}

#[test]
fn the_scripted_scenarios_of_13_keep_their_verdicts_on_ethernet_too() {
    let r = scenarios::ethernet();
    assert_eq!(
        verdict(&r, End::Remote, "eth0"),
        (Verdict::Bad, "post_fec_errors")
    );
    assert_eq!(
        verdict(&r, End::Remote, "eth1"),
        (Verdict::Bad, "link_down")
    );
    assert_eq!(
        verdict(&r, End::Local, "eth2"),
        (Verdict::Marginal, "pre_fec_ber")
    );
    assert_eq!(verdict(&r, End::Local, "eth3"), (Verdict::Clean, "clean"));
    let _ = (Carrier, Ethtool, NetdevStatistics);
    let _: Option<Reading> = None;
    let _ = eth(1);
}

#[test]
fn pause_frames_name_the_end_and_the_direction_they_slowed() {
    use linerate_proto::soak::SoakSample;
    // A 100 GbE port on the local end whose pause counter `name` rose by 100 frames in each of
    // intervals 31 to 40 (of 60), nothing before or after.
    let pauses = |name: &'static str| {
        port(End::Local, "mlx5_0", eth(100_000), move |s| {
            vec![(Ethtool, name, s.saturating_sub(30).min(10) * 100)]
        })
    };
    // ... and what the local end sent (or received) in those intervals halved: 4 Gb/s, under
    // the 8 Gb/s of the others.
    let halved = |sent: bool| {
        move |s: &mut SoakSample, seq: u64| {
            if s.end == End::Local && (31..=40).contains(&seq) {
                if sent {
                    s.bytes_sent /= 2;
                } else {
                    s.bytes_received /= 2;
                }
            }
        }
    };
    let run = |name: &'static str, sent: bool| {
        soak_with(
            TEN_MIN,
            &[pauses(name)],
            &JudgeParams::default(),
            halved(sent),
        )
    };
    let pause_check = |r: &SoakReport| {
        let p = r.port(End::Local, "mlx5_0", "1").unwrap();
        let c: Vec<_> = p
            .checks
            .iter()
            .filter(|c| c.rule == RuleId::PauseFrames)
            .collect();
        assert_eq!(c.len(), 1, "{:?}", p.checks);
        (c[0].value, c[0].limit, c[0].fired)
    };
    // Received: the peer asked this end to stop sending, and its send direction fell.
    let rx = run("rx_prio3_pause", true);
    assert_eq!(
        verdict(&rx, End::Local, "mlx5_0"),
        (Verdict::Congested, "pause_frames")
    );
    let f = finding(&rx, End::Local, "mlx5_0", RuleId::PauseFrames);
    println!("{}", f.text);
    assert_eq!(f.counter.as_deref(), Some("rx_prio3_pause"));
    assert!(
        f.text.starts_with(
            "rx_prio3_pause rose by 1000 in 10 of 60 intervals: this end's peer sent pause \
             frames, asking it to stop sending"
        ) && f
            .text
            .contains("this end's send direction carried 4 Gb/s in them, 50% under the 8 Gb/s"),
        "{}",
        f.text
    );
    let (value, limit, on) = pause_check(&rx);
    assert!((value - 0.5).abs() < 1e-9 && (limit - 0.1).abs() < 1e-9 && on);
    // The same frames while only the other direction fell: the send direction they slow held
    // its rate (a lossless fabric at work), checked and not named.
    let held = run("rx_prio3_pause", false);
    assert!(!fired(&held, End::Local, "mlx5_0", RuleId::PauseFrames));
    let (value, _, on) = pause_check(&held);
    assert!(value.abs() < 1e-9 && !on, "{value}");
    // Sent: this end asked its peer to stop, and the direction from the peer fell.
    let tx = run("tx_pause_ctrl_phy", false);
    let f = finding(&tx, End::Local, "mlx5_0", RuleId::PauseFrames);
    println!("{}", f.text);
    assert!(
        f.text.starts_with("tx_pause_ctrl_phy rose by 1000 in 10 of 60 intervals: this end sent pause frames, asking its peer to stop sending")
            && f.text.contains("the direction from the peer to this end carried 4 Gb/s in them"),
        "{}",
        f.text
    );
    assert!(!fired(
        &run("tx_pause_ctrl_phy", true),
        End::Local,
        "mlx5_0",
        RuleId::PauseFrames
    ));
    // Pause frames in every interval: nothing without them to compare with, no check.
    let always = soak(
        TEN_MIN,
        &[port(End::Local, "mlx5_0", eth(100_000), |s| {
            vec![(Ethtool, "rx_prio3_pause", s * 100)]
        })],
    );
    let p = always.port(End::Local, "mlx5_0", "1").unwrap();
    assert!(p.checks.iter().all(|c| c.rule != RuleId::PauseFrames));
    // Their time is no frame count: a rise of `rx_prio3_pause_duration` alone is not judged.
    let duration = soak_with(
        TEN_MIN,
        &[pauses("rx_prio3_pause_duration")],
        &JudgeParams::default(),
        halved(true),
    );
    assert!(!fired(&duration, End::Local, "mlx5_0", RuleId::PauseFrames));
}
