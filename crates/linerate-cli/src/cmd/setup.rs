//! `linerate setup`: detect, plan, print; `--apply` writes with backups; `--rollback ID`.

use anyhow::{bail, Context};
use linerate_facts::{Applied, RestartRun, Topic};
use linerate_report::{render_setup, setup_doc, SetupAction, Style};
use linerate_setup::{apply, detect, Options, Renderer, Snapshot};

use crate::cli::{RendererArg, SetupArgs, SetupTopicArg};
use crate::out::print;

fn topics(t: SetupTopicArg) -> Vec<Topic> {
    match t {
        SetupTopicArg::Ipoib => vec![Topic::Ipoib],
        SetupTopicArg::Opensm => vec![Topic::Opensm],
        SetupTopicArg::NfsRdma => vec![Topic::NfsRdma],
        SetupTopicArg::Sysctl => vec![Topic::Sysctl],
        SetupTopicArg::Irq => vec![Topic::Irq],
        SetupTopicArg::Governor => vec![Topic::Governor],
        SetupTopicArg::RdmaStack => vec![Topic::RdmaStack],
        SetupTopicArg::Rings => vec![Topic::Rings],
        SetupTopicArg::Roce => vec![Topic::Roce],
        SetupTopicArg::All => Topic::ALL.to_vec(),
    }
}

fn renderer(r: RendererArg) -> Option<Renderer> {
    match r {
        RendererArg::Auto => None,
        RendererArg::Netplan => Some(Renderer::Netplan),
        RendererArg::Networkmanager => Some(Renderer::NetworkManager),
        RendererArg::Networkd => Some(Renderer::Networkd),
        RendererArg::Ifupdown => Some(Renderer::Ifupdown),
        RendererArg::Ifcfg => Some(Renderer::Ifcfg),
    }
}

fn emit(a: &SetupArgs, doc: &linerate_report::SetupDoc<'_>, style: Style) -> anyhow::Result<()> {
    if a.json {
        let mut s = serde_json::to_string_pretty(doc).context("encoding JSON")?;
        s.push('\n');
        print(&s)?;
    } else {
        print(&render_setup(doc, style))?;
    }
    Ok(())
}

/// Run each restart command through `sh -c`, printing it first.
fn restart(cmds: &[String]) -> Vec<RestartRun> {
    cmds.iter()
        .map(|c| {
            eprintln!("linerate: running {c}");
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(c)
                .status()
                .ok()
                .and_then(|s| s.code());
            RestartRun {
                run: c.clone(),
                status,
            }
        })
        .collect()
}

pub fn run(a: &SetupArgs, style: Style) -> anyhow::Result<u8> {
    let root_shown = a.root.display().to_string();
    if !a.rtt_ms.is_finite() || a.rtt_ms <= 0.0 || a.rtt_ms > 10_000.0 {
        bail!(
            "--rtt-ms {}: expected a round-trip time in milliseconds, above 0 and at most 10000",
            a.rtt_ms
        );
    }
    if let Some(g) = a
        .gbps
        .filter(|g| !g.is_finite() || *g <= 0.0 || *g > 100_000.0)
    {
        bail!("--gbps {g}: expected a rate in Gb/s, above 0 and at most 100000");
    }
    if let Some(id) = &a.rollback {
        if !a.root.is_dir() {
            bail!("--root {root_shown}: no such directory");
        }
        apply::check_privileges(&a.root)?;
        let rb = apply::rollback(&a.root, id)?;
        let doc = setup_doc(
            &root_shown,
            SetupAction::Rollback,
            None,
            None,
            None,
            Some(&rb),
        );
        emit(a, &doc, style)?;
        return Ok(0);
    }
    let live = a
        .root
        .canonicalize()
        .is_ok_and(|p| p == std::path::Path::new("/"));
    if a.restart && !live {
        bail!("--restart runs commands on this machine: it applies only with --root / (the files under --root {root_shown} are not this machine's configuration)");
    }
    let inv = linerate_inventory::probe(&a.root)?;
    let analysis = linerate_rules::analyze(&inv);
    let snap = Snapshot::read(&a.root);
    let distro = detect::distro(&snap);
    let o = Options {
        iface: a.iface.clone(),
        renderer: renderer(a.renderer),
        root_shown: root_shown.clone(),
        rtt_ms: a.rtt_ms,
        gbps: a.gbps,
        sm_node: a.sm_node,
        nfs_mount: a.nfs_mount.clone(),
        roce_priority: a.roce_priority,
        roce_dscp: a.roce_dscp,
    };
    let plan = linerate_setup::build_plan(&topics(a.topic), &inv, &analysis, &snap, &o);
    if !a.apply {
        let doc = setup_doc(
            &root_shown,
            SetupAction::Print,
            Some(&distro),
            Some(&plan),
            None,
            None,
        );
        emit(a, &doc, style)?;
        return Ok(0);
    }
    apply::check_privileges(&a.root)?;
    let files: Vec<_> = plan.files().into_iter().cloned().collect();
    let mut applied = Applied {
        id: None,
        backup_dir: None,
        written: files.iter().map(|f| f.path.clone()).collect(),
        restarted: Vec::new(),
    };
    if files.is_empty() {
        applied.written.clear();
    } else {
        let (id, dir) = apply::apply(&a.root, &files)?;
        applied.id = Some(id);
        applied.backup_dir = Some(dir);
    }
    if a.restart && applied.id.is_some() {
        let cmds: Vec<String> = plan.restarts().iter().map(|c| c.run.clone()).collect();
        applied.restarted = restart(&cmds);
    }
    let doc = setup_doc(
        &root_shown,
        SetupAction::Apply,
        Some(&distro),
        Some(&plan),
        Some(&applied),
        None,
    );
    emit(a, &doc, style)?;
    Ok(if applied.restarted.iter().any(|r| r.status != Some(0)) {
        super::EXIT_CANNOT_RUN
    } else {
        0
    })
}
