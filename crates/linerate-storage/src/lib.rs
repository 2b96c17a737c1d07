//! The storage pyramid beside the network: how fast a disk, a memory filesystem or a network
//! mount reads and writes, sequentially and at random, with latency percentiles.
//!
//! [`disk::run`] measures one directory. The pure parts (test file size, mountinfo parsing,
//! percentiles) are in their own modules and tested with constructed data; every `unsafe` block
//! is in `sys` (statvfs, posix_fadvise, io_uring submission).

pub mod disk;
mod engine;
pub mod mountinfo;
mod signals;
pub mod size;
mod sys;

pub use disk::{run, DiskError, DiskErrorKind, DiskEvent, DiskPlan, EngineChoice};
