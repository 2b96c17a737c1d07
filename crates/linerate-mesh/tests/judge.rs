//! Verdicts on synthetic runs of the model fleet of `common`.

mod common;

use common::Fleet;
use linerate_mesh::{
    build_report, LinkStatus, MeshInput, MeshLatency, MeshReport, NodeShaper, NodeSide, NodeStatus,
    Phase, RankId, ScheduleKind, ShaperDirection, Transport, Unconfirmed,
};

/// Makes node `v` slow (`rate` Gb/s) in the direction(s) of `kind`.
fn fault(f: &mut Fleet, v: u32, kind: NodeStatus, rate: f64) {
    if kind != NodeStatus::RxDegraded {
        f.tx_cap[v as usize] = rate;
    }
    if kind != NodeStatus::TxDegraded {
        f.rx_cap[v as usize] = rate;
    }
}

fn statuses(r: &MeshReport) -> Vec<NodeStatus> {
    r.nodes.iter().map(|n| n.status).collect()
}

/// Every node ok but the listed ones.
fn expect_nodes(r: &MeshReport, faults: &[(RankId, NodeStatus)]) {
    for n in &r.nodes {
        let want = faults
            .iter()
            .find(|(k, _)| *k == n.rank)
            .map_or(NodeStatus::Ok, |(_, s)| *s);
        assert_eq!(
            n.status,
            want,
            "{}: {}\n{:?}",
            n.host,
            n.explanation,
            statuses(r)
        );
    }
}

#[test]
fn a_healthy_fleet_is_healthy() {
    for n in 2..=16 {
        let f = Fleet::healthy(n);
        let r = f.report(f.rounds(), Vec::new());
        expect_nodes(&r, &[]);
        assert!(r.links.iter().all(|l| l.status == LinkStatus::Ok), "n={n}");
        assert!(r.healthy, "n={n}");
        assert_eq!(r.links.len() as u32, n * (n - 1));
        assert!(r.fleet.is_empty(), "{:?}", r.fleet);
    }
}

#[test]
fn a_node_slow_both_ways_is_named_and_its_peers_are_not() {
    for n in [3, 4, 8, 16, 33, 128] {
        let mut f = Fleet::healthy(n);
        f.tx_cap[2] = 0.29;
        f.rx_cap[2] = 0.29;
        let r = f.run(Vec::new());
        expect_nodes(&r, &[(2, NodeStatus::Both)]);
        assert!(!r.healthy);
        // Every slow link is put down to node 2, none to a cable.
        for l in r.links.iter().filter(|l| l.status.is_bad()) {
            assert!(l.tx == 2 || l.rx == 2, "{l:?}");
            assert_eq!(l.explained_by, [2], "{l:?}");
        }
        let v = &r.nodes[2];
        assert!(
            v.explanation.starts_with("node02 tx+rx-degraded"),
            "{}",
            v.explanation
        );
        assert!(
            v.tx_median_gbps.unwrap() <= 0.29 && v.rx_median_gbps.unwrap() <= 0.29,
            "{v:?}"
        );
    }
}

#[test]
fn a_node_slow_to_send_only_is_tx_degraded() {
    for n in [3, 4, 8, 16] {
        let mut f = Fleet::healthy(n);
        f.tx_cap[1] = 0.38;
        let r = f.run(Vec::new());
        expect_nodes(&r, &[(1, NodeStatus::TxDegraded)]);
        assert_eq!(r.nodes[1].bad_tx_links, n - 1);
        assert_eq!(r.nodes[1].bad_rx_links, 0);
    }
}

#[test]
fn a_node_slow_to_receive_only_is_rx_degraded() {
    for n in [3, 4, 8, 16] {
        let mut f = Fleet::healthy(n);
        f.rx_cap[n as usize - 1] = 0.4;
        let r = f.run(Vec::new());
        expect_nodes(&r, &[(n - 1, NodeStatus::RxDegraded)]);
    }
}

#[test]
fn a_dead_rank_is_unreachable_with_or_without_the_coordinator_saying_so() {
    for lost in [vec![6], vec![]] {
        let mut f = Fleet::healthy(8);
        f.dead.push((6, 5));
        let r = f.run(lost.clone());
        expect_nodes(&r, &[(6, NodeStatus::Unreachable)]);
        assert!(!r.healthy);
        for l in r
            .links
            .iter()
            .filter(|l| l.status == LinkStatus::Unreachable)
        {
            assert!(l.tx == 6 || l.rx == 6, "{l:?}");
            assert!(
                l.explanation.contains("node06 unreachable"),
                "{}",
                l.explanation
            );
        }
        if !lost.is_empty() {
            assert!(r.nodes[6].explanation.contains("coordinator lost it"));
        }
    }
}

