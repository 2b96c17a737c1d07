//! What one end reads every interval. Raw counter values, never reset: the judge works on
//! deltas between samples of the same end (the two ends' clocks are not assumed to agree).
//!
//! The types travel in the control protocol's `soak_sample` message, so they are defined in
//! `linerate-proto` (which this crate reaches through `linerate-results` anyway) and re-exported
//! here unchanged.

pub use linerate_proto::soak::{CounterSource, End, PortSample, SoakPortKind, SoakSample};
