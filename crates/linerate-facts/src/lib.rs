//! The plain data linerate's parts share, at the bottom of the dependency graph: the inventory
//! of a machine, the findings and their vocabulary, the facts of one end of a path and of a
//! host ([`HostFacts`], sent to a peer), the probe document, the parts of doctor's document,
//! `setup`'s plan, and the header every JSON document carries.
//!
//! No I/O and no judgement: `linerate-inventory` reads the inventory, `linerate-rules` judges
//! it, `linerate-report` renders it. Every type has one name, here at the crate's root.

mod analysis;
mod buffers;
mod doctor;
mod end;
mod finding;
mod header;
mod host_facts;
mod inventory;
mod probe;
mod setup;

pub use analysis::{Analysis, PortAnalysis};
pub use buffers::{window_of, TcpBufferSizes, SYSCTL_FILE};
pub use doctor::{CopyLimit, DoctorVerdict, Inventories, MemOut, PathFacts, Pyramid, Row};
pub use end::{CounterDelta, EndFacts, QdiscDelta, QdiscSide, QdiscsSeen, ShaperFact};
pub use finding::{Cause, Evidence, Finding, FindingId, FindingOrigin, Severity};
pub use header::{Tool, SCHEMA_VERSION, TOOL};
pub use host_facts::{HostFacts, InterfaceView, Unread};
pub use inventory::{
    cpulist_string, parse_cpulist, parse_hex_u16, parse_hex_u32, Bond, Counter, Dimm, Gid, Host,
    IbDevice, IbPort, IbPortFiles, Inventory, IpoibInfo, IpoibMode, LibfabricFacts, LimitsLine,
    LinkLayer, MemlockLimit, Netdev, NetdevKind, NfsFstab, NfsMount, NumaNode, OsFamily,
    PciFunction, PcieLinkFiles, PcieSpeedFiles, Port, PortKind, Problem, ProblemKind, RdmaKnock,
    RdmaStack, Route, SocketLimits, UpstreamPort,
};
pub use probe::{IbDoc, NfsDoc, PciDoc, PortDoc, ProbeDoc};
pub use setup::{
    Applied, Distro, Family, FileAction, FileChange, Note, Plan, PlanCommand, RestartRun,
    RolledBack, SetupRefusal, Step, Topic, When, Why,
};
