//! Below the port on a real kernel (the lab, docs/lab.md): what `linerate probe` reads through
//! ethtool's netlink family and rtnetlink, set against the `ethtool` binary's answer in the same
//! guest.
//!
//! - QEMU's virtio-net and e1000e answer ring, coalescing, pause and channel requests; what a
//!   driver does not implement (virtio's pause, e1000e's channels and module, both's FEC) is
//!   said as unsupported, never as a failure.
//! - `linerate setup rings --apply` writes the `.link` file, udev's `net_setup_link` (what runs
//!   when the interface appears at boot) applies it, and the kernel then reports the new ring.
//!   A TCG guest cannot outrun QEMU's e1000e (QEMU queues a frame rather than drop it when the
//!   ring is full), so the drops that call for it are the netdev's `rx_missed_errors` counter,
//!   bind-mounted over the sysfs file in the guest.
//! - netdevsim, built out of tree for the lab's kernel (`scripts/build-netdevsim.sh`), through
//!   the kernel's own paths: FEC set and read back, pause with its frame counters, a ring set,
//!   and SR-IOV VFs with a rate limit and a forced-down link, which probe names.

mod common;

use std::path::Path;

use common::lab::{self, findings, linerate_json, sh};
use linerate_lab::{Guest, LabSpec, Mac, NicModel, NicSpec};
use serde_json::Value;

fn spec() -> LabSpec {
    let nic = |model, mac: usize, ip: [u8; 4]| NicSpec {
        model,
        wire: Some("loop".into()),
        mac: Mac::lab(0, mac),
        slot: None,
        addr: Some((ip.into(), 24)),
        mtu: None,
    };
    LabSpec::single(
        vec![
            nic(
                NicModel::Virtio {
                    speed_mbps: Some(40_000),
                },
                0,
                [198, 18, 0, 1],
            ),
            nic(NicModel::E1000e, 1, [198, 18, 1, 1]),
        ],
        false,
    )
}

/// The netdev of NIC `i` by its MAC address (udev may rename it after the lab is up).
fn netdev_of(g: &Guest, i: usize) -> String {
    let mac = g.spec.nics[i].mac.to_string();
    let out = sh(
        g,
        &format!("for i in /sys/class/net/*; do [ \"$(cat $i/address)\" = {mac} ] && echo ${{i##*/}}; done; true"),
        30,
    );
    out.lines()
        .next()
        .unwrap_or_else(|| panic!("no netdev with {mac}"))
        .trim()
        .to_string()
}

/// The value of `label` under `section` of ethtool's report.
fn field(text: &str, section: &str, label: &str) -> Option<u64> {
    linerate_testkit::ethtool_field(text, section, label)
}

fn port<'a>(doc: &'a Value, netdev: &str) -> &'a Value {
    doc["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["netdev"] == netdev)
        .unwrap_or_else(|| panic!("no port {netdev}"))
}

/// `phy.unread` says `what` is unsupported.
fn unsupported(phy: &Value, what: &str) -> bool {
    phy["unread"].as_array().is_some_and(|u| {
        u.iter()
            .any(|x| x["what"] == what && x["why"] == "unsupported")
    })
}

/// 0 (what ethtool prints `n/a` for) is absent.
fn nz(v: &Value) -> Option<u64> {
    v.as_u64().filter(|x| *x > 0)
}

