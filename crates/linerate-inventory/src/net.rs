//! Network interfaces from `/sys/class/net`.

use std::collections::BTreeMap;
use std::path::Path;

use linerate_facts::{CounterDef, CounterSource, IpoibInfo, IpoibMode, Netdev, NetdevKind};

use crate::fs::Root;
use crate::pci::{nearest_function, Registry};
use linerate_facts::parse_hex_u32;

pub fn read_all(r: &mut Root, pcis: &mut Registry) -> Vec<Netdev> {
    let class = r.path("sys/class/net");
    Root::list(&class)
        .into_iter()
        .filter(|n| !n.starts_with('.') && n != "bonding_masters")
        .map(|name| read_netdev(r, pcis, &class.join(&name), &name))
        .collect()
}

fn read_netdev(r: &mut Root, pcis: &mut Registry, dir: &Path, name: &str) -> Netdev {
    let arp_type = r.req_parse(&dir.join("type"), name, "an ARPHRD number", |v| {
        v.parse::<u32>().ok()
    });
    let kind = kind_of(arp_type);
    let device_dir = std::fs::canonicalize(dir.join("device")).ok();
    let is_virtual = device_dir.is_none()
        || std::fs::canonicalize(dir)
            .ok()
            .is_some_and(|p| p.components().any(|c| c.as_os_str() == "virtual"));
    let driver = device_dir
        .as_ref()
        .and_then(|d| Root::link_name(&d.join("driver")));
    let paravirtual = driver.as_deref().is_some_and(is_paravirtual_driver);
    let pci = if is_virtual {
        None
    } else {
        device_dir
            .as_deref()
            .and_then(nearest_function)
            .and_then(|d| pcis.ensure(r, &d))
    };
    let mtu = r.req_parse(&dir.join("mtu"), name, "a decimal MTU", |v| {
        v.parse::<u32>().ok().filter(|m| *m > 0)
    });
    let speed_mbps = read_speed(r, dir, name);
    let operstate = r.opt(&dir.join("operstate"), name);
    let carrier = read_carrier(dir);
    let admin_up = r
        .opt_parse(
            &dir.join("flags"),
            name,
            "hex flags like `0x1003`",
            parse_hex_u32,
        )
        .map(|f| f & 1 == 1);
    let dev_port = r.opt_parse(&dir.join("dev_port"), name, "a port index", |v| {
        v.parse::<u32>().ok()
    });
    let address = r.opt(&dir.join("address"), name);
    let ipoib = (kind == NetdevKind::Ipoib).then(|| read_ipoib(r, dir, name, address.as_deref()));
    Netdev {
        name: name.to_string(),
        kind,
        arp_type,
        is_virtual,
        paravirtual,
        driver,
        pci,
        mtu,
        speed_mbps,
        operstate,
        carrier,
        admin_up,
        dev_port,
        address,
        ipoib,
        errors: read_errors(dir),
    }
}

fn kind_of(arp_type: Option<u32>) -> NetdevKind {
    match arp_type {
        Some(1) => NetdevKind::Ethernet,
        Some(32) => NetdevKind::Ipoib,
        Some(772) => NetdevKind::Loopback,
        _ => NetdevKind::Other,
    }
}

fn is_paravirtual_driver(driver: &str) -> bool {
    matches!(
        driver,
        "virtio_net" | "vmxnet3" | "hv_netvsc" | "xen-netfront" | "ena" | "gve"
    )
}

/// `speed` is EINVAL when down or unsupported; -1 or 4294967295 when unknown.
fn read_speed(r: &mut Root, dir: &Path, name: &str) -> Option<u32> {
    let Ok(Some(v)) = Root::read_raw(&dir.join("speed")) else {
        return None;
    };
    match v.parse::<i64>() {
        Ok(s) if s > 0 && s < i64::from(u32::MAX) => Some(s as u32),
        Ok(_) => None,
        Err(_) => {
            r.bad_value(
                &dir.join("speed"),
                name,
                &v,
                "Mb/s as a decimal number or -1",
            );
            None
        }
    }
}

fn read_carrier(dir: &Path) -> Option<bool> {
    match Root::read_raw(&dir.join("carrier")) {
        Ok(Some(v)) => match v.as_str() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn read_ipoib(r: &mut Root, dir: &Path, name: &str, address: Option<&str>) -> IpoibInfo {
    let mode = r.opt_parse(
        &dir.join("mode"),
        name,
        "`datagram` or `connected`",
        |v| match v {
            "datagram" => Some(IpoibMode::Datagram),
            "connected" => Some(IpoibMode::Connected),
            _ => None,
        },
    );
    let connected_capable = address
        .and_then(|a| a.split(':').next())
        .and_then(|b| u8::from_str_radix(b, 16).ok())
        .map(|b| b & 0x80 != 0);
    IpoibInfo {
        mode,
        connected_capable,
        pkey: r.opt(&dir.join("pkey"), name),
    }
}

/// The non-zero error counters under `statistics/` that probe reports (the counter table's
/// probe rows: errors and drops on either side, and the receive errors that point at the wire
/// or the NIC: CRC, missed, FIFO; doctor watches the same during its tests).
fn read_errors(dir: &Path) -> BTreeMap<String, u64> {
    let mut errors = BTreeMap::new();
    for stat in CounterDef::probe_names(CounterSource::NetdevStatistics) {
        if let Ok(Some(v)) = Root::read_raw(&dir.join("statistics").join(stat)) {
            if let Ok(n) = v.parse::<u64>() {
                if n > 0 {
                    errors.insert(stat.to_string(), n);
                }
            }
        }
    }
    errors
}
