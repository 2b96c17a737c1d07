//! `linerate probe` against real drivers: a guest of Debian's stock kernel (the lab,
//! docs/lab.md) with two NICs wired back to back, a paravirtual virtio-net reporting 40 Gb/s behind
//! a PCIe 2.0 x4 root port and an emulated Intel 82574L (e1000e) behind a PCIe 3.0 x16 one, each
//! with a soft-RoCE device. Every field probe gives is compared with what `ibv_devinfo -v`,
//! `rdma link show` and `lspci -vv` print in the same guest, and the ceilings and findings are
//! checked against what those drivers are: a software RDMA device's rate is no ceiling, a
//! paravirtual NIC's PCIe link limits nothing, an emulated NIC's PCIe link is real sysfs.

mod common;

use std::collections::BTreeMap;
use std::net::Ipv6Addr;

use common::lab::{self, sh};
use linerate_lab::{LabSpec, Mac, NicModel, NicSpec, RootPort, SlotSpeed};
use serde_json::Value;

fn spec() -> LabSpec {
    let nic = |model, mac: usize, gen, width, ip: [u8; 4]| NicSpec {
        model,
        wire: Some("loop".into()),
        mac: Mac::lab(0, mac),
        slot: Some(RootPort { gen, width }),
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
                SlotSpeed::Gt5,
                4,
                [198, 18, 0, 1],
            ),
            nic(NicModel::E1000e, 1, SlotSpeed::Gt8, 16, [198, 18, 1, 1]),
        ],
        true,
    )
}

/// One hca_id block of `ibv_devinfo -v`: its `key: value` lines, and per port its lines and GIDs.
#[derive(Debug, Default)]
struct Hca {
    fields: BTreeMap<String, String>,
    ports: BTreeMap<u32, HcaPort>,
}

#[derive(Debug, Default)]
struct HcaPort {
    fields: BTreeMap<String, String>,
    /// index → (address, type)
    gids: BTreeMap<u32, (Ipv6Addr, String)>,
}

fn ibv_devinfo(text: &str) -> BTreeMap<String, Hca> {
    let mut out: BTreeMap<String, Hca> = BTreeMap::new();
    let mut dev = String::new();
    let mut port: Option<u32> = None;
    for line in text.lines() {
        let t = line.trim();
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let v = v.trim().to_string();
        match k {
            "hca_id" => {
                dev.clone_from(&v);
                port = None;
                out.entry(dev.clone()).or_default();
            }
            "port" => port = v.parse().ok(),
            _ => {
                let hca = out.get_mut(&dev).expect("an hca_id first");
                match port {
                    None => {
                        hca.fields.insert(k.to_string(), v);
                    }
                    Some(p) => {
                        let hp = hca.ports.entry(p).or_default();
                        if let Some(i) = k.strip_prefix("GID[").and_then(|r| r.strip_suffix(']')) {
                            let (addr, kind) = v.split_once(", ").expect("GID, type");
                            hp.gids.insert(
                                i.trim().parse().unwrap(),
                                (addr.parse().unwrap(), kind.to_string()),
                            );
                        } else {
                            hp.fields.insert(k.to_string(), v);
                        }
                    }
                }
            }
        }
    }
    out
}

