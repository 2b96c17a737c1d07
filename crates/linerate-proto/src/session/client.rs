//! The client's end of the control connection: hello, authentication, the request, the
//! server's answer, then the server's intervals and results while this end's streams run.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::{frame, Acceptance, Gone, OutOfTurn, Session, Wait};
use crate::defaults::{CONTROL_TIMEOUT, GRACE};
use crate::frame::{decode, FrameAssembler, FrameError, MAX_RESULTS_FRAME};
use crate::soak::{End, SoakSample};
use crate::{
    IntervalSample, Msg, Psk, RefusalKind, SideResults, TestKind, TestParams, MAGIC,
    PROTOCOL_VERSION,
};

/// The most of a peer's first bytes kept to say what it is when they are not a frame's.
pub const STRANGER_BYTES: usize = 32;
/// How long the client waits for more of a stranger's first bytes once one came: a banner or an
/// HTTP status line comes in one write.
pub const STRANGER_WAIT: Duration = Duration::from_millis(200);

/// What the client brings to the conversation.
#[derive(Debug, Clone)]
pub struct ClientSetup {
    /// The test it asks for.
    pub params: TestParams,
    /// The pre-shared key, when this end has one.
    pub psk: Option<Psk>,
    /// This connection's nonce (hex, fresh: [`crate::random_hex`]).
    pub nonce: String,
    /// This end's linerate version, as `hello` says it.
    pub version: String,
}

/// Where the client's conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    /// `hello` sent, `server_hello` awaited.
    Hello,
    /// `auth` sent, `auth_ok` awaited.
    Auth,
    /// `request` sent, the answer awaited.
    Request,
    /// Accepted: the caller opens the data connections.
    Accepted,
    /// `start` sent: the server's intervals and results come.
    Running,
    /// Over: failed before the test, or the server's results (or why none) said.
    Over,
}

impl ClientPhase {
    pub const fn describe(self) -> &'static str {
        match self {
            ClientPhase::Hello => "waiting for server_hello",
            ClientPhase::Auth => "waiting for auth_ok",
            ClientPhase::Request => "waiting for the answer to the request",
            ClientPhase::Accepted => "while the data connections open",
            ClientPhase::Running => "while the test runs",
            ClientPhase::Over => "after the conversation",
        }
    }
}

/// What the client's own end tells its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEvent {
    /// The data connections of the accepted test are open: `start`.
    DataReady,
    /// This end's part of the test is finished: `done`.
    LocalDone,
}

impl ClientEvent {
    fn name(self) -> &'static str {
        match self {
            ClientEvent::DataReady => "data ready",
            ClientEvent::LocalDone => "local done",
        }
    }
}

/// What the client is to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientAction {
    /// Write these bytes on the control connection.
    Send(Vec<u8>),
    /// The test is accepted: open its data connections as this says (each TCP one opens with
    /// [`super::data_hello`]), then [`ClientEvent::DataReady`].
    Accepted(Box<Acceptance>),
    /// An interval the server measured.
    Remote(IntervalSample),
    /// A soak: the server's port counters (marked [`End::Remote`]).
    RemoteSoak(Box<SoakSample>),
    /// Stop this end's streams now: the server went away or broke the protocol.
    Abort,
    /// The server's results, or why there are none: the conversation is over.
    Finished(Result<Box<SideResults>, ResultsError>),
    /// No test: why. The conversation is over.
    Failed(HandshakeError),
}

/// Why there is no test.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum HandshakeError {
    #[error("no answer within {} s of the hello", CONTROL_TIMEOUT.as_secs())]
    Silent,
    /// The server's first bytes (up to [`STRANGER_BYTES`]) are not a frame's.
    #[error("the server's first bytes are not a linerate frame")]
    NotLinerate(Vec<u8>),
    #[error("the server closed the connection before answering")]
    ClosedBeforeAnswer,
    /// Reading the server's frames failed: the frame layer's words.
    #[error("{0}")]
    Wire(String),
    #[error("the server speaks protocol {protocol} (linerate {version})")]
    OtherVersion { protocol: u32, version: String },
    #[error("the server said: {0}")]
    Server(String),
    #[error("unexpected {0:?}")]
    Unexpected(Box<Msg>),
    #[error("the server does not ask for the key this end has")]
    NoAuth,
    #[error("the server requires a pre-shared key")]
    NeedsKey,
    #[error("the server's proof of the key is wrong")]
    BadProof,
    #[error("the server refused the proof: {0}")]
    AuthRefused(String),
    /// The server closed on the request without an answer; its version, from `server_hello`.
    #[error("the server closed the connection on the request without an answer")]
    ClosedOnRequest { server_version: String },
    #[error("the server refused the test: {reason}")]
    Refused { kind: RefusalKind, reason: String },
}