#[test]
fn the_four_faults_of_the_issue_at_once() {
    // 8 ranks: node 2 at 0.29 both ways, node 5 slow sending, node 6 slow receiving, node 7
    // killed after round 4. Half the measured links are bad.
    let mut f = Fleet::healthy(8);
    f.tx_cap[2] = 0.29;
    f.rx_cap[2] = 0.29;
    f.tx_cap[5] = 0.38;
    f.rx_cap[6] = 0.4;
    f.dead.push((7, 4));
    let r = f.run(vec![7]);
    expect_nodes(
        &r,
        &[
            (2, NodeStatus::Both),
            (5, NodeStatus::TxDegraded),
            (6, NodeStatus::RxDegraded),
            (7, NodeStatus::Unreachable),
        ],
    );
    // No bad link left unexplained: no cable blamed.
    for l in r
        .links
        .iter()
        .filter(|l| matches!(l.status, LinkStatus::Slow | LinkStatus::Lossy))
    {
        assert!(!l.explained_by.is_empty(), "{l:?}");
    }
    assert!(
        r.nodes[5].explanation.contains("as sender 0.3"),
        "{}",
        r.nodes[5].explanation
    );
}

#[test]
fn a_degraded_node_is_explained_by_what_differs_in_its_inventory() {
    let mut f = Fleet::healthy(16);
    f.rx_cap[7] = 0.45;
    let mut entries = f.facts();
    entries[7].facts.port.as_mut().unwrap().pcie_current = Some("5.0 GT/s x4".into());
    let r = f.run_with(entries, Vec::new(), |_| {});
    expect_nodes(&r, &[(7, NodeStatus::RxDegraded)]);
    let e = &r.nodes[7].explanation;
    assert!(
        e.starts_with("node07 rx-degraded: its ConnectX-3 (MT27500) runs PCIe at 5.0 GT/s x4, the other 15 nodes PCIe at 8.0 GT/s x8"),
        "{e}"
    );
    assert!(r
        .fleet
        .iter()
        .any(|f| f.id == "fleet.pcie_link" && f.ranks == [7]));
    // Without a difference, the verdict says so.
    let r = f.run(Vec::new());
    assert!(
        r.nodes[7]
            .explanation
            .contains("nothing in its inventory differs"),
        "{}",
        r.nodes[7].explanation
    );
}

#[test]
fn contention_is_told_from_a_bad_link_by_the_retest() {
    let mut f = Fleet::healthy(8);
    f.contended.push((1, 3, 0.3)); // slow in its round only
    f.bad_links.push((0, 4, 0.3)); // slow alone too: the cable
    let rounds = f.rounds();
    let first = f.report(rounds.clone(), Vec::new());
    expect_nodes(&first, &[]);
    let plan = first.retest_plan(100);
    let flows: Vec<(u32, u32)> = plan
        .iter()
        .map(|r| (r.flows[0].tx, r.flows[0].rx))
        .collect();
    assert_eq!(flows, [(0, 4), (1, 3)]);
    assert!(plan.iter().all(|r| r.flows.len() == 1));
    let mut all = rounds;
    for (i, round) in plan.iter().enumerate() {
        let fl = round.flows[0];
        all.push(f.measure(Phase::Retest, i, fl.tx, fl.rx, 1, false));
    }
    let r = f.report(all, Vec::new());
    expect_nodes(&r, &[]);
    let link = |a, b| r.links.iter().find(|l| (l.tx, l.rx) == (a, b)).unwrap();
    assert_eq!(
        link(1, 3).status,
        LinkStatus::Contention,
        "{}",
        link(1, 3).explanation
    );
    assert!(
        link(1, 3).explanation.contains("alone"),
        "{}",
        link(1, 3).explanation
    );
    assert_eq!(link(0, 4).status, LinkStatus::Slow);
    assert!(
        link(0, 4).explanation.contains("suspect this link"),
        "{}",
        link(0, 4).explanation
    );
    assert!(!r.healthy, "a bad cable is a fault");
    let bad: Vec<_> = r
        .links
        .iter()
        .filter(|l| l.status.is_bad())
        .map(|l| (l.tx, l.rx))
        .collect();
    assert_eq!(bad, [(0, 4)]);
}

#[test]
fn a_node_slow_only_under_contention_is_cleared_by_its_retest() {
    let mut f = Fleet::healthy(8);
    for peer in 0..8 {
        if peer != 3 {
            f.contended.push((3, peer, 0.35));
        }
    }
    let rounds = f.rounds();
    let first = f.report(rounds.clone(), Vec::new());
    // Suspected by its rounds, not yet judged.
    expect_nodes(&first, &[(3, NodeStatus::Unconfirmed)]);
    assert_eq!(first.nodes[3].suspect, Some(NodeStatus::TxDegraded));
    assert_eq!(first.nodes[3].unconfirmed, Some(Unconfirmed::NotRetested));
    let plan = first.retest_plan(100);
    // Node 3 against two good peers as sender; none of its links is retested on its own.
    assert_eq!(plan.len(), 2, "{plan:?}");
    assert!(plan
        .iter()
        .all(|r| r.flows[0].tx == 3 && r.flows[0].rx != 3));
    let mut all = rounds;
    for (i, round) in plan.iter().enumerate() {
        let fl = round.flows[0];
        all.push(f.measure(Phase::Retest, i, fl.tx, fl.rx, 1, false));
    }
    let r = f.report(all, Vec::new());
    expect_nodes(&r, &[]);
    assert_eq!(r.nodes[3].suspect, Some(NodeStatus::TxDegraded));
    assert!(
        r.nodes[3]
            .explanation
            .contains("fine alone against good peers"),
        "{}",
        r.nodes[3].explanation
    );
    for l in r.links.iter().filter(|l| l.tx == 3) {
        assert_eq!(l.status, LinkStatus::Contention, "{l:?}");
    }
    assert!(r.healthy, "contention alone is the fabric's, not a fault");
}

