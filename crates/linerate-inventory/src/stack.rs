//! The RDMA software stack under a root: modules (`/sys/module`), device nodes
//! (`/sys/class/infiniband_verbs`, `/sys/class/misc/rdma_cm`), libibverbs' providers
//! (`/etc/libibverbs.d`), locked-memory limits (`/proc/self/limits`, `/etc/security/limits*`,
//! the serve unit), opensm, NFS mounts and nfsd's listeners, and the distribution.

use std::path::Path;

use linerate_facts::{LimitsLine, MemlockLimit, NfsFstab, NfsMount, OsFamily, RdmaStack, Route};

use crate::fs::Root;

/// The modules whose presence the stack's findings read.
pub const MODULES: &[&str] = &[
    "ib_core",
    "ib_uverbs",
    "rdma_ucm",
    "rdma_cm",
    "ib_umad",
    "ib_ipoib",
    "rpcrdma",
    "nfsd",
    "mlx4_core",
    "mlx4_ib",
    "mlx5_core",
    "mlx5_ib",
    "bnxt_en",
    "bnxt_re",
    "ice",
    "i40e",
    "irdma",
    "qede",
    "qedr",
    "cxgb4",
    "iw_cxgb4",
    "ib_mthca",
    "rdma_rxe",
    "siw",
];

/// Where a systemd unit may be installed, the administrator's first.
const UNIT_DIRS: &[&str] = &[
    "etc/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
];
const SERVE_UNIT: &str = "linerate-serve.service";

pub fn read(r: &Root) -> RdmaStack {
    let (modules_blocked, modules_blocked_by_name) = modules_blocked(r);
    RdmaStack {
        known: r.path("sys/module").is_dir(),
        os_family: os_family(r),
        modules: MODULES
            .iter()
            .filter(|m| r.path("sys/module").join(m).is_dir())
            .map(|m| (*m).to_string())
            .collect(),
        uverbs: Root::list(&r.path("sys/class/infiniband_verbs"))
            .into_iter()
            .filter(|n| n.starts_with("uverbs"))
            .collect(),
        rdma_cm: r.path("sys/class/misc/rdma_cm").exists(),
        verbs_providers: verbs_providers(&r.path("etc/libibverbs.d")),
        memlock: Root::read_raw(&r.path("proc/self/limits"))
            .ok()
            .flatten()
            .and_then(|t| parse_proc_limits(&t)),
        cap_ipc_lock: Root::read_raw(&r.path("proc/self/status"))
            .ok()
            .flatten()
            .and_then(|s| parse_cap_eff(&s))
            .is_some_and(|caps| caps & (1 << 14) != 0),
        modules_available: modules_available(r),
        modules_blocked,
        modules_blocked_by_name,
        limits_conf: limits_conf(r),
        serve_unit: UNIT_DIRS
            .iter()
            .any(|d| r.path(d).join(SERVE_UNIT).is_file()),
        serve_unit_memlock: serve_unit_memlock(r),
        opensm_installed: ["usr/sbin/opensm", "usr/bin/opensm", "sbin/opensm"]
            .iter()
            .any(|p| r.path(p).is_file()),
        opensm_running: process_running(r, "opensm"),
        nfs_mounts: Root::read_raw(&r.path("proc/self/mountinfo"))
            .ok()
            .flatten()
            .map(|t| parse_nfs_mounts(&t))
            .unwrap_or_default(),
        nfs_fstab: Root::read_raw(&r.path("etc/fstab"))
            .ok()
            .flatten()
            .map(|t| {
                let hosts = Root::read_raw(&r.path("etc/hosts"))
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                parse_nfs_fstab(&t, &hosts)
            })
            .unwrap_or_default(),
        nfsd_portlist: Root::read_raw(&r.path("proc/fs/nfsd/portlist"))
            .ok()
            .flatten()
            .map(|t| {
                t.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect()
            }),
        exports: exports(r),
        libfabric: None,
        routes: Root::read_raw(&r.path("proc/net/route"))
            .ok()
            .flatten()
            .map(|t| parse_routes(&t))
            .unwrap_or_default(),
    }
}

