//! The control connection's conversation, sans I/O: one machine per end that reads the other
//! end's bytes into events and writes its own messages, each only when the protocol allows it.
//! The caller owns the socket, the streams and the clocks (iperf3's own time limits are the
//! caller's: a stock client never times out on a state byte, so a server must always answer or
//! close).
//!
//! ```text
//! client (ClientSession)                         server (ServerSession)
//! cookie()                            ───▶       event Cookie
//!                                      ◀───       deny_busy() | param_exchange()
//! event State(PARAM_EXCHANGE); params() ─▶       event Params
//!                                      ◀───       create_streams() | server_error()
//! event State(CREATE_STREAMS); streams open
//!                                      ◀───       test_start_running()
//! event State(TEST_START), State(TEST_RUNNING)
//! test_end()                          ───▶       event State(TEST_END)
//!                                      ◀───       exchange_results()
//! event State(EXCHANGE_RESULTS); results() ─▶    event Results
//!                                      ◀───       results_and_display()
//! event Results, State(DISPLAY_RESULTS); iperf_done() ─▶ event State(IPERF_DONE)
//! ```
//!
//! At any point the client may send CLIENT_TERMINATE (Ctrl-C) or IPERF_DONE (it gave up), and
//! the server SERVER_TERMINATE or SERVER_ERROR; each ends the conversation.
//!
//! **Control or data?** Every TCP connection of a test opens with the same 37-byte cookie, so a
//! server tells a data connection from a new control connection by looking the cookie up: a
//! test waiting for its streams (after CREATE_STREAMS) takes a connection with its cookie as its
//! next stream ([`crate::streams::plan`] says which role it gets), in arrival order; any other
//! cookie opens a new conversation. iperf3 does the same with one test: while it waits for
//! streams, a connection with another cookie gets ACCESS_DENIED.

use thiserror::Error;

use crate::cookie::{Cookie, COOKIE_LEN};
use crate::frame::{FrameDecoder, PARAMS_MAX};
use crate::json::DecodeError;
use crate::params::Iperf3Params;
use crate::results::Results;
use crate::state::{ControlMsg, ServerError, State, UnknownState};
use crate::version::VersionRange;

/// Where a conversation is, named for what was last sent or received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionPhase {
    /// Nothing yet (client: send the cookie; server: read it).
    Start,
    /// The cookie crossed; the server answers PARAM_EXCHANGE or ACCESS_DENIED.
    Cookie,
    /// PARAM_EXCHANGE crossed; the client sends its parameters.
    ParamExchange,
    /// The parameters crossed; the server answers CREATE_STREAMS or SERVER_ERROR.
    Params,
    /// CREATE_STREAMS crossed; the client opens its streams, the server accepts them.
    CreateStreams,
    /// TEST_START crossed.
    TestStart,
    /// TEST_RUNNING crossed: data flows until the client's TEST_END.
    Running,
    /// TEST_END crossed; the server answers EXCHANGE_RESULTS.
    TestEnd,
    /// EXCHANGE_RESULTS crossed; the client sends its results.
    ExchangeResults,
    /// The client's results crossed; the server sends its own.
    ClientResults,
    /// The server's results crossed; DISPLAY_RESULTS follows.
    ServerResults,
    /// DISPLAY_RESULTS crossed; the client answers IPERF_DONE.
    DisplayResults,
    /// The test is over: IPERF_DONE crossed.
    Done,
    /// It ended otherwise (a refusal, an error, a terminate).
    Ended,
}

impl SessionPhase {
    /// `Ok` when this is the phase `what` may be sent in.
    fn require(self, ok: bool, what: &'static str) -> Result<(), SessionError> {
        if ok {
            Ok(())
        } else {
            Err(SessionError::OutOfOrder { what, phase: self })
        }
    }

