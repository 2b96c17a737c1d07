//! The lab: guests of a distribution's stock kernel (Debian's `linux-image-amd64`) under QEMU,
//! booted by virtme-ng on a read-only snapshot of this machine's own root, joined by virtual
//! wires, with soft-RoCE (`rdma_rxe`) devices on their NICs. Real kernels, real drivers, real
//! sysfs for linerate's tests and `bench/` scripts, on a machine with no RDMA hardware and a
//! kernel without RDMA or netem. See `docs/lab.md`.
//!
//! - [`spec`]: what a lab is made of (guests, NICs, PCIe root ports, wires) and each guest's
//!   command line, pure.
//! - [`host`]: what this machine must have, each missing piece said in one line.
//! - [`agent`]: the program each guest runs (this crate's `linerate-lab agent`) and its
//!   protocol: commands with deadlines, in process groups, over a virtio-serial port.
//! - [`lab`]: a running lab; everything it started ends by PID when it is dropped.
//! - [`capture`]: the sysfs a real driver wrote, for `fixtures/sysfs/build.py`.

pub mod agent;
pub mod capture;
pub mod host;
pub mod lab;
pub mod spec;

pub use agent::{Output, Status};
pub use host::Kernel;
pub use lab::{Awaited, Bg, Guest, Lab};
pub use spec::{GuestSpec, LabSpec, Mac, NicModel, NicSpec, RootPort, SlotSpeed};

/// Why a lab could not be used, in one line.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// This machine lacks something a lab needs (a test that meets this cannot run here).
    #[error("the lab cannot run here: {0}")]
    Missing(String),
    #[error("bad lab: {0}")]
    Spec(String),
    #[error("guest {guest} did not come up: {why}; its log: {log}")]
    Boot {
        guest: String,
        why: String,
        log: String,
    },
    #[error("guest {guest} did not answer {what} within {secs} s")]
    Silent {
        guest: String,
        what: String,
        secs: u64,
    },
    #[error("guest {guest} went away during {what}: {why}; its log: {log}")]
    Gone {
        guest: String,
        what: String,
        why: String,
        log: String,
    },
    #[error("in guest {guest}, `{command}` failed ({}): {stderr}", status.describe())]
    Failed {
        guest: String,
        command: String,
        status: Status,
        stderr: String,
    },
    #[error("in guest {guest}, `{command}` did not print a line with `{ready}`: {why}; its output: {output}")]
    NotReady {
        guest: String,
        command: String,
        ready: String,
        why: String,
        output: String,
    },
    #[error("guest {guest}'s agent: {message}")]
    Agent { guest: String, message: String },
    #[error("lab: {0}")]
    Io(String),
}