/// Which of [`MODULES`] the running kernel has: its `modules.dep` and `modules.builtin`.
fn modules_available(r: &Root) -> Vec<String> {
    let Ok(Some(release)) = Root::read_raw(&r.path("proc/sys/kernel/osrelease")) else {
        return Vec::new();
    };
    let dir = r.path("lib/modules").join(&release);
    let text = ["modules.dep", "modules.builtin"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .collect::<Vec<_>>()
        .join("\n");
    let names: std::collections::BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.split(':').next())
        .filter_map(|p| p.rsplit('/').next())
        .filter_map(|f| f.split(".ko").next())
        .map(|m| m.replace('-', "_"))
        .collect();
    MODULES
        .iter()
        .filter(|m| names.contains(**m))
        .map(|m| (*m).to_string())
        .collect()
}

/// The module a line of `/etc/modprobe.d/*.conf` blocks, `blacklist M` or `install M
/// /bin/false` (or `/bin/true`), and whether by an `install` line: blocked even when asked for
/// by name.
fn modprobe_block(line: &str) -> Option<(String, bool)> {
    let f: Vec<&str> = line
        .split('#')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let (m, by_name) = match f[..] {
        ["blacklist", m] => (m, false),
        ["install", m, "/bin/false" | "/bin/true" | "/usr/bin/false" | "/usr/bin/true", ..] => {
            (m, true)
        }
        _ => return None,
    };
    Some((m.replace('-', "_"), by_name))
}

/// The blocking lines of a file of `/etc/modprobe.d` (named `file`): each module blocked
/// (with the file), and the modules blocked even when asked for by name (`install` lines).
pub fn parse_modprobe(file: &str, text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut blocked = Vec::new();
    let mut by_name = Vec::new();
    for (m, install) in text.lines().filter_map(modprobe_block) {
        if install {
            by_name.push(m.clone());
        }
        blocked.push((m, file.to_string()));
    }
    (blocked, by_name)
}

/// [`parse_modprobe`] of every `/etc/modprobe.d/*.conf`.
fn modules_blocked(r: &Root) -> (Vec<(String, String)>, Vec<String>) {
    let dir = r.path("etc/modprobe.d");
    let (mut blocked, mut by_name) = (Vec::new(), Vec::new());
    for n in Root::list(&dir).into_iter().filter(|n| ext_is(n, "conf")) {
        if let Ok(Some(t)) = Root::read_raw(&dir.join(&n)) {
            let (b, i) = parse_modprobe(&format!("/etc/modprobe.d/{n}"), &t);
            blocked.extend(b);
            by_name.extend(i);
        }
    }
    (blocked, by_name)
}

/// A file name ends in `.EXT` (as the tools that read these directories want it: lower case).
fn ext_is(name: &str, ext: &str) -> bool {
    Path::new(name).extension().is_some_and(|e| e == ext)
}

fn os_family(r: &Root) -> OsFamily {
    let text = Root::read_raw(&r.path("etc/os-release"))
        .ok()
        .flatten()
        .or_else(|| Root::read_raw(&r.path("usr/lib/os-release")).ok().flatten())
        .unwrap_or_default();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(|v| v.trim().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    OsFamily::from_ids(&get("ID"), &get("ID_LIKE"))
}

/// `driver NAME` of each `*.driver` file.
fn verbs_providers(dir: &Path) -> Option<Vec<String>> {
    if !dir.is_dir() {
        return None;
    }
    let mut v: Vec<String> = Root::list(dir)
        .into_iter()
        .filter(|n| ext_is(n, "driver"))
        .filter_map(|n| {
            let t = Root::read_raw(&dir.join(&n)).ok().flatten()?;
            t.lines()
                .find_map(|l| l.trim().strip_prefix("driver"))
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty())
        })
        .collect();
    v.sort();
    v.dedup();
    Some(v)
}

/// `Max locked memory  65536  65536  bytes` of `/proc/PID/limits`.
pub fn parse_proc_limits(text: &str) -> Option<MemlockLimit> {
    let line = text.lines().find(|l| l.starts_with("Max locked memory"))?;
    let f: Vec<&str> = line["Max locked memory".len()..]
        .split_whitespace()
        .collect();
    let v = |s: &str| -> Option<Option<u64>> {
        if s == "unlimited" {
            Some(None)
        } else {
            s.parse().ok().map(Some)
        }
    };
    Some(MemlockLimit {
        soft: v(f.first()?)?,
        hard: v(f.get(1)?)?,
    })
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let v = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(v.trim(), 16).ok()
}

