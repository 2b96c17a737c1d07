//! The RDMA software stack: one finding per missing piece, with the exact fix for this
//! distribution. Pure: from the inventory's [`RdmaStack`] and its devices and ports.

use linerate_facts::{
    Finding, FindingId, Inventory, LinkLayer, NfsFstab, OsFamily, RdmaKnock, RdmaStack, Severity,
};
use linerate_model::{IbPhysState, IbState};
use linerate_units::fmt_bytes;

/// What an RDMA test registers needs this much locked memory at least: doctor's RDMA step
/// registers 16 messages of 1 MiB and its control buffers per queue pair, `linerate serve`
/// allows a test up to 128 MiB, and MPI and NFS over RDMA register far more. The kernel's
/// default (64 KiB before Linux 5.16, 8 MiB since) is below it.
pub const MEMLOCK_NEEDED: u64 = 64 << 20;

/// The NFS/RDMA port nfsd listens on (IANA `nfsrdma`).
pub const NFS_RDMA_PORT: u16 = 20049;

/// A package set, by what it provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Package {
    /// libibverbs and its providers (the user-space drivers of the devices).
    VerbsProviders,
    /// libfabric with its verbs provider.
    Libfabric,
    /// The subnet manager.
    Opensm,
}

/// The command that installs `p` on `family` (the names as each distribution ships them).
pub fn install(family: OsFamily, p: Package) -> String {
    let (debian, redhat, suse) = match p {
        Package::VerbsProviders => (
            "ibverbs-providers rdma-core",
            "rdma-core libibverbs",
            "rdma-core libibverbs1",
        ),
        Package::Libfabric => ("libfabric1", "libfabric", "libfabric1"),
        Package::Opensm => ("opensm", "opensm", "opensm"),
    };
    match family {
        OsFamily::Debian => format!("apt install {debian}"),
        OsFamily::RedHat => format!("dnf install {redhat}"),
        OsFamily::Suse => format!("zypper install {suse}"),
        OsFamily::Other => format!(
            "install {debian} (Debian/Ubuntu), {redhat} (RHEL, Fedora), {suse} (SUSE) or your distribution's equivalent"
        ),
    }
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

/// libibverbs' provider for a device family (the device's name without its number).
fn provider_of(family: &str) -> Option<&'static str> {
    Some(match family {
        "mlx4" => "mlx4",
        "mlx5" => "mlx5",
        "rxe" => "rxe",
        "siw" => "siw",
        "bnxt_re" => "bnxt_re",
        "irdma" => "irdma",
        "qedr" => "qedr",
        "cxgb4" => "cxgb4",
        "mthca" => "mthca",
        "efa" => "efa",
        "hfi1" => "hfi1verbs",
        "vmw_pvrdma" => "vmw_pvrdma",
        "hns" => "hns",
        "ocrdma" => "ocrdma",
        _ => return None,
    })
}

const PERSIST: &str = "`linerate setup rdma-stack --apply` loads it at every boot (modules-load.d)";

pub fn rules(inv: &Inventory, out: &mut Vec<Finding>) {
    let s = &inv.rdma_stack;
    firmware(inv, out);
    driver_missing(inv, out);
    if !inv.ib_devices.is_empty() {
        out.extend(no_uverbs(inv));
        out.extend(no_rdma_cm(inv));
        out.extend(no_verbs_provider(inv));
        out.extend(no_libfabric_verbs(inv));
        out.extend(memlock_low(s));
        out.extend(serve_unit_memlock(s));
        nfs(inv, out);
    }
    if s.known {
        out.extend(mount_fails(inv));
    }
    ipoib(inv, out);
    no_opensm(inv, out);
}

fn module_evidence(f: Finding, m: &str) -> Finding {
    f.evidence(format!("/sys/module/{m}"), "not loaded")
}

