//! `linerate disk PATH`: throughput, IOPS and latency of the filesystem holding PATH.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::anyhow;
use linerate_report::Style;
use linerate_results::disk::{DiskReport, DiskTestKind, DiskTestResult};
use linerate_stats::LatencyUs;
use linerate_storage::size::fmt_bytes;
use linerate_storage::{DiskEvent, DiskPlan, EngineChoice};
use serde::Serialize;

use crate::cli::{DiskArgs, DiskEngineArg, DiskTestArg};
use crate::out::print;

pub fn plan(a: &DiskArgs) -> anyhow::Result<DiskPlan> {
    let tests = a
        .tests
        .iter()
        .map(|t| match t {
            DiskTestArg::SeqRead => DiskTestKind::SeqRead,
            DiskTestArg::SeqWrite => DiskTestKind::SeqWrite,
            DiskTestArg::RandRead => DiskTestKind::RandRead,
            DiskTestArg::RandWrite => DiskTestKind::RandWrite,
        })
        .collect();
    let p = DiskPlan {
        size: a.size,
        duration: Duration::from_millis(a.time),
        seq_block: a.block,
        queue_depth: a.qd,
        tests,
        engine: match a.engine {
            DiskEngineArg::Auto => EngineChoice::Auto,
            DiskEngineArg::IoUring => EngineChoice::IoUring,
            DiskEngineArg::Sync => EngineChoice::Sync,
        },
        direct: !a.buffered,
        jobs: a.jobs,
        hipri: a.hipri,
        sqpoll: a.sqpoll,
        ..DiskPlan::default()
    };
    p.validate().map_err(|e| match e.strip_prefix("block ") {
        Some(rest) => anyhow!("--block {rest}"),
        None => anyhow!(e),
    })?;
    Ok(p)
}

/// The `--json` document.
#[derive(Serialize)]
struct Doc<'a> {
    schema_version: u32,
    #[serde(flatten)]
    report: &'a DiskReport,
}

