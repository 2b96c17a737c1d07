//! rings: a receive ring that dropped packets, grown to the size `ring.drops` names (up to the
//! device's maximum), kept across reboots in the distribution's way: the NetworkManager
//! profile's `ethtool.ring-rx` when NetworkManager (1.26 or later, where ring settings appeared:
//! libnm's `nm_ethtool_optname_is_ring`, "Since: 1.26") runs the interface from a keyfile; else
//! a systemd `.link` file (`RxBufferSize=`, systemd 244 and later: its NEWS, "CHANGES WITH
//! 244"), which udev applies whenever the interface appears whatever runs its addresses; on an
//! older systemd with an ifcfg file, its `ETHTOOL_OPTS`. Pure.

use crate::detect::{self, Renderer};
use crate::edit::{ifcfg, ini};
use crate::plan;
use crate::snapshot::Snapshot;
use crate::Options;
use linerate_facts::{
    Analysis, Finding, FindingId, Inventory, Plan, PlanCommand, Step, Topic, When, Why,
};

/// The first systemd with `RxBufferSize=` in `.link` files.
pub const SYSTEMD_MIN: [u32; 1] = [244];
/// The first NetworkManager with `ethtool.ring-rx`.
pub const NM_MIN: [u32; 2] = [1, 26];
const LINK_DIR: &str = "/etc/systemd/network";

/// The `.link` file setup writes for `iface`; the `10-` sorts it before systemd's
/// `99-default.link` (udev applies the first file that matches).
pub fn link_path(iface: &str) -> String {
    format!("{LINK_DIR}/10-linerate-{iface}.link")
}

