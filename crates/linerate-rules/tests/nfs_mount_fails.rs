//! `nfs.mount_fails`: a line of /etc/fstab asks for NFS over RDMA and nothing is mounted there.
//! Each cause the rule can tell (no rpcrdma, the wrong port, a server not listening for RDMA, no
//! answer, no RDMA path, nothing in the way) on the `nfs-rdma-not-ready` tree, with the live
//! facts (the server's answer to an RDMA connection) set as probe would find them.

use std::path::Path;

use linerate_facts::{Finding, FindingId, Inventory, RdmaKnock};
use linerate_rules::analyze;

fn inventory() -> Inventory {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sysfs/nfs-rdma-not-ready");
    linerate_inventory::probe(&root).expect("the fixture probes")
}

/// The tree with rpcrdma loadable (loaded, as after `modprobe rpcrdma`).
fn with_rpcrdma() -> Inventory {
    let mut inv = inventory();
    inv.rdma_stack.modules.push("rpcrdma".into());
    inv
}

fn mount_fails(inv: &Inventory) -> Vec<Finding> {
    analyze(inv)
        .findings
        .into_iter()
        .filter(|f| f.id == FindingId::NfsMountFails)
        .collect()
}

fn one(inv: &Inventory) -> Finding {
    let v = mount_fails(inv);
    assert_eq!(v.len(), 1, "{v:#?}");
    let f = v.into_iter().next().unwrap();
    assert_eq!(f.subject, "/mnt/scratch");
    assert!(
        f.message.starts_with(
            "/mnt/scratch (storage1:/export/scratch over RDMA, in /etc/fstab) is not mounted: "
        ),
        "{}",
        f.message
    );
    assert!(f.evidence.iter().any(
        |(k, v)| k == "/etc/fstab" && v.contains("storage1:/export/scratch /mnt/scratch nfs4")
    ));
    f
}

fn set_knock(inv: &mut Inventory, port: Option<u16>, k: RdmaKnock, k20049: Option<RdmaKnock>) {
    let e = &mut inv.rdma_stack.nfs_fstab[0];
    e.port = port;
    e.knock = Some(k);
    e.knock_default_port = k20049;
}

#[test]
fn the_line_and_its_server_address_are_read() {
    let inv = inventory();
    let e = &inv.rdma_stack.nfs_fstab;
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].mountpoint, "/mnt/scratch");
    assert_eq!(e[0].addr.as_deref(), Some("10.10.0.2"), "from /etc/hosts");
}

#[test]
fn no_rpcrdma_is_named_before_anything_else() {
    let mut inv = inventory();
    set_knock(&mut inv, None, RdmaKnock::Accepted, None);
    let f = one(&inv);
    assert!(
        f.message
            .contains("rpcrdma, the NFS/RDMA client transport, cannot load (the running kernel"),
        "{}",
        f.message
    );
    assert!(f.fix.contains("modprobe rpcrdma"));
}

#[test]
fn refused_on_the_line_port_and_accepted_on_20049_is_the_wrong_port() {
    let mut inv = with_rpcrdma();
    set_knock(
        &mut inv,
        Some(20050),
        RdmaKnock::Refused,
        Some(RdmaKnock::Accepted),
    );
    let f = one(&inv);
    assert!(f.message.contains("the wrong port: 10.10.0.2 listens for NFS over RDMA on 20049, and refuses an RDMA connection on port 20050"), "{}", f.message);
    assert!(f.fix.starts_with("Write `port=20049`"), "{:?}", f.fix);
    assert!(f
        .evidence
        .iter()
        .any(|(k, v)| k == "RDMA connection to 10.10.0.2:20050" && v.starts_with("refused")));
    assert!(f
        .evidence
        .iter()
        .any(|(k, v)| k == "RDMA connection to 10.10.0.2:20049" && v == "accepted"));
}

