//! `linerate mesh`: one rank of a cluster run. Rank 0 also runs the coordinator and writes the
//! outputs; the other ranks print nothing but errors (and, when rank 0 dies, what they measured).

use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context};
use linerate_cluster::coordinator::{self, CoordEvent, CoordinatorConfig, Interrupted, MeshRun};
use linerate_cluster::rank::{self, RankConfig};
use linerate_cluster::rendezvous::{self, Coordinator, Request, DEFAULT_COORDINATOR_PORT};
use linerate_mesh::{
    build_report, FactsInput, Identity, IdentitySource, LaunchArgs, LinkMeasurement, MeshInput,
    MeshReport, NodeFacts, NodeShaper, RankEntry, RankId, RendezvousInfo, RendezvousSkip, Schedule,
    ScheduleKind, ShaperDirection, Transport,
};
use linerate_proto::{Limits, Psk};
use linerate_report::Style;
use linerate_units::fmt_round;

use crate::cli::MeshArgs;
use crate::cmd::{EXIT_CANNOT_RUN, EXIT_FINDINGS};
use crate::out::print;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize};
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

/// One `--json-stream` line (`schemas/mesh-event.schema.json`): a measurement as it happens.
fn stream_line(m: &LinkMeasurement, nodes: &[NodeFacts]) {
    match serde_json::to_string(&linerate_mesh::mesh_event(m, nodes)) {
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

/// The rate limits on `netdev`: its own egress, and the egress of every device its ingress
/// filters redirect to (an `ifb`); `None` when netlink could not be read.
fn shapers_on(netdev: &str) -> Option<Vec<NodeShaper>> {
    use linerate_inventory::qdisc;
    let root = Path::new("/");
    let shaper = |s: qdisc::Shaper, direction, via: Option<&String>| NodeShaper {
        direction,
        netdev: netdev.to_string(),
        via: via.cloned(),
        kind: s.kind,
        rate_bps: s.rate_bps,
    };
    let mut out: Vec<NodeShaper> = qdisc::shapers_of(root, netdev)
        .ok()?
        .into_iter()
        .map(|s| shaper(s, ShaperDirection::Egress, None))
        .collect();
    // No ingress qdisc is the common case: the kernel refuses the dump, which is no limit.
    for ifb in qdisc::ingress_redirects_of(root, netdev).unwrap_or_default() {
        for s in qdisc::shapers_of(root, &ifb).unwrap_or_default() {
            out.push(shaper(s, ShaperDirection::Ingress, Some(&ifb)));
        }
    }
    Some(out)
}

/// This node's facts from what it says about the interface that carries `data` (the document
/// `serve` sends in `accepted`; only the host name and address where probe cannot run), with
/// the rate limits on that interface.
fn describe(rank: RankId, source: IdentitySource, data: SocketAddr) -> NodeFacts {
    let host = hostname();
    let addr = data.to_string();
    let input = FactsInput {
        rank,
        host: &host,
        data_addr: Some(&addr),
    };
    let h = crate::iface::host_facts(data.ip()).unwrap_or_default();
    let mut facts = linerate_mesh::node_facts(&input, &h);
    facts.identity_source = Some(source);
    facts.shapers = h.name.as_deref().and_then(shapers_on);
    facts
}

struct Common {
    id: Identity,
    rendezvous: RendezvousInfo,
    coordinator: SocketAddr,
    psk: Option<Psk>,
    transport: Transport,
}

/// The data server's limits: serve's defaults, with room for every other rank sending to this
/// one at once (incast) and for a --time above serve's longest test, unless the operator set
/// them (`--max-tests`, `--max-duration`; checked against the run by [`check_limits`]).
fn data_limits(a: &MeshArgs, size: u32) -> Limits {
    let d = Limits::default();
    Limits {
        max_tests: a.max_tests.unwrap_or_else(|| d.max_tests.max(size)),
        max_duration_ms: a
            .max_duration
            .unwrap_or_else(|| d.max_duration_ms.max(a.time)),
        ..d
    }
}

/// Refuses, before anything listens, limits the run cannot keep: a --size above rank 0's
/// --max-ranks, a --max-duration below --time (every test would be refused).
fn check_limits(a: &MeshArgs, id: &Identity) -> anyhow::Result<()> {
    if id.rank == 0 && id.size > a.max_ranks {
        bail!(
            "--size {} is more than --max-ranks {}: this coordinator admits at most {} ranks (raise --max-ranks, up to {})",
            id.size,
            a.max_ranks,
            a.max_ranks,
            linerate_cluster::wire::MAX_RANKS
        );
    }
    if let Some(max) = a.max_duration {
        if max < a.time {
            bail!(
                "--max-duration {} s is shorter than --time {} s: this rank's data server would refuse every test",
                fmt_round(max as f64 / 1000.0, 1),
                fmt_round(a.time as f64 / 1000.0, 1)
            );
        }
    }
    Ok(())
}

fn rank_config(a: &MeshArgs, c: &Common) -> RankConfig {
    let (rank, source) = (c.id.rank, c.id.source);
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
            identity_source: Some(source),
            ..NodeFacts::default()
        },
        describe: Some(Arc::new(move |data| describe(rank, source, data))),
        join_timeout: Duration::from_millis(a.join_timeout.max(1000)),
        heartbeat_timeout: Duration::from_millis(a.heartbeat_timeout.max(1000)),
        rdma_provider: a.provider.clone(),
        limits: data_limits(a, c.id.size),
        max_memory_bytes: u64::from(a.max_memory),
    }
}

