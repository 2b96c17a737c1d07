//! Verdicts on synthetic runs of the model fleet of `common`.

mod common;

use common::Fleet;
use linerate_mesh::{
    build_report, LinkStatus, MeshInput, MeshLatency, MeshReport, NodeStatus, Phase, RankId,
    ScheduleKind, Transport,
};

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
    for n in [3, 4, 8, 16, 33] {
        let mut f = Fleet::healthy(n);
        f.tx_cap[2] = 0.29;
        f.rx_cap[2] = 0.29;
        let r = f.report(f.rounds(), Vec::new());
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
        let r = f.report(f.rounds(), Vec::new());
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
        let r = f.report(f.rounds(), Vec::new());
        expect_nodes(&r, &[(n - 1, NodeStatus::RxDegraded)]);
    }
}

#[test]
fn a_dead_rank_is_unreachable_with_or_without_the_coordinator_saying_so() {
    for lost in [vec![6], vec![]] {
        let mut f = Fleet::healthy(8);
        f.dead.push((6, 5));
        let r = f.report(f.rounds(), lost.clone());
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
    let r = f.report(f.rounds(), vec![7]);
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
    let r = build_report(MeshInput {
        schedule: ScheduleKind::Pairwise,
        size: 16,
        transport: Transport::Tcp,
        duration_s: 2.0,
        ranks: entries,
        measurements: f.rounds(),
        lost: Vec::new(),
        notes: Vec::new(),
    });
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
    let r = f.report(f.rounds(), Vec::new());
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
    expect_nodes(&first, &[(3, NodeStatus::TxDegraded)]);
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
    assert!(r
        .links
        .iter()
        .filter(|l| l.tx == 3)
        .all(|l| l.status == LinkStatus::Contention));
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
    let r = f.report(f.rounds(), Vec::new());
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
    let r = f.report(f.rounds(), Vec::new());
    expect_nodes(&r, &[]);
}

#[test]
fn three_ranks_single_bad_link_blames_no_node() {
    let mut f = Fleet::healthy(3);
    f.bad_links.push((2, 0, 0.2));
    let r = f.report(f.rounds(), Vec::new());
    expect_nodes(&r, &[]);
    let l = r.links.iter().find(|l| (l.tx, l.rx) == (2, 0)).unwrap();
    assert_eq!(l.status, LinkStatus::Slow);
    assert!(l.explained_by.is_empty());
}

#[test]
fn lossy_and_latency_outliers() {
    let f = Fleet::healthy(6);
    let mut m = f.rounds();
    for x in &mut m {
        if (x.tx, x.rx) == (1, 4) {
            x.retransmits = Some(50_000);
        }
        if x.latency.is_some() && (x.tx.min(x.rx), x.tx.max(x.rx)) == (0, 5) {
            x.latency = Some(MeshLatency {
                p50_us: 400.0,
                p99_us: 900.0,
            });
        }
    }
    let r = f.report(m, Vec::new());
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
                if want != NodeStatus::RxDegraded {
                    f.tx_cap[v as usize] = 0.3;
                }
                if want != NodeStatus::TxDegraded {
                    f.rx_cap[v as usize] = 0.3;
                }
                let r = f.report(f.rounds(), Vec::new());
                expect_nodes(&r, &[(v, want)]);
            }
        }
    }
}
