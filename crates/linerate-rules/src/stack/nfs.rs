//! NFS over RDMA: a client that cannot use it (`nfs.no_rpcrdma`, `nfs.over_tcp`), a server
//! that does not listen for it (`nfs.no_rdma_listener`), and an fstab line that does not mount
//! (`nfs.mount_fails`, with its cause).

use linerate_facts::{Finding, FindingId, Inventory, NfsFstab, RdmaKnock, Severity};

use super::modules::{module_evidence, rpcrdma_blocked};
use super::NFS_RDMA_PORT;

/// `nfs.no_rpcrdma` (a client) and `nfs.no_rdma_listener` (a server).
pub(super) fn nfs(inv: &Inventory, out: &mut Vec<Finding>) {
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
pub(super) fn mount_fails(inv: &Inventory) -> Vec<Finding> {
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
