//! governor: the performance CPU governor where `cpu.powersave` is a warning (a cpufreq driver
//! whose powersave governor pins the clock at its minimum, such as acpi-cpufreq), through what
//! is in charge of the governor on this machine: tuned (a profile of its own that includes the
//! active one and sets `[cpu] governor=performance`), Debian's cpufrequtils
//! (`/etc/default/cpufrequtils`, `GOVERNOR=`), or else a oneshot unit that sets it at every
//! boot. With intel_pstate or amd-pstate, powersave still follows the load: nothing to change.
//! Pure.

use linerate_facts::{
    Analysis, FileChange, FindingId, Plan, PlanCommand, Severity, Step, Topic, When, Why,
};

use crate::plan;
use crate::snapshot::Snapshot;

/// tuned's record of the profile in force (`tuned/consts.py`: `ACTIVE_PROFILE_FILE`).
pub const TUNED_ACTIVE: &str = "/etc/tuned/active_profile";
/// The profile setup writes for tuned (`/etc/tuned` is one of tuned's profile directories).
pub const TUNED_PROFILE: &str = "linerate-performance";
/// Debian's cpufrequtils reads the governor to set at boot from here.
pub const CPUFREQUTILS: &str = "/etc/default/cpufrequtils";
/// The unit setup writes where nothing else sets the governor.
pub const UNIT: &str = "/etc/systemd/system/linerate-cpu-governor.service";
/// Units that set a governor at boot (Ubuntu's ondemand.service), when installed.
const ONDEMAND_UNITS: [&str; 2] = [
    "/lib/systemd/system/ondemand.service",
    "/usr/lib/systemd/system/ondemand.service",
];

pub fn tuned_profile_path() -> String {
    format!("/etc/tuned/{TUNED_PROFILE}/tuned.conf")
}

/// The command that shows the governor of every CPU, counted.
const CHECK: &str = "cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor | sort | uniq -c";

pub fn build(analysis: &Analysis, s: &Snapshot, plan: &mut Plan) {
    let Some(f) = analysis
        .findings
        .iter()
        .find(|f| f.id == FindingId::CpuPowersave)
    else {
        plan.note(
            Topic::Governor,
            "no CPU uses the powersave governor (or cpufreq is absent, as in most VMs): nothing to do",
        );
        return;
    };
    if f.severity < Severity::Warning {
        plan.note(
            Topic::Governor,
            format!(
                "{}: nothing to change (the performance governor would only shorten the clock's ramp-up, at a cost in power)",
                f.message
            ),
        );
        return;
    }
    let why = {
        let mut w = Why::new(Some(FindingId::CpuPowersave), f.message.clone());
        w.evidence.clone_from(&f.evidence);
        w
    };
    let step = match s.file(TUNED_ACTIVE).map(str::trim) {
        Some(active) if !active.is_empty() => tuned(active, s, why, plan),
        _ if s.file(CPUFREQUTILS).is_some() => Some(cpufrequtils(s, why)),
        _ => unit(s, why, plan),
    };
    plan.steps.extend(step);
}

/// tuned is in charge: a profile of linerate's that includes the active one and overrides the
/// governor only, so the rest of the operator's tuning stays as it is.
fn tuned(active: &str, s: &Snapshot, why: Why, plan: &mut Plan) -> Option<Step> {
    let path = tuned_profile_path();
    if active.contains(char::is_whitespace) {
        plan.refuse(
            Topic::Governor,
            "host",
            format!("tuned runs several profiles at once ({active}): which one to build on is the operator's choice"),
            Some("add `[cpu]` `governor=performance` to one of them, or run `tuned-adm profile` with one profile and `linerate setup governor` again".to_string()),
        );
        return None;
    }
    // Already ours: what it includes is the profile before it.
    let base = if active == TUNED_PROFILE {
        s.file(&path)
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.trim().strip_prefix("include="))
                    .map(str::trim)
            })
            .unwrap_or("balanced")
            .to_string()
    } else {
        active.to_string()
    };
    let content = format!(
        "# Written by `linerate setup governor`: tuned's `{base}` profile, with the performance CPU governor.\n[main]\nsummary=linerate: {base} with the performance CPU governor\ninclude={base}\n\n[cpu]\ngovernor=performance\n"
    );
    let file = plan::changed_file(s, &path, content);
    if file.is_none() && active == TUNED_PROFILE {
        plan.note(
            Topic::Governor,
            format!("tuned already runs {path} (the performance governor), yet a CPU uses powersave: check `tuned-adm verify` and whether cpufreq offers `performance` (`scaling_available_governors`)"),
        );
        return None;
    }
    Some(Step {
        topic: Topic::Governor,
        subject: "host".into(),
        summary: format!(
            "the performance CPU governor through tuned: profile {TUNED_PROFILE}, which includes {base}"
        ),
        why: vec![why.evidence(TUNED_ACTIVE, &active)],
        files: file.into_iter().map(new_mode_644).collect(),
        commands: vec![
            PlanCommand::new(
                format!("tuned-adm profile {TUNED_PROFILE}"),
                When::AfterApply,
                "tuned applies it now and at every start; the rest of the active profile stays in force",
            ),
            PlanCommand::new("tuned-adm active", When::Check, format!("`Current active profile: {TUNED_PROFILE}`")),
            PlanCommand::new(CHECK, When::Check, "every CPU lists `performance`"),
        ],
        undo: vec![format!("tuned-adm profile {base}")],
    })
}

