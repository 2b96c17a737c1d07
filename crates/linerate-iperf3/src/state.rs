//! The state bytes of the control connection.
//!
//! Between the JSON messages, the two ends move each other through a test with single signed
//! bytes (`iperf_set_send_state`; values from iperf3's `iperf_api.h`, unchanged from 3.0 to 3.21).
//! One of them, SERVER_ERROR (−2, 0xFE), carries a payload: two big-endian `i32`s, iperf3's
//! error code (`i_errno`) and the server's `errno`. It is therefore not a [`State`] but its own
//! [`ControlMsg`] variant, so a lone 0xFE cannot be built by mistake.

use std::fmt;

use thiserror::Error;

use crate::errors::ErrorCode;

/// Which end of the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    Client,
    Server,
}

/// A state byte other than SERVER_ERROR (see [`ServerError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Server: every stream is accepted; both ends start their timers.
    TestStart,
    /// Server: sent right after TEST_START; the client starts sending.
    TestRunning,
    /// Unused by every version.
    ResultRequest,
    /// Client: its end condition (time, bytes or blocks) was met.
    TestEnd,
    /// Unused.
    StreamBegin,
    /// Unused.
    StreamRunning,
    /// Unused.
    StreamEnd,
    /// Unused.
    AllStreamsEnd,
    /// Server: the cookie was read; the client sends its parameters.
    ParamExchange,
    /// Server: the data listener is ready; the client opens its streams.
    CreateStreams,
    /// Server: it was told to stop (a signal).
    ServerTerminate,
    /// Client: it was told to stop (Ctrl-C).
    ClientTerminate,
    /// Server: the client sends its results, then reads the server's.
    ExchangeResults,
    /// Server: the client prints, closes its streams and answers IPERF_DONE.
    DisplayResults,
    /// The server's idle state; never sent.
    IperfStart,
    /// Client: the last byte of a test.
    IperfDone,
    /// Server: busy with another test (sent before the cookie is read), or a data connection
    /// with a wrong cookie. Sent alone, then the connection is closed.
    AccessDenied,
}

impl State {
    /// Every state, in the order of their values (1 to 16, then −1).
    pub const ALL: [State; 17] = [
        State::TestStart,
        State::TestRunning,
        State::ResultRequest,
        State::TestEnd,
        State::StreamBegin,
        State::StreamRunning,
        State::StreamEnd,
        State::AllStreamsEnd,
        State::ParamExchange,
        State::CreateStreams,
        State::ServerTerminate,
        State::ClientTerminate,
        State::ExchangeResults,
        State::DisplayResults,
        State::IperfStart,
        State::IperfDone,
        State::AccessDenied,
    ];

