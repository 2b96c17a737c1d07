//! RDMA tests over the control protocol: the server opens one libfabric listener per queue
//! pair and sends their ports in `accepted`; the client connects each after `start`, runs the
//! engine of `linerate-rdma` on its own thread, and both sides exchange `results` as for TCP.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::{Duration, Instant};

use linerate_engine::meter::Stop;
use linerate_proto::{
    CpuUsage, IntervalSample, RdmaListen, RdmaOp, RdmaSpec, RdmaTargetStats, SideResults,
    TestParams,
};
use linerate_rdma::{BwResult, Fabric, Initiator, LatResult, Listener, Op, Params};
use linerate_results::SizeRow;

/// How long connecting (client) and accepting (server) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn op(o: RdmaOp) -> Op {
    match o {
        RdmaOp::Write => Op::Write,
        RdmaOp::Read => Op::Read,
        RdmaOp::Send => Op::Send,
    }
}

/// The engine's parameters for a test: the region holds the largest message.
pub fn engine_params(p: &TestParams, r: &RdmaSpec) -> Params {
    Params {
        window: r.window as usize,
        verify: r.verify,
        max_size: p.length as usize,
        ..Params::new(op(r.op), p.length as usize)
    }
}

/// Message sizes of a test: every power of two from 2 bytes to `length` for a sweep.
pub fn sizes(p: &TestParams, r: &RdmaSpec) -> Vec<usize> {
    let max = p.length as usize;
    if !r.sweep {
        return vec![max];
    }
    let mut v: Vec<usize> = std::iter::successors(Some(2usize), |s| s.checked_mul(2))
        .take_while(|s| *s <= max)
        .collect();
    if v.last() != Some(&max) {
        v.push(max);
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// The server's listeners of one test.
#[derive(Debug)]
pub struct Listeners {
    list: Vec<Listener>,
    pub listen: RdmaListen,
}

/// Load libfabric and listen once per queue pair on `ip`; the error is for the client.
pub fn listen(ip: IpAddr, r: &RdmaSpec) -> Result<Listeners, String> {
    let fabric = Fabric::load().map_err(|e| format!("on the server: {e}"))?;
    let mut list = Vec::new();
    for _ in 0..r.qps.max(1) {
        list.push(
            fabric
                .listen(r.provider.as_deref(), ip)
                .map_err(|e| format!("on the server: {e}"))?,
        );
    }
    let listen = RdmaListen {
        ports: list.iter().map(Listener::port).collect(),
        provider: list[0].provider().to_string(),
        domain: list[0].domain().to_string(),
    };
    Ok(Listeners { list, listen })
}

/// Accept and serve every queue pair until the client is done, `stop` is set, or `deadline`.
pub fn serve(
    l: Listeners,
    p: &TestParams,
    r: &RdmaSpec,
    stop: &Stop,
    deadline: Instant,
) -> SideResults {
    let params = engine_params(p, r);
    let start = Instant::now();
    let handles: Vec<_> = l
        .list
        .into_iter()
        .map(|listener| {
            let (params, stop) = (params.clone(), stop.clone());
            thread::spawn(move || {
                linerate_engine::timed(|| {
                    let mut t = listener
                        .accept(&params, CONNECT_TIMEOUT)
                        .map_err(|e| e.to_string())?;
                    t.serve(stop.flag(), deadline)
                        .map_err(|(s, e)| format!("{e} (after {} messages)", s.messages))
                })
            })
        })
        .collect();
    let mut stats = RdmaTargetStats {
        provider: l.listen.provider.clone(),
        domain: l.listen.domain.clone(),
        ..RdmaTargetStats::default()
    };
    let (mut user, mut system) = (0.0, 0.0);
    let mut errors = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok((Ok(s), u, sy)) => {
                stats.messages += s.messages;
                stats.bytes += s.bytes;
                stats.verify_errors += s.verify_errors;
                user += u;
                system += sy;
            }
            Ok((Err(e), u, sy)) => {
                errors.push(format!("queue pair {i}: {e}"));
                user += u;
                system += sy;
            }
            Err(_) => errors.push(format!("queue pair {i}: the thread panicked")),
        }
    }
    let wall = start.elapsed().as_secs_f64().max(1e-9);
    SideResults {
        cpu: CpuUsage {
            user_s: user,
            system_s: system,
            wall_s: wall,
            percent: (user + system) / wall * 100.0,
        },
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        rdma: Some(stats),
        ..SideResults::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/// What the client measured.
#[derive(Debug, Clone, Default)]
pub struct RdmaRun {
    pub provider: String,
    pub domain: String,
    /// Bandwidth: one row per size (one without a sweep).
    pub rows: Vec<SizeRow>,
    /// Queue pair 0's intervals of the (last) size.
    pub intervals: Vec<IntervalSample>,
    pub latency: Option<LatResult>,
    pub verify_errors: u64,
    pub cpu: CpuUsage,
    pub errors: Vec<String>,
}

struct QpOut {
    bw: Vec<BwResult>,
    lat: Option<LatResult>,
    error: Option<String>,
    provider: String,
    domain: String,
}

fn run_qp(
    mut ini: Initiator,
    p: &TestParams,
    r: &RdmaSpec,
    stop: &AtomicBool,
    live: Option<&std::sync::mpsc::Sender<IntervalSample>>,
) -> QpOut {
    let mut out = QpOut {
        bw: Vec::new(),
        lat: None,
        error: None,
        provider: ini.provider().to_string(),
        domain: ini.domain().to_string(),
    };
    let total = Duration::from_millis(p.duration_ms);
    if r.latency {
        let size = p.length as usize;
        match ini.latency(size, 50_000_000, total) {
            Ok(l) => out.lat = Some(l),
            Err((l, e)) => {
                out.lat = Some(l);
                out.error = Some(e.to_string());
            }
        }
    } else {
        let list = sizes(p, r);
        // A sweep shares the time among the sizes, at least 0.2 s each.
        let each = (total / list.len() as u32).max(Duration::from_millis(200));
        for size in list {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let mut on = |s: linerate_rdma::RdmaInterval| {
                if let Some(tx) = live {
                    let _ = tx.send(IntervalSample {
                        start_s: s.start_s,
                        end_s: s.end_s,
                        bytes: vec![s.bytes],
                        retransmits: None,
                        lost: None,
                        omitted: false,
                    });
                }
            };
            match ini.bandwidth(size, each, stop, &mut on) {
                Ok(b) => out.bw.push(b),
                Err((b, e)) => {
                    out.bw.push(b);
                    out.error = Some(format!("{size}-byte messages: {e}"));
                    break;
                }
            }
        }
    }
    if let Err(e) = ini.finish(Duration::from_secs(5)) {
        out.error.get_or_insert_with(|| e.to_string());
    }
    out
}

/// Wait for the queue pairs' threads: their results, and the user and system CPU seconds
/// they used in all. A queue pair's error, or its thread's panic, goes to `errors`.
fn join_qps(
    handles: Vec<thread::JoinHandle<linerate_engine::Timed<QpOut>>>,
    errors: &mut Vec<String>,
) -> (Vec<QpOut>, f64, f64) {
    let (mut user, mut system) = (0.0, 0.0);
    let mut outs = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok((o, u, s)) => {
                user += u;
                system += s;
                if let Some(e) = &o.error {
                    errors.push(format!("queue pair {i}: {e}"));
                }
                outs.push(o);
            }
            Err(_) => errors.push(format!("queue pair {i}: the thread panicked")),
        }
    }
    (outs, user, system)
}

