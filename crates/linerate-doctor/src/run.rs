//! Running doctor: probe, tests, counters, memory, then the rules.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use linerate_bench::{ClientConfig, InventoryFn, ServerConfig};
use linerate_engine::mem::{self, MemOp};
use linerate_facts::{
    CounterDelta, EndFacts, Finding, HostFacts, Inventories, Inventory, MemOut, PathFacts,
    ProbeDoc, Pyramid, Unread,
};
use linerate_model::{host_stack_ceiling, HostStackCeiling, HostStackInput};
use linerate_proto::{Direction, Psk, RefusalKind, TestKind, TestParams};
use linerate_results::{DoctorReport, LatencyMode, TestResult};
use linerate_rules::{diagnose, DiagnoseInput, Measured};
use thiserror::Error;

use crate::plan::{plan, Depth};

#[derive(Clone)]
pub struct DoctorOptions {
    /// A host running `linerate serve`; None = self-check of this machine.
    pub server: Option<SocketAddr>,
    pub bind: Option<IpAddr>,
    pub psk: Option<Psk>,
    pub depth: Depth,
    /// Root of the local sysfs/procfs (`/`).
    pub root: PathBuf,
    /// Describes an interface of this host (probe, port, facts); also given to the self-check server.
    pub inventory: InventoryFn,
    /// Directories whose disks join the pyramid (the first also holds the copy's source file).
    pub disks: Vec<PathBuf>,
    /// Whether to measure RDMA beside TCP.
    pub rdma: RdmaMode,
    /// `doctor --ssh`: starts the far end when the network tests begin (after the local disks,
    /// so its deadline covers the network tests alone); `server` and `psk` are then its own.
    pub far_end: Option<StartFarEnd>,
}

/// Starts a far end for doctor's network tests, given what they need.
pub type StartFarEnd =
    std::sync::Arc<dyn Fn(&FarEndNeeds) -> Result<StartedFarEnd, String> + Send + Sync>;

/// What doctor's network tests need of a far end it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FarEndNeeds {
    /// The tests doctor may run, at most.
    pub tests: Vec<TestParams>,
    /// Doctor will copy a file to it: it needs a write directory.
    pub write_dir: bool,
}

impl FarEndNeeds {
    /// The tests' time limits in all, seconds.
    pub fn seconds(&self) -> f64 {
        self.tests
            .iter()
            .map(|t| t.duration_ms as f64 / 1000.0)
            .sum()
    }
}

/// A far end started for doctor: where it listens, its key, and what ends it when dropped.
pub struct StartedFarEnd {
    pub addr: SocketAddr,
    pub psk: Psk,
    pub guard: Box<dyn std::any::Any + Send>,
}

impl std::fmt::Debug for StartedFarEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedFarEnd")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// When doctor measures RDMA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdmaMode {
    /// When this end of the path is an InfiniBand or RoCE port (provider verbs).
    Auto,
    Off,
    /// Always, with this libfabric provider (`tcp` exercises it on any path).
    Provider(String),
}

impl std::fmt::Debug for DoctorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoctorOptions")
            .field("server", &self.server)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Error)]
