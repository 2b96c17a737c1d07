//! The configuration files `setup` looks at, read under a root directory. The only reading I/O of
//! this crate: detection and the plan builders are pure functions of a [`Snapshot`], so the
//! tests build snapshots from fixture trees or from strings.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Files larger than this are not read (a dpkg status file is a few MB).
const MAX_FILE_BYTES: u64 = 32 << 20;

/// Files read under the root, keyed by their path on the target (`/etc/os-release`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub files: BTreeMap<String, String>,
    /// Permission bits of each file in `files`.
    pub modes: BTreeMap<String, u32>,
    /// Symbolic links (enablement links of systemd units) → their target.
    pub links: BTreeMap<String, String>,
    /// Directories that exist.
    pub dirs: BTreeSet<String>,
    /// Files that exist but could not be read, with the reason.
    pub unreadable: BTreeMap<String, String>,
}

/// Single files `setup` may read.
const FILES: &[&str] = &[
    "/etc/os-release",
    "/usr/lib/os-release",
    "/etc/network/interfaces",
    "/var/lib/dpkg/status",
    "/etc/sysctl.conf",
    "/etc/nfs.conf",
    "/etc/exports",
    "/etc/fstab",
    "/etc/default/opensm",
    "/etc/sysconfig/opensm",
    "/etc/opensm/opensm.conf",
    "/etc/rdma/opensm.conf",
    "/etc/rdma/modules/rdma.conf",
    "/proc/sys/net/core/rmem_max",
    "/proc/sys/net/core/wmem_max",
    "/proc/sys/net/ipv4/tcp_rmem",
    "/proc/sys/net/ipv4/tcp_wmem",
    "/proc/sys/net/ipv4/tcp_mtu_probing",
    "/proc/fs/nfsd/portlist",
    "/etc/tuned/active_profile",
    "/etc/tuned/linerate-performance/tuned.conf",
    "/etc/default/cpufrequtils",
];

/// Directories whose regular files `setup` may read (one level).
const DIRS: &[&str] = &[
    "/etc/netplan",
    "/etc/NetworkManager/system-connections",
    "/etc/NetworkManager/conf.d",
    "/etc/systemd/network",
    "/etc/network/interfaces.d",
    "/etc/sysconfig/network-scripts",
    "/etc/sysctl.d",
    "/etc/modprobe.d",
    "/etc/exports.d",
    "/etc/systemd/system/nfs-server.service.d",
    "/etc/systemd/system",
    "/etc/modules-load.d",
    "/etc/security/limits.d",
    "/etc/systemd/system/linerate-serve.service.d",
    "/run/NetworkManager",
    "/run/systemd/netif",
];

/// Symbolic links that say a service is enabled.
const LINKS: &[&str] = &[
    "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service",
    "/etc/systemd/system/multi-user.target.wants/NetworkManager.service",
    "/etc/systemd/system/network-online.target.wants/systemd-networkd-wait-online.service",
    "/etc/systemd/system/dbus-org.freedesktop.network1.service",
    "/etc/systemd/system/multi-user.target.wants/networking.service",
    "/etc/systemd/system/multi-user.target.wants/opensm.service",
];

/// Extra directories whose mere presence is a fact (the binaries of vendor tools, units).
const PRESENCE: &[&str] = &[
    "/usr/sbin/set_irq_affinity_cpulist.sh",
    "/usr/sbin/mlnx_tune",
    "/usr/bin/mlnx_tune",
    "/etc/init.d/opensm",
    "/usr/lib/systemd/system/opensm.service",
    "/lib/systemd/system/opensm.service",
    "/usr/lib/systemd/system/nfs-server.service",
    "/lib/systemd/system/nfs-server.service",
    "/usr/lib/systemd/system/ondemand.service",
    "/lib/systemd/system/ondemand.service",
];

fn target_to_host(root: &Path, target: &str) -> std::path::PathBuf {
    root.join(target.trim_start_matches('/'))
}

impl Snapshot {
    /// Read what `setup` needs under `root`. Never fails: a file that cannot be read is
    /// recorded in `unreadable` and treated as absent by detection.
    pub fn read(root: &Path) -> Self {
        let mut s = Self::default();
        for f in FILES {
            s.read_file(root, f);
        }
        for d in DIRS {
            let host = target_to_host(root, d);
            let Ok(rd) = std::fs::read_dir(&host) else {
                continue;
            };
            s.dirs.insert((*d).to_string());
            let mut names: Vec<String> = rd
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
            names.sort();
            for n in names {
                let t = format!("{d}/{n}");
                if target_to_host(root, &t).is_file() {
                    s.read_file(root, &t);
                }
            }
        }
        for l in LINKS {
            if let Ok(t) = std::fs::read_link(target_to_host(root, l)) {
                s.links.insert((*l).to_string(), t.display().to_string());
            }
        }
        for p in PRESENCE {
            let host = target_to_host(root, p);
            if host.symlink_metadata().is_ok() {
                s.dirs.insert((*p).to_string());
            }
        }
        for d in [
            "/etc/sysctl.d",
            "/etc/netplan",
            "/etc/systemd/network",
            "/run",
        ] {
            if target_to_host(root, d).is_dir() {
                s.dirs.insert(d.to_string());
            }
        }
        s
    }

    fn read_file(&mut self, root: &Path, target: &str) {
        let host = target_to_host(root, target);
        let Ok(meta) = std::fs::metadata(&host) else {
            return;
        };
        if !meta.is_file() {
            return;
        }
        if meta.len() > MAX_FILE_BYTES {
            self.unreadable.insert(
                target.to_string(),
                format!("{} bytes, more than the {MAX_FILE_BYTES} read", meta.len()),
            );
            return;
        }
        match std::fs::read(&host) {
            Ok(b) => match String::from_utf8(b) {
                Ok(text) => {
                    self.modes
                        .insert(target.to_string(), meta.permissions().mode() & 0o7777);
                    self.files.insert(target.to_string(), text);
                }
                Err(_) => {
                    self.unreadable
                        .insert(target.to_string(), "not UTF-8 text".to_string());
                }
            },
            Err(e) => {
                self.unreadable.insert(target.to_string(), e.to_string());
            }
        }
    }

    pub fn file(&self, target: &str) -> Option<&str> {
        self.files.get(target).map(String::as_str)
    }

    pub fn mode(&self, target: &str) -> Option<u32> {
        self.modes.get(target).copied()
    }

    pub fn has_dir(&self, target: &str) -> bool {
        self.dirs.contains(target)
    }

    /// The files directly in a directory, sorted by path.
    pub fn files_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.files
            .iter()
            .filter(move |(p, _)| {
                p.strip_prefix(dir)
                    .and_then(|r| r.strip_prefix('/'))
                    .is_some_and(|r| !r.contains('/'))
            })
            .map(|(p, c)| (p.as_str(), c.as_str()))
    }

    /// Build a snapshot from (path, content) pairs: for tests and for callers that already
    /// hold the files.
    pub fn from_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut s = Self::default();
        for (p, c) in files {
            s.files.insert(p.to_string(), c.to_string());
            s.modes.insert(p.to_string(), 0o644);
            if let Some((d, _)) = p.rsplit_once('/') {
                s.dirs.insert(d.to_string());
            }
        }
        s
    }
}
