//! `linerate soak HOST` and `linerate soak --passive`: both ends' counters sampled every
//! interval (the server's over the control connection) into the tracker, then the judge's
//! verdicts rendered as asked. Exit: 0 clean (or congested or insufficient), 1 a port marginal
//! or bad, 2 the soak could not run or stopped early (what was measured is still reported).

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use linerate_bench::{ClientConfig, Event, SoakSamplerFn};
use linerate_inventory::counters::{soak_targets, CounterSampler};
use linerate_proto::soak::{End, SoakSample};
use linerate_proto::{defaults, Direction, TestKind, TestParams};
use linerate_report::Style;
use linerate_soak::{judge, JudgeParams, SoakEvent, SoakParams, SoakReport, Tracker, Verdict};

use crate::cli::SoakArgs;
use crate::out::print;

/// The Prometheus text file's name in `--textfile DIR`.
pub const TEXTFILE_NAME: &str = "linerate_soak.prom";
/// The shortest interval (the protocol's).
const MIN_INTERVAL: Duration = Duration::from_millis(defaults::MIN_INTERVAL_MS);

/// CPU time spent sampling counters on this host, and how many samples: the cost of a soak's
/// sampling, separate from the engines'.
#[derive(Debug, Default)]
pub struct SamplingCost {
    cpu_ns: AtomicU64,
    samples: AtomicU64,
}

/// A sampler factory for `end` reading under `root`: the ports of the inventory there, plus
/// the interface holding the test's local address when it is in that inventory (a veth on a
/// live root). Every call's thread CPU time goes into `cost`.
pub fn sampler_fn(root: PathBuf, end: End, cost: Arc<SamplingCost>) -> SoakSamplerFn {
    Arc::new(move |ip: IpAddr| {
        let mut sampler = build_sampler(&root, Some(ip));
        let cost = Arc::clone(&cost);
        Box::new(move |seq, t_s| {
            let (u0, s0) = linerate_engine::sys::thread_cpu();
            let s = sampler(end, seq, t_s);
            let (u1, s1) = linerate_engine::sys::thread_cpu();
            let ns = ((u1 - u0 + s1 - s0).max(0.0) * 1e9) as u64;
            cost.cpu_ns.fetch_add(ns, Ordering::Relaxed);
            cost.samples.fetch_add(1, Ordering::Relaxed);
            s
        })
    })
}

type SampleFn = Box<dyn FnMut(End, u64, f64) -> SoakSample + Send>;

/// The counter sampler under `root`; when the root cannot be read, every sample says why.
fn build_sampler(root: &Path, ip: Option<IpAddr>) -> SampleFn {
    let path: Vec<String> = ip
        .and_then(linerate_engine::sys::interface_of)
        .into_iter()
        .collect();
    match linerate_inventory::probe(root) {
        Ok(inv) => {
            let mut s = CounterSampler::new(root, soak_targets(&inv, &path));
            Box::new(move |end, seq, t_s| s.sample(end, seq, t_s))
        }
        Err(e) => {
            let why = e.to_string();
            Box::new(move |end, seq, t_s| SoakSample {
                end,
                seq,
                t_s,
                ports: Vec::new(),
                tcp_retrans_segs: None,
                tcp_out_segs: None,
                bytes_sent: 0,
                bytes_received: 0,
                problems: vec![format!("no counters read: {why}")],
            })
        }
    }
}

/// How the results are shown.
struct Out {
    style: Style,
    json: bool,
    json_stream: bool,
}

impl Out {
    fn human(&self) -> bool {
        !self.json && !self.json_stream
    }

    fn event(&self, e: &SoakEvent<'_>) -> anyhow::Result<()> {
        if self.json_stream {
            print(&format!("{}\n", e.to_line()?))?;
        }
        Ok(())
    }
}

/// Pushes samples into the tracker and shows each closed interval.
struct Feed<'a> {
    tracker: Tracker,
    out: &'a Out,
}

impl Feed<'_> {
    fn push(&mut self, s: &SoakSample) {
        let Some(i) = self.tracker.push_interval(s) else {
            return;
        };
        if self.out.json_stream {
            let _ = self.out.event(&SoakEvent::Interval { interval: &i });
        } else if self.out.human() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{}",
                linerate_report::soak_live_line(&i)
            );
        }
    }
}

fn check_times(a: &SoakArgs) -> anyhow::Result<()> {
    if a.interval < MIN_INTERVAL {
        bail!(
            "--interval {:?}: at least {} ms is expected",
            a.interval,
            MIN_INTERVAL.as_millis()
        );
    }
    if a.duration < a.interval {
        bail!(
            "--duration {:?} is shorter than --interval {:?}: a soak needs at least one interval",
            a.duration,
            a.interval
        );
    }
    if a.duration > Duration::from_secs(7 * 24 * 3600) {
        bail!("--duration {:?}: at most 7 days is accepted", a.duration);
    }
    Ok(())
}

