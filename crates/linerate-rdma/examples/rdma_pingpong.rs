//! A small standalone driver of the engine (the CLI integration lives elsewhere): runs the
//! target on a thread and the initiator here, over one connection, and prints one line of JSON
//! per measurement. Used by `bench/rdma_compare.sh`.
//!
//! ```text
//! cargo run --release -p linerate-rdma --example rdma_pingpong -- \
//!     [--provider tcp] [--addr 127.0.0.1] [--op write|read|send] [--bw SIZE,...] [--lat SIZE,...]
//!     [--duration SECS] [--window N] [--iters N] [--verify]
//! ```
#![allow(clippy::result_large_err)] // the engine returns partial results with its errors, by value

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use linerate_rdma::{Fabric, Op, Params, RdmaError, TargetStats};

struct Args {
    provider: Option<String>,
    addr: IpAddr,
    op: Op,
    bw: Vec<usize>,
    lat: Vec<usize>,
    duration: f64,
    window: usize,
    iters: u64,
    verify: bool,
}

fn sizes(s: &str) -> Result<Vec<usize>, String> {
    if s == "all" {
        return Ok((1..=23).map(|i| 1usize << i).collect()); // 2 B .. 8 MiB, like perftest -a
    }
    s.split(',')
        .map(|x| x.trim().parse().map_err(|e| format!("size {x:?}: {e}")))
        .collect()
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        provider: Some("tcp".into()),
        addr: "127.0.0.1".parse().expect("ip"),
        op: Op::Write,
        bw: Vec::new(),
        lat: Vec::new(),
        duration: 2.0,
        window: 16,
        iters: 10_000,
        verify: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--provider" => a.provider = Some(v()?).filter(|p| p != "any"),
            "--addr" => a.addr = v()?.parse().map_err(|e| format!("--addr: {e}"))?,
            "--op" => {
                a.op = match v()?.as_str() {
                    "write" => Op::Write,
                    "read" => Op::Read,
                    "send" => Op::Send,
                    o => return Err(format!("--op {o}: expected write, read or send")),
                }
            }
            "--bw" => a.bw = sizes(&v()?)?,
            "--lat" => a.lat = sizes(&v()?)?,
            "--duration" => a.duration = v()?.parse().map_err(|e| format!("--duration: {e}"))?,
            "--window" => a.window = v()?.parse().map_err(|e| format!("--window: {e}"))?,
            "--iters" => a.iters = v()?.parse().map_err(|e| format!("--iters: {e}"))?,
            "--verify" => a.verify = true,
            o => return Err(format!("unknown argument {o}")),
        }
    }
    if a.bw.is_empty() && a.lat.is_empty() {
        a.bw = vec![1 << 20];
        a.lat = vec![8];
    }
    Ok(a)
}

fn run(a: &Args) -> Result<(), RdmaError> {
    let fabric = Fabric::load()?;
    let max = a.bw.iter().chain(&a.lat).copied().max().unwrap_or(1);
    let params = Params {
        window: a.window,
        verify: a.verify,
        max_size: max,
        ..Params::new(a.op, max)
    };
    let listener = fabric.listen(a.provider.as_deref(), a.addr)?;
    let server = SocketAddr::new(a.addr, listener.port());
    let p2 = params.clone();
    let budget = Duration::from_secs_f64(
        a.duration * (a.bw.len() + 1) as f64 + 60.0 * a.lat.len() as f64 + 30.0,
    );
    let target = std::thread::spawn(move || {
        let mut t = listener
            .accept(&p2, Duration::from_secs(10))
            .map_err(|e| (TargetStats::default(), e))?;
        t.serve(&AtomicBool::new(false), Instant::now() + budget)
    });
    let mut ini = fabric.connect(
        a.provider.as_deref(),
        a.addr,
        server,
        &params,
        Duration::from_secs(10),
    )?;
    let stop = AtomicBool::new(false);
    let meta = format!(
        r#""provider":"{}","domain":"{}","op":"{}","version":"{}""#,
        ini.provider(),
        ini.domain(),
        a.op,
        fabric.version()
    );
    for &size in &a.bw {
        let r = ini
            .bandwidth(
                size,
                Duration::from_secs_f64(a.duration),
                &stop,
                &mut |_| {},
            )
            .map_err(|(_, e)| e)?;
        out(&format!(
            r#"{{"kind":"bw",{meta},"size":{size},"window":{},"gbps":{:.4},"mb_per_s":{:.2},"messages_per_s":{:.1},"bytes":{},"seconds":{:.4},"verify_errors":{}}}"#,
            a.window,
            r.gbps,
            r.gbps * 1e3 / 8.0,
            r.messages_per_s,
            r.bytes,
            r.seconds,
            r.verify_errors
        ));
    }
    for &size in &a.lat {
        let r = ini
            .latency(size, a.iters, Duration::from_secs(60))
            .map_err(|(_, e)| e)?;
        out(&format!(
            r#"{{"kind":"lat",{meta},"size":{size},"samples":{},"rtt_min_us":{:.3},"rtt_p50_us":{:.3},"rtt_mean_us":{:.3},"rtt_p99_us":{:.3},"perftest_p50_us":{:.3},"perftest_mean_us":{:.3},"convention":"{}","transactions_per_s":{:.1}}}"#,
            r.samples,
            r.min_us,
            r.p50_us,
            r.mean_us,
            r.p99_us,
            r.perftest_p50_us,
            r.perftest_mean_us,
            r.convention.as_str(),
            r.transactions_per_s
        ));
    }
    ini.finish(Duration::from_secs(5))?;
    match target.join() {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((_, e))) => Err(e),
        Err(_) => Err(RdmaError::Protocol("target thread panicked".into())),
    }
}

/// One line to stdout; a closed pipe is not an error worth a panic.
fn out(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rdma_pingpong: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rdma_pingpong: {e}");
            ExitCode::FAILURE
        }
    }
}