/// `850 ns`, `105 µs`, `6.21 ms`, `1.20 s`: three significant digits.
fn fmt_us(us: f64) -> String {
    let (v, unit) = if us < 1.0 {
        (us * 1000.0, "ns")
    } else if us < 1000.0 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// `1,234,567`.
fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line per test.
pub fn test_line(r: &DiskTestResult, style: Style) -> String {
    let (p50, p99) = r
        .latency_us
        .as_ref()
        .map_or(("-".into(), "-".into()), |l: &LatencyUs| {
            (fmt_us(l.p50), fmt_us(l.p99))
        });
    let mut line = format!(
        "  {:<10} {:>7}  {}  {:>9} Gb/s  {:>11} IOPS   p50 {:>8}   p99 {:>8}   {:<8} {}",
        r.kind.short(),
        fmt_bytes(r.block_bytes),
        style.bold(&format!("{:>7.2} GB/s", r.gb_per_s)),
        format!("{:.2}", r.gbps),
        thousands(r.iops),
        p50,
        p99,
        if r.direct { "direct" } else { "buffered" },
        r.engine.as_str(),
    );
    if let Some(cpu) = r.cpu_us_per_io {
        let _ = write!(
            line,
            "   CPU {:.0}% ({} per I/O)",
            r.cpu_percent,
            fmt_us(cpu)
        );
    }
    if r.jobs > 1 {
        for j in &r.per_job {
            let _ = write!(
                line,
                "\n    job {:<3} {:>7.2} GB/s  {:>11} IOPS   p50 {:>8}   p99 {:>8}",
                j.job,
                j.gb_per_s,
                thousands(j.iops),
                j.latency_us.map_or_else(|| "-".into(), |l| fmt_us(l.p50)),
                j.latency_us.map_or_else(|| "-".into(), |l| fmt_us(l.p99)),
            );
        }
    }
    for step in &r.job_scaling {
        let _ = write!(
            line,
            "\n    tried {} job{}: {} IOPS, {:.2} GB/s",
            step.jobs,
            if step.jobs == 1 { "" } else { "s" },
            thousands(step.iops),
            step.gb_per_s
        );
    }
    if let Some(e) = &r.error {
        let _ = write!(line, "\n    {} {e}", style.bold("stopped:"));
    }
    line.push('\n');
    line
}

fn header(
    a: &DiskArgs,
    plan: &DiskPlan,
    filesystem: &str,
    file_bytes: u64,
    direct: bool,
    engine: &str,
) -> String {
    format!(
        "linerate disk {}: {filesystem}, test file {}, {}, {engine}{}{}, QD {}{}, {} s per test, {} of buffers\n",
        a.path.display(),
        fmt_bytes(file_bytes),
        if direct { "O_DIRECT" } else { "buffered" },
        if a.hipri { " polled (hipri)" } else { "" },
        if a.sqpoll { " with SQPOLL" } else { "" },
        a.qd,
        if a.jobs > 1 { format!(" × {} jobs", a.jobs) } else { String::new() },
        a.time as f64 / 1000.0,
        fmt_bytes(plan.buffer_bytes()),
    )
}

/// Progress on stderr, only when it is a terminal (and never mixed into --json's stdout).
struct Progress {
    on: bool,
}

impl Progress {
    fn status(&self, s: &str) {
        if self.on {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K{s}");
            let _ = e.flush();
        }
    }

    fn clear(&self) {
        self.status("");
    }
}

pub fn run(a: &DiskArgs, style: Style) -> anyhow::Result<u8> {
    let plan = plan(a)?;
    let progress = Progress {
        on: std::io::stderr().is_terminal(),
    };
    let mut print_err: Option<std::io::Error> = None;
    let mut emit = |s: &str| {
        if print_err.is_none() && !a.json {
            if let Err(e) = print(s) {
                print_err = Some(e);
            }
        }
    };
    let result = linerate_storage::run(&a.path, &plan, |ev| match ev {
        DiskEvent::Prepared {
            file_bytes,
            direct,
            engine,
            filesystem,
            ..
        } => {
            emit(&header(
                a,
                &plan,
                filesystem,
                *file_bytes,
                *direct,
                engine.as_str(),
            ));
            progress.status(&format!(
                "filling the test file ({})",
                fmt_bytes(*file_bytes)
            ));
        }
        DiskEvent::Filling {
            done_bytes,
            total_bytes,
        } => progress.status(&format!(
            "filling the test file: {:.0}% of {}",
            *done_bytes as f64 * 100.0 / (*total_bytes).max(1) as f64,
            fmt_bytes(*total_bytes)
        )),
        DiskEvent::TestStarted { kind, duration } => progress.status(&format!(
            "running {kind} for {:.1} s",
            duration.as_secs_f64()
        )),
        DiskEvent::TestDone(r) => {
            progress.clear();
            emit(&test_line(r, style));
        }
    });
    progress.clear();
    let (report, err) = match result {
        Ok(r) => (Some(r), None),
        Err(e) => (e.partial.as_deref().cloned(), Some(e.kind)),
    };
    if let Some(r) = &report {
        if a.json {
            let mut s = serde_json::to_string_pretty(&Doc {
                schema_version: linerate_facts::SCHEMA_VERSION,
                report: r,
            })?;
            s.push('\n');
            print(&s)?;
        } else {
            for n in &r.notes {
                emit(&format!("  {} {n}\n", style.dim("note:")));
            }
        }
    }
    if let Some(e) = print_err {
        return Err(e.into());
    }
    match err {
        None => Ok(0),
        Some(e) => Err(anyhow!(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_us(0.85), "850 ns");
        assert_eq!(fmt_us(105.2), "105 µs");
        assert_eq!(fmt_us(6210.0), "6.21 ms");
        assert_eq!(fmt_us(1_200_000.0), "1.20 s");
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(0.0), "0");
    }
}
