//! roce: what a RoCE port needs that the probe found missing. Pure.
//!
//! - **The MTU** (`roce.mtu_small`): jumbo frames in the interface's configuration, in the
//!   syntax of the renderer in charge (netplan `mtu`, NetworkManager `[ethernet] mtu`,
//!   systemd-networkd `[Link] MTUBytes`, ifupdown `mtu`, ifcfg `MTU`), as `ipoib` writes its MTU.
//! - **Lossless Ethernet** (`roce.lossy`, `roce.pfc_other_priority`): PFC on RoCE's priority,
//!   DSCP trust with RoCE's DSCP mapped to it, ECN's switches on it where the driver has them,
//!   and rdma_cm's default ToS carrying that DSCP, as a systemd oneshot unit per interface.
//!   Why a unit: all four are runtime kernel state (dcbnl, sysfs, configfs) that a reboot or a
//!   driver reload forgets, and no network renderer writes them (systemd-networkd has no DCB
//!   keys; NetworkManager's `dcb.*` drives the legacy CEE tools, not the IEEE state mlx5 uses;
//!   netplan and ifupdown have none); a unit bound to the interface's device runs again whenever
//!   the device appears (boot, a driver reload, a firmware reset). It runs iproute2's `dcb`
//!   (the kernel's IEEE DCB over netlink), so the switch's side stays the operator's: PFC must
//!   be on the same priority on every switch port on the path.

use linerate_facts::{
    Analysis, DcbRead, Finding, FindingId, Inventory, Plan, PlanCommand, Port, Step, Topic, When,
    Why,
};
use linerate_model::roce as m;

use crate::detect::{self, InCharge, Renderer};
use crate::edit::{ifcfg, ifupdown, ini, netplan};
use crate::snapshot::Snapshot;
use crate::{plan as files, Options};

/// The priority RoCE is given when the operator names none: NVIDIA's RoCE configuration guides
/// and most switch vendors' lossless profiles use 3.
pub const DEFAULT_PRIORITY: u8 = 3;
/// The DSCP RoCE is given when the operator names none: 26 (AF31), the one those guides map to
/// priority 3; as a ToS octet with ECN-capable transport, 106.
pub const DEFAULT_DSCP: u8 = 26;

/// The unit setup writes for `iface`.
pub fn unit_path(iface: &str) -> String {
    format!("/etc/systemd/system/{}", unit_name(iface))
}

pub fn unit_name(iface: &str) -> String {
    format!("linerate-roce-{iface}.service")
}

/// The findings about `port` among `ids`, as reasons.
fn reasons(analysis: &Analysis, port: &Port, ids: &[FindingId]) -> Vec<Why> {
    analysis
        .findings
        .iter()
        .filter(|f| f.subject == port.name && ids.contains(&f.id))
        .map(|f: &Finding| Why {
            finding: Some(f.id),
            text: f.message.clone(),
            evidence: f.evidence.clone(),
        })
        .collect()
}

pub fn build(inv: &Inventory, analysis: &Analysis, s: &Snapshot, o: &Options, plan: &mut Plan) {
    let ports: Vec<(&Port, &linerate_facts::RoceView)> = inv
        .ports
        .iter()
        .zip(&analysis.ports)
        .filter_map(|(p, a)| a.roce.as_ref().map(|r| (p, r)))
        .filter(|(p, _)| {
            o.iface
                .as_deref()
                .is_none_or(|i| p.netdev.as_deref() == Some(i))
        })
        .collect();
    if ports.is_empty() {
        let what = o.iface.as_deref().map_or_else(
            || "this machine has no RoCE port".to_string(),
            |i| format!("{i} is not a RoCE port's interface under {}", o.root_shown),
        );
        plan.note(Topic::Roce, format!("nothing to do: {what}"));
        return;
    }
    for (port, view) in ports {
        let Some(iface) = port.netdev.as_deref() else {
            continue;
        };
        mtu(analysis, s, o, plan, port, iface, view);
        lossless(inv, analysis, s, o, plan, port, iface);
    }
}

