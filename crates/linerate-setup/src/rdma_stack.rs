//! rdma-stack: the configuration that makes the RDMA software stack whole, from probe's stack
//! findings: the kernel modules to load at every boot (modules-load.d), the locked-memory limit
//! for users (limits.d) and for `linerate-serve.service` (a drop-in); the packages to install
//! are said, never installed. Pure.

use crate::plan;
use crate::snapshot::Snapshot;
use linerate_facts::{Analysis, Finding, FindingId, Plan, PlanCommand, Step, Topic, When, Why};

pub const MODULES: &str = "/etc/modules-load.d/linerate-rdma.conf";
pub const LIMITS: &str = "/etc/security/limits.d/90-linerate-rdma.conf";
pub const SERVE_DROPIN: &str =
    "/etc/systemd/system/linerate-serve.service.d/90-linerate-memlock.conf";

/// The module a stack finding asks for (its `/sys/module/NAME` evidence).
fn module_of(f: &Finding) -> Option<String> {
    f.evidence
        .keys()
        .find_map(|k| k.strip_prefix("/sys/module/"))
        .map(str::to_string)
}

fn why(f: &Finding) -> Why {
    let mut w = Why::new(Some(f.id), f.message.clone());
    for (k, v) in &f.evidence {
        w = w.evidence(k.clone(), v);
    }
    w
}

pub fn build(analysis: &Analysis, s: &Snapshot, plan: &mut Plan) {
    let of = |id: FindingId| analysis.findings.iter().filter(move |f| f.id == id);
    let before = plan.steps.len();
    modules(analysis, s, plan);
    if let Some(f) = of(FindingId::RdmaMemlockLow).find(|f| f.subject == "host") {
        let text = "# Written by `linerate setup rdma-stack`: RDMA pins the memory it registers, and a\n# locked-memory limit below what a test registers makes it fail (`Cannot allocate memory`).\n*    soft    memlock    unlimited\n*    hard    memlock    unlimited\n".to_string();
        if let Some(file) = plan::changed_file(s, LIMITS, text) {
            plan.steps.push(Step {
                topic: Topic::RdmaStack,
                subject: "host".into(),
                summary: "no locked-memory limit for RDMA users (limits.d)".into(),
                why: vec![why(f)],
                files: vec![file],
                commands: vec![PlanCommand::new(
                    "ulimit -l",
                    When::Check,
                    "prints `unlimited` in a new login session (pam_limits applies limits.d at login)",
                )],
                undo: vec!["the rollback removes the file; sessions started meanwhile keep the limit they got".into()],
            });
        }
    }
    if let Some(f) = of(FindingId::RdmaMemlockLow).find(|f| f.subject == "linerate-serve.service") {
        let text = "# Written by `linerate setup rdma-stack`: RDMA tests open /dev/infiniband (uverbsN and\n# rdma_cm, which the unit's PrivateDevices=yes hides) and pin the buffers they register.\n[Service]\nPrivateDevices=no\nDeviceAllow=char-infiniband_verbs rw\nDeviceAllow=/dev/infiniband/rdma_cm rw\nLimitMEMLOCK=infinity\n".to_string();
        if let Some(file) = plan::changed_file(s, SERVE_DROPIN, text) {
            plan.steps.push(Step {
                topic: Topic::RdmaStack,
                subject: "linerate-serve.service".into(),
                summary: "linerate-serve.service may open the RDMA devices and lock the memory its tests register".into(),
                why: vec![why(f)],
                files: vec![file],
                commands: vec![
                    PlanCommand::new(
                        "systemctl daemon-reload && systemctl try-restart linerate-serve",
                        When::AfterApply,
                        "loads the drop-in; a running server restarts (its tests in progress end)",
                    ),
                    PlanCommand::new(
                        "systemctl show -p LimitMEMLOCK linerate-serve",
                        When::Check,
                        "LimitMEMLOCK=infinity",
                    ),
                ],
                undo: vec!["the rollback removes the drop-in; then `systemctl daemon-reload`".into()],
            });
        }
    }
    // What is a package to install, not a file to write: said.
    for id in [
        FindingId::RdmaNoVerbsProvider,
        FindingId::RdmaNoLibfabricVerbs,
        FindingId::IbNoOpensm,
    ] {
        for f in of(id) {
            plan.note(
                Topic::RdmaStack,
                format!(
                    "{}: {} (a package to install: setup writes no file for it)",
                    f.id, f.fix
                ),
            );
        }
    }
    if plan.steps.len() == before && !plan.notes.iter().any(|n| n.topic == Topic::RdmaStack) {
        plan.note(
            Topic::RdmaStack,
            "the RDMA stack has every module, device node and limit it needs (or this host has no RDMA device): nothing to write",
        );
    }
}

/// Each module the findings ask for, in one modules-load.d file (kept sorted, with the ones the
/// file already lists).
fn modules(analysis: &Analysis, s: &Snapshot, plan: &mut Plan) {
    let asking: Vec<&Finding> = analysis
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.id,
                FindingId::RdmaDriverMissing
                    | FindingId::RdmaNoUverbs
                    | FindingId::RdmaNoRdmaCm
                    | FindingId::IpoibNotLoaded
                    | FindingId::NfsNoRpcrdma
            )
        })
        .collect();
    let mut wanted: Vec<String> = asking.iter().filter_map(|f| module_of(f)).collect();
    if wanted.is_empty() {
        return;
    }
    let old = s.file(MODULES).unwrap_or("");
    wanted.extend(
        old.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string),
    );
    wanted.sort();
    wanted.dedup();
    let mut text = "# Written by `linerate setup rdma-stack`: the RDMA stack's modules, loaded at every boot.\n".to_string();
    for m in &wanted {
        text.push_str(m);
        text.push('\n');
    }
    let Some(file) = plan::changed_file(s, MODULES, text) else {
        return;
    };
    let mut commands: Vec<PlanCommand> = wanted
        .iter()
        .map(|m| {
            PlanCommand::new(
                format!("modprobe {m}"),
                When::AfterApply,
                "loads it now (modules-load.d loads it at boot)",
            )
        })
        .collect();
    commands.push(PlanCommand::new(
        "ls /dev/infiniband/ && lsmod | grep -E 'ib_uverbs|rdma_ucm|ib_ipoib|rpcrdma|_ib'",
        When::Check,
        "uverbsN and rdma_cm are there, and the modules are loaded",
    ));
    plan.steps.push(Step {
        topic: Topic::RdmaStack,
        subject: "host".into(),
        summary: format!("load {} at every boot", wanted.join(", ")),
        why: asking.into_iter().map(why).collect(),
        files: vec![file],
        commands,
        undo: vec![
            "the rollback removes the file; loaded modules stay until `modprobe -r` or a reboot"
                .into(),
        ],
    });
}
