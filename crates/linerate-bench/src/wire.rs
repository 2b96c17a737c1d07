//! linerate's control connection under its sans-I/O session (`linerate_proto::session`): the
//! one place the client and the server read and write it. A read takes at most what the
//! session can take now and waits at most until its deadline; what it read goes to the
//! session, the time that passed and the peer's leaving too; the bytes the session says to
//! send are written whole.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use linerate_proto::session::{Gone, Session};
use linerate_proto::FrameError;

/// What one read brought.
#[derive(Debug)]
pub(crate) enum Got {
    /// Bytes, kept for the session.
    Bytes,
    /// Nothing until the time given.
    Timeout,
    /// The peer went away.
    Gone(Gone),
}

/// One end of a control connection: the socket and the bytes read but not yet taken.
#[derive(Debug)]
pub(crate) struct Wire {
    sock: TcpStream,
    inbuf: Vec<u8>,
}

/// The most one read takes.
const READ_BYTES: usize = 16 * 1024;

impl Wire {
    pub fn new(sock: TcpStream) -> Wire {
        Wire {
            sock,
            inbuf: Vec::new(),
        }
    }

    pub fn sock(&self) -> &TcpStream {
        &self.sock
    }

    /// The socket, once nothing of what follows the conversation was read (a data connection
    /// past its first frame: the session reads it exactly).
    pub fn into_sock(self) -> TcpStream {
        self.sock
    }

    /// Write `bytes` whole.
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), FrameError> {
        self.sock.write_all(bytes).map_err(FrameError::from_io)
    }

    /// Give `s` the bytes already read that it can take now: how many it took.
    pub fn feed<S: Session>(&mut self, s: &mut S) -> usize {
        let n = s.read_limit().min(self.inbuf.len());
        if n == 0 {
            return 0;
        }
        let used = s.receive(Instant::now(), &self.inbuf[..n]);
        self.inbuf.drain(..used);
        used
    }

    /// Read at most `limit` bytes (none when 0), waiting until `until` at most (`None`: as
    /// long as it takes).
    pub fn read(&mut self, limit: usize, until: Option<Instant>) -> Got {
        let timeout = match until {
            Some(at) => match at.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Got::Timeout,
            },
            None => None,
        };
        if self.sock.set_read_timeout(timeout).is_err() {
            return Got::Gone(Gone::Failed(
                "setting the control connection's read timeout".into(),
            ));
        }
        let mut buf = [0u8; READ_BYTES];
        let want = limit.min(READ_BYTES);
        loop {
            return match self.sock.read(&mut buf[..want]) {
                Ok(0) => Got::Gone(Gone::Closed),
                Ok(n) => {
                    self.inbuf.extend_from_slice(&buf[..n]);
                    Got::Bytes
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => match FrameError::from_io(e) {
                    FrameError::Timeout => Got::Timeout,
                    FrameError::Closed => Got::Gone(Gone::Closed),
                    e => Got::Gone(Gone::Failed(e.to_string())),
                },
            };
        }
    }

    /// Move `s` on by one step when it has nothing to do: the bytes already read, else one read
    /// until its deadline (or `cap`, when sooner), or the wait alone when it reads nothing now.
    /// False: `s` waits on its caller.
    pub fn pump<S: Session>(&mut self, s: &mut S, cap: Option<Instant>) -> bool {
        if self.feed(s) > 0 {
            return true;
        }
        let limit = s.read_limit();
        let deadline = s.deadline();
        let until = match (deadline, cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if limit == 0 {
            // A wait with nothing to read (the server's delay before it answers a wrong key).
            let Some(until) = until else {
                return false;
            };
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            s.timeout(Instant::now());
            return true;
        }
        match self.read(limit, until) {
            Got::Bytes => {
                self.feed(s);
            }
            Got::Timeout => s.timeout(Instant::now()),
            Got::Gone(why) => s.gone(Instant::now(), why),
        }
        true
    }
}
