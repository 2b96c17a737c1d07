//! RDMA devices from `/sys/class/infiniband`: InfiniBand and RoCE ports.

use std::path::Path;

use linerate_model::{IbPhysState, IbRate, IbState};
use serde::Serialize;

use crate::fs::{parse_hex_u32, Root};
use crate::pci::{nearest_function, Registry};

/// The `link_layer` of an RDMA port. It lives here, with the port it is read from;
/// `ports` joins RDMA ports and netdevs and depends on this module, never the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkLayer {
    Infiniband,
    Ethernet,
    Unknown,
}

impl LinkLayer {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "InfiniBand" => Some(Self::Infiniband),
            "Ethernet" => Some(Self::Ethernet),
            "Unknown" => Some(Self::Unknown),
            _ => None,
        }
    }
}

/// One PMA error or data counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Counter {
    pub name: String,
    pub value: u64,
    /// At the all-ones value of its width: PMA counters stop there instead of wrapping.
    pub pegged: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IbPort {
    pub number: u32,
    pub state: Option<IbState>,
    pub phys_state: Option<IbPhysState>,
    pub rate: Option<IbRate>,
    pub link_layer: LinkLayer,
    pub lid: Option<u32>,
    pub sm_lid: Option<u32>,
    pub cap_mask: Option<u32>,
    pub gid0: Option<String>,
    /// RoCE: the netdev carrying GID 0.
    pub roce_netdev: Option<String>,
    /// Error and data counters; empty when the port has no PMA.
    pub counters: Vec<Counter>,
    /// The state and rate files as read, quoted by evidence. Not serialized: the JSON keeps its shape.
    #[serde(skip)]
    pub verbatim: IbPortFiles,
}

/// `state`, `phys_state` and `rate` exactly as the kernel printed them
/// (`4: ACTIVE`, `5: LinkUp`, `10 Gb/sec (4X)` on old kernels).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IbPortFiles {
    pub state: Option<String>,
    pub phys_state: Option<String>,
    pub rate: Option<String>,
}

impl IbPort {
    /// The rate, when it describes a link: the port is ACTIVE, or at least physically LinkUp
    /// (INIT or ARMED, waiting for a subnet manager). On a port that is not up the drivers
    /// leave a placeholder in `rate` (mlx4: `10 Gb/sec (4X SDR)` or `2.5 Gb/sec (1X SDR)`;
    /// mlx5 RoCE with no active Ethernet protocol: `40 Gb/sec (4X QDR)`), and an unknown
    /// state proves nothing: `None` is the honest answer then.
    pub fn link_rate(&self) -> Option<IbRate> {
        let up = matches!(self.state, Some(IbState::Active | IbState::ActiveDefer))
            || self.phys_state == Some(IbPhysState::LinkUp);
        self.rate.filter(|_| up)
    }

    pub fn counter(&self, name: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IbDevice {
    pub name: String,
    pub pci: Option<String>,
    pub node_type: Option<String>,
    pub node_guid: Option<String>,
    pub fw_ver: Option<String>,
    pub hca_type: Option<String>,
    pub hw_rev: Option<String>,
    /// The PSID on Mellanox cards.
    pub board_id: Option<String>,
    pub node_desc: Option<String>,
    pub ports: Vec<IbPort>,
}

impl IbDevice {
    /// An iWARP device (i40iw, irdma in iWARP mode, `iw_cxgb4`): `node_type` is `4: RNIC`.
    /// Its ports run over Ethernet whatever `link_layer` says, and their `rate` is made up
    /// by the driver (`iw_cxgb4` always reports 4X DDR, i40iw 4X SDR): the netdev's speed is
    /// the link rate.
    pub fn is_iwarp(&self) -> bool {
        self.node_type
            .as_deref()
            .is_some_and(|t| t.split_once(':').map_or(t, |(_, name)| name).trim() == "RNIC")
    }

    /// Driver family from the device name: `mlx4`, `mlx5`, `mthca`, `rxe`, ...
    pub fn family(&self) -> &str {
        self.name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('_')
    }
}

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
    IbDevice {
        name: name.to_string(),
        pci,
        node_type: r.opt(&dir.join("node_type"), name),
        node_guid: r.opt(&dir.join("node_guid"), name),
        fw_ver: r.opt(&dir.join("fw_ver"), name),
        hca_type: r.opt(&dir.join("hca_type"), name),
        hw_rev: r.opt(&dir.join("hw_rev"), name),
        board_id: r.opt(&dir.join("board_id"), name),
        node_desc: r.opt(&dir.join("node_desc"), name),
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
    for (name, bits) in linerate_model::ib::PMA_ERROR_COUNTERS {
        let p = cdir.join(name);
        // Old kernels print `N/A (no PMA)`: the port has no counters, not a fault.
        match Root::read_raw(&p) {
            Ok(Some(v)) if v.starts_with("N/A") => {}
            Ok(Some(v)) => match v.parse::<u64>() {
                Ok(value) => counters.push(Counter {
                    name: name.to_string(),
                    value,
                    pegged: bits < 64 && value >= (1u64 << bits) - 1,
                }),
                Err(_) => r.bad_value(&p, s, &v, "a decimal counter"),
            },
            Ok(None) | Err(_) => {}
        }
    }
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
        counters,
        verbatim: IbPortFiles {
            state: state_raw,
            phys_state: phys_state_raw,
            rate: rate_raw,
        },
    }
}
