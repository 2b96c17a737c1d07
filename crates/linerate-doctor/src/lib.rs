//! `linerate doctor`: probe both ends, run a short test plan, and set every result against the
//! ceiling of its path. The rules are in `linerate_rules::diagnose` (pure); this crate runs
//! things and gathers facts.
//!
//! Its parts: [`run`] puts the steps in order and tells its caller of each as a [`Progress`]
//! (words, or a disk's results: the caller renders them); `local` measures memory and the
//! disks; [`far`] is the far end behind a trait ([`far::FarEndClient`]: run one test against
//! it), opened for the options (a server given, one started through ssh, or one of this
//! process); [`steps`] runs the network tests against it and [`steps::ThisHost`], whose live
//! implementation ([`host`]) measures this host's CPU around each test
//! (`linerate_engine::hostcpu`); [`counters`] watches the port's error counters through the
//! soak's sampler and tracker; [`assemble`] hands everything to the rules and builds the
//! document.

pub mod assemble;
pub mod counters;
pub mod far;
pub mod host;
pub mod local;
pub mod nfs;
pub mod options;
pub mod plan;
pub mod run;
pub mod steps;

pub use options::{
    DoctorError, DoctorOptions, FarEndNeeds, Progress, RdmaMode, StartFarEnd, StartedFarEnd,
    StartedProtocol,
};
pub use plan::{plan, Depth};
pub use run::run;
