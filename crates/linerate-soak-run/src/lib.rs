//! The runtime of `linerate soak`, as `linerate-cluster` is `mesh`'s: both ends' port counters
//! sampled every interval into soak's tracker (the server's over the control connection,
//! `linerate_bench`'s client) while TCP streams run both ways (or one), RDMA writes beside them
//! on their own control connection when asked or when the path is RDMA's; or, passive, the
//! local ports alone until the duration or a stop. Then soak's judge (`linerate_soak::judge`).
//! The command (`linerate`'s `cmd/soak.rs`) resolves the far end, calls [`run`] and renders.
//!
//! An I/O crate of its own: it drives the bench client (`linerate-bench`), the counter sampler
//! (`linerate-inventory`) and soak's tracker (`linerate-soak`), and neither the bench nor the
//! inventory may depend on the tracker (the samples they exchange are `linerate-proto`'s).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linerate_bench::{ClientConfig, ClientError, ClientRun, Event};
use linerate_inventory::counters::{sampler_fn, SamplingCost};
use linerate_proto::soak::{End, SoakSample};
use linerate_proto::{defaults, Direction, Psk, TestKind, TestParams};
use linerate_soak::{judge, JudgeParams, SoakInterval, SoakParams, SoakReport, Tracker};

/// The server of an active soak, found (or started) by the caller.
#[derive(Debug, Clone)]
pub struct SoakServer {
    pub addr: SocketAddr,
    /// HOST:PORT, as the report shows it.
    pub name: String,
    pub psk: Option<Psk>,
    /// The soak's TCP test ([`tcp_test`]).
    pub test: TestParams,
    /// RDMA writes beside it: how many in flight ([`rdma_test`]); `None` for none.
    pub rdma_window: Option<u32>,
}

/// What to soak.
#[derive(Debug, Clone)]
pub struct SoakPlan {
    /// The root the counters are read under (`/` on a live system).
    pub root: PathBuf,
    pub duration: Duration,
    pub interval: Duration,
    /// The server of an active soak; `None` for a passive one (the local ports, no traffic).
    pub server: Option<SoakServer>,
}

impl SoakPlan {
    /// The parameters the report carries.
    pub fn params(&self) -> SoakParams {
        let s = self.server.as_ref();
        SoakParams {
            host: s.map(|s| s.name.clone()),
            duration_s: self.duration.as_secs_f64(),
            interval_s: self.interval.as_secs_f64(),
            passive: s.is_none(),
            // RDMA traffic ran beside the streams: asked for, or added because the path is
            // RDMA's.
            rdma: s.is_some_and(|s| s.rdma_window.is_some()),
            both_ways: s.is_some_and(|s| s.test.direction == Direction::Bidir),
        }
    }
}

/// A soak that ran: the judged report (its `error` set when it stopped early), what the
/// sampling cost on this host, and the RDMA traffic's rate when it ran.
#[derive(Debug)]
pub struct SoakOutcome {
    pub report: SoakReport,
    pub cost: Arc<SamplingCost>,
    /// Seconds from the first sample to the end of the traffic.
    pub wall_s: f64,
    /// Gb/s of the RDMA writes beside the streams, when they ran to the end.
    pub rdma_gbps: Option<f64>,
}

/// Runs the soak of `plan` and judges it with `jp`: each closed interval (either end's) goes
/// to `on_interval` as it happens. A passive soak ends at its duration or when `stop` is set.
/// `Err` when an active soak could measure nothing (its server refused or was unreachable);
/// one that stopped after measuring something is an outcome whose report says why.
pub fn run(
    plan: &SoakPlan,
    jp: &JudgeParams,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&SoakInterval),
) -> Result<SoakOutcome, ClientError> {
    let cost = Arc::new(SamplingCost::default());
    let mut tracker = Tracker::new();
    let mut feed = |s: &SoakSample| {
        if let Some(i) = tracker.push_interval(s) {
            on_interval(&i);
        }
    };
    let started = Instant::now();
    let (error, rdma_gbps) = match &plan.server {
        None => (passive(plan, &cost, stop, &mut feed), None),
        Some(server) => active(plan, server, &cost, &mut feed)?,
    };
    let wall_s = started.elapsed().as_secs_f64();
    let mut report = judge(&tracker, &plan.params(), jp);
    report.error = error;
    Ok(SoakOutcome {
        report,
        cost,
        wall_s,
        rdma_gbps,
    })
}

