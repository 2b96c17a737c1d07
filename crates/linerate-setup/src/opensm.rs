//! opensm: a subnet manager on this node, only when the fabric has none and the operator says
//! this is the node (`--sm-node`): one master per fabric. Pure.

use crate::detect;
use crate::edit::ifcfg;
use crate::plan;
use crate::snapshot::Snapshot;
use crate::Options;
use linerate_facts::{
    Analysis, Family, FileChange, FindingId, Inventory, Plan, PlanCommand, Step, Topic, When, Why,
};

/// The highest priority (0-15): this node wins the master election.
pub const SM_PRIORITY: u32 = 15;

/// The port GUID: the interface id of GID 0 (`fe80::ec0d:9a03:0044:c158` → `0xec0d9a030044c158`).
fn port_guid(gid0: &str) -> Option<String> {
    let groups: Vec<&str> = gid0.split(':').collect();
    if groups.len() != 8
        || groups
            .iter()
            .any(|g| g.len() != 4 || !g.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return None;
    }
    Some(format!("0x{}", groups[4..].concat().to_ascii_lowercase()))
}

/// `key value` lines (opensm.conf): replace the key's line or append it.
fn set_kv(text: &str, key: &str, value: &str) -> String {
    let mut hit = false;
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.split_whitespace().next() == Some(key) {
                hit = true;
                format!("{key} {value}")
            } else {
                l.to_string()
            }
        })
        .collect();
    if !hit {
        out.push(format!("{key} {value}"));
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

const EXPLAIN: &str = "Exactly one master subnet manager per fabric: every other opensm must run as standby with a lower sm_priority (0-15, highest wins; equal priorities fall back to the lowest port GUID), and a switch's built-in SM counts too";

/// The opensm configuration for this distribution: the config file (`guid`, `sm_priority`) and,
/// on Debian, `PORTS` in /etc/default/opensm. Only the files whose content changes.
fn files_for(s: &Snapshot, family: Family, guid: &str) -> (&'static str, Vec<FileChange>) {
    let (conf_path, extra) = match family {
        Family::RedHat => ("/etc/rdma/opensm.conf", None),
        _ => ("/etc/opensm/opensm.conf", Some("/etc/default/opensm")),
    };
    let mut files = Vec::new();
    let old = s.file(conf_path).unwrap_or("");
    let header = if old.is_empty() {
        "# Written by `linerate setup opensm`: bind to this port, highest priority.\n"
    } else {
        ""
    };
    let conf = set_kv(
        &set_kv(&format!("{header}{old}"), "guid", guid),
        "sm_priority",
        &SM_PRIORITY.to_string(),
    );
    files.extend(plan::changed_file(s, conf_path, conf));
    if let Some(p) = extra {
        // Debian's init script starts one opensm per port listed in PORTS.
        let old = s.file(p).unwrap_or("");
        let new = ifcfg::set(old, "PORTS", &format!("\"{guid}\""));
        files.extend(plan::changed_file(s, p, new));
    }
    (conf_path, files)
}

pub fn build(inv: &Inventory, analysis: &Analysis, s: &Snapshot, o: &Options, plan: &mut Plan) {
    let missing: Vec<_> = analysis
        .findings
        .iter()
        .filter(|f| f.id == FindingId::IbNoSubnetManager)
        .filter(|f| o.iface.as_deref().is_none_or(|i| i == f.subject))
        .collect();
    let Some(f) = missing.first() else {
        plan.note(
            Topic::Opensm,
            "every InfiniBand port sees a subnet manager (or there is none): no opensm needed",
        );
        return;
    };
    let port = inv.ports.iter().find(|p| p.name == f.subject);
    let guid = port
        .and_then(|p| inv.ib_port(p))
        .and_then(|(_, ip)| ip.gid0.as_deref())
        .and_then(port_guid);
    let Some(guid) = guid else {
        plan.refuse(
            Topic::Opensm,
            &f.subject,
            "its port GUID is unknown (no readable GID 0)",
            None,
        );
        return;
    };
    if !o.sm_node {
        plan.refuse(
            Topic::Opensm,
            &f.subject,
            format!("{}: no subnet manager on this fabric, so the port stays in INIT and carries nothing. {EXPLAIN}; setup plans it only on the node you choose", f.subject),
            Some(format!("Run `linerate setup opensm --sm-node --iface {}` on the one node that should be the master (port GUID {guid} here).", f.subject)),
        );
        return;
    }
    let family = detect::distro(s).family;
    let (conf_path, files) = files_for(s, family, &guid);
    if files.is_empty() {
        plan.note(Topic::Opensm, format!("{conf_path} already binds opensm to {guid} with sm_priority {SM_PRIORITY}: nothing to write"));
        return;
    }
    let installed = match family {
        Family::Debian => detect::dpkg_version(s, "opensm").is_some(),
        _ => {
            s.has_dir("/usr/lib/systemd/system/opensm.service")
                || s.has_dir("/lib/systemd/system/opensm.service")
        }
    };
    let mut commands = Vec::new();
    if !installed {
        let install = match family {
            Family::RedHat => "dnf install -y opensm",
            _ => "apt-get install -y opensm",
        };
        commands.push(PlanCommand::new(
            install,
            When::AfterApply,
            "opensm is not installed",
        ));
    }
    commands.push(PlanCommand::new(
        "systemctl enable --now opensm",
        When::AfterApply,
        match family {
            Family::Debian => "Debian/Ubuntu: the LSB script /etc/init.d/opensm, run by systemd; it reads PORTS from /etc/default/opensm",
            _ => "the opensm.service unit; it reads the configuration file above",
        },
    ));
    commands.push(PlanCommand::new(
        "sminfo; cat /sys/class/infiniband/*/ports/*/state",
        When::Check,
        "sminfo (infiniband-diags) names the master SM; the ports turn ACTIVE within seconds",
    ));
    let mut why = Why::new(Some(FindingId::IbNoSubnetManager), f.message.clone());
    why.evidence.clone_from(&f.evidence);
    plan.steps.push(Step {
        topic: Topic::Opensm,
        subject: f.subject.clone(),
        summary: format!("run opensm on this node as the fabric's master, bound to port {guid} with sm_priority {SM_PRIORITY}"),
        why: vec![why, Why::new(None, EXPLAIN)],
        files,
        commands,
        undo: vec!["systemctl disable --now opensm".to_string()],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_from_gid() {
        assert_eq!(
            port_guid("fe80:0000:0000:0000:ec0d:9a03:0044:c158").as_deref(),
            Some("0xec0d9a030044c158")
        );
        assert_eq!(port_guid("garbage"), None);
        assert_eq!(set_kv("# x\nguid 0x1\n", "guid", "0x2"), "# x\nguid 0x2\n");
        assert_eq!(set_kv("", "sm_priority", "15"), "sm_priority 15\n");
    }
}