    /// The phase's name in messages.
    pub const fn describe(self) -> &'static str {
        match self {
            SessionPhase::Start => "before the cookie",
            SessionPhase::Cookie => "after the cookie",
            SessionPhase::ParamExchange => "after PARAM_EXCHANGE",
            SessionPhase::Params => "after the parameters",
            SessionPhase::CreateStreams => "after CREATE_STREAMS",
            SessionPhase::TestStart => "after TEST_START",
            SessionPhase::Running => "while the test ran",
            SessionPhase::TestEnd => "after TEST_END",
            SessionPhase::ExchangeResults => "after EXCHANGE_RESULTS",
            SessionPhase::ClientResults => "after the client's results",
            SessionPhase::ServerResults => "after the server's results",
            SessionPhase::DisplayResults => "after DISPLAY_RESULTS",
            SessionPhase::Done => "after the test",
            SessionPhase::Ended => "after the conversation ended",
        }
    }
}

/// What went wrong on the control connection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SessionError {
    #[error(transparent)]
    UnknownState(#[from] UnknownState),
    #[error("{got} arrived {}, where iperf3 sends {expected}", .phase.describe())]
    Unexpected {
        got: String,
        phase: SessionPhase,
        expected: &'static str,
    },
    #[error("{what} {}: out of order", .phase.describe())]
    OutOfOrder {
        what: &'static str,
        phase: SessionPhase,
    },
    #[error("the parameters: {0}")]
    Params(DecodeError),
    #[error("the results: {0}")]
    Results(DecodeError),
    #[error("the peer closed the control connection {}", .phase.describe())]
    Closed { phase: SessionPhase },
}

impl SessionError {
    /// The closing phase, when the peer closed early. iperf3 3.9 to 3.20 servers close after
    /// CREATE_STREAMS without a word when a test is over their `--server-bitrate-limit`.
    pub fn closed_in(&self) -> Option<SessionPhase> {
        match self {
            SessionError::Closed { phase } => Some(*phase),
            _ => None,
        }
    }
}

/// What a client reads from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum FromServer {
    /// PARAM_EXCHANGE, CREATE_STREAMS, TEST_START, TEST_RUNNING, EXCHANGE_RESULTS,
    /// DISPLAY_RESULTS or SERVER_TERMINATE.
    State(State),
    /// ACCESS_DENIED: the server runs another test.
    Busy,
    ServerError(ServerError),
    Results(Box<Results>),
}

/// What a server reads from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum FromClient {
    Cookie(Cookie),
    /// The parameters as decoded; [`Iperf3Params::check`] is the server's next step.
    Params(Box<Iperf3Params>),
    /// TEST_END, CLIENT_TERMINATE or IPERF_DONE.
    State(State),
    Results(Box<Results>),
}

/// A client's side of the control connection.
#[derive(Debug, Clone)]
pub struct ClientSession {
    phase: SessionPhase,
    frames: FrameDecoder,
    /// What the shape of the server's results said of its version, once they came.
    results_shape: Option<VersionRange>,
}

impl ClientSession {
    /// A conversation that reads the server's results with this limit (see
    /// [`crate::frame::RESULTS_MAX`]).
    pub fn new(results_limit: u32) -> ClientSession {
        ClientSession {
            phase: SessionPhase::Start,
            frames: FrameDecoder::new(results_limit),
            results_shape: None,
        }
    }

    pub fn phase(&self) -> SessionPhase {
        self.phase
    }

    /// What the server's results, as they came on the wire, say of its version
    /// ([`VersionRange::from_results_json`]: the decoded [`Results`] no longer show a 3.12
    /// server's unsigned −1); `None` before they came.
    pub fn results_shape(&self) -> Option<VersionRange> {
        self.results_shape
    }

