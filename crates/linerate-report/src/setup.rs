//! `linerate setup`: the plan as text and as a JSON document (`schemas/setup.schema.json`).

use std::fmt::Write as _;

use linerate_facts::{
    Applied, Distro, FileAction, Plan, RolledBack, Tool, When, SCHEMA_VERSION, TOOL,
};
use serde::{Deserialize, Serialize};

use crate::style::Style;

/// What `setup` did: printed a plan, applied it, or rolled a backup back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupAction {
    Print,
    Apply,
    Rollback,
}

#[derive(Debug, Serialize)]
pub struct SetupDoc<'a> {
    pub schema_version: u32,
    pub tool: Tool,
    pub root: String,
    pub action: SetupAction,
    pub distro: Option<&'a Distro>,
    pub plan: Option<&'a Plan>,
    pub applied: Option<&'a Applied>,
    pub rolled_back: Option<&'a RolledBack>,
}

pub fn setup_doc<'a>(
    root: &str,
    action: SetupAction,
    distro: Option<&'a Distro>,
    plan: Option<&'a Plan>,
    applied: Option<&'a Applied>,
    rolled_back: Option<&'a RolledBack>,
) -> SetupDoc<'a> {
    SetupDoc {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        root: root.to_string(),
        action,
        distro,
        plan,
        applied,
        rolled_back,
    }
}

fn when_label(w: When) -> &'static str {
    match w {
        When::AfterApply => "after writing",
        When::Restart => "to restart (only with --restart)",
        When::Check => "to check",
    }
}

fn render_steps(out: &mut String, plan: &Plan, style: Style) {
    for s in &plan.steps {
        let _ = writeln!(out, "{} {}", style.bold(s.topic.as_str()), s.summary);
        for w in &s.why {
            let id = w.finding.map(|f| format!("{f}: ")).unwrap_or_default();
            let _ = writeln!(out, "  why   {id}{}", w.text);
            for (k, v) in &w.evidence {
                let _ = writeln!(out, "        {}", style.dim(&format!("{k} = {v}")));
            }
        }
        for f in &s.files {
            let verb = match f.action {
                FileAction::Create => "create",
                FileAction::Modify => "edit",
            };
            let _ = writeln!(
                out,
                "  {verb:<5} {} (mode {:04o}), full content:",
                f.path, f.mode
            );
            for l in f.content.lines() {
                let _ = writeln!(out, "        | {l}");
            }
        }
        for c in &s.commands {
            let _ = writeln!(
                out,
                "  run   {}  {}",
                c.run,
                style.dim(&format!("# {}: {}", when_label(c.when), c.why))
            );
        }
        for u in &s.undo {
            let _ = writeln!(out, "  undo  {u}");
        }
        let _ = writeln!(out);
    }
}