/// Rings, channels, coalescing and pause of `netdev` against `ethtool -g -l -c -a`; FEC and
/// the module against `--show-fec` and `-m` (a paravirtual NIC, `cage` false, is not asked for
/// a module).
fn agrees_with_ethtool(g: &Guest, phy: &Value, netdev: &str, cage: bool) {
    let run = |args: &str| {
        g.run(
            &format!("ethtool {args} {netdev}"),
            std::time::Duration::from_secs(30),
        )
        .unwrap()
    };
    let cur = "Current hardware settings:";
    let max = "Pre-set maximums:";
    let rings = run("-g");
    assert!(rings.success(), "{rings:?}");
    let r = &phy["rings"];
    assert_eq!(
        field(&rings.stdout, cur, "RX"),
        nz(&r["rx"]),
        "{netdev} rings {r}"
    );
    assert_eq!(field(&rings.stdout, cur, "TX"), nz(&r["tx"]), "{netdev}");
    assert_eq!(
        field(&rings.stdout, max, "RX"),
        nz(&r["rx_max"]),
        "{netdev}"
    );
    assert_eq!(
        field(&rings.stdout, max, "TX"),
        nz(&r["tx_max"]),
        "{netdev}"
    );
    let ch = run("-l");
    if ch.success() {
        let c = &phy["channels"];
        assert_eq!(
            field(&ch.stdout, cur, "Combined"),
            nz(&c["combined"]),
            "{netdev} {c}"
        );
        assert_eq!(
            field(&ch.stdout, max, "Combined"),
            nz(&c["combined_max"]),
            "{netdev}"
        );
    } else {
        assert!(ch.stderr.contains("not supported"), "{ch:?}");
        assert!(unsupported(phy, "channels"), "{netdev}: {phy}");
    }
    let co = run("-c");
    assert!(co.success(), "{co:?}");
    let usecs = co
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("rx-usecs:"))
        .map(|v| v.trim().parse::<u64>().ok());
    assert_eq!(
        usecs.flatten(),
        phy["coalesce"]["rx_usecs"].as_u64(),
        "{netdev}: {}",
        co.stdout
    );
    let pa = run("-a");
    if pa.success() {
        let on = |label: &str| {
            pa.stdout
                .lines()
                .find(|l| l.starts_with(label))
                .map(|l| l.ends_with("on"))
        };
        assert_eq!(
            on("RX:"),
            phy["pause"]["rx"].as_bool(),
            "{netdev}: {}",
            pa.stdout
        );
        assert_eq!(on("TX:"), phy["pause"]["tx"].as_bool(), "{netdev}");
    } else {
        assert!(unsupported(phy, "pause"), "{netdev}: {phy}");
    }
    for (what, args) in [("fec", "--show-fec"), ("module", "-m")] {
        if what == "module" && !cage {
            assert!(phy.get("module").is_none(), "{netdev}: {phy}");
            continue;
        }
        if !run(args).success() {
            assert!(unsupported(phy, what), "{netdev} {what}: {phy}");
        }
    }
}