/// Why the server's results did not come.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ResultsError {
    #[error("protocol: the server sent {got} soak samples; expected at most {max}")]
    TooManySoakSamples { got: u64, max: u64 },
    #[error("protocol: the server sent {got} interval(s), the last for {streams} streams; expected at most {max} for {connections}")]
    BadInterval {
        got: u64,
        streams: usize,
        max: u64,
        connections: usize,
    },
    #[error("the server reported: {0}")]
    Reported(String),
    #[error("the server sent no results in time")]
    NotInTime,
    #[error("lost the control connection to the server: {0}")]
    Lost(String),
    #[error("protocol: expected results, got {0}")]
    Expected(&'static str),
}

/// What the client waits for.
#[derive(Debug, Clone)]
enum Stage {
    ServerHello {
        heard: bool,
    },
    /// The first bytes were not a frame's: more of them, to say what the server is.
    Stranger(Vec<u8>),
    AuthOk {
        server_nonce: String,
        server_version: String,
    },
    Answer {
        server_version: String,
    },
    Accepted,
    Results {
        intervals: u64,
        soak: u64,
    },
    Over,
}

/// The client's end of linerate's control connection.
#[derive(Debug, Clone)]
pub struct ControlClient {
    setup: ClientSetup,
    stage: Stage,
    frames: FrameAssembler,
    wait: Wait,
    out: VecDeque<ClientAction>,
    /// `start` went out: `done` follows once this end is finished, whatever the server said.
    started: bool,
    done: bool,
    /// An RDMA test: the server sends its results alone, after `done`.
    results_only: bool,
}

impl ControlClient {
    /// A conversation that opens with `hello`, at `now`.
    pub fn new(now: Instant, setup: ClientSetup) -> ControlClient {
        let hello = frame(&Msg::Hello {
            magic: MAGIC.into(),
            protocol: PROTOCOL_VERSION,
            version: setup.version.clone(),
            nonce: setup.nonce.clone(),
        });
        let results_only = setup.params.kind == TestKind::Rdma;
        ControlClient {
            setup,
            stage: Stage::ServerHello { heard: false },
            frames: FrameAssembler::new(MAX_RESULTS_FRAME),
            wait: Wait::Idle {
                until: now + CONTROL_TIMEOUT,
                each: CONTROL_TIMEOUT,
            },
            out: VecDeque::from([ClientAction::Send(hello)]),
            started: false,
            done: false,
            results_only,
        }
    }

    pub fn phase(&self) -> ClientPhase {
        match self.stage {
            Stage::ServerHello { .. } | Stage::Stranger(_) => ClientPhase::Hello,
            Stage::AuthOk { .. } => ClientPhase::Auth,
            Stage::Answer { .. } => ClientPhase::Request,
            Stage::Accepted => ClientPhase::Accepted,
            Stage::Results { .. } => ClientPhase::Running,
            Stage::Over => ClientPhase::Over,
        }
    }

    /// Bytes it holds: the frame under way, a stranger's first bytes, actions not yet taken.
    pub fn held(&self) -> usize {
        let stranger = match &self.stage {
            Stage::Stranger(b) => b.len(),
            _ => 0,
        };
        self.frames.held() + stranger + self.out.len() * std::mem::size_of::<ClientAction>()
    }

    /// An event of this end.
    pub fn handle(&mut self, now: Instant, event: ClientEvent) -> Result<(), OutOfTurn> {
        match (event, &self.stage) {
            (ClientEvent::DataReady, Stage::Accepted) => {
                self.send(&Msg::Start);
                self.started = true;
                self.stage = Stage::Results {
                    intervals: 0,
                    soak: 0,
                };
                let p = &self.setup.params;
                self.wait = if self.results_only {
                    Wait::None
                } else {
                    Wait::Until(
                        now + Duration::from_millis(p.duration_ms) + GRACE + CONTROL_TIMEOUT,
                    )
                };
                Ok(())
            }
            (ClientEvent::LocalDone, _) if self.started && !self.done => {
                self.send(&Msg::Done);
                self.done = true;
                if self.results_only && matches!(self.stage, Stage::Results { .. }) {
                    // The server answers once its targets have ended, within its own bound.
                    self.wait = Wait::Idle {
                        until: now + GRACE + CONTROL_TIMEOUT,
                        each: GRACE + CONTROL_TIMEOUT,
                    };
                }
                Ok(())
            }
            _ => Err(OutOfTurn {
                event: event.name(),
                phase: self.phase().describe(),
            }),
        }
    }

    fn send(&mut self, m: &Msg) {
        self.out.push_back(ClientAction::Send(frame(m)));
    }

    fn fail(&mut self, e: HandshakeError) {
        self.out.push_back(ClientAction::Failed(e));
        self.over();
    }

