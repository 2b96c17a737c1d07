//! A capture of the sysfs files linerate reads about a machine's ports (`linerate-lab capture`,
//! run inside a guest): every netdev, every RDMA device and port, and each PCI function behind
//! them with the bridges above it, as files and links under the root. `fixtures/sysfs/build.py`
//! turns a capture into a fixture tree, so the trees hold what a real driver wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What was captured: files (relative path → content as read, trailing newline kept) and
/// symbolic links (relative path → target as the kernel gives it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    pub kernel: String,
    pub files: BTreeMap<String, String>,
    pub links: BTreeMap<String, String>,
}

/// The attribute files of a PCI function linerate reads.
const PCI_FILES: &[&str] = &[
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
    "class",
    "revision",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
    "numa_node",
    "local_cpulist",
];

/// The most entries read from one directory (a GID table has up to 1024).
const MAX_ENTRIES: usize = 2048;

impl Capture {
    /// Capture under `root` (`/` in a guest).
    pub fn take(root: &Path) -> Capture {
        // Paths are stored relative to the root as the kernel resolves them: a root given
        // through `..` or a link must be resolved too.
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let root = canonical.as_path();
        let mut c = Capture {
            kernel: std::fs::read_to_string(root.join("proc/sys/kernel/osrelease"))
                .unwrap_or_default()
                .trim()
                .to_string(),
            ..Capture::default()
        };
        let mut pci = Vec::new();
        for (class, is_ib) in [("sys/class/net", false), ("sys/class/infiniband", true)] {
            for name in list(&root.join(class)) {
                let rel = format!("{class}/{name}");
                c.link(root, &rel);
                let Ok(dir) = std::fs::canonicalize(root.join(&rel)) else {
                    continue;
                };
                c.files_in(root, &dir, &["uevent"]);
                c.link(root, &rel_of(root, &dir.join("device")));
                c.link(root, &rel_of(root, &dir.join("device/driver")));
                if is_ib {
                    c.ib_ports(root, &dir);
                } else {
                    c.files_in(root, &dir.join("statistics"), &[]);
                }
                if let Ok(dev) = std::fs::canonicalize(dir.join("device")) {
                    pci.push(dev);
                }
            }
        }
        // Each PCI function behind a port, and every bridge above it up to the root complex.
        let mut seen = std::collections::BTreeSet::new();
        for dev in pci {
            let mut d = Some(dev.as_path());
            while let Some(p) = d {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if is_bdf(name) && seen.insert(p.to_path_buf()) {
                    for f in PCI_FILES {
                        c.file(root, &p.join(f));
                    }
                    c.link(root, &rel_of(root, &p.join("driver")));
                    for irq in list(&p.join("msi_irqs")) {
                        c.file(root, &p.join("msi_irqs").join(irq));
                    }
                }
                if name.starts_with("pci") {
                    break;
                }
                d = p.parent();
            }
        }
        c
    }

    fn ib_ports(&mut self, root: &Path, dev: &Path) {
        for port in list(&dev.join("ports")) {
            let p = dev.join("ports").join(&port);
            self.files_in(root, &p, &[]);
            self.files_in(root, &p.join("counters"), &[]);
            self.files_in(root, &p.join("hw_counters"), &[]);
            for g in list(&p.join("gids")) {
                let Ok(v) = std::fs::read_to_string(p.join("gids").join(&g)) else {
                    continue;
                };
                // An unused entry is all zeros and its attributes unreadable: left out.
                if !v.trim().chars().any(|c| c.is_ascii_hexdigit() && c != '0') {
                    continue;
                }
                self.file(root, &p.join("gids").join(&g));
                self.file(root, &p.join("gid_attrs/types").join(&g));
                self.file(root, &p.join("gid_attrs/ndevs").join(&g));
            }
        }
    }

