//! The RDMA software stack: one finding per missing piece, with the exact fix for this
//! distribution. Pure: from the inventory's [`RdmaStack`](linerate_facts::RdmaStack) and its
//! devices and ports. By what each piece is: the firmware of the devices (`firmware`), the
//! kernel modules and the device nodes they give (`modules`), the user-space drivers and limits
//! (`userspace`), IPoIB and the subnet manager (`fabric`), and NFS over RDMA (`nfs`).

mod fabric;
mod firmware;
mod modules;
mod nfs;
mod userspace;

use linerate_facts::{Finding, FindingId, Inventory, OsFamily, Severity};

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

pub fn rules(inv: &Inventory, out: &mut Vec<Finding>) {
    let s = &inv.rdma_stack;
    firmware::firmware(inv, out);
    modules::driver_missing(inv, out);
    if !inv.ib_devices.is_empty() {
        out.extend(modules::no_uverbs(inv));
        out.extend(modules::no_rdma_cm(inv));
        out.extend(userspace::no_verbs_provider(inv));
        out.extend(userspace::no_libfabric_verbs(inv));
        out.extend(userspace::memlock_low(s));
        out.extend(userspace::serve_unit_memlock(s));
        nfs::nfs(inv, out);
    }
    if s.known {
        out.extend(nfs::mount_fails(inv));
    }
    fabric::ipoib(inv, out);
    fabric::no_opensm(inv, out);
}

fn device_names(inv: &Inventory) -> String {
    inv.ib_devices
        .iter()
        .map(|d| d.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
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
}
