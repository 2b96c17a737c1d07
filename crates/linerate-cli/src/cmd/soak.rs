//! `linerate soak HOST` and `linerate soak --passive`: the arguments, the far end (found, or
//! started over `--ssh`), one run of `linerate_soak_run` (both ends' counters sampled every
//! interval into soak's tracker, then judged), and the verdicts rendered as asked. Exit: 0
//! clean (or congested or insufficient), 1 a port marginal or bad, 2 the soak could not run or
//! stopped early (what was measured is still reported).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use linerate_inventory::counters::SamplingCost;
use linerate_proto::{defaults, Direction};
use linerate_report::Style;
use linerate_soak::{JudgeParams, SoakEvent, SoakReport, Verdict};
use linerate_soak_run::{path_is_rdma, rdma_test, tcp_test, SoakPlan, SoakServer};

use crate::cli::SoakArgs;
use crate::out::print;

/// The Prometheus text file's name in `--textfile DIR`.
pub const TEXTFILE_NAME: &str = "linerate_soak.prom";
/// The shortest interval (the protocol's).
const MIN_INTERVAL: Duration = Duration::from_millis(defaults::MIN_INTERVAL_MS);

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

pub fn run(a: &SoakArgs, style: Style) -> anyhow::Result<u8> {
    if a.iperf3 {
        bail!("soak --iperf3: a soak judges the port counters of both ends, and iperf3's protocol carries none of the far end's (its results have bytes, loss and CPU only); soak against `linerate serve` on the far host (--ssh starts one there for the run)");
    }
    check_times(a)?;
    let jp = JudgeParams::from_set(&a.threshold).map_err(|e| anyhow!("--threshold {e}"))?;
    let out = Out {
        style,
        json: a.json,
        json_stream: a.json_stream,
    };
    // An active soak's server: found, or started over ssh, before the soak begins. A far end
    // started over ssh ends when `far` is dropped, after the run.
    let (server, far) = if a.passive {
        (None, None)
    } else {
        let (s, far) = soak_server(a)?;
        (Some(s), far)
    };
    let plan = SoakPlan {
        root: a.root.clone(),
        duration: a.duration,
        interval: a.interval,
        server,
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
        params: &plan.params(),
        thresholds: &jp,
    })?;
    // A passive soak ends early on Ctrl-C or SIGTERM, with what it measured.
    let stop = Arc::new(AtomicBool::new(false));
    if a.passive {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
        }
    }
    let ran = linerate_soak_run::run(&plan, &jp, &stop, &mut |i| {
        if out.json_stream {
            let _ = out.event(&SoakEvent::Interval { interval: i });
        } else if out.human() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{}",
                linerate_report::soak_live_line(i)
            );
        }
    });
    let mut ran = ran.map_err(|e| {
        let name = plan
            .server
            .as_ref()
            .map_or(String::new(), |s| s.addr.to_string());
        match far.as_ref().and_then(|_| super::far::connect_failed(&e)) {
            Some(explained) => anyhow!("soak: {explained}"),
            None => anyhow!("soak against {name}: {e}"),
        }
    })?;
    // A far end started over ssh ends now; what was copied there is said in the report.
    ran.report.far_end_copy = far.as_ref().and_then(|f| f.copied.clone());
    drop(far);
    if let Some(gbps) = ran.rdma_gbps {
        let _ = writeln!(
            std::io::stderr().lock(),
            "rdma: {} Gb/s beside the TCP streams",
            linerate_units::fmt_round(gbps, 2)
        );
    }
    if let Some(e) = &ran.report.error {
        out.event(&SoakEvent::Error { error: e.clone() })?;
    }
    finish(a, &out, &ran.report, &ran.cost, ran.wall_s)?;
    Ok(exit_code(&ran.report))
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

/// HOST (or the far end `--ssh` starts) with the soak's tests and its key, and the far end
/// started over ssh (ended when it is dropped).
fn soak_server(a: &SoakArgs) -> anyhow::Result<(SoakServer, Option<super::far::Started>)> {
    let target = super::far::target(a.host.as_deref(), &a.ssh)?
        .context("a soak needs HOST (or --passive)")?;
    let port = a.port.unwrap_or(linerate_proto::DEFAULT_PORT);
    let mut addr: SocketAddr = super::far::lookup(&target.host, port)?[0];
    let direction = if a.one_way {
        Direction::Send
    } else if a.reverse {
        Direction::Receive
    } else {
        Direction::Bidir
    };
    let test = tcp_test(a.parallel, direction, a.duration, a.interval).map_err(|e| anyhow!(e))?;
    let rdma_window = (a.rdma || a.rdma_window.is_some() || (!a.no_rdma && path_is_rdma(addr)))
        .then(|| a.rdma_window.unwrap_or(defaults::RDMA_WINDOW));
    let mut psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    let far = match &target.ssh {
        Some(ssh) => {
            let mut tests = vec![test.clone()];
            if let Some(window) = rdma_window {
                tests.push(rdma_test(test.duration_ms, window));
            }
            let started = ssh.start(
                addr.ip(),
                a.port,
                super::far::Needs {
                    tests: u32::try_from(tests.len()).unwrap_or(2),
                    // The RDMA traffic runs beside the TCP streams, not after them.
                    seconds: test.duration_ms as f64 / 1000.0,
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
    let server = SoakServer {
        addr,
        name: format!("{}:{}", target.host, addr.port()),
        psk,
        test,
        rdma_window,
    };
    Ok((server, far))
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
    let (cpu_s, n) = cost.totals();
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
