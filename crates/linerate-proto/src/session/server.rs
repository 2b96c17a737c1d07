//! The server's end of a connection that opened with a frame: a data connection's
//! `data_hello`, or a control connection's hello, authentication, request and admission, the
//! data connections, `start`, the test and the results.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::{frame, Acceptance, Gone, OutOfTurn, Session};
use crate::defaults::AUTH_FAILURE_DELAY;
use crate::frame::{decode, FrameAssembler, FrameError, MAX_CONTROL_FRAME};
use crate::soak::SoakSample;
use crate::{
    IntervalSample, Limits, Msg, Psk, Refusal, SideResults, TestParams, MAGIC, PROTOCOL_VERSION,
};

/// The longest client nonce a server takes: 16 bytes are 32 hex digits.
pub const MAX_NONCE_CHARS: usize = 128;

/// What the server brings to one connection's conversation.
#[derive(Debug, Clone)]
pub struct ServerSetup {
    /// The pre-shared key, when the server requires one.
    pub psk: Option<Psk>,
    /// This connection's nonce (hex, fresh: [`crate::random_hex`]).
    pub nonce: String,
    /// The server's linerate version, as `server_hello` says it.
    pub version: String,
    /// The operator's limits: a request is fitted to them, then checked against them.
    pub limits: Limits,
    /// The handshake's deadline, from the connection's accept to `start`.
    pub deadline: Instant,
}

/// Where the server's conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    /// The first frame awaited.
    First,
    /// A data connection: handed to its test.
    Data,
    /// `server_hello` sent, the client's proof awaited.
    Auth,
    /// A wrong proof: the error goes out after a delay.
    AuthFailed,
    /// The request awaited.
    Request,
    /// The request is valid: the caller admits it or not.
    Admit,
    /// `accepted` sent: the caller collects the data connections.
    Collect,
    /// `start` awaited.
    Start,
    /// The test runs; `done` awaited.
    Running,
    /// The client is done, or gone: the caller ends the test and sends its results.
    Ending,
    /// Over.
    Over,
}

impl ServerPhase {
    pub const fn describe(self) -> &'static str {
        match self {
            ServerPhase::First => "waiting for the first frame",
            ServerPhase::Data => "on a data connection",
            ServerPhase::Auth => "waiting for the client's proof",
            ServerPhase::AuthFailed => "after a wrong proof",
            ServerPhase::Request => "waiting for the request",
            ServerPhase::Admit => "while the request is admitted",
            ServerPhase::Collect => "while the data connections come",
            ServerPhase::Start => "waiting for start",
            ServerPhase::Running => "while the test runs",
            ServerPhase::Ending => "while the test ends",
            ServerPhase::Over => "after the conversation",
        }
    }
}

/// What the server's own end tells its conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent<'a> {
    /// No test waits for the data connection's cookie.
    NoSuchTest,
    /// The test is admitted and set up: `accepted`. `setup` is how long this server's own setup
    /// took (loading libfabric, its listeners): the handshake's deadline moves by it, as that is
    /// not the client's time.
    Accept {
        accepted: Box<Acceptance>,
        setup: Duration,
    },
    /// The test is refused: `refused`.
    Refuse(Refusal),
    /// Every data connection came.
    DataReady,
    /// They did not: why (the client is told).
    DataFailed(String),
    /// An interval of this end: `interval`.
    Interval(&'a IntervalSample),
    /// A soak's counters of this end: `soak_sample`.
    SoakSample(&'a SoakSample),
    /// This end's results: `results`, and the conversation is over.
    Finished(&'a SideResults),
}

impl ServerEvent<'_> {
    fn name(&self) -> &'static str {
        match self {
            ServerEvent::NoSuchTest => "no such test",
            ServerEvent::Accept { .. } => "accept",
            ServerEvent::Refuse(_) => "refuse",
            ServerEvent::DataReady => "data ready",
            ServerEvent::DataFailed(_) => "data failed",
            ServerEvent::Interval(_) => "interval",
            ServerEvent::SoakSample(_) => "soak sample",
            ServerEvent::Finished(_) => "finished",
        }
    }
}

