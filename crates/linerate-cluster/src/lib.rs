//! The runtime of `linerate mesh`: how the ranks of a cluster run find rank 0's coordinator,
//! the rank protocol (join, address table and schedule, a barrier per round, measurements,
//! heartbeats), each rank's data server and the flows it runs. Plain data in and out: the
//! verdicts live in `linerate-mesh`, the renderers in `linerate-report`.

pub mod coordinator;
pub mod flows;
pub mod load;
pub mod rank;
pub mod rendezvous;
pub mod wire;

pub use coordinator::{CoordEvent, CoordinatorConfig, MeshRun};
pub use rank::{RankConfig, RankError, RankRun};
