//! Every fixture distribution (`fixtures/etc/*`) combined with a sysfs tree: the ipoib plan is
//! the right file in the right syntax, applying it writes exactly that, a second plan is empty,
//! and rollback restores byte-identical files.

use std::fs;
use std::path::{Path, PathBuf};

use linerate_facts::{Plan, Topic, When};
use linerate_setup::{apply, build_plan, Options, Snapshot};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

use linerate_testkit::{copy_tree, read_tree};

/// A root holding a sysfs fixture and an etc fixture.
pub fn root(sysfs: &str, etc: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("fixtures/sysfs").join(sysfs), t.path());
    copy_tree(&repo().join("fixtures/etc").join(etc), t.path());
    t
}

fn plan(root: &Path, topics: &[Topic]) -> Plan {
    let inv = linerate_inventory::probe(root).unwrap();
    let analysis = linerate_rules::analyze(&inv);
    let snap = Snapshot::read(root);
    build_plan(topics, &inv, &analysis, &snap, &Options::default())
}

struct Case {
    etc: &'static str,
    path: &'static str,
    /// Lines the new file must hold.
    has: &'static [&'static str],
    /// Lines of the original that must survive.
    keeps: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        etc: "debian12-ifupdown",
        path: "/etc/network/interfaces",
        has: &[
            "\tmtu 65520",
            "\tpre-up echo connected > /sys/class/net/$IFACE/mode",
        ],
        keeps: &[
            "\taddress 10.10.0.11/24",
            "iface eno1 inet dhcp",
            "\t# no gateway on the fabric",
            "source /etc/network/interfaces.d/*",
        ],
    },
    Case {
        etc: "ubuntu2404-netplan-networkd",
        path: "/etc/netplan/50-cloud-init.yaml",
        has: &["      infiniband-mode: connected", "      mtu: 65520"],
        keeps: &[
            "        - 10.10.0.12/24",
            "          via: 10.10.0.1",
            "        macaddress: \"3c:ec:ef:12:34:56\"",
            "# to it will not persist across an instance reboot.",
        ],
    },
    Case {
        etc: "ubuntu2204-netplan-nm",
        path: "/etc/netplan/01-network-manager-all.yaml",
        has: &["      infiniband-mode: connected", "      mtu: 65520"],
        keeps: &[
            "      addresses: [192.168.50.7/24]",
            "        addresses: [192.168.50.1]",
            "  renderer: NetworkManager",
        ],
    },
    Case {
        etc: "rhel9-nm-keyfile",
        path: "/etc/NetworkManager/system-connections/ib0.nmconnection",
        has: &["transport-mode=connected", "mtu=65520"],
        keeps: &[
            "uuid=6c2b7f8e-3a51-4d0e-9d7c-2f9e1b6a4c11",
            "address1=10.10.0.14/24",
            "[proxy]",
        ],
    },
    Case {
        etc: "rhel7-ifcfg",
        path: "/etc/sysconfig/network-scripts/ifcfg-ib0",
        has: &["CONNECTED_MODE=yes", "MTU=65520"],
        keeps: &["IPADDR=10.10.0.15", "PREFIX=24", "NM_CONTROLLED=no"],
    },
    Case {
        etc: "arch-networkd",
        path: "/etc/systemd/network/20-ib0.network",
        has: &["[IPoIB]", "Mode=connected", "[Link]", "MTUBytes=65520"],
        keeps: &[
            "Address=10.10.0.16/24",
            "# the fabric has no router",
            "LinkLocalAddressing=no",
        ],
    },
];