#[test]
fn a_degraded_node_confirmed_by_its_retest_stays_degraded() {
    let mut f = Fleet::healthy(8);
    f.tx_cap[3] = 0.35;
    let rounds = f.rounds();
    let plan = f.report(rounds.clone(), Vec::new()).retest_plan(100);
    let mut all = rounds;
    for (i, round) in plan.iter().enumerate() {
        let fl = round.flows[0];
        all.push(f.measure(Phase::Retest, i, fl.tx, fl.rx, 1, false));
    }
    let r = f.report(all, Vec::new());
    expect_nodes(&r, &[(3, NodeStatus::TxDegraded)]);
}

#[test]
fn two_ranks_blame_the_link_not_a_node() {
    let mut f = Fleet::healthy(2);
    f.bad_links.push((0, 1, 0.3));
    let r = f.run(Vec::new());
    expect_nodes(&r, &[]);
    let bad: Vec<_> = r
        .links
        .iter()
        .filter(|l| l.status.is_bad())
        .map(|l| (l.tx, l.rx))
        .collect();
    assert_eq!(bad, [(0, 1)]);
    assert!(!r.healthy);
    // A node slow both ways in a pair of two: every link is bad, which cannot say which end.
    let mut f = Fleet::healthy(2);
    f.tx_cap[0] = 0.3;
    f.rx_cap[0] = 0.3;
    let r = f.run(Vec::new());
    expect_nodes(&r, &[]);
}

#[test]
fn three_ranks_single_bad_link_blames_no_node() {
    let mut f = Fleet::healthy(3);
    f.bad_links.push((2, 0, 0.2));
    let r = f.run(Vec::new());
    expect_nodes(&r, &[]);
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (2, 0)).unwrap();
    assert_eq!(l.status, LinkStatus::Slow);
    assert!(l.explained_by.is_empty());
}

#[test]
fn lossy_and_latency_outliers() {
    let f = Fleet::healthy(6);
    let r = f.run_with(f.facts(), Vec::new(), |x| {
        if (x.tx, x.rx) == (1, 4) {
            x.retransmits = Some(50_000);
        }
        if x.latency.is_some() && (x.tx.min(x.rx), x.tx.max(x.rx)) == (0, 5) {
            x.latency = Some(MeshLatency {
                p50_us: 400.0,
                p99_us: 900.0,
            });
        }
    });
    expect_nodes(&r, &[]);
    let link = |a, b| r.links.iter().find(|l| (l.tx, l.rx) == (a, b)).unwrap();
    assert_eq!(link(1, 4).status, LinkStatus::Lossy);
    assert!(
        link(1, 4).explanation.contains("50000 retransmits"),
        "{}",
        link(1, 4).explanation
    );
    let lat = r.links.iter().find(|l| l.latency_outlier).unwrap();
    assert_eq!(lat.status, LinkStatus::Slow);
    assert!(
        lat.explanation.contains("latency p50 400"),
        "{}",
        lat.explanation
    );
}

/// A round trip is bent by a busy host long before its CPU looks full: a latency outlier
/// whose retest ran while other programs held cores is unconfirmed even with a core idle,
/// where a rate measured then would still count.
#[test]
fn a_latency_outlier_retested_beside_other_programs_is_not_confirmed() {
    let f = Fleet::healthy(6);
    let run = |other: f64| {
        f.run_with(f.facts(), Vec::new(), |x| {
            if x.latency.is_some() && (x.tx.min(x.rx), x.tx.max(x.rx)) == (0, 5) {
                x.latency = Some(MeshLatency {
                    p50_us: 400.0,
                    p99_us: 900.0,
                });
                if x.phase == Phase::Retest {
                    for l in [&mut x.tx_load, &mut x.rx_load].into_iter().flatten() {
                        l.other_cores = other;
                        l.idle_cores = 1.2;
                        l.waited_cores = Some(0.01);
                    }
                }
            }
        })
    };
    let busy = run(0.6);
    let lat = busy.links.iter().find(|l| l.latency_outlier).unwrap();
    assert_eq!(lat.status, LinkStatus::Unconfirmed, "{lat:?}");
    assert_eq!(lat.unconfirmed, Some(Unconfirmed::Loaded), "{lat:?}");
    assert_eq!(accusations(&busy), Vec::<String>::new());
    // The same figures from quiet hosts are confirmed.
    let quiet = run(0.02);
    let lat = quiet.links.iter().find(|l| l.latency_outlier).unwrap();
    assert_eq!(lat.status, LinkStatus::Slow, "{lat:?}");
}