/// The local ports only, no traffic, until the duration or `stop`.
fn passive(
    plan: &SoakPlan,
    cost: &Arc<SamplingCost>,
    stop: &AtomicBool,
    feed: &mut dyn FnMut(&SoakSample),
) -> Option<String> {
    let mut sample =
        (sampler_fn(plan.root.clone(), End::Local, Arc::clone(cost)))(IpAddr::from([0, 0, 0, 0]));
    let start = Instant::now();
    let n = (plan.duration.as_secs_f64() / plan.interval.as_secs_f64()).floor() as u64;
    feed(&sample(0, 0.0));
    for seq in 1..=n {
        let due = start + plan.interval.mul_f64(seq as f64);
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed) {
                return Some("interrupted: the soak was stopped before its duration".into());
            }
            std::thread::sleep(
                due.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
            );
        }
        feed(&sample(seq, start.elapsed().as_secs_f64()));
    }
    None
}

/// TCP both ways (or one) against the server while both ends sample, RDMA writes beside them
/// when asked: the error of a soak that stopped early after measuring something, and the RDMA
/// rate. `Err` when nothing could be measured.
fn active(
    plan: &SoakPlan,
    s: &SoakServer,
    cost: &Arc<SamplingCost>,
    feed: &mut dyn FnMut(&SoakSample),
) -> Result<(Option<String>, Option<f64>), ClientError> {
    let cfg = ClientConfig {
        psk: s.psk.clone(),
        soak: Some(sampler_fn(plan.root.clone(), End::Local, Arc::clone(cost))),
        ..ClientConfig::new(s.addr, s.test.clone())
    };
    let rdma = s
        .rdma_window
        .map(|window| rdma_start(s.addr, cfg.psk.clone(), s.test.duration_ms, window));
    let run = linerate_bench::run_client(&cfg, &mut |e| match e {
        Event::LocalSoak(x) | Event::RemoteSoak(x) => feed(&x),
        _ => {}
    });
    let (rdma_gbps, rdma_err) = match rdma.map(rdma_finish) {
        Some((g, e)) => (g, e),
        None => (None, None),
    };
    let run = run?;
    let errors: Vec<String> = run.error.into_iter().chain(rdma_err).collect();
    Ok(((!errors.is_empty()).then(|| errors.join("; ")), rdma_gbps))
}

/// The soak's TCP test: `streams` streams in `direction` for `duration`, sampled each
/// `interval`; an error names the option at fault.
pub fn tcp_test(
    streams: u32,
    direction: Direction,
    duration: Duration,
    interval: Duration,
) -> Result<TestParams, String> {
    let p = TestParams {
        streams,
        duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        length: defaults::default_length(streams, direction == Direction::Bidir),
        soak: true,
        ..TestParams::new(TestKind::TcpBw, direction)
    };
    p.check_shape().map_err(|e| e.with_option())?;
    Ok(p)
}

/// The RDMA write bandwidth test beside the soak's streams, `window` writes in flight.
pub fn rdma_test(duration_ms: u64, window: u32) -> TestParams {
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

/// The route to `server` leaves through an InfiniBand or RoCE port of this (live) host: then
/// the soak adds RDMA traffic without `--rdma`, as the counters of such a port see it too.
pub fn path_is_rdma(server: SocketAddr) -> bool {
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

/// The RDMA writes against the same server for the soak's duration, on their own thread and
/// control connection (the server runs them as a second test).
fn rdma_start(
    server: SocketAddr,
    psk: Option<Psk>,
    duration_ms: u64,
    window: u32,
) -> JoinHandle<Result<ClientRun, String>> {
    let cfg = ClientConfig {
        psk,
        ..ClientConfig::new(server, rdma_test(duration_ms, window))
    };
    std::thread::spawn(move || {
        linerate_bench::run_client(&cfg, &mut |_| {}).map_err(|e| e.to_string())
    })
}

/// The RDMA traffic's rate, and its error if it failed, for the report.
fn rdma_finish(h: JoinHandle<Result<ClientRun, String>>) -> (Option<f64>, Option<String>) {
    match h.join() {
        Ok(Ok(run)) => {
            let gbps = run
                .rdma
                .as_ref()
                .and_then(|r| r.rows.first())
                .map_or(0.0, |r| r.gbps);
            (Some(gbps), run.error.map(|e| format!("rdma traffic: {e}")))
        }
        Ok(Err(e)) => (None, Some(format!("rdma traffic: {e}"))),
        Err(_) => (None, Some("rdma traffic: its thread failed".into())),
    }
}
