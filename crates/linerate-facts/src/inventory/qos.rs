//! What carries RoCE without loss, read per Ethernet netdev under an RDMA port: the kernel's
//! DCB state (PFC, ETS, the APP table and trust, the DCBX mode: `RTM_GETDCB` with
//! `DCB_CMD_IEEE_GET`, include/uapi/linux/dcbnl.h), ECN's per-priority switches (MLNX_OFED's
//! `/sys/class/net/IF/ecn/`), and the driver's pause and discard counters per priority
//! (`ethtool -S`). Raw, as read; the rules derive what RoCE's traffic meets
//! ([`crate::RoceView`]).

use serde::{Deserialize, Serialize};

/// The eight 802.1p priorities.
pub const PRIORITIES: usize = 8;

/// The lossless-Ethernet state of one netdev.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortQos {
    pub netdev: String,
    /// The kernel's DCB state of the netdev.
    pub dcb: DcbRead,
    /// ECN's switches per priority, where the driver exposes them; None where it does not
    /// (upstream mlx5 has no such switch: the firmware decides).
    #[serde(default)]
    pub ecn: Option<EcnSwitches>,
    /// The driver's pause and discard counters (`rx_prio3_pause`, `rx_discards_phy`, ...), as
    /// read once: totals since the driver loaded. Empty where the driver has none or they were
    /// not read ([`PortQos::counters_unread`]).
    #[serde(default)]
    pub counters: Vec<(String, u64)>,
    /// Why the driver's statistics were not read (a fixture without them, an ioctl refused).
    #[serde(default)]
    pub counters_unread: Option<String>,
}

/// What `RTM_GETDCB` said about a netdev.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum DcbRead {
    /// Not asked: a `--root` tree without `dcb/IFACE/ieee`.
    #[default]
    NotAsked,
    /// The netdev has no DCB (`EOPNOTSUPP`: a driver without `dcbnl_ops`, virtio, veth...).
    Unsupported,
    /// The request failed, or its reply could not be read.
    Failed(String),
    Read(Dcb),
}

/// The IEEE DCB state of a netdev (`DCB_ATTR_IEEE`, `DCB_ATTR_DCBX`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dcb {
    /// `DCB_ATTR_DCBX`: the DCBX mode bits (HOST 0x01, LLD_MANAGED 0x02, VER_CEE 0x04,
    /// VER_IEEE 0x08, STATIC 0x10); None where the driver does not say.
    pub dcbx: Option<u8>,
    pub pfc: Option<Pfc>,
    pub ets: Option<Ets>,
    /// `DCB_ATTR_IEEE_APP_TABLE`: the application priority table (DSCP → priority entries
    /// switch mlx5 to DSCP trust).
    #[serde(default)]
    pub apps: Vec<DcbApp>,
    /// `DCB_ATTR_DCB_APP_TRUST_TABLE` (Linux 6.2+): the selectors the port trusts, in order.
    #[serde(default)]
    pub trust: Option<Vec<u8>>,
}

/// `struct ieee_pfc`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pfc {
    /// Traffic classes that may use PFC at once.
    pub cap: u8,
    /// Bit per priority: PFC on.
    pub enabled: u8,
    /// MACsec bypass capability.
    pub mbc: u8,
    /// Allowance made for a round trip, bits (mlx5: the cable length).
    pub delay: u16,
    /// PFC frames sent per priority (this port asked its peer to pause).
    pub requests: Vec<u64>,
    /// PFC frames received per priority (the peer paused this port).
    pub indications: Vec<u64>,
}

impl Pfc {
    /// Is PFC on for priority `p`?
    pub fn on(&self, p: u8) -> bool {
        p < 8 && self.enabled & (1 << p) != 0
    }

    /// The priorities with PFC on.
    pub fn priorities(&self) -> Vec<u8> {
        (0..8).filter(|p| self.on(*p)).collect()
    }
}

/// `struct ieee_ets`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ets {
    pub willing: bool,
    pub ets_cap: u8,
    pub cbs: bool,
    /// Bandwidth share per traffic class, %.
    pub tc_tx_bw: Vec<u8>,
    /// Transmission selection algorithm per traffic class (0 strict, 1 CBS, 2 ETS, 255 vendor).
    pub tc_tsa: Vec<u8>,
    /// Traffic class per priority.
    pub prio_tc: Vec<u8>,
}

/// `struct dcb_app`: one entry of the APP table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DcbApp {
    /// `IEEE_8021QAZ_APP_SEL_*`: 1 Ethertype, 2 TCP/SCTP port, 3 UDP/DCCP port, 4 any port,
    /// 5 DSCP; 255 PCP (`DCB_APP_SEL_PCP`, Linux 6.2+).
    pub selector: u8,
    pub priority: u8,
    pub protocol: u16,
}

/// `IEEE_8021QAZ_APP_SEL_DSCP`.
pub const APP_SEL_DSCP: u8 = 5;
/// `DCB_APP_SEL_PCP`.
pub const APP_SEL_PCP: u8 = 255;

impl Dcb {
    /// The priority the APP table gives DSCP `dscp`, if it has an entry.
    pub fn dscp_priority(&self, dscp: u8) -> Option<u8> {
        self.apps
            .iter()
            .find(|a| a.selector == APP_SEL_DSCP && a.protocol == u16::from(dscp))
            .map(|a| a.priority)
    }

    /// The port classifies by DSCP: the trust table puts DSCP first, or (without a trust
    /// table, as mlx5) the APP table has a DSCP entry (`mlx5e_dcbnl_ieee_setapp` switches the
    /// port to DSCP trust on the first one).
    pub fn trusts_dscp(&self) -> bool {
        match &self.trust {
            Some(t) => t.first() == Some(&APP_SEL_DSCP),
            None => self.apps.iter().any(|a| a.selector == APP_SEL_DSCP),
        }
    }
}

/// ECN's per-priority switches of a netdev: the reaction point (the sender slows down on a
/// CNP) and the notification point (the receiver sends a CNP for a packet marked CE).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcnSwitches {
    /// Where they were read (`/sys/class/net/IF/ecn`).
    pub dir: String,
    /// Per priority: `roce_rp/enable/N` (None: not readable).
    pub rp: Vec<Option<bool>>,
    /// Per priority: `roce_np/enable/N`.
    pub np: Vec<Option<bool>>,
}

impl EcnSwitches {
    /// ECN on priority `p` at both points; None when either switch was not read.
    pub fn on(&self, p: u8) -> Option<bool> {
        let rp = *self.rp.get(usize::from(p))?;
        let np = *self.np.get(usize::from(p))?;
        Some(rp? && np?)
    }
}

/// The rdma_cm defaults of one RDMA port (`/sys/kernel/config/rdma_cm/DEV/ports/N/`): what a
/// connection gets when its application sets no ToS or GID type. The directory exists only
/// after someone created `rdma_cm/DEV`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaCmDefaults {
    /// `default_roce_tos`: the IPv4 ToS octet (DSCP in its upper six bits).
    pub tos: Option<u8>,
    /// `default_roce_mode`: `IB/RoCE v1` or `RoCE v2`.
    pub mode: Option<String>,
}
