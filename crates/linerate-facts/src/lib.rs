//! The plain data linerate's parts share, at the bottom of the dependency graph: the inventory
//! of a machine, the findings and their vocabulary, the facts of one end of a path and of a
//! host ([`HostFacts`], sent to a peer), the probe document, the parts of doctor's document,
//! `setup`'s plan, and the header every JSON document carries.
//!
//! No I/O and no judgement: `linerate-inventory` reads the inventory, `linerate-rules` judges
//! it, `linerate-report` renders it. Every type has one name, here at the crate's root.

mod analysis;
mod buffers;
mod counter;
mod doctor;
mod end;
mod far_end;
mod finding;
mod header;
mod host_facts;
mod inventory;
mod probe;
mod roce;
mod setup;

pub use analysis::{Analysis, PortAnalysis};
pub use buffers::{window_of, TcpBufferSizes, SYSCTL_FILE};
pub use counter::{
    CounterClass, CounterDef, CounterJudges, CounterName, CounterRead, CounterRole, CounterSource,
    CounterUnit, CounterWidth, SoakFamily, COUNTERS,
};
pub use doctor::{CopyLimit, DoctorVerdict, Inventories, MemOut, PathFacts, Pyramid, Row};
pub use end::{
    CounterDelta, EndFacts, FecEnd, OpticsEnd, QdiscDelta, QdiscSide, QdiscsSeen, ShaperFact,
    UdpReceive, UdpReceiveSeen,
};
pub use far_end::FarEndCopy;
pub use finding::{Cause, Evidence, Finding, FindingId, FindingOrigin, Severity};
pub use header::{Tool, SCHEMA_VERSION, TOOL};
pub use host_facts::{HostFacts, InterfaceView, Unread};
pub use inventory::{
    cpulist_string, dbm, parse_cpulist, parse_hex_u16, parse_hex_u32, Bond, Channels, Coalesce,
    Counter, Dcb, DcbApp, DcbRead, Diagnostics, Dimm, EcnSwitches, Ets, Fec, FecMode, Gid,
    GidFamily, Host, HwmonSensor, IbDevice, IbPort, IbPortFiles, Inventory, IpoibInfo, IpoibMode,
    LaneDiagnostics, Level, LibfabricFacts, LimitsLine, LinkLayer, LinkModes, Media, MemlockLimit,
    Module, ModuleStandard, Netdev, NetdevKind, NfsFstab, NfsMount, NumaNode, OsFamily, Pause,
    PciFunction, PcieLinkFiles, PcieSpeedFiles, Pfc, PhyGauges, PhyQuery, PhySource, PhyUnread,
    Port, PortKind, PortPhy, PortQos, Problem, ProblemKind, RdmaCmDefaults, RdmaKnock, RdmaStack,
    Rings, RoceVersion, Route, RxPowerMeasure, RxReading, SocketLimits, Sriov, SriovVf,
    TempReading, Thresholds, UnreadWhy, UpstreamPort, VfInfo, VfLinkState, APP_SEL_DSCP,
    APP_SEL_PCP, PHY_SAMPLE_PERIOD_S, PRIORITIES,
};
pub use probe::{IbDoc, NfsDoc, PciDoc, PortDoc, ProbeDoc};
pub use roce::{MtuSource, RoceGid, RoceMtu, RoceTraffic, RoceView, Trust};
pub use setup::{
    Applied, Distro, Family, FileAction, FileChange, Note, Plan, PlanCommand, RestartRun,
    RolledBack, SetupRefusal, Step, Topic, When, Why,
};