/// The MTU in the interface's configuration, where `roce.mtu_small` asks for it.
fn mtu(
    analysis: &Analysis,
    s: &Snapshot,
    o: &Options,
    plan: &mut Plan,
    port: &Port,
    iface: &str,
    view: &linerate_facts::RoceView,
) {
    let why = reasons(analysis, port, &[FindingId::RoceMtuSmall]);
    if why.is_empty() {
        plan.note(
            Topic::Roce,
            format!(
                "{iface}: RoCE's MTU is {} of {}: nothing to change",
                view.mtu
                    .active
                    .map_or_else(|| "unknown".to_string(), |a| a.to_string()),
                view.mtu.max
            ),
        );
        return;
    }
    let target = m::JUMBO_MTU.max(view.mtu.netdev_mtu_for_max);
    let Some(c) = detect::in_charge(s, iface, o.renderer) else {
        plan.refuse(
            Topic::Roce,
            iface,
            format!("no configuration file for {iface} was found: setup edits the interface's existing configuration and does not invent one"),
            Some(format!("Configure {iface} first (netplan, NetworkManager, systemd-networkd, ifupdown or ifcfg), then run setup again; at run time: `ip link set {iface} mtu {target}`.")),
        );
        return;
    };
    let (path, new) = match mtu_edit(s, &c, iface, target) {
        Ok(x) => x,
        Err(e) => {
            plan.refuse(Topic::Roce, iface, e, None);
            return;
        }
    };
    if s.file(&path) == Some(new.as_str()) {
        plan.note(
            Topic::Roce,
            format!("{iface}: {path} already sets MTU {target}; it takes effect when the interface is brought up again"),
        );
        return;
    }
    let mut why = why;
    for e in &c.evidence {
        why.push(Why::new(None, format!("renderer in charge: {e}")));
    }
    let major = detect::distro(s).major();
    plan.steps.push(Step {
        topic: Topic::Roce,
        subject: iface.to_string(),
        summary: format!(
            "{iface}: MTU {target} in {path} ({}), so RoCE gets its {}-byte MTU",
            c.renderer.as_str(),
            view.mtu.max
        ),
        why,
        files: vec![files::write_file(s, &path, new)],
        commands: vec![
            PlanCommand::new(
                crate::ipoib::restart(s, &c, iface, major),
                When::Restart,
                format!("re-applies the configuration of {iface} only; traffic over it stops for a moment"),
            ),
            PlanCommand::new(
                format!("cat /sys/class/net/{iface}/mtu; ibv_devinfo -v | grep active_mtu"),
                When::Check,
                format!(
                    "`{target}`, and `active_mtu: {} (5)` for the port (every switch port on the path must carry {target} too)",
                    view.mtu.max
                ),
            ),
        ],
        undo: vec![format!(
            "at run time: `ip link set {iface} mtu {}`",
            view.mtu.netdev_mtu.unwrap_or(1500)
        )],
    });
}

/// The MTU written in the renderer's syntax.
pub fn mtu_edit(
    s: &Snapshot,
    c: &InCharge,
    iface: &str,
    mtu: u32,
) -> Result<(String, String), String> {
    let path = c.file.clone().ok_or("no file")?;
    let text = s
        .file(&path)
        .ok_or_else(|| format!("{path}: not readable"))?;
    let v = mtu.to_string();
    let new = match c.renderer {
        Renderer::Netplan => {
            let doc = netplan::Doc::parse(text).map_err(|e| format!("{path}: {e}"))?;
            let id = doc
                .find_interface(iface)
                .ok_or_else(|| format!("{path}: no {iface}"))?;
            netplan::set_keys(text, &id, &[("mtu", &v)]).map_err(|e| format!("{path}: {e}"))?
        }
        Renderer::NetworkManager => ini::set(text, "ethernet", "mtu", &v),
        Renderer::Networkd => ini::set(text, "Link", "MTUBytes", &v),
        Renderer::Ifupdown => ifupdown::ensure(text, iface, &format!("mtu {v}"), |l| {
            l.split_whitespace().next() == Some("mtu")
        })
        .ok_or_else(|| format!("{path}: no `iface {iface} inet` stanza"))?,
        Renderer::Ifcfg => ifcfg::set(text, "MTU", &v),
    };
    Ok((path, new))
}

