//! User space: libibverbs' providers (`rdma.no_verbs_provider`), libfabric's verbs provider
//! (`rdma.no_libfabric_verbs`), and the locked memory RDMA registers (`rdma.memlock_low`, for
//! this session and for the installed service).

use linerate_facts::{Finding, FindingId, Inventory, RdmaStack, Severity};
use linerate_units::fmt_bytes;

use super::{device_names, install, Package, MEMLOCK_NEEDED};

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

/// `rdma.no_verbs_provider`: a device whose user-space driver libibverbs does not have.
pub(super) fn no_verbs_provider(inv: &Inventory) -> Vec<Finding> {
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
pub(super) fn no_libfabric_verbs(inv: &Inventory) -> Option<Finding> {
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
pub(super) fn memlock_low(s: &RdmaStack) -> Option<Finding> {
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
pub(super) fn serve_unit_memlock(s: &RdmaStack) -> Option<Finding> {
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
