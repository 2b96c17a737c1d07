//! The judge on constructed sample sequences: every rule firing and not firing at its
//! boundary, the six scripted scenarios of issue #13, and short soaks not called clean.

use linerate_proto::soak::{CounterSource, End, PortSample, SoakPortKind, SoakSample};
use linerate_soak::{
    judge, symbol_budget, JudgeParams, RuleId, SoakParams, SoakReport, Tracker, Verdict,
};

use CounterSource::{Carrier, Ethtool, IbCounters};

/// (source, name, value) of one counter in one sample.
type Reading = (CounterSource, &'static str, u64);

/// One port of one end, with the counters it reads at each sample.
struct Port {
    end: End,
    device: &'static str,
    kind: SoakPortKind,
    /// (source, name, value at sample `seq`).
    script: Box<dyn Fn(u64) -> Vec<Reading>>,
}

fn ib(speed: &str, gbps: f64) -> SoakPortKind {
    SoakPortKind::Infiniband {
        speed: Some(speed.into()),
        signalling_gbps: Some(gbps),
    }
}

fn qdr() -> SoakPortKind {
    ib("QDR", 40.0)
}

fn eth(mbps: u64) -> SoakPortKind {
    SoakPortKind::Ethernet {
        speed_mbps: Some(mbps),
        roce: false,
    }
}

fn port(
    end: End,
    device: &'static str,
    kind: SoakPortKind,
    script: impl Fn(u64) -> Vec<Reading> + 'static,
) -> Port {
    Port {
        end,
        device,
        kind,
        script: Box::new(script),
    }
}

/// A counter that rises linearly from `start` to `start + total` over `n` intervals (integer
/// steps, the last sample exact).
fn ramp(start: u64, total: u64, n: u64, seq: u64) -> u64 {
    start + total * seq / n
}

/// How a soak runs: intervals, their length, bytes each end receives per interval, and the
/// host-wide retransmits per interval.
#[derive(Clone, Copy)]
struct Run {
    n: u64,
    dt: f64,
    bytes: u64,
    retrans: u64,
}

/// Ten minutes, 60 intervals of 10 s, 10 GB received per interval per end (4.8e12 bits in
/// all: enough to judge BER 1e-12).
const TEN_MIN: Run = Run {
    n: 60,
    dt: 10.0,
    bytes: 10_000_000_000,
    retrans: 0,
};

fn soak(run: Run, ports: &[Port]) -> SoakReport {
    soak_with(run, ports, &JudgeParams::default(), |_, _| {})
}

fn soak_with(
    run: Run,
    ports: &[Port],
    jp: &JudgeParams,
    tweak: impl Fn(&mut SoakSample, u64),
) -> SoakReport {
    let mut t = Tracker::new();
    for seq in 0..=run.n {
        for end in [End::Local, End::Remote] {
            let mut s = SoakSample {
                end,
                seq,
                t_s: seq as f64 * run.dt,
                ports: ports
                    .iter()
                    .filter(|p| p.end == end)
                    .map(|p| PortSample {
                        device: p.device.into(),
                        port: "1".into(),
                        netdev: None,
                        kind: p.kind.clone(),
                        counters: (p.script)(seq)
                            .into_iter()
                            .map(|(s, n, v)| (s, n.to_string(), v))
                            .collect(),
                    })
                    .collect(),
                tcp_retrans_segs: Some(1000 + seq * run.retrans),
                bytes_sent: if seq == 0 { 0 } else { run.bytes },
                bytes_received: if seq == 0 { 0 } else { run.bytes },
                problems: Vec::new(),
            };
            tweak(&mut s, seq);
            t.push(&s);
        }
    }
    let params = SoakParams {
        interval_s: run.dt,
        ..SoakParams::default()
    };
    judge(&t, &params, jp)
}

/// The verdict and rule of one port.
fn verdict(r: &SoakReport, end: End, device: &str) -> (Verdict, String) {
    let p = r
        .port(end, device, "1")
        .unwrap_or_else(|| panic!("{end:?} {device} is in the report"));
    (p.verdict, p.rule.clone())
}

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
    let n = TEN_MIN.n;
    let ports = [
        // symbol_error well above the QDR budget (144/h: 24 in ten minutes).
        port(End::Local, "mlx4_0", qdr(), move |s| {
            vec![(IbCounters, "symbol_error", ramp(7, 300, n, s))]
        }),
        // link_downed steps once, half way.
        port(End::Remote, "mlx4_1", qdr(), |s| {
            vec![(IbCounters, "link_downed", if s < 30 { 2 } else { 3 })]
        }),
        // A 4-bit counter climbs to 15 and stays.
        port(End::Local, "mlx4_2", qdr(), |s| {
            vec![(IbCounters, "local_link_integrity_errors", (s / 2).min(15))]
        }),
        // Reset to zero mid-run by someone else, otherwise still.
        port(End::Remote, "mlx4_3", qdr(), |s| {
            vec![(IbCounters, "symbol_error", if s < 30 { 500 } else { 0 })]
        }),
        // Congestion only.
        port(End::Local, "mlx4_4", qdr(), move |s| {
            vec![
                (IbCounters, "port_xmit_discards", ramp(0, 900, n, s)),
                (IbCounters, "symbol_error", 4),
            ]
        }),
        // Clean.
        port(End::Remote, "mlx4_5", qdr(), |_| {
            vec![
                (IbCounters, "symbol_error", 12),
                (IbCounters, "link_downed", 1),
                (IbCounters, "port_rcv_errors", 0),
            ]
        }),
    ];
    let r = soak(TEN_MIN, &ports);
    let want = [
        (End::Local, "mlx4_0", Verdict::Bad, "symbol_error_budget"),
        (End::Remote, "mlx4_1", Verdict::Bad, "link_downed"),
        (End::Local, "mlx4_2", Verdict::Bad, "local_link_integrity"),
        (End::Remote, "mlx4_3", Verdict::Clean, "clean"),
        (End::Local, "mlx4_4", Verdict::Congested, "xmit_congestion"),
        (End::Remote, "mlx4_5", Verdict::Clean, "clean"),
    ];
    for (end, dev, v, rule) in want {
        assert_eq!(
            verdict(&r, end, dev),
            (v, rule.to_string()),
            "{end:?} {dev}"
        );
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
    let per_hour = |k| symbol_budget(&k, 1e-12).unwrap().per_hour;
    assert!((per_hour(ib("QDR", 40.0)) - 144.0).abs() < 1e-9);
    assert!((per_hour(ib("FDR", 56.25)) - 202.5).abs() < 1e-9);
    assert!((per_hour(ib("EDR", 103.125)) - 371.25).abs() < 1e-9);
    assert!(symbol_budget(&ib("HDR", 212.5), 1e-12).unwrap().pam4);
    assert!(symbol_budget(&eth(100_000), 1e-12).is_none());
    // Without a signalling rate, NVSentinel's fixed 120/h.
    let unknown = SoakPortKind::Infiniband {
        speed: None,
        signalling_gbps: None,
    };
    assert_eq!(symbol_budget(&unknown, 1e-12).unwrap().per_hour, 120.0);
}

#[test]
fn symbol_error_budget_boundary() {
    // QDR, ten minutes: the budget is 144/h × 1/6 h = 24 errors.
    let at = one_counter(TEN_MIN, "symbol_error", 24);
    assert_eq!(verdict(&at, End::Local, "mlx4_0").0, Verdict::Clean);
    let over = one_counter(TEN_MIN, "symbol_error", 25);
    assert_eq!(
        verdict(&over, End::Local, "mlx4_0"),
        (Verdict::Bad, "symbol_error_budget".into())
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
    };
    let three = one_counter(short, "symbol_error", 3);
    assert_eq!(
        verdict(&three, End::Local, "mlx4_0"),
        (Verdict::Insufficient, "insufficient_traffic".into())
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
    // And just enough bits (3e12 received) makes the same quiet link clean.
    let enough = Run {
        n: 10,
        dt: 1.0,
        bytes: 37_500_000_000,
        retrans: 0,
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
            (Verdict::Bad, rule.to_string()),
            "{name}"
        );
    }
}

#[test]
fn rate_rules_boundaries() {
    // port_rcv_errors: 10/s over 600 s is 6000.
    assert_eq!(
        verdict(
            &one_counter(TEN_MIN, "port_rcv_errors", 6000),
            End::Local,
            "mlx4_0"
        )
        .0,
        Verdict::Clean
    );
    assert_eq!(
        verdict(
            &one_counter(TEN_MIN, "port_rcv_errors", 6001),
            End::Local,
            "mlx4_0"
        ),
        (Verdict::Bad, "port_rcv_errors_rate".into())
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
        (Verdict::Bad, "link_error_recovery_rate".into())
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
        (Verdict::Marginal, "symbol_with_recovery".into())
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
        (Verdict::Congested, "xmit_congestion".into())
    );
    assert_eq!(
        v(&run(0, 1, 0, 0)),
        (Verdict::Congested, "xmit_congestion".into())
    );
    assert_eq!(
        v(&run(0, 0, 1, 0)),
        (Verdict::Congested, "remote_physical_errors".into())
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
        (Verdict::Bad, "retrans_with_errors".into())
    );
    assert_eq!(run(0).ends[0].tcp_retrans, Some(180));
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
        (Verdict::Bad, "post_fec_errors".into())
    );
    assert_eq!(
        v(&eth_soak(&[(Ethtool, "rx_fec_uncorrectable_blocks", 2)])),
        (Verdict::Bad, "post_fec_errors".into())
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
            (Verdict::Bad, "link_down".into()),
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
        (Verdict::Bad, "link_down".into())
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
    assert_eq!(v(&over), (Verdict::Marginal, "pre_fec_ber".into()));
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
        (Verdict::Insufficient, "pegged_from_start".into())
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