pub fn build(inv: &Inventory, analysis: &Analysis, s: &Snapshot, o: &Options, plan: &mut Plan) {
    let mut any = false;
    for f in analysis
        .findings
        .iter()
        .filter(|f| f.id == FindingId::RingDrops)
    {
        if o.iface.as_deref().is_some_and(|i| i != f.subject) {
            continue;
        }
        let Some(target) = f
            .evidence
            .get("ring.rx_target")
            .and_then(|v| v.parse::<u32>().ok())
        else {
            plan.note(
                Topic::Rings,
                format!(
                    "{}: its ring is already at the device's maximum; the drops want more queues on more cores, not a longer ring",
                    f.subject
                ),
            );
            continue;
        };
        any = true;
        let Some(nd) = inv.netdev(&f.subject) else {
            continue;
        };
        let why = {
            let mut w = Why::new(Some(FindingId::RingDrops), f.message.clone());
            w.evidence.clone_from(&f.evidence);
            w
        };
        if let Some(step) = step(inv, nd, target, f, why, s, o, plan) {
            plan.steps.push(step);
        }
    }
    if !any && !plan.notes.iter().any(|n| n.topic == Topic::Rings) {
        plan.note(
            Topic::Rings,
            "no receive ring dropped packets (ring.drops): nothing to do",
        );
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one interface's step needs its finding, the plan and the snapshot together"
)]
#[expect(
    clippy::too_many_lines,
    reason = "the ways a distribution keeps a ring, in the order one takes over from another: NetworkManager's profile, then ifcfg before systemd 244, then a .link file"
)]
fn step(
    inv: &Inventory,
    nd: &linerate_facts::Netdev,
    target: u32,
    f: &Finding,
    why: Why,
    s: &Snapshot,
    o: &Options,
    plan: &mut Plan,
) -> Option<Step> {
    let iface = nd.name.as_str();
    let now = PlanCommand::new(
        format!("ethtool -G {iface} rx {target}"),
        When::AfterApply,
        "the ring now, until the next boot (the driver reopens its queues: a moment without traffic on this port)",
    );
    let check = PlanCommand::new(
        format!("ethtool -g {iface}"),
        When::Check,
        format!("`Current hardware settings:` shows `RX: {target}`"),
    );
    let in_charge = detect::in_charge(s, iface, o.renderer);
    let nm_version = detect::dpkg_version(s, "network-manager");
    let systemd = detect::dpkg_version(s, "systemd");
    // NetworkManager applies its profile's ethtool settings when it activates the device, over
    // what udev set: when it runs the interface, the profile is where the ring belongs.
    if let Some(c) = in_charge
        .as_ref()
        .filter(|c| c.renderer == Renderer::NetworkManager)
    {
        let file = c.file.as_deref()?;
        if nm_version
            .as_deref()
            .is_some_and(|v| !detect::version_at_least(v, &NM_MIN))
        {
            plan.refuse(
                Topic::Rings,
                iface,
                format!(
                    "NetworkManager {} runs {iface} and has no ring settings before 1.26",
                    nm_version.as_deref().unwrap_or("?")
                ),
                Some(format!("`ethtool -G {iface} rx {target}` at every boot (a dispatcher script), or a newer NetworkManager")),
            );
            return None;
        }
        let old = s.file(file).unwrap_or("");
        let content = ini::set(old, "ethtool", "ring-rx", &target.to_string());
        let Some(change) = plan::changed_file(s, file, content) else {
            plan.note(
                Topic::Rings,
                format!("{file} already sets ring-rx={target}: NetworkManager sets the ring when it activates {iface}; `ethtool -G {iface} rx {target}` sets it now"),
            );
            return None;
        };
        return Some(Step {
            topic: Topic::Rings,
            subject: iface.to_string(),
            summary: format!(
                "the receive ring of {iface} at {target} descriptors, in its NetworkManager profile ({file})"
            ),
            why: vec![why.evidence("renderer", &"NetworkManager keyfile")],
            files: vec![change],
            commands: vec![
                now,
                PlanCommand::new(
                    "nmcli connection reload",
                    When::AfterApply,
                    "NetworkManager reads the profile again",
                ),
                PlanCommand::new(
                    format!("nmcli device reapply {iface}"),
                    When::Restart,
                    "NetworkManager applies the profile's ethtool settings to the running device",
                ),
                check,
            ],
            undo: vec![format!(
                "remove `ring-rx={target}` from [ethtool] in {file}, then `ethtool -G {iface} rx {}`",
                rx_now(f)
            )],
        });
    }
    let systemd_ok = systemd
        .as_deref()
        .is_none_or(|v| detect::version_at_least(v, &SYSTEMD_MIN));
    if !systemd_ok {
        if let Some(file) = in_charge
            .as_ref()
            .filter(|c| c.renderer == Renderer::Ifcfg)
            .and_then(|c| c.file.clone())
        {
            let old = s.file(&file).unwrap_or("");
            let content = ifcfg::set(old, "ETHTOOL_OPTS", &format!("\"-G {iface} rx {target}\""));
            let change = plan::changed_file(s, &file, content)?;
            return Some(Step {
                topic: Topic::Rings,
                subject: iface.to_string(),
                summary: format!(
                    "the receive ring of {iface} at {target} descriptors, in {file} (ETHTOOL_OPTS)"
                ),
                why: vec![why],
                files: vec![change],
                commands: vec![now, check],
                undo: vec![format!("remove ETHTOOL_OPTS from {file}")],
            });
        }
        plan.refuse(
            Topic::Rings,
            iface,
            format!(
                "systemd {} has no RxBufferSize= (244 and later do) and no NetworkManager profile or ifcfg file runs {iface}",
                systemd.as_deref().unwrap_or("?")
            ),
            Some(format!("`ethtool -G {iface} rx {target}` at every boot (a oneshot unit)")),
        );
        return None;
    }
    link_step(
        inv,
        nd,
        target,
        f,
        why,
        s,
        now,
        check,
        systemd.as_deref(),
        plan,
    )
}