/// One message size's row: the queue pairs' results at that size, summed.
fn size_row(size: usize, per: &[&BwResult]) -> SizeRow {
    let bytes: u64 = per.iter().map(|b| b.bytes).sum();
    let messages: u64 = per.iter().map(|b| b.messages).sum();
    let seconds = per.iter().map(|b| b.seconds).fold(0.0_f64, f64::max);
    SizeRow {
        size_bytes: size,
        bytes,
        messages,
        seconds,
        gbps: linerate_units::gbps(bytes, seconds),
        messages_per_s: if seconds > 0.0 {
            messages as f64 / seconds
        } else {
            0.0
        },
    }
}

/// Connect every queue pair to the server's listeners and run the test.
/// `live` receives queue pair 0's intervals as they happen.
/// Where an RDMA test's queue pairs go: the server's address, this end's, and this end's
/// device when one was named (`--device`).
#[derive(Debug, Clone, Copy)]
pub struct RdmaPath<'a> {
    pub server: IpAddr,
    pub local: IpAddr,
    pub device: Option<&'a str>,
}

pub fn run_client(
    path: RdmaPath<'_>,
    listen: &RdmaListen,
    p: &TestParams,
    r: &RdmaSpec,
    stop: &Stop,
    live: &mut dyn FnMut(IntervalSample),
) -> RdmaRun {
    let mut run = RdmaRun {
        provider: listen.provider.clone(),
        domain: listen.domain.clone(),
        ..RdmaRun::default()
    };
    let fabric = match Fabric::load() {
        Ok(f) => f,
        Err(e) => {
            run.errors.push(format!("this host: {e}"));
            return run;
        }
    };
    let RdmaPath {
        server: server_ip,
        local: local_ip,
        device,
    } = path;
    let params = engine_params(p, r);
    // Use the provider the server chose, so both ends speak the same.
    let provider = Some(listen.provider.clone());
    let start = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel::<IntervalSample>();
    let handles: Vec<_> = listen
        .ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let server = SocketAddr::new(server_ip, *port);
            let (fabric, params, provider) = (fabric.clone(), params.clone(), provider.clone());
            let device = device.map(str::to_string);
            let (p, r, stop) = (p.clone(), r.clone(), stop.clone());
            let tx = (i == 0).then(|| tx.clone());
            thread::spawn(move || {
                linerate_engine::timed(|| {
                    match fabric.connect_on(
                        provider.as_deref(),
                        device.as_deref(),
                        local_ip,
                        server,
                        &params,
                        CONNECT_TIMEOUT,
                    ) {
                        Ok(ini) => run_qp(ini, &p, &r, stop.flag(), tx.as_ref()),
                        Err(e) => QpOut {
                            bw: Vec::new(),
                            lat: None,
                            error: Some(e.to_string()),
                            provider: String::new(),
                            domain: String::new(),
                        },
                    }
                })
            })
        })
        .collect();
    drop(tx);
    // Forward queue pair 0's intervals while the test runs.
    while let Ok(s) = rx.recv() {
        run.intervals.push(s.clone());
        live(s);
    }
    let (outs, user, system) = join_qps(handles, &mut run.errors);
    if let Some(o) = outs.iter().find(|o| !o.domain.is_empty()) {
        run.provider.clone_from(&o.provider);
        run.domain.clone_from(&o.domain);
    }
    // Rows: per size, the queue pairs summed (they ran at the same time).
    for size in sizes(p, r) {
        let per: Vec<&BwResult> = outs
            .iter()
            .filter_map(|o| o.bw.iter().find(|b| b.size == size))
            .collect();
        if per.is_empty() {
            continue;
        }
        run.verify_errors += per.iter().map(|b| b.verify_errors).sum::<u64>();
        run.rows.push(size_row(size, &per));
    }
    run.latency = outs.iter().find_map(|o| o.lat.clone());
    let wall = start.elapsed().as_secs_f64().max(1e-9);
    run.cpu = CpuUsage {
        user_s: user,
        system_s: system,
        wall_s: wall,
        percent: (user + system) / wall * 100.0,
    };
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_sizes_are_powers_of_two_up_to_the_length() {
        let mut p: TestParams = serde_json::from_str(
            r#"{"kind":"rdma","direction":"send","streams":1,"duration_ms":1000,"omit_ms":0,"interval_ms":0,"length":1000,"window":null,"bitrate_bps":0,"congestion":null,"zerocopy":false}"#,
        )
        .unwrap();
        let r = RdmaSpec {
            op: RdmaOp::Write,
            latency: false,
            provider: None,
            window: 4,
            qps: 1,
            verify: false,
            sweep: true,
        };
        assert_eq!(sizes(&p, &r), [2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]);
        p.length = 8 << 20;
        let s = sizes(&p, &r);
        assert_eq!((s.len(), s[22]), (23, 8 << 20));
        let one = RdmaSpec { sweep: false, ..r };
        assert_eq!(sizes(&p, &one), [8 << 20]);
    }

    /// The server admits an RDMA test by proto's figure for its registered memory (proto
    /// cannot see the engine): it must be what the engine registers, never less.
    #[test]
    fn admitted_memory_covers_what_the_engine_registers() {
        let mut p: TestParams = serde_json::from_str(
            r#"{"kind":"rdma","direction":"send","streams":1,"duration_ms":1000,"omit_ms":0,"interval_ms":0,"length":1,"window":null,"bitrate_bps":0,"congestion":null,"zerocopy":false}"#,
        )
        .unwrap();
        let mut checked = 0;
        for op in [RdmaOp::Write, RdmaOp::Read, RdmaOp::Send] {
            for verify in [false, true] {
                for latency in [false, true] {
                    for window in [1, 2, 16, 100, linerate_proto::RDMA_MAX_WINDOW] {
                        for length in [1, 2, 8, 4095, 4096, 65_536, 1 << 20, 3_000_001, 8 << 20] {
                            for qps in [1, 3, linerate_proto::RDMA_MAX_QPS] {
                                let r = RdmaSpec {
                                    op,
                                    latency,
                                    provider: None,
                                    window,
                                    qps,
                                    verify,
                                    sweep: false,
                                };
                                p.length = length;
                                p.rdma = Some(r.clone());
                                let engine = engine_params(&p, &r);
                                if engine.validate().is_err() {
                                    continue;
                                }
                                let exact = u64::from(qps) * engine.region_bytes() as u64;
                                let admitted = p.server_memory_bytes();
                                assert_eq!(
                                    admitted, exact,
                                    "{op:?} verify={verify} latency={latency} window={window} length={length} qps={qps}: admitted bytes against registered bytes"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "only {checked} combinations were valid");
    }
}
