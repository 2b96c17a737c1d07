//! iperf3's wire protocol as plain data and pure functions, without sockets, so that a server
//! (`linerate serve` accepting stock iperf3 clients), a client (`linerate bench --iperf3`
//! against a stock server) and a fuzzer drive the same code. Facts come from esnet/iperf's
//! source, release by release from 3.0 to 3.21, and from captures of real iperf3 binaries
//! talking to each other (`tests/transcripts/`, with what they showed in its README).
//!
//! A test, on one TCP control connection (the client's writes on the left):
//!
//! ```text
//! C: cookie (37 bytes)                      S: ACCESS_DENIED when busy, and close; else
//!                                           S: PARAM_EXCHANGE
//! C: params (length + JSON)                 S: checks them; SERVER_ERROR + code, or
//!                                           S: CREATE_STREAMS
//! C: opens the streams, one after another (TCP: connect + cookie; UDP: the 4-byte handshake)
//!                                           S: TEST_START, TEST_RUNNING
//! ... data ...
//! C: TEST_END                               S: EXCHANGE_RESULTS
//! C: results (length + JSON)                S: results (length + JSON), DISPLAY_RESULTS
//! C: IPERF_DONE, then closes
//! ```
//!
//! - [`state`]: the state bytes and SERVER_ERROR's codes;
//! - [`cookie`]: the cookie, and telling an iperf3 client from other first bytes;
//! - [`frame`]: length-prefixed JSON in one buffer, and a bounded incremental decoder;
//! - [`params`]: the client's parameters, iperf3's limits and the code for each refusal;
//! - [`results`]: the results both ends exchange;
//! - [`errors`]: iperf3's error codes with its own words and linerate's;
//! - [`udp`]: the datagram header, the handshake's magic, the receiver's loss and jitter;
//! - [`report`]: the server's own report, as `iperf3 -s` prints it (`--get-server-output`);
//! - [`session`]: each end's side of the control connection, sans I/O, in the order above;
//! - [`streams`]: stream ids (1, 3, 4, …) and who sends on which;
//! - [`version`]: what each release can do, and what a peer's messages say of its version.

pub mod cookie;
pub mod errors;
pub mod frame;
mod json;
pub mod params;
pub mod refusal;
pub mod report;
pub mod results;
pub mod session;
pub mod state;
pub mod streams;
pub mod udp;
pub mod version;

pub use cookie::{sniff, Cookie, Sniff, COOKIE_LEN};
pub use errors::ErrorCode;
pub use frame::{encode_frame, FrameDecoder, JsonFrameError, PARAMS_MAX, RESULTS_MAX};
pub use json::DecodeError;
pub use params::{Iperf3Params, Protocol, ServerLimits, Test, Violation};
pub use refusal::Iperf3Refusal;
pub use report::{ReportInterval, ReportStream, ServerReport, StreamSummary, UdpSummary};
pub use results::{
    Omitted, PeerFigures, Results, SenderRetransmits, StreamMismatch, StreamResults,
};
pub use session::{
    ClientSession, FromClient, FromServer, ServerSession, SessionError, SessionPhase,
};
pub use state::{ControlMsg, Peer, ServerError, State, UnknownState};
pub use streams::{plan, DataFlow, Role, Stream, StreamId};
pub use version::{Feature, Version, VersionRange};

/// iperf3's default port, for TCP (control and data) and UDP alike.
pub const DEFAULT_PORT: u16 = 5201;
