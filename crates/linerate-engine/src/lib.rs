//! linerate's measurement engines.
//!
//! Each engine is a loop on one socket, run on its own thread, that moves
//! data until a deadline or end of stream and counts bytes in a shared
//! [`Meter`]. A [`sample_intervals`] thread turns the meters into interval
//! samples and pushes them into a [`Sink`]. Engines know nothing of the
//! control protocol or of terminals.

pub mod crr;
pub mod file;
pub mod iperf3_udp;
pub mod lat;
pub mod mem;
pub mod meter;
pub mod sys;
pub mod tcp;
pub mod udp;

pub use meter::{sample_intervals, Meter, SampleSchedule, Sink, Stop};

/// What one stream's thread returns.
#[derive(Debug, Clone, Default)]
pub struct StreamOutcome {
    pub bytes: u64,
    /// CPU of the stream's thread, seconds.
    pub user_s: f64,
    pub system_s: f64,
    pub tcp: Option<linerate_proto::TcpStats>,
    pub udp: Option<linerate_proto::UdpStats>,
    /// File transfers: the disk side of the stream.
    pub file: Option<linerate_proto::FileStats>,
    /// When the last byte moved (receivers: end of stream).
    pub ended: Option<std::time::Instant>,
    pub error: Option<String>,
}

/// A result with the CPU its thread used: (result, user s, system s).
pub type Timed<T> = (T, f64, f64);

/// Run `f` and measure the calling thread's CPU time.
pub fn timed<T>(f: impl FnOnce() -> T) -> Timed<T> {
    let (u0, s0) = sys::thread_cpu();
    let r = f();
    let (u1, s1) = sys::thread_cpu();
    (r, u1 - u0, s1 - s0)
}

/// Run `f` on the current thread and add the thread's CPU time to the outcome.
pub fn with_thread_cpu(f: impl FnOnce() -> StreamOutcome) -> StreamOutcome {
    let (mut o, user, system) = timed(f);
    o.user_s = user;
    o.system_s = system;
    o
}
