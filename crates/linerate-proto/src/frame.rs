//! Length-prefixed JSON frames: [`encode`] one, [`FrameAssembler`] takes bytes as they come and
//! gives frames back whole, without I/O (the sessions of [`crate::session`] read with it).
//! [`read_frame`], [`read_msg`] and [`write_msg`] are the same on a blocking stream, for a peer
//! that speaks one frame at a time (the mesh's rank protocol, tests playing a hostile peer).

use std::io::{self, Read, Write};

use thiserror::Error;

use crate::Msg;

/// Largest frame a server accepts from a client, and the default for control messages.
pub const MAX_CONTROL_FRAME: u32 = 64 * 1024;
/// Largest frame a client accepts from a server (results with per-stream, per-interval figures;
/// the server's inventory in `accepted`).
pub const MAX_RESULTS_FRAME: u32 = 16 * 1024 * 1024;

/// The length prefix: a big-endian u32.
const LEN_BYTES: usize = 4;

#[derive(Debug, Error)]
pub enum FrameError {
    #[error("connection closed by the peer")]
    Closed,
    #[error("frame of {len} bytes exceeds the limit of {max} bytes (not a linerate peer, or a hostile one)")]
    TooLarge { len: u32, max: u32 },
    #[error("frame truncated: the peer closed after {got} of {len} bytes")]
    Truncated { got: usize, len: u32 },
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("timed out waiting for the peer")]
    Timeout,
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl FrameError {
    /// A stream's error in the frame layer's words: a timeout, the peer gone, or the system's.
    pub fn from_io(e: io::Error) -> FrameError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => FrameError::Timeout,
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => FrameError::Closed,
            _ => FrameError::Io(e),
        }
    }
}

fn map_io(e: io::Error) -> FrameError {
    FrameError::from_io(e)
}

/// An incremental reader of one frame after another: bytes in as they arrive, bodies out once
/// whole. It refuses a length over its limit before taking a byte of the body, grows the body
/// with the bytes that came rather than with the length claimed, and takes no byte past the end
/// of a frame, so what follows stays with the caller.
#[derive(Debug, Clone)]
pub struct FrameAssembler {
    max: u32,
    len_bytes: [u8; LEN_BYTES],
    len_got: usize,
    /// The body's length, once its prefix is in.
    len: Option<u32>,
    body: Vec<u8>,
    /// The length that was refused: the stream is out of step from then on.
    refused: Option<u32>,
}

impl FrameAssembler {
    /// An assembler that refuses frames over `max` bytes.
    pub fn new(max: u32) -> FrameAssembler {
        FrameAssembler {
            max,
            len_bytes: [0; LEN_BYTES],
            len_got: 0,
            len: None,
            body: Vec::new(),
            refused: None,
        }
    }

    /// Take bytes: how many were used and, when they completed a frame, its body. Feed the rest
    /// again for the next frame. After a refused length, the same error again: the connection is
    /// to be closed.
    pub fn push(&mut self, input: &[u8]) -> Result<(usize, Option<Vec<u8>>), FrameError> {
        if let Some(len) = self.refused {
            return Err(FrameError::TooLarge { len, max: self.max });
        }
        let mut used = 0;
        let len = match self.len {
            Some(len) => len,
            None => {
                let take = (LEN_BYTES - self.len_got).min(input.len());
                self.len_bytes[self.len_got..self.len_got + take].copy_from_slice(&input[..take]);
                self.len_got += take;
                used = take;
                if self.len_got < LEN_BYTES {
                    return Ok((used, None));
                }
                let len = u32::from_be_bytes(self.len_bytes);
                if len > self.max {
                    self.refused = Some(len);
                    return Err(FrameError::TooLarge { len, max: self.max });
                }
                self.len = Some(len);
                self.body = Vec::with_capacity((len as usize).min(MAX_CONTROL_FRAME as usize));
                len
            }
        };
        let take = (len as usize - self.body.len()).min(input.len() - used);
        self.body.extend_from_slice(&input[used..used + take]);
        used += take;
        if self.body.len() < len as usize {
            return Ok((used, None));
        }
        self.len = None;
        self.len_got = 0;
        Ok((used, Some(std::mem::take(&mut self.body))))
    }

    /// The peer closed: [`FrameError::Closed`] between frames, [`FrameError::Truncated`] inside
    /// one (its prefix or its body).
    pub fn closed(&self) -> FrameError {
        if let Some(len) = self.refused {
            return FrameError::TooLarge { len, max: self.max };
        }
        match self.len {
            Some(len) => FrameError::Truncated {
                got: self.body.len(),
                len,
            },
            None if self.len_got > 0 => FrameError::Truncated {
                got: self.len_got,
                len: LEN_BYTES as u32,
            },
            None => FrameError::Closed,
        }
    }

    /// How many more bytes the frame under way needs at least: a reader that must not take a
    /// byte past the frame (a data connection's first frame is followed by its data) reads at
    /// most this many.
    pub fn needed(&self) -> usize {
        match self.len {
            Some(len) => len as usize - self.body.len(),
            None => LEN_BYTES - self.len_got,
        }
    }

    /// Bytes it holds: at most the limit and the prefix.
    pub fn held(&self) -> usize {
        self.len_got + self.body.capacity()
    }

    /// The largest frame it takes.
    pub fn max(&self) -> u32 {
        self.max
    }
}