/// The judge's thresholds: the defaults, with each `--threshold` (given at most once) set.
/// `linerate watch` takes the same flag.
pub fn judge_params(set: &[(linerate_soak::Threshold, f64)]) -> anyhow::Result<JudgeParams> {
    let mut jp = JudgeParams::default();
    let mut given = Vec::new();
    for (t, v) in set {
        if given.contains(t) {
            bail!("--threshold {t} is given twice: give each threshold once");
        }
        given.push(*t);
        jp.set(*t, *v).map_err(|e| anyhow!("--threshold {e}"))?;
    }
    Ok(jp)
}

pub fn run(a: &SoakArgs, style: Style) -> anyhow::Result<u8> {
    if a.iperf3 {
        bail!("soak --iperf3: a soak judges the port counters of both ends, and iperf3's protocol carries none of the far end's (its results have bytes, loss and CPU only); soak against `linerate serve` on the far host (--ssh starts one there for the run)");
    }
    check_times(a)?;
    let jp = judge_params(&a.threshold)?;
    let out = Out {
        style,
        json: a.json,
        json_stream: a.json_stream,
    };
    // An active soak's server: found, or started over ssh, before the soak begins.
    let server = if a.passive {
        None
    } else {
        Some(soak_server(a)?)
    };
    let params = SoakParams {
        host: server.as_ref().map(|s| s.name.clone()),
        duration_s: a.duration.as_secs_f64(),
        interval_s: a.interval.as_secs_f64(),
        passive: a.passive,
        // RDMA traffic ran beside the streams: asked for, or added because the path is RDMA's.
        rdma: server.as_ref().is_some_and(|s| s.rdma.is_some()),
        both_ways: !(a.one_way || a.reverse || a.passive),
    };
    if out.human() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}",
            linerate_report::thresholds_words(&jp)
        );
    }
    out.event(&SoakEvent::Start {
        schema_version: linerate_facts::SCHEMA_VERSION,
        tool: linerate_facts::TOOL,
        params: &params,
        thresholds: &jp,
    })?;
    let cost = Arc::new(SamplingCost::default());
    let mut feed = Feed {
        tracker: Tracker::new(),
        out: &out,
    };
    let started = Instant::now();
    let error = match &server {
        None => passive(a, &mut feed, &cost),
        Some(server) => active(server, &mut feed, &cost)?,
    };
    // A far end started over ssh ends now.
    drop(server);
    let wall = started.elapsed().as_secs_f64();
    let mut report = judge(&feed.tracker, &params, &jp);
    report.error.clone_from(&error);
    if let Some(e) = &error {
        out.event(&SoakEvent::Error { error: e.clone() })?;
    }
    finish(a, &out, &report, &cost, wall)?;
    Ok(exit_code(&report))
}

/// 2 when the soak stopped early, else 1 when a port is marginal or bad, else 0.
fn exit_code(r: &SoakReport) -> u8 {
    if r.error.is_some() {
        super::EXIT_CANNOT_RUN
    } else if r.verdict >= Verdict::Marginal {
        super::EXIT_FINDINGS
    } else {
        0
    }
}

/// The local ports only, no traffic, until the duration or Ctrl-C / SIGTERM.
fn passive(a: &SoakArgs, feed: &mut Feed<'_>, cost: &Arc<SamplingCost>) -> Option<String> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let mut sample =
        (sampler_fn(a.root.clone(), End::Local, Arc::clone(cost)))(IpAddr::from([0, 0, 0, 0]));
    let start = Instant::now();
    let n = (a.duration.as_secs_f64() / a.interval.as_secs_f64()).floor() as u64;
    feed.push(&sample(0, 0.0));
    for seq in 1..=n {
        let due = start + a.interval.mul_f64(seq as f64);
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed) {
                return Some("interrupted: the soak was stopped before its duration".into());
            }
            std::thread::sleep(
                due.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
            );
        }
        feed.push(&sample(seq, start.elapsed().as_secs_f64()));
    }
    None
}

/// The server of an active soak, and what runs against it.
struct SoakServer {
    addr: SocketAddr,
    /// HOST:PORT, as the report shows it.
    name: String,
    psk: Option<linerate_proto::Psk>,
    /// The soak's TCP test.
    params: TestParams,
    /// RDMA traffic beside it: its writes in flight, or None for none.
    rdma: Option<u32>,
    root: PathBuf,
    /// The far end started over ssh (`--ssh`); it ends when this is dropped.
    far: Option<super::far::Started>,
}