#[test]
fn ipoib_plan_apply_idempotent_rollback_for_every_distribution() {
    for c in CASES {
        let t = root("cx3-fdr-at-qdr-datagram", c.etc);
        let r = t.path();
        let before = read_tree(&r.join("etc"));
        let p = plan(r, &[Topic::Ipoib]);
        assert!(p.refusals.is_empty(), "{}: {:?}", c.etc, p.refusals);
        let files = p.files();
        assert_eq!(files.len(), 1, "{}: {files:?}", c.etc);
        let f = files[0];
        assert_eq!(f.path, c.path, "{}", c.etc);
        let lines: Vec<&str> = f.content.lines().collect();
        for l in c.has.iter().chain(c.keeps) {
            assert!(
                lines.contains(l),
                "{}: {l:?} missing from\n{}",
                c.etc,
                f.content
            );
        }
        let step = &p.steps[0];
        assert!(step
            .why
            .iter()
            .any(|w| w.finding == Some(linerate_facts::FindingId::IpoibDatagramMode)));
        assert!(step.commands.iter().any(|c| c.when == When::Restart));

        let owned: Vec<_> = p.files().into_iter().cloned().collect();
        let (id, _) = apply::apply(r, &owned).unwrap();
        let after = read_tree(&r.join("etc"));
        let changed: Vec<_> = before.keys().filter(|k| before[*k] != after[*k]).collect();
        assert_eq!(
            changed,
            vec![&r.join(c.path.trim_start_matches('/'))],
            "{}: only the planned file changed",
            c.etc
        );
        assert_eq!(
            after.len(),
            before.len(),
            "{}: no file added under etc",
            c.etc
        );
        assert_eq!(
            fs::read_to_string(r.join(c.path.trim_start_matches('/'))).unwrap(),
            f.content
        );

        let again = plan(r, &[Topic::Ipoib]);
        assert!(
            again.is_empty(),
            "{}: a second plan is empty: {:?}",
            c.etc,
            again.steps
        );
        assert!(
            again.notes.iter().any(|n| n.text.contains("nothing to do")),
            "{}",
            c.etc
        );

        apply::rollback(r, &id).unwrap();
        assert_eq!(
            read_tree(&r.join("etc")),
            before,
            "{}: rollback restores byte-identical files",
            c.etc
        );
    }
}

#[test]
fn enhanced_ipoib_is_refused_with_the_reason() {
    for etc in ["rhel9-nm-keyfile", "ubuntu2404-netplan-networkd"] {
        let t = root("cx5-edr-enhanced-ipoib", etc);
        let p = plan(t.path(), &[Topic::Ipoib]);
        assert!(p.is_empty(), "{etc}: nothing written for enhanced IPoIB");
        assert_eq!(p.refusals.len(), 1, "{etc}");
        let r = &p.refusals[0];
        assert_eq!(r.subject, "ib0");
        assert!(
            r.reason.contains("enhanced IPoIB") && r.reason.contains("4092"),
            "{}",
            r.reason
        );
        assert!(r
            .would_change
            .as_deref()
            .unwrap_or("")
            .contains("ipoib_enhanced=0"));
    }
}

#[test]
fn versions_decide_and_are_reported() {
    let t = root("cx3-fdr-at-qdr-datagram", "ubuntu2404-netplan-networkd");
    let p = plan(t.path(), &[Topic::Ipoib]);
    assert!(
        p.notes.iter().any(|n| n.text.contains("netplan.io 1.0.1")),
        "{:?}",
        p.notes
    );
    let t = root("cx3-fdr-at-qdr-datagram", "arch-networkd");
    let p = plan(t.path(), &[Topic::Ipoib]);
    assert!(
        p.notes
            .iter()
            .any(|n| n.text.contains("systemd's version is unknown")),
        "{:?}",
        p.notes
    );
    // An old netplan: refused, with the version.
    let status = t.path().join("var/lib/dpkg/status");
    fs::create_dir_all(status.parent().unwrap()).unwrap();
    let t2 = root("cx3-fdr-at-qdr-datagram", "ubuntu2404-netplan-networkd");
    fs::write(
        t2.path().join("var/lib/dpkg/status"),
        "Package: netplan.io\nStatus: install ok installed\nVersion: 0.104-0ubuntu2\n\n",
    )
    .unwrap();
    let p = plan(t2.path(), &[Topic::Ipoib]);
    assert!(p.is_empty());
    assert!(p.refusals[0].reason.contains("0.104"), "{:?}", p.refusals);
}