pub enum DoctorError {
    #[error(transparent)]
    Probe(#[from] linerate_inventory::ProbeError),
    #[error("cannot start the local test server: {0}")]
    LocalServer(std::io::Error),
    #[error(transparent)]
    Client(#[from] linerate_bench::ClientError),
    /// The far end of `--ssh` could not be started (the message says why and what to do).
    #[error("{0}")]
    FarEnd(String),
}

/// CPU use of this host during one test.
#[derive(Debug, Clone, Copy, Default)]
struct HostCpu {
    busiest_core: Option<f64>,
    other_cores: Option<f64>,
    steal_cores: Option<f64>,
}

fn measured(t: &TestResult, h: HostCpu) -> Measured {
    let per_cpu = t
        .per_stream
        .iter()
        .flat_map(|s| [Some(s.sender_cpu_percent), s.receiver_cpu_percent])
        .flatten()
        .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
    Measured {
        kind: t.params.kind,
        direction: t.direction,
        rdma: t.params.rdma.as_ref().map(|r| r.op),
        latency: t
            .params
            .rdma
            .as_ref()
            .map_or(t.params.kind.is_latency(), |r| r.latency),
        streams: t.streams,
        gbps: t.gbps,
        sender_cpu_percent: t.sender.as_ref().map(|e| e.cpu_percent),
        receiver_cpu_percent: t.receiver.as_ref().map(|e| e.cpu_percent),
        max_stream_cpu_percent: per_cpu,
        busiest_core_percent: h.busiest_core,
        other_cores: h.other_cores,
        steal_cores: h.steal_cores,
        retransmits: t.retransmits,
        segments: t.segments,
        rtt_us: t.rtt_us,
        tcp_busy_percent: t.tcp_limited.map(|l| l.busy_percent),
        rwnd_limited_percent: t.tcp_limited.map(|l| l.receive_window_percent),
        sndbuf_limited_percent: t.tcp_limited.map(|l| l.send_buffer_percent),
        loss_percent: t.loss_percent,
        error: t.error.clone(),
        discard: t.params.discard,
    }
}

/// Error counters of the port behind `netdev`: (name, value).
fn error_counters(inv: &Inventory, netdev: &str) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    if let Some(port) = inv
        .ports
        .iter()
        .find(|p| p.netdev.as_deref() == Some(netdev))
    {
        if let Some((d, p)) = inv.ib_port(port) {
            for c in &p.counters {
                if c.name != "port_xmit_wait" {
                    v.push((format!("{}/{} {}", d.name, p.number, c.name), c.value));
                }
            }
        }
    }
    if let Some(n) = inv.netdev(netdev) {
        for (k, val) in &n.errors {
            v.push((format!("{netdev} {k}"), *val));
        }
    }
    v
}

fn deltas(before: &[(String, u64)], after: &[(String, u64)]) -> Vec<CounterDelta> {
    after
        .iter()
        .filter_map(|(k, a)| {
            let b = before.iter().find(|(n, _)| n == k).map_or(0, |x| x.1);
            (*a > b).then(|| CounterDelta {
                name: k.clone(),
                delta: a - b,
            })
        })
        .collect()
}

fn mem_out(r: &mem::MemResult) -> MemOut {
    MemOut {
        kind: r.op.as_str(),
        threads: r.threads,
        buffer_bytes: r.buffer_bytes,
        gb_per_s: linerate_units::r2(r.gb_per_s()),
        gbps: linerate_units::r1(linerate_units::gb_per_s_to_gbps(r.gb_per_s())),
    }
}

/// An end's facts from what it said about itself. What could not be read of it is said in
/// `errors` (the end is then judged without it), never dropped in silence: the facts or a part
/// of the probe document, each finding left out, and in one line the fields of a newer
/// version that were ignored.
fn facts_of(h: Option<&HostFacts>, whose: &str, errors: &mut Vec<String>) -> Option<EndFacts> {
    let h = h?;
    let mut fields = Vec::new();
    for u in &h.unread {
        match u {
            Unread::Part { part, error } if part == "facts" => errors.push(format!(
                "the {whose} end's facts could not be read ({error}): judged without them"
            )),
            Unread::Field(path) => fields.push(path.as_str()),
            other => errors.push(format!("the {whose} end's host facts: {other}")),
        }
    }
    if let Some((first, _)) = fields.split_first() {
        let more = match fields.len() - 1 {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        errors.push(format!(
            "the {whose} end sent fields this version does not know (`{first}`{more}): ignored"
        ));
    }
    h.facts.clone()
}

/// What the memory step measured.
struct Memory {
    /// Copy over buffers far larger than the caches: one thread, then every core.
    one: mem::MemResult,
    all: mem::MemResult,
    /// Copy at the size a TCP stream copies per call (its write size), one thread: the rate
    /// one core copies the stream's data when it stays in the caches, as it does on a
    /// loopback or veth path.
    stream: mem::MemResult,
}

/// The test plan's results so far, and what was learned about the path while running them.
#[derive(Default)]
struct Runs {
    tests: Vec<TestResult>,
    /// This host's CPU during each test (the same order as `tests`).
    cpu: Vec<HostCpu>,
    local_inv: Option<HostFacts>,
    remote_inv: Option<HostFacts>,
    local_if: Option<String>,
    counters_before: Option<Vec<(String, u64)>>,
    errors: Vec<String>,
}

impl Runs {
    fn best_tcp(&self) -> Option<&TestResult> {
        self.tests
            .iter()
            .filter(|t| t.params.kind == TestKind::TcpBw && !t.params.discard && t.error.is_none())
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
    }

    fn push(&mut self, t: TestResult, cpu: HostCpu) {
        self.tests.push(t);
        self.cpu.push(cpu);
    }
}

/// Run doctor. `progress` receives one line per step.
pub fn run(o: &DoctorOptions, progress: &mut dyn FnMut(&str)) -> Result<DoctorReport, DoctorError> {
    let t0 = Instant::now();
    let before = linerate_inventory::probe(&o.root)?;
    progress("memory bandwidth");
    let memory = measure_memory(before.host.cpus.len().max(1));
    let mut errors = Vec::new();
    let disks = measure_disks(o, progress, &mut errors);
    let disk_job_notes: Vec<String> = disks.iter().flat_map(job_notes).collect();
    // The self-check copies a file from disk to disk through its own server: the server
    // writes into a directory of its own next to the source.
    let copy_dir = match (o.server, o.disks.first()) {
        (_, Some(d)) if disks.iter().any(|r| r.error.is_none()) => tempfile::Builder::new()
            .prefix("linerate-doctor-")
            .tempdir_in(d)
            .map_err(|e| errors.push(format!("creating a directory in {}: {e}", d.display())))
            .ok(),
        _ => None,
    };
    // With `--ssh`, the far end starts now, and the tests go to it with its key.
    let far = match &o.far_end {
        Some(start) => Some(
            start(&far_end_needs(o, &before, copy_dir.is_some())).map_err(DoctorError::FarEnd)?,
        ),
        None => None,
    };
    let with_far;
    let o = match &far {
        Some(f) => {
            with_far = DoctorOptions {
                server: Some(f.addr),
                psk: Some(f.psk.clone()),
                far_end: None,
                ..o.clone()
            };
            &with_far
        }
        None => o,
    };
    let server = match o.server {
        Some(s) => s,
        None => start_local_server(o, copy_dir.as_ref())?,
    };
    let mut runs = Runs {
        errors,
        ..Runs::default()
    };
    run_plan(o, server, &before, &mut runs, progress)?;
    discard_twins(o, server, &mut runs, progress);
    let mut pyramid_notes = disk_job_notes;
    let copy = copy_dir.as_ref().and_then(|dir| {
        copy_step(
            o,
            server,
            dir.path(),
            &mut runs,
            &mut pyramid_notes,
            progress,
        )
    });
    if copy_dir.is_none() && o.server.is_some() && o.disks.is_empty() {
        pyramid_notes.push("no disk measured (doctor --disk PATH adds one, and a copy to the server's --write-dir)".into());
    }
    drop(copy_dir);
    rdma_step(o, server, &before, &mut runs, progress);
    // The far end's work is done.
    drop(far);
    let after = linerate_inventory::probe(&o.root)?;
    Ok(assemble(
        o,
        Assembly {
            server,
            before: &before,
            after: &after,
            memory: &memory,
            disks,
            copy,
            pyramid_notes,
            seconds: t0.elapsed().as_secs_f64(),
        },
        runs,
    ))
}

/// Memory: the host stack's own bound for a virtual path, and the top of the pyramid.
fn measure_memory(cpus: usize) -> Memory {
    // Best of three short runs: a capability, so a busy moment should not lower it.
    let best_of = |threads: usize, bytes: usize| {
        (0..3)
            .map(|_| mem::measure(MemOp::Copy, threads, bytes, Duration::from_millis(200)))
            .max_by(|a, b| a.gb_per_s().total_cmp(&b.gb_per_s()))
            .expect("three runs")
    };
    let stream_bytes = linerate_proto::defaults::default_length(1, false) as usize;
    Memory {
        one: best_of(1, 64 << 20),
        all: best_of(cpus, 64 << 20),
        stream: best_of(1, stream_bytes),
    }
}

/// `linerate disk` of each directory given; a disk that fails keeps what it measured.
fn measure_disks(
    o: &DoctorOptions,
    progress: &mut dyn FnMut(&str),
    errors: &mut Vec<String>,
) -> Vec<linerate_results::disk::DiskReport> {
    let mut disks = Vec::new();
    for path in &o.disks {
        progress(&format!("disk {}", path.display()));
        match linerate_storage::run(path, &disk_plan(o.depth), |_| {}) {
            Ok(r) => {
                progress(&format!("  → {}", disk_summary(&r)));
                disks.push(r);
            }
            Err(e) => {
                progress(&format!("  → failed: {e}"));
                errors.push(format!("disk {}: {e}", path.display()));
                if let Some(p) = e.partial {
                    disks.push(*p);
                }
            }
        }
    }
    disks
}

/// The self-check's own server on loopback (writing copies into `copy_dir`/in when given).
fn start_local_server(
    o: &DoctorOptions,
    copy_dir: Option<&tempfile::TempDir>,
) -> Result<SocketAddr, DoctorError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(DoctorError::LocalServer)?;
    let addr = l.local_addr().map_err(DoctorError::LocalServer)?;
    let write_dir = copy_dir.and_then(|d| {
        let w = d.path().join("in");
        std::fs::create_dir(&w).ok()?;
        linerate_bench::WriteDir::open(&w)
            .ok()
            .map(std::sync::Arc::new)
    });
    let cfg = ServerConfig {
        bind: addr,
        inventory: Some(o.inventory.clone()),
        log: false,
        write_dir,
        ..ServerConfig::default()
    };
    std::thread::Builder::new()
        .name("doctor-server".into())
        .spawn(move || linerate_bench::serve_on(&l, cfg))
        .map_err(DoctorError::LocalServer)?;
    Ok(addr)
}

/// This host's CPU around one test: the busiest core, other processes, hypervisor steal.
fn with_host_cpu<T>(f: impl FnOnce() -> T) -> (T, HostCpu) {
    use linerate_engine::sys;
    let cores0 = sys::core_times();
    let host0 = sys::host_cpu_seconds();
    let own0 = sys::process_cpu();
    let peers0 = sys::other_linerate_cpu_seconds();
    let w0 = Instant::now();
    let out = f();
    let wall = w0.elapsed().as_secs_f64().max(1e-3);
    let own1 = sys::process_cpu();
    let peers1 = sys::other_linerate_cpu_seconds();
    let host1 = sys::host_cpu_seconds();
    let cpu = HostCpu {
        busiest_core: sys::busiest_core(&cores0, &sys::core_times()),
        other_cores: host0.zip(host1).map(|(a, b)| {
            // Ours: this process, and other linerate processes (a server on this host).
            let own = (own1.0 - own0.0) + (own1.1 - own0.1) + (peers1 - peers0).max(0.0);
            ((b.0 - a.0 - own) / wall).max(0.0)
        }),
        steal_cores: host0.zip(host1).map(|(a, b)| ((b.1 - a.1) / wall).max(0.0)),
    };
    (out, cpu)
}

/// The network tests of the plan. `Err` only when nothing reached the server and this end's
/// port can pass traffic (then doctor cannot run); a port that cannot is the diagnosis.
fn run_plan(
    o: &DoctorOptions,
    server: SocketAddr,
    before: &Inventory,
    runs: &mut Runs,
    progress: &mut dyn FnMut(&str),
) -> Result<(), DoctorError> {
    let planned = plan(
        o.depth,
        o.server.is_some(),
        linerate_proto::defaults::UDP_BITRATE_BPS,
        multi_streams(before),
    );
    for (n, mut params) in planned.into_iter().enumerate() {
        if params.kind == TestKind::UdpBw {
            // A rate the path should carry: half the best TCP result, at most 1 Gb/s.
            let best = runs.best_tcp().map_or(0.0, |t| t.gbps);
            let most = linerate_proto::defaults::UDP_BITRATE_BPS as f64;
            params.bitrate_bps = (best * 0.5 * linerate_units::GIGA).clamp(10e6, most) as u64;
        }
        let spin = (params.kind == TestKind::TcpLat).then(|| {
            let c = latency_spin_choice(o.server.is_none());
            params.spin_us = Some(c.spin_us);
            c
        });
        progress(&params.describe());
        let cfg = client(o, server, params.clone(), None);
        if runs.counters_before.is_none() {
            if let Some(name) = runs.local_if.as_deref() {
                runs.counters_before = Some(error_counters(before, name));
            }
        }
        let (result, cpu) = with_host_cpu(|| linerate_bench::run_client(&cfg, &mut |_| {}));
        match result {
            Ok(run) => {
                if runs.local_inv.is_none() {
                    runs.local_inv.clone_from(&run.local_inventory);
                    runs.local_if = runs.local_inv.as_ref().and_then(|h| h.name.clone());
                    runs.counters_before =
                        runs.local_if.as_deref().map(|n| error_counters(before, n));
                }
                if runs.remote_inv.is_none() {
                    runs.remote_inv.clone_from(&run.remote_inventory);
                }
                let mut t = linerate_bench::assemble(&run);
                if let (Some(c), Some(m)) = (spin, t.latency_mode.as_mut()) {
                    *m = LatencyMode::new(m.client_spin_us, m.server_spin_us, c.reason);
                }
                if let Some(e) = &t.error {
                    runs.errors.push(format!("{}: {e}", params.describe()));
                }
                progress(&format!("  → {}", short_result(&t)));
                runs.push(t, cpu);
            }
            Err(e) if n == 0 => {
                // Nothing reached the server. If this end's port cannot pass traffic (down, no
                // subnet manager), that is the diagnosis; otherwise doctor cannot run.
                let route_if = runs.local_if.clone().or_else(|| route_interface(server));
                let facts = linerate_rules::end_facts(before, route_if.as_deref(), Vec::new());
                let down = facts.ceiling.as_ref().is_some_and(|c| {
                    matches!(
                        c.limited_by,
                        linerate_model::LimitedBy::PortDown
                            | linerate_model::LimitedBy::NoSubnetManager
                    )
                });
                if !down {
                    return Err(e.into());
                }
                runs.local_if = route_if;
                runs.errors.push(format!("{}: {e}", params.describe()));
                progress(&format!("  → failed: {e}"));
                break;
            }
            Err(e) => {
                runs.errors.push(format!("{}: {e}", params.describe()));
                progress(&format!("  → failed: {e}"));
            }
        }
    }
    Ok(())
}

/// Streams of the plan's multi-stream tests: one per CPU, 2 to 8.
fn multi_streams(before: &Inventory) -> u32 {
    let cpus = before.host.cpus.len().max(1);
    u32::try_from(cpus.clamp(2, 8)).unwrap_or(2)
}

/// Every test doctor may run against a server it starts (`--ssh`): the plan, the discard
/// twins its single streams may get, the copy (`copy`) and RDMA.
fn far_end_needs(o: &DoctorOptions, before: &Inventory, copy: bool) -> FarEndNeeds {
    let planned = plan(
        o.depth,
        true,
        linerate_proto::defaults::UDP_BITRATE_BPS,
        multi_streams(before),
    );
    let twins: Vec<TestParams> = planned
        .iter()
        .filter(|t| t.kind == TestKind::TcpBw && t.streams == 1)
        .map(|t| TestParams {
            discard: true,
            ..t.clone()
        })
        .collect();
    let mut tests = planned;
    tests.extend(twins);
    if copy {
        tests.push(crate::plan::p(
            TestKind::FileTransfer,
            Direction::Send,
            1,
            COPY_TIME_LIMIT_S,
            0.0,
        ));
    }
    if o.rdma != RdmaMode::Off {
        tests.push(crate::plan::p(
            TestKind::Rdma,
            Direction::Send,
            1,
            rdma_secs(o.depth),
            0.0,
        ));
    }
    FarEndNeeds {
        tests,
        write_dir: copy,
    }
}

/// A receiving thread at this share of a core or more is the stream's bound (thread time leaves
/// softirq work out, so 85% is already a full core: the threshold of `cpu.saturated`).
const RECEIVER_BOUND_PERCENT: f64 = 85.0;

/// The receiver's copy: each single stream whose receiver was CPU-bound runs again with the
/// data dropped in the receiver's kernel (`--discard`), so the diagnosis can say how much of
/// the stream's limit is the receiving application's copy (`linerate_rules::receiver_copy`).
fn discard_twins(
    o: &DoctorOptions,
    server: SocketAddr,
    runs: &mut Runs,
    progress: &mut dyn FnMut(&str),
) {
    let bound: Vec<TestParams> = runs
        .tests
        .iter()
        .filter(|t| {
            t.params.kind == TestKind::TcpBw
                && t.streams == 1
                && !t.params.discard
                && t.error.is_none()
                && t.receiver
                    .as_ref()
                    .is_some_and(|r| r.cpu_percent >= RECEIVER_BOUND_PERCENT)
        })
        .map(|t| TestParams {
            discard: true,
            ..t.params.clone()
        })
        .collect();
    for params in bound {
        progress(&params.describe());
        let (result, cpu) = with_host_cpu(|| {
            linerate_bench::run_client(&client(o, server, params.clone(), None), &mut |_| {})
        });
        match result {
            Ok(run) => {
                let t = linerate_bench::assemble(&run);
                if let Some(e) = &t.error {
                    runs.errors.push(format!("{}: {e}", params.describe()));
                }
                progress(&format!("  → {}", short_result(&t)));
                runs.push(t, cpu);
            }
            Err(e) => {
                progress(&format!("  → not run: {e}"));
                runs.errors.push(format!("{}: {e}", params.describe()));
            }
        }
    }
}

/// How long doctor watches the CPUs before its latency test to decide whether to busy-poll.
const SPIN_WINDOW: Duration = Duration::from_millis(300);

/// Busy-poll or block in the latency test, from this host's CPUs and how idle they are now
/// (`self_check`: the server's echo also runs here, so two threads would poll on this host).
fn latency_spin_choice(self_check: bool) -> crate::plan::SpinChoice {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let idle = linerate_engine::sys::idle_cores(SPIN_WINDOW).map(|i| i.min(cpus as f64));
    crate::plan::latency_spin(
        cpus,
        idle,
        SPIN_WINDOW.as_secs_f64(),
        if self_check { 2 } else { 1 },
    )
}

/// Disk → network → disk: a file copy through the tested path, when a disk was measured and a
/// network test ran. Returns the copy and where it went (`loopback` or the server).
fn copy_step(
    o: &DoctorOptions,
    server: SocketAddr,
    dir: &std::path::Path,
    runs: &mut Runs,
    pyramid_notes: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> Option<(TestResult, String)> {
    if runs.tests.is_empty() {
        return None;
    }
    match file_copy(o, server, dir, progress) {
        Ok(t) => {
            if let Some(e) = &t.error {
                runs.errors.push(format!("file copy: {e}"));
            }
            let to = if o.server.is_some() {
                server.to_string()
            } else {
                "loopback".into()
            };
            Some((t, to))
        }
        // Servers before refusal kinds say it in words only (their refusals read as `Other`).
        Err(e)
            if e.kind == Some(RefusalKind::NoWriteDir)
                || (e.kind == Some(RefusalKind::Other)
                    && e.to_string().contains("accepts no files")) =>
        {
            pyramid_notes.push(format!("the server's disk was not measured: {e}"));
            None
        }
        Err(e) => {
            runs.errors.push(format!("file copy: {e}"));
            None
        }
    }
}

/// Doctor's RDMA messages: 1 MiB, the size of its TCP writes, so the two compare the same
/// transfer size (bench's default is 64 KiB, where RDMA already reaches line rate on FDR/EDR).
const RDMA_LENGTH: u32 = 1 << 20;

/// RDMA beside TCP on the same path, where this end has RDMA hardware (or when asked).
fn rdma_step(
    o: &DoctorOptions,
    server: SocketAddr,
    before: &Inventory,
    runs: &mut Runs,
    progress: &mut dyn FnMut(&str),
) {
    let rdma_port = runs.local_if.as_deref().is_some_and(|n| {
        before
            .ports
            .iter()
            .any(|p| p.netdev.as_deref() == Some(n) && p.device.is_some() && p.port.is_some())
    });
    let provider = match &o.rdma {
        RdmaMode::Off => None,
        RdmaMode::Auto => rdma_port.then(|| "verbs".to_string()),
        RdmaMode::Provider(p) => Some(p.clone()),
    };
    let Some(provider) =
        provider.filter(|_| runs.tests.iter().any(|t| t.params.kind == TestKind::TcpBw))
    else {
        return;
    };
    let secs = rdma_secs(o.depth);
    let params = TestParams {
        interval_ms: 0,
        length: RDMA_LENGTH,
        rdma: Some(linerate_proto::RdmaSpec {
            op: linerate_proto::RdmaOp::Write,
            latency: false,
            provider: Some(provider.clone()),
            window: linerate_proto::defaults::RDMA_WINDOW,
            qps: 1,
            verify: false,
            sweep: false,
        }),
        ..crate::plan::p(TestKind::Rdma, Direction::Send, 1, secs, 0.0)
    };
    progress(&params.describe());
    match linerate_bench::run_client(&client(o, server, params, None), &mut |_| {}) {
        Ok(run) => {
            let t = linerate_bench::assemble(&run);
            if let Some(e) = &t.error {
                runs.errors.push(format!("RDMA ({provider}): {e}"));
            }
            progress(&format!("  → {}", short_result(&t)));
            runs.push(t, HostCpu::default());
        }
        Err(e) => {
            progress(&format!("  → not run: {e}"));
            runs.errors.push(format!("RDMA ({provider}): {e}"));
        }
    }
}

/// Seconds of doctor's RDMA test.
fn rdma_secs(depth: Depth) -> f64 {
    match depth {
        Depth::Quick => 2.0,
        Depth::Normal => 4.0,
        Depth::Thorough => 8.0,
    }
}

/// What `assemble` needs besides the runs.
struct Assembly<'a> {
    server: SocketAddr,
    before: &'a Inventory,
    after: &'a Inventory,
    memory: &'a Memory,
    disks: Vec<linerate_results::disk::DiskReport>,
    copy: Option<(TestResult, String)>,
    pyramid_notes: Vec<String>,
    seconds: f64,
}

/// The host stack's bound for one TCP stream on a path without hardware (loopback, veth): one
/// core's copy rate at the size of a stream's writes, and the cores the two copies of each byte
/// may run on. Against a server the receiver's copy runs on the other host, so each core copies
/// each byte once; in a self-check both ends share this process's CPUs (its affinity:
/// `taskset -c 0` leaves one, and both copies then share it).
fn host_stack(m: &Memory, two_hosts: bool) -> Option<HostStackCeiling> {
    let cores = if two_hosts {
        2
    } else {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    };
    host_stack_ceiling(&HostStackInput {
        copy_gb_per_s: m.stream.gb_per_s(),
        cores,
    })
}

/// Memory, the disks, the network and the copy side by side (`linerate_rules::pyramid`).
fn storage_pyramid(
    o: &DoctorOptions,
    a: &Assembly<'_>,
    runs: &Runs,
    input: &DiagnoseInput,
) -> (Pyramid, Vec<Finding>) {
    let dimm_peak: f64 = linerate_inventory::dram::dimms(&o.root)
        .iter()
        .map(linerate_inventory::dram::Dimm::peak_gb_per_s)
        .sum();
    linerate_rules::pyramid::pyramid(&linerate_rules::pyramid::PyramidInput {
        memory_gbps: Some(linerate_units::gb_per_s_to_gbps(a.memory.all.gb_per_s())),
        memory_ceiling_gbps: (dimm_peak > 0.0)
            .then_some(linerate_units::gb_per_s_to_gbps(dimm_peak)),
        disks: a.disks.iter().map(disk_in).collect(),
        network_gbps: runs.best_tcp().map(|t| t.gbps),
        network_ceiling_gbps: linerate_rules::diagnose::send_ceiling_gbps(input),
        network_subject: runs.local_if.clone().unwrap_or_else(|| "loopback".into()),
        copy: a.copy.as_ref().and_then(|(t, to)| copy_in(t, to)),
        notes: a.pyramid_notes.clone(),
    })
}

/// The rules over everything measured, and the report.
fn assemble(o: &DoctorOptions, a: Assembly<'_>, mut runs: Runs) -> DoctorReport {
    let two = o.server.is_some();
    let counter_deltas = match (&runs.local_if, &runs.counters_before) {
        (Some(n), Some(b)) => deltas(b, &error_counters(a.after, n)),
        _ => Vec::new(),
    };
    let local = facts_of(runs.local_inv.as_ref(), "local", &mut runs.errors).unwrap_or_else(|| {
        linerate_rules::end_facts(a.before, runs.local_if.as_deref(), Vec::new())
    });
    let remote = if two {
        facts_of(runs.remote_inv.as_ref(), "remote", &mut runs.errors)
    } else {
        None
    };
    let host_stack = host_stack(a.memory, two);
    let stack_ceiling_gbps = host_stack.as_ref().map(|h| linerate_units::r2(h.gbps));
    let stack_basis = host_stack.as_ref().map(|h| h.basis.clone());
    let input = DiagnoseInput {
        local: local.clone(),
        remote: remote.clone(),
        tests: runs
            .tests
            .iter()
            .zip(&runs.cpu)
            .map(|(t, b)| measured(t, *b))
            .collect(),
        host_stack,
        counter_deltas: counter_deltas.clone(),
    };
    let mut d = diagnose(&input);
    let (pyramid, pyramid_findings) = storage_pyramid(o, &a, &runs, &input);
    d.findings.extend(pyramid_findings);
    if !a.disks.is_empty() {
        d.checked.push("the storage pyramid: memory, disk reads and writes, the network, and a disk-to-disk copy through the tested path".into());
    }
    if let Some((t, _)) = a.copy {
        runs.tests.push(t);
    }
    let before_analysis = linerate_rules::analyze(a.before);
    let local_probe = ProbeDoc::new(a.before, &before_analysis, &o.root.display().to_string());
    let remote_interface = runs
        .remote_inv
        .as_ref()
        .and_then(|h| h.name.clone())
        .filter(|_| two);
    DoctorReport {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        mode: if two { "two_hosts" } else { "self_check" },
        server: a.server.to_string(),
        verdict: d.verdict,
        findings: d.findings,
        tests: runs.tests,
        inventory: Inventories {
            local: local_probe,
            remote: runs
                .remote_inv
                .as_ref()
                .and_then(|h| h.probe.clone())
                .filter(|_| two),
        },
        path: PathFacts {
            local,
            remote,
            local_interface: runs.local_if,
            remote_interface,
            counter_deltas,
            stack_ceiling_gbps,
            stack_basis,
        },
        memory: vec![
            mem_out(&a.memory.one),
            mem_out(&a.memory.stream),
            mem_out(&a.memory.all),
        ],
        disks: a.disks,
        pyramid,
        checked: d.checked,
        errors: runs.errors,
        seconds: linerate_units::r1(a.seconds),
    }
}

/// A client for one test of doctor's against `server`.
fn client(
    o: &DoctorOptions,
    server: SocketAddr,
    params: TestParams,
    file: Option<std::sync::Arc<std::fs::File>>,
) -> ClientConfig {
    ClientConfig {
        bind: o.bind,
        psk: o.psk.clone(),
        inventory: Some(o.inventory.clone()),
        file,
        ..ClientConfig::new(server, params)
    }
}

/// The short disk plan of each depth: sequential reads and writes, random reads beyond quick.
fn disk_plan(depth: Depth) -> linerate_storage::DiskPlan {
    use linerate_results::disk::DiskTestKind as K;
    let (secs, size, tests) = match depth {
        Depth::Quick => (1, 256u64 << 20, vec![K::SeqRead, K::SeqWrite]),
        Depth::Normal => (2, 512 << 20, vec![K::SeqRead, K::RandRead, K::SeqWrite]),
        Depth::Thorough => (
            3,
            1 << 30,
            vec![K::SeqRead, K::RandRead, K::SeqWrite, K::RandWrite],
        ),
    };
    // As many jobs as it takes to reach the device's maximum: one more while it adds 5%, at
    // most one per CPU (and within the plan's 1 GiB of buffers).
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let plan = linerate_storage::DiskPlan {
        size: Some(size),
        duration: Duration::from_secs(secs),
        tests,
        scale_jobs: true,
        ..linerate_storage::DiskPlan::default()
    };
    let fit = linerate_storage::disk::MAX_BUFFER_BYTES / plan.buffer_bytes().max(1);
    linerate_storage::DiskPlan {
        jobs: u32::try_from(cpus)
            .unwrap_or(u32::MAX)
            .min(u32::try_from(fit).unwrap_or(u32::MAX))
            .clamp(1, linerate_storage::disk::MAX_JOBS),
        ..plan
    }
}

/// What the search for the number of jobs found, one line per test of a disk: the jobs each
/// number gave, the one kept and why the search stopped.
fn job_notes(r: &linerate_results::disk::DiskReport) -> Vec<String> {
    r.tests
        .iter()
        .filter(|t| !t.job_scaling.is_empty())
        .map(|t| {
            let unit = |iops: f64, gb: f64| {
                if t.kind.is_seq() {
                    format!("{gb:.2} GB/s")
                } else {
                    format!("{iops:.0} IOPS")
                }
            };
            let tried: Vec<String> = t
                .job_scaling
                .iter()
                .map(|s| format!("{} → {}", s.jobs, unit(s.iops, s.gb_per_s)))
                .collect();
            let steps = &t.job_scaling;
            let (last, before) = steps
                .split_last()
                .map_or((None, &[][..]), |(l, b)| (Some(l), b));
            let best_before = before.iter().map(|s| s.iops).fold(0.0, f64::max);
            let why = match last {
                _ if t.error.is_some() => "the test stopped".to_string(),
                Some(l) if !before.is_empty() && l.iops < best_before * 1.05 => {
                    format!("job {} added under 5%", l.jobs)
                }
                _ => "one job per CPU".to_string(),
            };
            format!(
                "disk {} {}: {} job{} ({}; stopped adding: {why})",
                r.path.display(),
                t.kind.short(),
                t.jobs,
                if t.jobs == 1 { "" } else { "s" },
                tried.join(", ")
            )
        })
        .collect()
}

fn disk_summary(r: &linerate_results::disk::DiskReport) -> String {
    let parts: Vec<String> = r
        .tests
        .iter()
        .map(|t| {
            let jobs = if t.jobs > 1 {
                format!(" ({} jobs)", t.jobs)
            } else {
                String::new()
            };
            if t.kind.is_seq() {
                format!("{} {:.2} GB/s{jobs}", t.kind.short(), t.gb_per_s)
            } else {
                format!("{} {:.0} IOPS{jobs}", t.kind.short(), t.iops)
            }
        })
        .collect();
    format!("{} ({})", parts.join(", "), r.filesystem)
}

fn disk_in(r: &linerate_results::disk::DiskReport) -> linerate_rules::pyramid::DiskIn {
    use linerate_results::disk::DiskTestKind as K;
    let get = |k: K| {
        r.tests
            .iter()
            .find(|t| t.kind == k && t.error.is_none())
            .map(|t| t.gbps)
    };
    linerate_rules::pyramid::DiskIn {
        host: "local".into(),
        path: r.path.display().to_string(),
        filesystem: r.filesystem.clone(),
        read_gbps: get(K::SeqRead),
        write_gbps: get(K::SeqWrite),
        rand_read_iops: r
            .tests
            .iter()
            .find(|t| t.kind == K::RandRead && t.error.is_none())
            .map(|t| t.iops),
    }
}

fn copy_in(t: &TestResult, to: &str) -> Option<linerate_rules::pyramid::CopyIn> {
    let f = t.file.as_ref()?;
    let layer = |n: &str| f.layers.iter().find(|l| l.layer == n).map(|l| l.gbps);
    (f.written_bytes == f.size_bytes).then(|| linerate_rules::pyramid::CopyIn {
        to: to.to_string(),
        end_to_end_gbps: f.end_to_end_gbps,
        source_read_gbps: layer("source_read"),
        network_gbps: layer("network"),
        destination_write_gbps: layer("destination_write"),
        bottleneck: f.bottleneck.map(str::to_string),
    })
}

/// Size of the file doctor copies: a few seconds at disk speed.
/// The copy's time limit, seconds.
const COPY_TIME_LIMIT_S: f64 = 120.0;

fn copy_size(depth: Depth) -> u64 {
    match depth {
        Depth::Quick => 128 << 20,
        Depth::Normal => 256 << 20,
        Depth::Thorough => 1 << 30,
    }
}

/// Why the file copy did not run: the server's refusal (with its kind) or a local error.
#[derive(Debug)]
struct CopyFailed {
    kind: Option<RefusalKind>,
    message: String,
}

impl From<String> for CopyFailed {
    fn from(message: String) -> Self {
        Self {
            kind: None,
            message,
        }
    }
}

impl std::fmt::Display for CopyFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Write a source file in `dir`, drop it from the page cache, and copy it to the server
/// (which removes its copy once measured). `Err` carries the server's refusal.
fn file_copy(
    o: &DoctorOptions,
    server: SocketAddr,
    dir: &std::path::Path,
    progress: &mut dyn FnMut(&str),
) -> Result<TestResult, CopyFailed> {
    use std::io::Write;
    let size = copy_size(o.depth);
    let src_path = dir.join("source.bin");
    let mut f = std::fs::File::create(&src_path)
        .map_err(|e| format!("creating {}: {e}", src_path.display()))?;
    let block: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])
            .map_err(|e| format!("writing {}: {e}", src_path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| format!("writing {}: {e}", src_path.display()))?;
    // Read it back from the disk, not from memory.
    let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
    drop(f);
    let src = std::fs::File::open(&src_path)
        .map_err(|e| format!("opening {}: {e}", src_path.display()))?;
    let name = format!("linerate-doctor-{}.bin", linerate_proto::random_hex(6));
    let params = TestParams {
        interval_ms: 0,
        file: Some(linerate_proto::FileSpec {
            name,
            size,
            fsync: true,
            remove_after: true,
        }),
        ..crate::plan::p(
            TestKind::FileTransfer,
            Direction::Send,
            1,
            COPY_TIME_LIMIT_S,
            0.0,
        )
    };
    progress(&params.describe());
    let cfg = client(o, server, params, Some(std::sync::Arc::new(src)));
    let r = linerate_bench::run_client(&cfg, &mut |_| {});
    let _ = std::fs::remove_file(&src_path);
    match r {
        Ok(run) => {
            let t = linerate_bench::assemble(&run);
            progress(&format!("  → {}", short_result(&t)));
            Ok(t)
        }
        Err(e) => {
            progress(&format!("  → not run: {e}"));
            Err(CopyFailed {
                kind: e.refusal_kind(),
                message: e.to_string(),
            })
        }
    }
}

