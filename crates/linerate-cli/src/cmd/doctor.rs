//! `linerate doctor`: the options from the command line, one run of `linerate_doctor::run`
//! (its progress said on stderr as it goes), then the report as text, JSON or HTML.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use linerate_doctor::{Depth, DoctorOptions, Progress, RdmaMode, StartedProtocol};
use linerate_report::Style;
use linerate_results::DoctorReport;

use crate::cli::DoctorArgs;
use crate::out::print;

pub fn run(a: &DoctorArgs, style: Style) -> anyhow::Result<u8> {
    let (o, copied) = options(a)?;
    let live = !a.json && std::io::stderr().is_terminal();
    let mut progress = |p: Progress<'_>| {
        if live {
            eprintln!("{}", style.dim(&format!("  {}", progress_line(p))));
        }
    };
    let mut report = linerate_doctor::run(&o, &mut progress).map_err(|e| match e {
        // A far end that does not answer on its port: say what that means.
        linerate_doctor::DoctorError::Client(c) if o.far_end.is_some() => {
            anyhow::anyhow!(super::far::connect_failed(&c).unwrap_or_else(|| c.to_string()))
        }
        e => e.into(),
    })?;
    report.far_end.copied = copied
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    render(a, &report, style)?;
    let failed = super::fail_threshold(a.fail_on)
        .is_some_and(|t| report.findings.iter().any(|f| f.severity >= t));
    Ok(if failed { super::EXIT_FINDINGS } else { 0 })
}

/// What doctor is asked, from the command line: the far end (HOST resolved, or started over
/// `--ssh` once the local tests are done), the depth, the disks, RDMA. Refused before any
/// test: a report that cannot be written, `--iperf3` without a host, a key file unreadable.
/// With it, the slot where an `--ssh` far end started from a copy of this binary says so.
fn options(a: &DoctorArgs) -> anyhow::Result<(DoctorOptions, CopySlot)> {
    let target = super::far::target(a.host.as_deref(), &a.ssh)?;
    let port = a.port.unwrap_or(if a.iperf3 {
        linerate_iperf3::DEFAULT_PORT
    } else {
        linerate_proto::DEFAULT_PORT
    });
    anyhow::ensure!(
        !a.iperf3 || target.is_some(),
        "--iperf3 needs HOST, the host running `iperf3 -s` (or --ssh SSHHOST to start one there)"
    );
    let server: Option<SocketAddr> = match &target {
        Some(t) => super::far::lookup(&t.host, port)?.first().copied(),
        None => None,
    };
    // `--ssh`: doctor starts the far end itself, once its local tests are done.
    let copied = CopySlot::default();
    let far_end = match (target.and_then(|t| t.ssh), server) {
        (Some(ssh), Some(s)) if a.iperf3 => Some(iperf3_starter(a, ssh, s)),
        (Some(ssh), Some(s)) => Some(far_end_starter(a, ssh, s, CopySlot::clone(&copied))),
        _ => None,
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
        server: if far_end.is_some() { None } else { server },
        iperf3: a.iperf3,
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
        far_end,
    };
    Ok((o, copied))
}

/// One line of progress: a step in doctor's words, a disk by its figures.
fn progress_line(p: Progress<'_>) -> String {
    match p {
        Progress::Line(s) => s.to_string(),
        Progress::Disk(r) => format!("  → {}", linerate_report::disk::summary(r)),
    }
}

/// The report: `--report` as HTML, then JSON or text on stdout.
fn render(a: &DoctorArgs, report: &DoctorReport, style: Style) -> anyhow::Result<()> {
    if let Some(path) = &a.report {
        std::fs::write(path, linerate_report::doctor_html(report))
            .with_context(|| format!("writing --report {}", path.display()))?;
    }
    if a.json {
        let mut s = serde_json::to_string_pretty(report)?;
        s.push('\n');
        print(&s)?;
    } else {
        print(&linerate_report::render_doctor(report, style))?;
        if let Some(path) = &a.report {
            print(&format!("report written to {}\n", path.display()))?;
        }
    }
    Ok(())
}

/// Starts doctor's far end over ssh with what its plan needs: a key of its own, the limits of
/// the tests, a scratch directory for the copy (in `--ssh-disk`, or the login directory).
/// Where the far end's starter leaves what `--ssh-copy` sent, for the report.
type CopySlot = std::sync::Arc<std::sync::Mutex<Option<linerate_facts::FarEndCopy>>>;

fn far_end_starter(
    a: &DoctorArgs,
    ssh: super::far::SshTarget,
    server: SocketAddr,
    copied: CopySlot,
) -> linerate_doctor::StartFarEnd {
    let (port, disk) = (a.port, a.ssh_disk.clone());
    std::sync::Arc::new(move |needs: &linerate_doctor::FarEndNeeds| {
        let started = ssh
            .start(
                server.ip(),
                port,
                super::far::Needs {
                    tests: u32::try_from(needs.tests.len()).unwrap_or(u32::MAX),
                    seconds: needs.seconds(),
                    write_dir: needs
                        .write_dir
                        .then(|| disk.clone().unwrap_or_else(|| ".".into())),
                    serve_args: super::far::serve_limits(&needs.tests),
                },
            )
            .map_err(|e| format!("{e:#}"))?;
        started.copied.clone_into(
            &mut copied
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        Ok(linerate_doctor::StartedFarEnd {
            addr: started.addr,
            speaks: StartedProtocol::Linerate {
                psk: started.psk.clone(),
            },
            guard: Box::new(started),
        })
    })
}

/// `--iperf3 --ssh`: a stock `iperf3 -s` on the SSH host for all of doctor's tests (not `-1`:
/// doctor runs several), ended with the run.
fn iperf3_starter(
    a: &DoctorArgs,
    ssh: super::far::SshTarget,
    server: SocketAddr,
) -> linerate_doctor::StartFarEnd {
    let port = a.port;
    std::sync::Arc::new(move |needs: &linerate_doctor::FarEndNeeds| {
        let started = ssh
            .start_iperf3(server.ip(), port, needs.seconds(), false)
            .map_err(|e| format!("{e:#}"))?;
        Ok(linerate_doctor::StartedFarEnd {
            addr: started.addr,
            speaks: StartedProtocol::Iperf3 {
                version: started.version,
            },
            guard: Box::new(started),
        })
    })
}
