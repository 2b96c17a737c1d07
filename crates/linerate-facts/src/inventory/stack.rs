//! The software that makes RDMA usable on a host, as probe reads it: the kernel modules loaded,
//! the user-verbs and rdma_cm device nodes, libibverbs' providers, the locked-memory limits,
//! the subnet manager, IPoIB and NFS over RDMA, and the distribution (for the packages to name).

use serde::{Deserialize, Serialize};

/// The distribution family, from `/etc/os-release` (`ID`, `ID_LIKE`): which package names a fix
/// gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OsFamily {
    /// Debian, Ubuntu and derivatives.
    Debian,
    /// RHEL, Fedora, Rocky, Alma, CentOS.
    RedHat,
    /// SUSE Linux Enterprise, openSUSE.
    Suse,
    #[default]
    Other,
}

impl OsFamily {
    /// From os-release's `ID` and `ID_LIKE` words.
    pub fn from_ids(id: &str, like: &str) -> OsFamily {
        let words: Vec<&str> = std::iter::once(id).chain(like.split_whitespace()).collect();
        if words.iter().any(|w| matches!(*w, "debian" | "ubuntu")) {
            OsFamily::Debian
        } else if words
            .iter()
            .any(|w| matches!(*w, "rhel" | "fedora" | "centos"))
        {
            OsFamily::RedHat
        } else if words
            .iter()
            .any(|w| w.starts_with("suse") || w.starts_with("opensuse") || *w == "sles")
        {
            OsFamily::Suse
        } else {
            OsFamily::Other
        }
    }
}

/// A locked-memory limit (`RLIMIT_MEMLOCK`), in bytes; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemlockLimit {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// One `memlock` line of `/etc/security/limits.conf` or `limits.d/*.conf`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsLine {
    pub file: String,
    /// `*`, a user, `@group`.
    pub domain: String,
    /// `soft`, `hard` or `-` (both).
    pub kind: String,
    /// Bytes (the file says KiB); `None`: `unlimited` or `infinity`.
    pub bytes: Option<u64>,
}

/// An NFS mount (`/proc/self/mountinfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NfsMount {
    pub mountpoint: String,
    /// `server:/export` as mounted.
    pub source: String,
    /// `nfs` or `nfs4`.
    pub fstype: String,
    /// `proto=` of its options: `rdma`, `tcp`, `tcp6`, ...
    pub proto: Option<String>,
    /// `port=` of its options.
    pub port: Option<u16>,
    /// `addr=` of its options: the server's address.
    pub addr: Option<String>,
}

/// An NFS line of `/etc/fstab` that asks for RDMA (`proto=rdma` or `rdma`): a mount this host
/// is meant to have over RDMA, whether or not it is mounted now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NfsFstab {
    /// `server:/export`.
    pub source: String,
    pub mountpoint: String,
    /// `nfs` or `nfs4`.
    pub fstype: String,
    /// `port=` of its options (`None`: the kernel's default for RDMA, 20049).
    pub port: Option<u16>,
    /// `noauto`: not mounted at boot, on purpose.
    pub noauto: bool,
    /// The server's IPv4 address: the source's host when it is one, or its `/etc/hosts` entry.
    pub addr: Option<String>,
    /// What an RDMA connection to the server's port found (a live host only, and only for a
    /// line that is not mounted): whether anything listens for RDMA there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knock: Option<RdmaKnock>,
    /// The same at the NFS/RDMA port 20049, when the line names another port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knock_default_port: Option<RdmaKnock>,
}

impl NfsFstab {
    /// The line should be mounted (at boot: no `noauto`) and nothing of `mounts` is mounted at
    /// its mount point: a mount that failed or was never made.
    pub fn awaits_mount(&self, mounts: &[NfsMount]) -> bool {
        !self.noauto && !mounts.iter().any(|m| m.mountpoint == self.mountpoint)
    }
}

/// What an rdma_cm connection attempt to a server's port found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum RdmaKnock {
    /// Something listens for RDMA there.
    Accepted,
    /// The server's rdma_cm answered that nothing listens on that port.
    Refused,
    /// No answer in time.
    TimedOut,
    /// The attempt failed without an answer (no route, no RDMA device towards the server,
    /// no libfabric or verbs provider): the call that failed and why.
    Failed { call: String, text: String },
}