/// `fw.outdated`, `fw.oem` and `fw.end_of_life`: each RDMA device's firmware against the newest
/// NVIDIA publishes for its family (`linerate_model::firmware`).
fn firmware(inv: &Inventory, out: &mut Vec<Finding>) {
    use linerate_model::firmware::{judge, FirmwareState, TABLE_UPDATED};
    for d in &inv.ib_devices {
        let Some(f) = d.pci.as_deref().and_then(|a| inv.pci(a)) else {
            continue;
        };
        let st = judge(
            f.vendor,
            f.device,
            d.fw_ver.as_deref(),
            d.board_id.as_deref(),
        );
        let (Some(family), Some(version)) = (st.family.as_deref(), st.version.as_deref()) else {
            continue;
        };
        let psid = st.psid.as_deref().unwrap_or("?");
        let bdf = &f.address;
        // The device as people see it: with its ports (`mlx4_0 (ib0, ib1)`).
        let ports: Vec<&str> = inv
            .ports
            .iter()
            .filter(|p| p.device.as_deref() == Some(d.name.as_str()))
            .map(|p| p.name.as_str())
            .collect();
        let name = if ports.is_empty() {
            d.name.clone()
        } else {
            format!("{} ({})", d.name, ports.join(", "))
        };
        let base = |id, sev| {
            Finding::new(id, sev, bdf)
                .evidence(format!("/sys/class/infiniband/{}/fw_ver", d.name), version)
                .evidence(format!("/sys/class/infiniband/{}/board_id", d.name), psid)
                .evidence(
                    "newest known",
                    st.newest_known.as_deref().unwrap_or("unknown"),
                )
                .evidence("source", st.source.as_deref().unwrap_or("?"))
        };
        let tools = if st
            .legacy
            .as_deref()
            .is_some_and(|l| l.contains("mstflint 4.26"))
        {
            " (mstflint 4.25 or older: later releases dropped this family)"
        } else {
            ""
        };
        let newest = st.newest_known.as_deref().unwrap_or("?");
        match st.status {
            FirmwareState::Outdated => out.push(
                base(FindingId::FwOutdated, Severity::Warning)
                    .message(format!(
                        "{name} ({family}, PSID {psid}) runs firmware {version}; NVIDIA's newest for {family} is {newest} (firmware table of {TABLE_UPDATED})"
                    ))
                    .fix(format!(
                        "Check with `mstflint -d {bdf} query`{tools}; download the {newest} image for PSID {psid} (https://network.nvidia.com/support/firmware/firmware-downloads/, or `mlxfwmanager --online -u -d {bdf}` with NVIDIA's tools), burn it with `mstflint -d {bdf} -i IMAGE.bin burn`, then `mstfwreset -d {bdf} reset` or a reboot."
                    )),
            ),
            FirmwareState::Oem => out.push(
                base(FindingId::FwOem, Severity::Info)
                    .message(format!(
                        "{name} ({family}) carries {}'s PSID {psid} and firmware {version}: its maker publishes its firmware, numbered on its own line, so it is not compared with NVIDIA's ({newest} for {family})",
                        st.psid_owner.as_deref().unwrap_or("an OEM")
                    ))
                    .fix(format!(
                        "Update from {}'s support site for this part. Cross-flashing NVIDIA's image onto an OEM card needs `mstflint -d {bdf} -i IMAGE.bin --allow_psid_change burn`: mstflint warns that changing a PSID may cause the device to malfunction, secure firmware refuses it, and the card's warranty and OEM features may not survive it.",
                        st.psid_owner.as_deref().unwrap_or("the OEM")
                    )),
            ),
            FirmwareState::Current | FirmwareState::Unknown => {}
        }
        if let Some(legacy) = &st.legacy {
            let tail = if st.last {
                format!("{newest} is its last firmware")
            } else {
                format!("the newest firmware known for it is {newest}")
            };
            out.push(
                base(FindingId::FwEndOfLife, Severity::Info)
                    .message(format!(
                        "{name} is a {family}: {legacy}; {tail}, and this card runs {version}"
                    ))
                    .fix("Nothing to fix while it works: the kernel's own driver still supports it. For new features or fixes, a newer card.".to_string()),
            );
        }
    }
}