#[expect(
    clippy::too_many_arguments,
    reason = "the .link step: the interface, its finding, and the commands made for it"
)]
fn link_step(
    inv: &Inventory,
    nd: &linerate_facts::Netdev,
    target: u32,
    f: &Finding,
    why: Why,
    s: &Snapshot,
    now: PlanCommand,
    check: PlanCommand,
    systemd: Option<&str>,
    plan: &mut Plan,
) -> Option<Step> {
    let iface = nd.name.as_str();
    let mac = nd.address.as_deref();
    // An operator's .link file for this interface: udev applies only the first that matches,
    // so the ring goes there rather than in a file that would take its place.
    let theirs = s.files_in(LINK_DIR).find(|(p, text)| {
        std::path::Path::new(p)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("link"))
            && *p != link_path(iface)
            && ["MACAddress", "PermanentMACAddress", "OriginalName", "Name"]
                .iter()
                .filter_map(|k| ini::get(text, "Match", k))
                .any(|v| {
                    v.split_whitespace()
                        .any(|w| w == iface || mac.is_some_and(|m| w.eq_ignore_ascii_case(m)))
                })
    });
    let (path, content, summary) = if let Some((p, text)) = theirs {
        (
            p.to_string(),
            ini::set(text, "Link", "RxBufferSize", &target.to_string()),
            format!("the receive ring of {iface} at {target} descriptors, in the .link file that already matches it ({p})"),
        )
    } else {
        let Some(mac) = mac else {
            plan.refuse(
                Topic::Rings,
                iface,
                format!("{iface} has no MAC address to match a .link file on"),
                Some(format!("`ethtool -G {iface} rx {target}` at every boot")),
            );
            return None;
        };
        let model = nd
            .pci
            .as_deref()
            .and_then(|a| inv.pci(a))
            .and_then(|f| f.model.clone())
            .unwrap_or_else(|| "the NIC".into());
        (
            link_path(iface),
            format!(
                "# Written by `linerate setup rings`: the receive ring of {iface} ({model}) at {target}\n\
                 # descriptors, set by udev whenever the interface appears. udev applies the first .link\n\
                 # file that matches, so this one takes the place of systemd's 99-default.link for this\n\
                 # port: its naming and MAC policies are copied here unchanged.\n\
                 [Match]\nMACAddress={mac}\n\n\
                 [Link]\nNamePolicy=keep kernel database onboard slot path\n\
                 AlternativeNamesPolicy=database onboard slot path\nMACAddressPolicy=persistent\n\
                 RxBufferSize={target}\n"
            ),
            format!("the receive ring of {iface} at {target} descriptors, in a systemd .link file udev applies at every boot"),
        )
    };
    let mut why = why;
    if let Some(v) = systemd {
        why = why.evidence("systemd", &v);
    }
    let file = plan::changed_file(s, &path, content);
    if file.is_none() {
        plan.note(
            Topic::Rings,
            format!("{path} already sets RxBufferSize={target}: the ring is set at boot; `ethtool -G {iface} rx {target}` sets it now"),
        );
        return None;
    }
    Some(Step {
        topic: Topic::Rings,
        subject: iface.to_string(),
        summary,
        why: vec![why],
        files: file.into_iter().collect(),
        commands: vec![
            now,
            PlanCommand::new(
                format!("udevadm test-builtin net_setup_link /sys/class/net/{iface}"),
                When::Check,
                format!("names {path} as the .link file of {iface}"),
            ),
            check,
        ],
        undo: vec![format!(
            "`linerate setup --rollback`, then `ethtool -G {iface} rx {}`",
            rx_now(f)
        )],
    })
}

