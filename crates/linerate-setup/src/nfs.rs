//! nfs-rdma: NFS over RDMA on port 20049, for a server (nfsd listening on RDMA, persistently)
//! and a client (`--nfs-mount server:/export`). Pure.

use crate::detect;
use crate::edit::ini;
use crate::plan;
use crate::snapshot::Snapshot;
use crate::Options;
use linerate_facts::{Family, Inventory, Plan, PlanCommand, Step, Topic, When, Why};

/// The NFS/RDMA port (IANA `nfsrdma`).
pub const PORT: u16 = 20049;
/// The nfs-utils version from which setup trusts `[nfsd] rdma=` / `rdma-port=` in nfs.conf
/// (a conservative choice: Debian 12 ships 2.6, RHEL 8 2.3).
pub const NFS_UTILS_MIN: [u32; 3] = [2, 3, 1];
pub const DROPIN: &str = "/etc/systemd/system/nfs-server.service.d/90-linerate-rdma.conf";
pub const MODULES: &str = "/etc/modules-load.d/linerate-nfs-rdma.conf";

fn exports(s: &Snapshot) -> Vec<(String, String)> {
    std::iter::once(("/etc/exports", s.file("/etc/exports").unwrap_or("")))
        .chain(s.files_in("/etc/exports.d"))
        .flat_map(|(p, t)| {
            t.lines()
                .map(move |l| (p.to_string(), l.trim().to_string()))
        })
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

fn nfs_utils(s: &Snapshot) -> Option<String> {
    detect::dpkg_version(s, "nfs-kernel-server").or_else(|| detect::dpkg_version(s, "nfs-common"))
}

/// Whether nfs.conf's `rdma=` is supported: from the version, or the distribution's release.
fn nfs_conf_rdma(s: &Snapshot, plan: &mut Plan) -> bool {
    match nfs_utils(s) {
        Some(v) => detect::version_at_least(&v, &NFS_UTILS_MIN),
        None => {
            let d = detect::distro(s);
            let modern = d.family == Family::RedHat && d.major().is_some_and(|m| m >= 8);
            plan.note(
                Topic::NfsRdma,
                format!(
                    "nfs-utils version unknown (no dpkg record){}",
                    if modern {
                        "; RHEL 8 and later ship 2.3 or newer, so nfs.conf's rdma= is used"
                    } else {
                        ": using a systemd drop-in that works with any version"
                    }
                ),
            );
            modern
        }
    }
}

fn server(s: &Snapshot, plan: &mut Plan) {
    let ex = exports(s);
    let mut files = Vec::new();
    let mut commands = Vec::new();
    let what = if ex.is_empty() {
        "nfs-kernel-server is installed".to_string()
    } else {
        format!("this host exports NFS ({} export line(s))", ex.len())
    };
    let mut why = Why::new(
        None,
        format!("{what}: with RDMA, nfsd moves data by RDMA instead of through the TCP stack"),
    );
    for (p, l) in &ex {
        why = why.evidence(p.clone(), l);
    }
    if nfs_conf_rdma(s, plan) {
        let old = s.file("/etc/nfs.conf").unwrap_or("");
        let t = ini::set(old, "nfsd", "rdma", "y");
        let t = ini::set(&t, "nfsd", "rdma-port", &PORT.to_string());
        files.extend(plan::changed_file(s, "/etc/nfs.conf", t));
        commands.push(PlanCommand::new("systemctl restart nfs-server", When::AfterApply, "nfsd reads nfs.conf when it starts; clients see a short pause (NFS retries), not an error"));
    } else {
        let unit = format!("# Written by `linerate setup nfs-rdma`: nfs-utils here has no nfs.conf rdma= option, so add the\n# RDMA listener after each start of nfsd (it is lost on every restart otherwise).\n[Service]\nExecStartPost=/bin/sh -c 'echo \"rdma {PORT}\" > /proc/fs/nfsd/portlist'\n");
        files.extend(plan::changed_file(s, DROPIN, unit));
        commands.push(PlanCommand::new(
            "systemctl daemon-reload && systemctl restart nfs-server",
            When::AfterApply,
            "loads the drop-in; clients see a short pause (NFS retries)",
        ));
    }
    files.extend(plan::changed_file(s, MODULES, "# Written by `linerate setup nfs-rdma`: the NFS/RDMA transport (rpcrdma; svcrdma and xprtrdma are its aliases).\nsvcrdma\n".to_string()));
    commands.insert(
        0,
        PlanCommand::new(
            "modprobe svcrdma",
            When::AfterApply,
            "loads the RDMA transport now (modules-load.d loads it at boot)",
        ),
    );
    commands.push(PlanCommand::new(
        "cat /proc/fs/nfsd/portlist",
        When::Check,
        format!("lists `rdma {PORT}`"),
    ));
    for (p, l) in &ex {
        if !l.contains("insecure") {
            plan.note(Topic::NfsRdma, format!("{p}: `{l}` lacks `insecure`: RDMA clients do not connect from reserved ports, so mounts over RDMA are refused until the export has it (add it by hand: it also admits unprivileged clients' ports), then `exportfs -ra`"));
        }
    }
    if files.is_empty() {
        plan.note(
            Topic::NfsRdma,
            format!(
                "nfsd is already configured to listen for RDMA on port {PORT}: nothing to write"
            ),
        );
        return;
    }
    plan.steps.push(Step {
        topic: Topic::NfsRdma,
        subject: "nfs-server".to_string(),
        summary: format!("nfsd listens for NFS over RDMA on port {PORT}, persistently"),
        why: vec![why],
        files,
        commands,
        undo: vec!["the rollback restores the files; `systemctl restart nfs-server` then drops the RDMA listener (a running nfsd keeps its listeners: writing `-rdma` to /proc/fs/nfsd/portlist fails with an I/O error)".to_string()],
    });
}

fn client(s: &Snapshot, export: &str, plan: &mut Plan) {
    let Some((host, path)) = export
        .split_once(':')
        .filter(|(h, p)| !h.is_empty() && p.starts_with('/'))
    else {
        plan.refuse(
            Topic::NfsRdma,
            export,
            format!("--nfs-mount {export:?}: expected SERVER:/PATH (e.g. storage1:/export/data)"),
            None,
        );
        return;
    };
    let name = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("nfs");
    let mnt = format!("/mnt/{name}");
    let opts = format!("proto=rdma,port={PORT},_netdev");
    let old = s.file("/etc/fstab").unwrap_or("");
    let mut hit = false;
    let mut lines: Vec<String> = old
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() >= 4 && !l.trim_start().starts_with('#') && f[0] == export {
                hit = true;
                let kept: Vec<&str> = f[3]
                    .split(',')
                    .filter(|o| {
                        !o.starts_with("proto=")
                            && !o.starts_with("port=")
                            && *o != "rdma"
                            && *o != "_netdev"
                            && *o != "defaults"
                    })
                    .collect();
                let mut o = kept.join(",");
                if !o.is_empty() {
                    o.push(',');
                }
                o.push_str(&opts);
                let rest = f[4..].join(" ");
                format!(
                    "{} {} {} {o}{}",
                    f[0],
                    f[1],
                    f[2],
                    if rest.is_empty() {
                        " 0 0".to_string()
                    } else {
                        format!(" {rest}")
                    }
                )
            } else {
                l.to_string()
            }
        })
        .collect();
    if !hit {
        lines.push(format!("{export} {mnt} nfs {opts} 0 0"));
    }
    let mut new = lines.join("\n");
    new.push('\n');
    let Some(f) = plan::changed_file(s, "/etc/fstab", new) else {
        plan.note(
            Topic::NfsRdma,
            format!("/etc/fstab already mounts {export} over RDMA: nothing to write"),
        );
        return;
    };
    plan.steps.push(Step {
        topic: Topic::NfsRdma,
        subject: export.to_string(),
        summary: format!("mount {export} over RDMA (proto=rdma, port {PORT})"),
        why: vec![Why::new(None, format!("--nfs-mount {export}: NFS over RDMA moves the data without the TCP stack of either host; {host} must listen on port {PORT} (`linerate setup nfs-rdma` there)"))],
        files: vec![f],
        commands: vec![
            PlanCommand::new("modprobe xprtrdma", When::AfterApply, "the client's RDMA transport"),
            PlanCommand::new(format!("mkdir -p {mnt} && mount {mnt}"), When::AfterApply, format!("one-off, the same as `mount -o rdma,port={PORT} {export} {mnt}`")),
            PlanCommand::new(format!("grep ' {mnt} ' /proc/mounts"), When::Check, "shows proto=rdma once mounted over RDMA"),
        ],
        undo: vec![format!("umount {mnt}; the rollback restores /etc/fstab")],
    });
}

