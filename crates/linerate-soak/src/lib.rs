//! The pure parts of `linerate soak`: on the counter samples both ends take every interval
//! (`linerate_proto::soak`, since they travel in the control protocol), the deltas that survive saturation and foreign resets, and the verdicts per
//! port and end with the rule, numbers and source each one cites. No I/O: sampling lives in
//! `linerate-inventory` (sysfs, ethtool) and `linerate-bench` (the server's side over the
//! control connection), the renderers in `linerate-report`.
//!
//! Use: push every sample of both ends into a [`Tracker`] (each push returns the interval it
//! closed, for the live line: [`SoakInterval::new`]), then [`judge`] it into a [`SoakReport`]
//! with the operator's [`JudgeParams`] ([`thresholds`] holds every default and its source).
//! A before/after pair of samples is a soak of one interval: push both, read the
//! [`CounterTrack`]s.

/// A unit-only enum whose variants each have one stable string: the enum, `ALL` (every
/// variant, in declaration order, so the order of the declaration is the order of `Ord`),
/// `as_str`, `FromStr`, `Display`, and serde through the same strings. The list and the
/// strings are generated with the enum, so they cannot drift from it; the schemas' enums are
/// checked against `ALL` by `tests/vocabulary.rs`.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $s:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,
            serde::Serialize, serde::Deserialize,
        )]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $s)] $variant, )+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The stable string: the JSON value, the label value, the name on the command line.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $s, )+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let names: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    format!("`{s}`: expected one of {}", names.join(", "))
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod judge;
pub mod phy;
mod port;
pub mod report;
mod rules;
pub mod thresholds;
pub mod tracker;
pub mod verdict;

pub use judge::{judge, judge_port, symbol_budget};
pub use phy::{DownLight, PhyTrack, RxTrack, TempTrack};
pub use port::{data_gbps, fmt_duration, is_pam4};
pub use report::{
    BerEstimate, BitsBasis, Check, CounterOut, Dip, EndReport, MovedOut, PortReport, SoakEvent,
    SoakFinding, SoakInterval, SoakParams, SoakReport, SymbolBudget,
};
pub use thresholds::{JudgeParams, Threshold};
pub use tracker::{
    CounterKey, CounterStep, CounterTrack, EndTotals, IntervalRecord, Mark, MovedIdx, PortInfo,
    Reset, Saturation, Tracker,
};
pub use verdict::{RuleId, Source, Unit, Verdict, VerdictRule};