/// One message as a frame: its length, then its JSON, ready for a single write.
pub fn encode(m: &Msg) -> Result<Vec<u8>, FrameError> {
    let body = serde_json::to_vec(m).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLarge {
        len: u32::MAX,
        max: MAX_RESULTS_FRAME,
    })?;
    let mut buf = Vec::with_capacity(body.len() + LEN_BYTES);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(&body);
    Ok(buf)
}

/// Decode a frame body. Never panics on any input.
pub fn decode(body: &[u8]) -> Result<Msg, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// Read one frame's body from a blocking stream, refusing lengths above `max` before reading
/// the body, and taking no byte past the frame.
pub fn read_frame(r: &mut impl Read, max: u32) -> Result<Vec<u8>, FrameError> {
    let mut frames = FrameAssembler::new(max);
    let mut buf = [0u8; 16 * 1024];
    loop {
        // Never 0: a frame is complete the moment its last byte (or its prefix, when empty) is in.
        let want = frames.needed().min(buf.len());
        match r.read(&mut buf[..want]) {
            Ok(0) => return Err(frames.closed()),
            Ok(n) => {
                if let (_, Some(body)) = frames.push(&buf[..n])? {
                    return Ok(body);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(map_io(e)),
        }
    }
}

/// Read and decode one message from a blocking stream.
pub fn read_msg(r: &mut impl Read, max: u32) -> Result<Msg, FrameError> {
    decode(&read_frame(r, max)?)
}

/// Encode and write one message as a single write.
pub fn write_msg(w: &mut impl Write, m: &Msg) -> Result<(), FrameError> {
    w.write_all(&encode(m)?).map_err(map_io)?;
    w.flush().map_err(map_io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let m = Msg::Refused {
            reason: "busy".into(),
            kind: crate::RefusalKind::Busy,
        };
        let mut buf = Vec::new();
        write_msg(&mut buf, &m).unwrap();
        assert_eq!(buf, encode(&m).unwrap());
        let back = read_msg(&mut buf.as_slice(), MAX_CONTROL_FRAME).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn oversized_refused_before_reading() {
        let mut buf = (1_000_000u32).to_be_bytes().to_vec();
        buf.extend_from_slice(b"{}");
        assert!(matches!(
            read_frame(&mut buf.as_slice(), 1024),
            Err(FrameError::TooLarge { len: 1_000_000, .. })
        ));
        let mut a = FrameAssembler::new(1024);
        let e = a.push(&buf).unwrap_err();
        assert_eq!(
            e.to_string(),
            "frame of 1000000 bytes exceeds the limit of 1024 bytes (not a linerate peer, or a hostile one)"
        );
        assert_eq!(a.held(), 4, "nothing of the body was taken");
        assert!(matches!(
            a.push(b"more"),
            Err(FrameError::TooLarge {
                len: 1_000_000,
                max: 1024
            })
        ));
    }

    #[test]
    fn truncated_and_closed() {
        assert!(matches!(
            read_frame(&mut &b""[..], 1024),
            Err(FrameError::Closed)
        ));
        assert!(matches!(
            read_frame(&mut &b"\x00\x00"[..], 1024),
            Err(FrameError::Truncated { got: 2, len: 4 })
        ));
        assert!(matches!(
            read_frame(&mut &b"\x00\x00\x00\x10{}"[..], 1024),
            Err(FrameError::Truncated { got: 2, len: 16 })
        ));
    }

    /// Partial frames, several frames in one read, and an empty frame: the same frames whatever
    /// the bytes' grouping, and never a byte past a frame taken.
    #[test]
    fn bytes_come_as_they_come() {
        let mut wire = encode(&Msg::Start).unwrap();
        wire.extend_from_slice(&[0, 0, 0, 0]);
        wire.extend(encode(&Msg::Done).unwrap());
        let want = vec![
            br#"{"type":"start"}"#.to_vec(),
            Vec::new(),
            br#"{"type":"done"}"#.to_vec(),
        ];
        for chunk in [1, 2, 3, 5, 19, 20, 21, wire.len()] {
            let mut a = FrameAssembler::new(64);
            let mut got = Vec::new();
            for piece in wire.chunks(chunk) {
                let mut rest = piece;
                loop {
                    let (used, body) = a.push(rest).unwrap();
                    assert!(used <= rest.len());
                    rest = &rest[used..];
                    match body {
                        Some(b) => got.push(b),
                        None => {
                            assert!(rest.is_empty(), "took less without a frame");
                            break;
                        }
                    }
                }
            }
            assert_eq!(got, want, "in pieces of {chunk}");
            assert!(matches!(a.closed(), FrameError::Closed));
        }
        // Exact reads: a frame then the data that follows it on the same connection.
        let mut wire = encode(&Msg::Start).unwrap();
        wire.extend_from_slice(b"DATA");
        let mut r = wire.as_slice();
        assert_eq!(read_msg(&mut r, 64).unwrap(), Msg::Start);
        assert_eq!(r, b"DATA");
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        for body in [
            &b""[..],
            b"{",
            b"null",
            b"[1,2]",
            b"{\"type\":\"nope\"}",
            b"\xff\xfe",
            b"GET / HTTP/1.1",
        ] {
            assert!(
                matches!(decode(body), Err(FrameError::Malformed(_))),
                "{body:?}"
            );
        }
    }
}
