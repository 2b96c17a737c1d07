//! linerate's far end over ssh (`doctor`, `bench` and `soak` with `--ssh`): a temporary
//! `linerate serve` (or, on a host without linerate, a stock `iperf3 -s`) started through the
//! system's `ssh`, so the user's keys, agent, `~/.ssh/config`, ProxyJump and known_hosts apply.
//!
//! - ssh runs with `BatchMode=yes` and host key checking as configured, never turned off: an
//!   unknown or changed host key, or a login that would prompt, fails with ssh's own words and
//!   what to do ([`SshError`]). `LINERATE_SSH_COMMAND` replaces the ssh program and its options
//!   as `GIT_SSH_COMMAND` does for git ([`Ssh`]).
//! - Only the start goes through ssh: the tests go straight to the test address.
//! - The far end's lifelines ([`FarEnd`]): its stdin (closed when this process ends, however it
//!   ends), its test count, a hard deadline, and on Linux its parent's death; this end's ssh is
//!   in a process group of its own and is ended by signal when it does not end by itself.
//! - `--ssh-copy` ([`CopyMode`]): a far end without linerate (or with one of an older
//!   protocol) runs a copy of this binary, sent over the same ssh session, checked by its
//!   SHA-256 and removed as soon as it runs ([`copy`](crate::copy) says how).
//! - [`Iperf3Server`]: `iperf3 -s -1` under a terminal (`ssh -tt`), GNU `timeout` and
//!   `--idle-timeout` where the far end has them.

mod copy;
mod elf;
mod error;
mod host;
mod iperf3;
mod listening;
mod serve;
mod session;
mod ssh;

use std::time::Duration;

pub use copy::{remove_own_copy, Copied, CopyMode, REMOVE_ON_START_ENV};
pub use elf::{glibc_needed, ElfError, Glibc};
pub use error::{Said, SshError};
pub use host::host_part;
pub use iperf3::{Iperf3Host, Iperf3Server, Iperf3Spec, IPERF3_PORT};
pub use serve::{FarEnd, FarEndSpec, DEFAULT_PROGRAM};
pub use ssh::{base_options, remote_command, HostConfig, Ssh, CONNECT_TIMEOUT_S, SSH_COMMAND_ENV};

/// From ssh's start to the far end's first line: the connection (`ConnectTimeout` per hop),
/// the login and the program's start.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// From closing the far end's stdin to its ssh's end, before this end ends ssh by signal.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);
