//! NFS over RDMA end to end on real kernels (the lab, docs/lab.md): guest b runs the kernel's
//! nfsd, guest a mounts it. `linerate setup nfs-rdma --apply` writes both sides (nfs.conf's RDMA
//! listener, which outlives a restart of nfsd; the fstab line with proto=rdma,port=20049) and the
//! mount comes up over RDMA; probe names each mount's transport, server route and RDMA device,
//! and says when one runs over TCP on a link with an RDMA device; disk labels a mount with its
//! transport; bench --file copies from and onto the mount, byte for byte; doctor lists the
//! mounts. Each way a mount over RDMA fails here (rpcrdma kept from loading, the wrong port, a
//! server not listening for RDMA) fails the real `mount` and gets `nfs.mount_fails` naming
//! that cause and its fix. The rollbacks restore both sides.
//!
//! The guests have no systemd: nfs-server's start is done by hand as its unit does it (nfsd's
//! file system, rpcbind, rpc.mountd, exportfs, rpc.nfsd, which reads /etc/nfs.conf).

mod common;

use std::time::{Duration, Instant};

use common::lab::{self, findings, linerate, linerate_json, sh};
use common::BIN;
use linerate_lab::{Guest, LabSpec};
use serde_json::Value;

const SERVER: &str = "198.18.0.2";
/// What the client mounts over RDMA (`fsid=0`: the NFSv4 root), and over TCP with NFSv3 (a
/// second NFSv4 mount of the same server would join the first's session, over RDMA).
const EXPORT_V4: &str = "198.18.0.2:/";
const EXPORT_V3: &str = "198.18.0.2:/srv/nfs";

/// Start nfsd as nfs-server.service does; a second call restarts it (`rpc.nfsd 0` stops the
/// threads and closes the listeners; `rpc.nfsd` reads /etc/nfs.conf again).
fn start_nfsd(b: &Guest, first: bool) -> String {
    let start = if first {
        "mount -t nfsd nfsd /proc/fs/nfsd && rpcbind && rpc.mountd && exportfs -ra && modprobe svcrdma && rpc.nfsd"
    } else {
        "rpc.nfsd 0 && rpc.nfsd"
    };
    sh(b, &format!("{start} && cat /proc/fs/nfsd/portlist"), 60)
}

/// The one `nfs.mount_fails` finding of `doc`, on `mnt`: its message and fix.
fn mount_fails(doc: &Value, mnt: &str) -> (String, String) {
    let v = findings(doc, "nfs.mount_fails");
    assert_eq!(v.len(), 1, "one nfs.mount_fails expected: {doc}");
    assert_eq!(v[0]["subject"], mnt, "{}", v[0]);
    (
        v[0]["message"].as_str().unwrap().to_string(),
        v[0]["fix"].as_str().unwrap_or("").to_string(),
    )
}

/// `mount MNT` (fstab's line) once, NFSv4.2 only and without mount.nfs's two minutes of
/// retries: its output.
fn failing_mount(a: &Guest, mnt: &str) -> String {
    let o = a
        .run(
            &format!("mount -o retry=0,vers=4.2 {mnt}"),
            Duration::from_secs(90),
        )
        .unwrap();
    assert!(!o.success(), "mount {mnt} was to fail: {o:?}");
    o.stderr
}

/// The NFS mount at `mnt` in probe's document.
fn nfs_mount<'a>(doc: &'a Value, mnt: &str) -> &'a Value {
    doc["nfs"]
        .as_array()
        .and_then(|v| v.iter().find(|m| m["mountpoint"] == mnt))
        .unwrap_or_else(|| panic!("no NFS mount {mnt} in probe: {doc}"))
}

/// Rewrite /etc/fstab in place (the guest's is bind-mounted: a rename over it fails).
fn fstab_sed(a: &Guest, expr: &str) {
    sh(
        a,
        &format!("sed '{expr}' /etc/fstab > /tmp/fstab.new && cat /tmp/fstab.new > /etc/fstab"),
        10,
    );
}

fn sha(g: &Guest, path: &str) -> String {
    sh(g, &format!("sha256sum < {path}"), 60)
}

/// The line of `text` that starts (after its indentation) with `start`.
fn line(text: &str, start: &str) -> String {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in: {text}"))
        .to_string()
}