#[test]
fn bad_measurements_are_set_aside_with_a_note() {
    let f = Fleet::healthy(4);
    let mut m = f.rounds();
    m[0].gbps = Some(f64::NAN);
    let mut odd = m[1].clone();
    odd.tx = 9;
    m.push(odd);
    let r = f.report(m, Vec::new());
    assert!(
        r.notes.iter().any(|n| n.contains("not a rate")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("set aside: ranks must differ")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.matrix.len(), 4);
    assert!(r.matrix.iter().enumerate().all(|(i, row)| row[i].is_none()));
}

#[test]
fn nothing_measured_is_not_healthy() {
    let f = Fleet::healthy(4);
    let r = f.report(Vec::new(), Vec::new());
    assert!(!r.healthy);
    assert!(r.notes.iter().any(|n| n.contains("no link was measured")));
}

#[test]
fn every_single_fault_on_every_node_is_named_alone() {
    for n in 3..=12u32 {
        for v in 0..n {
            for want in [
                NodeStatus::Both,
                NodeStatus::TxDegraded,
                NodeStatus::RxDegraded,
            ] {
                let mut f = Fleet::healthy(n);
                fault(&mut f, v, want, 0.3);
                let r = f.run(Vec::new());
                expect_nodes(&r, &[(v, want)]);
            }
        }
    }
}

#[test]
fn noise_below_the_floors_is_not_a_fault() {
    let f = Fleet::healthy(6);
    let mut m = f.rounds();
    for x in &mut m {
        // Ping-pongs around 10 µs; one pair at 40 µs: 4× the median, but only 30 µs more,
        // which a TCP ping-pong on shared cores moves by scheduling alone.
        if let Some(l) = &mut x.latency {
            l.p50_us = if (x.tx.min(x.rx), x.tx.max(x.rx)) == (0, 5) {
                40.0
            } else {
                10.0
            };
        }
        // 140 retransmits against a median of 3: above ten times the fleet and above 100,
        // but below 0.1 % of the ~156,000 packets of 2 s at 0.9 Gb/s.
        x.retransmits = Some(if (x.tx, x.rx) == (1, 4) { 140 } else { 3 });
    }
    let r = f.report(m.clone(), Vec::new());
    assert!(r.healthy, "{:?}", r.worst_links());
    // Over RDMA the same latency excess is a finding: microseconds are the signal there.
    for x in &mut m {
        x.transport = Transport::Rdma;
    }
    let r = f.report(m, Vec::new());
    assert!(r.links.iter().any(|l| l.latency_outlier), "{:?}", r.links);
}

#[test]
fn every_pair_of_faults_is_named_without_a_false_positive() {
    let kinds = [
        NodeStatus::Both,
        NodeStatus::TxDegraded,
        NodeStatus::RxDegraded,
    ];
    for n in [6u32, 8, 9] {
        for a in 0..n {
            for b in (a + 1)..n {
                for ka in kinds {
                    for kb in kinds {
                        let mut f = Fleet::healthy(n);
                        fault(&mut f, a, ka, 0.3);
                        fault(&mut f, b, kb, 0.4);
                        let r = f.run(Vec::new());
                        expect_nodes(&r, &[(a, ka), (b, kb)]);
                    }
                }
            }
        }
    }
}

#[test]
fn every_triple_of_faults_among_eight_is_named_without_a_false_positive() {
    let kinds = [
        NodeStatus::Both,
        NodeStatus::TxDegraded,
        NodeStatus::RxDegraded,
    ];
    let n = 8u32;
    for a in 0..n {
        for b in (a + 1)..n {
            for c in (b + 1)..n {
                for ka in kinds {
                    for kb in kinds {
                        for kc in kinds {
                            let mut f = Fleet::healthy(n);
                            fault(&mut f, a, ka, 0.3);
                            fault(&mut f, b, kb, 0.4);
                            fault(&mut f, c, kc, 0.35);
                            let r = f.run(Vec::new());
                            expect_nodes(&r, &[(a, ka), (b, kb), (c, kc)]);
                        }
                    }
                }
            }
        }
    }
}

fn tbf(direction: ShaperDirection, rate_bps: u64) -> NodeShaper {
    NodeShaper {
        direction,
        netdev: "eth0".into(),
        via: (direction == ShaperDirection::Ingress).then(|| "ifb6".to_string()),
        kind: "tbf".into(),
        rate_bps,
    }
}

#[test]
fn a_shaped_node_is_explained_by_its_shaper_with_its_direction() {
    // The namespace scenario: every eth0 has a 1 Gbit/s egress tbf; node 5's is 0.3 Gbit/s,
    // node 6 receives through a 0.3 Gbit/s tbf on the ifb its ingress redirects to, node 2 is
    // slow both ways (its receive side is shaped outside the node, so only its egress shows).
    let mut f = Fleet::healthy(8);
    f.tx_cap[2] = 0.29;
    f.rx_cap[2] = 0.29;
    f.tx_cap[5] = 0.29;
    f.rx_cap[6] = 0.29;
    let mut entries = f.facts();
    for e in &mut entries {
        let egress = match e.facts.rank {
            2 | 5 => 300_000_000,
            _ => 1_000_000_000,
        };
        let mut s = vec![tbf(ShaperDirection::Egress, egress)];
        if e.facts.rank == 6 {
            s.push(tbf(ShaperDirection::Ingress, 300_000_000));
        }
        e.facts.shapers = Some(s);
    }
    let r = f.run_with(entries, Vec::new(), |_| {});
    expect_nodes(
        &r,
        &[
            (2, NodeStatus::Both),
            (5, NodeStatus::TxDegraded),
            (6, NodeStatus::RxDegraded),
        ],
    );
    let e = |r: &MeshReport, i: usize| r.nodes[i].explanation.clone();
    assert!(
        e(&r, 5).starts_with(
            "node05 tx-degraded: eth0 egress tbf limits it to 0.3 Gb/s, 6 of the other 7 nodes 1 Gb/s"
        ),
        "{}",
        e(&r, 5)
    );
    assert!(
        e(&r, 6).starts_with("node06 rx-degraded: eth0 ingress tbf (on ifb6) limits it to 0.3 Gb/s, the other 7 nodes have no ingress limit"),
        "{}",
        e(&r, 6)
    );
    assert!(
        e(&r, 2).starts_with(
            "node02 tx+rx-degraded: eth0 egress tbf limits it to 0.3 Gb/s, 6 of the other 7 nodes 1 Gb/s"
        ),
        "{}",
        e(&r, 2)
    );
    for (id, ranks) in [
        ("fleet.egress_limit", vec![2, 5]),
        ("fleet.ingress_limit", vec![6]),
    ] {
        assert!(
            r.fleet.iter().any(|f| f.id == id && f.ranks == ranks),
            "{id}: {:#?}",
            r.fleet
        );
    }
}

#[test]
fn each_ranks_own_identity_source_lands_in_its_entry_once() {
    use linerate_mesh::IdentitySource;
    let f = Fleet::healthy(4);
    let mut entries = f.facts();
    entries[3].identity_source = None;
    entries[3].facts.identity_source = Some(IdentitySource::Flags);
    // What rank 0 knows first-hand wins over what a rank sent.
    entries[0].facts.identity_source = Some(IdentitySource::Slurm);
    let r = build_report(MeshInput {
        schedule: ScheduleKind::Pairwise,
        size: 4,
        transport: Transport::Tcp,
        duration_s: 2.0,
        ranks: entries,
        measurements: f.rounds(),
        lost: Vec::new(),
        notes: Vec::new(),
        rendezvous: None,
        interrupted: None,
    });
    assert_eq!(r.ranks[3].identity_source, Some(IdentitySource::Flags));
    assert_eq!(r.ranks[0].identity_source, Some(IdentitySource::OpenMpi));
    assert!(r.ranks.iter().all(|e| e.facts.identity_source.is_none()));
    let v = serde_json::to_value(&r.ranks[3]).unwrap();
    assert_eq!(v["identity_source"], "flags", "{v}");
}

/// What no verdict may say about a link or a node it did not retest.
fn accusations(r: &MeshReport) -> Vec<String> {
    let mut out: Vec<String> = r
        .links
        .iter()
        .filter(|l| matches!(l.status, LinkStatus::Slow | LinkStatus::Lossy))
        .map(|l| format!("{} → {} {:?}: {}", l.tx, l.rx, l.status, l.explanation))
        .collect();
    out.extend(
        r.nodes
            .iter()
            .filter(|n| {
                matches!(
                    n.status,
                    NodeStatus::TxDegraded | NodeStatus::RxDegraded | NodeStatus::Both
                )
            })
            .map(|n| n.explanation.clone()),
    );
    out.extend(
        r.links
            .iter()
            .filter(|l| l.explanation.contains("suspect this link"))
            .map(|l| l.explanation.clone()),
    );
    out
}

#[test]
fn nothing_is_accused_before_its_retest() {
    // Every fault the model has, judged on its rounds alone: suspects, never verdicts.
    for n in [3u32, 4, 8] {
        for v in 0..n {
            for kind in [
                NodeStatus::Both,
                NodeStatus::TxDegraded,
                NodeStatus::RxDegraded,
            ] {
                let mut f = Fleet::healthy(n);
                fault(&mut f, v, kind, 0.3);
                f.bad_links.push(((v + 1) % n, (v + 2) % n, 0.2));
                let r = f.report(f.rounds(), Vec::new());
                assert_eq!(accusations(&r), Vec::<String>::new(), "n={n} v={v}");
                assert!(r.healthy, "suspects alone are not findings");
                let suspects = r
                    .links
                    .iter()
                    .filter(|l| l.status == LinkStatus::Unconfirmed)
                    .count();
                assert!(suspects > 0, "n={n} v={v}");
                for l in r
                    .links
                    .iter()
                    .filter(|l| l.status == LinkStatus::Unconfirmed)
                {
                    assert_eq!(l.unconfirmed, Some(Unconfirmed::NotRetested), "{l:?}");
                    assert!(l.explanation.contains("not retested alone"), "{l:?}");
                }
            }
        }
    }
    // A retest phase cut to nothing leaves them so, with the reason.
    let mut f = Fleet::healthy(8);
    f.tx_cap[3] = 0.3;
    f.bad_links.push((0, 5, 0.2));
    let r = f.report(f.rounds(), Vec::new());
    expect_nodes(&r, &[(3, NodeStatus::Unconfirmed)]);
    assert!(
        r.nodes[3]
            .explanation
            .starts_with("node03 unconfirmed: slow sending in its rounds (as sender 0.29"),
        "{}",
        r.nodes[3].explanation
    );
}

#[test]
fn a_node_cleared_alone_clears_every_round_link_it_was_blamed_for() {
    // The loopback case of the issue: rank 1 received slowly while two flows ran at once, and
    // fine alone. Its links are contention, with the figure of its retests alone, even those
    // the retest phase never measured on their own.
    let mut f = Fleet::healthy(4);
    for tx in [0, 2, 3] {
        f.contended.push((tx, 1, 0.3));
    }
    let r = f.run(Vec::new());
    expect_nodes(&r, &[]);
    assert!(r.healthy, "{:?}", r.worst_links());
    let n1 = &r.nodes[1];
    assert_eq!(n1.suspect, Some(NodeStatus::RxDegraded));
    assert!(n1.retest_rx_gbps.is_some_and(|g| g > 0.9), "{n1:?}");
    let retested: Vec<(u32, u32)> = r
        .measurements
        .iter()
        .filter(|m| m.phase == Phase::Retest)
        .map(|m| (m.tx, m.rx))
        .collect();
    for tx in [0, 2, 3] {
        let l = r.links.iter().find(|l| (l.tx, l.rx) == (tx, 1)).unwrap();
        assert_eq!(l.status, LinkStatus::Contention, "{l:?}");
        if !retested.contains(&(tx, 1)) {
            let c = l.cleared_by.expect("cleared by its node's retest");
            assert_eq!((c.rank, c.side), (1, NodeSide::Rx), "{l:?}");
            assert!(c.retest_gbps > 0.9, "{l:?}");
            assert!(
                l.explanation.contains("node01 received at 0.9"),
                "{}",
                l.explanation
            );
        }
    }
    assert!(
        retested.iter().any(|&(tx, rx)| rx == 1 && tx != 1),
        "{retested:?}"
    );
}

#[test]
fn a_retest_under_load_is_unconfirmed_not_a_fault() {
    // Node 3 is slow to send, and a bad cable runs 0 → 5; but other programs hold the CPU of
    // nodes 3, 0 and 5 during the retests: nothing can be confirmed, and nothing is accused.
    let mut f = Fleet::healthy(8);
    f.tx_cap[3] = 0.3;
    f.bad_links.push((0, 5, 0.2));
    f.loaded = vec![(3, 1.8), (0, 1.6), (5, 1.7)];
    let r = f.run(Vec::new());
    assert_eq!(accusations(&r), Vec::<String>::new());
    expect_nodes(&r, &[(3, NodeStatus::Unconfirmed)]);
    assert_eq!(r.nodes[3].unconfirmed, Some(Unconfirmed::Loaded));
    assert!(
        r.nodes[3]
            .explanation
            .contains("ran while other programs held 1.80 of node03's 2 cores"),
        "{}",
        r.nodes[3].explanation
    );
    let cable = r.links.iter().find(|l| (l.tx, l.rx) == (0, 5)).unwrap();
    assert_eq!(cable.status, LinkStatus::Unconfirmed, "{cable:?}");
    assert_eq!(cable.unconfirmed, Some(Unconfirmed::Loaded));
    for l in r.links.iter().filter(|l| l.tx == 3) {
        assert_eq!(l.status, LinkStatus::Unconfirmed, "{l:?}");
        assert_eq!(l.explained_by, [3], "{l:?}");
    }
    assert!(r.healthy, "unconfirmed suspects are not findings");
    // A loaded retest still confirms a node whose inventory explains it: the verdict stands on
    // the fact (here its PCIe link), not on a figure the load could have bent.
    let mut entries = f.facts();
    entries[3].facts.port.as_mut().unwrap().pcie_current = Some("5.0 GT/s x4".into());
    let r = f.run_with(entries, Vec::new(), |_| {});
    expect_nodes(&r, &[(3, NodeStatus::TxDegraded)]);
    assert!(
        r.nodes[3].explanation.contains("runs PCIe at 5.0 GT/s x4"),
        "{}",
        r.nodes[3].explanation
    );
    // The same faults on quiet hosts are confirmed; so they are by ranks that report no load.
    for quiet in [true, false] {
        let mut f = f.clone();
        f.loaded.clear();
        f.report_load = quiet;
        let r = f.run(Vec::new());
        expect_nodes(&r, &[(3, NodeStatus::TxDegraded)]);
        let cable = r.links.iter().find(|l| (l.tx, l.rx) == (0, 5)).unwrap();
        assert_eq!(cable.status, LinkStatus::Slow, "{cable:?}");
        assert!(cable.explanation.contains("suspect this link"), "{cable:?}");
    }
    // A busy host excuses a slow retest even where the rank's own threads barely waited: the
    // kernel's network processing competes with the other programs as well.
    let r = f.run_with(f.facts(), Vec::new(), |m| {
        for l in [&mut m.tx_load, &mut m.rx_load].into_iter().flatten() {
            l.waited_cores = Some(0.02);
        }
    });
    expect_nodes(&r, &[(3, NodeStatus::Unconfirmed)]);
    assert_eq!(accusations(&r), Vec::<String>::new());
}

#[test]
fn a_failed_retest_leaves_its_suspect_unconfirmed_with_the_error() {
    let mut f = Fleet::healthy(6);
    f.bad_links.push((1, 4, 0.2));
    let r = f.run_with(f.facts(), Vec::new(), |m| {
        if m.phase == Phase::Retest && (m.tx, m.rx) == (1, 4) {
            m.gbps = None;
            m.error = Some(
                "bandwidth test to 198.18.0.14:7000: the server refused the test: busy".into(),
            );
        }
    });
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (1, 4)).unwrap();
    assert_eq!(l.status, LinkStatus::Unconfirmed, "{l:?}");
    assert_eq!(l.unconfirmed, Some(Unconfirmed::RetestFailed));
    assert!(l.explanation.contains("refused the test: busy"), "{l:?}");
}