    fn finish(&mut self, r: Result<Box<SideResults>, ResultsError>, abort: bool) {
        if abort {
            self.out.push_back(ClientAction::Abort);
        }
        self.out.push_back(ClientAction::Finished(r));
        self.over();
    }

    fn over(&mut self) {
        self.stage = Stage::Over;
        self.wait = Wait::None;
        self.frames = FrameAssembler::new(0);
    }

    /// A stranger's first bytes: more of them until [`STRANGER_BYTES`]; used.
    fn stranger(&mut self, bytes: &[u8]) -> usize {
        let Stage::Stranger(have) = &mut self.stage else {
            return 0;
        };
        let take = (STRANGER_BYTES - have.len()).min(bytes.len());
        have.extend_from_slice(&bytes[..take]);
        if have.len() >= STRANGER_BYTES {
            let first = std::mem::take(have);
            self.fail(HandshakeError::NotLinerate(first));
        }
        take
    }

    /// Reading the frames failed (`e`): what that means where the conversation is.
    fn wire_failed(&mut self, e: &FrameError) {
        match &self.stage {
            Stage::ServerHello { heard: false } if matches!(e, FrameError::Timeout) => {
                self.fail(HandshakeError::Silent);
            }
            Stage::ServerHello { .. } if matches!(e, FrameError::Closed) => {
                self.fail(HandshakeError::ClosedBeforeAnswer);
            }
            Stage::Stranger(first) => {
                let first = first.clone();
                self.fail(HandshakeError::NotLinerate(first));
            }
            Stage::Answer { server_version } if matches!(e, FrameError::Closed) => {
                let server_version = server_version.clone();
                self.fail(HandshakeError::ClosedOnRequest { server_version });
            }
            Stage::ServerHello { .. } | Stage::AuthOk { .. } | Stage::Answer { .. } => {
                self.fail(HandshakeError::Wire(e.to_string()));
            }
            Stage::Results { .. } if matches!(e, FrameError::Timeout) && !self.results_only => {
                self.finish(Err(ResultsError::NotInTime), false);
            }
            Stage::Results { .. } => {
                self.finish(Err(ResultsError::Lost(e.to_string())), !self.results_only);
            }
            Stage::Accepted | Stage::Over => {}
        }
    }

    fn on_msg(&mut self, m: Msg) {
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::ServerHello { .. } => self.on_server_hello(m),
            Stage::AuthOk {
                server_nonce,
                server_version,
            } => self.on_auth_ok(m, &server_nonce, server_version),
            Stage::Answer { .. } => self.on_answer(m),
            Stage::Results { intervals, soak } => self.on_running(m, intervals, soak),
            stage @ (Stage::Stranger(_) | Stage::Accepted | Stage::Over) => self.stage = stage,
        }
    }

    fn on_server_hello(&mut self, m: Msg) {
        match m {
            Msg::ServerHello {
                protocol,
                version,
                auth,
                nonce,
            } if protocol == PROTOCOL_VERSION => {
                if !auth && self.setup.psk.is_some() {
                    return self.fail(HandshakeError::NoAuth);
                }
                if !auth {
                    return self.request(version);
                }
                let Some(psk) = &self.setup.psk else {
                    return self.fail(HandshakeError::NeedsKey);
                };
                let proof = psk.client_proof(&nonce, &self.setup.nonce);
                self.send(&Msg::Auth { proof });
                self.stage = Stage::AuthOk {
                    server_nonce: nonce,
                    server_version: version,
                };
            }
            Msg::ServerHello {
                protocol, version, ..
            } => self.fail(HandshakeError::OtherVersion { protocol, version }),
            Msg::Error { message } => self.fail(HandshakeError::Server(message)),
            other => self.fail(HandshakeError::Unexpected(Box::new(other))),
        }
    }

    fn on_auth_ok(&mut self, m: Msg, server_nonce: &str, server_version: String) {
        match m {
            Msg::AuthOk { proof } => {
                let ok = self
                    .setup
                    .psk
                    .as_ref()
                    .is_some_and(|k| k.verify_server(&self.setup.nonce, server_nonce, &proof));
                if ok {
                    self.request(server_version);
                } else {
                    self.fail(HandshakeError::BadProof);
                }
            }
            // The only error a server sends here is a wrong key.
            Msg::Error { message } => self.fail(HandshakeError::AuthRefused(message)),
            other => self.fail(HandshakeError::Unexpected(Box::new(other))),
        }
    }

    fn request(&mut self, server_version: String) {
        self.send(&Msg::Request {
            params: self.setup.params.clone(),
        });
        self.stage = Stage::Answer { server_version };
    }

    fn on_answer(&mut self, m: Msg) {
        match m {
            Msg::Accepted {
                test_id,
                cookie,
                udp_port,
                memory_bytes,
                inventory,
                rdma,
                listen_port,
            } => {
                self.wait = Wait::None;
                self.stage = Stage::Accepted;
                self.out
                    .push_back(ClientAction::Accepted(Box::new(Acceptance {
                        test_id,
                        cookie,
                        udp_port,
                        memory_bytes,
                        inventory,
                        rdma,
                        listen_port,
                    })));
            }
            Msg::Refused { reason, kind } => self.fail(HandshakeError::Refused { kind, reason }),
            Msg::Error { message } => self.fail(HandshakeError::Server(message)),
            other => self.fail(HandshakeError::Unexpected(Box::new(other))),
        }
    }

    /// A message while the test runs: `intervals` and `soak` samples came before it.
    fn on_running(&mut self, m: Msg, mut intervals: u64, mut soak: u64) {
        let p = &self.setup.params;
        // A server may stream at most this many intervals, each for exactly our connections.
        let connections = p.connections() as usize;
        let max = 2 * p.duration_ms / p.interval_ms.max(100) + 10;
        if self.results_only {
            return match m {
                Msg::Results { results } => self.finish(Ok(Box::new(results)), false),
                Msg::Error { message } => self.finish(Err(ResultsError::Reported(message)), false),
                other => self.finish(Err(ResultsError::Expected(other.name())), false),
            };
        }
        match m {
            // Only a soak streams counters: one baseline, then one per interval.
            Msg::SoakSample { mut sample } if p.soak => {
                soak += 1;
                if soak > max + 1 {
                    return self.finish(
                        Err(ResultsError::TooManySoakSamples {
                            got: soak,
                            max: max + 1,
                        }),
                        true,
                    );
                }
                // The server is the remote end, whatever it wrote.
                sample.end = End::Remote;
                self.out
                    .push_back(ClientAction::RemoteSoak(Box::new(sample)));
            }
            Msg::Interval { sample } => {
                intervals += 1;
                if sample.bytes.len() != connections || intervals > max {
                    return self.finish(
                        Err(ResultsError::BadInterval {
                            got: intervals,
                            streams: sample.bytes.len(),
                            max,
                            connections,
                        }),
                        true,
                    );
                }
                self.out.push_back(ClientAction::Remote(sample));
            }
            Msg::Results { results } => return self.finish(Ok(Box::new(results)), false),
            Msg::Error { message } => {
                return self.finish(Err(ResultsError::Reported(message)), true)
            }
            _ => {}
        }
        self.stage = Stage::Results { intervals, soak };
    }
}