/// HOST (or the far end `--ssh` starts), the soak's test and its key.
fn soak_server(a: &SoakArgs) -> anyhow::Result<SoakServer> {
    let target = super::far::target(a.host.as_deref(), &a.ssh)?
        .context("a soak needs HOST (or --passive)")?;
    let port = a.port.unwrap_or(linerate_proto::DEFAULT_PORT);
    let mut addr: SocketAddr = super::bench::lookup(&target.host, port)?[0];
    let params = soak_params(a)?;
    let rdma = (a.rdma || a.rdma_window.is_some() || (!a.no_rdma && path_is_rdma(addr)))
        .then(|| a.rdma_window.unwrap_or(defaults::RDMA_WINDOW));
    let mut psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    let far = match &target.ssh {
        Some(ssh) => {
            let mut tests = vec![params.clone()];
            if let Some(window) = rdma {
                tests.push(rdma_params(params.duration_ms, window));
            }
            let started = ssh.start(
                addr.ip(),
                a.port,
                super::far::Needs {
                    tests: u32::try_from(tests.len()).unwrap_or(2),
                    // The RDMA traffic runs beside the TCP streams, not after them.
                    seconds: params.duration_ms as f64 / 1000.0,
                    write_dir: None,
                    serve_args: super::far::serve_limits(&tests),
                },
            )?;
            addr = started.addr;
            psk = Some(started.psk.clone());
            Some(started)
        }
        None => None,
    };
    Ok(SoakServer {
        addr,
        name: format!("{}:{}", target.host, addr.port()),
        psk,
        params,
        rdma,
        root: a.root.clone(),
        far,
    })
}

/// The soak's TCP test: the streams, both ways or one, for the duration, sampled each interval.
fn soak_params(a: &SoakArgs) -> anyhow::Result<TestParams> {
    let direction = if a.one_way {
        Direction::Send
    } else if a.reverse {
        Direction::Receive
    } else {
        Direction::Bidir
    };
    let duration_ms = u64::try_from(a.duration.as_millis()).unwrap_or(u64::MAX);
    let p = TestParams {
        streams: a.parallel,
        duration_ms,
        interval_ms: u64::try_from(a.interval.as_millis()).unwrap_or(u64::MAX),
        length: defaults::default_length(a.parallel, direction == Direction::Bidir),
        soak: true,
        ..TestParams::new(TestKind::TcpBw, direction)
    };
    p.check_shape()
        .map_err(|e| anyhow::anyhow!(e.with_option()))?;
    Ok(p)
}

/// TCP both ways (or one) against the server while both ends sample; `Ok(Some(error))` when
/// it stopped early after measuring something, `Err` when nothing could be measured.
fn active(
    s: &SoakServer,
    feed: &mut Feed<'_>,
    cost: &Arc<SamplingCost>,
) -> anyhow::Result<Option<String>> {
    let server = s.addr;
    let cfg = ClientConfig {
        psk: s.psk.clone(),
        soak: Some(sampler_fn(s.root.clone(), End::Local, Arc::clone(cost))),
        ..ClientConfig::new(server, s.params.clone())
    };
    let rdma = s
        .rdma
        .map(|window| rdma_start(server, cfg.psk.clone(), s.params.duration_ms, window));
    let run = linerate_bench::run_client(&cfg, &mut |e| match e {
        Event::LocalSoak(s) | Event::RemoteSoak(s) => feed.push(&s),
        _ => {}
    });
    let rdma_err = rdma.and_then(rdma_finish);
    let run =
        run.map_err(
            |e| match s.far.as_ref().and_then(|_| super::far::connect_failed(&e)) {
                Some(explained) => anyhow::anyhow!("soak: {explained}"),
                None => anyhow::anyhow!("soak against {server}: {e}"),
            },
        )?;
    let errors: Vec<String> = run.error.into_iter().chain(rdma_err).collect();
    Ok((!errors.is_empty()).then(|| errors.join("; ")))
}

/// The route to `server` leaves through an InfiniBand or RoCE port of this (live) host: then
/// the soak adds RDMA traffic without `--rdma`, as the counters of such a port see it too.
fn path_is_rdma(server: SocketAddr) -> bool {
    // A connected UDP socket asks the kernel for the route; no packet is sent.
    let local = std::net::UdpSocket::bind(if server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    })
    .and_then(|u| u.connect(server).and_then(|()| u.local_addr()));
    let Some(iface) = local
        .ok()
        .and_then(|l| linerate_engine::sys::interface_of(l.ip()))
    else {
        return false;
    };
    linerate_inventory::probe(Path::new("/")).is_ok_and(|inv| {
        inv.ports.iter().any(|p| {
            p.netdev.as_deref() == Some(iface.as_str())
                && matches!(
                    p.kind,
                    linerate_facts::PortKind::Infiniband | linerate_facts::PortKind::Roce
                )
        })
    })
}