/// The rollback id `linerate setup ... --apply` printed in `out`.
fn rollback_id(out: &str) -> String {
    out.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("undo with: linerate setup --rollback ")
        })
        .unwrap_or_else(|| panic!("no rollback id in: {out}"))
        .trim()
        .to_string()
}

/// `bench ADDR --file SRC --file-name NAME` from `from` to a `linerate serve -B ADDR
/// --write-dir DIR` on `to` (once it listens), which is stopped after.
fn copy_file(from: &Guest, to: &Guest, addr: &str, dir: &str, src: &str, name: &str) {
    let serve = lab::serve_sh(to, &format!("exec {BIN} serve -B {addr} --write-dir {dir}"));
    let out = linerate(
        from,
        &format!("bench {addr} --file {src} --file-name {name}"),
        240,
    );
    assert!(out.success(), "{out:?}");
    to.stop(serve, Duration::from_secs(5)).unwrap();
}

/// The lab's RDMA device on `g`'s NIC.
fn rxe(g: &Guest) -> String {
    g.rxe[0].clone().expect("the lab made rxe on the NIC")
}

/// How probe names the route to the server: `via enp1s0 (rxe0)`.
fn via(g: &Guest) -> String {
    format!("via {} ({})", g.netdevs[0], rxe(g))
}

#[test]
fn nfs_over_rdma_end_to_end() {
    let Some((lab, _serial)) = lab::boot(&LabSpec::pair()) else {
        return;
    };
    let a = lab.guest("a");
    let b = lab.guest("b");
    let t0 = Instant::now();
    let done = |what: &str| eprintln!("lab_nfs: {what} by {:.0} s", t0.elapsed().as_secs_f64());
    let server_rollback = server(b);
    done("server");
    let client_rollback = client(a, b);
    done("client");
    over_tcp(a);
    done("over TCP");
    disk_and_bench(a, b);
    done("disk and bench --file");
    doctor(a, b);
    done("doctor");
    failures(a, b, &server_rollback);
    done("failures");
    // The client's rollback: the fstab line is gone, and with it the finding.
    sh(a, &format!("{BIN} setup --rollback {client_rollback}"), 60);
    assert!(!sh(a, "cat /etc/fstab", 10).contains("/mnt/nfs"));
    let doc = linerate_json(a, "probe --json", 120);
    assert_eq!(findings(&doc, "nfs.mount_fails").len(), 0, "{doc}");
}

/// nfsd configured by setup, listening for RDMA, across a restart; the rollback id.
fn server(b: &Guest) -> String {
    // The server: an export on tmpfs (the guest's / is 9p, which nfsd cannot export).
    sh(
        b,
        "mkdir -p /srv/nfs && mount -t tmpfs -o size=512m tmpfs /srv/nfs && echo '/srv/nfs *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)' > /etc/exports",
        20,
    );
    let out = sh(b, &format!("{BIN} setup nfs-rdma --apply"), 60);
    assert!(out.contains("/etc/nfs.conf"), "{out}");
    let server_rollback = rollback_id(&out);
    let conf = sh(b, "cat /etc/nfs.conf", 10);
    assert!(
        conf.contains("rdma=y") && conf.contains("rdma-port=20049"),
        "{conf}"
    );
    let ports = start_nfsd(b, true);
    assert!(ports.contains("rdma 20049"), "nfsd's listeners: {ports}");
    // Persistent: nfsd restarted reads nfs.conf and listens for RDMA again.
    let ports = start_nfsd(b, false);
    assert!(
        ports.contains("rdma 20049") && ports.contains("tcp 2049"),
        "after a restart: {ports}"
    );
    let doc = linerate_json(b, "probe --json", 120);
    assert_eq!(findings(&doc, "nfs.no_rdma_listener").len(), 0, "{doc}");

    server_rollback
}