    /// Every readable regular file directly in `dir`, but `skip`.
    fn files_in(&mut self, root: &Path, dir: &Path, skip: &[&str]) {
        for name in list(dir) {
            if skip.contains(&name.as_str()) {
                continue;
            }
            let p = dir.join(&name);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                self.file(root, &p);
            }
        }
    }

    fn file(&mut self, root: &Path, p: &Path) {
        // EINVAL (a down link's speed) or EACCES: the file is absent in the capture, as the
        // fixtures' convention has it.
        if let Ok(v) = std::fs::read(p) {
            if v.len() <= 65_536 {
                self.files
                    .insert(rel_of(root, p), String::from_utf8_lossy(&v).into_owned());
            }
        }
    }

    fn link(&mut self, root: &Path, rel: &str) {
        if let Ok(t) = std::fs::read_link(root.join(rel)) {
            self.links.insert(rel.to_string(), t.display().to_string());
        }
    }
}

/// `p` relative to `root`, through the canonical path of its parent (so a path reached through
/// class links is stored where the kernel keeps it).
fn rel_of(root: &Path, p: &Path) -> String {
    let parent = p
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .unwrap_or_else(|| p.parent().map(Path::to_path_buf).unwrap_or_default());
    let full: PathBuf = parent.join(p.file_name().unwrap_or_default());
    full.strip_prefix(root)
        .unwrap_or(&full)
        .display()
        .to_string()
}

fn list(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.take(MAX_ENTRIES)
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_captured_with_its_links_and_without_unused_gids() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let fun = r.join("sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0");
        let net = fun.join("virtio1/net/eth0");
        std::fs::create_dir_all(net.join("statistics")).unwrap();
        std::fs::write(net.join("mtu"), "1500\n").unwrap();
        std::fs::write(net.join("statistics/rx_bytes"), "7\n").unwrap();
        std::fs::write(fun.join("current_link_speed"), "2.5 GT/s PCIe\n").unwrap();
        std::fs::write(
            r.join("sys/devices/pci0000:00/0000:00:02.0/max_link_width"),
            "4\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("../../../virtio1", net.join("device")).unwrap();
        std::fs::create_dir_all(r.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:02.0/0000:01:00.0/virtio1/net/eth0",
            r.join("sys/class/net/eth0"),
        )
        .unwrap();
        let ib = r.join("sys/devices/virtual/infiniband/rxe0");
        let port = ib.join("ports/1");
        std::fs::create_dir_all(port.join("gids")).unwrap();
        std::fs::create_dir_all(port.join("gid_attrs/types")).unwrap();
        std::fs::write(ib.join("parent"), "eth0\n").unwrap();
        std::fs::write(
            port.join("gids/0"),
            "fe80:0000:0000:0000:5054:00ff:fe1a:0000\n",
        )
        .unwrap();
        std::fs::write(
            port.join("gids/1"),
            "0000:0000:0000:0000:0000:0000:0000:0000\n",
        )
        .unwrap();
        std::fs::write(port.join("gid_attrs/types/0"), "RoCE v2\n").unwrap();
        std::fs::create_dir_all(r.join("sys/class/infiniband")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtual/infiniband/rxe0",
            r.join("sys/class/infiniband/rxe0"),
        )
        .unwrap();
        let c = Capture::take(r);
        let base = "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0";
        assert_eq!(c.files[&format!("{base}/virtio1/net/eth0/mtu")], "1500\n");
        assert_eq!(
            c.files[&format!("{base}/virtio1/net/eth0/statistics/rx_bytes")],
            "7\n"
        );
        assert_eq!(
            c.files[&format!("{base}/current_link_speed")],
            "2.5 GT/s PCIe\n"
        );
        assert_eq!(
            c.files["sys/devices/pci0000:00/0000:00:02.0/max_link_width"],
            "4\n"
        );
        assert_eq!(
            c.links["sys/class/net/eth0"],
            "../../devices/pci0000:00/0000:00:02.0/0000:01:00.0/virtio1/net/eth0"
        );
        assert_eq!(
            c.links[&format!("{base}/virtio1/net/eth0/device")],
            "../../../virtio1"
        );
        let ports = "sys/devices/virtual/infiniband/rxe0/ports/1";
        assert!(c.files.contains_key(&format!("{ports}/gids/0")));
        assert!(!c.files.contains_key(&format!("{ports}/gids/1")));
        assert_eq!(c.files[&format!("{ports}/gid_attrs/types/0")], "RoCE v2\n");
        assert_eq!(
            c.files["sys/devices/virtual/infiniband/rxe0/parent"],
            "eth0\n"
        );
    }
}
