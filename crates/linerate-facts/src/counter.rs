//! Every counter linerate reads, once: where it is read, what it counts (its class and unit),
//! how wide it is, and who judges it. The readers (`linerate-inventory`: sysfs, rtnetlink,
//! SIOCETHTOOL, `/proc`), soak's tracker and rules (`linerate-soak`), doctor's counter watch
//! (`linerate-doctor`), probe's link rules (`linerate-rules`) and watch (`linerate-watch`) all
//! look a counter up here ([`CounterDef::of`]); none keeps a list of its own.
//!
//! A row names one counter ([`CounterName::Exact`]) or a family of a driver's counters by the
//! words in their names (mlx5 and the other drivers name their FEC and PHY statistics each in
//! their own way); every source ends with a row for any other name ([`CounterName::Other`]),
//! so every counter read has exactly one row: the first exact row, else the first pattern that
//! matches, else the source's last. `tests` and `docs/soak.md` are checked against the table.
//!
//! Who judges a counter:
//! - **soak** (and watch, which runs soak's judge over its window): the row's
//!   [`CounterRole`], what the rules take the counter as, and through it the [`SoakFamily`] of
//!   rules that reads it ([`CounterRole::family`], an exhaustive match). Each family of
//!   `linerate_soak`'s `rules/` reads its counters by role, and the judge runs the families
//!   through an exhaustive match on [`SoakFamily`]: a new role does not build until it names
//!   its family, a new family until the judge runs it.
//! - **doctor**: [`CounterJudges::doctor`], the error counters it watches across its tests.
//! - **probe**: [`CounterJudges::probe`], the counters the inventory reads once and reports
//!   when not zero (`link.errors`).

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

/// Where a counter is read. The serde strings travel in a soak's samples (`soak_sample`): the
/// order of the variants is the order of `Ord` (a watch's per-source maps), new ones go last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterSource {
    /// `/sys/class/infiniband/<dev>/ports/<n>/counters/<name>`: the PMA's PortCounters.
    IbCounters,
    /// `/sys/class/infiniband/<dev>/ports/<n>/hw_counters/<name>`: the driver's (mlx5, rxe).
    IbHwCounters,
    /// `/sys/class/net/<if>/statistics/<name>`, or the same figure from one rtnetlink dump of
    /// every link (`IFLA_STATS64`).
    NetdevStatistics,
    /// `/sys/class/net/<if>/{carrier_changes,carrier_up_count,carrier_down_count}`, or the
    /// same from the rtnetlink dump (`IFLA_CARRIER_*`).
    Carrier,
    /// The driver's statistics through the SIOCETHTOOL ioctl (`ethtool -S`).
    Ethtool,
    /// Host-wide: a column of `/proc/net/snmp` (`Tcp:` header and value lines) or, for the
    /// `…Ext:` groups, of `/proc/net/netstat` (the same layout), named as `nstat` names it
    /// (`TcpRetransSegs`, `TcpExtTCPDSACKRecvSegs`).
    Snmp,
}

impl CounterSource {
    pub const ALL: [CounterSource; 6] = [
        Self::IbCounters,
        Self::IbHwCounters,
        Self::NetdevStatistics,
        Self::Carrier,
        Self::Ethtool,
        Self::Snmp,
    ];

    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IbCounters => "ib_counters",
            Self::IbHwCounters => "ib_hw_counters",
            Self::NetdevStatistics => "netdev_statistics",
            Self::Carrier => "carrier",
            Self::Ethtool => "ethtool",
            Self::Snmp => "snmp",
        }
    }

    /// Where its counters are read, for people: a path with `<name>` for the counter.
    pub fn location(self) -> &'static str {
        match self {
            Self::IbCounters => "/sys/class/infiniband/<device>/ports/<port>/counters/<name>",
            Self::IbHwCounters => "/sys/class/infiniband/<device>/ports/<port>/hw_counters/<name>",
            Self::NetdevStatistics => {
                "/sys/class/net/<interface>/statistics/<name>, or rtnetlink IFLA_STATS64"
            }
            Self::Carrier => "/sys/class/net/<interface>/<name>, or rtnetlink IFLA_CARRIER_*",
            Self::Ethtool => "the driver's statistics, SIOCETHTOOL (ethtool -S <interface>)",
            Self::Snmp => "/proc/net/snmp, /proc/net/netstat",
        }
    }

    /// The short form a problem names it by (`counters/`).
    pub fn short(self) -> &'static str {
        match self {
            Self::IbCounters => "counters/",
            Self::IbHwCounters => "hw_counters/",
            Self::NetdevStatistics => "statistics/",
            Self::Carrier => "carrier",
            Self::Ethtool => "ethtool",
            Self::Snmp => "/proc/net/snmp",
        }
    }
}

/// The width of one counter, and so the value at which it stops counting.
///
/// The InfiniBand PMA counters (`counters/`) are 4, 8, 16 or 32 bits wide and **saturate** at
/// all-ones instead of wrapping (Shanley, *InfiniBand Network Architecture* ch. 35; widths from
/// the kernel's `PORT_PMA_ATTR` table, see `docs/soak.md`): 65535, 255 or 15 means "at least
/// this many", and nothing after that moment is visible until someone clears the counter.
///
/// The data and packet counters (`port_xmit_data`, `port_rcv_data`, `port_xmit_packets`,
/// `port_rcv_packets`) are 32 bits in PortCounters and 64 bits in PortCountersExtended, which
/// the kernel uses when the port's ClassPortInfo advertises it. sysfs does not say which one
/// it read, so the width is decided from the values: a value above 2^32−1 proves 64 bits. A
/// value of exactly 2^32−1 is ambiguous (a pegged 32-bit counter, or a 64-bit one caught at
/// that value): the tracker calls it saturated, and takes the saturation back if a later value
/// is larger (then it was a 64-bit counter and the delta is exact).
///
/// mlx5's `link_down_events_phy` is the one PPCNT counter narrower than 64 bits (32: the
/// PRM's phys-layer `link_down_events`, read with `MLX5E_READ_CTR32_BE` since commit
/// 121fcdc84d82). Everything else (hw_counters, netdev statistics, carrier counts, the other
/// ethtool statistics) is 64 bits: a 64-bit counter of bytes at 800 Gb/s takes 5.8 years to
/// wrap, so a wrap is not a thing a soak can meet; a value that goes down is a reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "bits", rename_all = "snake_case")]
pub enum CounterWidth {
    /// Exactly this many bits; saturates at 2^bits−1 when below 64.
    Bits(u8),
    /// 32 bits (PortCounters) or 64 (PortCountersExtended): decided from the values seen.
    DataCounter,
}