#[test]
fn links_of_a_lost_rank_are_unreachable_or_cut_short_never_a_cable() {
    // Rank 2 dies in round 2: a flow to it was cut short ("connection reset") with a rate, one
    // before it was slow; nothing after it is measured.
    let mut f = Fleet::healthy(4);
    f.dead.push((2, 2));
    let r = f.run_with(f.facts(), vec![2], |m| {
        if (m.tx, m.rx) == (0, 2) && m.phase == Phase::Round {
            m.gbps = Some(0.45);
            m.error = Some("bandwidth test to 198.18.0.12:7000: Connection reset by peer".into());
        }
        if (m.tx, m.rx) == (2, 1) && m.phase == Phase::Round && m.gbps.is_some() {
            m.gbps = Some(0.2);
        }
    });
    expect_nodes(&r, &[(2, NodeStatus::Unreachable)]);
    assert_eq!(accusations(&r), Vec::<String>::new());
    for l in r.links.iter().filter(|l| l.tx == 2 || l.rx == 2) {
        let ok = match l.status {
            LinkStatus::Unreachable | LinkStatus::CutShort => true,
            LinkStatus::Ok => l.error.is_none(),
            _ => false,
        };
        assert!(ok, "{l:?}");
    }
    let cut = r.links.iter().find(|l| (l.tx, l.rx) == (0, 2)).unwrap();
    assert_eq!(cut.status, LinkStatus::CutShort, "{cut:?}");
    assert!(
        cut.explanation.contains("Connection reset by peer"),
        "{cut:?}"
    );
    assert!(cut.explanation.contains("node02 unreachable"), "{cut:?}");
    // Nothing is retested towards a lost rank.
    assert!(r
        .measurements
        .iter()
        .filter(|m| m.phase == Phase::Retest)
        .all(|m| m.tx != 2 && m.rx != 2));
}