#[test]
fn real_drivers_answer_below_the_port_and_setup_grows_a_ring() {
    let Some((lab, _serial)) = lab::boot(&spec()) else {
        return;
    };
    let g = lab.guest("a");
    // udev renames the NICs (eth0 → enp0s10) while the guest comes up: let it finish.
    sh(g, "udevadm settle --timeout=120", 180);
    let (virtio, e1000e) = (netdev_of(g, 0), netdev_of(g, 1));
    // The e1000e autonegotiates after it is brought up (seconds under TCG, longer on a busy
    // host): until its link is up the kernel reports no speed, which is no answer to check.
    // Wait for its carrier, at most 90 s (the probe then finds it down and the test says so).
    sh(
        g,
        &format!(
            "for i in $(seq 180); do [ \"$(cat /sys/class/net/{e1000e}/carrier 2>/dev/null)\" = 1 ] && exit 0; sleep 0.5; done; true"
        ),
        120,
    );
    let doc = linerate_json(g, "probe --json", 300);
    for (n, cage) in [(&virtio, false), (&e1000e, true)] {
        let phy = &port(&doc, n)["phy"];
        assert_eq!(phy["source"], "netlink", "{n}: {phy}");
        agrees_with_ethtool(g, phy, n, cage);
    }
    // The e1000e's 82574L: autonegotiated 1000baseT, its statistics read (rx_missed_errors and
    // rx_no_buffer_count among them), no channels.
    let e = &port(&doc, &e1000e)["phy"];
    assert_eq!(e["link_modes"]["speed_mbps"], 1000, "{e}");
    assert_eq!(e["link_modes"]["autoneg"], true);
    assert!(e["ring_drops"].get("rx_no_buffer_count").is_some(), "{e}");
    assert!(findings(&doc, "ring.drops").is_empty());

    // Drops at the e1000e's ring: the counter says 4242.
    sh(
        g,
        &format!(
            "echo 4242 > /tmp/rx_missed && mount --bind /tmp/rx_missed /sys/class/net/{e1000e}/statistics/rx_missed_errors"
        ),
        30,
    );
    let doc = linerate_json(g, "probe --json", 300);
    let f = findings(&doc, "ring.drops");
    assert_eq!(f.len(), 1, "{doc}");
    assert_eq!(f[0]["subject"], e1000e.as_str());
    assert_eq!(f[0]["evidence"]["ring.rx_target"], "4096", "{}", f[0]);
    let applied = linerate_json(
        g,
        &format!("setup rings --iface {e1000e} --apply --json"),
        300,
    );
    let link = format!("/etc/systemd/network/10-linerate-{e1000e}.link");
    let text = sh(g, &format!("cat {link}"), 30);
    assert!(text.contains("RxBufferSize=4096"), "{text}\n{applied}");
    // What udev runs when the interface appears (at boot): it applies the .link file.
    let udev = sh(
        g,
        &format!("udevadm test-builtin net_setup_link /sys/class/net/{e1000e} 2>&1"),
        120,
    );
    assert!(udev.contains(&link), "{udev}");
    let rings = sh(g, &format!("ethtool -g {e1000e}"), 30);
    assert_eq!(
        field(&rings, "Current hardware settings:", "RX"),
        Some(4096),
        "{rings}\n{udev}"
    );
    let doc = linerate_json(g, "probe --json", 300);
    assert_eq!(port(&doc, &e1000e)["phy"]["rings"]["rx"], 4096);
    // The drops counter stays (it counts since the driver started), the ring is at its maximum:
    // the finding says more queues, not a longer ring.
    let f = findings(&doc, "ring.drops");
    assert_eq!(f[0]["severity"], "info", "{}", f[0]);

    // Without CAP_NET_ADMIN the kernel refuses the module EEPROM (the e1000e's; the virtio
    // NIC has no cage and is not asked): probe says so, and what to run.
    let o = g
        .run(
            &format!(
                "setpriv --reuid=65534 --regid=65534 --clear-groups {} probe --json",
                common::BIN
            ),
            std::time::Duration::from_secs(300),
        )
        .unwrap();
    let doc: Value = serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
    let f = findings(&doc, "module.needs_privilege");
    assert_eq!(f.len(), 1, "{doc}");
    let refused = f[0]["evidence"]["ethtool MODULE_EEPROM_GET"]
        .as_str()
        .unwrap();
    assert!(
        refused.contains(&e1000e) && !refused.contains(&virtio),
        "{refused}"
    );
    assert!(f[0]["fix"]
        .as_str()
        .unwrap()
        .contains("sudo linerate probe"));
    let e = &port(&doc, &e1000e)["phy"];
    assert!(
        e["unread"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["what"] == "module" && u["why"] == "privilege"),
        "{e}"
    );

    netdevsim(&lab, g);
}