/// The lossless setup of one RoCE interface, as a boot-time unit, where `roce.lossy` or
/// `roce.pfc_other_priority` asks for it.
#[expect(
    clippy::too_many_lines,
    reason = "the unit's commands one after another (PFC, trust and APP, the ECN switches, the \
              ToS, DCBX), each with the line saying why: a list in the unit's order, not logic"
)]
fn lossless(
    inv: &Inventory,
    analysis: &Analysis,
    s: &Snapshot,
    o: &Options,
    plan: &mut Plan,
    port: &Port,
    iface: &str,
) {
    let why = reasons(
        analysis,
        port,
        &[FindingId::RoceLossy, FindingId::RocePfcOtherPriority],
    );
    let Some((dev, ibp)) = inv.ib_port(port) else {
        return;
    };
    if dev.is_soft() {
        plan.note(
            Topic::Roce,
            format!(
                "{iface}: {} is soft-RoCE, which has neither PFC nor ECN: nothing to set",
                dev.name
            ),
        );
        return;
    }
    if why.is_empty() {
        plan.note(
            Topic::Roce,
            format!("{iface}: RoCE's priority is protected (or its DCB state was not read): no lossless setup to write"),
        );
        return;
    }
    let Some(q) = inv.qos(iface) else { return };
    let dcb = match &q.dcb {
        DcbRead::Read(d) => d,
        DcbRead::Unsupported => {
            plan.refuse(
                Topic::Roce,
                iface,
                format!("{iface} has no DCB (its driver has no dcbnl operations): PFC cannot be set on it"),
                Some("ECN with DCQCN only, where the NIC's firmware and the switches support it; or a NIC with DCB.".to_string()),
            );
            return;
        }
        DcbRead::Failed(_) | DcbRead::NotAsked => {
            plan.refuse(
                Topic::Roce,
                iface,
                format!("{iface}'s DCB state could not be read: setup writes PFC only over a state it has seen"),
                None,
            );
            return;
        }
    };
    let (p, dscp) = (o.roce_priority, o.roce_dscp);
    let tos = m::tos_of_dscp(dscp);
    let mut exec: Vec<String> = Vec::new();
    // A port whose DCBX an LLDP agent or the firmware runs takes its settings from the switch:
    // the host's would be overwritten.
    let lld = dcb.dcbx.is_some_and(|x| x & 0x02 != 0);
    if lld {
        exec.push(format!("/usr/sbin/dcb dcbx set dev {iface} host ieee"));
    }
    exec.push(format!(
        "/usr/sbin/dcb pfc set dev {iface} prio-pfc all:off {p}:on"
    ));
    exec.push(format!(
        "/usr/sbin/dcb app replace dev {iface} dscp-prio {dscp}:{p}"
    ));
    if q.ecn.is_some() {
        exec.push(format!(
            "/bin/sh -c 'echo 1 > /sys/class/net/{iface}/ecn/roce_np/enable/{p} && echo 1 > /sys/class/net/{iface}/ecn/roce_rp/enable/{p}'"
        ));
    }
    let cm = format!("/sys/kernel/config/rdma_cm/{}", dev.name);
    exec.push(format!(
        "/bin/sh -c 'mkdir -p {cm} && echo {tos} > {cm}/ports/{n}/default_roce_tos'",
        n = ibp.number
    ));
    let content = format!(
        "# Written by `linerate setup roce`: lossless RoCE on {iface} ({dev}): PFC on priority {p}, \
DSCP {dscp} on priority {p} (DSCP trust), {ecn}rdma_cm's default ToS {tos} (DSCP {dscp}), at every \
start of the interface.\n\
# The switch ports on the path need PFC on priority {p} (and ECN marking on its queue) too.\n\
[Unit]\n\
Description=linerate: lossless RoCE on {iface}\n\
BindsTo=sys-subsystem-net-devices-{iface}.device\n\
After=sys-subsystem-net-devices-{iface}.device sys-kernel-config.mount\n\
Wants=sys-kernel-config.mount\n\
\n\
[Service]\n\
Type=oneshot\n\
RemainAfterExit=yes\n\
ExecStartPre=/sbin/modprobe rdma_cm\n\
{exec}\n\
\n\
[Install]\n\
WantedBy=sys-subsystem-net-devices-{iface}.device multi-user.target\n",
        dev = dev.name,
        ecn = if q.ecn.is_some() {
            format!("ECN (DCQCN) on priority {p}, ")
        } else {
            String::new()
        },
        exec = exec
            .iter()
            .map(|e| format!("ExecStart={e}"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let path = unit_path(iface);
    let Some(file) = files::changed_file(s, &path, content) else {
        plan.note(
            Topic::Roce,
            format!(
                "{path} already writes this setup; `systemctl status {}` says whether it ran",
                unit_name(iface)
            ),
        );
        return;
    };
    if q.ecn.is_none() {
        plan.note(
            Topic::Roce,
            format!("{iface}: the driver exposes no ECN switch (MLNX_OFED's /sys/class/net/{iface}/ecn): upstream mlx5 runs DCQCN from the firmware's defaults; the unit sets PFC, the DSCP map and the ToS"),
        );
    }
    plan.steps.push(Step {
        topic: Topic::Roce,
        subject: iface.to_string(),
        summary: format!(
            "{iface}: lossless RoCE on priority {p} (PFC, DSCP {dscp} → {p}{}, ToS {tos}) at every start of the interface",
            if q.ecn.is_some() { ", ECN" } else { "" }
        ),
        why,
        files: vec![linerate_facts::FileChange {
            mode: 0o644,
            ..file
        }],
        commands: vec![
            PlanCommand::new(
                format!("systemctl daemon-reload && systemctl enable --now {}", unit_name(iface)),
                When::AfterApply,
                if lld {
                    format!("applies it now and whenever {iface} appears; it takes DCBX from the firmware or LLDP agent to the host, and mlx5 resets the link when PFC changes")
                } else {
                    format!("applies it now and whenever {iface} appears; mlx5 resets the link when PFC changes")
                },
            ),
            PlanCommand::new(
                format!("dcb pfc show dev {iface} pfc-enabled; dcb app show dev {iface} dscp-prio; cat {cm}/ports/{}/default_roce_tos", ibp.number),
                When::Check,
                format!("`pfc-enabled {p}`, `dscp-prio {dscp}:{p}`, `{tos}`; then `linerate probe` names no roce.lossy"),
            ),
        ],
        undo: vec![format!(
            "systemctl disable --now {} (the rollback removes the unit); `dcb pfc set dev {iface} prio-pfc all:off`, `dcb app del dev {iface} dscp-prio {dscp}:{p}`, `echo 0 > {cm}/ports/{}/default_roce_tos`",
            unit_name(iface),
            ibp.number
        )],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(r: Renderer, file: &str) -> InCharge {
        InCharge {
            renderer: r,
            backend: None,
            file: Some(file.into()),
            evidence: Vec::new(),
        }
    }

    #[test]
    fn the_mtu_in_each_renderers_syntax() {
        let cases = [
            (
                Renderer::Netplan,
                "/etc/netplan/50.yaml",
                "network:\n  version: 2\n  ethernets:\n    enp65s0f0:\n      addresses: [10.0.0.1/24]\n",
                "      mtu: 9000\n",
            ),
            (
                Renderer::NetworkManager,
                "/etc/NetworkManager/system-connections/e.nmconnection",
                "[connection]\nid=e\ninterface-name=enp65s0f0\n\n[ethernet]\nmtu=1500\n",
                "[ethernet]\nmtu=9000\n",
            ),
            (
                Renderer::Networkd,
                "/etc/systemd/network/10-e.network",
                "[Match]\nName=enp65s0f0\n\n[Network]\nAddress=10.0.0.1/24\n",
                "[Link]\nMTUBytes=9000\n",
            ),
            (
                Renderer::Ifupdown,
                "/etc/network/interfaces",
                "auto enp65s0f0\niface enp65s0f0 inet static\n\taddress 10.0.0.1/24\n\tmtu 1500\n",
                "\tmtu 9000\n",
            ),
            (
                Renderer::Ifcfg,
                "/etc/sysconfig/network-scripts/ifcfg-enp65s0f0",
                "DEVICE=enp65s0f0\nMTU=1500\n",
                "MTU=9000\n",
            ),
        ];
        for (r, path, text, want) in cases {
            let s = Snapshot::from_files([(path, text)]);
            let (p, new) = mtu_edit(&s, &charge(r, path), "enp65s0f0", 9000).unwrap();
            assert_eq!(p, path);
            assert!(new.contains(want), "{r:?}: {new}");
            assert!(!new.contains("1500"), "{r:?}: {new}");
        }
    }
}