#[test]
fn a_measurement_that_ended_with_an_error_is_never_ok() {
    // Both ranks alive: the test was cut short, its rate looks fine. Cut short (a finding)
    // unless a retest alone runs clean.
    let f = Fleet::healthy(4);
    let cut = |m: &mut linerate_mesh::LinkMeasurement| {
        if (m.tx, m.rx) == (3, 1) && m.phase == Phase::Round {
            m.error = Some("bandwidth test to 198.18.0.11:7000: Connection reset by peer".into());
        }
    };
    let mut rounds = f.rounds();
    rounds.iter_mut().for_each(cut);
    let first = f.report(rounds, Vec::new());
    let l = first.links.iter().find(|l| (l.tx, l.rx) == (3, 1)).unwrap();
    assert_eq!(l.status, LinkStatus::CutShort, "{l:?}");
    assert!(!first.healthy);
    assert!(first
        .retest_plan(8)
        .iter()
        .any(|r| (r.flows[0].tx, r.flows[0].rx) == (3, 1)));
    let r = f.run_with(f.facts(), Vec::new(), cut);
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (3, 1)).unwrap();
    assert_eq!(l.status, LinkStatus::Ok, "{l:?}");
    assert!(
        l.error.is_some() && l.explanation.contains("alone"),
        "{l:?}"
    );
    assert!(r.healthy);
}

