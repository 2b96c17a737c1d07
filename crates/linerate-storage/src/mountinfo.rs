//! Which mount holds a path, from `/proc/self/mountinfo`.
//!
//! Format (proc(5), `show_mountinfo` in fs/proc_namespace.c), one mount per line:
//!
//! ```text
//! 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//! (1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
//! ```
//!
//! (5) is the mount point, (6) the per-mount options, (7) zero or more optional fields ended by
//! `-`, then (9) the filesystem type and (10) the source. Space, tab, newline and backslash in paths
//! are written as `\040`, `\011`, `\012` and `\134` (`mangle` in fs/proc_namespace.c).

use std::path::{Path, PathBuf};

use serde::Serialize;

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountEntry {
    pub mount_point: PathBuf,
    /// `ext4`, `tmpfs`, `nfs4`, ...
    pub fstype: String,
    /// `/dev/vda`, `server:/export`, `tmpfs`, ...
    pub source: String,
    /// Mounted read-only (per-mount `ro`, as a `mount -o bind,ro` shows).
    pub read_only: bool,
    /// The transport of a network file system (NFS's `proto=` super option: `rdma`, `tcp`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
}

impl MountEntry {
    /// `tmpfs`, `ext4 /dev/vda`, `nfs4 server:/export (proto=rdma)`: the type, then the source
    /// unless it says nothing more (`tmpfs tmpfs`, `none`), then a network file system's
    /// transport.
    pub fn describe(&self) -> String {
        let s = self.source.as_str();
        let d = if s.is_empty() || s == "none" || s == self.fstype {
            self.fstype.clone()
        } else {
            format!("{} {s}", self.fstype)
        };
        match &self.proto {
            Some(p) => format!("{d} (proto={p})"),
            None => d,
        }
    }

    /// Data lives on another machine, whose own cache O_DIRECT on this side does not bypass.
    pub fn is_network(&self) -> bool {
        matches!(
            self.fstype.as_str(),
            "nfs"
                | "nfs4"
                | "cifs"
                | "smb3"
                | "smbfs"
                | "ceph"
                | "glusterfs"
                | "9p"
                | "virtiofs"
                | "lustre"
                | "beegfs"
                | "gpfs"
        ) || self.fstype.starts_with("fuse.")
    }

    /// Data lives in RAM: there is no slower medium for a cache to hide.
    pub fn is_memory(&self) -> bool {
        matches!(self.fstype.as_str(), "tmpfs" | "ramfs" | "devtmpfs")
    }
}

/// Undo the kernel's octal escapes (`\040` → space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                if let Ok(byte) = u8::try_from(v) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse mountinfo text; malformed lines are skipped.
pub fn parse(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let sep = fields.iter().position(|f| *f == "-")?;
            if sep < 6 || fields.len() < sep + 3 {
                return None;
            }
            Some(MountEntry {
                mount_point: PathBuf::from(unescape(fields[4])),
                fstype: unescape(fields[sep + 1]),
                source: unescape(fields[sep + 2]),
                read_only: fields[5].split(',').any(|o| o == "ro"),
                proto: ["nfs", "nfs4"]
                    .contains(&fields[sep + 1])
                    .then(|| fields.get(sep + 3))
                    .flatten()
                    .and_then(|o| o.split(',').find_map(|o| o.strip_prefix("proto=")))
                    .map(str::to_string),
            })
        })
        .collect()
}

/// The mount holding `path` (absolute, symlinks resolved): the longest mount point that is a
/// prefix of it, component by component; of equal ones the last listed (mounted on top).
pub fn find<'a>(mounts: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    let mut best: Option<&MountEntry> = None;
    for m in mounts {
        if path.starts_with(&m.mount_point)
            && best.is_none_or(|b| {
                m.mount_point.components().count() >= b.mount_point.components().count()
            })
        {
            best = Some(m);
        }
    }
    best
}

/// The mount holding `path` on this machine, or `None` when mountinfo is unreadable.
pub fn lookup(path: &Path) -> Option<MountEntry> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    find(&parse(&text), path).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684096k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
42 27 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw,discard
60 27 0:50 / /mnt/nfs rw,relatime shared:7 master:3 - nfs4 server:/export rw,vers=4.2,proto=rdma,port=20049,addr=10.0.0.2
61 27 0:51 / /mnt/with\\040space rw - cifs //nas/share rw
62 27 254:0 /data /srv/ro ro,relatime - ext4 /dev/vda rw
63 25 0:60 / /dev/shm rw - tmpfs none rw,size=1024k
bad line
";

    #[test]
    fn parses_fields_and_escapes() {
        let m = parse(SAMPLE);
        assert_eq!(m.len(), 8);
        assert_eq!(m[2].mount_point, Path::new("/"));
        assert_eq!(m[2].describe(), "ext4 /dev/vda");
        assert_eq!(m[1].describe(), "tmpfs");
        assert_eq!(m[4].describe(), "nfs4 server:/export (proto=rdma)");
        assert!(m[4].is_network() && !m[2].is_network());
        assert_eq!(m[5].mount_point, Path::new("/mnt/with space"));
        assert!(m[6].read_only && !m[2].read_only);
        assert!(m[1].is_memory());
    }

    #[test]
    fn finds_longest_prefix_by_component() {
        let m = parse(SAMPLE);
        let f = |p: &str| find(&m, Path::new(p)).map(MountEntry::describe);
        assert_eq!(
            f("/mnt/nfs/a/b").as_deref(),
            Some("nfs4 server:/export (proto=rdma)")
        );
        assert_eq!(f("/mnt/nfsx").as_deref(), Some("ext4 /dev/vda"));
        assert_eq!(f("/srv/ro/x").as_deref(), Some("ext4 /dev/vda"));
        assert!(find(&m, Path::new("/srv/ro/x")).unwrap().read_only);
        // Two mounts on /dev/shm: the later one is on top.
        assert_eq!(
            find(&m, Path::new("/dev/shm/x")).unwrap().source.as_str(),
            "none"
        );
        assert_eq!(f("/").as_deref(), Some("ext4 /dev/vda"));
        assert_eq!(find(&[], Path::new("/")), None);
    }

    #[test]
    fn unescape_leaves_other_backslashes() {
        assert_eq!(unescape("a\\134b"), "a\\b");
        assert_eq!(unescape("a\\9z"), "a\\9z");
        assert_eq!(unescape("end\\04"), "end\\04");
        assert_eq!(unescape("tab\\011x"), "tab\tx");
    }

    #[test]
    fn this_machine_has_a_root_mount() {
        if let Some(m) = lookup(Path::new("/")) {
            assert!(!m.fstype.is_empty());
        }
    }
}
