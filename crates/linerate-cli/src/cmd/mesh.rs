//! `linerate mesh`: one rank of a cluster run. Rank 0 also runs the coordinator and writes the
//! outputs; the other ranks print nothing but errors (and, when rank 0 dies, what they measured).

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context};
use linerate_cluster::coordinator::{self, CoordEvent, CoordinatorConfig, MeshRun};
use linerate_cluster::rank::{self, RankConfig};
use linerate_cluster::rendezvous::{self, Coordinator, Request, DEFAULT_COORDINATOR_PORT};
use linerate_mesh::{
    build_report, FactsInput, Identity, LaunchArgs, LinkMeasurement, MeshInput, MeshReport,
    NodeFacts, RankEntry, RankId, Schedule, ScheduleKind, Transport,
};
use linerate_proto::{Limits, Psk};
use linerate_units::fmt_round;
use serde::Serialize;

use crate::cli::MeshArgs;
use crate::cmd::{EXIT_CANNOT_RUN, EXIT_FINDINGS};
use crate::out::print;
use std::path::Path;
use std::sync::Arc;

/// This host's name, as the kernel has it.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn hosts(a: &MeshArgs) -> anyhow::Result<Vec<String>> {
    a.hosts.as_deref().map_or(Ok(Vec::new()), |h| {
        linerate_mesh::hostlist::expand(h).map_err(|e| anyhow::anyhow!("--hosts {h:?}: {e}"))
    })
}

fn identity(a: &MeshArgs, hosts: &[String]) -> anyhow::Result<Identity> {
    let args = LaunchArgs {
        rank: a.rank,
        size: a.size,
        hosts: hosts.to_vec(),
        self_name: a.self_name.clone(),
    };
    Ok(linerate_mesh::identify(
        &args,
        &|k| std::env::var(k).ok(),
        &hostname(),
    )?)
}

/// Where rank 0's coordinator is (linerate-cluster's rendezvous: `--coordinator`, PMIx,
/// `--rendezvous-dir`, the launcher's host lists); on rank 0, its listener.
fn find_coordinator(a: &MeshArgs, id: &Identity, hosts: &[String]) -> anyhow::Result<Coordinator> {
    let req = Request {
        rank: id.rank,
        size: id.size,
        coordinator: a.coordinator.clone(),
        rendezvous_dir: a.rendezvous_dir.clone(),
        job: a.job.clone(),
        hosts: hosts.to_vec(),
        port: DEFAULT_COORDINATOR_PORT,
        advertise: a.bind,
        timeout: Duration::from_millis(a.join_timeout.max(1000)),
    };
    Ok(rendezvous::find_coordinator(&req, &|k| {
        std::env::var(k).ok()
    })?)
}

fn schedule(a: &MeshArgs, size: u32, hosts: &[String]) -> anyhow::Result<Schedule> {
    let s = a.schedule.as_str();
    let sched = match s {
        "pairwise" => linerate_mesh::pairwise(size),
        "ring" => linerate_mesh::ring(size),
        "quick" => linerate_mesh::quick(size),
        _ if s.starts_with("incast:") => {
            let k = s["incast:".len()..].parse::<u32>().map_err(|_| {
                anyhow::anyhow!("--schedule {s}: expected incast:K with K a number of senders")
            })?;
            linerate_mesh::incast(size, k).map_err(|e| anyhow::anyhow!("--schedule {s}: {e}"))?
        }
        _ if s.starts_with("file:") => {
            let path = &s["file:".len()..];
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--schedule {s}: cannot read {path}"))?;
            linerate_mesh::parse_round_file(&text, size, hosts)
                .map_err(|e| anyhow::anyhow!("--schedule {s}: {e}"))?
        }
        _ => bail!("--schedule {s}: expected pairwise, ring, quick, incast:K or file:PATH"),
    };
    Ok(sched)
}

/// The options whose outputs are not in this build yet: said, not faked.
fn unwired(a: &MeshArgs) -> anyhow::Result<()> {
    for (set, flag) in [(a.csv.is_some(), "--csv"), (a.report.is_some(), "--report")] {
        if set {
            bail!("{flag} is not available in this build yet (the mesh renderers are not merged): use --json for the document, --json-stream for the measurements");
        }
    }
    Ok(())
}

/// One `--json-stream` line: a measurement as it happens.
#[derive(Debug, Serialize)]
struct StreamLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(flatten)]
    m: &'a LinkMeasurement,
    tx_host: Option<&'a str>,
    rx_host: Option<&'a str>,
    tx_addr: Option<&'a str>,
    rx_addr: Option<&'a str>,
}