/// The `memlock` lines of `etc/security/limits.conf` and `limits.d/*.conf`.
fn limits_conf(r: &Root) -> Vec<LimitsLine> {
    let mut files = vec!["etc/security/limits.conf".to_string()];
    files.extend(
        Root::list(&r.path("etc/security/limits.d"))
            .into_iter()
            .filter(|n| ext_is(n, "conf"))
            .map(|n| format!("etc/security/limits.d/{n}")),
    );
    let mut out = Vec::new();
    for f in files {
        let Ok(Some(text)) = Root::read_raw(&r.path(&f)) else {
            continue;
        };
        out.extend(parse_limits(&format!("/{f}"), &text));
    }
    out
}

/// `DOMAIN TYPE ITEM VALUE` lines whose item is `memlock` (VALUE in KiB).
pub fn parse_limits(file: &str, text: &str) -> Vec<LimitsLine> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [domain, kind, item, value] = f[..] else {
                return None;
            };
            if item != "memlock" {
                return None;
            }
            let bytes = match value {
                "unlimited" | "infinity" | "-1" => None,
                v => Some(v.parse::<u64>().ok()?.saturating_mul(1024)),
            };
            Some(LimitsLine {
                file: file.to_string(),
                domain: domain.to_string(),
                kind: kind.to_string(),
                bytes,
            })
        })
        .collect()
}

/// The last `LimitMEMLOCK=` of the serve unit and its drop-ins (`*.service.d/*.conf`, in
/// systemd's order: the unit, then drop-ins by name).
fn serve_unit_memlock(r: &Root) -> Option<String> {
    let mut texts = Vec::new();
    if let Some(unit) = UNIT_DIRS
        .iter()
        .map(|d| r.path(d).join(SERVE_UNIT))
        .find(|p| p.is_file())
    {
        texts.extend(Root::read_raw(&unit).ok().flatten());
    }
    let mut dropins: Vec<(String, std::path::PathBuf)> = UNIT_DIRS
        .iter()
        .flat_map(|d| {
            let dir = r.path(d).join(format!("{SERVE_UNIT}.d"));
            Root::list(&dir)
                .into_iter()
                .filter(|n| ext_is(n, "conf"))
                .map(move |n| (n.clone(), dir.join(n)))
        })
        .collect();
    dropins.sort();
    texts.extend(
        dropins
            .iter()
            .filter_map(|(_, p)| Root::read_raw(p).ok().flatten()),
    );
    texts
        .iter()
        .flat_map(|t| t.lines())
        .filter_map(|l| l.trim().strip_prefix("LimitMEMLOCK="))
        .map(|v| v.trim().to_string())
        .next_back()
}

/// A process whose `comm` is `name` runs (at most the first 65536 PIDs are looked at).
fn process_running(r: &Root, name: &str) -> bool {
    Root::list(&r.path("proc"))
        .into_iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .take(65_536)
        .any(|pid| {
            Root::read_raw(&r.path("proc").join(pid).join("comm"))
                .ok()
                .flatten()
                .is_some_and(|c| c == name)
        })
}

/// `/proc/net/route`: `Iface Destination Gateway Flags RefCnt Use Metric Mask ...`, the
/// addresses in hex, in the machine's byte order (little-endian on x86 and arm64).
pub fn parse_routes(text: &str) -> Vec<Route> {
    let addr = |h: &str| {
        u32::from_str_radix(h, 16)
            .ok()
            .map(|v| std::net::Ipv4Addr::from(v.swap_bytes()))
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 8 {
                return None;
            }
            Some(Route {
                iface: f[0].to_string(),
                destination: addr(f[1])?,
                mask: addr(f[7])?,
                metric: f[6].parse().ok()?,
            })
        })
        .collect()
}

