//! Length-prefixed JSON frames.

use std::io::{self, Read, Write};

use thiserror::Error;

use crate::Msg;

/// Largest frame a server accepts from a client, and the default for control messages.
pub const MAX_CONTROL_FRAME: u32 = 64 * 1024;
/// Largest frame a client accepts from a server (results with per-stream, per-interval figures;
/// the server's inventory in `accepted`).
pub const MAX_RESULTS_FRAME: u32 = 16 * 1024 * 1024;

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

fn map_io(e: io::Error) -> FrameError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => FrameError::Timeout,
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => FrameError::Closed,
        _ => FrameError::Io(e),
    }
}

/// Read one frame's body, refusing lengths above `max` before allocating.
pub fn read_frame(r: &mut impl Read, max: u32) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Err(FrameError::Closed),
            Ok(0) => return Err(FrameError::Truncated { got, len: 4 }),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(map_io(e)),
        }
    }
    let len = u32::from_be_bytes(len);
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    let mut body = vec![0u8; len as usize];
    let mut got = 0;
    while got < body.len() {
        match r.read(&mut body[got..]) {
            Ok(0) => return Err(FrameError::Truncated { got, len }),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(map_io(e)),
        }
    }
    Ok(body)
}

/// Decode a frame body. Never panics on any input.
pub fn decode(body: &[u8]) -> Result<Msg, FrameError> {
    serde_json::from_slice(body).map_err(|e| FrameError::Malformed(e.to_string()))
}

/// Read and decode one message.
pub fn read_msg(r: &mut impl Read, max: u32) -> Result<Msg, FrameError> {
    decode(&read_frame(r, max)?)
}

/// Encode and write one message as a single write.
pub fn write_msg(w: &mut impl Write, m: &Msg) -> Result<(), FrameError> {
    let body = serde_json::to_vec(m).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLarge {
        len: u32::MAX,
        max: MAX_RESULTS_FRAME,
    })?;
    let mut buf = Vec::with_capacity(body.len() + 4);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(&body);
    w.write_all(&buf).map_err(map_io)?;
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
    }

    #[test]
    fn truncated_and_closed() {
        assert!(matches!(
            read_frame(&mut &b""[..], 1024),
            Err(FrameError::Closed)
        ));
        assert!(matches!(
            read_frame(&mut &b"\x00\x00"[..], 1024),
            Err(FrameError::Truncated { .. })
        ));
        assert!(matches!(
            read_frame(&mut &b"\x00\x00\x00\x10{}"[..], 1024),
            Err(FrameError::Truncated { got: 2, len: 16 })
        ));
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