impl CounterWidth {
    /// 2^32−1: where a 32-bit data counter pegs.
    pub const U32_MAX: u64 = u32::MAX as u64;

    /// The value at which the counter stops counting, given the largest value seen so far;
    /// `None` when it cannot saturate in practice (64 bits, or a data counter proved 64 bits).
    pub fn saturation_value(self, max_seen: u64) -> Option<u64> {
        match self {
            Self::Bits(b) if b < 64 => Some((1u64 << b) - 1),
            Self::Bits(_) => None,
            Self::DataCounter if max_seen > Self::U32_MAX => None,
            Self::DataCounter => Some(Self::U32_MAX),
        }
    }

    /// Bits, for people: `16`, or `32/64` for a data counter.
    pub fn label(self) -> String {
        match self {
            Self::Bits(b) => b.to_string(),
            Self::DataCounter => "32/64".into(),
        }
    }
}

/// What a counter counts, broadly. Every class but traffic, info and settings is a **health**
/// counter: one that says something about the link (errors, drops, recoveries, link downs,
/// congestion, the transport's losses), the ones a timeline names when they move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterClass {
    /// Damaged on the wire or in the PHY: symbol, CRC, frame and receive errors, FEC blocks
    /// not corrected, integrity errors.
    Error,
    /// Dropped: no room (a ring, a buffer, a queue), a filter, a full VL.
    Discard,
    /// Waiting to send, pause storms, congestion notifications.
    Congestion,
    /// The link went down (or its carrier changed): a flap when it is up again.
    LinkDown,
    /// The link retrained without going down (InfiniBand's link error recovery).
    Retrain,
    /// A transport's own losses: RDMA retries, sequence errors and timeouts, TCP retransmits.
    Transport,
    /// Corrected by FEC: normal in moderation, a rate to judge.
    Corrected,
    /// Bytes and packets carried.
    Traffic,
    /// Counts something that is no fault (links coming up, packets no protocol took).
    Info,
    /// Not a counter: a setting in a counter directory (`hw_counters/lifespan`).
    Setting,
}

impl CounterClass {
    /// A health counter: not traffic, not information, not a setting.
    pub fn is_health(self) -> bool {
        !matches!(self, Self::Traffic | Self::Info | Self::Setting)
    }
}

/// What one unit of a counter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterUnit {
    /// Occurrences (errors, recoveries, link downs, ticks of nothing else).
    Events,
    Packets,
    Bytes,
    /// 4 octets: the PMA's data counters count octets ÷ 4.
    Words,
    Bits,
    /// Ticks of the port's clock with data to send and nothing sent.
    Ticks,
    /// TCP segments.
    Segments,
    /// FEC blocks (codewords).
    Blocks,
}

impl CounterUnit {
    /// Bytes per unit, for a unit of data.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Self::Bytes => Some(1),
            Self::Words => Some(4),
            _ => None,
        }
    }

    /// Bits per unit, for a unit of data (a bit counter counts bits).
    pub fn bits(self) -> Option<f64> {
        match self {
            Self::Bits => Some(1.0),
            _ => self.bytes().map(|b| b as f64 * 8.0),
        }
    }
}

/// What soak's rules take a counter as. The judged roles are read by a family of soak's rules
/// ([`CounterRole::family`]); the bases are what other figures are
/// divided by or checked against (bits received, bytes sent), never judged alone. The order of
/// the roles that accuse the link is the order the rules name a port's error counters in
/// (`retrans_with_errors` cites the first that moved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterRole {
    /// InfiniBand `symbol_error`: judged against the BER budget at the port's rate.
    SymbolErrors,
    /// A link retrain (`link_error_recovery`).
    LinkRecovery,
    /// InfiniBand's link went down (`link_downed`): any rise is bad.
    LinkDowned,
    /// A packet dropped on receive because it arrived damaged.
    RcvErrors,
    /// Local physical errors over the port's threshold: any rise is bad.
    LinkIntegrity,
    /// The receive buffer overran: any rise is bad.
    BufferOverrun,
    /// A packet the host did not take off the ring in time.
    RxMissed,
    /// Errors FEC did not correct.
    PostFec,
    /// Bits FEC corrected: the pre-FEC BER.
    PreFec,
    /// Blocks FEC corrected: reported beside the rest, not judged alone (normal on PAM4).
    FecCorrected,
    /// An Ethernet link down (carrier down, the PHY's link-down events).
    LinkDown,
    /// Carrier changes, ups and downs together: taken as the link downs where the kernel
    /// has no down count of its own (before 4.16).
    LinkChanges,
    /// Packets discarded on send (congestion, or the port down).
    XmitDiscards,
    /// Ticks with data to send and nothing sent (congestion).
    XmitWait,
    /// Packets that arrived already marked bad: the fault is elsewhere.
    RemotePhysical,
    /// The RDMA transport lost what this end sent (timeouts, NAKs, retries).
    RdmaSentLost,
    /// What was sent to this end arrived out of sequence or twice.
    RdmaReceivedLost,
    /// RoCE congestion control (DCQCN) at the sending end, the reaction point: congestion
    /// notifications it received and slowed down for (`rp_cnp_handled`).
    CnpHandled,
    /// ... at the receiving end, the notification point: ECN-marked packets it answered with
    /// a notification to their sender (`np_cnp_sent`).
    CnpSent,
    /// Pause frames the port received (802.3x or PFC): its peer asked it to stop sending.
    PauseReceived,
    /// Pause frames the port sent: it asked its peer to stop sending, its receive side full.
    PauseSent,
    /// TCP segments sent again (host-wide).
    TcpRetrans,
    /// TCP segments sent again that the receiver reported it had already (D-SACK,
    /// host-wide): retransmits TCP itself found spurious, taken out of the retransmits.
    TcpSpurious,
    /// Basis: TCP segments sent (host-wide).
    TcpSent,
    /// Basis: what the port received (bits, 4-byte words or bytes, by its unit).
    ReceivedData,
    /// Basis: what the port sent.
    SentData,
    /// Basis: packets the port received.
    ReceivedPackets,
    /// Basis: packets the port sent.
    SentPackets,
}

