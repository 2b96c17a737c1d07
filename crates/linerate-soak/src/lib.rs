//! The pure parts of `linerate soak`: the counter samples both ends take every interval, and
//! (built on them) the deltas that survive saturation and foreign resets, and the verdicts per
//! port and end with the rule and source each one cites. No I/O: sampling lives in
//! `linerate-inventory` (sysfs, ethtool) and `linerate-bench` (the server's side over the
//! control connection), the renderers in `linerate-report`.

pub mod tracker;
pub mod types;
pub mod width;

pub use tracker::{
    is_health_counter, CounterKey, CounterTrack, EndTotals, IntervalRecord, Mark, MovedIdx,
    PortInfo, Reset, Saturation, Tracker,
};
pub use types::{CounterSource, End, PortSample, SoakPortKind, SoakSample};
pub use width::{counter_width, CounterWidth};