/// What the server is to do.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerAction {
    /// Write these bytes.
    Send(Vec<u8>),
    /// The connection is a data connection of the test waiting for `cookie`: hand it over
    /// (nothing past its first frame was read), or [`ServerEvent::NoSuchTest`].
    Data { cookie: String, stream: u32 },
    /// A valid request, fitted to the limits: admit it ([`ServerEvent::Accept`] or
    /// [`ServerEvent::Refuse`]).
    Admit(Box<TestParams>),
    /// The client said `start`: run the test.
    Start,
    /// The client's part is finished.
    PeerDone,
    /// The client went away or broke the protocol during the test: stop it. Why.
    PeerGone(String),
    /// Close the connection, after what was sent; why, for the log.
    Close(ServerEnd),
}

/// How a server's conversation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEnd {
    /// It could not be read, or the client went silent: why (logged `dropped`).
    Dropped(String),
    /// Refused before a test ran (logged `refused`), with the request when there was one.
    Refused {
        reason: String,
        params: Option<Box<TestParams>>,
    },
    /// A wrong key (logged `auth_failed`).
    AuthFailed,
    /// Nothing to log: a data connection's unknown cookie, a nonce over
    /// [`MAX_NONCE_CHARS`], a message instead of the request (the client is told).
    Quiet,
    /// An accepted test that never started: why (logged as a failed test).
    NotStarted(String),
    /// The test ran and its results went out: close the writing half.
    Served,
}

#[derive(Debug, Clone)]
enum Stage {
    First,
    Data,
    Auth { client_nonce: String },
    AuthFailed { until: Instant },
    Request,
    Admit(Box<TestParams>),
    Collect { soak: bool },
    Start { soak: bool },
    Running { soak: bool },
    Ending { soak: bool },
    Over,
}

/// The server's end of one connection that opened with a frame.
#[derive(Debug, Clone)]
pub struct ControlServer {
    setup: ServerSetup,
    stage: Stage,
    frames: FrameAssembler,
    out: VecDeque<ServerAction>,
}

impl ControlServer {
    pub fn new(setup: ServerSetup) -> ControlServer {
        ControlServer {
            setup,
            stage: Stage::First,
            frames: FrameAssembler::new(MAX_CONTROL_FRAME),
            out: VecDeque::new(),
        }
    }

    pub fn phase(&self) -> ServerPhase {
        match self.stage {
            Stage::First => ServerPhase::First,
            Stage::Data => ServerPhase::Data,
            Stage::Auth { .. } => ServerPhase::Auth,
            Stage::AuthFailed { .. } => ServerPhase::AuthFailed,
            Stage::Request => ServerPhase::Request,
            Stage::Admit(_) => ServerPhase::Admit,
            Stage::Collect { .. } => ServerPhase::Collect,
            Stage::Start { .. } => ServerPhase::Start,
            Stage::Running { .. } => ServerPhase::Running,
            Stage::Ending { .. } => ServerPhase::Ending,
            Stage::Over => ServerPhase::Over,
        }
    }

    /// The handshake's deadline: the data connections and `start` come by then.
    pub fn handshake_deadline(&self) -> Instant {
        self.setup.deadline
    }

    /// Bytes it holds: the frame under way, and actions not yet taken.
    pub fn held(&self) -> usize {
        self.frames.held() + self.out.len() * std::mem::size_of::<ServerAction>()
    }

    /// An event of this end.
    /// (`_now`: the server's events keep no time of their own; the same shape as the client's.)
    pub fn handle(&mut self, _now: Instant, event: ServerEvent<'_>) -> Result<(), OutOfTurn> {
        let out_of_turn = OutOfTurn {
            event: event.name(),
            phase: self.phase().describe(),
        };
        match (event, &self.stage) {
            (ServerEvent::NoSuchTest, Stage::Data) => {
                self.send(&Msg::Error {
                    message: "unknown test cookie".into(),
                });
                self.close(ServerEnd::Quiet);
            }
            (ServerEvent::Accept { accepted, setup }, Stage::Admit(p)) => {
                let soak = p.soak;
                self.setup.deadline += setup;
                self.out
                    .push_back(ServerAction::Send(frame(&accepted.into_msg())));
                self.stage = Stage::Collect { soak };
            }
            (ServerEvent::Refuse(r), Stage::Admit(p)) => {
                let params = p.clone();
                self.refuse(&r, params);
            }
            (ServerEvent::DataReady, Stage::Collect { soak }) => {
                self.stage = Stage::Start { soak: *soak };
            }
            (ServerEvent::DataFailed(reason), Stage::Collect { .. }) => {
                self.send(&Msg::Error {
                    message: reason.clone(),
                });
                self.close(ServerEnd::NotStarted(reason));
            }
            (ServerEvent::Interval(sample), Stage::Running { .. } | Stage::Ending { .. }) => {
                self.send(&Msg::Interval {
                    sample: sample.clone(),
                });
            }
            (
                ServerEvent::SoakSample(sample),
                Stage::Running { soak: true } | Stage::Ending { soak: true },
            ) => {
                self.send(&Msg::SoakSample {
                    sample: sample.clone(),
                });
            }
            (ServerEvent::Finished(results), Stage::Running { .. } | Stage::Ending { .. }) => {
                self.send(&Msg::Results {
                    results: results.clone(),
                });
                self.close(ServerEnd::Served);
            }
            _ => return Err(out_of_turn),
        }
        Ok(())
    }