    /// The cookie, first thing on the connection.
    pub fn cookie(&mut self, cookie: &Cookie) -> Result<[u8; COOKIE_LEN], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::Start, "the cookie")?;
        self.phase = SessionPhase::Cookie;
        Ok(*cookie.as_bytes())
    }

    /// The parameters, after PARAM_EXCHANGE. iperf3 3.18+ refuses them over 8 KiB.
    pub fn params(&mut self, params: &Iperf3Params) -> Result<Vec<u8>, SessionError> {
        self.phase
            .require(self.phase == SessionPhase::ParamExchange, "the parameters")?;
        let bytes = params
            .encode()
            .map_err(|e| SessionError::Params(DecodeError::Frame(e)))?;
        self.phase = SessionPhase::Params;
        Ok(bytes)
    }

    /// TEST_END: the client's end condition was met.
    pub fn test_end(&mut self) -> Result<[u8; 1], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::Running, "TEST_END")?;
        self.phase = SessionPhase::TestEnd;
        Ok([State::TestEnd.to_byte()])
    }

    /// The client's results, after EXCHANGE_RESULTS.
    pub fn results(&mut self, results: &Results, limit: u32) -> Result<Vec<u8>, SessionError> {
        self.phase.require(
            self.phase == SessionPhase::ExchangeResults,
            "the client's results",
        )?;
        let bytes = results
            .encode(limit)
            .map_err(|e| SessionError::Results(DecodeError::Frame(e)))?;
        self.phase = SessionPhase::ClientResults;
        Ok(bytes)
    }

    /// IPERF_DONE, after DISPLAY_RESULTS: the last byte of a test.
    pub fn iperf_done(&mut self) -> Result<[u8; 1], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::DisplayResults, "IPERF_DONE")?;
        self.phase = SessionPhase::Done;
        Ok([State::IperfDone.to_byte()])
    }

    /// CLIENT_TERMINATE: the client stops the test (any time).
    pub fn terminate(&mut self) -> [u8; 1] {
        self.phase = SessionPhase::Ended;
        [State::ClientTerminate.to_byte()]
    }

    /// Read the server's bytes: how many were used and the event they completed, if any. Feed
    /// the rest again (a call takes at most one event's bytes).
    ///
    /// After IPERF_DONE the test is over and whatever follows is dropped: a 3.21 server was
    /// captured sending SERVER_ERROR IESTREAMWRITE (205) after a `--bidir` test's IPERF_DONE,
    /// when its sending thread met the closed stream.
    pub fn receive(&mut self, input: &[u8]) -> Result<(usize, Option<FromServer>), SessionError> {
        if self.phase == SessionPhase::Done {
            return Ok((input.len(), None));
        }
        if self.phase == SessionPhase::ClientResults {
            let (used, body) = self
                .frames
                .push(input)
                .map_err(|e| SessionError::Results(DecodeError::Frame(e)))?;
            let Some(body) = body else {
                return Ok((used, None));
            };
            let results = Results::decode(&body).map_err(SessionError::Results)?;
            self.results_shape = Some(VersionRange::from_results_json(&body));
            self.phase = SessionPhase::ServerResults;
            return Ok((used, Some(FromServer::Results(Box::new(results)))));
        }
        let Some((msg, used)) = ControlMsg::decode(input)? else {
            return Ok((0, None));
        };
        let event = match msg {
            ControlMsg::ServerError(e) => {
                self.phase = SessionPhase::Ended;
                FromServer::ServerError(e)
            }
            // A busy server writes it at once: it may be read before the cookie is written. A
            // server of several tests may send it after the parameters, when the test does not
            // fit beside the others.
            ControlMsg::State(State::AccessDenied)
                if matches!(
                    self.phase,
                    SessionPhase::Start | SessionPhase::Cookie | SessionPhase::Params
                ) =>
            {
                self.phase = SessionPhase::Ended;
                FromServer::Busy
            }
            ControlMsg::State(State::ServerTerminate) if self.phase != SessionPhase::Start => {
                self.phase = SessionPhase::Ended;
                FromServer::State(State::ServerTerminate)
            }
            ControlMsg::State(s) => {
                let (next, expected) = match self.phase {
                    SessionPhase::Cookie => (
                        Some(SessionPhase::ParamExchange).filter(|_| s == State::ParamExchange),
                        "PARAM_EXCHANGE or ACCESS_DENIED",
                    ),
                    SessionPhase::Params => (
                        Some(SessionPhase::CreateStreams).filter(|_| s == State::CreateStreams),
                        "CREATE_STREAMS or SERVER_ERROR",
                    ),
                    SessionPhase::CreateStreams => (
                        Some(SessionPhase::TestStart).filter(|_| s == State::TestStart),
                        "TEST_START",
                    ),
                    SessionPhase::TestStart => (
                        Some(SessionPhase::Running).filter(|_| s == State::TestRunning),
                        "TEST_RUNNING",
                    ),
                    SessionPhase::TestEnd => (
                        Some(SessionPhase::ExchangeResults).filter(|_| s == State::ExchangeResults),
                        "EXCHANGE_RESULTS",
                    ),
                    SessionPhase::ServerResults => (
                        Some(SessionPhase::DisplayResults).filter(|_| s == State::DisplayResults),
                        "DISPLAY_RESULTS",
                    ),
                    _ => (None, "nothing"),
                };
                let Some(next) = next else {
                    return Err(SessionError::Unexpected {
                        got: s.name().to_string(),
                        phase: self.phase,
                        expected,
                    });
                };
                self.phase = next;
                FromServer::State(s)
            }
        };
        Ok((used, Some(event)))
    }

    /// The server closed the connection: fine after the test, else an error naming where.
    pub fn closed(&self) -> Result<(), SessionError> {
        match self.phase {
            SessionPhase::Done | SessionPhase::Ended => Ok(()),
            phase => Err(SessionError::Closed { phase }),
        }
    }
}

