//! `linerate disk PATH`: throughput, IOPS and latency of the filesystem holding PATH.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::anyhow;
use linerate_report::disk::DiskHeading;
use linerate_report::Style;
use linerate_results::disk::{DiskReport, DiskTestKind};
use linerate_storage::{DiskEvent, DiskPlan, EngineChoice};
use linerate_units::fmt_bytes;
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
            emit(&linerate_report::disk::heading(&DiskHeading {
                path: &a.path,
                filesystem,
                file_bytes: *file_bytes,
                direct: *direct,
                engine: engine.as_str(),
                hipri: a.hipri,
                sqpoll: a.sqpoll,
                queue_depth: a.qd,
                jobs: a.jobs,
                seconds_per_test: a.time as f64 / 1000.0,
                buffer_bytes: plan.buffer_bytes(),
            }));
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
            emit(&linerate_report::disk::test_line(r, style));
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
