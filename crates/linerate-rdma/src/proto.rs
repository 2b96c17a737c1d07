//! What the two sides tell each other: connection private data (the regions) and the control
//! messages sent as two-sided sends with remote CQ data [`CTRL_IMM`].
//!
//! All fields little endian, fixed offsets.

use std::time::Duration;

use crate::params::{Op, Params, CTRL_SIZE};
use crate::RdmaError;

const MAGIC: u32 = 0x4D44_524C; // "LRDM"
const VERSION: u16 = 1;

/// Remote CQ data marking a control message; data messages carry their sequence number (31 bits).
pub(crate) const CTRL_IMM: u64 = 0x8000_0000;
pub(crate) const SEQ_MASK: u64 = 0x7fff_ffff;

/// Where a side's region is, for the peer's RMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RegionDesc {
    pub base: u64,
    pub key: u64,
    pub len: u64,
}

fn put(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn get(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn header(b: &mut Vec<u8>) {
    b.extend_from_slice(&MAGIC.to_le_bytes());
    b.extend_from_slice(&VERSION.to_le_bytes());
}

fn check_header(b: &[u8], len: usize, what: &str) -> Result<(), RdmaError> {
    if b.len() < len {
        return Err(RdmaError::Protocol(format!(
            "{what}: {} bytes of connection data, expected {len}",
            b.len()
        )));
    }
    let magic = u32::from_le_bytes(b[0..4].try_into().expect("4"));
    let ver = u16::from_le_bytes(b[4..6].try_into().expect("2"));
    if magic != MAGIC || ver != VERSION {
        return Err(RdmaError::Protocol(format!(
            "{what}: not a linerate RDMA peer of protocol version {VERSION} (magic {magic:#x}, version {ver})"
        )));
    }
    Ok(())
}

/// The connection request's private data (46 bytes: fits rdma_cm's 56).
pub(crate) fn encode_connect(p: &Params, r: RegionDesc) -> Vec<u8> {
    let mut b = Vec::with_capacity(48);
    header(&mut b);
    b.push(p.op.code());
    b.push(u8::from(p.verify));
    b.extend_from_slice(&(p.window as u32).to_le_bytes());
    put(&mut b, p.max_size as u64);
    put(&mut b, r.base);
    put(&mut b, r.key);
    put(&mut b, r.len);
    b
}

/// Decodes a connection request: the initiator's op, window, verify, max_size and region.
pub(crate) fn decode_connect(
    b: &[u8],
    template: &Params,
) -> Result<(Params, RegionDesc), RdmaError> {
    check_header(b, 44, "connection request")?;
    let op = Op::from_code(b[6])
        .ok_or_else(|| RdmaError::Protocol(format!("unknown op code {}", b[6])))?;
    let window = u32::from_le_bytes(b[8..12].try_into().expect("4")) as usize;
    let p = Params {
        op,
        verify: b[7] != 0,
        window,
        max_size: get(b, 12) as usize,
        size: 1,
        ..template.clone()
    };
    Ok((
        p,
        RegionDesc {
            base: get(b, 20),
            key: get(b, 28),
            len: get(b, 36),
        },
    ))
}

/// The accept's private data: the target's region.
pub(crate) fn encode_accept(r: RegionDesc) -> Vec<u8> {
    let mut b = Vec::with_capacity(32);
    header(&mut b);
    b.extend_from_slice(&[0, 0]);
    put(&mut b, r.base);
    put(&mut b, r.key);
    put(&mut b, r.len);
    b
}

pub(crate) fn decode_accept(b: &[u8]) -> Result<RegionDesc, RdmaError> {
    check_header(b, 32, "connection accept")?;
    Ok(RegionDesc {
        base: get(b, 8),
        key: get(b, 16),
        len: get(b, 24),
    })
}

/// What a run measures (in [`Ctrl::Begin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Bandwidth,
    Latency,
}

/// Control messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ctrl {
    /// Initiator: a run starts (`count`: the run number for bandwidth, iterations for latency).
    Begin { mode: Mode, size: u64, count: u64 },
    /// Target: ready for the run (status 0) or refused (1: size beyond the region).
    Ready { status: u32 },
    /// Initiator: the run is over after `messages` operations.
    End { messages: u64 },
    /// Target: what it received and checked during the run.
    Stats {
        verify_errors: u64,
        messages: u64,
        bytes: u64,
    },
    /// Target: write `seq` was checked, its slot may be reused (write with verify).
    Ack { seq: u64 },
    /// Initiator: no more runs; the target returns from `serve`.
    Done,
}