/// What probe read about the host's RDMA software.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaStack {
    /// The root has `/sys/module`: what is loaded is known. Without it (a fixture tree that
    /// did not capture it, some containers) no finding is made about modules, device nodes or
    /// providers.
    pub known: bool,
    pub os_family: OsFamily,
    /// The kernel modules loaded (`/sys/module/NAME`) among those the RDMA stack needs.
    pub modules: Vec<String>,
    /// The user-verbs devices (`/sys/class/infiniband_verbs/uverbs*`: `/dev/infiniband/uverbsN`).
    pub uverbs: Vec<String>,
    /// `/sys/class/misc/rdma_cm` (`/dev/infiniband/rdma_cm`, made by rdma_ucm).
    pub rdma_cm: bool,
    /// The libibverbs providers configured (`/etc/libibverbs.d/*.driver`: `driver mlx5`);
    /// `None` when that directory is absent (libibverbs' providers are not installed).
    pub verbs_providers: Option<Vec<String>>,
    /// This process's limit (`/proc/self/limits`).
    pub memlock: Option<MemlockLimit>,
    /// This process holds CAP_IPC_LOCK (`CapEff` in `/proc/self/status`): no memlock limit applies.
    pub cap_ipc_lock: bool,
    /// Of those modules, the ones the running kernel has (`/lib/modules/RELEASE/modules.dep`
    /// or `modules.builtin`).
    #[serde(default)]
    pub modules_available: Vec<String>,
    /// Modules `/etc/modprobe.d` keeps from loading (`blacklist M`, which also stops loading on
    /// demand, or `install M /bin/false`), with the file that says so.
    #[serde(default)]
    pub modules_blocked: Vec<(String, String)>,
    /// Of those, the ones an `install M /bin/false` line blocks: also when the kernel asks for
    /// the module by its name (`request_module("rpcrdma")` at an NFS mount), which a
    /// `blacklist` line does not stop.
    #[serde(default)]
    pub modules_blocked_by_name: Vec<String>,
    /// The `memlock` lines of limits.conf and limits.d.
    pub limits_conf: Vec<LimitsLine>,
    /// `linerate-serve.service` is installed (under /usr/lib/systemd/system, /lib/... or /etc/...).
    pub serve_unit: bool,
    /// Its `LimitMEMLOCK=` (the unit's or a drop-in's, the last one wins), as written.
    pub serve_unit_memlock: Option<String>,
    /// An `opensm` executable (`/usr/sbin/opensm`, `/usr/bin/opensm`).
    pub opensm_installed: bool,
    /// An `opensm` process runs here (`/proc/PID/comm`).
    pub opensm_running: bool,
    pub nfs_mounts: Vec<NfsMount>,
    /// The NFS lines of `/etc/fstab` that ask for RDMA.
    #[serde(default)]
    pub nfs_fstab: Vec<NfsFstab>,
    /// nfsd's listeners (`/proc/fs/nfsd/portlist`: `rdma 20049`, `tcp 2049`); `None`: nfsd is
    /// not running (no nfsd file system).
    pub nfsd_portlist: Option<Vec<String>>,
    /// Export lines in `/etc/exports` and `/etc/exports.d/*.exports`.
    pub exports: usize,
    /// What libfabric offers (filled on a live host only: it is loaded to find out).
    pub libfabric: Option<LibfabricFacts>,
    /// The IPv4 routing table (`/proc/net/route`): which interface reaches an address.
    #[serde(default)]
    pub routes: Vec<Route>,
}

/// One IPv4 route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub iface: String,
    pub destination: std::net::Ipv4Addr,
    pub mask: std::net::Ipv4Addr,
    pub metric: u32,
}

impl RdmaStack {
    /// The interface the routing table sends `addr` through (longest prefix, then lowest
    /// metric), when the table has a route for it.
    pub fn route_to(&self, addr: std::net::Ipv4Addr) -> Option<&str> {
        let a = u32::from(addr);
        self.routes
            .iter()
            .filter(|r| a & u32::from(r.mask) == u32::from(r.destination) & u32::from(r.mask))
            .max_by(|x, y| {
                u32::from(x.mask)
                    .count_ones()
                    .cmp(&u32::from(y.mask).count_ones())
                    .then(y.metric.cmp(&x.metric))
            })
            .map(|r| r.iface.as_str())
    }
}

/// libfabric as this host loads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibfabricFacts {
    pub version: String,
    /// It offers the `verbs` provider (message endpoints with RMA).
    pub verbs: bool,
    /// `FI_PROVIDER` in this process's environment: libfabric offers only what it names.
    #[serde(default)]
    pub provider_filter: Option<String>,
}

impl RdmaStack {
    pub fn loaded(&self, module: &str) -> bool {
        self.modules.iter().any(|m| m == module)
    }

    /// This process's soft limit, bytes (`None`: unlimited or unknown).
    pub fn memlock_soft(&self) -> Option<u64> {
        self.memlock.and_then(|m| m.soft)
    }
}