    fn send(&mut self, m: &Msg) {
        self.out.push_back(ServerAction::Send(frame(m)));
    }

    fn close(&mut self, end: ServerEnd) {
        self.out.push_back(ServerAction::Close(end));
        self.stage = Stage::Over;
        self.frames = FrameAssembler::new(0);
    }

    /// `refused`, for the client and the log.
    fn refuse(&mut self, r: &Refusal, params: Box<TestParams>) {
        self.send(&Msg::Refused {
            reason: r.reason.clone(),
            kind: r.kind,
        });
        self.close(ServerEnd::Refused {
            reason: r.reason.clone(),
            params: Some(params),
        });
    }

    /// Reading failed (`e`): what that means where the conversation is.
    fn wire_failed(&mut self, e: &FrameError) {
        match &self.stage {
            Stage::First => self.close(ServerEnd::Dropped(e.to_string())),
            Stage::Auth { .. } => {
                self.close(ServerEnd::Dropped(format!("during authentication: {e}")));
            }
            Stage::Request => self.close(ServerEnd::Dropped(format!("waiting for a request: {e}"))),
            Stage::Start { .. } => {
                self.close(ServerEnd::NotStarted(format!("expected start: {e}")));
            }
            Stage::Running { soak } => {
                self.out.push_back(ServerAction::PeerGone(e.to_string()));
                self.stage = Stage::Ending { soak: *soak };
            }
            Stage::Data
            | Stage::AuthFailed { .. }
            | Stage::Admit(_)
            | Stage::Collect { .. }
            | Stage::Ending { .. }
            | Stage::Over => {}
        }
    }