/// NFS mounts of `/proc/PID/mountinfo`: `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE
/// SOURCE SUPEROPTS`.
pub fn parse_nfs_mounts(text: &str) -> Vec<NfsMount> {
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let mountpoint = head.split_whitespace().nth(4)?;
            let mut t = tail.split_whitespace();
            let fstype = t.next()?;
            if fstype != "nfs" && fstype != "nfs4" {
                return None;
            }
            let source = t.next()?;
            let opts = t.next().unwrap_or("");
            let opt = |k: &str| {
                opts.split(',')
                    .find_map(|o| o.strip_prefix(&format!("{k}=")))
                    .map(str::to_string)
            };
            Some(NfsMount {
                mountpoint: unescape(mountpoint),
                source: unescape(source),
                fstype: fstype.to_string(),
                proto: opt("proto"),
                port: opt("port").and_then(|p| p.parse().ok()),
                addr: opt("addr"),
            })
        })
        .collect()
}

/// The NFS lines of an fstab that ask for RDMA (`proto=rdma`, or the `rdma` shorthand), with
/// the server's IPv4 address from the source's host or `hosts` (an `/etc/hosts` text).
pub fn parse_nfs_fstab(text: &str, hosts: &str) -> Vec<NfsFstab> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (source, mountpoint, fstype) = (*f.first()?, *f.get(1)?, *f.get(2)?);
            if fstype != "nfs" && fstype != "nfs4" {
                return None;
            }
            let opts: Vec<&str> = f.get(3).map_or(Vec::new(), |o| o.split(',').collect());
            let rdma = opts.iter().any(|o| *o == "rdma" || *o == "proto=rdma");
            if !rdma {
                return None;
            }
            let port = opts
                .iter()
                .find_map(|o| o.strip_prefix("port="))
                .and_then(|p| p.parse().ok());
            let host = source.rsplit_once(':').map_or("", |(h, _)| h);
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let addr = if host.parse::<std::net::Ipv4Addr>().is_ok() {
                Some(host.to_string())
            } else {
                host_address(hosts, host)
            };
            Some(NfsFstab {
                source: unescape(source),
                mountpoint: unescape(mountpoint),
                fstype: fstype.to_string(),
                port,
                noauto: opts.contains(&"noauto"),
                addr,
                knock: None,
                knock_default_port: None,
            })
        })
        .collect()
}