/// The terminal view of a plan and of what was done with it.
pub fn render_setup(doc: &SetupDoc<'_>, style: Style) -> String {
    let mut out = String::new();
    if let Some(d) = doc.distro {
        let _ = writeln!(
            out,
            "linerate setup: {} (root {})\n",
            d.pretty_name.as_deref().unwrap_or(&d.id),
            doc.root
        );
    }
    if let Some(plan) = doc.plan {
        render_steps(&mut out, plan, style);
        for r in &plan.refusals {
            let _ = writeln!(
                out,
                "{} {} {}: {}",
                style.bold(r.topic.as_str()),
                style.bold("not done"),
                r.subject,
                r.reason
            );
            if let Some(w) = &r.would_change {
                let _ = writeln!(out, "  what would change it: {w}");
            }
        }
        for n in &plan.notes {
            let _ = writeln!(out, "{} {}", style.dim(n.topic.as_str()), n.text);
        }
        if plan.is_empty() {
            let _ = writeln!(out, "\nnothing to do: no file to write");
        } else if doc.action == SetupAction::Print {
            let _ = writeln!(
                out,
                "\nnothing was changed: rerun with --apply (as root) to write these files (each is backed up first); --restart also runs the restart commands"
            );
        }
    }
    if let Some(a) = doc.applied {
        match (&a.id, &a.backup_dir) {
            (Some(id), Some(dir)) => {
                let _ = writeln!(
                    out,
                    "\nwrote {} file(s): {}",
                    a.written.len(),
                    a.written.join(", ")
                );
                let _ = writeln!(out, "backups in {dir}");
                let _ = writeln!(
                    out,
                    "undo with: linerate setup --rollback {id}{}",
                    if doc.root == "/" {
                        String::new()
                    } else {
                        format!(" --root {}", doc.root)
                    }
                );
            }
            _ => {
                let _ = writeln!(out, "\napplied: nothing to do, no file changed");
            }
        }
        for r in &a.restarted {
            let st = r.status.map_or_else(
                || "killed by a signal".to_string(),
                |s| format!("exit status {s}"),
            );
            let _ = writeln!(out, "ran {}: {st}", r.run);
        }
        if a.restarted.is_empty()
            && doc.plan.is_some_and(|p| !p.restarts().is_empty())
            && a.id.is_some()
        {
            let _ = writeln!(out, "not restarted (that can cut the connection you are typing in): run the commands marked `to restart` yourself, or rerun with --restart");
        }
    }
    if let Some(r) = doc.rolled_back {
        let _ = writeln!(
            out,
            "rolled back {}: restored {} file(s){}{}",
            r.id,
            r.restored.len(),
            if r.restored.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.restored.join(", "))
            },
            if r.removed.is_empty() {
                String::new()
            } else {
                format!(
                    ", removed {} created by apply ({})",
                    r.removed.len(),
                    r.removed.join(", ")
                )
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::{FileChange, FindingId, PlanCommand, Step, Topic, Why};

    fn plan() -> Plan {
        let mut p = Plan::new(vec![Topic::Ipoib]);
        p.steps.push(Step {
            topic: Topic::Ipoib,
            subject: "ib0".into(),
            summary: "ib0: connected".into(),
            why: vec![Why::new(Some(FindingId::IpoibDatagramMode), "datagram")
                .evidence("/sys/class/net/ib0/mode", &"datagram")],
            files: vec![FileChange {
                path: "/etc/x".into(),
                mode: 0o600,
                action: FileAction::Modify,
                content: "a=1\nb=2\n".into(),
            }],
            commands: vec![PlanCommand::new(
                "ifdown ib0 && ifup ib0",
                When::Restart,
                "restart",
            )],
            undo: vec!["by hand".into()],
        });
        p.refuse(
            Topic::Ipoib,
            "ib1",
            "enhanced",
            Some("ipoib_enhanced=0".into()),
        );
        p
    }

    #[test]
    fn text_shows_files_commands_reasons_and_refusals() {
        let p = plan();
        let doc = setup_doc("/r", SetupAction::Print, None, Some(&p), None, None);
        let t = render_setup(&doc, Style { color: false });
        for want in [
            "  edit  /etc/x (mode 0600), full content:",
            "        | a=1",
            "  why   ipoib.datagram_mode: datagram",
            "        /sys/class/net/ib0/mode = datagram",
            "  run   ifdown ib0 && ifup ib0  # to restart (only with --restart): restart",
            "ipoib not done ib1: enhanced",
            "  what would change it: ipoib_enhanced=0",
        ] {
            assert!(t.lines().any(|l| l == want), "{want:?} missing from\n{t}");
        }
        assert!(
            t.contains("\nnothing was changed: rerun with --apply"),
            "{t}"
        );
        let applied = Applied {
            id: Some("1-2".into()),
            backup_dir: Some("/var/backups/linerate-setup/1-2".into()),
            written: vec!["/etc/x".into()],
            restarted: Vec::new(),
        };
        let doc = setup_doc(
            "/r",
            SetupAction::Apply,
            None,
            Some(&p),
            Some(&applied),
            None,
        );
        let t = render_setup(&doc, Style { color: false });
        assert!(
            t.contains("undo with: linerate setup --rollback 1-2 --root /r"),
            "{t}"
        );
        assert!(t.contains("not restarted"), "{t}");
        let v = serde_json::to_value(&doc).unwrap();
        assert_eq!(v["plan"]["steps"][0]["files"][0]["mode"], 0o600);
        assert_eq!(v["applied"]["id"], "1-2");
    }
}
