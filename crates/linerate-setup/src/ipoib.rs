//! ipoib: connected mode with MTU 65520 in the syntax of the renderer in charge of each IPoIB
//! interface, or the reason it cannot be done (enhanced IPoIB). Pure.

use crate::detect::{self, InCharge, Renderer};
use crate::edit::{ifcfg, ifupdown, ini, netplan};
use crate::snapshot::Snapshot;
use crate::Options;
use linerate_facts::{
    Analysis, FileAction, FileChange, FindingId, Inventory, IpoibMode, Netdev, NetdevKind, Plan,
    PlanCommand, Step, Topic, When, Why,
};

/// Connected mode's largest MTU (64 KiB less the IPoIB header).
pub const CONNECTED_MTU: u32 = 65520;
/// Datagram mode's MTU on a 4 KiB InfiniBand MTU (4096 less the 4-byte IPoIB header).
pub const DATAGRAM_MTU_4K: u32 = 4092;
/// netplan's `infiniband-mode` key appeared in this version.
pub const NETPLAN_MIN: [u32; 2] = [0, 105];
/// systemd-networkd gained IPoIB support (`[IPoIB]`) in this version (systemd NEWS, "CHANGES WITH 250").
pub const NETWORKD_IPOIB_MIN: [u32; 1] = [250];

fn sys(n: &Netdev, file: &str) -> String {
    format!("/sys/class/net/{}/{file}", n.name)
}

/// The findings of `analysis` that this step answers, as reasons.
fn reasons(analysis: &Analysis, n: &Netdev) -> Vec<Why> {
    let mut out: Vec<Why> = analysis
        .findings
        .iter()
        .filter(|f| {
            f.subject == n.name
                && matches!(f.id, FindingId::IpoibDatagramMode | FindingId::MtuSmall)
        })
        .map(|f| Why {
            finding: Some(f.id),
            text: f.message.clone(),
            evidence: f.evidence.clone(),
        })
        .collect();
    if out.is_empty() {
        let mode = n
            .ipoib
            .as_ref()
            .and_then(|i| i.mode)
            .map_or("?", IpoibMode::as_str);
        out.push(
            Why::new(
                None,
                format!(
                    "{} runs in {mode} mode with MTU {}: the configuration should say so, so that it survives a reboot",
                    n.name,
                    n.mtu.map_or_else(|| "?".to_string(), |m| m.to_string())
                ),
            )
            .evidence(sys(n, "mode"), &mode)
            .evidence(sys(n, "mtu"), &n.mtu.map_or_else(|| "?".to_string(), |m| m.to_string())),
        );
    }
    out
}

/// Refuse connected mode where the hardware or kernel cannot do it; `true` when refused.
fn refuse_unsupported(plan: &mut Plan, n: &Netdev, model: Option<&str>) -> bool {
    let Some(info) = &n.ipoib else { return false };
    if info.connected_capable != Some(false) {
        return false;
    }
    let mlx5 = n.driver.as_deref().is_some_and(|d| d.starts_with("mlx5"));
    let mtu = n.mtu.map_or_else(|| "?".to_string(), |m| m.to_string());
    if mlx5 {
        let small = n.mtu.is_some_and(|m| m < DATAGRAM_MTU_4K);
        plan.refuse(
            Topic::Ipoib,
            &n.name,
            format!(
                "{}{} is enhanced IPoIB (mlx5, ConnectX-4 and later with the inbox driver: {} has no 0x80 flag in its first byte), which is datagram-only: connected mode is unavailable. Keeping datagram mode with MTU {DATAGRAM_MTU_4K}, the largest datagram MTU on a 4 KiB InfiniBand MTU (now {mtu}){}",
                n.name,
                model.map(|m| format!(" ({m})")).unwrap_or_default(),
                sys(n, "address"),
                if small {
                    "; the fabric's IPoIB broadcast group sets it: `mtu=5` (4096) on the partition in opensm's partitions.conf raises it to 4092"
                } else {
                    ""
                }
            ),
            Some("MLNX_OFED's `options ib_ipoib ipoib_enhanced=0` (in /etc/modprobe.d/ib_ipoib.conf, then reload the driver) turns enhanced IPoIB off, at the cost of more memory and lower IPoIB bandwidth (no stateless offloads); inbox kernels have no such switch: only a kernel built with CONFIG_MLX5_CORE_IPOIB=n. Usually not worth it: use RDMA for bulk data instead.".to_string()),
        );
    } else {
        plan.refuse(
            Topic::Ipoib,
            &n.name,
            format!(
                "{}: this HCA or kernel offers no connected mode ({} lacks the 0x80 flag{}); keeping datagram mode with MTU {mtu}",
                n.name,
                sys(n, "address"),
                if info.mode.is_none() { ", and there is no `mode` file" } else { "" }
            ),
            Some("A kernel with IPoIB connected mode (CONFIG_INFINIBAND_IPOIB_CM=y) and an HCA that supports it (mlx4, qib, mthca on current kernels).".to_string()),
        );
    }
    true
}