/// The IPv4 address `/etc/hosts` gives `name`.
fn host_address(hosts: &str, name: &str) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    hosts
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let a = f.next()?;
            (a.parse::<std::net::Ipv4Addr>().is_ok() && f.any(|n| n == name)).then(|| a.to_string())
        })
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Export lines of `etc/exports` and `etc/exports.d/*.exports`.
fn exports(r: &Root) -> usize {
    let mut files = vec![r.path("etc/exports")];
    files.extend(
        Root::list(&r.path("etc/exports.d"))
            .into_iter()
            .filter(|n| ext_is(n, "exports"))
            .map(|n| r.path("etc/exports.d").join(n)),
    );
    files
        .iter()
        .filter_map(|p| Root::read_raw(p).ok().flatten())
        .flat_map(|t| {
            t.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memlock_row_of_proc_limits() {
        let t = "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 1048576              files     \nMax locked memory         65536                65536                bytes     \n";
        assert_eq!(
            parse_proc_limits(t),
            Some(MemlockLimit {
                soft: Some(65536),
                hard: Some(65536)
            })
        );
        let t = "Max locked memory         unlimited            unlimited            bytes\n";
        assert_eq!(
            parse_proc_limits(t),
            Some(MemlockLimit {
                soft: None,
                hard: None
            })
        );
        assert_eq!(
            parse_proc_limits("Max locked memory  lots  of  bytes"),
            None
        );
    }

    #[test]
    fn limits_conf_memlock_lines_in_bytes() {
        let t = "# comment\n*   soft  memlock  64\n@rdma - memlock unlimited # RDMA users\nbob hard nofile 4096\nbroken line\n";
        let l = parse_limits("/etc/security/limits.conf", t);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].bytes, Some(65536));
        assert_eq!(l[0].kind, "soft");
        assert_eq!(l[1].domain, "@rdma");
        assert_eq!(l[1].bytes, None);
    }

    #[test]
    fn fstab_lines_that_ask_for_rdma() {
        let fstab = "# <file system> <mount point>\n/dev/vda1 / ext4 defaults 0 1\n198.18.0.2:/ /mnt/nfs nfs proto=rdma,port=20049,_netdev 0 0\nstorage1:/export/data /mnt/data nfs4 rdma,noauto 0 0\n#198.18.0.2:/x /mnt/x nfs proto=rdma 0 0\ns2:/y /mnt/y nfs proto=tcp 0 0\nnowhere:/z /mnt/my\\040z nfs proto=rdma,port=2049\n";
        let hosts = "127.0.0.1 localhost\n10.1.2.3 storage1.lab storage1 # the array\n";
        let e = parse_nfs_fstab(fstab, hosts);
        assert_eq!(e.len(), 3, "{e:?}");
        assert_eq!(e[0].source, "198.18.0.2:/");
        assert_eq!(e[0].mountpoint, "/mnt/nfs");
        assert_eq!(e[0].port, Some(20049));
        assert_eq!(e[0].addr.as_deref(), Some("198.18.0.2"));
        assert!(!e[0].noauto);
        assert_eq!(e[1].fstype, "nfs4");
        assert_eq!(e[1].port, None);
        assert!(e[1].noauto);
        assert_eq!(e[1].addr.as_deref(), Some("10.1.2.3"));
        assert_eq!(e[2].mountpoint, "/mnt/my z");
        assert_eq!(e[2].port, Some(2049));
        assert_eq!(e[2].addr, None);
    }

    #[test]
    fn nfs_mounts_with_their_transport() {
        let t = "36 25 0:32 / /mnt/data rw,relatime shared:1 - nfs4 storage1:/export/data rw,vers=4.2,rsize=1048576,proto=rdma,port=20049,addr=198.18.0.2\n37 25 0:33 / /mnt/my\\040files rw - nfs s2:/x rw,vers=3,proto=tcp,addr=10.0.0.2\n38 25 8:1 / / rw - ext4 /dev/sda1 rw\n";
        let m = parse_nfs_mounts(t);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].proto.as_deref(), Some("rdma"));
        assert_eq!(m[0].port, Some(20049));
        assert_eq!(m[0].addr.as_deref(), Some("198.18.0.2"));
        assert_eq!(m[1].mountpoint, "/mnt/my files");
        assert_eq!(m[1].fstype, "nfs");
    }

    #[test]
    fn routes_and_the_interface_that_reaches_an_address() {
        let t = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\neth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\nib0\t000A0A0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        let routes = parse_routes(t);
        assert_eq!(routes.len(), 3);
        assert_eq!(routes[1].destination, std::net::Ipv4Addr::new(192, 0, 2, 0));
        let s = RdmaStack {
            routes,
            ..RdmaStack::default()
        };
        assert_eq!(s.route_to("10.10.10.2".parse().unwrap()), Some("ib0"));
        assert_eq!(s.route_to("192.0.2.9".parse().unwrap()), Some("eth0"));
        assert_eq!(s.route_to("8.8.8.8".parse().unwrap()), Some("eth0"));
        assert_eq!(parse_routes("Iface\nbroken"), []);
    }

    #[test]
    fn modprobe_blocks() {
        let (b, _) = parse_modprobe(
            "/etc/modprobe.d/x.conf",
            "# no RDMA here\nblacklist rdma_ucm\ninstall ib-uverbs /bin/false\ninstall mlx5_ib /sbin/modprobe --ignore-install mlx5_ib\noptions mlx4_core log_num_mgm_entry_size=-1\n",
        );
        assert_eq!(
            b,
            [
                ("rdma_ucm".to_string(), "/etc/modprobe.d/x.conf".to_string()),
                (
                    "ib_uverbs".to_string(),
                    "/etc/modprobe.d/x.conf".to_string()
                )
            ]
        );
        assert_eq!(
            parse_modprobe(
                "/etc/modprobe.d/x.conf",
                "blacklist rpcrdma\ninstall rpcrdma /bin/false # no NFS/RDMA\n"
            )
            .1,
            ["rpcrdma"]
        );
    }

    #[test]
    fn distributions_by_family() {
        assert_eq!(OsFamily::from_ids("ubuntu", "debian"), OsFamily::Debian);
        assert_eq!(
            OsFamily::from_ids("rocky", "rhel centos fedora"),
            OsFamily::RedHat
        );
        assert_eq!(OsFamily::from_ids("sles", ""), OsFamily::Suse);
        assert_eq!(
            OsFamily::from_ids("opensuse-leap", "suse opensuse"),
            OsFamily::Suse
        );
        assert_eq!(OsFamily::from_ids("arch", ""), OsFamily::Other);
    }
}