/// The client's fstab line from setup, mounted over RDMA; the rollback id.
fn client(a: &Guest, b: &Guest) -> String {
    // The client: the fstab line setup writes mounts over RDMA.
    sh(a, "mount -t tmpfs tmpfs /mnt", 10);
    let out = sh(
        a,
        &format!("{BIN} setup nfs-rdma --nfs-mount {EXPORT_V4} --apply"),
        60,
    );
    let client_rollback = rollback_id(&out);
    let fstab = sh(a, "cat /etc/fstab", 10);
    assert!(
        fstab.contains(&format!(
            "{EXPORT_V4} /mnt/nfs nfs proto=rdma,port=20049,_netdev"
        )),
        "{fstab}"
    );
    sh(
        a,
        "modprobe xprtrdma && mkdir -p /mnt/nfs && mount /mnt/nfs",
        90,
    );
    let info = sh(a, "grep ' /mnt/nfs ' /proc/self/mountinfo", 10);
    assert!(
        info.contains("proto=rdma") && info.contains("port=20049"),
        "{info}"
    );

    let doc = linerate_json(a, "probe --json", 120);
    let m = nfs_mount(&doc, "/mnt/nfs");
    assert_eq!(m["proto"], "rdma", "{m}");
    assert_eq!(m["port"], 20049, "{m}");
    assert_eq!(m["addr"], SERVER, "{m}");
    assert_eq!(m["via"], a.netdevs[0].as_str(), "{m}");
    let rxe = rxe(a);
    assert_eq!(m["rdma_device"], rxe.as_str(), "{m}");
    for id in ["nfs.mount_fails", "nfs.over_tcp", "nfs.no_rpcrdma"] {
        assert_eq!(findings(&doc, id).len(), 0, "{id}: {doc}");
    }

    // What the client writes over RDMA is what the server holds.
    sh(
        a,
        "head -c 4194304 /dev/urandom > /mnt/nfs/from-a.bin && sync",
        120,
    );
    assert_eq!(sha(a, "/mnt/nfs/from-a.bin"), sha(b, "/srv/nfs/from-a.bin"));

    client_rollback
}

/// A second mount of the same server over TCP.
fn over_tcp(a: &Guest) {
    // The same server over TCP (NFSv3), beside it: probe says so, and that the link has RDMA.
    sh(
        a,
        &format!("mkdir -p /mnt/nfs-tcp && mount -t nfs -o vers=3,nolock,proto=tcp {EXPORT_V3} /mnt/nfs-tcp"),
        90,
    );
    let doc = linerate_json(a, "probe --json", 120);
    assert_eq!(nfs_mount(&doc, "/mnt/nfs-tcp")["proto"], "tcp");
    assert_eq!(nfs_mount(&doc, "/mnt/nfs")["proto"], "rdma");
    let tcp = findings(&doc, "nfs.over_tcp");
    assert_eq!(tcp.len(), 1, "{doc}");
    assert_eq!(tcp[0]["subject"], a.netdevs[0].as_str(), "{}", tcp[0]);
    let msg = tcp[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("/mnt/nfs-tcp") && msg.contains(&rxe(a)),
        "{msg}"
    );
    let text = linerate(a, "probe", 120).stdout;
    let via = via(a);
    let l = line(&text, "/mnt/nfs ");
    assert!(
        l.contains("nfs4 198.18.0.2:/   over RDMA (port 20049)") && l.contains(&via),
        "{l}"
    );
    let l = line(&text, "/mnt/nfs-tcp ");
    assert!(
        l.contains("nfs 198.18.0.2:/srv/nfs   over TCP") && l.contains(&via),
        "{l}"
    );
}

fn disk_and_bench(a: &Guest, b: &Guest) {
    // disk on each: the report names the file system with its transport.
    for (mnt, fs) in [
        ("/mnt/nfs", "nfs4 198.18.0.2:/ (proto=rdma)"),
        ("/mnt/nfs-tcp", "nfs 198.18.0.2:/srv/nfs (proto=tcp)"),
    ] {
        let d = linerate_json(
            a,
            &format!(
                "disk {mnt} --size 4M -t 1 --qd 4 --tests seq_write,seq_read,rand_read --json"
            ),
            240,
        );
        assert_eq!(d["filesystem"], fs, "{d}");
        let tests = d["tests"].as_array().unwrap();
        assert_eq!(tests.len(), 3, "{d}");
        assert!(
            tests.iter().all(|t| t["bytes"].as_u64().unwrap_or(0) > 0),
            "every test moved data: {d}"
        );
    }

    // bench --file from the mount (a reads it over RDMA) to b, and onto it (a's server writes
    // what b sends into the mount, which lands on b's export over RDMA).
    sh(b, "mkdir -p /srv/nfs/in", 10);
    copy_file(
        a,
        b,
        SERVER,
        "/srv/nfs/in",
        "/mnt/nfs/from-a.bin",
        "copy.bin",
    );
    assert_eq!(
        sha(b, "/srv/nfs/in/copy.bin"),
        sha(b, "/srv/nfs/from-a.bin")
    );
    sh(a, "mkdir -p /mnt/nfs/up", 30);
    let client = a.addr(0).to_string();
    copy_file(
        b,
        a,
        &client,
        "/mnt/nfs/up",
        "/srv/nfs/from-a.bin",
        "up.bin",
    );
    assert_eq!(sha(b, "/srv/nfs/up/up.bin"), sha(b, "/srv/nfs/from-a.bin"));
}