#[test]
fn a_broken_netplan_file_is_named_not_edited() {
    let t = root("cx3-fdr-at-qdr-datagram", "ubuntu2404-netplan-networkd");
    let f = t.path().join("etc/netplan/50-cloud-init.yaml");
    fs::write(&f, "network:\n  ethernets:\n    ib0: [unclosed\n").unwrap();
    let p = plan(t.path(), &[Topic::Ipoib]);
    assert!(p.is_empty());
    let r = &p.refusals[0].reason;
    assert!(
        r.contains("50-cloud-init.yaml") && r.contains("not valid YAML"),
        "{r}"
    );
}

#[test]
fn irq_uses_the_vendor_script_when_installed() {
    let t = root("cx3-fdr-at-qdr-datagram", "debian12-ifupdown");
    let p = plan(t.path(), &[Topic::Irq]);
    assert_eq!(p.files().len(), 1);
    assert_eq!(
        p.files()[0].path,
        "/etc/systemd/system/linerate-irq-ib0.service"
    );
    assert!(p.files()[0]
        .content
        .contains("echo 0-13 > /proc/irq/$$i/smp_affinity_list"));
    fs::create_dir_all(t.path().join("usr/sbin")).unwrap();
    fs::write(
        t.path().join("usr/sbin/set_irq_affinity_cpulist.sh"),
        "#!/bin/sh\n",
    )
    .unwrap();
    fs::write(t.path().join("usr/sbin/mlnx_tune"), "#!/bin/sh\n").unwrap();
    let p = plan(t.path(), &[Topic::Irq]);
    assert!(p.files().is_empty());
    let runs: Vec<&str> = p.steps[0].commands.iter().map(|c| c.run.as_str()).collect();
    assert!(
        runs.contains(&"set_irq_affinity_cpulist.sh 0-13 ib0"),
        "{runs:?}"
    );
    assert!(runs.contains(&"mlnx_tune -r"), "{runs:?}");
}

#[test]
fn sysctl_never_lowers_what_the_user_raised() {
    let t = root("cx3-fdr-at-qdr-datagram", "debian12-ifupdown");
    fs::create_dir_all(t.path().join("etc/sysctl.d")).unwrap();
    fs::write(
        t.path().join("etc/sysctl.d/99-site.conf"),
        "# site tuning\nnet.core.rmem_max = 1073741824\nnet/ipv4/tcp_wmem = 8192 65536 16777216\n",
    )
    .unwrap();
    let p = plan(t.path(), &[Topic::Sysctl]);
    let c = &p.files()[0].content;
    assert!(
        c.lines().any(|l| l == "net.core.rmem_max = 1073741824"),
        "{c}"
    );
    assert!(
        c.lines().any(|l| l == "net.core.wmem_max = 268435456"),
        "{c}"
    );
    assert!(
        c.lines()
            .any(|l| l == "net.ipv4.tcp_wmem = 8192 65536 134217728"),
        "{c}"
    );
    // Everything already higher: nothing to write.
    fs::write(
        t.path().join("etc/sysctl.d/99-site.conf"),
        "net.core.rmem_max = 1073741824\nnet.core.wmem_max = 1073741824\nnet.ipv4.tcp_rmem = 4096 131072 1073741824\nnet.ipv4.tcp_wmem = 4096 65536 1073741824\n",
    )
    .unwrap();
    let p = plan(t.path(), &[Topic::Sysctl]);
    assert!(p.is_empty(), "{:?}", p.steps);
    assert!(p.notes[0].text.contains("already at or above"));
}