fn stream_line(m: &LinkMeasurement, nodes: &[Option<NodeFacts>]) {
    let node = |r: u32| nodes.get(r as usize).and_then(Option::as_ref);
    let line = StreamLine {
        kind: "measurement",
        m,
        tx_host: node(m.tx).map(|n| n.host.as_str()),
        rx_host: node(m.rx).map(|n| n.host.as_str()),
        tx_addr: node(m.tx).and_then(|n| n.data_addr.as_deref()),
        rx_addr: node(m.rx).and_then(|n| n.data_addr.as_deref()),
    };
    match serde_json::to_string(&line) {
        Ok(s) => {
            let _ = print(&format!("{s}\n"));
        }
        Err(e) => eprintln!("linerate mesh: encoding a --json-stream line: {e}"),
    }
}

/// One measurement as a text line.
fn text_line(m: &LinkMeasurement) -> String {
    let num = |v: Option<f64>, d| v.map_or_else(|| "-".to_string(), |v| fmt_round(v, d));
    format!(
        "  {:>5} {:>4} → {:<4} {:>9} Gb/s  p50 {:>8} µs  p99 {:>8} µs  retransmits {:>6}  {}",
        format!("{:?}", m.phase).to_lowercase(),
        m.tx,
        m.rx,
        num(m.gbps, 3),
        num(m.latency.map(|l| l.p50_us), 1),
        num(m.latency.map(|l| l.p99_us), 1),
        m.retransmits.map_or_else(|| "-".into(), |r| r.to_string()),
        m.error.as_deref().unwrap_or("")
    )
}

/// This node's facts from its probe, for the interface that carries `data` (only the host
/// name and address where probe cannot run).
fn describe(rank: RankId, data: SocketAddr) -> NodeFacts {
    let host = hostname();
    let addr = data.to_string();
    let port = linerate_engine::sys::interface_of(data.ip());
    match linerate_inventory::probe(Path::new("/")) {
        Ok(inv) => {
            let analysis = linerate_rules::analyze(&inv);
            let input = FactsInput {
                rank,
                host: &host,
                data_addr: Some(&addr),
                port: port.as_deref(),
            };
            linerate_mesh::node_facts(&input, &inv, &analysis)
        }
        Err(_) => NodeFacts {
            rank,
            host,
            data_addr: Some(addr),
            ..NodeFacts::default()
        },
    }
}

struct Common {
    id: Identity,
    coordinator: SocketAddr,
    psk: Option<Psk>,
    transport: Transport,
}

