//! `linerate mesh`'s renderers on constructed runs: the terminal text and its heatmap, the CSV
//! matrix and the HTML report.

use linerate_mesh::{
    build_report, pairwise, IdentitySource, LinkMeasurement, MeshInput, MeshReport, NodeFacts,
    Phase, PortFacts, RankEntry, RendezvousInfo, RendezvousSkip, ScheduleKind, Transport,
};
use linerate_report::{mesh_csv, mesh_html, render_mesh, Style};

/// `n` ranks on the pairwise schedule, then the retests alone its first report asks for; node
/// 2 slow both ways, node 5 slow sending, rank `dead` measuring nothing; node 2's card in a
/// narrower PCIe link than the others'.
fn run(n: u32, dead: Option<u32>) -> MeshReport {
    let cap = |r: u32, tx: bool| -> f64 {
        match (r, tx) {
            (2, _) => 0.29,
            (5, true) => 0.38,
            _ => 0.94,
        }
    };
    let measure = |phase: Phase, round: usize, tx: u32, rx: u32, concurrency: usize| {
        let lost = dead.is_some_and(|d| d == tx || d == rx);
        LinkMeasurement {
            phase,
            round: round as u32,
            tx,
            rx,
            transport: Transport::Tcp,
            concurrency: concurrency as u32,
            gbps: (!lost).then(|| cap(tx, true).min(cap(rx, false))),
            latency: None,
            retransmits: Some(3),
            error: lost.then(|| "connection refused".to_string()),
            tx_load: None,
            rx_load: None,
        }
    };
    let rounds = pairwise(n).rounds;
    let mut measurements: Vec<LinkMeasurement> = rounds
        .iter()
        .enumerate()
        .flat_map(|(i, round)| {
            round
                .flows
                .iter()
                .map(move |f| measure(Phase::Round, i, f.tx, f.rx, round.flows.len()))
        })
        .collect();
    let ranks: Vec<RankEntry> = (0..n)
        .map(|r| RankEntry {
            facts: NodeFacts {
                rank: r,
                host: format!("node{r:02}"),
                port: Some(PortFacts {
                    name: "ib0".into(),
                    card: Some("ConnectX-3 (MT27500)".into()),
                    pcie_current: Some(if r == 2 { "5.0 GT/s x4" } else { "8.0 GT/s x8" }.into()),
                    ..PortFacts::default()
                }),
                ..NodeFacts::default()
            },
            identity_source: Some(IdentitySource::Slurm),
        })
        .collect();
    let report = |measurements: Vec<LinkMeasurement>| {
        build_report(MeshInput {
            schedule: ScheduleKind::Pairwise,
            size: n,
            transport: Transport::Tcp,
            duration_s: 2.0,
            ranks: ranks.clone(),
            measurements,
            lost: dead.into_iter().collect(),
            notes: Vec::new(),
            rendezvous: None,
            interrupted: None,
        })
    };
    let plan = report(measurements.clone()).retest_plan(2 * n as usize);
    for (i, r) in plan.iter().enumerate() {
        let f = r.flows[0];
        measurements.push(measure(Phase::Retest, rounds.len() + i, f.tx, f.rx, 1));
    }
    report(measurements)
}

#[test]
fn text_names_each_fault_and_draws_the_heatmap() {
    let r = run(8, Some(7));
    let t = render_mesh(&r, Style::PLAIN, true);
    assert!(t.contains("UNHEALTHY"), "{t}");
    let line = |host: &str| {
        t.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(host))
            .unwrap_or_else(|| panic!("{host} in\n{t}"))
            .to_string()
    };
    assert!(
        line("node02")
            .contains("tx+rx-degraded: its ConnectX-3 (MT27500) runs PCIe at 5.0 GT/s x4"),
        "{}",
        line("node02")
    );
    assert!(line("node05").contains("tx-degraded"), "{}", line("node05"));
    assert!(line("node07").contains("unreachable"), "{}", line("node07"));
    assert!(
        line("node00").trim_end().ends_with("ok"),
        "{}",
        line("node00")
    );
    // The heatmap: node 2's row and column light, node 7's failed, the diagonal blank.
    let row = |host: &str| {
        t.lines()
            .filter(|l| l.trim_start().starts_with(host))
            .find(|l| l.contains('█') || l.contains('×') || l.contains('░'))
            .unwrap_or_else(|| panic!("heatmap row {host} in\n{t}"))
            .to_string()
    };
    // The cells start two spaces after the host; each is drawn two characters wide.
    let cells = |l: &str, host: &str| -> Vec<char> {
        let at = l.find(host).unwrap() + host.len() + 2;
        l[at..].chars().step_by(2).collect()
    };
    let r0 = row("node00");
    assert_eq!(
        cells(&r0, "node00"),
        [' ', '█', '░', '█', '█', '█', '█', '×'],
        "{r0}"
    );
    let r2 = row("node02");
    assert!(r2.contains("░░░░"), "{r2}");
    assert!(t.contains("worst links"), "{t}");
    assert!(t.contains("node02 → node00"), "{t}");
    assert!(t.contains("fleet.pcie_link"), "{t}");
    // ASCII fallback: no block characters at all.
    let a = render_mesh(&r, Style::PLAIN, false);
    assert!(
        !a.contains('█') && !a.contains('░') && a.contains("##"),
        "{a}"
    );
    assert!(
        a.chars()
            .filter(|c| !c.is_ascii())
            .all(|c| "→≥×·".contains(c)),
        "{a}"
    );
}