#[test]
fn refused_on_20049_is_a_server_not_listening_for_rdma() {
    let mut inv = with_rpcrdma();
    set_knock(&mut inv, Some(20049), RdmaKnock::Refused, None);
    let f = one(&inv);
    assert!(f.message.contains("the server does not listen for NFS over RDMA: 10.10.0.2 refuses an RDMA connection on port 20049 (`mount` says `Connection refused`)"), "{}", f.message);
    assert!(f.fix.contains("echo 'rdma 20049' > /proc/fs/nfsd/portlist"));
    // Another port, refused on both: the server first, and the port too.
    set_knock(
        &mut inv,
        Some(2049),
        RdmaKnock::Refused,
        Some(RdmaKnock::Refused),
    );
    let f = one(&inv);
    assert!(
        f.message.contains("on port 2049 and on 20049"),
        "{}",
        f.message
    );
    assert!(f.fix.contains("`port=20049` in this line"), "{:?}", f.fix);
}

#[test]
fn no_answer_and_no_rdma_path_are_told_apart() {
    let mut inv = with_rpcrdma();
    set_knock(&mut inv, None, RdmaKnock::TimedOut, None);
    assert!(one(&inv)
        .message
        .contains("10.10.0.2 does not answer an RDMA connection on port 20049"));
    set_knock(
        &mut inv,
        None,
        RdmaKnock::Failed {
            call: "fi_getinfo".into(),
            text: "No data available".into(),
        },
        None,
    );
    let f = one(&inv);
    assert!(f.message.contains("an RDMA connection to 10.10.0.2:20049 cannot be opened from this host (fi_getinfo: No data available)"), "{}", f.message);
}

#[test]
fn a_server_that_accepts_leaves_the_export_and_the_mount_command() {
    let mut inv = with_rpcrdma();
    set_knock(&mut inv, None, RdmaKnock::Accepted, None);
    let f = one(&inv);
    assert!(
        f.message.contains("nothing found here stops it"),
        "{}",
        f.message
    );
    assert!(f.fix.contains("insecure"));
}

#[test]
fn without_a_live_check_a_port_other_than_20049_is_named() {
    let mut inv = with_rpcrdma();
    inv.rdma_stack.nfs_fstab[0].port = Some(2049);
    let f = one(&inv);
    assert!(
        f.message
            .contains("the line names port 2049, and nfsd listens for NFS over RDMA on 20049"),
        "{}",
        f.message
    );
    inv.rdma_stack.nfs_fstab[0].port = None;
    assert!(one(&inv)
        .message
        .contains("is not known (no RDMA connection to it was tried"));
}

#[test]
fn mounted_or_noauto_lines_and_hosts_without_rdma() {
    let mut inv = with_rpcrdma();
    inv.rdma_stack.nfs_fstab[0].noauto = true;
    assert!(mount_fails(&inv).is_empty());
    inv.rdma_stack.nfs_fstab[0].noauto = false;
    let mut m = inv.rdma_stack.nfs_mounts[0].clone();
    m.mountpoint = "/mnt/scratch".into();
    m.proto = Some("rdma".into());
    inv.rdma_stack.nfs_mounts.push(m);
    assert!(mount_fails(&inv).is_empty(), "mounted: nothing to say");
    inv.rdma_stack.nfs_mounts.pop();
    inv.ib_devices.clear();
    assert!(one(&inv).message.contains("this host has no RDMA device"));
}

/// The kernel asks for rpcrdma by its name at a mount over RDMA: a `blacklist` line (which
/// hides aliases only) does not keep it from loading, an `install rpcrdma /bin/false` does.
#[test]
fn only_an_install_line_keeps_rpcrdma_from_loading_at_a_mount() {
    let mut inv = inventory();
    let s = &mut inv.rdma_stack;
    s.modules_available.push("rpcrdma".into());
    s.modules_blocked
        .push(("rpcrdma".into(), "/etc/modprobe.d/no-nfs.conf".into()));
    set_knock(&mut inv, None, RdmaKnock::Refused, None);
    let f = one(&inv);
    assert!(
        f.message.contains("the server does not listen"),
        "blacklisted only: {}",
        f.message
    );
    inv.rdma_stack
        .modules_blocked_by_name
        .push("rpcrdma".into());
    let f = one(&inv);
    assert!(
        f.message.contains(
            "rpcrdma, the NFS/RDMA client transport, cannot load (/etc/modprobe.d/no-nfs.conf keeps it from loading)"
        ),
        "{}",
        f.message
    );
}