    fn on_msg(&mut self, now: Instant, m: Msg) {
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::First => self.on_first(m),
            Stage::Auth { client_nonce } => {
                let server_nonce = &self.setup.nonce;
                let proof = match (&m, &self.setup.psk) {
                    (Msg::Auth { proof }, Some(k))
                        if k.verify_client(server_nonce, &client_nonce, proof) =>
                    {
                        Some(k.server_proof(&client_nonce, server_nonce))
                    }
                    _ => None,
                };
                match proof {
                    Some(proof) => {
                        self.send(&Msg::AuthOk { proof });
                        self.stage = Stage::Request;
                    }
                    // Wait a moment so guessing keys is slow, then refuse.
                    None => {
                        self.stage = Stage::AuthFailed {
                            until: now + AUTH_FAILURE_DELAY,
                        }
                    }
                }
            }
            Stage::Request => self.on_request(m),
            Stage::Start { soak } => {
                if m == Msg::Start {
                    self.out.push_back(ServerAction::Start);
                    self.stage = Stage::Running { soak };
                } else {
                    self.close(ServerEnd::NotStarted(format!(
                        "expected start, got {}",
                        m.name()
                    )));
                }
            }
            Stage::Running { soak } => {
                self.out.push_back(if m == Msg::Done {
                    ServerAction::PeerDone
                } else {
                    ServerAction::PeerGone(format!("the client sent {} during the test", m.name()))
                });
                self.stage = Stage::Ending { soak };
            }
            stage => self.stage = stage,
        }
    }

    fn on_first(&mut self, m: Msg) {
        match m {
            Msg::DataHello { cookie, stream } => {
                self.stage = Stage::Data;
                self.out.push_back(ServerAction::Data { cookie, stream });
            }
            Msg::Hello { magic, .. } if magic != MAGIC => {
                self.send(&Msg::Error {
                    message: "not a linerate client".into(),
                });
                self.close(ServerEnd::Refused {
                    reason: "bad magic".into(),
                    params: None,
                });
            }
            Msg::Hello {
                protocol, version, ..
            } if protocol != PROTOCOL_VERSION => {
                let message = format!(
                    "protocol version {protocol} (linerate {version}) is not supported: this server (linerate {}) speaks version {PROTOCOL_VERSION}; use matching linerate versions",
                    self.setup.version
                );
                self.send(&Msg::Error {
                    message: message.clone(),
                });
                self.close(ServerEnd::Refused {
                    reason: message,
                    params: None,
                });
            }
            Msg::Hello { nonce, .. } if nonce.len() > MAX_NONCE_CHARS => {
                self.close(ServerEnd::Quiet);
            }
            Msg::Hello { nonce, .. } => {
                self.send(&Msg::ServerHello {
                    protocol: PROTOCOL_VERSION,
                    version: self.setup.version.clone(),
                    auth: self.setup.psk.is_some(),
                    nonce: self.setup.nonce.clone(),
                });
                self.stage = if self.setup.psk.is_some() {
                    Stage::Auth {
                        client_nonce: nonce,
                    }
                } else {
                    Stage::Request
                };
            }
            other => {
                self.send(&Msg::Error {
                    message: "expected hello".into(),
                });
                self.close(ServerEnd::Refused {
                    reason: format!("unexpected first message {}", other.name()),
                    params: None,
                });
            }
        }
    }

    fn on_request(&mut self, m: Msg) {
        match m {
            Msg::Request { mut params } => {
                params.fit(&self.setup.limits);
                match params.validate(&self.setup.limits) {
                    Ok(()) => {
                        self.out
                            .push_back(ServerAction::Admit(Box::new(params.clone())));
                        self.stage = Stage::Admit(Box::new(params));
                    }
                    Err(r) => self.refuse(&r, Box::new(params)),
                }
            }
            other => {
                self.send(&Msg::Error {
                    message: format!("expected request, got {}", other.name()),
                });
                self.close(ServerEnd::Quiet);
            }
        }
    }
}

impl Session for ControlServer {
    type Action = ServerAction;

    /// One frame at most: what the client sends next is read after the server did what this
    /// one asked (its `done` comes to the watcher of the test `start` started).
    fn receive(&mut self, now: Instant, bytes: &[u8]) -> usize {
        let mut used = 0;
        if self.read_limit() > 0 && !bytes.is_empty() {
            match self.frames.push(bytes) {
                Ok((n, body)) => {
                    used = n;
                    if let Some(body) = body {
                        match decode(&body) {
                            Ok(m) => self.on_msg(now, m),
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
        if self.deadline().is_none_or(|at| now < at) {
            return;
        }
        if let Stage::AuthFailed { .. } = self.stage {
            self.send(&Msg::Error {
                message: "authentication failed: wrong pre-shared key".into(),
            });
            self.close(ServerEnd::AuthFailed);
        } else {
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

    fn poll(&mut self) -> Option<ServerAction> {
        self.out.pop_front()
    }

    fn deadline(&self) -> Option<Instant> {
        match self.stage {
            Stage::First | Stage::Auth { .. } | Stage::Request | Stage::Start { .. } => {
                Some(self.setup.deadline)
            }
            Stage::AuthFailed { until } => Some(until),
            Stage::Data
            | Stage::Admit(_)
            | Stage::Collect { .. }
            | Stage::Running { .. }
            | Stage::Ending { .. }
            | Stage::Over => None,
        }
    }

    fn read_limit(&self) -> usize {
        match self.stage {
            // The first frame exactly: a data connection's data follows it.
            Stage::First => self.frames.needed(),
            Stage::Auth { .. } | Stage::Request | Stage::Start { .. } | Stage::Running { .. } => {
                usize::MAX
            }
            Stage::Data
            | Stage::AuthFailed { .. }
            | Stage::Admit(_)
            | Stage::Collect { .. }
            | Stage::Ending { .. }
            | Stage::Over => 0,
        }
    }
}