/// SIGTERM and SIGINT on rank 0 (`scancel`, Ctrl-C under `srun`, a job's time limit) stop the
/// run and write what was measured, like a rank whose coordinator died; a second one ends the
/// process at once. The flag holds the signal's number.
fn catch_stop_signals() -> Option<Arc<AtomicUsize>> {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    let seen = Arc::new(AtomicBool::new(false));
    let which = Arc::new(AtomicUsize::new(0));
    for sig in [SIGTERM, SIGINT] {
        let code = u8::try_from(128 + sig).unwrap_or(u8::MAX);
        signal_hook::flag::register_conditional_shutdown(sig, i32::from(code), Arc::clone(&seen))
            .ok()?;
        signal_hook::flag::register(sig, Arc::clone(&seen)).ok()?;
        signal_hook::flag::register_usize(sig, Arc::clone(&which), sig as usize).ok()?;
    }
    Some(which)
}

/// `rank 0 was stopped by SIGTERM during round 3 of 6; 2 rounds ran to their end`.
fn interrupted_text(i: &Interrupted) -> String {
    use signal_hook::consts::signal::{SIGINT, SIGTERM};
    let name = match i32::try_from(i.signal) {
        Ok(SIGTERM) => "SIGTERM".to_string(),
        Ok(SIGINT) => "SIGINT".to_string(),
        _ => format!("signal {}", i.signal),
    };
    let during = match i.phase {
        linerate_mesh::Phase::Round if i.started == 0 => "before the first round".to_string(),
        linerate_mesh::Phase::Round => format!("during round {} of {}", i.started, i.scheduled),
        linerate_mesh::Phase::Retest => format!(
            "during the retest phase (step {})",
            i.started.saturating_sub(i.scheduled)
        ),
    };
    format!(
        "rank 0 was stopped by {name} {during}; that round and the later ones were not measured, and nothing was retested"
    )
}