impl Session for ControlClient {
    type Action = ClientAction;

    fn receive(&mut self, now: Instant, bytes: &[u8]) -> usize {
        if matches!(self.stage, Stage::Over) {
            return bytes.len();
        }
        let mut used = 0;
        while used < bytes.len() && self.read_limit() > 0 {
            let rest = &bytes[used..];
            self.wait.heard(now);
            match &mut self.stage {
                Stage::ServerHello { heard } if !*heard => {
                    *heard = true;
                    // A frame's length starts with 0 (it is below 16 MiB); an iperf3 server
                    // answers with a state byte, others with their banner or nothing.
                    if rest[0] != 0 {
                        self.stage = Stage::Stranger(Vec::new());
                        self.wait = Wait::Until(now + STRANGER_WAIT);
                        used += self.stranger(rest);
                        continue;
                    }
                }
                Stage::Stranger(_) => {
                    used += self.stranger(rest);
                    continue;
                }
                _ => {}
            }
            match self.frames.push(rest) {
                Ok((n, body)) => {
                    used += n;
                    if let Some(body) = body {
                        match decode(&body) {
                            Ok(m) => self.on_msg(m),
                            Err(e) => self.wire_failed(&e),
                        }
                    }
                }
                Err(e) => self.wire_failed(&e),
            }
        }
        if matches!(self.stage, Stage::Over) {
            return bytes.len();
        }
        used
    }

    fn timeout(&mut self, now: Instant) {
        if self.wait.at().is_some_and(|at| now >= at) {
            self.wire_failed(&FrameError::Timeout);
        }
    }

    fn gone(&mut self, _now: Instant, why: Gone) {
        let e = match why {
            Gone::Closed => self.frames.closed(),
            Gone::Failed(text) => FrameError::Io(std::io::Error::other(text)),
        };
        self.wire_failed(&e);
    }

    fn poll(&mut self) -> Option<ClientAction> {
        self.out.pop_front()
    }

    fn deadline(&self) -> Option<Instant> {
        self.wait.at()
    }

    fn read_limit(&self) -> usize {
        match self.stage {
            Stage::Accepted | Stage::Over => 0,
            Stage::Results { .. } if self.results_only && !self.done => 0,
            _ => usize::MAX,
        }
    }
}