/// `PORT_ACTIVE (4)` → 4.
fn code(v: &str) -> u64 {
    v.rsplit_once('(')
        .and_then(|(_, c)| c.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no (code) in `{v}`"))
}

/// lspci's `Speed 2.5GT/s, Width x1` as probe labels a link: `PCIe 1.0 x1`.
fn lspci_label(line: &str) -> String {
    let speed = line
        .split("Speed ")
        .nth(1)
        .and_then(|s| s.split("GT/s").next())
        .unwrap_or_else(|| panic!("no speed in `{line}`"));
    let width = line
        .split("Width x")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .unwrap_or_else(|| panic!("no width in `{line}`"));
    let gen = match speed {
        "2.5" => "1.0",
        "5" => "2.0",
        "8" => "3.0",
        "16" => "4.0",
        "32" => "5.0",
        s => panic!("speed {s}"),
    };
    format!("PCIe {gen} x{width}")
}

/// `LnkCap:` and `LnkSta:` of one function in `lspci -vv -s BDF`.
fn lspci_link(g: &linerate_lab::Guest, bdf: &str) -> (String, String) {
    let text = sh(g, &format!("lspci -vv -s {bdf}"), 60);
    let find = |what: &str| {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no {what} in lspci -vv -s {bdf}:\n{text}"));
        lspci_label(line)
    };
    (find("LnkCap:"), find("LnkSta:"))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` is not a string in {v}"))
}

#[test]
fn probe_names_what_real_drivers_report_and_judges_them_for_what_they_are() {
    lab::on_each_kernel("lab_probe", probe_on);
}

/// The test on one kernel (`LINERATE_LAB_KERNELS`).
fn probe_on(kernel: &str) {
    let Some((lab, _serial)) = lab::boot_on(kernel, &spec()) else {
        return;
    };
    let g = lab.guest("a");
    let (virtio, e1000e) = (g.netdevs[0].clone(), g.netdevs[1].clone());
    // With LINERATE_LAB_CAPTURES=DIR, the sysfs this kernel's drivers wrote, as
    // fixtures/sysfs/build.py takes it (DIR/lab-rxe-qemu-SERIES.json: captures/).
    if let Some(dir) = std::env::var_os("LINERATE_LAB_CAPTURES") {
        let agent = linerate_lab::host::find_agent().unwrap_or_else(|e| panic!("{e}"));
        let capture = sh(g, &format!("{} capture", agent.display()), 120);
        let path =
            std::path::Path::new(&dir).join(format!("lab-rxe-qemu-{}.json", lab.kernel.series()));
        std::fs::write(&path, capture).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let doc = lab::linerate_json(g, "probe --json", 120);
    let text = lab::linerate(g, "probe", 120).stdout;
    let devinfo = ibv_devinfo(&sh(g, "ibv_devinfo -v", 60));
    let links: Value = serde_json::from_str(&sh(g, "rdma -j link show", 60)).unwrap();
    let port = |netdev: &str| {
        doc["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["netdev"] == netdev)
            .unwrap_or_else(|| panic!("probe lists no port on {netdev}: {doc}"))
            .clone()
    };
    let mut seen = 0;
    for (netdev, rxe) in [(&virtio, "rxe0"), (&e1000e, "rxe1")] {
        rdma_port_agrees(&port(netdev), netdev, rxe, &devinfo, &links, &text);
        seen += 1;
    }
    assert_eq!(
        seen,
        devinfo.len(),
        "probe names every device ibv_devinfo lists"
    );
    for (netdev, slot) in [(&virtio, "PCIe 2.0 x4"), (&e1000e, "PCIe 3.0 x16")] {
        pcie_agrees(g, &port(netdev)["pci"], slot);
    }
    ceilings_and_findings(&doc, &port(&virtio), &port(&e1000e), &text);
}

/// Each RDMA device, field by field, against `ibv_devinfo -v` and `rdma link show`.
fn rdma_port_agrees(
    p: &Value,
    netdev: &str,
    rxe: &str,
    devinfo: &BTreeMap<String, Hca>,
    links: &Value,
    text: &str,
) {
    let ib = &p["ib"];
    assert_eq!(p["kind"], "roce", "{p}");
    assert_eq!(p["device"], rxe, "{p}");
    assert_eq!(ib["device"], rxe);
    assert_eq!(ib["soft_parent"], netdev, "{ib}");
    assert_eq!(ib["roce_netdev"], netdev, "{ib}");
    let hca = &devinfo[rxe];
    assert_eq!(str_of(ib, "node_guid"), hca.fields["node_guid"]);
    // rxe leaves fw_ver empty; ibv_devinfo prints the zero it reports as 0.0.0.
    assert_eq!(hca.fields["fw_ver"], "0.0.0");
    assert!(ib["fw_ver"].is_null(), "{ib}");
    let hp = &hca.ports[&1];
    assert_eq!(code(&hp.fields["state"]), 4, "PORT_ACTIVE");
    assert_eq!(ib["state"], "active");
    assert_eq!(code(&hp.fields["phys_state"]), 5, "LINK_UP");
    assert_eq!(ib["phys_state"], "link_up");
    assert_eq!(hp.fields["link_layer"], "Ethernet");
    assert_eq!(ib["link_layer"], "ethernet");
    assert_eq!(
        ib["active_mtu"],
        mtu_bytes(&hp.fields["active_mtu"]),
        "{ib}"
    );
    assert_eq!(ib["max_mtu"], mtu_bytes(&hp.fields["max_mtu"]), "{ib}");
    assert_eq!(ib["lid"], hp.fields["port_lid"].parse::<u64>().unwrap());
    assert_eq!(ib["sm_lid"], hp.fields["sm_lid"].parse::<u64>().unwrap());
    // The rate file: width and speed as ibv_devinfo decodes them.
    let width = match code(&hp.fields["active_width"]) {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        w => panic!("active_width code {w}"),
    };
    assert_eq!(ib["rate"]["width"], width, "{ib}");
    let speed = match code(&hp.fields["active_speed"]) {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        8 => "FDR10",
        16 => "FDR",
        32 => "EDR",
        64 => "HDR",
        128 => "NDR",
        s => panic!("active_speed code {s}"),
    };
    assert_eq!(ib["rate"]["speed"], speed, "{ib}");
    // Every GID, its address and its type.
    let gids: BTreeMap<u32, (Ipv6Addr, String)> = ib["gids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                u32::try_from(x["index"].as_u64().unwrap()).unwrap(),
                (
                    str_of(x, "gid").parse().unwrap(),
                    str_of(x, "kind").to_string(),
                ),
            )
        })
        .collect();
    assert_eq!(gids, hp.gids, "GIDs of {rxe}");
    assert!(gids.values().any(|(_, k)| k == "RoCE v2"));
    for x in ib["gids"].as_array().unwrap() {
        assert_eq!(x["ndev"], netdev, "{x}");
    }
    // rxe has its own counters and no PMA: no counters/ directory.
    let hw: Vec<&str> = ib["hw_counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| str_of(c, "name"))
        .collect();
    for name in [
        "sent_pkts",
        "rcvd_pkts",
        "rcvd_seq_err",
        "retry_exceeded_err",
    ] {
        assert!(hw.contains(&name), "{name} not in {hw:?}");
    }
    assert_eq!(ib["counters"], Value::Array(vec![]));
    let l = links
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["ifname"] == rxe)
        .unwrap();
    assert_eq!(l["state"], "ACTIVE");
    assert_eq!(l["physical_state"], "LINK_UP");
    assert_eq!(l["netdev"], netdev);
    assert!(
        text.contains(&format!("{rxe} port 1  software RDMA over {netdev}")),
        "{text}"
    );
}

/// The PCIe links as the kernel reports them, against `lspci -vv`: the NIC's and its slot's.
fn pcie_agrees(g: &linerate_lab::Guest, pci: &Value, slot: &str) {
    let bdf = str_of(pci, "address");
    let (cap, sta) = lspci_link(g, bdf);
    assert_eq!(str_of(pci, "capable"), cap, "{pci}");
    assert_eq!(str_of(pci, "current"), sta, "{pci}");
    let bridge = sh(
        g,
        &format!("basename $(dirname $(readlink -f /sys/bus/pci/devices/{bdf}))"),
        30,
    );
    let (slot_cap, _) = lspci_link(g, bridge.trim());
    assert_eq!(slot_cap, slot, "the root port QEMU was given");
    assert_eq!(str_of(pci, "slot"), slot_cap, "{pci}");
}

/// The ceilings and findings of what these drivers are.
fn ceilings_and_findings(doc: &Value, virtio: &Value, e1000e: &Value, text: &str) {
    // The paravirtual NIC: no hardware ceiling, no link stage from its nominal 40 Gb/s or rxe's
    // copy of it, no PCIe stage from QEMU's emulated 2.5 GT/s x1.
    let c = &virtio["ceiling"];
    assert_eq!(c["limited_by"], "unknown", "{c}");
    assert_eq!(c["gbps"], 0.0, "{c}");
    let stages: Vec<&str> = c["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| str_of(s, "stage"))
        .collect();
    assert_eq!(stages, ["state"], "{c}");
    assert!(str_of(c, "summary").contains("paravirtual"), "{c}");
    assert!(text.contains("limits nothing"), "{text}");

    // The emulated NIC: its 1 Gb/s link is the ceiling, and its real PCIe 1.0 x1 link (2 Gb/s of
    // data, less after TLP overhead) is a stage of the chain, above it.
    let c = &e1000e["ceiling"];
    assert_eq!(c["limited_by"], "link", "{c}");
    assert_eq!(c["gbps"], 1.0, "{c}");
    let pcie = c["chain"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "pcie_payload")
        .unwrap_or_else(|| panic!("no PCIe stage in {c}"));
    let pcie_gbps = pcie["gbps"].as_f64().unwrap();
    assert!(pcie_gbps > 1.0 && pcie_gbps < 2.0, "{pcie}");

    // No finding judges a nominal figure: not mtu.small on the paravirtual 40 Gb/s, not a PCIe
    // finding on an emulated x1 link that carries what its card does.
    let findings = doc["findings"].as_array().unwrap();
    for f in findings {
        let id = str_of(f, "id");
        assert!(
            id != "mtu.small" && !id.starts_with("pcie."),
            "{id} on real drivers that deserve none: {f}"
        );
        assert_ne!(f["severity"], "error", "{f}");
    }
    assert!(!text.contains("near 0 Gb/s"), "{text}");
}

/// `1024 (3)` → 1024.
fn mtu_bytes(v: &str) -> u64 {
    v.split_whitespace().next().unwrap().parse().unwrap()
}