fn doctor(a: &Guest, b: &Guest) {
    // doctor lists both mounts with their transport, and the one over TCP as a finding.
    let serve_b = lab::serve(b, SERVER);
    let out = linerate(
        a,
        &format!("doctor {SERVER} --quick --no-disk --no-rdma"),
        300,
    );
    b.stop(serve_b, Duration::from_secs(5)).unwrap();
    let l = line(&out.stdout, "NFS /mnt/nfs ");
    assert!(
        l.contains("nfs4 198.18.0.2:/   over RDMA (port 20049)") && l.contains(&via(a)),
        "{l}"
    );
    let l = line(&out.stdout, "NFS /mnt/nfs-tcp ");
    assert!(l.contains("over TCP"), "{l}");
    assert!(out.stdout.contains("nfs.over_tcp"), "{}", out.stdout);
    sh(a, "umount /mnt/nfs-tcp", 60);
}

/// Each way the mount over RDMA fails here, with its finding; the server's rollback.
fn failures(a: &Guest, b: &Guest, server_rollback: &str) {
    // The wrong port: refused there, nfsd listens on 20049.
    sh(a, "umount /mnt/nfs", 60);
    fstab_sed(a, "s/port=20049/port=20050/");
    let err = failing_mount(a, "/mnt/nfs");
    assert!(err.contains("Connection refused"), "{err}");
    let doc = linerate_json(a, "probe --json", 120);
    let (msg, fix) = mount_fails(&doc, "/mnt/nfs");
    assert!(msg.contains("the wrong port: 198.18.0.2 listens for NFS over RDMA on 20049, and refuses an RDMA connection on port 20050"), "{msg}");
    assert!(fix.starts_with("Write `port=20049`"), "{fix}");
    fstab_sed(a, "s/port=20050/port=20049/");

    // rpcrdma kept from loading (by name: the kernel asks for it by name at the mount).
    sh(
        a,
        "rmmod rpcrdma && echo 'install rpcrdma /bin/false' > /etc/modprobe.d/nfslab.conf",
        30,
    );
    let err = failing_mount(a, "/mnt/nfs");
    assert!(err.contains("incorrect mount option"), "{err}");
    let doc = linerate_json(a, "probe --json", 120);
    let (msg, fix) = mount_fails(&doc, "/mnt/nfs");
    assert!(
        msg.contains("rpcrdma, the NFS/RDMA client transport, cannot load (/etc/modprobe.d/nfslab.conf keeps it from loading)"),
        "{msg}"
    );
    assert!(fix.contains("modprobe rpcrdma"), "{fix}");
    sh(a, "rm /etc/modprobe.d/nfslab.conf && modprobe rpcrdma", 30);

    // The server's rollback: nfs.conf as it was, and nfsd restarted listens on TCP only.
    let out = sh(b, &format!("{BIN} setup --rollback {server_rollback}"), 60);
    assert!(out.contains("/etc/nfs.conf"), "{out}");
    let ports = start_nfsd(b, false);
    assert!(
        !ports.contains("rdma") && ports.contains("tcp 2049"),
        "after the rollback: {ports}"
    );
    let doc = linerate_json(b, "probe --json", 120);
    assert_eq!(findings(&doc, "nfs.no_rdma_listener").len(), 1, "{doc}");
    // So the client's mount over RDMA is refused: the server does not listen for RDMA.
    let err = failing_mount(a, "/mnt/nfs");
    assert!(err.contains("Connection refused"), "{err}");
    let doc = linerate_json(a, "probe --json", 120);
    let (msg, fix) = mount_fails(&doc, "/mnt/nfs");
    assert!(
        msg.contains("the server does not listen for NFS over RDMA: 198.18.0.2 refuses an RDMA connection on port 20049"),
        "{msg}"
    );
    assert!(
        fix.contains("echo 'rdma 20049' > /proc/fs/nfsd/portlist"),
        "{fix}"
    );
}