/// Debian's cpufrequtils: its own file, `GOVERNOR=` set (added when missing), the rest kept.
fn cpufrequtils(s: &Snapshot, why: Why) -> Step {
    let old = s.file(CPUFREQUTILS).unwrap_or("");
    let mut found = false;
    let mut lines: Vec<String> = old
        .lines()
        .map(|l| {
            let key = l.trim_start();
            if !key.starts_with('#') && key.starts_with("GOVERNOR=") {
                found = true;
                "GOVERNOR=\"performance\"".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    if !found {
        lines.push("GOVERNOR=\"performance\"".into());
    }
    let content = lines.join("\n") + "\n";
    let previous = old
        .lines()
        .find_map(|l| l.trim().strip_prefix("GOVERNOR="))
        .map(|g| g.trim_matches('"').to_string());
    Step {
        topic: Topic::Governor,
        subject: "host".into(),
        summary: "the performance CPU governor through cpufrequtils".into(),
        why: vec![why],
        files: plan::changed_file(s, CPUFREQUTILS, content)
            .into_iter()
            .collect(),
        commands: vec![
            PlanCommand::new(
                "systemctl restart cpufrequtils",
                When::AfterApply,
                "cpufrequtils sets the governor from its file now; it does so at every boot",
            ),
            PlanCommand::new(CHECK, When::Check, "every CPU lists `performance`"),
        ],
        undo: vec![match previous {
            Some(g) => format!("set GOVERNOR=\"{g}\" again in {CPUFREQUTILS} (the rollback restores the file) and `systemctl restart cpufrequtils`"),
            None => format!("remove the GOVERNOR line from {CPUFREQUTILS} (the rollback restores the file); the kernel's default governor returns at the next boot"),
        }],
    }
}

/// Nothing else sets the governor: a oneshot unit that writes `performance` for every CPU at
/// each boot (after the distributions' own boot-time governor units, when installed).
fn unit(s: &Snapshot, why: Why, plan: &mut Plan) -> Option<Step> {
    let content = "# Written by `linerate setup governor`: the performance CPU governor on every CPU at each boot.\n[Unit]\nDescription=linerate: the performance CPU governor\nAfter=cpufrequtils.service ondemand.service\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'for g in /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do echo performance > $$g; done'\n\n[Install]\nWantedBy=multi-user.target\n".to_string();
    let Some(file) = plan::changed_file(s, UNIT, content) else {
        plan.note(
            Topic::Governor,
            format!("{UNIT} already sets the performance governor at boot, yet a CPU uses powersave: `systemctl status linerate-cpu-governor` says whether it ran"),
        );
        return None;
    };
    let mut commands = vec![PlanCommand::new(
        "systemctl daemon-reload && systemctl enable --now linerate-cpu-governor.service",
        When::AfterApply,
        "sets it now and at every boot; nothing stops",
    )];
    if let Some(u) = ONDEMAND_UNITS.iter().find(|u| s.has_dir(u)) {
        commands.push(PlanCommand::new(
            "systemctl disable ondemand.service",
            When::AfterApply,
            format!("{u} is installed: a unit that sets a governor at boot (Ubuntu's sets ondemand or powersave); disabled, it cannot set one after this"),
        ));
    }
    commands.push(PlanCommand::new(
        CHECK,
        When::Check,
        "every CPU lists `performance`",
    ));
    Some(Step {
        topic: Topic::Governor,
        subject: "host".into(),
        summary: "the performance CPU governor at every boot".into(),
        why: vec![why],
        files: vec![new_mode_644(file)],
        commands,
        undo: vec!["systemctl disable linerate-cpu-governor.service (the rollback removes the unit); the kernel's default governor returns at the next boot".into()],
    })
}

/// A file linerate owns: 0o644 whatever an earlier copy had.
fn new_mode_644(f: FileChange) -> FileChange {
    FileChange { mode: 0o644, ..f }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::Finding;

    fn analysis(sev: Option<Severity>) -> Analysis {
        Analysis {
            ports: Vec::new(),
            findings: sev
                .map(|s| {
                    Finding::new(FindingId::CpuPowersave, s, "host")
                        .evidence(
                            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
                            "acpi-cpufreq",
                        )
                        .message("28 CPU(s) use the powersave governor of acpi-cpufreq")
                })
                .into_iter()
                .collect(),
        }
    }

    fn plan_for(sev: Option<Severity>, files: &[(&str, &str)]) -> Plan {
        let mut p = Plan::new(vec![Topic::Governor]);
        build(
            &analysis(sev),
            &Snapshot::from_files(files.iter().copied()),
            &mut p,
        );
        p
    }

    #[test]
    fn without_a_warning_nothing_is_planned() {
        assert!(plan_for(None, &[]).is_empty());
        let info = plan_for(Some(Severity::Info), &[]);
        assert!(info.is_empty());
        assert!(
            info.notes[0].text.contains("nothing to change"),
            "{:?}",
            info.notes
        );
    }

    #[test]
    fn a_unit_where_nothing_else_sets_the_governor() {
        let p = plan_for(Some(Severity::Warning), &[]);
        let f = &p.files()[0];
        assert_eq!(f.path, UNIT);
        assert!(
            f.content.contains("echo performance > $$g"),
            "{}",
            f.content
        );
        assert_eq!(p.steps[0].why[0].finding, Some(FindingId::CpuPowersave));
        assert!(p.steps[0].commands[0].run.contains("enable --now"));
        // Written once: the same unit again is nothing to do.
        let again = plan_for(Some(Severity::Warning), &[(UNIT, f.content.as_str())]);
        assert!(again.is_empty() && again.notes[0].text.contains("already"));
    }

    #[test]
    fn tuned_gets_a_profile_that_includes_the_active_one() {
        let p = plan_for(
            Some(Severity::Warning),
            &[(TUNED_ACTIVE, "virtual-guest\n")],
        );
        let f = &p.files()[0];
        assert_eq!(f.path, tuned_profile_path());
        assert!(
            f.content.contains("include=virtual-guest\n"),
            "{}",
            f.content
        );
        assert!(
            f.content.contains("[cpu]\ngovernor=performance\n"),
            "{}",
            f.content
        );
        assert_eq!(
            p.steps[0].commands[0].run,
            "tuned-adm profile linerate-performance"
        );
        assert_eq!(p.steps[0].undo, ["tuned-adm profile virtual-guest"]);
        // Once active, it builds on what it included, and says when it changes nothing.
        let again = plan_for(
            Some(Severity::Warning),
            &[
                (TUNED_ACTIVE, "linerate-performance"),
                (&f.path, f.content.as_str()),
            ],
        );
        assert!(again.is_empty(), "{:?}", again.steps);
        assert!(again.notes[0].text.contains("tuned-adm verify"));
        // Several profiles at once: the operator's call.
        let several = plan_for(
            Some(Severity::Warning),
            &[(TUNED_ACTIVE, "balanced powersave")],
        );
        assert!(several.is_empty());
        assert_eq!(several.refusals.len(), 1);
    }

    #[test]
    fn cpufrequtils_gets_its_governor_line_set() {
        let p = plan_for(
            Some(Severity::Warning),
            &[(CPUFREQUTILS, "# set by the installer\nENABLE=\"true\"\nGOVERNOR=\"powersave\"\nMAX_SPEED=\"0\"\n")],
        );
        let f = &p.files()[0];
        assert_eq!(f.path, CPUFREQUTILS);
        assert_eq!(
            f.content,
            "# set by the installer\nENABLE=\"true\"\nGOVERNOR=\"performance\"\nMAX_SPEED=\"0\"\n"
        );
        assert!(p.steps[0].undo[0].contains("GOVERNOR=\"powersave\""));
        // Without the line, it is added.
        let p = plan_for(
            Some(Severity::Warning),
            &[(CPUFREQUTILS, "ENABLE=\"true\"\n")],
        );
        assert_eq!(
            p.files()[0].content,
            "ENABLE=\"true\"\nGOVERNOR=\"performance\"\n"
        );
    }
}