fn rank_config(a: &MeshArgs, c: &Common) -> RankConfig {
    let rank = c.id.rank;
    RankConfig {
        rank: c.id.rank,
        size: c.id.size,
        coordinator: c.coordinator,
        psk: c.psk.clone(),
        bind: a.bind,
        data_port: a.data_port,
        facts: NodeFacts {
            rank: c.id.rank,
            host: hostname(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
            ..NodeFacts::default()
        },
        describe: Some(Arc::new(move |data| describe(rank, data))),
        join_timeout: Duration::from_millis(a.join_timeout.max(1000)),
        heartbeat_timeout: Duration::from_millis(a.heartbeat_timeout.max(1000)),
        rdma_provider: a.provider.clone(),
        limits: Limits::default(),
    }
}

/// Rank 0: the coordinator here, this node's own rank beside it.
fn run_rank0(
    a: &MeshArgs,
    c: &Common,
    listener: TcpListener,
    sched: &Schedule,
) -> anyhow::Result<u8> {
    let rcfg = rank_config(a, c);
    let own = thread::spawn(move || rank::run(&rcfg, &mut |_| {}));
    let cfg = CoordinatorConfig {
        size: c.id.size,
        psk: c.psk.clone(),
        join_timeout: Duration::from_millis(a.join_timeout.max(1000)),
        heartbeat_timeout: Duration::from_millis(a.heartbeat_timeout.max(1000)),
        transport: c.transport,
        duration_ms: a.time.max(100),
        max_concurrent_pairs: a.max_concurrent_pairs,
    };
    // Each rank's host and address, for the stream lines, as the ranks join.
    let mut nodes: Vec<Option<NodeFacts>> = vec![None; c.id.size as usize];
    let mut on_event = |e: CoordEvent| match e {
        CoordEvent::Joined { rank, facts, .. } => {
            if let Some(n) = nodes.get_mut(rank as usize) {
                *n = Some(*facts);
            }
        }
        CoordEvent::RoundStarted { .. } => {}
        CoordEvent::Refused { peer, reason } => {
            eprintln!("linerate mesh: refused a connection from {peer}: {reason}");
        }
        CoordEvent::Lost { rank, reason } => {
            eprintln!("linerate mesh: rank {rank} unreachable: {reason}");
        }
        CoordEvent::Measured(m) => {
            if a.json_stream {
                stream_line(&m, &nodes);
            }
        }
    };
    let mut retest =
        |run: &MeshRun| mesh_report(a, c, sched.kind, run).retest_plan(retest_rounds(c.id.size));
    let run: MeshRun = coordinator::run(listener, &cfg, sched, &mut retest, &mut on_event);
    match own.join() {
        Ok(Err(e)) => eprintln!("linerate mesh: {e}"),
        Ok(Ok(r)) => {
            if let Some(e) = r.error {
                eprintln!("linerate mesh: {e}");
            }
        }
        Err(_) => eprintln!("linerate mesh: rank 0's own rank failed"),
    }
    let report = mesh_report(a, c, sched.kind, &run);
    output(a, &report)?;
    Ok(if report.healthy { 0 } else { EXIT_FINDINGS })
}

/// The retest phase's bound: two rounds per node (a degraded node against two good peers per
/// direction) covers every node once; bad links beyond that are not retested.
fn retest_rounds(size: u32) -> usize {
    2 * size as usize
}

/// linerate-mesh's verdicts on what the coordinator gathered.
fn mesh_report(a: &MeshArgs, c: &Common, kind: ScheduleKind, run: &MeshRun) -> MeshReport {
    let ranks = run
        .nodes
        .iter()
        .flatten()
        .map(|f| RankEntry {
            facts: f.clone(),
            identity_source: (f.rank == c.id.rank).then_some(c.id.source),
        })
        .collect();
    let mut lost: Vec<RankId> = run.unreachable.iter().map(|(r, _)| *r).collect();
    lost.sort_unstable();
    lost.dedup();
    let mut notes = c.id.notes.clone();
    notes.extend(
        run.unreachable
            .iter()
            .map(|(r, why)| format!("rank {r} unreachable: {why}")),
    );
    build_report(MeshInput {
        schedule: kind,
        size: run.size,
        transport: c.transport,
        duration_s: a.time as f64 / 1000.0,
        ranks,
        measurements: run.measurements.clone(),
        lost,
        notes,
    })
}

/// Rank 0's outputs: the JSON document, or the verdicts as text (the measurements themselves
/// went out as they happened with --json-stream).
fn output(a: &MeshArgs, r: &MeshReport) -> anyhow::Result<()> {
    if a.json {
        let mut s = serde_json::to_string_pretty(r).context("encoding the mesh document")?;
        s.push('\n');
        print(&s)?;
        return Ok(());
    }
    if a.json_stream {
        return Ok(());
    }
    let mut out = format!(
        "linerate mesh: {} ranks, {} measurements, reference {} Gb/s\n",
        r.size,
        r.measurements.len(),
        r.reference_gbps
            .map_or_else(|| "-".to_string(), |g| fmt_round(g, 3))
    );
    for n in &r.nodes {
        let tx = n
            .tx_median_gbps
            .map_or_else(|| "-".into(), |g| fmt_round(g, 3));
        let rx = n
            .rx_median_gbps
            .map_or_else(|| "-".into(), |g| fmt_round(g, 3));
        let _ = writeln!(
            out,
            "  node {:>4} {:<16} {:<15} tx {tx:>8} Gb/s  rx {rx:>8} Gb/s  {}",
            n.rank,
            n.host,
            n.status.as_str(),
            n.explanation
        );
    }
    for l in r.worst_links() {
        let _ = writeln!(
            out,
            "  link {:>4} → {:<4} {:<12} {}",
            l.tx,
            l.rx,
            l.status.as_str(),
            l.explanation
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    print(&out)?;
    Ok(())
}

pub fn run(a: &MeshArgs) -> anyhow::Result<u8> {
    unwired(a)?;
    let hosts = hosts(a)?;
    let id = identity(a, &hosts)?;
    for n in &id.notes {
        eprintln!("linerate mesh: {n}");
    }
    let psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    let mut found = find_coordinator(a, &id, &hosts)?;
    let coordinator = found.resolve(Duration::from_millis(a.join_timeout.max(1000)))?;
    let c = Common {
        coordinator,
        psk,
        transport: if a.rdma {
            Transport::Rdma
        } else {
            Transport::Tcp
        },
        id,
    };
    if let Some(listener) = found.listener.take() {
        let sched = schedule(a, c.id.size, &hosts)?;
        // `found` lives until the run ends: rank 0's rendezvous file is removed when it drops.
        let code = run_rank0(a, &c, listener, &sched);
        drop(found);
        return code;
    }
    let r = rank::run(&rank_config(a, &c), &mut |_| {})?;
    match r.error {
        None => Ok(0),
        Some(e) => {
            eprintln!("linerate mesh: {e}; this rank's own measurements follow");
            if a.json_stream {
                for m in &r.measurements {
                    stream_line(m, &[]);
                }
            } else {
                for m in &r.measurements {
                    eprintln!("{}", text_line(m));
                }
            }
            Ok(EXIT_CANNOT_RUN)
        }
    }
}