/// `--rdma`: an RDMA write bandwidth test against the same server for the soak's duration, on
/// its own thread and control connection (the server runs it as a second test).
fn rdma_start(
    server: SocketAddr,
    psk: Option<linerate_proto::Psk>,
    duration_ms: u64,
    window: u32,
) -> std::thread::JoinHandle<Result<linerate_bench::ClientRun, String>> {
    let cfg = ClientConfig {
        psk,
        ..ClientConfig::new(server, rdma_params(duration_ms, window))
    };
    std::thread::spawn(move || {
        linerate_bench::run_client(&cfg, &mut |_| {}).map_err(|e| e.to_string())
    })
}

/// The RDMA write bandwidth test beside the soak's streams, `window` writes in flight.
fn rdma_params(duration_ms: u64, window: u32) -> TestParams {
    TestParams {
        duration_ms,
        interval_ms: 0,
        length: defaults::RDMA_LENGTH,
        rdma: Some(linerate_proto::RdmaSpec {
            op: linerate_proto::RdmaOp::Write,
            latency: false,
            provider: None,
            window,
            qps: 1,
            verify: false,
            sweep: false,
        }),
        ..TestParams::new(TestKind::Rdma, Direction::Send)
    }
}

/// The RDMA traffic's rate on stderr; its error, if it failed, for the report.
fn rdma_finish(
    h: std::thread::JoinHandle<Result<linerate_bench::ClientRun, String>>,
) -> Option<String> {
    match h.join() {
        Ok(Ok(run)) => {
            let gbps = run
                .rdma
                .as_ref()
                .and_then(|r| r.rows.first())
                .map_or(0.0, |r| r.gbps);
            let _ = writeln!(
                std::io::stderr().lock(),
                "rdma: {} Gb/s beside the TCP streams",
                linerate_units::fmt_round(gbps, 2)
            );
            run.error.map(|e| format!("rdma traffic: {e}"))
        }
        Ok(Err(e)) => Some(format!("rdma traffic: {e}")),
        Err(_) => Some("rdma traffic: its thread failed".into()),
    }
}

/// Print the result as asked and write the files; the sampling cost goes to stderr.
fn finish(
    a: &SoakArgs,
    out: &Out,
    report: &SoakReport,
    cost: &SamplingCost,
    wall_s: f64,
) -> anyhow::Result<()> {
    if out.json {
        print(&format!("{}\n", linerate_report::soak_json(report)?))?;
    } else if out.json_stream {
        out.event(&SoakEvent::End { report })?;
    } else {
        print(&linerate_report::render_soak(report, out.style))?;
    }
    if let Some(f) = &a.report {
        std::fs::write(f, linerate_report::soak_html(report))
            .with_context(|| format!("--report {}: cannot write it", f.display()))?;
    }
    if let Some(dir) = &a.textfile {
        write_textfile(dir, &linerate_report::soak_textfile(report))?;
    }
    let cpu_s = cost.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9;
    let n = cost.samples.load(Ordering::Relaxed);
    if n > 0 {
        let _ = writeln!(
            std::io::stderr().lock(),
            "sampling: {n} samples on this host, {:.1} ms CPU each, {:.3}% of one core over {:.1} s",
            cpu_s / n as f64 * 1e3,
            cpu_s / wall_s.max(1e-9) * 100.0,
            wall_s
        );
    }
    Ok(())
}

/// `DIR/linerate_soak.prom`, atomically: a temporary file in DIR (so the rename stays on one
/// filesystem), readable by node_exporter's user, then renamed over the old one.
pub fn write_textfile(dir: &Path, text: &str) -> anyhow::Result<()> {
    let ctx = || format!("--textfile {}", dir.display());
    if !dir.is_dir() {
        bail!(
            "--textfile {}: not a directory (expected node_exporter's --collector.textfile.directory)",
            dir.display()
        );
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".linerate_soak.")
        .suffix(".prom.tmp")
        .tempfile_in(dir)
        .with_context(ctx)?;
    tmp.write_all(text.as_bytes()).with_context(ctx)?;
    tmp.as_file().sync_all().with_context(ctx)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
            .with_context(ctx)?;
    }
    tmp.persist(dir.join(TEXTFILE_NAME))
        .map_err(|e| e.error)
        .with_context(ctx)?;
    Ok(())
}