    /// The signed value iperf3 defines.
    pub const fn value(self) -> i8 {
        match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::ResultRequest => 3,
            State::TestEnd => 4,
            State::StreamBegin => 5,
            State::StreamRunning => 6,
            State::StreamEnd => 7,
            State::AllStreamsEnd => 8,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
        }
    }

    /// The byte on the wire.
    pub const fn to_byte(self) -> u8 {
        self.value().to_be_bytes()[0]
    }

    /// The state a byte stands for; `None` for SERVER_ERROR (0xFE, see [`ControlMsg::decode`])
    /// and for bytes no version defines.
    pub fn from_byte(byte: u8) -> Option<State> {
        State::ALL.into_iter().find(|s| s.to_byte() == byte)
    }

    /// iperf3's name for it (the C macro), as its debug output prints it.
    pub const fn name(self) -> &'static str {
        match self {
            State::TestStart => "TEST_START",
            State::TestRunning => "TEST_RUNNING",
            State::ResultRequest => "RESULT_REQUEST",
            State::TestEnd => "TEST_END",
            State::StreamBegin => "STREAM_BEGIN",
            State::StreamRunning => "STREAM_RUNNING",
            State::StreamEnd => "STREAM_END",
            State::AllStreamsEnd => "ALL_STREAMS_END",
            State::ParamExchange => "PARAM_EXCHANGE",
            State::CreateStreams => "CREATE_STREAMS",
            State::ServerTerminate => "SERVER_TERMINATE",
            State::ClientTerminate => "CLIENT_TERMINATE",
            State::ExchangeResults => "EXCHANGE_RESULTS",
            State::DisplayResults => "DISPLAY_RESULTS",
            State::IperfStart => "IPERF_START",
            State::IperfDone => "IPERF_DONE",
            State::AccessDenied => "ACCESS_DENIED",
        }
    }

    /// Which end sends it on the control connection; `None` for the states no version sends.
    pub const fn sent_by(self) -> Option<Peer> {
        match self {
            State::TestStart
            | State::TestRunning
            | State::ParamExchange
            | State::CreateStreams
            | State::ServerTerminate
            | State::ExchangeResults
            | State::DisplayResults
            | State::AccessDenied => Some(Peer::Server),
            State::TestEnd | State::ClientTerminate | State::IperfDone => Some(Peer::Client),
            State::ResultRequest
            | State::StreamBegin
            | State::StreamRunning
            | State::StreamEnd
            | State::AllStreamsEnd
            | State::IperfStart => None,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.value())
    }
}

/// SERVER_ERROR: the server failed the test, and says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerError {
    /// iperf3's error code (`i_errno`).
    pub code: ErrorCode,
    /// The server's `errno` when it failed (0 when none applies). Its meaning is the server's
    /// operating system's numbering; iperf3 clients print `strerror(errno)` when it is above 0.
    pub errno: i32,
}

impl ServerError {
    /// SERVER_ERROR's value.
    pub const VALUE: i8 = -2;
    /// SERVER_ERROR's byte on the wire.
    pub const BYTE: u8 = 0xFE;
    /// iperf3's name for it.
    pub const NAME: &'static str = "SERVER_ERROR";
    /// The byte and its two codes.
    pub const LEN: usize = 9;

    /// The nine bytes on the wire. iperf3 writes them in three writes; a peer reads them with
    /// blocking reads, so one write of all nine is equally understood, and is what to send.
    pub fn to_bytes(self) -> [u8; ServerError::LEN] {
        let mut out = [0u8; ServerError::LEN];
        out[0] = ServerError::BYTE;
        out[1..5].copy_from_slice(&self.code.0.to_be_bytes());
        out[5..9].copy_from_slice(&self.errno.to_be_bytes());
        out
    }
}

/// One message of the control connection that is not JSON: a state byte, or SERVER_ERROR with
/// its codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlMsg {
    State(State),
    ServerError(ServerError),
}

/// A byte where a state byte was expected that no iperf3 version sends. iperf3 calls this
/// IEMESSAGE (110): "received an unknown control message".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error(
    "received {byte:#04x} where an iperf3 state byte was expected (not an iperf3 peer, or out of \
     step)"
)]
pub struct UnknownState {
    pub byte: u8,
}