impl CounterRole {
    /// The string docs/soak.md and the JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SymbolErrors => "symbol_errors",
            Self::LinkRecovery => "link_recovery",
            Self::LinkDowned => "link_downed",
            Self::RcvErrors => "rcv_errors",
            Self::LinkIntegrity => "link_integrity",
            Self::BufferOverrun => "buffer_overrun",
            Self::RxMissed => "rx_missed",
            Self::PostFec => "post_fec",
            Self::PreFec => "pre_fec",
            Self::FecCorrected => "fec_corrected",
            Self::LinkDown => "link_down",
            Self::LinkChanges => "link_changes",
            Self::XmitDiscards => "xmit_discards",
            Self::XmitWait => "xmit_wait",
            Self::RemotePhysical => "remote_physical",
            Self::RdmaSentLost => "rdma_sent_lost",
            Self::RdmaReceivedLost => "rdma_received_lost",
            Self::CnpHandled => "cnp_handled",
            Self::CnpSent => "cnp_sent",
            Self::PauseReceived => "pause_received",
            Self::PauseSent => "pause_sent",
            Self::TcpRetrans => "tcp_retrans",
            Self::TcpSpurious => "tcp_spurious",
            Self::TcpSent => "tcp_sent",
            Self::ReceivedData => "received_data",
            Self::SentData => "sent_data",
            Self::ReceivedPackets => "received_packets",
            Self::SentPackets => "sent_packets",
        }
    }

    /// A basis: counted beside the judged counters, never judged alone.
    pub fn is_basis(self) -> bool {
        matches!(
            self,
            Self::TcpSent
                | Self::ReceivedData
                | Self::SentData
                | Self::ReceivedPackets
                | Self::SentPackets
        )
    }

    /// A rise of it on a port accuses the link itself (not congestion, not the host, not the
    /// path beyond): the error counters `retrans_with_errors` and the transport rules ask
    /// about. (`symbol_error` on PAM4 is left out by the rules: raw symbol errors are normal
    /// there.)
    pub fn accuses_link(self) -> bool {
        matches!(
            self,
            Self::SymbolErrors
                | Self::LinkRecovery
                | Self::LinkDowned
                | Self::LinkIntegrity
                | Self::BufferOverrun
                | Self::RcvErrors
                | Self::PostFec
                | Self::LinkDown
                | Self::LinkChanges
        )
    }

    /// The family of soak's rules that reads it; `None` for a basis (read by the rules that
    /// divide by it) and for FEC's corrected blocks (reported, judged by no rule).
    pub fn family(self) -> Option<SoakFamily> {
        Some(match self {
            Self::LinkDowned | Self::LinkIntegrity | Self::BufferOverrun => SoakFamily::AnyIncrease,
            Self::SymbolErrors => SoakFamily::Symbol,
            Self::RcvErrors => SoakFamily::Receive,
            Self::RxMissed => SoakFamily::RxMissed,
            Self::LinkRecovery => SoakFamily::Recovery,
            Self::PostFec | Self::PreFec | Self::LinkDown | Self::LinkChanges => {
                SoakFamily::Ethernet
            }
            Self::XmitDiscards | Self::XmitWait | Self::RemotePhysical => SoakFamily::Path,
            Self::PauseReceived | Self::PauseSent => SoakFamily::Pause,
            Self::TcpRetrans | Self::TcpSpurious => SoakFamily::TcpRetransmits,
            Self::RdmaSentLost | Self::RdmaReceivedLost | Self::CnpHandled | Self::CnpSent => {
                SoakFamily::RdmaTransport
            }
            Self::FecCorrected
            | Self::TcpSent
            | Self::ReceivedData
            | Self::SentData
            | Self::ReceivedPackets
            | Self::SentPackets => return None,
        })
    }
}

/// The families of soak's rules, in the order the judge runs them on a port
/// (`linerate_soak`'s `rules/`: its dispatch is an exhaustive match on these). Every judged
/// [`CounterRole`] names the family that reads it ([`CounterRole::family`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SoakFamily {
    /// InfiniBand counters any rise of which is bad: `link_downed`, integrity, overruns.
    AnyIncrease,
    /// `symbol_error` against the BER budget, and with link recoveries.
    Symbol,
    /// Receive errors: the packets lost, the budget, the rate.
    Receive,
    /// Packets the host did not take in time.
    RxMissed,
    /// Link recoveries per minute.
    Recovery,
    /// Ethernet after FEC, link downs, the pre-FEC BER.
    Ethernet,
    /// Retransmits with the port's errors; congestion and errors from elsewhere.
    Path,
    /// Pause frames received or sent while the throughput they hold back fell.
    Pause,
    /// TCP's retransmitted share without the port's errors.
    TcpRetransmits,
    /// The RDMA transport's losses, per direction, and RoCE's congestion control.
    RdmaTransport,
    /// Below the port, beside the counters: temperatures over their warnings, light under the
    /// module's, the light when the link went down.
    Phy,
    /// Saturations and resets of every health counter: notes.
    Notes,
}

impl SoakFamily {
    pub const ALL: [SoakFamily; 12] = [
        Self::AnyIncrease,
        Self::Symbol,
        Self::Receive,
        Self::RxMissed,
        Self::Recovery,
        Self::Ethernet,
        Self::Path,
        Self::Pause,
        Self::TcpRetransmits,
        Self::RdmaTransport,
        Self::Phy,
        Self::Notes,
    ];

    /// Its name in docs/soak.md.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AnyIncrease => "any_increase",
            Self::Symbol => "symbol",
            Self::Receive => "receive",
            Self::RxMissed => "rx_missed",
            Self::Recovery => "recovery",
            Self::Ethernet => "ethernet",
            Self::Path => "path",
            Self::Pause => "pause",
            Self::TcpRetransmits => "tcp_retransmits",
            Self::RdmaTransport => "rdma_transport",
            Self::Phy => "phy",
            Self::Notes => "notes",
        }
    }
}

/// Who judges a counter besides soak (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterJudges {
    /// What soak's rules take it as.
    pub soak: Option<CounterRole>,
    /// Doctor watches it across its tests and names its rise.
    pub doctor: bool,
    /// Probe reads it once into the inventory and reports it when not zero.
    pub probe: bool,
}