pub fn build(inv: &Inventory, s: &Snapshot, o: &Options, plan: &mut Plan) {
    if inv.ib_devices.is_empty() {
        plan.refuse(
            Topic::NfsRdma,
            "host",
            "no RDMA device (InfiniBand, RoCE or iWARP) on this machine",
            Some(
                "An RDMA-capable NIC with its driver loaded (`/sys/class/infiniband` lists it)."
                    .to_string(),
            ),
        );
        return;
    }
    // A host that exports is a server; one with nfs-kernel-server installed but no export is
    // one too unless it was asked to mount (the package is in many images that never serve).
    let installed = detect::dpkg_version(s, "nfs-kernel-server").is_some();
    let is_server = !exports(s).is_empty() || (installed && o.nfs_mount.is_none());
    if installed && !is_server {
        plan.note(
            Topic::NfsRdma,
            "nfs-kernel-server is installed but nothing is exported (/etc/exports): this host is configured as a client only; run setup nfs-rdma again once it exports to make it listen for RDMA too",
        );
    }
    if is_server {
        server(s, plan);
    }
    if let Some(e) = &o.nfs_mount {
        client(s, e, plan);
    }
    if !is_server && o.nfs_mount.is_none() {
        plan.note(Topic::NfsRdma, "not an NFS server (no export in /etc/exports) and no --nfs-mount SERVER:/PATH for a client: nothing to do");
    }
}
