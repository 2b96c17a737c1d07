//! The framing of iperf3's JSON messages (the parameters and the results): a 4-byte big-endian
//! length, then that many bytes of UTF-8 JSON, without a terminator (`JSON_write`/`JSON_read`).
//!
//! A message is encoded into one buffer, to be written with one write: iperf3 writes the length
//! and the body in two, and before 3.10 it did not set TCP_NODELAY on the control connection,
//! so a peer of ours that waits for the whole message would otherwise depend on Nagle's
//! algorithm meeting a delayed ACK.
//!
//! The decoder is incremental and bounded: it is fed whatever bytes arrive, never holds more
//! than its limit, and refuses a length above the limit as soon as the 4 bytes of it are in,
//! before any of the body. iperf3 itself caps the parameters at 8 KiB since 3.18
//! ([`PARAMS_MAX`]) and reads results of any size; linerate caps results too
//! ([`RESULTS_MAX`], or a limit of the caller's).

use thiserror::Error;

/// The largest parameters message a server reads (iperf3's `MAX_PARAMS_JSON_STRING`, 3.18+).
/// Real parameters are 100 to 400 bytes; only `title` and `extra_data` can make them long.
pub const PARAMS_MAX: u32 = 8 * 1024;

/// The largest results message read by default. A client's results are about 250 bytes per
/// stream (64 KiB for 256 streams); a server's carry, with `--get-server-output`, its whole
/// report, which grows with the test's length and streams (a 10 s test of 128 streams with
/// per-second intervals is about 1 MiB with `-J`).
pub const RESULTS_MAX: u32 = 16 * 1024 * 1024;

/// The length prefix.
pub const LEN_BYTES: usize = 4;

/// Why a message could not be framed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum JsonFrameError {
    /// iperf3 refuses a length of 0 (`JSON_read`: `hsize > 0`).
    #[error("a JSON message of length 0 (iperf3 refuses an empty message)")]
    Empty,
    #[error(
        "a JSON message of {len} bytes is over the limit of {limit} bytes (a hostile or broken \
         peer, or not iperf3)"
    )]
    TooLarge { len: u64, limit: u32 },
    #[error("the connection closed {got} bytes into the 4-byte length of a JSON message")]
    LengthTruncated { got: usize },
    #[error("the connection closed after {got} of a JSON message's {len} bytes")]
    Truncated { got: usize, len: u32 },
}

/// One message: its length, then the body, in one buffer. Refuses a body over `limit` (the
/// limit the peer reads with: [`PARAMS_MAX`] for parameters).
pub fn encode_frame(body: &[u8], limit: u32) -> Result<Vec<u8>, JsonFrameError> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|len| *len <= limit)
        .ok_or(JsonFrameError::TooLarge {
            len: body.len() as u64,
            limit,
        })?;
    if len == 0 {
        return Err(JsonFrameError::Empty);
    }
    let mut out = Vec::with_capacity(LEN_BYTES + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
    Ok(out)
}

/// An incremental reader of one message after another.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    limit: u32,
    len_bytes: [u8; LEN_BYTES],
    len_got: usize,
    /// The body's length, once its 4 bytes are in.
    len: Option<u32>,
    body: Vec<u8>,
    failed: Option<JsonFrameError>,
}

impl FrameDecoder {
    /// A decoder that refuses messages over `limit` bytes.
    pub fn new(limit: u32) -> FrameDecoder {
        FrameDecoder {
            limit,
            len_bytes: [0; LEN_BYTES],
            len_got: 0,
            len: None,
            body: Vec::new(),
            failed: None,
        }
    }

