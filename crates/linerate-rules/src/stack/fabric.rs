//! The fabric: IPoIB (`ipoib.not_loaded`, `ipoib.no_interface`) and the subnet manager
//! (`ib.no_opensm`).

use linerate_facts::{Finding, FindingId, Inventory, LinkLayer, Severity};
use linerate_model::{IbPhysState, IbState};

use super::modules::{module_evidence, PERSIST};
use super::{install, Package};

/// `ipoib.not_loaded` and `ipoib.no_interface`.
pub(super) fn ipoib(inv: &Inventory, out: &mut Vec<Finding>) {
    let s = &inv.rdma_stack;
    if !s.known {
        return;
    }
    let ib: Vec<&linerate_facts::Port> = inv
        .ports
        .iter()
        .filter(|p| p.link_layer == LinkLayer::Infiniband && p.device.is_some())
        .collect();
    if ib.is_empty() {
        return;
    }
    if !s.loaded("ib_ipoib") {
        let names: Vec<&str> = ib.iter().map(|p| p.name.as_str()).collect();
        out.push(
            module_evidence(
                Finding::new(FindingId::IpoibNotLoaded, Severity::Warning, "host"),
                "ib_ipoib",
            )
            .message(format!(
                "no IPoIB: ib_ipoib is not loaded, so the InfiniBand ports ({}) carry no IP traffic (TCP tests, NFS over TCP, and the addresses rdma_cm connects by)",
                names.join(", ")
            ))
            .fix(format!("`modprobe ib_ipoib`; {PERSIST}.")),
        );
        return;
    }
    for p in ib.iter().filter(|p| p.netdev.is_none()) {
        out.push(
            Finding::new(FindingId::IpoibNoInterface, Severity::Info, &p.name)
                .evidence("/sys/module/ib_ipoib", "loaded")
                .message(format!(
                    "{} has no IPoIB interface: verbs work on it, but nothing by IP address (TCP, rdma_cm, NFS)",
                    p.name
                ))
                .fix("Check `dmesg | grep -i ipoib`; a child interface for another partition is made with `echo 0x8001 > /sys/class/net/ib0/create_child`.".to_string()),
        );
    }
}

/// `ib.no_opensm`: an InfiniBand port waits for a subnet manager, and none runs here.
pub(super) fn no_opensm(inv: &Inventory, out: &mut Vec<Finding>) {
    let s = &inv.rdma_stack;
    let waiting: Vec<&linerate_facts::Port> = inv
        .ports
        .iter()
        .filter(|p| p.link_layer == LinkLayer::Infiniband)
        .filter(|p| {
            inv.ib_port(p).is_some_and(|(_, ib)| {
                matches!(ib.state, Some(IbState::Init | IbState::Armed))
                    && ib.phys_state == Some(IbPhysState::LinkUp)
            })
        })
        .collect();
    let Some(first) = waiting.first() else {
        return;
    };
    if s.opensm_running || !s.known {
        return;
    }
    let fix = if s.opensm_installed {
        "`systemctl enable --now opensm` on this host if it is to be the fabric's subnet manager (one per fabric: on a back-to-back link, one of the two hosts); `linerate setup opensm --sm-node` writes its configuration".to_string()
    } else {
        format!(
            "`{}` and `systemctl enable --now opensm` on this host if it is to be the fabric's subnet manager (one per fabric: on a back-to-back link, one of the two hosts), or enable the switch's own; `linerate setup opensm --sm-node` writes its configuration",
            install(s.os_family, Package::Opensm)
        )
    };
    out.push(
        Finding::new(FindingId::IbNoOpensm, Severity::Warning, &first.name)
            .evidence(
                "opensm",
                if s.opensm_installed {
                    "installed, not running"
                } else {
                    "not installed"
                },
            )
            .message(format!(
                "{} wait{} for a subnet manager and none runs on this host ({}): with no switch that runs one, a host on the fabric must",
                waiting
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if waiting.len() == 1 { "s" } else { "" },
                if s.opensm_installed {
                    "opensm is installed but not running"
                } else {
                    "opensm is not installed"
                }
            ))
            .fix(format!("{fix}.")),
    );
}