/// Rank 0: the coordinator here, this node's own rank beside it.
fn run_rank0(
    a: &MeshArgs,
    c: &Common,
    listener: TcpListener,
    sched: &Schedule,
    style: Style,
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
        max_ranks: a.max_ranks,
        stop: catch_stop_signals(),
    };
    // Each rank's host and address, for the stream lines, as the ranks join.
    let mut nodes: Vec<NodeFacts> = Vec::new();
    let mut on_event = |e: CoordEvent| match e {
        CoordEvent::Joined { facts, .. } => nodes.push(*facts),
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
            // Told by its own coordinator that the run stopped: said once, below.
            if let Some(e) = r.error.filter(|_| run.interrupted.is_none()) {
                eprintln!("linerate mesh: {e}");
            }
        }
        Err(_) => eprintln!("linerate mesh: rank 0's own rank failed"),
    }
    let report = mesh_report(a, c, sched.kind, &run);
    if let Some(why) = &report.interrupted {
        eprintln!("linerate mesh: {why}");
    }
    output(a, &report, style)?;
    Ok(if report.interrupted.is_some() {
        EXIT_CANNOT_RUN
    } else if report.healthy {
        0
    } else {
        EXIT_FINDINGS
    })
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
        rendezvous: Some(c.rendezvous.clone()),
        interrupted: run.interrupted.as_ref().map(interrupted_text),
    })
}

/// How this rank found the coordinator, for the document.
fn rendezvous_info(found: &Coordinator) -> RendezvousInfo {
    RendezvousInfo {
        method: found.method.id().to_string(),
        label: found.method.as_str().to_string(),
        addr: found.addr.clone(),
        skipped: found
            .skipped
            .iter()
            .map(|k| RendezvousSkip {
                method: k.method.id().to_string(),
                label: k.method.as_str().to_string(),
                why: k.why.clone(),
            })
            .collect(),
    }
}

/// Whether the terminal takes Unicode (the heatmap's blocks), from the locale.
fn unicode() -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
}

/// Rank 0's outputs: the files asked for, then the JSON document or the terminal report (the
/// measurements themselves went out as they happened with --json-stream).
fn output(a: &MeshArgs, r: &MeshReport, style: Style) -> anyhow::Result<()> {
    if let Some(path) = &a.csv {
        std::fs::write(path, linerate_report::mesh::mesh_csv(r))
            .with_context(|| format!("writing --csv {}", path.display()))?;
    }
    if let Some(path) = &a.report {
        std::fs::write(path, linerate_report::mesh_html(r))
            .with_context(|| format!("writing --report {}", path.display()))?;
    }
    if a.json {
        let mut s = serde_json::to_string_pretty(r).context("encoding the mesh document")?;
        s.push('\n');
        print(&s)?;
    } else if !a.json_stream {
        print(&linerate_report::mesh::render_mesh(r, style, unicode()))?;
    }
    Ok(())
}

pub fn run(a: &MeshArgs, style: Style) -> anyhow::Result<u8> {
    let hosts = hosts(a)?;
    let id = identity(a, &hosts)?;
    if id.size > linerate_cluster::wire::MAX_RANKS {
        bail!(
            "a run of {} ranks is more than the {} one coordinator admits: split the cluster into groups (--hosts per group)",
            id.size,
            linerate_cluster::wire::MAX_RANKS
        );
    }
    check_limits(a, &id)?;
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
        rendezvous: rendezvous_info(&found),
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
        let code = run_rank0(a, &c, listener, &sched, style);
        drop(found);
        return code;
    }
    let r = rank::run(&rank_config(a, &c), &mut |_| {})?;
    match r.error {
        None => Ok(0),
        Some(e) => {
            eprintln!("linerate mesh: {e}; this rank's own measurements follow");
            if a.json_stream {
                // The ranks' addresses from the coordinator's table; this host's name.
                let nodes: Vec<NodeFacts> = (0..)
                    .zip(&r.table)
                    .filter_map(|(rank, addr)| {
                        addr.as_ref().map(|a| NodeFacts {
                            rank,
                            host: if rank == c.id.rank {
                                hostname()
                            } else {
                                String::new()
                            },
                            data_addr: Some(a.clone()),
                            ..NodeFacts::default()
                        })
                    })
                    .collect();
                for m in &r.measurements {
                    stream_line(m, &nodes);
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