/// `rdma.driver_missing`: a NIC whose driver has an RDMA part, with no RDMA device.
fn driver_missing(inv: &Inventory, out: &mut Vec<Finding>) {
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
fn rpcrdma_blocked(inv: &Inventory) -> Option<String> {
    if inv.rdma_stack.loaded("rpcrdma") {
        return None;
    }
    cannot_load_as(inv, "rpcrdma", None, true)
}

/// `rdma.no_uverbs`: RDMA devices, but no user-verbs device node, and none will come.
fn no_uverbs(inv: &Inventory) -> Option<Finding> {
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
fn no_rdma_cm(inv: &Inventory) -> Option<Finding> {
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

fn device_names(inv: &Inventory) -> String {
    inv.ib_devices
        .iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `rdma.no_verbs_provider`: a device whose user-space driver libibverbs does not have.
fn no_verbs_provider(inv: &Inventory) -> Vec<Finding> {
    let s = &inv.rdma_stack;
    if !s.known {
        return Vec::new();
    }
    let fix = install(s.os_family, Package::VerbsProviders);
    let Some(have) = &s.verbs_providers else {
        return vec![Finding::new(FindingId::RdmaNoVerbsProvider, Severity::Warning, "host")
            .evidence("/etc/libibverbs.d", "missing")
            .message(format!(
                "libibverbs has no providers installed (/etc/libibverbs.d is missing): no program can use {}",
                device_names(inv)
            ))
            .fix(format!("`{fix}`."))];
    };
    let mut missing: Vec<(&str, &str)> = inv
        .ib_devices
        .iter()
        .filter_map(|d| provider_of(d.family()).map(|p| (d.name.as_str(), p)))
        .filter(|(_, p)| !have.iter().any(|h| h == p))
        .collect();
    missing.dedup_by_key(|(_, p)| *p);
    missing
        .into_iter()
        .map(|(dev, p)| {
            Finding::new(FindingId::RdmaNoVerbsProvider, Severity::Warning, "host")
                .evidence("/etc/libibverbs.d", have.join(", "))
                .message(format!(
                    "libibverbs has no `{p}` provider (/etc/libibverbs.d/{p}.driver), the user-space driver of {dev}: verbs programs see no usable device"
                ))
                .fix(format!("`{fix}`."))
        })
        .collect()
}

/// `rdma.no_libfabric_verbs`: libfabric loads but offers no verbs provider for the devices.
fn no_libfabric_verbs(inv: &Inventory) -> Option<Finding> {
    let lf = inv.rdma_stack.libfabric.as_ref().filter(|l| !l.verbs)?;
    Some(
        Finding::new(FindingId::RdmaNoLibfabricVerbs, Severity::Warning, "host")
            .evidence("libfabric", &lf.version)
            .evidence("FI_PROVIDER", lf.provider_filter.as_deref().unwrap_or("unset"))
            .message(format!(
                "libfabric {} has no `verbs` provider although this host has {}: `linerate bench --rdma` and libfabric programs fall back to TCP (`fi_info -p verbs` shows nothing)",
                lf.version,
                device_names(inv)
            ))
            .fix(match &lf.provider_filter {
                Some(f) => format!(
                    "FI_PROVIDER={f} in the environment hides every other provider: unset it, or add verbs (`FI_PROVIDER={f},verbs`)."
                ),
                None => format!(
                    "`{}`, and make sure user verbs work first (`ibv_devinfo`).",
                    install(inv.rdma_stack.os_family, Package::Libfabric)
                ),
            }),
    )
}

fn limit_words(b: Option<u64>) -> String {
    b.map_or("unlimited".to_string(), fmt_bytes)
}

/// `rdma.memlock_low` for this process: what it may register is below what RDMA tests need.
fn memlock_low(s: &RdmaStack) -> Option<Finding> {
    let m = s.memlock?;
    let soft = m.soft?;
    if s.cap_ipc_lock || soft >= MEMLOCK_NEEDED {
        return None;
    }
    let mut f = Finding::new(FindingId::RdmaMemlockLow, Severity::Warning, "host").evidence(
        "/proc/self/limits",
        format!(
            "Max locked memory {} (soft), {} (hard)",
            limit_words(m.soft),
            limit_words(m.hard)
        ),
    );
    for l in &s.limits_conf {
        f = f.evidence(
            format!("{} {} {}", l.file, l.domain, l.kind),
            format!("memlock {}", limit_words(l.bytes)),
        );
    }
    Some(
        f.message(format!(
            "this session may lock only {} of memory (RLIMIT_MEMLOCK) and RDMA registers what it sends and receives: registrations beyond it fail with `Cannot allocate memory` (an RDMA test needs {} or more; root is exempt through CAP_IPC_LOCK)",
            fmt_bytes(soft),
            fmt_bytes(MEMLOCK_NEEDED)
        ))
        .fix("Raise it for the users of RDMA: `* soft memlock unlimited` and `* hard memlock unlimited` in /etc/security/limits.d/ (then log in again), or `ulimit -l unlimited` in a root shell for this session; `linerate setup rdma-stack --apply` writes the limits.d file.".to_string()),
    )
}

/// `rdma.memlock_low` for the installed `linerate-serve.service`.
fn serve_unit_memlock(s: &RdmaStack) -> Option<Finding> {
    if !s.serve_unit {
        return None;
    }
    let v = s.serve_unit_memlock.as_deref();
    let unlimited = v.is_some_and(|v| matches!(v, "infinity" | "unlimited"));
    let bytes = v.and_then(systemd_bytes);
    if unlimited || bytes.is_some_and(|b| b >= MEMLOCK_NEEDED) {
        return None;
    }
    Some(
        Finding::new(FindingId::RdmaMemlockLow, Severity::Warning, "linerate-serve.service")
            .evidence("LimitMEMLOCK", v.unwrap_or("unset"))
            .message(match v {
                Some(v) => format!(
                    "linerate-serve.service runs with LimitMEMLOCK={v}: its RDMA tests fail to register buffers beyond it"
                ),
                None => "linerate-serve.service sets no LimitMEMLOCK=, so systemd's default applies (8 MiB, or 64 KiB on older systems): its RDMA tests fail to register buffers beyond it".to_string(),
            })
            .fix("A drop-in with `[Service]` `LimitMEMLOCK=infinity`, then `systemctl daemon-reload` and a restart of the service; `linerate setup rdma-stack --apply` writes it.".to_string()),
    )
}

/// systemd's size syntax: bytes, or with K, M, G, T (powers of 1024).
fn systemd_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mul) = match v.chars().last()? {
        'K' => (&v[..v.len() - 1], 1u64 << 10),
        'M' => (&v[..v.len() - 1], 1 << 20),
        'G' => (&v[..v.len() - 1], 1 << 30),
        'T' => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    num.parse::<u64>().ok().map(|n| n.saturating_mul(mul))
}

/// `ipoib.not_loaded` and `ipoib.no_interface`.
fn ipoib(inv: &Inventory, out: &mut Vec<Finding>) {
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
fn no_opensm(inv: &Inventory, out: &mut Vec<Finding>) {
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

/// `nfs.no_rpcrdma` (a client) and `nfs.no_rdma_listener` (a server).
fn nfs(inv: &Inventory, out: &mut Vec<Finding>) {
    let s = &inv.rdma_stack;
    if !s.known {
        return;
    }
    let tcp: Vec<&linerate_facts::NfsMount> = s
        .nfs_mounts
        .iter()
        .filter(|m| m.proto.as_deref() != Some("rdma"))
        .collect();
    // The kernel loads rpcrdma itself for a proto=rdma mount (and nfsd for `rdma` in its
    // portlist): only a module that cannot load is a fault.
    let blocked = rpcrdma_blocked(inv);
    if let (false, Some(why)) = (tcp.is_empty(), blocked) {
        let mut f = module_evidence(
            Finding::new(FindingId::NfsNoRpcrdma, Severity::Warning, "host"),
            "rpcrdma",
        );
        for m in &tcp {
            f = f.evidence(
                format!("/proc/self/mountinfo {}", m.mountpoint),
                format!(
                    "{} {} proto={}",
                    m.fstype,
                    m.source,
                    m.proto.as_deref().unwrap_or("?")
                ),
            );
        }
        out.push(
            f.message(format!(
                "NFS is mounted over TCP ({}) on a host with RDMA devices, and rpcrdma, the NFS/RDMA transport, cannot load ({why}): a mount with proto=rdma fails",
                tcp.iter().map(|m| m.mountpoint.as_str()).collect::<Vec<_>>().join(", ")
            ))
            .fix(format!("Let rpcrdma load (remove what keeps it from loading, or install the kernel's modules), then mount with `-o proto=rdma,port={NFS_RDMA_PORT}` (`linerate setup nfs-rdma --nfs-mount SERVER:/EXPORT` writes the fstab line).")),
        );
    }
    out.extend(over_tcp(inv));
    let Some(ports) = &s.nfsd_portlist else {
        return;
    };
    let rdma = format!("rdma {NFS_RDMA_PORT}");
    if s.exports > 0 && !ports.iter().any(|p| p == &rdma) {
        out.push(
            Finding::new(FindingId::NfsNoRdmaListener, Severity::Warning, "host")
                .evidence("/proc/fs/nfsd/portlist", ports.join(", "))
                .evidence("/etc/exports", format!("{} export line(s)", s.exports))
                .message(format!(
                    "nfsd serves exports but does not listen for NFS over RDMA (no `{rdma}` in /proc/fs/nfsd/portlist): clients mounting with proto=rdma are refused"
                ))
                .fix(format!("`modprobe rpcrdma && echo '{rdma}' > /proc/fs/nfsd/portlist` now; `linerate setup nfs-rdma --apply` makes it persistent (it is lost when nfsd restarts).")),
        );
    }
}

/// `nfs.over_tcp`: an NFS mount over TCP whose server this host reaches through a port with an
/// RDMA device.
fn over_tcp(inv: &Inventory) -> Vec<Finding> {
    let s = &inv.rdma_stack;
    s.nfs_mounts
        .iter()
        .filter(|m| m.proto.as_deref() != Some("rdma"))
        .filter_map(|m| {
            let addr: std::net::Ipv4Addr = m.addr.as_deref()?.parse().ok()?;
            let via = s.route_to(addr)?;
            let port = inv.rdma_port_of_netdev(via)?;
            let dev = port.device.as_deref()?;
            Some(
                Finding::new(FindingId::NfsOverTcp, Severity::Warning, &port.name)
                    .evidence(
                        format!("/proc/self/mountinfo {}", m.mountpoint),
                        format!(
                            "{} {} proto={}",
                            m.fstype,
                            m.source,
                            m.proto.as_deref().unwrap_or("?")
                        ),
                    )
                    .evidence("/proc/net/route", format!("{addr} via {via}"))
                    .message(format!(
                        "{} ({} {}) runs NFS over TCP through {via}, which has an RDMA device ({dev}): NFS over RDMA would move its data without the TCP stack and its copies",
                        m.mountpoint, m.fstype, m.source
                    ))
                    .fix(format!(
                        "Mount it with `-o proto=rdma,port={NFS_RDMA_PORT}` once the server listens for RDMA (`echo 'rdma {NFS_RDMA_PORT}' > /proc/fs/nfsd/portlist` there); `linerate setup nfs-rdma --nfs-mount {}` writes the fstab line.",
                        m.source
                    )),
            )
        })
        .collect()
}

/// `nfs.mount_fails`: a line of `/etc/fstab` mounts NFS over RDMA, and nothing is mounted
/// there. The cause, from what this host can read: no RDMA device, rpcrdma unable to load, or
/// the server's answer to an RDMA connection on the line's port (nothing listening there, but
/// something on 20049: the wrong port; nothing on either: the server does not listen for RDMA;
/// no answer; no way to the server over RDMA).
fn mount_fails(inv: &Inventory) -> Vec<Finding> {
    let s = &inv.rdma_stack;
    s.nfs_fstab
        .iter()
        .filter(|e| e.awaits_mount(&s.nfs_mounts))
        .map(|e| mount_fails_one(inv, e))
        .collect()
}

fn mount_fails_one(inv: &Inventory, e: &NfsFstab) -> Finding {
    let port = e.port.unwrap_or(NFS_RDMA_PORT);
    let mnt = &e.mountpoint;
    let server = e.addr.clone().unwrap_or_else(|| {
        e.source
            .rsplit_once(':')
            .map_or(e.source.clone(), |(h, _)| h.to_string())
    });
    let at = format!("{server}:{port}");
    let remount = format!("then `mount {mnt}`");
    let mut f = Finding::new(FindingId::NfsMountFails, Severity::Warning, mnt.as_str())
        .evidence(
            "/etc/fstab",
            format!(
                "{} {mnt} {} port={}",
                e.source,
                e.fstype,
                e.port
                    .map_or_else(|| "(default 20049)".to_string(), |p| p.to_string())
            ),
        )
        .evidence("/proc/self/mountinfo", format!("nothing mounted on {mnt}"));
    let knock_words = |k: &RdmaKnock| match k {
        RdmaKnock::Accepted => "accepted".to_string(),
        RdmaKnock::Refused => "refused (nothing listens)".to_string(),
        RdmaKnock::TimedOut => "no answer".to_string(),
        RdmaKnock::Failed { call, text } => format!("{call} failed: {text}"),
    };
    if let Some(k) = &e.knock {
        f = f.evidence(format!("RDMA connection to {at}"), knock_words(k));
    }
    if let Some(k) = &e.knock_default_port {
        f = f.evidence(
            format!("RDMA connection to {server}:{NFS_RDMA_PORT}"),
            knock_words(k),
        );
    }
    let (cause, fix) = if inv.ib_devices.is_empty() {
        (
            "this host has no RDMA device (/sys/class/infiniband is empty), so a mount with proto=rdma fails".to_string(),
            format!("An RDMA-capable NIC with its driver loaded; or mount over TCP (`proto=tcp` instead of `proto=rdma,port={port}` in /etc/fstab)."),
        )
    } else if let Some(why) = rpcrdma_blocked(inv) {
        f = module_evidence(f, "rpcrdma");
        (
            format!("rpcrdma, the NFS/RDMA client transport, cannot load ({why}): the kernel has no `rdma` transport, and `mount` fails (`an incorrect mount option was specified`)"),
            format!("Let rpcrdma load (remove what keeps it from loading, or install the running kernel's modules), `modprobe rpcrdma`, {remount}."),
        )
    } else {
        knock_cause(e, &server, port)
    };
    f.message(format!(
        "{mnt} ({} over RDMA, in /etc/fstab) is not mounted: {cause}",
        e.source
    ))
    .fix(fix)
}

/// The cause of an unmounted NFS-over-RDMA line, from the server's answers to an RDMA
/// connection (rpcrdma and the device being there).
fn knock_cause(e: &NfsFstab, server: &str, port: u16) -> (String, String) {
    let mnt = &e.mountpoint;
    let at = format!("{server}:{port}");
    let remount = format!("then `mount {mnt}`");
    match (&e.knock, &e.knock_default_port) {
        (Some(RdmaKnock::Refused), Some(RdmaKnock::Accepted)) => (
            format!("the wrong port: {server} listens for NFS over RDMA on {NFS_RDMA_PORT}, and refuses an RDMA connection on port {port}, the one the line names (`mount` says `Connection refused`)"),
            format!("Write `port={NFS_RDMA_PORT}` in the line's options (`linerate setup nfs-rdma --nfs-mount {} --apply` rewrites it), {remount}.", e.source),
        ),
        (Some(RdmaKnock::Refused), other) => (
            format!(
                "the server does not listen for NFS over RDMA: {server} refuses an RDMA connection on port {port}{} (`mount` says `Connection refused`)",
                if matches!(other, Some(RdmaKnock::Refused)) {
                    format!(" and on {NFS_RDMA_PORT}")
                } else {
                    String::new()
                }
            ),
            format!(
                "On {server}: `echo 'rdma {NFS_RDMA_PORT}' > /proc/fs/nfsd/portlist` (nfsd running, rpcrdma loaded), and `linerate setup nfs-rdma --apply` to keep it across restarts of nfs-server{}; {remount} here.",
                if port == NFS_RDMA_PORT {
                    String::new()
                } else {
                    format!("; and `port={NFS_RDMA_PORT}` in this line")
                }
            ),
        ),
        (Some(RdmaKnock::TimedOut), _) => (
            format!("{server} does not answer an RDMA connection on port {port} (down, unreachable, or RoCE's UDP port 4791 filtered on the way)"),
            format!("Check that {server} is up and reached through an interface with an RDMA device (`ip route get {server}`, `linerate probe` on both ends), {remount}."),
        ),
        (Some(RdmaKnock::Failed { call, text }), _) => (
            format!("an RDMA connection to {at} cannot be opened from this host ({call}: {text}): no RDMA device on the way to the server, or no verbs provider"),
            format!("The route to {server} must leave through an interface with an RDMA device and an IP address (`ip route get {server}`; `linerate probe` lists each port's RDMA device), {remount}."),
        ),
        (Some(RdmaKnock::Accepted), _) => (
            format!("nothing found here stops it: rpcrdma can load and {server} accepts RDMA connections on port {port}; the mount was not made or was refused by the export"),
            format!("`mount {mnt}`; if it fails, `dmesg` says why (the export needs `insecure` for clients over RDMA, whose ports are not reserved, then `exportfs -ra` on {server})."),
        ),
        (None, _) if port != NFS_RDMA_PORT => (
            format!("the line names port {port}, and nfsd listens for NFS over RDMA on {NFS_RDMA_PORT} unless told otherwise (no RDMA connection to the server was tried)"),
            format!("Write `port={NFS_RDMA_PORT}` in the line's options, {remount}."),
        ),
        (None, _) => (
            format!("whether {server} listens for NFS over RDMA is not known ({})", if e.addr.is_none() { "its address is not known: not an IPv4 address and not in /etc/hosts" } else { "no RDMA connection to it was tried: `linerate probe` on this host tries one" }),
            format!("On the server, `cat /proc/fs/nfsd/portlist` must list `rdma {NFS_RDMA_PORT}` (`linerate setup nfs-rdma --apply` there); {remount} here."),
        ),
    }
}

/// The stack findings that stop an RDMA test from running on this host, the most fundamental
/// first (no device node before no provider before the memory limit), for doctor to skip its
/// RDMA step with.
pub fn blocks_rdma(findings: &[Finding]) -> Vec<&Finding> {
    let rank = |f: &Finding| match f.id {
        FindingId::RdmaNoUverbs => Some(0),
        FindingId::RdmaNoRdmaCm => Some(1),
        FindingId::RdmaNoVerbsProvider => Some(2),
        FindingId::RdmaNoLibfabricVerbs => Some(3),
        FindingId::RdmaMemlockLow if f.subject == "host" => Some(4),
        _ => None,
    };
    let mut v: Vec<(u8, &Finding)> = findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .filter_map(|f| rank(f).map(|r| (r, f)))
        .collect();
    v.sort_by_key(|(r, _)| *r);
    v.into_iter().map(|(_, f)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_sizes() {
        assert_eq!(systemd_bytes("64K"), Some(65536));
        assert_eq!(systemd_bytes("8M"), Some(8 << 20));
        assert_eq!(systemd_bytes("1048576"), Some(1 << 20));
        assert_eq!(systemd_bytes("lots"), None);
    }

    #[test]
    fn packages_per_family() {
        assert_eq!(
            install(OsFamily::Debian, Package::VerbsProviders),
            "apt install ibverbs-providers rdma-core"
        );
        assert_eq!(
            install(OsFamily::RedHat, Package::Opensm),
            "dnf install opensm"
        );
        assert!(install(OsFamily::Other, Package::Libfabric).contains("(SUSE)"));
    }

    #[test]
    fn memlock_needs_a_limit_below_the_need_and_no_capability() {
        let mut s = RdmaStack {
            memlock: Some(linerate_facts::MemlockLimit {
                soft: Some(65536),
                hard: Some(65536),
            }),
            ..RdmaStack::default()
        };
        let f = memlock_low(&s).expect("64 KiB is low");
        assert!(f.message.contains("64 KiB"), "{}", f.message);
        s.cap_ipc_lock = true;
        assert!(memlock_low(&s).is_none());
        s.cap_ipc_lock = false;
        s.memlock = Some(linerate_facts::MemlockLimit {
            soft: None,
            hard: None,
        });
        assert!(memlock_low(&s).is_none());
    }
}
