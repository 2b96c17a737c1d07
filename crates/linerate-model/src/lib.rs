//! The ceiling model of linerate.
//!
//! Everything in this crate is pure: rate tables for InfiniBand, Ethernet and
//! PCIe, parsers for the strings the kernel prints, the per-packet header
//! arithmetic of TCP over Ethernet and IPoIB, and [`ceiling`], which turns a
//! port's facts into a chain of stages and the stage that limits it.
//!
//! Units: every `gbps` is 10^9 bit/s of data; `mbps` is 10^6 bit/s.

pub mod cards;
pub mod ceiling;
pub mod encoding;
pub mod eth;
pub mod firmware;
pub mod host;
pub mod ib;
pub mod mtu;
pub mod pcie;
pub mod roce;
pub mod spec;

pub use ceiling::{
    ceiling, Ceiling, CeilingInput, LimitedBy, LinkInput, Stage, StageKind, Usability, VfInput,
};
pub use encoding::Encoding;
pub use eth::EthSpeed;
pub use host::{host_stack_ceiling, HostStackCeiling, HostStackInput};
pub use ib::{IbPhysState, IbRate, IbSpeed, IbState};
pub use mtu::{IpFraming, MtuInput};
pub use pcie::{PcieGen, PcieLink, PcieSpeed};