/// The edited file for the renderer in charge, or why it cannot be edited.
fn edit(
    s: &Snapshot,
    c: &InCharge,
    iface: &str,
    plan: &mut Plan,
) -> Result<(String, String), String> {
    let path = c.file.clone().ok_or("no file")?;
    let text = s
        .file(&path)
        .ok_or_else(|| format!("{path}: not readable"))?;
    let mtu = CONNECTED_MTU.to_string();
    let new = match c.renderer {
        Renderer::Netplan => {
            match detect::dpkg_version(s, "netplan.io") {
                Some(v) if !detect::version_at_least(&v, &NETPLAN_MIN) => {
                    return Err(format!(
                        "netplan.io {v} has no `infiniband-mode` key (added in 0.105): upgrade netplan.io, or configure {iface} with the backend directly"
                    ))
                }
                Some(v) => plan.note(Topic::Ipoib, format!("netplan.io {v} (from /var/lib/dpkg/status) knows `infiniband-mode` (0.105 and later)")),
                None => plan.note(Topic::Ipoib, "netplan's version is unknown (no dpkg record): `infiniband-mode` needs netplan 0.105 or later; `netplan info` lists the feature `infiniband` when it is there"),
            }
            let doc = netplan::Doc::parse(text).map_err(|e| format!("{path}: {e}"))?;
            let id = doc
                .find_interface(iface)
                .ok_or_else(|| format!("{path}: no {iface}"))?;
            netplan::set_keys(
                text,
                &id,
                &[("infiniband-mode", "connected"), ("mtu", &mtu)],
            )
            .map_err(|e| format!("{path}: {e}"))?
        }
        Renderer::NetworkManager => {
            let t = ini::set(text, "infiniband", "transport-mode", "connected");
            ini::set(&t, "infiniband", "mtu", &mtu)
        }
        Renderer::Networkd => {
            match detect::dpkg_version(s, "systemd") {
                Some(v) if !detect::version_at_least(&v, &NETWORKD_IPOIB_MIN) => {
                    return Err(format!(
                        "systemd {v}: systemd-networkd has no [IPoIB] section before version 250: upgrade systemd, or set the mode with a udev rule (ATTR{{mode}}=\"connected\")"
                    ))
                }
                Some(v) => plan.note(Topic::Ipoib, format!("systemd {v} (from /var/lib/dpkg/status): systemd-networkd knows [IPoIB] Mode= (250 and later)")),
                None => plan.note(Topic::Ipoib, "systemd's version is unknown (no dpkg record): systemd-networkd's [IPoIB] section needs systemd 250 or later (`systemctl --version`)"),
            }
            let t = ini::set(text, "Link", "MTUBytes", &mtu);
            ini::set(&t, "IPoIB", "Mode", "connected")
        }
        Renderer::Ifupdown => {
            let t = ifupdown::ensure(text, iface, &format!("mtu {mtu}"), |l| {
                l.split_whitespace().next() == Some("mtu")
            })
            .ok_or_else(|| format!("{path}: no `iface {iface} inet` stanza"))?;
            ifupdown::ensure(
                &t,
                iface,
                "pre-up echo connected > /sys/class/net/$IFACE/mode",
                |l| l.starts_with("pre-up") && l.contains("/mode"),
            )
            .ok_or_else(|| format!("{path}: no `iface {iface} inet` stanza"))?
        }
        Renderer::Ifcfg => {
            let t = ifcfg::set(text, "CONNECTED_MODE", "yes");
            ifcfg::set(&t, "MTU", &mtu)
        }
    };
    Ok((path, new))
}

pub(crate) fn restart(
    s: &Snapshot,
    c: &InCharge,
    iface: &str,
    distro_major: Option<u32>,
) -> String {
    let nm_id = |path: &str| {
        s.file(path)
            .and_then(|t| ini::get(t, "connection", "id"))
            .unwrap_or_else(|| iface.to_string())
    };
    match (c.renderer, c.backend) {
        (Renderer::Netplan, Some(Renderer::NetworkManager)) => format!(
            "netplan generate && nmcli connection reload && nmcli connection up netplan-{iface}"
        ),
        (Renderer::Netplan, _) => {
            format!("netplan generate && networkctl reload && networkctl reconfigure {iface}")
        }
        (Renderer::NetworkManager, _) => format!(
            "nmcli connection reload && nmcli connection up '{}'",
            nm_id(c.file.as_deref().unwrap_or(""))
        ),
        (Renderer::Networkd, _) => format!("networkctl reload && networkctl reconfigure {iface}"),
        (Renderer::Ifupdown, _) => format!("ifdown {iface} && ifup {iface}"),
        (Renderer::Ifcfg, _) if distro_major.is_some_and(|m| m >= 8) => {
            format!("nmcli connection reload && nmcli connection up ifname {iface}")
        }
        (Renderer::Ifcfg, _) => format!("ifdown {iface} && ifup {iface}"),
    }
}

