//! The properties the fuzz targets check. One copy serves both the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and the stable regression test
//! `crates/linerate-proto/tests/fuzz_seeds.rs`, which includes this file with `#[path]`, so a seed
//! or a minimised crash is checked the same way under libFuzzer and under `cargo test`.
//!
//! Keep this file to `linerate_proto`, `serde_json` and `std`: the regression test has no other
//! dependency.

use std::mem::discriminant;

use linerate_proto::{
    read_frame, read_msg, write_msg, FrameError, Limits, Msg, TestParams, MAX_CONTROL_FRAME,
    MAX_RESULTS_FRAME,
};

/// `data` as the bytes a server reads from a control connection: a sequence of frames, each read
/// with the server's limit, [`MAX_CONTROL_FRAME`]. Returns the messages that decoded.
///
/// Checked, frame after frame until the first frame error:
/// - reading and decoding never panic;
/// - the frame layer takes exactly its 4-byte length and that many body bytes, never more than the
///   limit, and its errors say what happened (closed only at a frame boundary, truncated only
///   short of the length, too large only above the limit);
/// - `read_msg` agrees with `read_frame`: the same error, or the same frame, then either a message
///   or `Malformed`;
/// - every decoded message re-encodes with `write_msg`, decodes back equal, and re-encodes to the
///   same bytes (see [`check_roundtrip`]).
pub fn check_decode_frame(data: &[u8]) -> Vec<Msg> {
    let mut decoded = Vec::new();
    let mut at = data;
    loop {
        let mut frame_rest = at;
        let frame = read_frame(&mut frame_rest, MAX_CONTROL_FRAME);
        let mut msg_rest = at;
        let msg = read_msg(&mut msg_rest, MAX_CONTROL_FRAME);
        match frame {
            Ok(body) => {
                let len = u32::from_be_bytes(at[..4].try_into().expect("4 bytes were read"));
                assert!(
                    len <= MAX_CONTROL_FRAME,
                    "frame of {len} bytes was accepted"
                );
                let len = usize::try_from(len).expect("u32 fits usize");
                assert_eq!(body.as_slice(), &at[4..4 + len], "frame body");
                assert_eq!(frame_rest.len(), at.len() - 4 - len, "bytes consumed");
                assert_eq!(msg_rest.len(), frame_rest.len(), "read_msg consumed");
                match msg {
                    Ok(m) => {
                        check_roundtrip(&m);
                        decoded.push(m);
                    }
                    Err(FrameError::Malformed(_)) => {}
                    Err(e) => panic!("read_frame read a frame but read_msg failed with {e:?}"),
                }
                at = frame_rest;
            }
            Err(e) => {
                match &e {
                    FrameError::Closed => assert!(at.is_empty(), "closed with {} bytes", at.len()),
                    FrameError::Truncated { got, len: 4 } if at.len() < 4 => {
                        assert_eq!(*got, at.len(), "length prefix bytes got");
                    }
                    FrameError::Truncated { got, len } => {
                        assert!(at.len() >= 4, "{e:?} with {} bytes", at.len());
                        assert_eq!(*got, at.len() - 4, "body bytes got");
                        assert!(
                            *got < usize::try_from(*len).expect("u32 fits usize"),
                            "{e:?}"
                        );
                    }
                    FrameError::TooLarge { len, max } => {
                        assert_eq!(*max, MAX_CONTROL_FRAME);
                        assert!(len > max, "{e:?}");
                    }
                    FrameError::Malformed(_) | FrameError::Timeout | FrameError::Io(_) => {
                        panic!("read_frame on a byte slice failed with {e:?}");
                    }
                }
                let Err(m) = msg else {
                    panic!("read_frame failed with {e:?} but read_msg decoded a message");
                };
                assert_eq!(discriminant(&e), discriminant(&m), "{e:?} vs {m:?}");
                return decoded;
            }
        }
    }
}

/// A decoded message survives the wire: `write_msg` encodes it, `read_msg` decodes that back to an
/// equal message, and encoding the result gives the same bytes again.
///
/// The re-encoded frame is read with [`MAX_RESULTS_FRAME`], the largest limit any reader uses:
/// the encoder does not promise to reproduce the sender's (possibly shorter) spelling, only the
/// message.
pub fn check_roundtrip(m: &Msg) {
    let mut wire = Vec::new();
    write_msg(&mut wire, m).unwrap_or_else(|e| panic!("{m:?} does not encode: {e}"));
    let len = u32::from_be_bytes(wire[..4].try_into().expect("a 4-byte length prefix"));
    assert_eq!(
        usize::try_from(len).expect("u32 fits usize"),
        wire.len() - 4,
        "length prefix"
    );
    let mut r = wire.as_slice();
    let back = read_msg(&mut r, MAX_RESULTS_FRAME).unwrap_or_else(|e| {
        panic!(
            "{m:?} encodes as {} which does not decode: {e}",
            String::from_utf8_lossy(&wire[4..])
        )
    });
    assert!(r.is_empty(), "bytes left after the re-encoded frame");
    assert_eq!(
        &back,
        m,
        "the message changed on a round trip through {}",
        String::from_utf8_lossy(&wire[4..])
    );
    let mut again = Vec::new();
    write_msg(&mut again, &back).expect("it encoded once");
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(&wire),
        "encoding is not stable"
    );
}

/// The worst-case server memory of a test the limits `l` accept: every stream at the longest
/// length, both directions (`server_memory_bytes` charges at least 64 KiB a connection).
pub fn memory_bound(l: &Limits) -> u64 {
    u64::from(l.max_streams) * 2 * u64::from(l.max_length.max(64 * 1024))
}

/// `data` as the `params` of a client's Request, checked against the default limits. Returns
/// `None` when it is not a `TestParams` document, else whether the limits accept it.
///
/// Checked: `validate` never panics; an accepted test has at least one connection and holds at most
/// [`memory_bound`] bytes (64 streams × 2 directions × 1 MiB with the defaults); a refusal says
/// why; the parameters survive a JSON round trip.
pub fn check_validate_params(data: &[u8]) -> Option<bool> {
    let p: TestParams = serde_json::from_slice(data).ok()?;
    let l = Limits::default();
    let verdict = p.validate(&l);
    match &verdict {
        Ok(()) => {
            let memory = p.server_memory_bytes();
            let bound = memory_bound(&l);
            assert!(
                memory <= bound,
                "{p:?} was accepted holding {memory} bytes, above the bound of {bound}"
            );
            assert!(
                p.connections() >= 1,
                "{p:?} was accepted with no connection"
            );
        }
        Err(refusal) => assert!(!refusal.reason.is_empty(), "{p:?} refused without a reason"),
    }
    let text = serde_json::to_vec(&p).unwrap_or_else(|e| panic!("{p:?} does not encode: {e}"));
    let back: TestParams = serde_json::from_slice(&text).unwrap_or_else(|e| {
        panic!(
            "{p:?} encodes as {} which does not decode: {e}",
            String::from_utf8_lossy(&text)
        )
    });
    assert_eq!(back, p, "parameters changed on a JSON round trip");
    Some(verdict.is_ok())
}
