//! linerate's control conversation, sans I/O: one machine per end ([`ControlClient`],
//! [`ControlServer`]) that takes the peer's bytes as they come and the events of its own end,
//! and says what to do: bytes to write, a deadline to wait until, data connections to open or
//! hand over, a test to admit, start or stop, and how the conversation ended. The caller owns
//! the sockets, the threads and the clock: it reads at most [`Session::read_limit`] bytes, until
//! [`Session::deadline`] at the latest, and feeds what it read ([`Session::receive`]), the time
//! that passed ([`Session::timeout`]) or the peer's leaving ([`Session::gone`]); then it does
//! every [`Session::poll`] action, in order.
//!
//! ```text
//! client (ControlClient)                               server (ControlServer)
//! new: hello {magic, protocol, version, nonce} ──▶      first frame, by the handshake deadline
//!   (first bytes not a frame's: Failed(NotLinerate))     data_hello → Data{cookie, stream}
//!                                                        (NoSuchTest → error, Close(Quiet))
//!                      ◀── server_hello {protocol, version, auth, nonce}
//! auth = true: auth {proof} ──▶                          proof checked, then
//!                      ◀── auth_ok {proof}               (wrong: 200 ms, error, AuthFailed)
//! request {params} ──▶                                   fit and validated → Admit(params)
//!                                                        Accept{..} | Refuse(refusal)
//!                      ◀── accepted {cookie, ports, memory_bytes, inventory} | refused
//! Accepted: data connections opened                      data connections collected
//!   (data_hello {cookie, stream} on each TCP one)        DataReady | DataFailed(reason)
//! DataReady: start ──▶                                   Start: the test runs
//!                      ◀── interval, soak_sample         Interval, SoakSample (each interval)
//! Remote, RemoteSoak
//! LocalDone: done ──▶                                    PeerDone
//!                      ◀── results                       Finished(results) → Close(Served)
//! Finished(results)
//! ```
//!
//! The client waits on each answer [`defaults::CONTROL_TIMEOUT`](crate::defaults::CONTROL_TIMEOUT)
//! without a byte, and for the server's results until the test's duration,
//! [`defaults::GRACE`](crate::defaults::GRACE) and that timeout have passed from `start` (an RDMA
//! test, whose server sends no intervals: the grace and the timeout from `done`). The server has
//! one deadline from its accept to `start`, moved only by its own setup of a test
//! (`Accept::setup`); the test's own time is the caller's. What ends the conversation early, in
//! each state:
//!
//! | state | the peer's bytes wrong | the peer gone | the deadline |
//! |---|---|---|---|
//! | client: waiting for `server_hello` | not a frame: `NotLinerate`; `error`: `Server`; another version: `OtherVersion`; else `Unexpected` or `Wire` | `ClosedBeforeAnswer` (nothing came) or `Wire` | `Silent` (nothing came) or `Wire` |
//! | client: waiting for `auth_ok` | a wrong proof: `BadProof`; `error`: `AuthRefused` | `Wire` | `Wire` |
//! | client: waiting for the answer | `refused`: `Refused`; `error`: `Server` | `ClosedOnRequest` | `Wire` |
//! | client: the test | `error`: `Reported`; too many or wrong intervals or soak samples (an RDMA test: anything but `results`): `Abort` and an error | `Abort`, `Lost` | `NotInTime` (RDMA: `Lost`) |
//! | server: first frame | `error` and `Refused`, or `Dropped` | `Dropped` | `Dropped` |
//! | server: authentication | a wrong proof: `AuthFailed` | `Dropped` | `Dropped` |
//! | server: the request | `error` and `Quiet`, a refusal and `Refused`, or `Dropped` | `Dropped` | `Dropped` |
//! | server: `start` | `NotStarted` | `NotStarted` | `NotStarted` |
//! | server: the test | `PeerGone` | `PeerGone` | (the caller's) |

use std::time::{Duration, Instant};

use thiserror::Error;

use crate::{Msg, RdmaListen};
use linerate_facts::HostFacts;