#[test]
fn ranks_sharing_a_host_are_named_host_slash_rank() {
    let mut f = Fleet::healthy(4);
    f.bad_links.push((3, 2, 0.2));
    let mut entries = f.facts();
    for e in &mut entries {
        e.facts.host = if e.facts.rank < 3 {
            "vm".into()
        } else {
            "other".into()
        };
    }
    let r = f.run_with(entries, Vec::new(), |_| {});
    let labels: Vec<&str> = r.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(labels, ["vm/0", "vm/1", "vm/2", "other"]);
    assert_eq!(r.host(1), "vm/1");
    assert_eq!(r.nodes[1].host, "vm");
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (3, 2)).unwrap();
    assert_eq!(l.status, LinkStatus::Slow, "{l:?}");
    // Ranks on one host that share its network stack (loopback here): a slow link or rank among
    // them is the host's CPU and scheduling, never a link or a node of its own.
    let mut f = Fleet::healthy(4);
    f.bad_links.push((1, 2, 0.2));
    f.tx_cap[3] = 0.3;
    let mut entries = f.facts();
    for e in &mut entries {
        e.facts.host = "vm".into();
        e.facts.data_addr = Some(format!("127.0.0.1:{}", 7000 + e.facts.rank));
    }
    let r = f.run_with(entries, Vec::new(), |_| {});
    assert_eq!(accusations(&r), Vec::<String>::new());
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (1, 2)).unwrap();
    assert_eq!(l.status, LinkStatus::Unconfirmed, "{l:?}");
    assert_eq!(l.unconfirmed, Some(Unconfirmed::SameHost), "{l:?}");
    assert!(
        l.explanation
            .contains("share the loopback interface: the traffic never leaves that host"),
        "{}",
        l.explanation
    );
    expect_nodes(&r, &[(3, NodeStatus::Unconfirmed)]);
    assert_eq!(r.nodes[3].unconfirmed, Some(Unconfirmed::SameHost));
    assert!(r.healthy);
}