/// The interface the kernel routes `server` through (a UDP connect sends nothing).
fn route_interface(server: SocketAddr) -> Option<String> {
    let bind: SocketAddr = if server.is_ipv6() {
        "[::]:0".parse().ok()?
    } else {
        "0.0.0.0:0".parse().ok()?
    };
    let u = std::net::UdpSocket::bind(bind).ok()?;
    u.connect(server).ok()?;
    linerate_engine::sys::interface_of(u.local_addr().ok()?.ip())
}

fn short_result(t: &TestResult) -> String {
    t.summary_parts().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_results::disk::{DiskJobStep, DiskReport, DiskTestKind, DiskTestResult, Engine};

    fn test(kind: DiskTestKind, jobs: u32, steps: &[(u32, f64)]) -> DiskTestResult {
        DiskTestResult {
            kind,
            gbps: 1.0,
            gb_per_s: 0.125,
            iops: 1.0,
            latency_us: None,
            block_bytes: 4096,
            queue_depth: 32,
            direct: true,
            file_bytes: 1 << 20,
            engine: Engine::IoUring,
            seconds: 1.0,
            bytes: 4096,
            ops: 1,
            filesystem: "tmpfs".into(),
            error: None,
            jobs,
            per_job: Vec::new(),
            latency_samples: 1,
            cpu_percent: 1.0,
            cpu_us_per_io: Some(1.0),
            job_scaling: steps
                .iter()
                .map(|&(jobs, iops)| DiskJobStep {
                    jobs,
                    iops,
                    gb_per_s: iops * 4096.0 / 1e9,
                    cpu_us_per_io: Some(2.0),
                })
                .collect(),
        }
    }

    #[test]
    fn job_notes_say_what_each_count_gave_and_why_the_search_stopped() {
        let report = DiskReport {
            path: "/d".into(),
            filesystem: "tmpfs".into(),
            mount_point: None,
            file_bytes: 1 << 20,
            buffer_bytes: 0,
            direct: true,
            engine: Some(Engine::IoUring),
            hipri: false,
            sqpoll: false,
            tests: vec![
                test(DiskTestKind::RandRead, 2, &[(1, 400_000.0), (2, 800_000.0)]),
                test(DiskTestKind::SeqRead, 1, &[(1, 5000.0), (2, 5100.0)]),
                test(DiskTestKind::SeqWrite, 1, &[]),
            ],
            notes: Vec::new(),
            error: None,
        };
        let n = job_notes(&report);
        assert_eq!(n.len(), 2, "{n:?}");
        assert_eq!(
            n[0],
            "disk /d rand_read: 2 jobs (1 → 400000 IOPS, 2 → 800000 IOPS; stopped adding: one job per CPU)"
        );
        assert!(
            n[1].starts_with("disk /d seq_read: 1 job (1 → 0.02 GB/s"),
            "{}",
            n[1]
        );
        assert!(
            n[1].ends_with("stopped adding: job 2 added under 5%)"),
            "{}",
            n[1]
        );
    }
}
