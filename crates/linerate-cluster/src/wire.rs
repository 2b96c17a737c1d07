//! The rank protocol: what ranks and the coordinator say to each other, as linerate-proto's
//! frames (a 4-byte big-endian length, then one JSON message), bounded like the control
//! protocol's.
//!
//! A rank opens one connection to the coordinator and keeps it for the whole run:
//!
//! ```text
//! rank → hello {magic, nonce}
//! coordinator → challenge {nonce, auth, proof}   (proof: the coordinator knows the key)
//! rank → join {rank, size, facts, proof}          (proof: the rank knows the key)
//! coordinator → welcome | refused {reason}
//! coordinator → table {data addresses, unreachable ranks}
//! per round: coordinator → round {flows}; rank → measured {…} per flow it sent, then done
//! both ways, every HEARTBEAT: heartbeat (the rank's with its host's load since its last one)
//! coordinator → end
//! ```
//!
//! The coordinator sends each round's flows when the previous round is over (the barrier),
//! not the whole schedule at once: a 1000-rank pairwise schedule is a million flows, a round
//! of it 500.

use std::io::{Read, Write};
use std::time::Duration;

use linerate_mesh::{Flow, HostLoad, LinkMeasurement, NodeFacts, Phase, RankId, Transport};
use linerate_proto::{read_frame, FrameError};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The first bytes of every rank's hello, so a stray client (or a `linerate serve` client
/// pointed at the wrong port) is told what it reached.
pub const MESH_MAGIC: &str = "linerate-mesh";
/// Bumped when a message changes incompatibly.
pub const MESH_PROTOCOL: u32 = 1;

/// Largest frame the coordinator reads from a rank: a join with its node facts and probe
/// findings, or one measurement. 64 KiB, as the control protocol's.
pub const MAX_RANK_FRAME: u32 = linerate_proto::MAX_CONTROL_FRAME;
/// Largest frame a rank reads from the coordinator: the address table (about 60 bytes a
/// rank: 4 MiB holds 50,000 ranks).
pub const MAX_COORDINATOR_FRAME: u32 = 4 * 1024 * 1024;
/// Most ranks one run may have (`--size`); the coordinator holds a connection, two threads'
/// worth of state and a few KiB of facts per rank.
pub const MAX_RANKS: u32 = 4096;
/// How often each side says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a side may stay silent before the other declares it gone: five heartbeats.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a new connection has to say hello and join.
pub const HANDSHAKE_TIMEOUT: Duration = linerate_proto::defaults::HANDSHAKE_TIMEOUT;
/// How long a write to a peer may block before the peer counts as gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections in their handshake at once; more are closed at once.
pub const MAX_PENDING: usize = 64;

/// Rank → coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RankMsg {
    Hello {
        magic: String,
        protocol: u32,
        nonce: String,
    },
    Join {
        rank: RankId,
        size: u32,
        /// This rank's node: host name, data address, what probe found.
        facts: Box<NodeFacts>,
        /// `Psk::client_proof(coordinator nonce, rank nonce)` when the run has a key.
        proof: Option<String>,
    },
    Measured {
        m: LinkMeasurement,
    },
    /// Every flow of round `index` this rank sent is measured (or failed).
    Done {
        index: u32,
    },
    /// Alive, and how busy this rank's host was since its previous heartbeat (`None` when it
    /// could not tell; a rank before this field sends none).
    Heartbeat {
        #[serde(default)]
        load: Option<HostLoad>,
    },
}

/// Coordinator → rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CoordMsg {
    Challenge {
        nonce: String,
        auth: bool,
        /// `Psk::server_proof(rank nonce, coordinator nonce)` when `auth`.
        proof: Option<String>,
    },
    Welcome,
    Refused {
        reason: String,
    },
    /// Every rank's data address (`None`: the rank never joined).
    Table {
        addrs: Vec<Option<String>>,
    },
    /// Run these flows now; `index` counts every round of the run (retests included).
    Round {
        index: u32,
        phase: Phase,
        transport: Transport,
        duration_ms: u64,
        flows: Vec<Flow>,
    },
    Heartbeat,
    /// The run is over; `reason` when it ended early.
    End {
        reason: Option<String>,
    },
}