#[test]
fn a_retest_confirms_only_what_its_suspect_was_suspected_of() {
    // 1 → 4 is slow in its round only; its retest alone is at full rate but retransmits a lot:
    // not slow, so contention (its loss alone was never a suspicion of the rounds).
    let mut f = Fleet::healthy(6);
    f.contended.push((1, 4, 0.3));
    let r = f.run_with(f.facts(), Vec::new(), |m| {
        if m.phase == Phase::Retest && (m.tx, m.rx) == (1, 4) {
            m.retransmits = Some(50_000);
        }
    });
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (1, 4)).unwrap();
    assert_eq!(l.status, LinkStatus::Contention, "{l:?}");
    assert!(r.healthy);
}

/// A delay on one node's link lengthens every round trip through it: n−1 of the n(n−1)/2
/// pairs, half of them at n = 4, so the fleet's typical round trip is its lower quartile, not
/// its median. Every late pair is put down to that node, its retests alone confirm it, and no
/// pair without it is blamed.
#[test]
fn a_node_whose_every_round_trip_is_late_is_named() {
    for n in [3u32, 4, 6, 8] {
        let late = n - 1;
        let f = Fleet::healthy(n);
        let r = f.run_with(f.facts(), Vec::new(), |x| {
            if let Some(l) = &mut x.latency {
                if x.tx == late || x.rx == late {
                    l.p50_us = 20_000.0;
                    l.p99_us = 30_000.0;
                }
            }
        });
        expect_nodes(&r, &[]);
        let outliers: Vec<_> = r.links.iter().filter(|l| l.latency_outlier).collect();
        assert_eq!(outliers.len() as u32, n - 1, "n={n}: {outliers:#?}");
        for l in &outliers {
            assert!(l.tx == late || l.rx == late, "n={n}: {l:?}");
            assert_eq!(l.status, LinkStatus::Slow, "n={n}: {l:?}");
            assert_eq!(l.explained_by, [late], "n={n}: {l:?}");
            assert!(
                l.explanation
                    .contains("a round trip cannot tell in which direction"),
                "{}",
                l.explanation
            );
        }
        assert!(
            r.links
                .iter()
                .filter(|l| l.status.is_bad())
                .all(|l| l.latency_outlier),
            "n={n}"
        );
        assert!(
            r.nodes[late as usize].explanation.contains("are late"),
            "{:?}",
            r.nodes[late as usize]
        );
        assert!(!r.healthy);
    }
}

/// Two late nodes are each named; a pair between two healthy nodes is not.
#[test]
fn two_late_nodes_are_both_named() {
    let f = Fleet::healthy(6);
    let r = f.run_with(f.facts(), Vec::new(), |x| {
        if let Some(l) = &mut x.latency {
            if [1, 4].contains(&x.tx) || [1, 4].contains(&x.rx) {
                l.p50_us = 5_000.0;
            }
        }
    });
    for l in r.links.iter().filter(|l| l.latency.is_some()) {
        let through = [1, 4].contains(&l.tx) || [1, 4].contains(&l.rx);
        assert_eq!(l.latency_outlier, through, "{l:?}");
        if through {
            assert!(l.explained_by == [1] || l.explained_by == [4], "{l:?}");
        }
    }
}

/// Retransmits are judged as a share of the packets sent. A fleet whose shaped links all
/// retransmit about 0.5 % (as tbf makes a real kernel's TCP do, `lab_captures.rs`) is healthy,
/// and a link losing 2 % of its packets among them is lossy, though its 2 % of a short test's
/// packets is fewer than the 100 retransmits the earlier rule required.
#[test]
fn loss_is_a_share_of_the_packets_sent() {
    let f = Fleet::healthy(4);
    // 2 s at ~0.9 Gb/s is ~155,000 packets: 0.5 % is ~780, 2 % ~3,100.
    let packets = |g: f64| g * 1e9 * 2.0 / 8.0 / 1448.0;
    let shaped = f.run_with(f.facts(), Vec::new(), |x| {
        let p = packets(x.gbps.unwrap_or(0.0));
        x.retransmits = Some((p * 0.005) as u64);
    });
    assert!(shaped.healthy, "{:#?}", shaped.worst_links());
    let lossy = f.run_with(f.facts(), Vec::new(), |x| {
        let p = packets(x.gbps.unwrap_or(0.0));
        let share = if (x.tx, x.rx) == (3, 0) { 0.02 } else { 0.005 };
        x.retransmits = Some((p * share) as u64);
    });
    let l = lossy.links.iter().find(|l| (l.tx, l.rx) == (3, 0)).unwrap();
    assert_eq!(l.status, LinkStatus::Lossy, "{l:#?}");
    assert!(
        l.explanation.contains(" 2.00% of the packets sent"),
        "{}",
        l.explanation
    );
    assert!(
        lossy
            .links
            .iter()
            .filter(|l| (l.tx, l.rx) != (3, 0))
            .all(|l| !l.status.is_bad()),
        "{:#?}",
        lossy.worst_links()
    );
}