/// `governor` on acpi-cpufreq's powersave (`cpu-powersave-acpi`): a unit where nothing else sets
/// the governor, tuned's own profile where tuned is in charge; applied, planned again (nothing
/// to do), rolled back byte for byte. intel_pstate's powersave is left alone.
#[test]
fn governor_through_what_is_in_charge_then_idempotent_and_rolled_back() {
    for (etc, tuned) in [("debian12-ifupdown", false), ("rhel9-nm-keyfile", true)] {
        let t = root("cpu-powersave-acpi", etc);
        let r = t.path();
        if tuned {
            fs::create_dir_all(r.join("etc/tuned")).unwrap();
            fs::write(
                r.join("etc/tuned/active_profile"),
                "throughput-performance\n",
            )
            .unwrap();
        }
        let before = read_tree(&r.join("etc"));
        let p = plan(r, &[Topic::Governor]);
        let files = p.files();
        assert_eq!(files.len(), 1, "{etc}: {:?}", p.notes);
        let want = if tuned {
            linerate_setup::governor::tuned_profile_path()
        } else {
            linerate_setup::governor::UNIT.to_string()
        };
        assert_eq!(files[0].path, want, "{etc}");
        assert!(files[0].content.contains("performance"), "{etc}");
        assert_eq!(
            p.steps[0].why[0].finding,
            Some(linerate_facts::FindingId::CpuPowersave)
        );
        let owned: Vec<_> = files.into_iter().cloned().collect();
        let (id, _) = apply::apply(r, &owned).unwrap();
        assert_eq!(
            fs::read_to_string(r.join(want.trim_start_matches('/'))).unwrap(),
            owned[0].content
        );
        if tuned {
            // tuned now runs linerate's profile: the plan builds on the one it includes.
            fs::write(r.join("etc/tuned/active_profile"), "linerate-performance\n").unwrap();
        }
        let again = plan(r, &[Topic::Governor]);
        assert!(again.is_empty(), "{etc}: {:?}", again.steps);
        if tuned {
            fs::write(
                r.join("etc/tuned/active_profile"),
                "throughput-performance\n",
            )
            .unwrap();
        }
        apply::rollback(r, &id).unwrap();
        assert_eq!(read_tree(&r.join("etc")), before, "{etc}: rollback");
    }
    let t = root("cpu-powersave-pstate", "debian12-ifupdown");
    let p = plan(t.path(), &[Topic::Governor]);
    assert!(p.is_empty(), "{:?}", p.steps);
    assert!(
        p.notes[0].text.contains("nothing to change"),
        "{:?}",
        p.notes
    );
}

/// `rings`: the ring `ring.drops` names, in a systemd .link file on Debian 12 (systemd 252)
/// and in the NetworkManager profile that runs the port on RHEL 9; applied, nothing left to
/// do, rolled back byte for byte.
#[test]
fn rings_through_a_link_file_or_the_networkmanager_profile() {
    for (etc, nm) in [("debian12-ifupdown", false), ("rhel9-nm-keyfile", true)] {
        let t = root("x520-optics-no-light", etc);
        let r = t.path();
        let profile = "etc/NetworkManager/system-connections/uplink.nmconnection";
        if nm {
            fs::write(
                r.join(profile),
                "[connection]\nid=uplink\nuuid=0b9e2c43-5d1f-4f6a-9a0e-6d2f3c1b7a55\ntype=ethernet\ninterface-name=enp3s0f1\n\n[ipv4]\nmethod=auto\n",
            )
            .unwrap();
        }
        let before = read_tree(&r.join("etc"));
        let p = plan(r, &[Topic::Rings]);
        let files = p.files();
        assert_eq!(files.len(), 1, "{etc}: {:?} {:?}", p.notes, p.refusals);
        let want = if nm {
            format!("/{profile}")
        } else {
            linerate_setup::rings::link_path("enp3s0f1")
        };
        assert_eq!(files[0].path, want, "{etc}");
        let line = if nm {
            "ring-rx=4096"
        } else {
            "RxBufferSize=4096"
        };
        assert!(
            files[0].content.contains(line),
            "{etc}: {}",
            files[0].content
        );
        if nm {
            assert!(
                files[0].content.contains("uuid=0b9e2c43"),
                "{etc}: the profile is kept"
            );
        }
        assert!(p.steps[0]
            .commands
            .iter()
            .any(|c| c.run == "ethtool -G enp3s0f1 rx 4096" && c.when == When::AfterApply));
        assert_eq!(
            p.steps[0].why[0].finding,
            Some(linerate_facts::FindingId::RingDrops)
        );
        let owned: Vec<_> = files.into_iter().cloned().collect();
        let (id, _) = apply::apply(r, &owned).unwrap();
        assert_eq!(
            fs::read_to_string(r.join(want.trim_start_matches('/'))).unwrap(),
            owned[0].content
        );
        let again = plan(r, &[Topic::Rings]);
        assert!(again.is_empty(), "{etc}: {:?}", again.steps);
        apply::rollback(r, &id).unwrap();
        assert_eq!(read_tree(&r.join("etc")), before, "{etc}: rollback");
    }
}