/// Encode one message as a frame and write it in one call.
pub fn send<T: Serialize>(w: &mut impl Write, m: &T) -> Result<(), FrameError> {
    let body = serde_json::to_vec(m).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|_| FrameError::TooLarge {
        len: u32::MAX,
        max: MAX_COORDINATOR_FRAME,
    })?;
    let mut buf = Vec::with_capacity(body.len() + 4);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(&body);
    w.write_all(&buf).map_err(io_err)?;
    w.flush().map_err(io_err)
}

/// Read and decode one message, refusing frames above `max` before reading them.
pub fn recv<T: DeserializeOwned>(r: &mut impl Read, max: u32) -> Result<T, FrameError> {
    let body = read_frame(r, max)?;
    serde_json::from_slice(&body).map_err(|e| FrameError::Malformed(e.to_string()))
}

fn io_err(e: std::io::Error) -> FrameError {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => FrameError::Timeout,
        std::io::ErrorKind::BrokenPipe
        | std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted => FrameError::Closed,
        _ => FrameError::Io(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_roundtrip_through_frames() {
        let msgs = vec![
            RankMsg::Hello {
                magic: MESH_MAGIC.into(),
                protocol: MESH_PROTOCOL,
                nonce: "ab".into(),
            },
            RankMsg::Join {
                rank: 3,
                size: 8,
                facts: Box::new(NodeFacts {
                    rank: 3,
                    host: "n3".into(),
                    ..NodeFacts::default()
                }),
                proof: None,
            },
            RankMsg::Done { index: 2 },
            RankMsg::Heartbeat { load: None },
            RankMsg::Heartbeat {
                load: Some(HostLoad {
                    cores: 2,
                    other_cores: 1.5,
                    steal_cores: 0.0,
                    idle_cores: 0.1,
                    rank_cores: None,
                    waited_cores: None,
                    seconds: 1.0,
                }),
            },
        ];
        let mut buf = Vec::new();
        for m in &msgs {
            send(&mut buf, m).unwrap();
        }
        let mut r = buf.as_slice();
        for m in &msgs {
            assert_eq!(&recv::<RankMsg>(&mut r, MAX_RANK_FRAME).unwrap(), m);
        }
    }

    /// A heartbeat without a load (a rank before the field) is read, and one with a load is
    /// read by a coordinator that knows none (unknown fields are ignored).
    #[test]
    fn heartbeats_with_and_without_a_load_interoperate() {
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Before {
            Heartbeat,
        }
        let old: RankMsg = serde_json::from_str(r#"{"type":"heartbeat"}"#).unwrap();
        assert_eq!(old, RankMsg::Heartbeat { load: None });
        let new = serde_json::to_string(&RankMsg::Heartbeat {
            load: Some(HostLoad {
                cores: 2,
                other_cores: 0.0,
                steal_cores: 0.0,
                idle_cores: 2.0,
                rank_cores: None,
                waited_cores: None,
                seconds: 1.0,
            }),
        })
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Before>(&new).unwrap(),
            Before::Heartbeat
        );
    }

    #[test]
    fn garbage_and_oversized_frames_are_errors() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&5u32.to_be_bytes());
        buf.extend_from_slice(b"hello");
        assert!(matches!(
            recv::<RankMsg>(&mut buf.as_slice(), MAX_RANK_FRAME),
            Err(FrameError::Malformed(_))
        ));
        let big = (MAX_RANK_FRAME + 1).to_be_bytes();
        assert!(matches!(
            recv::<RankMsg>(&mut &big[..], MAX_RANK_FRAME),
            Err(FrameError::TooLarge { .. })
        ));
    }
}