/// How a row names its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterName {
    /// One counter.
    Exact(&'static str),
    /// A driver's counters whose name contains every one of these.
    AllOf(&'static [&'static str]),
    /// ... any one of these.
    AnyOf(&'static [&'static str]),
    /// ... ending in any one of these.
    EndsWith(&'static [&'static str]),
    /// ... starting with one of the first and ending with one of the second.
    Edges(&'static [&'static str], &'static [&'static str]),
    /// Any other name of the source: its last row.
    Other,
}

impl CounterName {
    /// Whether `name` is one of this row's counters.
    pub fn matches(self, name: &str) -> bool {
        match self {
            Self::Exact(n) => n == name,
            Self::AllOf(parts) => parts.iter().all(|p| name.contains(p)),
            Self::AnyOf(parts) => parts.iter().any(|p| name.contains(p)),
            Self::EndsWith(parts) => parts.iter().any(|p| name.ends_with(p)),
            Self::Edges(starts, ends) => {
                starts.iter().any(|p| name.starts_with(p)) && ends.iter().any(|p| name.ends_with(p))
            }
            Self::Other => true,
        }
    }

    /// The name, for a row of one counter.
    pub fn exact(self) -> Option<&'static str> {
        match self {
            Self::Exact(n) => Some(n),
            _ => None,
        }
    }
}

/// How a counter is read beyond its source's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterRead {
    /// The file of that name in the source's directory, or the driver's statistic of that
    /// name: every file of the directory is read, and every driver statistic.
    AsListed,
    /// The file `<name>` of the interface's directory, or field `n` (a `u64`) of rtnetlink's
    /// `struct rtnl_link_stats64` (`IFLA_STATS64`), the same `dev_get_stats` figure.
    Stats64(usize),
    /// The file `<name>` of the interface's directory, or the `u32` rtnetlink attribute
    /// `IFLA_*` of that number.
    LinkAttr(u16),
    /// The column `column` of the `group:` header and value lines of `/proc/net/snmp`, or of
    /// `/proc/net/netstat` for a group that ends in `Ext` ([`CounterRead::snmp_file`]).
    Snmp {
        group: &'static str,
        column: &'static str,
    },
}

