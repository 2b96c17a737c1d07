//! irq: the interrupts of each NIC on the CPUs of its own NUMA node, through the vendor's tool
//! when it is installed, else a oneshot unit that sets them at every boot. Pure.

use std::collections::BTreeSet;

use crate::plan;
use crate::snapshot::Snapshot;
use crate::Options;
use linerate_facts::{
    cpulist_string, Analysis, FileChange, FindingId, Inventory, Plan, PlanCommand, Step, Topic,
    When, Why,
};

const VENDOR_TOOL: &str = "/usr/sbin/set_irq_affinity_cpulist.sh";

pub fn unit_path(iface: &str) -> String {
    format!("/etc/systemd/system/linerate-irq-{iface}.service")
}

#[expect(
    clippy::too_many_lines,
    reason = "one step per NIC: the unit text and its commands read best together"
)]
pub fn build(inv: &Inventory, analysis: &Analysis, s: &Snapshot, o: &Options, plan: &mut Plan) {
    if inv.host.numa_nodes.len() < 2 {
        plan.note(
            Topic::Irq,
            "one NUMA node: every CPU is local to every NIC, nothing to do",
        );
        return;
    }
    let mut seen = BTreeSet::new();
    for port in &inv.ports {
        if o.iface
            .as_deref()
            .is_some_and(|i| port.netdev.as_deref() != Some(i))
        {
            continue;
        }
        let (Some(iface), Some(pci)) = (port.netdev.as_deref(), inv.port_pci(port)) else {
            continue;
        };
        if !seen.insert(pci.address.clone()) || pci.msi_irqs.is_empty() {
            continue;
        }
        let (Some(node), Some(cpus)) = (pci.numa_node, pci.local_cpus.as_ref()) else {
            plan.note(
                Topic::Irq,
                format!(
                    "{iface}: its NUMA node is unknown ({} has no numa_node): nothing to pin",
                    pci.address
                ),
            );
            continue;
        };
        let cpus = cpulist_string(cpus);
        let irqs: Vec<String> = pci.msi_irqs.iter().map(u32::to_string).collect();
        let mut why = analysis
            .findings
            .iter()
            .find(|f| f.id == FindingId::NumaMismatch && f.subject == pci.address)
            .map_or_else(
                || Why::new(None, format!("{iface} ({}) sits on NUMA node {node} (CPUs {cpus}): its interrupts and the copies they trigger belong there, not on the other node's CPUs across the interconnect", pci.address)),
                |f| {
                    let mut w = Why::new(Some(FindingId::NumaMismatch), f.message.clone());
                    w.evidence.clone_from(&f.evidence);
                    w
                },
            );
        why = why
            .evidence(
                format!("/sys/bus/pci/devices/{}/numa_node", pci.address),
                &node,
            )
            .evidence(
                format!("/sys/bus/pci/devices/{}/local_cpulist", pci.address),
                &cpus,
            )
            .evidence(
                format!("/sys/bus/pci/devices/{}/msi_irqs", pci.address),
                &irqs.join(" "),
            );
        let irqbalance = PlanCommand::new(
            "systemctl disable --now irqbalance",
            When::AfterApply,
            "irqbalance moves interrupts again within seconds; mlnx_tune's HIGH_THROUGHPUT profile stops it too. Skip this if other devices need it (then ban these CPUs from it with IRQBALANCE_BANNED_CPULIST instead)",
        );
        let check = PlanCommand::new(
            format!(
                "for i in {}; do echo \"$i: $(cat /proc/irq/$i/smp_affinity_list)\"; done",
                irqs.join(" ")
            ),
            When::Check,
            format!("each IRQ lists CPUs within {cpus}"),
        );
        let mut check = vec![check];
        if s.has_dir("/usr/sbin/mlnx_tune") || s.has_dir("/usr/bin/mlnx_tune") {
            check.push(PlanCommand::new(
                "mlnx_tune -r",
                When::Check,
                "mlnx-tools' report of the tuning in force (it changes nothing without -p)",
            ));
        }
        if s.has_dir(VENDOR_TOOL) {
            plan.steps.push(Step {
                topic: Topic::Irq,
                subject: iface.to_string(),
                summary: format!("{iface}: interrupts on NUMA node {node} (CPUs {cpus}) with the vendor's script"),
                why: vec![why],
                files: Vec::new(),
                commands: vec![
                    PlanCommand::new(format!("set_irq_affinity_cpulist.sh {cpus} {iface}"), When::AfterApply, "Mellanox/NVIDIA mlnx-tools spreads the queues' IRQs over these CPUs (not persistent: run it at boot)"),
                    irqbalance,
                ]
                .into_iter()
                .chain(check)
                .collect(),
                undo: vec!["systemctl enable --now irqbalance".to_string()],
            });
            continue;
        }
        let path = unit_path(iface);
        let content = format!(
            "# Written by `linerate setup irq`: the interrupts of {iface} ({bdf}) on the CPUs of its NUMA node {node}.\n# The IRQ numbers are read at each start: they change when the driver reloads.\n[Unit]\nDescription=linerate: interrupts of {iface} on NUMA node {node} (CPUs {cpus})\nAfter=network-pre.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'for i in $$(ls /sys/bus/pci/devices/{bdf}/msi_irqs); do echo {cpus} > /proc/irq/$$i/smp_affinity_list 2>/dev/null || true; done'\n\n[Install]\nWantedBy=multi-user.target\n",
            bdf = pci.address
        );
        if s.file(&path) == Some(content.as_str()) {
            plan.note(
                Topic::Irq,
                format!("{path} already pins {iface}'s interrupts: nothing to write"),
            );
            continue;
        }
        plan.steps.push(Step {
            topic: Topic::Irq,
            subject: iface.to_string(),
            summary: format!("{iface}: interrupts on NUMA node {node} (CPUs {cpus}) at every boot"),
            why: vec![why],
            files: vec![FileChange {
                // A unit linerate owns: 0o644 whatever the file had.
                mode: 0o644,
                ..plan::write_file(s, &path, content)
            }],
            commands: vec![
                PlanCommand::new(format!("systemctl daemon-reload && systemctl enable --now linerate-irq-{iface}.service"), When::AfterApply, "sets them now and at every boot; no traffic stops"),
                irqbalance,
            ]
            .into_iter()
            .chain(check)
            .collect(),
            undo: vec![format!("systemctl disable linerate-irq-{iface}.service (the rollback removes the unit); the affinity returns to the default at the next boot")],
        });
    }
}