    /// Feed bytes as they arrive. Returns how many it took and, when they completed a message,
    /// its body. It takes no byte past a message's end, so what follows (a state byte: the
    /// server's results are followed by DISPLAY_RESULTS) stays with the caller: feed the rest
    /// again, or read it otherwise.
    ///
    /// After an error the stream is out of step: the decoder returns the same error from then
    /// on, and the connection is to be closed.
    pub fn push(&mut self, input: &[u8]) -> Result<(usize, Option<Vec<u8>>), JsonFrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut used = 0;
        let len = match self.len {
            Some(len) => len,
            None => {
                let take = (LEN_BYTES - self.len_got).min(input.len());
                self.len_bytes[self.len_got..self.len_got + take].copy_from_slice(&input[..take]);
                self.len_got += take;
                used += take;
                if self.len_got < LEN_BYTES {
                    return Ok((used, None));
                }
                let len = u32::from_be_bytes(self.len_bytes);
                if len == 0 {
                    return Err(self.fail(JsonFrameError::Empty));
                }
                if len > self.limit {
                    let limit = self.limit;
                    return Err(self.fail(JsonFrameError::TooLarge {
                        len: u64::from(len),
                        limit,
                    }));
                }
                self.len = Some(len);
                // Grow with the data, not with the claimed length.
                self.body = Vec::with_capacity((len as usize).min(64 * 1024));
                len
            }
        };
        let want = len as usize - self.body.len();
        let take = want.min(input.len() - used);
        self.body.extend_from_slice(&input[used..used + take]);
        used += take;
        if self.body.len() < len as usize {
            return Ok((used, None));
        }
        self.len = None;
        self.len_got = 0;
        Ok((used, Some(std::mem::take(&mut self.body))))
    }

    /// The peer closed the connection: an error when it closed inside a message.
    pub fn finish(&self) -> Result<(), JsonFrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.len {
            Some(len) => Err(JsonFrameError::Truncated {
                got: self.body.len(),
                len,
            }),
            None if self.len_got > 0 => Err(JsonFrameError::LengthTruncated { got: self.len_got }),
            None => Ok(()),
        }
    }

    /// Whether it is between messages (nothing of one read yet).
    pub fn is_idle(&self) -> bool {
        self.failed.is_none() && self.len.is_none() && self.len_got == 0
    }

    /// How many more bytes the current message needs at least: a blocking reader can read
    /// exactly this many and never take a byte past the message.
    pub fn wanted(&self) -> usize {
        match self.len {
            Some(len) => len as usize - self.body.len(),
            None => LEN_BYTES - self.len_got,
        }
    }

    fn fail(&mut self, e: JsonFrameError) -> JsonFrameError {
        self.body = Vec::new();
        self.failed = Some(e.clone());
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(
        dec: &mut FrameDecoder,
        mut input: &[u8],
    ) -> Result<Vec<Vec<u8>>, JsonFrameError> {
        let mut out = Vec::new();
        while !input.is_empty() {
            let (used, body) = dec.push(input)?;
            input = &input[used..];
            out.extend(body);
        }
        Ok(out)
    }

    #[test]
    fn one_buffer_length_then_body() {
        let f = encode_frame(br#"{"tcp":true}"#, PARAMS_MAX).unwrap();
        assert_eq!(&f[..4], &[0, 0, 0, 12]);
        assert_eq!(&f[4..], br#"{"tcp":true}"#);
        assert_eq!(encode_frame(b"", PARAMS_MAX), Err(JsonFrameError::Empty));
        assert_eq!(
            encode_frame(&[b' '; 9000], PARAMS_MAX),
            Err(JsonFrameError::TooLarge {
                len: 9000,
                limit: PARAMS_MAX
            })
        );
    }

    #[test]
    fn any_split_decodes_the_same() {
        let mut stream = encode_frame(b"{\"a\":1}", 100).unwrap();
        stream.extend(encode_frame(b"[2]", 100).unwrap());
        stream.push(0x0e); // DISPLAY_RESULTS after the server's results
        for chunk in 1..=stream.len() {
            let mut dec = FrameDecoder::new(100);
            let mut bodies = Vec::new();
            let mut pos = 0;
            while pos < stream.len() - 1 {
                let end = (pos + chunk).min(stream.len());
                let (used, body) = dec.push(&stream[pos..end]).unwrap();
                assert!(used > 0 || end == pos);
                pos += used;
                bodies.extend(body);
                if bodies.len() == 2 {
                    break;
                }
            }
            assert_eq!(
                bodies,
                vec![b"{\"a\":1}".to_vec(), b"[2]".to_vec()],
                "chunk {chunk}"
            );
            assert_eq!(&stream[pos..], &[0x0e], "the state byte is left over");
            assert!(dec.is_idle());
            assert_eq!(dec.finish(), Ok(()));
        }
    }

    #[test]
    fn oversized_is_refused_before_the_body() {
        let mut dec = FrameDecoder::new(PARAMS_MAX);
        // 8 KiB + 1: one over iperf3's own cap.
        let err = dec.push(&(PARAMS_MAX + 1).to_be_bytes()).unwrap_err();
        assert_eq!(
            err,
            JsonFrameError::TooLarge {
                len: 8193,
                limit: 8192
            }
        );
        // Sticky.
        assert_eq!(dec.push(b"{}").unwrap_err(), err);
        assert_eq!(dec.finish().unwrap_err(), err);
        // Exactly the cap is fine.
        let mut dec = FrameDecoder::new(PARAMS_MAX);
        let body = vec![b' '; PARAMS_MAX as usize];
        let f = encode_frame(&body, PARAMS_MAX).unwrap();
        assert_eq!(decode_all(&mut dec, &f).unwrap(), vec![body]);
        // The largest length there is.
        let mut dec = FrameDecoder::new(RESULTS_MAX);
        assert!(matches!(
            dec.push(&[0xff; 4]),
            Err(JsonFrameError::TooLarge {
                len: 4_294_967_295,
                ..
            })
        ));
    }

    #[test]
    fn empty_and_truncated() {
        let mut dec = FrameDecoder::new(100);
        assert_eq!(dec.push(&[0, 0, 0, 0]).unwrap_err(), JsonFrameError::Empty);

        let mut dec = FrameDecoder::new(100);
        assert_eq!(dec.push(&[0, 0]).unwrap(), (2, None));
        assert_eq!(dec.wanted(), 2);
        assert_eq!(
            dec.finish(),
            Err(JsonFrameError::LengthTruncated { got: 2 })
        );

        let mut dec = FrameDecoder::new(100);
        assert_eq!(dec.push(&[0, 0, 0, 10, b'{']).unwrap(), (5, None));
        assert_eq!(dec.wanted(), 9);
        assert!(!dec.is_idle());
        assert_eq!(
            dec.finish(),
            Err(JsonFrameError::Truncated { got: 1, len: 10 })
        );

        let dec = FrameDecoder::new(100);
        assert_eq!(dec.finish(), Ok(()), "closed between messages");
        assert_eq!(dec.wanted(), 4);
    }
}
