//! The pure parts of `linerate soak`: on the counter samples both ends take every interval
//! (`linerate_proto::soak`, since they travel in the control protocol), the deltas that survive
//! saturation and foreign resets, and the verdicts per port and end with the rule and source each
//! one cites. No I/O: sampling lives in `linerate-inventory` (sysfs, ethtool) and
//! `linerate-bench` (the server's side over the control connection), the renderers in
//! `linerate-report`.
//!
//! Use: push every sample of both ends into a [`Tracker`] (each push returns the interval it
//! closed, for the live line: [`SoakInterval::new`]), then [`judge`] it into a [`SoakReport`].

pub mod judge;
pub mod report;
pub mod tracker;
pub mod verdict;
pub mod width;

pub use judge::{fmt_duration, is_pam4, judge, median, symbol_budget};
pub use report::{
    defaults, BerEstimate, BitsBasis, CounterOut, Dip, EndReport, JudgeParams, MovedOut,
    PortReport, SoakEvent, SoakFinding, SoakInterval, SoakParams, SoakReport, SymbolBudget,
};
pub use tracker::{
    is_health_counter, CounterKey, CounterTrack, EndTotals, IntervalRecord, Mark, MovedIdx,
    PortInfo, Reset, Saturation, Tracker,
};
pub use verdict::{RuleId, Source, Verdict};
pub use width::{counter_width, CounterWidth};
