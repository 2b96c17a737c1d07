//! linerate's control protocol (see `docs/protocol.md`).
//!
//! Every message is a frame: a 4-byte big-endian length, then that many bytes
//! of UTF-8 JSON holding one [`Msg`]. Frames are bounded: a reader refuses a
//! length above its limit before reading the body. A connection's first frame
//! says what it is: [`Msg::Hello`] opens a control connection, [`Msg::DataHello`]
//! attaches a data stream to an accepted test. The conversation of each end is
//! [`session`]'s, without I/O.

mod auth;
pub mod defaults;
mod frame;
pub mod kind;
mod msg;
mod params;
pub mod session;
pub mod soak;
mod testkind;

pub use auth::{load_psk, Psk, PskError, MIN_PSK_BYTES};
pub use frame::{
    decode, encode, read_frame, read_msg, write_msg, FrameAssembler, FrameError, MAX_CONTROL_FRAME,
    MAX_RESULTS_FRAME,
};
pub use kind::Spec;
pub use msg::{
    CpuUsage, FileStats, HostCpuLoad, IntervalSample, LatencyStats, LinkTraffic, Msg, RdmaListen,
    RdmaTargetStats, SideResults, Stalls, StreamResult, TcpLimited, TcpStats, UdpStats, UdpWarmup,
    MAGIC, MAX_STALL_SPANS, PROTOCOL_VERSION,
};
pub use params::{
    Direction, FileSpec, Limits, Param, RdmaOp, RdmaSpec, Refusal, RefusalKind, ShapeError,
    TestParams, FILE_BUFFERS, RDMA_MAX_MESSAGE, RDMA_MAX_QPS, RDMA_MAX_WINDOW,
};
pub use testkind::{EndsBy, Facts, Measures, Takes, TestKind, Transaction};

/// The default TCP port of `linerate serve` (control and TCP data connections).
pub const DEFAULT_PORT: u16 = defaults::PORT;

/// A random token, hex encoded (cookies and nonces).
pub fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).expect("the OS random source works");
    hex::encode(b)
}