#[test]
fn a_healthy_run_says_so_and_large_runs_skip_the_heatmap() {
    let r = run(2, None);
    let t = render_mesh(&r, Style::PLAIN, true);
    assert!(t.contains("UNHEALTHY") || t.contains("HEALTHY"));
    let big = run(70, None);
    let t = render_mesh(&big, Style::PLAIN, true);
    assert!(!t.contains("heatmap"), "no heatmap above 64 nodes");
    assert!(t.contains("node69"));
    let t = render_mesh(&run(8, None), Style { color: true }, true);
    assert!(t.contains("\u{1b}["), "colored output has ANSI styles");
}

#[test]
fn csv_is_the_matrix_with_hosts() {
    let r = run(4, Some(3));
    let csv = mesh_csv(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "tx\\rx,node00,node01,node02,node03");
    assert_eq!(lines[1], "node00,,0.94,0.29,");
    assert_eq!(lines[3], "node02,0.29,0.29,,");
    assert_eq!(lines.len(), 5);
    assert!(lines.iter().all(|l| l.split(',').count() == 5));
}

#[test]
fn html_is_self_contained_with_heatmap_bars_links_and_fleet() {
    let r = run(8, Some(7));
    let h = mesh_html(&r);
    assert!(h.starts_with("<!DOCTYPE html>") && h.trim_end().ends_with("</html>"));
    for id in [
        "id=\"heatmap\"",
        "id=\"node-bars\"",
        "id=\"worst-links\"",
        "id=\"fleet\"",
        "id=\"nodes\"",
        "id=\"verdict\"",
    ] {
        assert!(h.contains(id), "{id}");
    }
    assert!(!h.contains("<script") && !h.contains("src=") && !h.contains("href="));
    // 8 × 7 cells, each with its verdict as a tooltip.
    assert_eq!(
        h.matches("<rect x=").count() - 2 * 7,
        56,
        "heatmap cells plus tx/rx bars of 7 live nodes"
    );
    assert!(h.contains("node02 → node00: slow"), "tooltip");
    assert!(h.contains("its ConnectX-3 (MT27500) runs PCIe at 5.0 GT/s x4"));
    // Escaping: a host name with markup stays text.
    let mut odd = run(3, None);
    odd.nodes[0].label = "<b>x&y</b>".into();
    let h = mesh_html(&odd);
    assert!(h.contains("&lt;b&gt;x&amp;y&lt;/b&gt;") && !h.contains("<b>x"));
}

#[test]
fn html_of_a_large_fleet_draws_only_the_cells_that_are_not_healthy() {
    let r = run(100, None);
    let h = mesh_html(&r);
    // One square for everything healthy, a cell for each slow link (node 2's row and column,
    // node 5's row), and the tx and rx bars of every node.
    let slow: usize = r
        .links
        .iter()
        .filter(|l| l.fraction_of_reference.is_some_and(|f| f < 0.8))
        .count();
    let rects = h.matches("<rect x=").count();
    assert_eq!(
        rects,
        1 + slow + 2 * 100,
        "heatmap background, slow cells, bars"
    );
    assert!(h.len() < 2_000_000, "{} bytes", h.len());
}

