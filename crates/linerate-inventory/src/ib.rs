//! RDMA devices from `/sys/class/infiniband`: InfiniBand and RoCE ports.

use std::path::Path;

use linerate_facts::{
    Counter, CounterDef, CounterSource, Gid, IbDevice, IbPort, IbPortFiles, LinkLayer,
};
use linerate_model::{IbPhysState, IbRate, IbState};

use crate::fs::Root;
use crate::pci::{nearest_function, Registry};
use linerate_facts::parse_hex_u32;

pub fn read_all(r: &mut Root, pcis: &mut Registry) -> Vec<IbDevice> {
    let class = r.path("sys/class/infiniband");
    Root::list(&class)
        .into_iter()
        .map(|name| read_device(r, pcis, &class.join(&name), &name))
        .collect()
}

fn read_device(r: &mut Root, pcis: &mut Registry, dir: &Path, name: &str) -> IbDevice {
    let pci = std::fs::canonicalize(dir.join("device"))
        .ok()
        .and_then(|d| nearest_function(&d))
        .and_then(|d| pcis.ensure(r, &d));
    let mut ports = Vec::new();
    for p in Root::list(&dir.join("ports")) {
        let Ok(n) = p.parse::<u32>() else { continue };
        ports.push(read_port(r, &dir.join("ports").join(&p), name, n));
    }
    // rxe and siw have a `parent` attribute naming their netdev; hardware drivers have none.
    let soft_parent = Root::read_raw(&dir.join("parent"))
        .ok()
        .flatten()
        .filter(|v| !v.is_empty());
    // rxe leaves `fw_ver` empty (ibv_devinfo prints 0.0.0 from the zero it reports).
    let fw_ver = r.opt(&dir.join("fw_ver"), name).filter(|v| !v.is_empty());
    IbDevice {
        name: name.to_string(),
        pci,
        node_type: r.opt(&dir.join("node_type"), name),
        node_guid: r.opt(&dir.join("node_guid"), name),
        fw_ver,
        hca_type: r.opt(&dir.join("hca_type"), name),
        hw_rev: r.opt(&dir.join("hw_rev"), name),
        board_id: r.opt(&dir.join("board_id"), name),
        node_desc: r.opt(&dir.join("node_desc"), name),
        soft_parent,
        ports,
    }
}

fn read_port(r: &mut Root, dir: &Path, dev: &str, n: u32) -> IbPort {
    let subject = format!("{dev}/{n}");
    let s = subject.as_str();
    let (state, state_raw) = r.req_parse_verbatim(
        &dir.join("state"),
        s,
        "`N: NAME` with N 0-5",
        IbState::parse,
    );
    let (phys_state, phys_state_raw) = r.req_parse_verbatim(
        &dir.join("phys_state"),
        s,
        "`N: NAME` with N 1-7",
        IbPhysState::parse,
    );
    let link_layer = r
        .req_parse(
            &dir.join("link_layer"),
            s,
            "`InfiniBand`, `Ethernet` or `Unknown`",
            LinkLayer::parse,
        )
        .unwrap_or(LinkLayer::Unknown);
    // The rate of a port that is not up is a driver placeholder (mlx4 reports SDR, mlx5 4X
    // QDR), but it is still parsed: `IbPort::link_rate` decides when it can be believed.
    let (rate, rate_raw) =
        r.req_parse_verbatim(&dir.join("rate"), s, "`40 Gb/sec (4X QDR)`", IbRate::parse);
    let lid = r.opt_parse(&dir.join("lid"), s, "a hex LID like `0x1`", parse_hex_u32);
    let sm_lid = r.opt_parse(
        &dir.join("sm_lid"),
        s,
        "a hex LID like `0x1`",
        parse_hex_u32,
    );
    let cap_mask = r.opt_parse(&dir.join("cap_mask"), s, "`0x%08x`", parse_hex_u32);
    let gid0 = r.opt(&dir.join("gids/0"), s);
    let roce_netdev = Root::read_raw(&dir.join("gid_attrs/ndevs/0"))
        .ok()
        .flatten()
        .filter(|v| !v.is_empty());
    let mut counters = Vec::new();
    let cdir = dir.join("counters");
    // The PMA error counters probe reports (the counter table's probe rows), each with the
    // value where its width makes it stop.
    for d in CounterDef::exact_rows(CounterSource::IbCounters).filter(|d| d.judges.probe) {
        let Some(name) = d.name.exact() else { continue };
        if let Some(value) = r.counter(&cdir.join(name), s) {
            counters.push(Counter {
                name: name.to_string(),
                value,
                pegged: d
                    .width
                    .saturation_value(value)
                    .is_some_and(|top| value >= top),
            });
        }
    }
    let gids = read_gids(dir);
    let hw_counters = read_hw_counters(r, &dir.join("hw_counters"), s);
    IbPort {
        number: n,
        state,
        phys_state,
        rate,
        link_layer,
        lid,
        sm_lid,
        cap_mask,
        gid0,
        roce_netdev,
        gids,
        counters,
        hw_counters,
        active_mtu: None,
        max_mtu: None,
        rdma_cm: None,
        verbatim: IbPortFiles {
            state: state_raw,
            phys_state: phys_state_raw,
            rate: rate_raw,
        },
    }
}

/// The most GID table entries read per port (rxe's table has 1024, mlx5's 255).
const MAX_GIDS: usize = 1024;

/// Every GID in use, in index order, with its type and netdev. An unused entry reads as all
/// zeros (and its type as EINVAL): left out.
fn read_gids(port: &Path) -> Vec<Gid> {
    let mut idx: Vec<u32> = Root::list(&port.join("gids"))
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    idx.sort_unstable();
    idx.truncate(MAX_GIDS);
    let attr = |kind: &str, i: u32| {
        Root::read_raw(&port.join("gid_attrs").join(kind).join(i.to_string()))
            .ok()
            .flatten()
            .filter(|v| !v.is_empty())
    };
    idx.into_iter()
        .filter_map(|i| {
            let gid = Root::read_raw(&port.join("gids").join(i.to_string())).ok()??;
            let used = gid.chars().any(|c| c.is_ascii_hexdigit() && c != '0');
            used.then(|| Gid {
                index: i,
                gid,
                kind: attr("types", i),
                ndev: attr("ndevs", i),
                vlan: None,
            })
        })
        .collect()
}

/// The driver's counters under `hw_counters/` (all 64-bit; `lifespan` is a setting).
fn read_hw_counters(r: &mut Root, dir: &Path, subject: &str) -> Vec<Counter> {
    Root::list(dir)
        .into_iter()
        .filter(|n| n != "lifespan")
        .filter_map(|n| {
            r.counter(&dir.join(&n), subject).map(|value| Counter {
                name: n,
                value,
                pegged: value == u64::MAX,
            })
        })
        .collect()
}