mod client;
mod server;

pub use client::{ClientAction, ClientEvent, ClientPhase, ClientSetup, ControlClient};
pub use client::{HandshakeError, ResultsError};
pub use server::{ControlServer, ServerAction, ServerEnd, ServerEvent, ServerPhase, ServerSetup};

/// What both ends' machines take from their caller and give back.
pub trait Session {
    /// What the caller is to do.
    type Action;
    /// Bytes read from the peer: how many were taken. The rest waits for a later call (after an
    /// event that lets the conversation go on); a caller reads no more meanwhile.
    fn receive(&mut self, now: Instant, bytes: &[u8]) -> usize;
    /// The time is `now`: past [`Session::deadline`], the wait it bounded has failed.
    fn timeout(&mut self, now: Instant);
    /// The peer closed the connection, or it failed.
    fn gone(&mut self, now: Instant, why: Gone);
    /// The next thing to do, in order.
    fn poll(&mut self) -> Option<Self::Action>;
    /// When the current wait ends; `None`: no wait of the conversation's own.
    fn deadline(&self) -> Option<Instant>;
    /// How many bytes the caller may read now: 0 while the conversation waits on its caller; a
    /// frame's exact remainder where the bytes after it are not the conversation's (a data
    /// connection's first frame is followed by its data).
    fn read_limit(&self) -> usize;
}

/// How the peer went away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gone {
    /// It closed the connection (end of stream, or a reset).
    Closed,
    /// Reading failed otherwise: the system's words.
    Failed(String),
}

/// An event the conversation does not take in its current state (a caller's mistake, or a
/// fuzzer's): nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{event} {phase}: not in turn")]
pub struct OutOfTurn {
    pub event: &'static str,
    pub phase: &'static str,
}

/// What the server tells of an accepted test (`accepted`).
#[derive(Debug, Clone, PartialEq)]
pub struct Acceptance {
    pub test_id: u64,
    /// Data connections present it in their `data_hello`; UDP datagrams carry its tag.
    pub cookie: String,
    /// UDP tests: the server's UDP port.
    pub udp_port: Option<u16>,
    /// Bytes of buffer the server holds for the test.
    pub memory_bytes: u64,
    /// What the server says of itself and its interface on the path.
    pub inventory: Option<Box<HostFacts>>,
    /// RDMA tests: the server's libfabric listeners.
    pub rdma: Option<RdmaListen>,
    /// Connection-rate tests: the TCP port of the test's listener.
    pub listen_port: Option<u16>,
}

impl Acceptance {
    fn into_msg(self) -> Msg {
        Msg::Accepted {
            test_id: self.test_id,
            cookie: self.cookie,
            udp_port: self.udp_port,
            memory_bytes: self.memory_bytes,
            inventory: self.inventory,
            rdma: self.rdma,
            listen_port: self.listen_port,
        }
    }
}

/// A data connection's first frame: the test's cookie and the stream it is.
pub fn data_hello(cookie: &str, stream: u32) -> Vec<u8> {
    frame(&Msg::DataHello {
        cookie: cookie.to_string(),
        stream,
    })
}

/// A message as bytes to send. Every message this protocol sends encodes (a JSON object of
/// strings, numbers and their lists), and the few whose size depends on the peer (results) stay
/// far below 4 GiB.
fn frame(m: &Msg) -> Vec<u8> {
    crate::frame::encode(m).unwrap_or_else(|e| unreachable!("{} does not encode: {e}", m.name()))
}

/// A deadline that moves with each byte that comes (a wait on a silent peer), or a fixed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Idle { until: Instant, each: Duration },
    Until(Instant),
    None,
}

impl Wait {
    fn at(self) -> Option<Instant> {
        match self {
            Wait::Idle { until, .. } | Wait::Until(until) => Some(until),
            Wait::None => None,
        }
    }

    /// Bytes came at `now`.
    fn heard(&mut self, now: Instant) {
        if let Wait::Idle { until, each } = self {
            *until = now + *each;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
