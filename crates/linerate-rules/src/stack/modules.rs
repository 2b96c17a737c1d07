//! The kernel's part: the RDMA part of each NIC's driver (`rdma.driver_missing`), the modules
//! that give programs their device nodes (`rdma.no_uverbs`, `rdma.no_rdma_cm`), and why a module
//! does not load when asked for.

use linerate_facts::{Finding, FindingId, Inventory, Severity};

use super::device_names;

pub(super) const PERSIST: &str =
    "`linerate setup rdma-stack --apply` loads it at every boot (modules-load.d)";

pub(super) fn module_evidence(f: Finding, m: &str) -> Finding {
    f.evidence(format!("/sys/module/{m}"), "not loaded")
}

/// The kernel module that gives a NIC driver its RDMA device.
fn ib_module_of(driver: &str) -> Option<&'static str> {
    Some(match driver {
        "mlx4_core" => "mlx4_ib",
        "mlx5_core" => "mlx5_ib",
        "bnxt_en" => "bnxt_re",
        "qede" => "qedr",
        "cxgb4" => "iw_cxgb4",
        "ice" => "irdma",
        _ => return None,
    })
}

/// `rdma.driver_missing`: a NIC whose driver has an RDMA part, with no RDMA device.
pub(super) fn driver_missing(inv: &Inventory, out: &mut Vec<Finding>) {
    let s = &inv.rdma_stack;
    if !s.known {
        return;
    }
    for f in &inv.pci {
        let Some(m) = f.driver.as_deref().and_then(ib_module_of) else {
            continue;
        };
        let has_netdev = inv
            .netdevs
            .iter()
            .any(|n| n.pci.as_deref() == Some(f.address.as_str()));
        let has_ib = inv
            .ib_devices
            .iter()
            .any(|d| d.pci.as_deref() == Some(f.address.as_str()));
        if !has_netdev || has_ib || s.loaded(m) {
            continue;
        }
        out.push(
            module_evidence(
                Finding::new(FindingId::RdmaDriverMissing, Severity::Warning, &f.address)
                    .evidence(
                        format!("/sys/bus/pci/devices/{}/driver", f.address),
                        f.driver.as_deref().unwrap_or("?"),
                    ),
                m,
            )
            .message(format!(
                "{} ({}) runs its Ethernet driver {} but has no RDMA device: {m}, its RDMA part, is not loaded, so verbs, RoCE and NFS over RDMA cannot use it",
                f.address,
                f.model.as_deref().unwrap_or("RDMA-capable NIC"),
                f.driver.as_deref().unwrap_or("?")
            ))
            .fix(format!("`modprobe {m}`; {PERSIST}.")),
        );
    }
}

/// Why `module`, an RDMA client of rdma-core's (`ib_uverbs`, `rdma_ucm`), does not load when a
/// program asks for its device: `None` when it does (Linux 5.3 and later load these clients on
/// demand through RDMA netlink, which rdma-core uses, so a module not loaded yet is no fault).
fn cannot_autoload(inv: &Inventory, module: &str) -> Option<String> {
    cannot_load_as(inv, module, Some((5, 3)), false)
}

/// Why `module` does not load when the kernel asks for it (`request_module`, on demand since
/// kernel `since`, or always when `None`): blocked by modprobe.d, not built, or too old a
/// kernel; `None` when it loads. `by_name`: the kernel asks for the module by its name, which
/// only an `install` line of modprobe.d stops.
fn cannot_load_as(
    inv: &Inventory,
    module: &str,
    since: Option<(u32, u32)>,
    by_name: bool,
) -> Option<String> {
    let s = &inv.rdma_stack;
    let blocked = |m: &str| !by_name || s.modules_blocked_by_name.iter().any(|b| b == m);
    if let Some((_, file)) = s
        .modules_blocked
        .iter()
        .find(|(m, _)| m == module && blocked(m))
    {
        return Some(format!("{file} keeps it from loading"));
    }
    if !s.modules_available.iter().any(|m| m == module) {
        return Some(format!(
            "the running kernel ({}) has no such module",
            inv.host.kernel.as_deref().unwrap_or("?")
        ));
    }
    let since = since?;
    let on_demand = inv
        .host
        .kernel
        .as_deref()
        .and_then(|k| {
            let mut it = k.split(['.', '-']).map(|p| p.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .is_some_and(|v| v >= since);
    (!on_demand).then(|| {
        format!(
            "kernel {} predates loading RDMA clients on demand ({}.{})",
            inv.host.kernel.as_deref().unwrap_or("?"),
            since.0,
            since.1
        )
    })
}

/// Why rpcrdma, not loaded, will not load when the kernel asks for it by its name (at an NFS
/// mount with proto=rdma, `request_module("rpcrdma")`): an `install rpcrdma /bin/false` line,
/// or not built; a `blacklist` line, which only hides the module's aliases, does not stop it.
/// `None` when it is loaded or loads.
pub(super) fn rpcrdma_blocked(inv: &Inventory) -> Option<String> {
    if inv.rdma_stack.loaded("rpcrdma") {
        return None;
    }
    cannot_load_as(inv, "rpcrdma", None, true)
}

/// `rdma.no_uverbs`: RDMA devices, but no user-verbs device node, and none will come.
pub(super) fn no_uverbs(inv: &Inventory) -> Option<Finding> {
    let s = &inv.rdma_stack;
    if !s.known || !s.uverbs.is_empty() || s.loaded("ib_uverbs") {
        return None;
    }
    let why = cannot_autoload(inv, "ib_uverbs")?;
    let devs = device_names(inv);
    Some(
        module_evidence(
            Finding::new(FindingId::RdmaNoUverbs, Severity::Warning, "host")
                .evidence("/sys/class/infiniband_verbs", "no uverbs device"),
            "ib_uverbs",
        )
        .message(format!(
            "no user verbs device (/dev/infiniband/uverbs*) for {devs}: ib_uverbs is not loaded and {why}, so no program (perftest, MPI, libfabric's verbs, `linerate bench --rdma`) can open them"
        ))
        .fix(format!("`modprobe ib_uverbs` (after removing what keeps it from loading); {PERSIST}.")),
    )
}

/// `rdma.no_rdma_cm`: RDMA devices, but no rdma_cm device node, and none will come.
pub(super) fn no_rdma_cm(inv: &Inventory) -> Option<Finding> {
    let s = &inv.rdma_stack;
    if !s.known || s.rdma_cm || s.loaded("rdma_ucm") {
        return None;
    }
    let why = cannot_autoload(inv, "rdma_ucm")?;
    Some(
        module_evidence(
            Finding::new(FindingId::RdmaNoRdmaCm, Severity::Warning, "host")
                .evidence("/sys/class/misc/rdma_cm", "missing"),
            "rdma_ucm",
        )
        .message(format!("no /dev/infiniband/rdma_cm: rdma_ucm is not loaded and {why}, so connections by IP address (rdma_cm: perftest -R, libfabric's verbs provider, `linerate bench --rdma`, NFS over RDMA clients, MPI over UCX) cannot be made"))
        .fix(format!("`modprobe rdma_ucm` (after removing what keeps it from loading); {PERSIST}.")),
    )
}