/// netdevsim in the same guest, when it was built for this kernel.
fn netdevsim(lab: &linerate_lab::Lab, g: &Guest) {
    let module = format!(
        "/opt/linerate-lab/netdevsim/{}/netdevsim.ko",
        lab.kernel.release
    );
    if !Path::new(&module).is_file() {
        linerate_testkit::skip(format!(
            "no netdevsim for the lab kernel {}: scripts/build-netdevsim.sh {}",
            lab.kernel.release, lab.kernel.release
        ));
        return;
    }
    let dev = "/sys/bus/netdevsim/devices/netdevsim1";
    sh(
        g,
        &format!(
            "modprobe psample && insmod {module} && echo '1 1' > /sys/bus/netdevsim/new_device && \
             for i in 1 2 3 4 5 6 7 8 9 10; do [ -d {dev}/net ] && break; sleep 0.5; done && \
             udevadm settle --timeout=120"
        ),
        240,
    );
    let n = sh(g, &format!("ls {dev}/net"), 30).trim().to_string();
    let debug = "/sys/kernel/debug/netdevsim/netdevsim1/ports/0/ethtool";
    sh(
        g,
        &format!(
            "echo 4 > {dev}/sriov_numvfs && ip link set {n} vf 0 max_tx_rate 1000 && \
             ip link set {n} vf 1 state disable && ethtool --set-fec {n} encoding rs && \
             ethtool -G {n} rx 512 tx 256 && \
             (mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug) && \
             echo 1 > {debug}/pause/report_stats_rx && echo 1 > {debug}/pause/report_stats_tx"
        ),
        120,
    );
    let doc = linerate_json(g, "probe --json", 300);
    let phy = &port(&doc, &n)["phy"];
    assert_eq!(phy["fec"]["active"], "rs", "{phy}");
    assert_eq!(phy["fec"]["configured"], serde_json::json!(["rs"]), "{phy}");
    // netdevsim 6.1 counts 1 pause frame received and 2 sent once its debugfs switches are on.
    assert_eq!(phy["pause"]["rx_frames"], 1, "{phy}");
    assert_eq!(phy["pause"]["tx_frames"], 2, "{phy}");
    assert_eq!(phy["rings"]["rx"], 512);
    assert_eq!(phy["rings"]["tx"], 256);
    assert_eq!(phy["rings"]["rx_max"], 4096);
    agrees_with_ethtool(g, phy, &n, true);
    let vfs = phy["vfs"].as_array().unwrap_or_else(|| {
        // What rtnetlink answers the same request with: the attributes of its RTM_NEWLINK.
        let raw = sh(
            g,
            &format!(
                "python3 -c 'import socket,struct\n\
def nla(t,p):\n l=4+len(p); return struct.pack(\"=HH\",l,t)+p+bytes((4-l%4)%4)\n\
s=socket.socket(socket.AF_NETLINK,socket.SOCK_RAW,0)\n\
b=bytes(16)+nla(3,b\"{n}\\0\")+nla(29,struct.pack(\"=I\",1))\n\
s.send(struct.pack(\"=IHHII\",16+len(b),18,1,1,0)+b)\n\
r=s.recv(65536); o=32; t=[]\n\
while o+4<=len(r):\n l,k=struct.unpack_from(\"=HH\",r,o); t.append((k&0x3fff,l)); o+=(l+3)&~3\n\
print(len(r), t)'"
            ),
            60,
        );
        panic!("no VFs: {phy}\nrtnetlink's reply: {raw}")
    });
    assert_eq!(vfs.len(), 4, "{phy}");
    assert_eq!(vfs[0]["max_tx_rate_mbps"], 1000, "{phy}");
    assert_eq!(vfs[1]["link_state"], "disable", "{phy}");
    let ip = sh(g, &format!("ip link show {n}"), 30);
    assert!(
        ip.contains("max_tx_rate 1000Mbps") && ip.contains("link-state disable"),
        "{ip}"
    );
    let rate = findings(&doc, "vf.rate_limited");
    assert_eq!(rate.len(), 1, "{doc}");
    assert_eq!(rate[0]["subject"], n.as_str());
    let down = findings(&doc, "vf.link_down");
    assert_eq!(down.len(), 1, "{doc}");
    assert!(down[0]["message"]
        .as_str()
        .unwrap()
        .contains("virtual function(s) 1 "));
    // FEC off is read back as none.
    sh(g, &format!("ethtool --set-fec {n} encoding off"), 30);
    let doc = linerate_json(g, "probe --json", 300);
    assert_eq!(port(&doc, &n)["phy"]["fec"]["active"], "none");
}