/// Read a JSON message with `frames`: how many bytes were used, and the message once complete.
/// `wrap` says which message failed.
fn read_message<T>(
    frames: &mut FrameDecoder,
    input: &[u8],
    decode: fn(&[u8]) -> Result<T, DecodeError>,
    wrap: fn(DecodeError) -> SessionError,
) -> Result<(usize, Option<T>), SessionError> {
    let (used, body) = frames
        .push(input)
        .map_err(|e| wrap(DecodeError::Frame(e)))?;
    match body {
        None => Ok((used, None)),
        Some(body) => Ok((used, Some(decode(&body).map_err(wrap)?))),
    }
}

/// A server's side of the control connection.
#[derive(Debug, Clone)]
pub struct ServerSession {
    phase: SessionPhase,
    cookie: Vec<u8>,
    params: FrameDecoder,
    results: FrameDecoder,
}

impl ServerSession {
    /// A conversation that reads the client's results with this limit (a client's results
    /// are about 250 bytes a stream).
    pub fn new(results_limit: u32) -> ServerSession {
        ServerSession {
            phase: SessionPhase::Start,
            cookie: Vec::with_capacity(COOKIE_LEN),
            params: FrameDecoder::new(PARAMS_MAX),
            results: FrameDecoder::new(results_limit),
        }
    }

    pub fn phase(&self) -> SessionPhase {
        self.phase
    }

    /// ACCESS_DENIED: another test runs. iperf3 sends it before reading the cookie, so a busy
    /// server never waits on a stranger; close the connection after it. A server of several
    /// tests at once may learn it is busy only from the parameters (the memory the test needs):
    /// it may send it until CREATE_STREAMS, as every client since 3.0 reads ACCESS_DENIED in
    /// any state ("the server is busy running a test").
    pub fn deny_busy(&mut self) -> Result<[u8; 1], SessionError> {
        self.phase.require(
            matches!(
                self.phase,
                SessionPhase::Start | SessionPhase::Cookie | SessionPhase::Params
            ),
            "ACCESS_DENIED",
        )?;
        self.phase = SessionPhase::Ended;
        Ok([State::AccessDenied.to_byte()])
    }