#[test]
fn text_says_how_the_coordinator_was_found_in_one_line() {
    let mut r = run(4, None);
    let t = render_mesh(&r, Style::PLAIN, true);
    assert!(!t.contains("found by"), "{t}");
    let skip = |method: &str, label: &str, why: &str| RendezvousSkip {
        method: method.into(),
        label: label.into(),
        why: why.into(),
    };
    r.rendezvous = Some(RendezvousInfo {
        method: "host_list".into(),
        label: "--hosts".into(),
        addr: "node00:5302".into(),
        skipped: vec![
            skip("flag", "--coordinator", "not given"),
            skip("pmix", "PMIx", "no PMIX_RANK"),
        ],
    });
    let t = render_mesh(&r, Style::PLAIN, true);
    assert!(t.contains("\n  rank numbers from slurm (4)\n"), "{t}");
    let lines: Vec<&str> = t.lines().filter(|l| l.contains("found by")).collect();
    assert_eq!(
        lines,
        ["  coordinator at node00:5302, found by --hosts (passed over: --coordinator: not given; PMIx: no PMIX_RANK)"],
        "{t}"
    );
}

/// Three ranks on one host (`vm`), 2 → 0 slow in its round and in a retest that ran while other
/// programs held the CPU; rank 0 stopped by a signal after that.
fn shared_host_loaded_and_interrupted() -> MeshReport {
    let busy = linerate_mesh::HostLoad {
        cores: 2,
        other_cores: 1.8,
        steal_cores: 0.0,
        idle_cores: 0.0,
        rank_cores: Some(0.6),
        waited_cores: Some(0.7),
        seconds: 1.0,
    };
    let m = |phase: Phase, round: u32, tx: u32, rx: u32, gbps: f64| LinkMeasurement {
        phase,
        round,
        tx,
        rx,
        transport: Transport::Tcp,
        concurrency: 1,
        gbps: Some(gbps),
        latency: None,
        retransmits: Some(0),
        error: None,
        tx_load: Some(busy),
        rx_load: Some(busy),
    };
    let mut ms: Vec<LinkMeasurement> = (0..3)
        .flat_map(|tx| (0..3).filter(move |&rx| rx != tx).map(move |rx| (tx, rx)))
        .enumerate()
        .map(|(i, (tx, rx))| {
            let g = if (tx, rx) == (2, 0) { 2.0 } else { 9.0 };
            m(Phase::Round, i as u32, tx, rx, g)
        })
        .collect();
    ms.push(m(Phase::Retest, 6, 2, 0, 2.5));
    build_report(MeshInput {
        schedule: ScheduleKind::Pairwise,
        size: 3,
        transport: Transport::Tcp,
        duration_s: 1.0,
        ranks: (0..3)
            .map(|r| RankEntry {
                facts: NodeFacts {
                    rank: r,
                    host: "vm".into(),
                    ..NodeFacts::default()
                },
                identity_source: Some(IdentitySource::Slurm),
            })
            .collect(),
        measurements: ms,
        lost: Vec::new(),
        notes: Vec::new(),
        rendezvous: None,
        interrupted: Some("rank 0 was stopped by SIGTERM during the retest phase (step 1)".into()),
    })
}

#[test]
fn text_and_html_say_what_is_unconfirmed_why_and_that_the_run_was_cut() {
    let r = shared_host_loaded_and_interrupted();
    let t = render_mesh(&r, Style::PLAIN, true);
    assert!(t.contains("UNHEALTHY: nothing judged bad"), "{t}");
    assert!(
        t.contains("1 link(s) slow in their round left unconfirmed"),
        "{t}"
    );
    assert!(
        t.contains("INTERRUPTED: rank 0 was stopped by SIGTERM during the retest phase"),
        "{t}"
    );
    assert!(t.contains("unconfirmed (of 1)"), "{t}");
    let line = t
        .lines()
        .find(|l| l.contains("vm/2 → vm/0"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        line.contains("other programs held 1.80 of vm/2's 2 cores"),
        "{line}"
    );
    // Each rank by host/rank: the node lines and the heatmap rows.
    for label in ["vm/0", "vm/1", "vm/2"] {
        assert!(
            t.lines().filter(|l| l.contains(label)).count() >= 2,
            "{label}: {t}"
        );
    }
    assert!(!t.contains("worst links"), "nothing bad: {t}");
    let h = mesh_html(&r);
    assert!(
        h.contains("Interrupted: rank 0 was stopped by SIGTERM"),
        "{h}"
    );
    assert!(
        h.contains("vm/2 → vm/0") && h.contains(">unconfirmed<"),
        "{h}"
    );
    let csv = mesh_csv(&r);
    assert_eq!(csv.lines().next(), Some("tx\\rx,vm/0,vm/1,vm/2"));
}
