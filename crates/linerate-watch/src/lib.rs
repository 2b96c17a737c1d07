//! The pure parts of `linerate watch`: every port live, against its ceiling, with its errors
//! judged as they happen.
//!
//! - [`port`]: the ports to show, drawn from an inventory: identity, link, the ceiling from
//!   `linerate_rules::port_ceiling` (a bond's from its members), PCIe link and NUMA node;
//! - [`changes`]: link events between two readings (state, rate, width, PCIe, MTU, ports
//!   coming and going) and flaps seen by the link-down counters;
//! - [`window`]: soak's tracker and judge over a rolling window (one judge, not a second);
//! - [`watcher`]: the state of a watch, fed one sample at a time, giving each interval's
//!   [`Frame`] (the `--json-stream` line) and the totals the metrics endpoint exports;
//! - [`view`]: the screen's state and keys: selection, sort, filter, units, pause, help.
//!
//! No I/O: `linerate-inventory` samples (`counters::CounterSampler`, `links::LinkWatch`), the
//! renderers are in `linerate-report` (`watch`: the lines and the metrics; `watch_screen`: the
//! terminal screen), the command in `linerate-cli`.

pub mod changes;
pub mod frame;
pub mod history;
pub mod port;
pub mod view;
pub mod watcher;
pub mod window;

pub use changes::{ChangeKind, LinkChange, Tick};
pub use frame::{
    CountedFrom, CounterRate, Frame, Moved, PortFrame, WindowCounter, WindowFinding, WindowMark,
};
pub use history::{RatePoint, Ring};
pub use port::{
    asked_for, port_id, watched_ports, BondFacts, CeilingFacts, LinkFacts, PcieFacts, PortId,
    WatchKind, WatchedPort,
};
pub use view::{Key, KeyOutcome, RateUnit, SortKey, ViewState};
pub use watcher::{PortTotals, WatchParams, Watcher};
pub use window::WindowJudge;