    /// PARAM_EXCHANGE, after the cookie.
    pub fn param_exchange(&mut self) -> Result<[u8; 1], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::Cookie, "PARAM_EXCHANGE")?;
        self.phase = SessionPhase::ParamExchange;
        Ok([State::ParamExchange.to_byte()])
    }

    /// CREATE_STREAMS, once the parameters are accepted and the data port listens.
    pub fn create_streams(&mut self) -> Result<[u8; 1], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::Params, "CREATE_STREAMS")?;
        self.phase = SessionPhase::CreateStreams;
        Ok([State::CreateStreams.to_byte()])
    }

    /// TEST_START and TEST_RUNNING in one write, once every stream is accepted.
    pub fn test_start_running(&mut self) -> Result<[u8; 2], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::CreateStreams, "TEST_START")?;
        self.phase = SessionPhase::Running;
        Ok([State::TestStart.to_byte(), State::TestRunning.to_byte()])
    }

    /// EXCHANGE_RESULTS, after the client's TEST_END (the server stops its streams first).
    pub fn exchange_results(&mut self) -> Result<[u8; 1], SessionError> {
        self.phase
            .require(self.phase == SessionPhase::TestEnd, "EXCHANGE_RESULTS")?;
        self.phase = SessionPhase::ExchangeResults;
        Ok([State::ExchangeResults.to_byte()])
    }

    /// The server's results and DISPLAY_RESULTS, in one buffer, after the client's results.
    pub fn results_and_display(
        &mut self,
        results: &Results,
        limit: u32,
    ) -> Result<Vec<u8>, SessionError> {
        self.phase.require(
            self.phase == SessionPhase::ClientResults,
            "the server's results",
        )?;
        let mut bytes = results
            .encode(limit)
            .map_err(|e| SessionError::Results(DecodeError::Frame(e)))?;
        bytes.push(State::DisplayResults.to_byte());
        self.phase = SessionPhase::DisplayResults;
        Ok(bytes)
    }

    /// SERVER_ERROR with its codes (any time after the cookie); close after it.
    pub fn server_error(&mut self, e: ServerError) -> [u8; ServerError::LEN] {
        self.phase = SessionPhase::Ended;
        e.to_bytes()
    }

    /// SERVER_TERMINATE: the server stops (any time).
    pub fn terminate(&mut self) -> [u8; 1] {
        self.phase = SessionPhase::Ended;
        [State::ServerTerminate.to_byte()]
    }

    /// Read the client's bytes: how many were used and the event they completed, if any. Feed
    /// the rest again (a call takes at most one event's bytes). After the cookie nothing is read
    /// until the server has answered it (`(0, None)`): what the client sends next depends on
    /// the answer.
    pub fn receive(&mut self, input: &[u8]) -> Result<(usize, Option<FromClient>), SessionError> {
        match self.phase {
            SessionPhase::Cookie => Ok((0, None)),
            SessionPhase::Start => {
                let take = (COOKIE_LEN - self.cookie.len()).min(input.len());
                self.cookie.extend_from_slice(&input[..take]);
                let Some(cookie) = Cookie::from_prefix(&self.cookie) else {
                    return Ok((take, None));
                };
                self.phase = SessionPhase::Cookie;
                Ok((take, Some(FromClient::Cookie(cookie))))
            }
            SessionPhase::ParamExchange => {
                let (used, params) = read_message(
                    &mut self.params,
                    input,
                    Iperf3Params::decode,
                    SessionError::Params,
                )?;
                if params.is_some() {
                    self.phase = SessionPhase::Params;
                }
                Ok((used, params.map(|p| FromClient::Params(Box::new(p)))))
            }
            SessionPhase::ExchangeResults => {
                let (used, results) = read_message(
                    &mut self.results,
                    input,
                    Results::decode,
                    SessionError::Results,
                )?;
                if results.is_some() {
                    self.phase = SessionPhase::ClientResults;
                }
                Ok((used, results.map(|r| FromClient::Results(Box::new(r)))))
            }
            phase => {
                let Some((msg, used)) = ControlMsg::decode(input)? else {
                    return Ok((0, None));
                };
                let state = match msg {
                    ControlMsg::State(s) => s,
                    ControlMsg::ServerError(_) => {
                        return Err(SessionError::Unexpected {
                            got: ServerError::NAME.to_string(),
                            phase,
                            expected: "TEST_END, CLIENT_TERMINATE or IPERF_DONE",
                        })
                    }
                };
                let next = match (state, phase) {
                    (State::ClientTerminate | State::IperfDone, SessionPhase::DisplayResults) => {
                        SessionPhase::Done
                    }
                    (State::ClientTerminate | State::IperfDone, _) => SessionPhase::Ended,
                    (State::TestEnd, SessionPhase::Running | SessionPhase::CreateStreams) => {
                        SessionPhase::TestEnd
                    }
                    _ => {
                        return Err(SessionError::Unexpected {
                            got: state.name().to_string(),
                            phase,
                            expected: "TEST_END, CLIENT_TERMINATE or IPERF_DONE",
                        })
                    }
                };
                self.phase = next;
                Ok((used, Some(FromClient::State(state))))
            }
        }
    }

    /// The client closed the connection: fine after the test, else an error naming where
    /// (iperf3: "the client has unexpectedly closed the connection").
    pub fn closed(&self) -> Result<(), SessionError> {
        match self.phase {
            SessionPhase::Done | SessionPhase::Ended => Ok(()),
            phase => Err(SessionError::Closed { phase }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorCode;
    use crate::frame::JsonFrameError;
    use crate::params::Protocol;
    use crate::results::SenderRetransmits;

    fn results() -> Results {
        Results {
            cpu_util_total: 1.0,
            cpu_util_user: 0.5,
            cpu_util_system: 0.5,
            sender_has_retransmits: SenderRetransmits::Known,
            congestion_used: None,
            server_output_json: None,
            server_output_text: None,
            streams: vec![],
            unknown: serde_json::Map::new(),
        }
    }

    /// Deliver all of `bytes` to a receive function, collecting the events.
    fn deliver<E>(
        mut receive: impl FnMut(&[u8]) -> Result<(usize, Option<E>), SessionError>,
        mut bytes: &[u8],
    ) -> Result<Vec<E>, SessionError> {
        let mut events = Vec::new();
        while !bytes.is_empty() {
            let (used, event) = receive(bytes)?;
            events.extend(event);
            if used == 0 {
                break;
            }
            bytes = &bytes[used..];
        }
        Ok(events)
    }

    #[test]
    fn a_whole_test_both_ends() {
        let mut c = ClientSession::new(crate::frame::RESULTS_MAX);
        let mut s = ServerSession::new(1 << 20);
        let cookie = Cookie::generate().unwrap();
        let ev = deliver(|b| s.receive(b), &c.cookie(&cookie).unwrap()).unwrap();
        assert_eq!(ev, vec![FromClient::Cookie(cookie)]);
        let ev = deliver(|b| c.receive(b), &s.param_exchange().unwrap()).unwrap();
        assert_eq!(ev, vec![FromServer::State(State::ParamExchange)]);
        let params = Iperf3Params::new(Protocol::Tcp);
        let ev = deliver(|b| s.receive(b), &c.params(&params).unwrap()).unwrap();
        assert_eq!(ev, vec![FromClient::Params(Box::new(params))]);
        deliver(|b| c.receive(b), &s.create_streams().unwrap()).unwrap();
        let ev = deliver(|b| c.receive(b), &s.test_start_running().unwrap()).unwrap();
        assert_eq!(
            ev,
            vec![
                FromServer::State(State::TestStart),
                FromServer::State(State::TestRunning)
            ]
        );
        assert_eq!(c.phase(), SessionPhase::Running);
        let ev = deliver(|b| s.receive(b), &c.test_end().unwrap()).unwrap();
        assert_eq!(ev, vec![FromClient::State(State::TestEnd)]);
        deliver(|b| c.receive(b), &s.exchange_results().unwrap()).unwrap();
        let ev = deliver(|b| s.receive(b), &c.results(&results(), 1 << 20).unwrap()).unwrap();
        assert_eq!(ev, vec![FromClient::Results(Box::new(results()))]);
        let ev = deliver(
            |b| c.receive(b),
            &s.results_and_display(&results(), 1 << 20).unwrap(),
        )
        .unwrap();
        assert_eq!(
            ev,
            vec![
                FromServer::Results(Box::new(results())),
                FromServer::State(State::DisplayResults)
            ]
        );
        assert_eq!(
            c.results_shape(),
            Some(VersionRange::ANY),
            "no streams: nothing told"
        );
        let ev = deliver(|b| s.receive(b), &c.iperf_done().unwrap()).unwrap();
        assert_eq!(ev, vec![FromClient::State(State::IperfDone)]);
        assert_eq!(
            (c.phase(), s.phase()),
            (SessionPhase::Done, SessionPhase::Done)
        );
        assert_eq!(c.closed(), Ok(()));
        assert_eq!(s.closed(), Ok(()));
        // A 3.21 server's SERVER_ERROR after IPERF_DONE (captured in reverse tests): dropped.
        assert_eq!(
            c.receive(&[0xfe, 0, 0, 0, 0xcd, 0, 0, 0, 0]).unwrap(),
            (9, None)
        );
        assert_eq!(c.phase(), SessionPhase::Done);
    }

    #[test]
    fn refusals() {
        let mut c = ClientSession::new(1 << 20);
        c.cookie(&Cookie([b'a'; 37])).unwrap();
        let ev = deliver(|b| c.receive(b), &[0xff]).unwrap();
        assert_eq!(ev, vec![FromServer::Busy]);
        assert_eq!(c.closed(), Ok(()));

        let mut c = ClientSession::new(1 << 20);
        c.cookie(&Cookie([b'a'; 37])).unwrap();
        deliver(|b| c.receive(b), &[9]).unwrap();
        c.params(&Iperf3Params::new(Protocol::Tcp)).unwrap();
        // Captured from 3.21: SERVER_ERROR 27 in three writes. Until all nine bytes are in,
        // nothing is taken: the caller keeps them and feeds them again with the next ones.
        assert_eq!(c.receive(&[0xfe]).unwrap(), (0, None));
        assert_eq!(c.receive(&[0xfe, 0, 0, 0, 0x1b]).unwrap(), (0, None));
        let ev = deliver(|b| c.receive(b), &[0xfe, 0, 0, 0, 0x1b, 0, 0, 0, 0]).unwrap();
        assert_eq!(
            ev,
            vec![FromServer::ServerError(ServerError {
                code: ErrorCode::IETOTALRATE,
                errno: 0
            })]
        );

        // 3.9-3.20 and --server-bitrate-limit: CREATE_STREAMS, then the server closes.
        let mut c = ClientSession::new(1 << 20);
        c.cookie(&Cookie([b'a'; 37])).unwrap();
        deliver(|b| c.receive(b), &[9]).unwrap();
        c.params(&Iperf3Params::new(Protocol::Tcp)).unwrap();
        deliver(|b| c.receive(b), &[10]).unwrap();
        let err = c.closed().unwrap_err();
        assert_eq!(err.closed_in(), Some(SessionPhase::CreateStreams));
        assert_eq!(
            err.to_string(),
            "the peer closed the control connection after CREATE_STREAMS"
        );
    }

    #[test]
    fn out_of_order_is_refused() {
        let mut c = ClientSession::new(1 << 20);
        assert!(matches!(c.test_end(), Err(SessionError::OutOfOrder { .. })));
        c.cookie(&Cookie([b'a'; 37])).unwrap();
        let err = c.receive(&[13]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "EXCHANGE_RESULTS arrived after the cookie, where iperf3 sends PARAM_EXCHANGE or ACCESS_DENIED"
        );
        assert!(matches!(
            c.receive(&[0x77]),
            Err(SessionError::UnknownState(_))
        ));

        // Busy after the parameters: ACCESS_DENIED, which the client reads as busy.
        let mut s = ServerSession::new(1 << 20);
        let mut c = ClientSession::new(1 << 20);
        deliver(|b| s.receive(b), &c.cookie(&Cookie([b'a'; 37])).unwrap()).unwrap();
        deliver(|b| c.receive(b), &s.param_exchange().unwrap()).unwrap();
        let p = c.params(&Iperf3Params::new(Protocol::Tcp)).unwrap();
        deliver(|b| s.receive(b), &p).unwrap();
        let ev = deliver(|b| c.receive(b), &s.deny_busy().unwrap()).unwrap();
        assert_eq!(ev, vec![FromServer::Busy]);
        let mut s = ServerSession::new(1 << 20);
        assert!(s.param_exchange().is_err(), "no cookie yet");
        // A client that sends its parameters before PARAM_EXCHANGE: nothing is read past the
        // cookie until the server answered.
        let mut early = vec![b'x'; 37];
        early.extend(Iperf3Params::new(Protocol::Tcp).encode().unwrap());
        let (used, event) = s.receive(&early).unwrap();
        assert_eq!((used, event.is_some()), (37, true));
        assert_eq!(s.receive(&early[37..]).unwrap(), (0, None));
        s.param_exchange().unwrap();
        assert!(matches!(
            s.receive(&early[37..]).unwrap().1,
            Some(FromClient::Params(_))
        ));
        let mut s = ServerSession::new(1 << 20);
        deliver(|b| s.receive(b), &[b'x'; 37]).unwrap();
        s.param_exchange().unwrap();
        // Oversized parameters: refused at the length.
        let err = s.receive(&[0, 0, 0x20, 1]).unwrap_err();
        assert!(matches!(
            err,
            SessionError::Params(DecodeError::Frame(JsonFrameError::TooLarge { .. }))
        ));
        // A client that sends SERVER_ERROR.
        let mut s = ServerSession::new(1 << 20);
        deliver(|b| s.receive(b), &[b'x'; 37]).unwrap();
        s.param_exchange().unwrap();
        deliver(
            |b| s.receive(b),
            &Iperf3Params::new(Protocol::Tcp).encode().unwrap(),
        )
        .unwrap();
        s.create_streams().unwrap();
        assert!(matches!(
            s.receive(&[0xfe; 9]),
            Err(SessionError::Unexpected { .. })
        ));
        assert!(matches!(
            s.receive(&[13]),
            Err(SessionError::Unexpected { .. })
        ));
        // Closing early is named.
        assert_eq!(
            s.closed().unwrap_err().closed_in(),
            Some(SessionPhase::CreateStreams)
        );
    }

    #[test]
    fn the_client_may_stop_any_time() {
        let mut s = ServerSession::new(1 << 20);
        deliver(|b| s.receive(b), &[b'x'; 37]).unwrap();
        s.param_exchange().unwrap();
        deliver(
            |b| s.receive(b),
            &Iperf3Params::new(Protocol::Tcp).encode().unwrap(),
        )
        .unwrap();
        s.create_streams().unwrap();
        s.test_start_running().unwrap();
        let ev = deliver(|b| s.receive(b), &[12]).unwrap();
        assert_eq!(ev, vec![FromClient::State(State::ClientTerminate)]);
        assert_eq!(s.phase(), SessionPhase::Ended);
        assert_eq!(s.closed(), Ok(()));
        let mut c = ClientSession::new(1 << 20);
        assert_eq!(c.terminate(), [12]);
        assert_eq!(c.closed(), Ok(()));
    }
}