fn no_config(plan: &mut Plan, s: &Snapshot, n: &Netdev, forced: Option<Renderer>) {
    let active = detect::active_renderers(s);
    plan.refuse(
        Topic::Ipoib,
        &n.name,
        format!(
            "no configuration file for {} was found{} (active: {}): setup edits the interface's existing configuration and does not invent addresses for it",
            n.name,
            forced.map(|r| format!(" for --renderer {}", r.as_str())).unwrap_or_default(),
            if active.is_empty() { "none detected".to_string() } else { active.join(", ") }
        ),
        Some(format!(
            "Configure {0} first (e.g. `nmcli connection add type infiniband con-name {0} ifname {0} transport-mode connected mtu {CONNECTED_MTU}`, or a netplan/networkd/ifupdown entry with its addresses), then run setup again.",
            n.name
        )),
    );
}

/// The ipoib steps for every IPoIB interface (or `--iface`).
pub fn build(inv: &Inventory, analysis: &Analysis, s: &Snapshot, o: &Options, plan: &mut Plan) {
    let candidates: Vec<&Netdev> = inv
        .netdevs
        .iter()
        .filter(|n| n.kind == NetdevKind::Ipoib)
        .filter(|n| o.iface.as_deref().is_none_or(|i| i == n.name))
        .collect();
    if candidates.is_empty() {
        let what = o.iface.as_deref().map_or_else(
            || "this machine has no IPoIB interface".to_string(),
            |i| {
                format!(
                    "{i} is not an IPoIB interface (or does not exist) under {}",
                    o.root_shown
                )
            },
        );
        plan.note(Topic::Ipoib, format!("nothing to do: {what}"));
        return;
    }
    let major = detect::distro(s).major();
    for n in candidates {
        let model = n
            .pci
            .as_deref()
            .and_then(|a| inv.pci(a))
            .and_then(linerate_facts::PciFunction::card)
            .map(|c| c.model);
        if refuse_unsupported(plan, n, model) {
            continue;
        }
        let Some(c) = detect::in_charge(s, &n.name, o.renderer) else {
            no_config(plan, s, n, o.renderer);
            continue;
        };
        let (path, new) = match edit(s, &c, &n.name, plan) {
            Ok(x) => x,
            Err(e) => {
                plan.refuse(Topic::Ipoib, &n.name, e, None);
                continue;
            }
        };
        let mut why = reasons(analysis, n);
        for e in &c.evidence {
            why.push(Why::new(None, format!("renderer in charge: {e}")));
        }
        if s.file(&path) == Some(new.as_str()) {
            plan.note(
                Topic::Ipoib,
                format!(
                    "{}: {path} already sets connected mode and MTU {CONNECTED_MTU}: nothing to do",
                    n.name
                ),
            );
            continue;
        }
        let old_mtu = n.mtu.map_or_else(|| "2044".to_string(), |m| m.to_string());
        plan.steps.push(Step {
            topic: Topic::Ipoib,
            subject: n.name.clone(),
            summary: format!(
                "{}: IPoIB connected mode with MTU {CONNECTED_MTU} in {path} ({})",
                n.name,
                c.renderer.as_str()
            ),
            why,
            files: vec![FileChange {
                action: FileAction::Modify,
                mode: s.mode(&path).unwrap_or(0o644),
                path: path.clone(),
                content: new,
            }],
            commands: vec![
                PlanCommand::new(
                    restart(s, &c, &n.name, major),
                    When::Restart,
                    format!("re-applies the configuration of {} only; traffic over it stops for a moment (run it from a console, not over {})", n.name, n.name),
                ),
                PlanCommand::new(
                    format!("cat /sys/class/net/{0}/mode /sys/class/net/{0}/mtu", n.name),
                    When::Check,
                    format!("prints `connected` and `{CONNECTED_MTU}` once it took effect"),
                ),
            ],
            undo: vec![format!(
                "at run time: `echo datagram > /sys/class/net/{0}/mode && ip link set {0} mtu {old_mtu}`",
                n.name
            )],
        });
    }
}