impl CounterRead {
    /// The file of `/proc/net` that holds `group`'s lines: `netstat` for the extended groups
    /// (`TcpExt`, `IpExt`, `MPTcpExt`), else `snmp`.
    pub fn snmp_file(group: &str) -> &'static str {
        if group.ends_with("Ext") {
            "netstat"
        } else {
            "snmp"
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterDef {
    pub source: CounterSource,
    pub name: CounterName,
    pub class: CounterClass,
    pub width: CounterWidth,
    pub unit: CounterUnit,
    pub read: CounterRead,
    pub judges: CounterJudges,
}

use CounterClass::{
    Congestion, Corrected, Discard, Error, Info, LinkDown as Down, Retrain, Setting, Traffic,
    Transport,
};
use CounterName::{AllOf, AnyOf, Edges, EndsWith, Exact, Other};
use CounterRead::{AsListed, LinkAttr, Stats64};
use CounterRole::{
    BufferOverrun, CnpHandled, CnpSent, FecCorrected, LinkChanges, LinkDown, LinkDowned,
    LinkIntegrity, LinkRecovery, PauseReceived, PauseSent, PostFec, PreFec, RcvErrors,
    RdmaReceivedLost, RdmaSentLost, ReceivedData, ReceivedPackets, RemotePhysical, RxMissed,
    SentData, SentPackets, SymbolErrors, TcpRetrans, TcpSent, TcpSpurious, XmitDiscards, XmitWait,
};
use CounterSource::{Carrier, Ethtool, IbCounters, IbHwCounters, NetdevStatistics, Snmp};
use CounterUnit::{Bits, Blocks, Bytes, Events, Packets, Segments, Ticks, Words};

/// How the drivers' counters of pause frames end (after `rx_` or `tx_`).
const PAUSE_FRAMES: &[&str] = &[
    "_pause",
    "_pause_ctrl_phy",
    "_pause_frames",
    "_flow_control_xoff",
];

const W4: CounterWidth = CounterWidth::Bits(4);
const W8: CounterWidth = CounterWidth::Bits(8);
const W16: CounterWidth = CounterWidth::Bits(16);
const W32: CounterWidth = CounterWidth::Bits(32);
const W64: CounterWidth = CounterWidth::Bits(64);
const DATA: CounterWidth = CounterWidth::DataCounter;

const fn judges(soak: Option<CounterRole>, doctor: bool, probe: bool) -> CounterJudges {
    CounterJudges {
        soak,
        doctor,
        probe,
    }
}
/// Soak only.
const fn soak(r: CounterRole) -> CounterJudges {
    judges(Some(r), false, false)
}
/// Soak, doctor and probe.
const fn all(r: CounterRole) -> CounterJudges {
    judges(Some(r), true, true)
}
/// Doctor and probe, not soak.
const DOCTOR: CounterJudges = judges(None, true, true);
/// Nobody: read, shown, tracked.
const NONE: CounterJudges = judges(None, false, false);

const fn row(
    source: CounterSource,
    name: CounterName,
    class: CounterClass,
    width: CounterWidth,
    unit: CounterUnit,
    read: CounterRead,
    judges: CounterJudges,
) -> CounterDef {
    CounterDef {
        source,
        name,
        class,
        width,
        unit,
        read,
        judges,
    }
}

/// The rows, by source; within a source, the rows of one counter first, then the patterns in
/// the order they are tried, then the source's [`CounterName::Other`]. Within a role the order
/// of the rows is the order soak's rules take the counters in.
#[rustfmt::skip]
pub const COUNTERS: &[CounterDef] = &[
    // InfiniBand PMA PortCounters ([K:Documentation/ABI/stable/sysfs-class-infiniband],
    // sysfs-kb §1.4; docs/soak.md). The error counters saturate at their width.
    row(IbCounters, Exact("symbol_error"), Error, W16, Events, AsListed, all(SymbolErrors)),
    row(IbCounters, Exact("link_error_recovery"), Retrain, W8, Events, AsListed, all(LinkRecovery)),
    row(IbCounters, Exact("link_downed"), Down, W8, Events, AsListed, all(LinkDowned)),
    row(IbCounters, Exact("port_rcv_errors"), Error, W16, Packets, AsListed, all(RcvErrors)),
    row(IbCounters, Exact("port_rcv_remote_physical_errors"), Error, W16, Packets, AsListed, all(RemotePhysical)),
    row(IbCounters, Exact("port_rcv_switch_relay_errors"), Discard, W16, Packets, AsListed, DOCTOR),
    row(IbCounters, Exact("port_xmit_discards"), Discard, W16, Packets, AsListed, all(XmitDiscards)),
    row(IbCounters, Exact("port_xmit_constraint_errors"), Discard, W8, Packets, AsListed, DOCTOR),
    row(IbCounters, Exact("port_rcv_constraint_errors"), Discard, W8, Packets, AsListed, DOCTOR),
    row(IbCounters, Exact("local_link_integrity_errors"), Error, W4, Events, AsListed, all(LinkIntegrity)),
    row(IbCounters, Exact("excessive_buffer_overrun_errors"), Error, W4, Events, AsListed, all(BufferOverrun)),
    row(IbCounters, Exact("VL15_dropped"), Discard, W16, Packets, AsListed, DOCTOR),
    // Congestion, not errors: probe reads it, doctor does not judge it.
    row(IbCounters, Exact("port_xmit_wait"), Congestion, W32, Ticks, AsListed, judges(Some(XmitWait), false, true)),
    row(IbCounters, Exact("port_rcv_data"), Traffic, DATA, Words, AsListed, soak(ReceivedData)),
    row(IbCounters, Exact("port_xmit_data"), Traffic, DATA, Words, AsListed, soak(SentData)),
    row(IbCounters, Exact("port_rcv_packets"), Traffic, DATA, Packets, AsListed, soak(ReceivedPackets)),
    row(IbCounters, Exact("port_xmit_packets"), Traffic, DATA, Packets, AsListed, soak(SentPackets)),
    // unicast_/multicast_{xmit,rcv}_packets exist only as extended (64-bit) counters.
    row(IbCounters, EndsWith(&["_data", "_packets"]), Traffic, W64, Packets, AsListed, NONE),
    // Anything newer is an error counter assumed wide rather than called saturated on a guess.
    row(IbCounters, Other, Error, W64, Events, AsListed, NONE),

    // The RDMA transport's counters of rxe and mlx5 (`hw_counters/`). Linux 6.1's rxe over a
    // link dropping 1 % of one direction counts `rcvd_seq_err` (each NAK for a gap) and
    // `completer_retry_err` (each go-back-N retry, NAK or timeout) on the sender,
    // `out_of_seq_request` on the receiver, and nothing when the other direction drops its
    // acknowledgements; `retry_exceeded_err` is the retries running out (rxe_comp.c).
    row(IbHwCounters, Exact("completer_retry_err"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("local_ack_timeout_err"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("rcvd_seq_err"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("packet_seq_err"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("implied_nak_seq_err"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("roce_adp_retrans"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("retry_exceeded_err"), Transport, W64, Events, AsListed, soak(RdmaSentLost)),
    row(IbHwCounters, Exact("out_of_seq_request"), Transport, W64, Packets, AsListed, soak(RdmaReceivedLost)),
    row(IbHwCounters, Exact("out_of_sequence"), Transport, W64, Packets, AsListed, soak(RdmaReceivedLost)),
    row(IbHwCounters, Exact("duplicate_request"), Transport, W64, Packets, AsListed, soak(RdmaReceivedLost)),
    // mlx5's: receive-buffer drops, bad ICRC, congestion notifications (node_exporter's HELP).
    // rxe's count of its port going down (the same event as the PMA's `link_downed`).
    row(IbHwCounters, Exact("link_downed"), Down, W64, Events, AsListed, NONE),
    row(IbHwCounters, Exact("out_of_buffer"), Discard, W64, Packets, AsListed, NONE),
    row(IbHwCounters, Exact("rx_icrc_encapsulated"), Error, W64, Packets, AsListed, NONE),
    row(IbHwCounters, Exact("np_cnp_sent"), Congestion, W64, Packets, AsListed, soak(CnpSent)),
    row(IbHwCounters, Exact("rp_cnp_handled"), Congestion, W64, Packets, AsListed, soak(CnpHandled)),
    // The cache time of hw_counters, in ms: not a counter, not read.
    row(IbHwCounters, Exact("lifespan"), Setting, W64, Events, AsListed, NONE),
    row(IbHwCounters, AnyOf(&["requests"]), Traffic, W64, Packets, AsListed, NONE),
    row(IbHwCounters, Other, Transport, W64, Events, AsListed, NONE),

    // The netdev's statistics: `struct rtnl_link_stats64`, field by field (the sysfs files
    // read the same `dev_get_stats`).
    row(NetdevStatistics, Exact("rx_packets"), Traffic, W64, Packets, Stats64(0), soak(ReceivedPackets)),
    row(NetdevStatistics, Exact("tx_packets"), Traffic, W64, Packets, Stats64(1), soak(SentPackets)),
    row(NetdevStatistics, Exact("rx_bytes"), Traffic, W64, Bytes, Stats64(2), soak(ReceivedData)),
    row(NetdevStatistics, Exact("tx_bytes"), Traffic, W64, Bytes, Stats64(3), soak(SentData)),
    row(NetdevStatistics, Exact("rx_errors"), Error, W64, Packets, Stats64(4), DOCTOR),
    row(NetdevStatistics, Exact("tx_errors"), Error, W64, Packets, Stats64(5), DOCTOR),
    row(NetdevStatistics, Exact("rx_dropped"), Discard, W64, Packets, Stats64(6), DOCTOR),
    row(NetdevStatistics, Exact("tx_dropped"), Discard, W64, Packets, Stats64(7), DOCTOR),
    row(NetdevStatistics, Exact("multicast"), Traffic, W64, Packets, Stats64(8), NONE),
    row(NetdevStatistics, Exact("collisions"), Congestion, W64, Events, Stats64(9), NONE),
    row(NetdevStatistics, Exact("rx_length_errors"), Error, W64, Packets, Stats64(10), NONE),
    row(NetdevStatistics, Exact("rx_over_errors"), Discard, W64, Packets, Stats64(11), NONE),
    row(NetdevStatistics, Exact("rx_crc_errors"), Error, W64, Packets, Stats64(12), all(RcvErrors)),
    row(NetdevStatistics, Exact("rx_frame_errors"), Error, W64, Packets, Stats64(13), soak(RcvErrors)),
    row(NetdevStatistics, Exact("rx_fifo_errors"), Discard, W64, Packets, Stats64(14), DOCTOR),
    row(NetdevStatistics, Exact("rx_missed_errors"), Discard, W64, Packets, Stats64(15), all(RxMissed)),
    row(NetdevStatistics, Exact("tx_aborted_errors"), Error, W64, Packets, Stats64(16), NONE),
    row(NetdevStatistics, Exact("tx_carrier_errors"), Error, W64, Packets, Stats64(17), DOCTOR),
    row(NetdevStatistics, Exact("tx_fifo_errors"), Discard, W64, Packets, Stats64(18), NONE),
    row(NetdevStatistics, Exact("tx_heartbeat_errors"), Error, W64, Packets, Stats64(19), NONE),
    row(NetdevStatistics, Exact("tx_window_errors"), Error, W64, Packets, Stats64(20), NONE),
    row(NetdevStatistics, Exact("rx_compressed"), Traffic, W64, Packets, Stats64(21), NONE),
    row(NetdevStatistics, Exact("tx_compressed"), Traffic, W64, Packets, Stats64(22), NONE),
    // Packets no protocol took (a bond's inactive member counts every one): no fault.
    row(NetdevStatistics, Exact("rx_nohandler"), Info, W64, Packets, Stats64(23), NONE),
    row(NetdevStatistics, AnyOf(&["error", "dropped", "missed", "fifo", "collisions"]), Error, W64, Packets, AsListed, NONE),
    row(NetdevStatistics, Other, Info, W64, Packets, AsListed, NONE),

    // Carrier counts (Linux 4.16+ for up and down; `carrier_changes` is their sum). The
    // rules take `carrier_changes` for link downs only where `carrier_down_count` is missing.
    row(Carrier, Exact("carrier_changes"), Down, W64, Events, LinkAttr(35), soak(LinkChanges)),
    row(Carrier, Exact("carrier_up_count"), Info, W64, Events, LinkAttr(47), NONE),
    row(Carrier, Exact("carrier_down_count"), Down, W64, Events, LinkAttr(48), soak(LinkDown)),
    row(Carrier, Other, Info, W64, Events, AsListed, NONE),

    // The driver's statistics: mlx5's PHY counters by name ([K:…/mlx5/counters.rst]), the
    // other drivers' by the words in their names.
    row(Ethtool, Exact("rx_crc_errors_phy"), Error, W64, Packets, AsListed, soak(RcvErrors)),
    row(Ethtool, Exact("rx_symbol_err_phy"), Error, W64, Packets, AsListed, soak(RcvErrors)),
    row(Ethtool, AllOf(&["fec", "uncorrect"]), Error, W64, Blocks, AsListed, soak(PostFec)),
    row(Ethtool, Exact("rx_pcs_symbol_err_phy"), Error, W64, Events, AsListed, soak(PostFec)),
    row(Ethtool, Exact("link_down_events_phy"), Down, W32, Events, AsListed, soak(LinkDown)),
    // mlx5's ring drops: "the receive queue had no software buffers allocated for the
    // adapter's incoming traffic", the host behind (as `rx_missed_errors` of other drivers).
    row(Ethtool, Exact("rx_out_of_buffer"), Discard, W64, Packets, AsListed, soak(RxMissed)),
    row(Ethtool, Exact("rx_corrected_bits_phy"), Corrected, W64, Bits, AsListed, soak(PreFec)),
    row(Ethtool, AllOf(&["fec", "corrected_bits"]), Corrected, W64, Bits, AsListed, soak(PreFec)),
    row(Ethtool, AllOf(&["fec", "correct"]), Corrected, W64, Blocks, AsListed, soak(FecCorrected)),
    // Documented, not exposed by upstream mlx5 (docs/soak.md): read where a driver has it.
    row(Ethtool, Exact("rx_bits_phy"), Traffic, W64, Bits, AsListed, soak(ReceivedData)),
    row(Ethtool, AnyOf(&["fec", "corrected", "uncorrect"]), Corrected, W64, Blocks, AsListed, NONE),
    row(Ethtool, AnyOf(&["link_down"]), Down, W64, Events, AsListed, NONE),
    // Pause frames (802.3x and PFC), each direction: mlx5's per priority (`rx_prio3_pause`),
    // per port (`rx_pause_ctrl_phy`) and global (`rx_global_pause`), bnxt's and others'
    // `rx_pause_frames`, ixgbe's `rx_flow_control_xoff`, i40e's and ice's `link_xoff_rx`; not
    // their durations and transitions (`rx_prio3_pause_duration`).
    row(Ethtool, Edges(&["rx_"], PAUSE_FRAMES), Congestion, W64, Packets, AsListed, soak(PauseReceived)),
    row(Ethtool, Edges(&["tx_"], PAUSE_FRAMES), Congestion, W64, Packets, AsListed, soak(PauseSent)),
    row(Ethtool, EndsWith(&["link_xoff_rx"]), Congestion, W64, Packets, AsListed, soak(PauseReceived)),
    row(Ethtool, EndsWith(&["link_xoff_tx"]), Congestion, W64, Packets, AsListed, soak(PauseSent)),
    row(Ethtool, AnyOf(&["pause_storm"]), Congestion, W64, Events, AsListed, NONE),
    row(Ethtool, AnyOf(&["drop", "discard", "out_of_buffer"]), Discard, W64, Packets, AsListed, NONE),
    row(Ethtool, AnyOf(&["err", "symbol", "crc", "timeout", "signal_integrity", "module_"]), Error, W64, Events, AsListed, NONE),
    // Per-queue traffic and the rest.
    row(Ethtool, Other, Traffic, W64, Packets, AsListed, NONE),

    // Host-wide TCP: `/proc/net/snmp`, and TCP's own count of its spurious retransmits from
    // `/proc/net/netstat`: the segments the receivers D-SACKed (Linux 5.10+; before it, the
    // D-SACKs received, one per event, most of them of one segment).
    row(Snmp, Exact("TcpRetransSegs"), Transport, W64, Segments, CounterRead::Snmp { group: "Tcp", column: "RetransSegs" }, soak(TcpRetrans)),
    row(Snmp, Exact("TcpOutSegs"), Traffic, W64, Segments, CounterRead::Snmp { group: "Tcp", column: "OutSegs" }, soak(TcpSent)),
    row(Snmp, Exact("TcpExtTCPDSACKRecvSegs"), Transport, W64, Segments, CounterRead::Snmp { group: "TcpExt", column: "TCPDSACKRecvSegs" }, soak(TcpSpurious)),
    row(Snmp, Exact("TcpExtTCPDSACKRecv"), Transport, W64, Events, CounterRead::Snmp { group: "TcpExt", column: "TCPDSACKRecv" }, soak(TcpSpurious)),
    row(Snmp, Other, Transport, W64, Events, AsListed, NONE),
];

/// The exact rows by (source, name), and each source's patterns in order.
struct Index {
    exact: HashMap<(CounterSource, &'static str), usize>,
    patterns: Vec<(CounterSource, Vec<usize>)>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let mut exact = HashMap::new();
    let mut patterns: Vec<(CounterSource, Vec<usize>)> = CounterSource::ALL
        .iter()
        .map(|s| (*s, Vec::new()))
        .collect();
    for (i, d) in COUNTERS.iter().enumerate() {
        match d.name {
            Exact(n) => {
                exact.entry((d.source, n)).or_insert(i);
            }
            _ => {
                if let Some((_, v)) = patterns.iter_mut().find(|(s, _)| *s == d.source) {
                    v.push(i);
                }
            }
        }
    }
    Index { exact, patterns }
});

impl CounterDef {
    /// The row of counter `name` read from `source`, and its index in [`COUNTERS`].
    pub fn find(source: CounterSource, name: &str) -> (usize, &'static CounterDef) {
        let idx = &*INDEX;
        if let Some(&i) = idx.exact.get(&(source, name)) {
            return (i, &COUNTERS[i]);
        }
        let rows = idx
            .patterns
            .iter()
            .find(|(s, _)| *s == source)
            .map_or(&[][..], |(_, v)| v.as_slice());
        let i = rows
            .iter()
            .copied()
            .find(|&i| COUNTERS[i].name.matches(name))
            // Every source ends with an `Other` row (tested), so this is never taken.
            .unwrap_or(COUNTERS.len() - 1);
        (i, &COUNTERS[i])
    }

    /// The row of counter `name` read from `source`.
    pub fn of(source: CounterSource, name: &str) -> &'static CounterDef {
        Self::find(source, name).1
    }

    /// Every row of one counter of `source`, in table order.
    pub fn exact_rows(source: CounterSource) -> impl Iterator<Item = &'static CounterDef> {
        COUNTERS
            .iter()
            .filter(move |d| d.source == source && matches!(d.name, Exact(_)))
    }

    /// The names of the rows of `source` that probe reads and reports when not zero.
    pub fn probe_names(source: CounterSource) -> impl Iterator<Item = &'static str> {
        Self::exact_rows(source)
            .filter(|d| d.judges.probe)
            .filter_map(|d| d.name.exact())
    }

    /// A health counter (errors, drops, recoveries, link downs, congestion), as opposed to
    /// traffic and bookkeeping: the ones a timeline names when they move.
    pub fn is_health(&self) -> bool {
        self.class.is_health()
    }

    /// Soak's rules read it as evidence (not a basis): reported even when it did not move.
    pub fn judged_by_soak(&self) -> bool {
        self.judges.soak.is_some_and(|r| !r.is_basis())
    }

    /// Who judges it, for people: `soak (rcv_errors), doctor`, or `nobody`.
    pub fn judged_by(&self) -> String {
        let mut who = Vec::new();
        if let Some(r) = self.judges.soak.filter(|r| !r.is_basis()) {
            match r.family() {
                Some(f) => who.push(format!("soak ({}: {})", f.as_str(), r.as_str())),
                None => who.push(format!("soak ({}, reported)", r.as_str())),
            }
        }
        if self.judges.doctor {
            who.push("doctor".into());
        }
        if self.judges.probe {
            who.push("probe".into());
        }
        if who.is_empty() {
            "nobody".into()
        } else {
            who.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_ends_with_its_other_row_and_has_one_row_per_counter() {
        for s in CounterSource::ALL {
            let rows: Vec<&CounterDef> = COUNTERS.iter().filter(|d| d.source == s).collect();
            assert!(!rows.is_empty(), "{s:?} has no rows");
            assert_eq!(
                rows.iter().filter(|d| d.name == Other).count(),
                1,
                "{s:?}: one Other row"
            );
            assert_eq!(
                rows.last().map(|d| d.name),
                Some(Other),
                "{s:?}: Other last"
            );
            // The rows of one source are together.
            let first = COUNTERS.iter().position(|d| d.source == s).unwrap();
            assert!(COUNTERS[first..first + rows.len()]
                .iter()
                .all(|d| d.source == s));
        }
        let mut seen = std::collections::HashSet::new();
        for d in COUNTERS {
            if let Exact(n) = d.name {
                assert!(seen.insert((d.source, n)), "{n} twice");
                assert_eq!(CounterDef::of(d.source, n), d, "{n}");
            }
        }
    }

    #[test]
    fn lookups_take_the_exact_row_then_the_first_pattern() {
        let class = |s, n| CounterDef::of(s, n).class;
        assert_eq!(class(Ethtool, "rx_fec_uncorrectable_errors"), Error);
        assert_eq!(
            CounterDef::of(Ethtool, "rx_fec_uncorrectable_errors")
                .judges
                .soak,
            Some(PostFec)
        );
        assert_eq!(
            CounterDef::of(Ethtool, "fec_corrected_bits").judges.soak,
            Some(PreFec)
        );
        assert_eq!(
            CounterDef::of(Ethtool, "rx_fec_corrected_blocks")
                .judges
                .soak,
            Some(FecCorrected)
        );
        assert_eq!(class(Ethtool, "rx0_packets"), Traffic);
        assert_eq!(class(Ethtool, "tx_pause_storm_error_events"), Congestion);
        let soak = |n| CounterDef::of(Ethtool, n).judges.soak;
        for n in [
            "rx_prio3_pause",
            "rx_pause_ctrl_phy",
            "rx_global_pause",
            "rx_pause_frames",
        ] {
            assert_eq!(soak(n), Some(PauseReceived), "{n}");
        }
        for n in [
            "tx_prio0_pause",
            "tx_pause_ctrl_phy",
            "port.link_xoff_tx",
            "tx_flow_control_xoff",
        ] {
            assert_eq!(soak(n), Some(PauseSent), "{n}");
        }
        // Their time and transitions are not frames.
        assert_eq!(soak("rx_prio3_pause_duration"), None);
        assert_eq!(soak("tx_prio3_pause_transition"), None);
        assert_eq!(soak("tx_pause_storm_warning_events"), None);
        assert_eq!(class(IbCounters, "unicast_rcv_packets"), Traffic);
        assert_eq!(class(IbCounters, "port_new_errors"), Error);
        assert_eq!(class(IbHwCounters, "rx_write_requests"), Traffic);
        assert_eq!(class(IbHwCounters, "lifespan"), Setting);
        assert_eq!(class(NetdevStatistics, "rx_nohandler"), Info);
        assert_eq!(class(NetdevStatistics, "rx_future_dropped"), Error);
        assert_eq!(CounterDef::of(Ethtool, "link_down_events_phy").width, W32);
        assert_eq!(CounterDef::of(Ethtool, "symbol_error").width, W64);
    }

    #[test]
    fn the_stats64_fields_are_the_kernels_order_and_every_one_once() {
        // `struct rtnl_link_stats64` (include/uapi/linux/if_link.h), the first 24 fields.
        let fields = [
            "rx_packets",
            "tx_packets",
            "rx_bytes",
            "tx_bytes",
            "rx_errors",
            "tx_errors",
            "rx_dropped",
            "tx_dropped",
            "multicast",
            "collisions",
            "rx_length_errors",
            "rx_over_errors",
            "rx_crc_errors",
            "rx_frame_errors",
            "rx_fifo_errors",
            "rx_missed_errors",
            "tx_aborted_errors",
            "tx_carrier_errors",
            "tx_fifo_errors",
            "tx_heartbeat_errors",
            "tx_window_errors",
            "rx_compressed",
            "tx_compressed",
            "rx_nohandler",
        ];
        let rows: Vec<(usize, &str)> = COUNTERS
            .iter()
            .filter_map(|d| match (d.read, d.name) {
                (Stats64(i), Exact(n)) => Some((i, n)),
                _ => None,
            })
            .collect();
        assert_eq!(rows.len(), fields.len());
        for (i, n) in rows {
            assert_eq!(fields[i], n);
        }
    }

    #[test]
    fn widths_saturate_where_the_pma_says() {
        assert_eq!(CounterWidth::Bits(4).saturation_value(0), Some(15));
        assert_eq!(CounterWidth::Bits(8).saturation_value(0), Some(255));
        assert_eq!(CounterWidth::Bits(16).saturation_value(0), Some(65535));
        assert_eq!(CounterWidth::Bits(64).saturation_value(0), None);
        // A data counter is 32 bits until a value proves 64.
        let max = CounterWidth::U32_MAX;
        assert_eq!(DATA.saturation_value(7), Some(max));
        assert_eq!(DATA.saturation_value(max), Some(max));
        assert_eq!(DATA.saturation_value(max + 1), None);
        assert_eq!(DATA.label(), "32/64");
        assert_eq!(W4.label(), "4");
        // The PMA error counters probe reads, with the widths of sysfs-kb §1.4.
        let pma: Vec<(&str, CounterWidth)> = CounterDef::exact_rows(IbCounters)
            .filter(|d| d.judges.probe)
            .map(|d| (d.name.exact().unwrap(), d.width))
            .collect();
        assert_eq!(pma.len(), 13);
        assert!(pma.contains(&("port_xmit_wait", W32)));
        assert!(pma.contains(&("local_link_integrity_errors", W4)));
    }

    // Moved from linerate-soak's width.rs with the widths.
    #[test]
    fn ib_widths_match_the_pma_table() {
        let w = |n| CounterDef::of(IbCounters, n).width;
        for (name, bits) in [
            ("symbol_error", 16),
            ("link_error_recovery", 8),
            ("link_downed", 8),
            ("port_rcv_errors", 16),
            ("port_rcv_remote_physical_errors", 16),
            ("local_link_integrity_errors", 4),
            ("excessive_buffer_overrun_errors", 4),
            ("port_xmit_discards", 16),
            ("port_xmit_wait", 32),
            ("VL15_dropped", 16),
            ("port_xmit_constraint_errors", 8),
            ("port_rcv_constraint_errors", 8),
            ("unicast_rcv_packets", 64),
        ] {
            assert_eq!(w(name), CounterWidth::Bits(bits), "{name}");
        }
        assert_eq!(w("port_rcv_data"), CounterWidth::DataCounter);
        assert_eq!(w("port_xmit_packets"), CounterWidth::DataCounter);
    }

    #[test]
    fn other_sources_are_wide_but_link_down_events_phy() {
        assert_eq!(
            CounterDef::of(Ethtool, "link_down_events_phy").width,
            CounterWidth::Bits(32)
        );
        for s in [IbHwCounters, NetdevStatistics, Carrier, Ethtool] {
            // The same name under another source is not the PMA counter.
            assert_eq!(
                CounterDef::of(s, "symbol_error").width,
                CounterWidth::Bits(64)
            );
        }
    }

    /// The health counters of every source, as the tracker and watch tell them (moved from
    /// linerate-soak's tracker.rs with `is_health_counter`).
    #[test]
    fn health_counters() {
        let h = |s, n| CounterDef::of(s, n).is_health();
        assert!(h(IbCounters, "symbol_error"));
        assert!(h(IbCounters, "port_xmit_wait"));
        assert!(!h(IbCounters, "port_rcv_data"));
        assert!(!h(IbCounters, "unicast_rcv_packets"));
        assert!(h(Ethtool, "rx_pcs_symbol_err_phy"));
        assert!(h(Ethtool, "rx_corrected_bits_phy"));
        assert!(h(Ethtool, "link_down_events_phy"));
        assert!(!h(Ethtool, "rx0_packets"));
        assert!(h(NetdevStatistics, "rx_crc_errors"));
        assert!(!h(NetdevStatistics, "rx_bytes"));
        assert!(h(Carrier, "carrier_down_count"));
        assert!(!h(Carrier, "carrier_up_count"));
        assert!(h(IbHwCounters, "out_of_buffer"));
        assert!(!h(IbHwCounters, "rx_write_requests"));
    }

    #[test]
    fn every_judged_role_names_its_family_and_a_row() {
        for d in COUNTERS {
            if let Some(r) = d.judges.soak {
                assert_eq!(
                    r.family().is_none(),
                    r.is_basis() || r == FecCorrected,
                    "{:?}",
                    d.name
                );
            }
        }
        assert_eq!(
            CounterDef::of(NetdevStatistics, "rx_crc_errors").judged_by(),
            "soak (receive: rcv_errors), doctor, probe"
        );
        assert_eq!(
            CounterDef::of(NetdevStatistics, "multicast").judged_by(),
            "nobody"
        );
    }
}