/// The ring's size when the finding was made (`rx / rx max` evidence).
fn rx_now(f: &Finding) -> String {
    f.evidence
        .iter()
        .find(|(k, _)| k.ends_with("rx / rx max"))
        .and_then(|(_, v)| v.split('/').next())
        .map_or("?".to_string(), |v| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_facts::{Severity, Step};

    fn finding(iface: &str) -> Finding {
        Finding::new(FindingId::RingDrops, Severity::Warning, iface)
            .evidence(format!("ethtool -g {iface}: rx / rx max"), "512 / 4096")
            .evidence("ring.rx_target", 4096)
            .message("dropped")
    }

    fn inventory(iface: &str) -> Inventory {
        let mut inv = Inventory::default();
        inv.netdevs.push(linerate_facts::Netdev {
            name: iface.into(),
            kind: linerate_facts::NetdevKind::Ethernet,
            arp_type: Some(1),
            is_virtual: false,
            paravirtual: false,
            driver: Some("ixgbe".into()),
            pci: Some("0000:03:00.1".into()),
            mtu: Some(9000),
            speed_mbps: Some(10_000),
            operstate: Some("up".into()),
            carrier: Some(true),
            admin_up: Some(true),
            dev_port: Some(0),
            address: Some("a0:36:9f:20:00:11".into()),
            ipoib: None,
            errors: std::collections::BTreeMap::new(),
        });
        inv
    }

    fn plan_of(files: &[(&str, &str)]) -> Plan {
        let inv = inventory("enp3s0f1");
        let analysis = Analysis {
            ports: Vec::new(),
            findings: vec![finding("enp3s0f1")],
        };
        let s = Snapshot::from_files(files.iter().copied());
        crate::build_plan(&[Topic::Rings], &inv, &analysis, &s, &Options::default())
    }

    fn dpkg(pkg: &str, version: &str) -> String {
        format!("Package: {pkg}\nStatus: install ok installed\nVersion: {version}\n")
    }

    fn only(p: &Plan) -> &Step {
        assert_eq!(p.steps.len(), 1, "{p:#?}");
        &p.steps[0]
    }

    #[test]
    fn a_link_file_where_systemd_has_rxbuffersize() {
        let db = dpkg("systemd", "252.39-1~deb12u2");
        let p = plan_of(&[("/var/lib/dpkg/status", &db)]);
        let s = only(&p);
        let f = &s.files[0];
        assert_eq!(f.path, "/etc/systemd/network/10-linerate-enp3s0f1.link");
        assert!(
            f.content.contains("MACAddress=a0:36:9f:20:00:11"),
            "{}",
            f.content
        );
        assert!(f.content.contains("RxBufferSize=4096"));
        assert!(f
            .content
            .contains("NamePolicy=keep kernel database onboard slot path"));
        assert!(s
            .commands
            .iter()
            .any(|c| c.run == "ethtool -G enp3s0f1 rx 4096"));
        // Applied: nothing left to do.
        let again = plan_of(&[("/var/lib/dpkg/status", &db), (&f.path, &f.content)]);
        assert!(again.steps.is_empty(), "{again:#?}");
    }

    #[test]
    fn the_operators_link_file_is_edited_rather_than_shadowed() {
        let link = "[Match]\nMACAddress=a0:36:9f:20:00:11\n\n[Link]\nName=wan0\n";
        let p = plan_of(&[("/etc/systemd/network/50-wan.link", link)]);
        let f = &only(&p).files[0];
        assert_eq!(f.path, "/etc/systemd/network/50-wan.link");
        assert!(
            f.content.contains("Name=wan0") && f.content.contains("RxBufferSize=4096"),
            "{}",
            f.content
        );
    }

    #[test]
    fn networkmanager_keeps_it_in_its_profile() {
        let key = "[connection]\nid=uplink\ninterface-name=enp3s0f1\ntype=ethernet\n";
        let db = dpkg("network-manager", "1.42.4-1");
        let p = plan_of(&[
            (
                "/etc/NetworkManager/system-connections/uplink.nmconnection",
                key,
            ),
            ("/var/lib/dpkg/status", &db),
        ]);
        let s = only(&p);
        assert!(
            s.files[0].content.contains("[ethtool]\nring-rx=4096"),
            "{}",
            s.files[0].content
        );
        assert!(s
            .commands
            .iter()
            .any(|c| c.run == "nmcli device reapply enp3s0f1" && c.when == When::Restart));
        // NetworkManager before 1.26 has no ring settings: refused, with what to do instead.
        let old = dpkg("network-manager", "1.22.10-1");
        let p = plan_of(&[
            (
                "/etc/NetworkManager/system-connections/uplink.nmconnection",
                key,
            ),
            ("/var/lib/dpkg/status", &old),
        ]);
        assert!(p.steps.is_empty());
        assert!(p.refusals[0].reason.contains("1.26"), "{:?}", p.refusals);
    }

    #[test]
    fn an_old_systemd_gets_ifcfg_or_a_refusal() {
        let db = dpkg("systemd", "239-1");
        let p = plan_of(&[("/var/lib/dpkg/status", &db)]);
        assert!(p.steps.is_empty());
        assert!(p.refusals[0].reason.contains("244"), "{:?}", p.refusals);
        let ifcfg = "DEVICE=enp3s0f1\nONBOOT=yes\n";
        let p = plan_of(&[
            ("/var/lib/dpkg/status", &db),
            ("/etc/sysconfig/network-scripts/ifcfg-enp3s0f1", ifcfg),
        ]);
        assert!(only(&p).files[0]
            .content
            .contains("ETHTOOL_OPTS=\"-G enp3s0f1 rx 4096\""));
    }
}