impl ControlMsg {
    /// The bytes on the wire, to be written with one write.
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            ControlMsg::State(s) => vec![s.to_byte()],
            ControlMsg::ServerError(e) => e.to_bytes().to_vec(),
        }
    }

    /// Decode the message at the start of `buf`: `Ok(None)` when more bytes are needed (nothing
    /// yet, or a SERVER_ERROR without its eight bytes of codes), else the message and how many
    /// bytes it took.
    pub fn decode(buf: &[u8]) -> Result<Option<(ControlMsg, usize)>, UnknownState> {
        let Some(&byte) = buf.first() else {
            return Ok(None);
        };
        if byte == ServerError::BYTE {
            let Some(codes) = buf.get(1..ServerError::LEN) else {
                return Ok(None);
            };
            let code = i32::from_be_bytes([codes[0], codes[1], codes[2], codes[3]]);
            let errno = i32::from_be_bytes([codes[4], codes[5], codes[6], codes[7]]);
            let msg = ControlMsg::ServerError(ServerError {
                code: ErrorCode(code),
                errno,
            });
            return Ok(Some((msg, ServerError::LEN)));
        }
        match State::from_byte(byte) {
            Some(s) => Ok(Some((ControlMsg::State(s), 1))),
            None => Err(UnknownState { byte }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_bytes_are_iperf3s() {
        let expected: [(State, i8, u8, &str); 6] = [
            (State::TestStart, 1, 0x01, "TEST_START"),
            (State::ParamExchange, 9, 0x09, "PARAM_EXCHANGE"),
            (State::ExchangeResults, 13, 0x0d, "EXCHANGE_RESULTS"),
            (State::IperfDone, 16, 0x10, "IPERF_DONE"),
            (State::AccessDenied, -1, 0xff, "ACCESS_DENIED"),
            (State::DisplayResults, 14, 0x0e, "DISPLAY_RESULTS"),
        ];
        for (s, v, b, n) in expected {
            assert_eq!(s.value(), v);
            assert_eq!(s.to_byte(), b);
            assert_eq!(s.name(), n);
            assert_eq!(State::from_byte(b), Some(s));
        }
        // 1..=16 are the states in order; -1 is the last.
        for (s, value) in State::ALL.iter().zip(1..=16) {
            assert_eq!(s.value(), value);
        }
        assert_eq!(ServerError::VALUE.to_be_bytes()[0], ServerError::BYTE);
    }

    #[test]
    fn every_byte_is_a_state_a_server_error_or_unknown() {
        for b in 0..=u8::MAX {
            let decoded = ControlMsg::decode(&[b, 0, 0, 0, 0x25, 0, 0, 0, 0]);
            match b {
                1..=16 | 0xff => {
                    assert_eq!(
                        decoded,
                        Ok(Some((ControlMsg::State(State::from_byte(b).unwrap()), 1)))
                    );
                }
                0xfe => assert!(matches!(decoded, Ok(Some((ControlMsg::ServerError(_), 9))))),
                _ => assert_eq!(decoded, Err(UnknownState { byte: b })),
            }
        }
    }

    #[test]
    fn server_error_needs_its_codes() {
        // Captured from iperf3 3.21 (`--server-max-duration 2`, client `-t 5`).
        let wire = [0xfe, 0, 0, 0, 0x25, 0, 0, 0, 0];
        for short in 0..ServerError::LEN {
            assert_eq!(
                ControlMsg::decode(&wire[..short]),
                Ok(None),
                "{short} bytes"
            );
        }
        let (msg, used) = ControlMsg::decode(&wire).unwrap().unwrap();
        assert_eq!(used, 9);
        let ControlMsg::ServerError(e) = msg else {
            panic!("{msg:?}")
        };
        assert_eq!(e.code, ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED);
        assert_eq!(e.errno, 0);
        assert_eq!(msg.to_bytes(), wire);
        // Negative and large values survive.
        let odd = ServerError {
            code: ErrorCode(-7),
            errno: i32::MAX,
        };
        let bytes = odd.to_bytes();
        assert_eq!(
            ControlMsg::decode(&bytes),
            Ok(Some((ControlMsg::ServerError(odd), 9)))
        );
    }

    #[test]
    fn who_sends_what() {
        assert_eq!(State::ParamExchange.sent_by(), Some(Peer::Server));
        assert_eq!(State::TestEnd.sent_by(), Some(Peer::Client));
        assert_eq!(State::IperfDone.sent_by(), Some(Peer::Client));
        assert_eq!(State::ResultRequest.sent_by(), None);
        assert_eq!(State::IperfStart.sent_by(), None);
        assert_eq!(State::AccessDenied.to_string(), "ACCESS_DENIED (-1)");
    }
}
