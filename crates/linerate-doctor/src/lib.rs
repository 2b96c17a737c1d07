//! `linerate doctor`: probe both ends, run a short test plan, and set every
//! result against the ceiling of its path. The rules are in
//! `linerate_rules::diagnose` (pure); this crate runs things and gathers facts.

pub mod plan;
pub mod run;

pub use plan::{plan, Depth};
pub use run::{run, DoctorOptions, FarEndNeeds, RdmaMode, StartFarEnd, StartedFarEnd};