impl Ctrl {
    pub(crate) fn encode(&self) -> [u8; CTRL_SIZE] {
        let (kind, status, a, b, c) = match *self {
            Ctrl::Begin { mode, size, count } => (1u32, 0u32, mode as u64, size, count),
            Ctrl::Ready { status } => (2, status, 0, 0, 0),
            Ctrl::End { messages } => (3, 0, messages, 0, 0),
            Ctrl::Stats {
                verify_errors,
                messages,
                bytes,
            } => (4, 0, verify_errors, messages, bytes),
            Ctrl::Ack { seq } => (5, 0, seq, 0, 0),
            Ctrl::Done => (6, 0, 0, 0, 0),
        };
        let mut out = [0u8; CTRL_SIZE];
        out[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&kind.to_le_bytes());
        out[8..12].copy_from_slice(&status.to_le_bytes());
        out[16..24].copy_from_slice(&a.to_le_bytes());
        out[24..32].copy_from_slice(&b.to_le_bytes());
        out[32..40].copy_from_slice(&c.to_le_bytes());
        out
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Ctrl, RdmaError> {
        if b.len() < 40 || u32::from_le_bytes(b[0..4].try_into().expect("4")) != MAGIC {
            return Err(RdmaError::Protocol(format!(
                "malformed control message ({} bytes)",
                b.len()
            )));
        }
        let kind = u32::from_le_bytes(b[4..8].try_into().expect("4"));
        let status = u32::from_le_bytes(b[8..12].try_into().expect("4"));
        let (a, bb, c) = (get(b, 16), get(b, 24), get(b, 32));
        Ok(match kind {
            1 => Ctrl::Begin {
                mode: if a == Mode::Latency as u64 {
                    Mode::Latency
                } else {
                    Mode::Bandwidth
                },
                size: bb,
                count: c,
            },
            2 => Ctrl::Ready { status },
            3 => Ctrl::End { messages: a },
            4 => Ctrl::Stats {
                verify_errors: a,
                messages: bb,
                bytes: c,
            },
            5 => Ctrl::Ack { seq: a },
            6 => Ctrl::Done,
            k => {
                return Err(RdmaError::Protocol(format!(
                    "unknown control message kind {k}"
                )))
            }
        })
    }
}

/// Sequence number of the pattern a read target puts in `slot` for run `run`.
pub(crate) fn read_seq(run: u64, slot: usize) -> u32 {
    (((run & 0x7fff) << 16 | slot as u64) & SEQ_MASK) as u32
}

/// Default wait for a control reply.
pub(crate) const CTRL_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_round_trip() {
        let all = [
            Ctrl::Begin {
                mode: Mode::Latency,
                size: 8,
                count: 1000,
            },
            Ctrl::Begin {
                mode: Mode::Bandwidth,
                size: 1 << 20,
                count: 3,
            },
            Ctrl::Ready { status: 1 },
            Ctrl::End { messages: 123_456 },
            Ctrl::Stats {
                verify_errors: 2,
                messages: 10,
                bytes: 40960,
            },
            Ctrl::Ack { seq: 77 },
            Ctrl::Done,
        ];
        for m in all {
            assert_eq!(Ctrl::decode(&m.encode()).unwrap(), m);
        }
        assert!(Ctrl::decode(&[0u8; 64]).is_err());
        assert!(Ctrl::decode(&[0u8; 3]).is_err());
    }

    #[test]
    fn connection_data_round_trips_and_fits_rdma_cm() {
        let p = Params {
            verify: true,
            window: 32,
            max_size: 8 << 20,
            ..Params::new(Op::Send, 64)
        };
        let r = RegionDesc {
            base: 0x7f00_0000_1000,
            key: 0xdead_beef,
            len: 1 << 28,
        };
        let b = encode_connect(&p, r);
        assert!(b.len() <= 56, "{} bytes", b.len());
        let (q, r2) = decode_connect(&b, &Params::new(Op::Write, 1)).unwrap();
        assert_eq!(
            (q.op, q.verify, q.window, q.max_size),
            (Op::Send, true, 32, 8 << 20)
        );
        assert_eq!(r2, r);
        assert_eq!(decode_accept(&encode_accept(r)).unwrap(), r);
        assert!(decode_accept(&[1, 2, 3]).is_err());
        let mut bad = encode_accept(r);
        bad[0] ^= 1;
        assert!(decode_accept(&bad)
            .unwrap_err()
            .to_string()
            .contains("not a linerate RDMA peer"));
    }

    #[test]
    fn read_sequences_differ_per_slot_and_run() {
        assert_ne!(read_seq(1, 0), read_seq(1, 1));
        assert_ne!(read_seq(1, 0), read_seq(2, 0));
        assert!(u64::from(read_seq(u64::MAX, 4095)) <= SEQ_MASK);
    }
}
