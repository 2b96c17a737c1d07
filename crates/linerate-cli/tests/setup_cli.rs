//! `linerate setup` end to end under `--root` fixture roots (a sysfs tree plus an etc tree from
//! `fixtures/etc`): the JSON matches its schema, `--apply` writes, a second `--apply` writes
//! nothing, `--rollback` restores byte-identical files, and the real tools (`netplan generate`,
//! `systemd-analyze verify`, `sysctl -p`) accept what was written.

use linerate_testkit::schema;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_linerate");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

use linerate_testkit::{copy_tree, read_tree};

fn root(sysfs: &str, etc: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("fixtures/sysfs").join(sysfs), t.path());
    copy_tree(&repo().join("fixtures/etc").join(etc), t.path());
    t
}

fn setup(root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("setup")
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn setup_json(root: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    let (code, out, err) = setup(root, &a);
    assert_eq!(code, 0, "setup {args:?}: {err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    schema::assert_matches("setup.schema.json", &v);
    v
}

const ETC: [&str; 6] = [
    "debian12-ifupdown",
    "ubuntu2404-netplan-networkd",
    "ubuntu2204-netplan-nm",
    "rhel9-nm-keyfile",
    "rhel7-ifcfg",
    "arch-networkd",
];

#[test]
fn every_topic_prints_a_valid_document_for_every_distribution() {
    for etc in ETC {
        for sysfs in ["cx3-fdr-at-qdr-datagram", "cx5-edr-enhanced-ipoib"] {
            let t = root(sysfs, etc);
            for topic in [
                "ipoib",
                "opensm",
                "nfs-rdma",
                "sysctl",
                "irq",
                "governor",
                "rdma-stack",
                "all",
            ] {
                let v = setup_json(t.path(), &[topic]);
                assert_eq!(v["action"], "print");
                assert!(v["applied"].is_null());
            }
            let (code, text, err) = setup(t.path(), &["all"]);
            assert_eq!(code, 0, "{err}");
            assert!(
                text.contains("nothing was changed") || text.contains("nothing to do"),
                "{text}"
            );
        }
    }
}

#[test]
fn apply_twice_then_rollback_through_the_cli() {
    for etc in ETC {
        let t = root("cx3-fdr-at-qdr-datagram", etc);
        let r = t.path();
        let before = read_tree(&r.join("etc"));
        let first = setup_json(r, &["all", "--apply"]);
        let id = first["applied"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{etc}: {first}"))
            .to_string();
        let written: Vec<&str> = first["applied"]["written"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert!(!written.is_empty(), "{etc}");
        for w in &written {
            let planned = first["plan"]["steps"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["files"].as_array().unwrap().iter())
                .find(|f| f["path"] == *w)
                .unwrap();
            assert_eq!(
                fs::read_to_string(r.join(w.trim_start_matches('/'))).unwrap(),
                planned["content"].as_str().unwrap(),
                "{etc} {w}"
            );
        }
        let second = setup_json(r, &["all", "--apply"]);
        assert!(
            second["applied"]["id"].is_null(),
            "{etc}: second apply writes nothing: {second}"
        );
        assert_eq!(
            second["plan"]["steps"].as_array().unwrap().len(),
            0,
            "{etc}"
        );
        let (_, text, _) = setup(r, &["all", "--apply"]);
        assert!(text.contains("nothing to do"), "{etc}: {text}");
        let rb = setup_json(r, &["--rollback", &id]);
        assert_eq!(rb["action"], "rollback");
        assert_eq!(
            read_tree(&r.join("etc")),
            before,
            "{etc}: rollback restores byte-identical files"
        );
    }
}

#[test]
fn bad_input_is_named() {
    let t = root("cx3-fdr-at-qdr-datagram", "debian12-ifupdown");
    let (code, _, err) = setup(t.path(), &["--rollback", "../x"]);
    assert_eq!(code, 2);
    assert!(err.contains("rollback id"), "{err}");
    let (code, _, err) = setup(t.path(), &["--rollback", "123-1"]);
    assert_eq!(code, 2);
    assert!(err.contains("no backup"), "{err}");
    let (code, _, err) = setup(t.path(), &["sysctl", "--rtt-ms=0"]);
    assert_eq!(code, 2);
    assert!(err.contains("--rtt-ms"), "{err}");
    let (code, _, err) = setup(t.path(), &["ipoib", "--apply", "--restart"]);
    assert_eq!(code, 2);
    assert!(err.contains("--restart"), "{err}");
    let (code, _, err) = setup(Path::new("/nonexistent-linerate-root"), &["ipoib"]);
    assert_eq!(code, 2);
    assert!(err.contains("--root"), "{err}");
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn netplan_generate_accepts_the_written_yaml() {
    if !have("netplan") {
        linerate_testkit::skip("netplan is not installed (Debian package netplan.io)");
        return;
    }
    for (etc, generated, needles) in [
        (
            "ubuntu2404-netplan-networkd",
            "run/systemd/network/10-netplan-ib0.network",
            &[
                "[IPoIB]",
                "Mode=connected",
                "MTUBytes=65520",
                "Address=10.10.0.12/24",
            ][..],
        ),
        (
            "ubuntu2204-netplan-nm",
            "run/NetworkManager/system-connections/netplan-ib0.nmconnection",
            &[
                "transport-mode=connected",
                "mtu=65520",
                "address1=192.168.50.7/24",
            ][..],
        ),
    ] {
        let t = root("cx3-fdr-at-qdr-datagram", etc);
        let r = t.path();
        // netplan warns about world-readable files; the fixture's mode is git's 0644.
        for (p, _) in read_tree(&r.join("etc/netplan")) {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        }
        setup_json(r, &["ipoib", "--apply"]);
        let out = Command::new("netplan")
            .arg("generate")
            .arg("--root-dir")
            .arg(r)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{etc}: netplan generate: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = fs::read_to_string(r.join(generated))
            .unwrap_or_else(|e| panic!("{etc}: {generated}: {e}"));
        let lines: Vec<&str> = text.lines().collect();
        for n in needles {
            assert!(
                lines.contains(n),
                "{etc}: {n:?} missing from {generated}:\n{text}"
            );
        }
    }
}

#[test]
fn sysctl_parses_the_written_file_in_a_throwaway_namespace() {
    let t = root("cx3-fdr-at-qdr-datagram", "debian12-ifupdown");
    let r = t.path();
    let v = setup_json(r, &["sysctl", "--apply", "--rtt-ms", "20"]);
    let written = v["applied"]["written"][0].as_str().unwrap().to_string();
    assert_eq!(written, "/etc/sysctl.d/90-linerate.conf");
    let file = r.join(written.trim_start_matches('/'));
    let text = fs::read_to_string(&file).unwrap();
    // The parse check that needs no tool: comments, or `key = numbers`.
    let mut values = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let (k, v) = l
            .split_once(" = ")
            .unwrap_or_else(|| panic!("not `key = value`: {l:?}"));
        assert!(
            k.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '_'),
            "{k}"
        );
        assert!(v.split(' ').all(|n| n.parse::<u64>().is_ok()), "{v}");
        values.insert(k.to_string(), v.to_string());
    }
    // 32 Gb/s at 20 ms: BDP 80 MB, twice that rounds up to 256 MiB, above the 10G tier's 128 MiB.
    assert_eq!(
        values["net.ipv4.tcp_rmem"], "4096 131072 268435456",
        "the running default 131072 is kept"
    );
    assert_eq!(values["net.core.rmem_max"], "268435456");
    if !have("sysctl") || !have("unshare") {
        linerate_testkit::skip("sysctl or unshare is not installed (procps, util-linux)");
        return;
    }
    // tcp_rmem and tcp_wmem are per network namespace: load the file in a new one and read them
    // back there (net.core.*mem_max are the host's and are refused inside; that is expected).
    let out = Command::new("unshare")
        .arg("-n")
        .arg("sh")
        .arg("-c")
        .arg(format!("sysctl -p '{}' >/dev/null; cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem", file.display()))
        .output()
        .unwrap();
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("unshare") {
        linerate_testkit::skip(format!(
            "cannot make a network namespace: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    for l in err.lines() {
        assert!(
            l.contains("net.core."),
            "sysctl -p complained about more than the host-wide keys: {err}"
        );
    }
    let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        got,
        vec![
            values["net.ipv4.tcp_rmem"].clone(),
            values["net.ipv4.tcp_wmem"].clone()
        ]
    );
}

/// `systemd-analyze verify` on a unit, with its drop-ins next to it; its complaints.
fn verify_unit(unit: &Path) -> String {
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(unit)
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        if out.status.success() { "" } else { "(failed)" }
    )
}

#[test]
fn opensm_nfs_irq_on_a_fabric_without_subnet_manager() {
    let t = root("cx4-edr-no-sm", "arch-networkd");
    let r = t.path();
    fs::write(
        r.join("etc/exports"),
        "# exports\n/srv/data 10.10.0.0/24(rw,no_subtree_check,insecure)\n",
    )
    .unwrap();
    fs::write(r.join("etc/fstab"), "UUID=1234 / ext4 defaults 0 1\n").unwrap();
    // Without --sm-node: refused, with the one-master rule.
    let v = setup_json(r, &["opensm"]);
    let refusal = &v["plan"]["refusals"][0];
    assert_eq!(refusal["subject"], "ib0");
    assert!(
        refusal["reason"].as_str().unwrap().contains("one master"),
        "{refusal}"
    );
    let before = read_tree(&r.join("etc"));
    let v = setup_json(
        r,
        &[
            "all",
            "--apply",
            "--sm-node",
            "--nfs-mount",
            "st1:/export/data",
        ],
    );
    let written: Vec<String> = v["applied"]["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    for want in [
        "/etc/opensm/opensm.conf",
        "/etc/systemd/system/nfs-server.service.d/90-linerate-rdma.conf",
        "/etc/modules-load.d/linerate-nfs-rdma.conf",
        "/etc/fstab",
        "/etc/systemd/system/linerate-irq-ib0.service",
    ] {
        assert!(
            written.iter().any(|w| w == want),
            "{want} not in {written:?}"
        );
    }
    let read = |p: &str| fs::read_to_string(r.join(p.trim_start_matches('/'))).unwrap();
    assert!(read("/etc/opensm/opensm.conf")
        .lines()
        .any(|l| l == "guid 0xec0d9a030044c158"));
    assert!(read("/etc/opensm/opensm.conf")
        .lines()
        .any(|l| l == "sm_priority 15"));
    assert_eq!(read("/etc/fstab"), "UUID=1234 / ext4 defaults 0 1\nst1:/export/data /mnt/data nfs proto=rdma,port=20049,_netdev 0 0\n");
    // Idempotent.
    let again = setup_json(
        r,
        &[
            "all",
            "--apply",
            "--sm-node",
            "--nfs-mount",
            "st1:/export/data",
        ],
    );
    assert!(again["applied"]["id"].is_null(), "{again}");
    if have("systemd-analyze") {
        let unit = r.join("etc/systemd/system/linerate-irq-ib0.service");
        let e = verify_unit(&unit);
        assert!(
            e.trim().is_empty(),
            "systemd-analyze verify {}: {e}",
            unit.display()
        );
        // The drop-in, on a stand-in for nfs-server.service (not installed here).
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("nfs-server.service.d")).unwrap();
        fs::write(
            d.path().join("nfs-server.service"),
            "[Service]\nType=oneshot\nExecStart=/bin/true\n",
        )
        .unwrap();
        fs::copy(
            r.join("etc/systemd/system/nfs-server.service.d/90-linerate-rdma.conf"),
            d.path().join("nfs-server.service.d/90-linerate-rdma.conf"),
        )
        .unwrap();
        let e = verify_unit(&d.path().join("nfs-server.service"));
        assert!(
            e.trim().is_empty(),
            "systemd-analyze verify of the drop-in: {e}"
        );
    } else {
        linerate_testkit::skip("systemd-analyze is not installed (Debian package systemd)");
    }
    let id = v["applied"]["id"].as_str().unwrap();
    setup_json(r, &["--rollback", id]);
    assert_eq!(
        read_tree(&r.join("etc")),
        before,
        "rollback restores byte-identical files and removes the created ones"
    );
}

#[test]
fn opensm_on_red_hat_and_nfs_conf_on_debian() {
    let t = root("cx4-edr-no-sm", "rhel9-nm-keyfile");
    let v = setup_json(t.path(), &["opensm", "--sm-node"]);
    let files = &v["plan"]["steps"][0]["files"];
    assert_eq!(files[0]["path"], "/etc/rdma/opensm.conf", "{v}");
    let cmds: Vec<&str> = v["plan"]["steps"][0]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["run"].as_str().unwrap())
        .collect();
    assert!(cmds.contains(&"dnf install -y opensm"), "{cmds:?}");
    let t = root("cx4-edr-no-sm", "debian12-ifupdown");
    let v = setup_json(t.path(), &["nfs-rdma"]);
    let f = &v["plan"]["steps"][0]["files"][0];
    assert_eq!(
        f["path"], "/etc/nfs.conf",
        "nfs-kernel-server 2.6.2 knows rdma=: {v}"
    );
    assert_eq!(f["content"], "[nfsd]\nrdma=y\nrdma-port=20049\n");
}

#[test]
fn a_failed_write_mid_apply_restores_the_files_already_written() {
    let t = root("cx3-fdr-at-qdr-datagram", "rhel7-ifcfg");
    let r = t.path();
    // A regular file where sysctl's directory should be: the ipoib file is written first, then
    // creating /etc/sysctl.d fails.
    fs::write(r.join("etc/sysctl.d"), "in the way\n").unwrap();
    let before = read_tree(&r.join("etc"));
    let (code, out, err) = setup(r, &["all", "--apply"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("/etc/sysctl.d/90-linerate.conf") && err.contains("restored"),
        "{err}"
    );
    assert_eq!(
        read_tree(&r.join("etc")),
        before,
        "everything written before the failure is restored"
    );
    assert!(fs::read_dir(r.join("var/backups/linerate-setup"))
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn a_renderer_that_does_not_configure_the_interface_is_refused() {
    let t = root("cx3-fdr-at-qdr-datagram", "rhel9-nm-keyfile");
    let v = setup_json(
        t.path(),
        &["ipoib", "--renderer", "netplan", "--iface", "ib0"],
    );
    assert!(v["plan"]["steps"].as_array().unwrap().is_empty());
    let reason = v["plan"]["refusals"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("--renderer netplan") && reason.contains("NetworkManager"),
        "{reason}"
    );
    let v = setup_json(t.path(), &["ipoib", "--iface", "eno9"]);
    assert!(
        v["plan"]["notes"][0]["text"]
            .as_str()
            .unwrap()
            .contains("eno9"),
        "{v}"
    );
}

#[test]
fn apply_on_this_machine_needs_root_and_says_so() {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let mut cmd = if uid.as_deref().is_ok_and(|u| u == "0") {
        if !have("setpriv") {
            linerate_testkit::skip(
                "running as root and setpriv (util-linux) is missing: cannot drop privileges",
            );
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    // As an unprivileged user nothing under / can be written anyway; the point is the message.
    let out = cmd
        .args(["setup", "ipoib", "--apply", "--root", "/"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && err.contains("setpriv") {
        linerate_testkit::skip(format!(
            "the test binary is not executable by uid 65534: {err}"
        ));
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("run them as root"), "{err}");
}

/// The RDMA stack's fixes on a host whose stack is missing its modules and limits: the
/// modules-load.d file, the limits.d file and the serve unit's drop-in written (the unit checked
/// by `systemd-analyze verify` with it), packages only said; rolled back to nothing.
#[test]
fn rdma_stack_writes_modules_limits_and_the_serve_drop_in_and_rolls_back() {
    let t = root("rdma-stack-missing", "debian12-ifupdown");
    let r = t.path();
    let before = read_tree(&r.join("etc"));
    let v = setup_json(r, &["rdma-stack", "--apply"]);
    let read = |p: &str| std::fs::read_to_string(r.join(p.trim_start_matches('/'))).unwrap();
    let modules = read("/etc/modules-load.d/linerate-rdma.conf");
    let listed: Vec<&str> = modules.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(listed, ["ib_ipoib", "ib_uverbs", "rdma_ucm"], "{modules}");
    let limits = read("/etc/security/limits.d/90-linerate-rdma.conf");
    assert!(
        limits.contains("*    soft    memlock    unlimited"),
        "{limits}"
    );
    assert!(
        limits.contains("*    hard    memlock    unlimited"),
        "{limits}"
    );
    let dropin = read("/etc/systemd/system/linerate-serve.service.d/90-linerate-memlock.conf");
    for want in [
        "[Service]",
        "LimitMEMLOCK=infinity",
        "PrivateDevices=no",
        "DeviceAllow=char-infiniband_verbs rw",
    ] {
        assert!(dropin.contains(want), "{want}: {dropin}");
    }
    // The package is said, not installed.
    let notes = v["plan"]["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n["text"]
            .as_str()
            .unwrap()
            .contains("apt install ibverbs-providers")),
        "{v}"
    );
    // The shipped unit with the drop-in passes systemd's own check.
    if have("systemd-analyze") {
        let dir = tempfile::tempdir().unwrap();
        let unit = dir.path().join("linerate-serve.service");
        // The shipped unit, on a stand-in for the binary and the man page (not installed here).
        let shipped =
            std::fs::read_to_string(repo().join("packaging/systemd/linerate-serve.service"))
                .unwrap();
        let stand_in: String = shipped
            .lines()
            .filter(|l| !l.starts_with("Documentation="))
            .map(|l| {
                if l.starts_with("ExecStart=") {
                    "ExecStart=/bin/true"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&unit, stand_in).unwrap();
        std::fs::create_dir(dir.path().join("linerate-serve.service.d")).unwrap();
        std::fs::write(
            dir.path()
                .join("linerate-serve.service.d/90-linerate-memlock.conf"),
            &dropin,
        )
        .unwrap();
        let complaints = verify_unit(&unit);
        assert!(
            complaints.trim().is_empty(),
            "systemd-analyze verify: {complaints}"
        );
    }
    // Applied twice: nothing more to write; then rolled back to the tree as it was.
    let again = setup_json(r, &["rdma-stack", "--apply"]);
    assert!(
        again["plan"]["steps"].as_array().unwrap().is_empty(),
        "{again}"
    );
    let id = v["applied"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no applied id: {v}"))
        .to_string();
    setup_json(r, &["--rollback", &id]);
    // The backups stay under /var/lib/linerate; /etc is as it was.
    assert_eq!(read_tree(&r.join("etc")), before);
}

/// A file bind-mounted over (a container's /etc/hosts, virtme's generated /etc/fstab) cannot be
/// replaced by a rename (EBUSY): apply rewrites it in place, backed up, and the rollback puts it
/// back the same way. In a private mount namespace, so nothing outside the test sees the mount.
#[test]
fn a_bind_mounted_file_is_rewritten_in_place_and_rolled_back() {
    if !have("unshare") || !have("mount") {
        linerate_testkit::skip("unshare or mount is not installed (util-linux, mount)");
        return;
    }
    let t = root("cx4-edr-no-sm", "debian12-ifupdown");
    let r = t.path();
    let outside = tempfile::NamedTempFile::new().unwrap();
    fs::write(outside.path(), "UUID=1234 / ext4 defaults 0 1\n").unwrap();
    fs::write(r.join("etc/fstab"), "placeholder under the mount\n").unwrap();
    let fstab = r.join("etc/fstab");
    let script = format!(
        "mount --bind '{src}' '{dst}' && '{bin}' setup nfs-rdma --nfs-mount st1:/export/data --apply --json --root '{root}' > '{root}/apply.json' && id=$(ls '{root}/var/backups/linerate-setup') && cp '{dst}' '{root}/after' && '{bin}' setup --rollback \"$id\" --root '{root}' >/dev/null && cp '{dst}' '{root}/rolled-back'",
        src = outside.path().display(),
        dst = fstab.display(),
        bin = BIN,
        root = r.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && (err.contains("unshare:") || err.contains("mount:")) {
        linerate_testkit::skip(format!(
            "cannot bind-mount in a private mount namespace: {}",
            err.trim()
        ));
        return;
    }
    assert!(out.status.success(), "{err}");
    let v: Value =
        serde_json::from_str(&fs::read_to_string(r.join("apply.json")).unwrap()).unwrap();
    // nfs-kernel-server is installed in this root but nothing is exported: a client only.
    assert_eq!(
        v["applied"]["written"],
        serde_json::json!(["/etc/fstab"]),
        "{v}"
    );
    assert!(
        v["plan"]["notes"]
            .to_string()
            .contains("configured as a client only"),
        "{}",
        v["plan"]["notes"]
    );
    // Written through the mount: the file outside the namespace is the one that changed.
    let want = "UUID=1234 / ext4 defaults 0 1\nst1:/export/data /mnt/data nfs proto=rdma,port=20049,_netdev 0 0\n";
    assert_eq!(fs::read_to_string(r.join("after")).unwrap(), want);
    assert_eq!(
        fs::read_to_string(r.join("rolled-back")).unwrap(),
        "UUID=1234 / ext4 defaults 0 1\n"
    );
    assert_eq!(
        fs::read_to_string(outside.path()).unwrap(),
        "UUID=1234 / ext4 defaults 0 1\n"
    );
    // The file under the mount point was never touched.
    assert_eq!(
        fs::read_to_string(&fstab).unwrap(),
        "placeholder under the mount\n"
    );
}

/// `setup roce` through the binary on a lossy RoCE port (`cx5-roce-lossy`: PFC off, MLNX_OFED's
/// ECN switches off) under netplan: the JSON matches its schema, the unit holds the priority
/// and DSCP asked for (`--roce-priority 4 --roce-dscp 34`: ToS 138), systemd accepts it
/// (`systemd-analyze verify`), a second `--apply` writes nothing, the rollback restores `etc/`.
#[test]
fn roce_writes_the_lossless_unit_and_rolls_back() {
    let t = root("cx5-roce-lossy", "ubuntu2404-netplan-roce");
    let r = t.path();
    let before = read_tree(&r.join("etc"));
    let (code, text, err) = setup(r, &["roce", "--roce-priority", "4", "--roce-dscp", "34"]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("roce.lossy"), "{text}");
    assert!(text.contains("prio-pfc all:off 4:on"), "{text}");
    let v = setup_json(
        r,
        &[
            "roce",
            "--roce-priority",
            "4",
            "--roce-dscp",
            "34",
            "--apply",
        ],
    );
    let path = "etc/systemd/system/linerate-roce-enp65s0f0np0.service";
    let unit = fs::read_to_string(r.join(path)).unwrap();
    for line in [
        "ExecStart=/usr/sbin/dcb pfc set dev enp65s0f0np0 prio-pfc all:off 4:on",
        "ExecStart=/usr/sbin/dcb app replace dev enp65s0f0np0 dscp-prio 34:4",
        "echo 138 > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
        "echo 1 > /sys/class/net/enp65s0f0np0/ecn/roce_np/enable/4",
    ] {
        assert!(unit.contains(line), "{line} not in {unit}");
    }
    if have("systemd-analyze") {
        let dir = tempfile::tempdir().unwrap();
        let u = dir.path().join("linerate-roce-enp65s0f0np0.service");
        fs::write(&u, &unit).unwrap();
        let complaints = verify_unit(&u);
        assert!(
            complaints.trim().is_empty(),
            "systemd-analyze verify: {complaints}"
        );
    } else {
        linerate_testkit::skip("systemd-analyze is not installed (Debian package systemd)");
    }
    // Out of range: refused with what it accepts.
    let (code, _, err) = setup(r, &["roce", "--roce-priority", "8"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--roce-priority"), "{err}");
    let again = setup_json(
        r,
        &[
            "roce",
            "--roce-priority",
            "4",
            "--roce-dscp",
            "34",
            "--apply",
        ],
    );
    assert!(
        again["plan"]["steps"].as_array().unwrap().is_empty(),
        "{again}"
    );
    let id = v["applied"]["id"].as_str().unwrap().to_string();
    setup_json(r, &["--rollback", &id]);
    assert_eq!(read_tree(&r.join("etc")), before);
}
