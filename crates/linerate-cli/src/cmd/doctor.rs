use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use linerate_doctor::{Depth, DoctorOptions, RdmaMode};
use linerate_report::Style;

use crate::cli::DoctorArgs;
use crate::out::print;

pub fn run(a: &DoctorArgs, style: Style) -> anyhow::Result<u8> {
    let server: Option<SocketAddr> = match &a.host {
        Some(h) => super::bench::lookup(h, a.port)?.first().copied(),
        None => None,
    };
    if let Some(r) = &a.report {
        // Fail before the tests, not after, when the report cannot be written.
        if let Some(dir) = r.parent().filter(|d| !d.as_os_str().is_empty()) {
            anyhow::ensure!(
                dir.is_dir(),
                "--report {}: directory {} does not exist",
                r.display(),
                dir.display()
            );
        }
    }
    let psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    let o = DoctorOptions {
        server,
        bind: a.bind,
        psk,
        depth: if a.quick {
            Depth::Quick
        } else if a.thorough {
            Depth::Thorough
        } else {
            Depth::Normal
        },
        root: PathBuf::from("/"),
        inventory: crate::iface::provider(),
        disks: if a.no_disk {
            Vec::new()
        } else if a.disk.is_empty() {
            vec![std::env::current_dir()
                .context("the current directory (for the disk test; --no-disk skips it)")?]
        } else {
            a.disk.clone()
        },
        rdma: match (&a.rdma_provider, a.no_rdma) {
            (_, true) => RdmaMode::Off,
            (Some(p), false) => RdmaMode::Provider(p.clone()),
            (None, false) => RdmaMode::Auto,
        },
    };
    let live = !a.json && std::io::stderr().is_terminal();
    let mut progress = |s: &str| {
        if live {
            eprintln!("{}", style.dim(&format!("  {s}")));
        }
    };
    let report = linerate_doctor::run(&o, &mut progress)?;
    if let Some(path) = &a.report {
        std::fs::write(path, linerate_report::render_html(&report))
            .with_context(|| format!("writing --report {}", path.display()))?;
    }
    if a.json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        print(&s)?;
    } else {
        print(&linerate_report::render_doctor(&report, style))?;
        if let Some(path) = &a.report {
            print(&format!("report written to {}\n", path.display()))?;
        }
    }
    let failed = super::fail_threshold(a.fail_on)
        .is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    Ok(if failed { super::EXIT_FINDINGS } else { 0 })
}