/// `roce` over the RoCE fixtures with netplan in charge: MTU 9000 in the netplan file where
/// `roce.mtu_small` asks for it (`cx5-roce-100g-mtu1500`), and the lossless unit where
/// `roce.lossy` does (`cx5-roce-lossy`: PFC off, MLNX_OFED's ECN switches off); each applied,
/// planned again (nothing to do), rolled back byte for byte.
#[test]
fn roce_mtu_and_lossless_unit_then_idempotent_and_rolled_back() {
    let netplan = "/etc/netplan/60-fabric.yaml";
    let unit = linerate_setup::roce::unit_path("enp65s0f0np0");
    for (sysfs, path, finding) in [
        (
            "cx5-roce-100g-mtu1500",
            netplan.to_string(),
            linerate_facts::FindingId::RoceMtuSmall,
        ),
        (
            "cx5-roce-lossy",
            unit.clone(),
            linerate_facts::FindingId::RoceLossy,
        ),
    ] {
        let t = root(sysfs, "ubuntu2404-netplan-roce");
        let r = t.path();
        let before = read_tree(&r.join("etc"));
        let p = plan(r, &[Topic::Roce]);
        let files = p.files();
        assert_eq!(files.len(), 1, "{sysfs}: {:?} {:?}", p.notes, p.refusals);
        assert_eq!(files[0].path, path, "{sysfs}");
        assert_eq!(p.steps[0].why[0].finding, Some(finding), "{sysfs}");
        if path == netplan {
            let c = &files[0].content;
            assert!(
                c.contains(
                    "    enp65s0f0:\n      addresses:\n        - 10.10.5.1/24\n      mtu: 9000\n"
                ),
                "{c}"
            );
            // The other interfaces and the comment are kept.
            assert!(
                c.contains("# The RoCE fabric") && c.contains("      mtu: 9000\n"),
                "{c}"
            );
            assert!(p.steps[0].commands.iter().any(|c| c.when == When::Restart));
        } else {
            let c = &files[0].content;
            for line in [
                "ExecStart=/usr/sbin/dcb pfc set dev enp65s0f0np0 prio-pfc all:off 3:on",
                "ExecStart=/usr/sbin/dcb app replace dev enp65s0f0np0 dscp-prio 26:3",
                "ExecStart=/bin/sh -c 'echo 1 > /sys/class/net/enp65s0f0np0/ecn/roce_np/enable/3 && echo 1 > /sys/class/net/enp65s0f0np0/ecn/roce_rp/enable/3'",
                "ExecStart=/bin/sh -c 'mkdir -p /sys/kernel/config/rdma_cm/mlx5_0 && echo 106 > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos'",
                "BindsTo=sys-subsystem-net-devices-enp65s0f0np0.device",
                "WantedBy=sys-subsystem-net-devices-enp65s0f0np0.device multi-user.target",
                "Type=oneshot",
            ] {
                assert!(c.contains(line), "{line} not in {c}");
            }
            assert_eq!(files[0].mode, 0o644);
            assert!(p.steps[0].commands[0]
                .run
                .contains("systemctl enable --now linerate-roce-enp65s0f0np0.service"));
        }
        let owned: Vec<_> = files.into_iter().cloned().collect();
        let (id, _) = apply::apply(r, &owned).unwrap();
        assert_eq!(
            fs::read_to_string(r.join(path.trim_start_matches('/'))).unwrap(),
            owned[0].content
        );
        let again = plan(r, &[Topic::Roce]);
        assert!(again.is_empty(), "{sysfs}: {:?}", again.steps);
        apply::rollback(r, &id).unwrap();
        assert_eq!(read_tree(&r.join("etc")), before, "{sysfs}: rollback");
    }
    // Set up as it should be: nothing to write, and said so.
    let t = root("cx6dx-roce-lossless", "ubuntu2404-netplan-roce");
    let p = plan(t.path(), &[Topic::Roce]);
    assert!(p.is_empty(), "{:?}", p.steps);
    assert!(
        p.notes.iter().any(|n| n.text.contains("protected")),
        "{:?}",
        p.notes
    );
}
