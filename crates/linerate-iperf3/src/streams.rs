//! The test's streams: their ids, the order they are opened and accepted in, and which end
//! sends on each.
//!
//! **Ids** are 1, 3, 4, 5, …: `iperf_add_stream` numbers the first stream 1 and every later one
//! by its position plus one, so 2 is never used. The comment there calls it a mistake kept so
//! that old and new versions agree; both ends number in the same order, and the results are
//! matched by id.
//!
//! **Order.** The client opens its streams one after another, each connection (TCP) or
//! handshake (UDP) complete before the next: in a `--bidir` test its sending streams first, then
//! its receiving ones (`iperf_handle_message_client`, CREATE_STREAMS). The server takes them in
//! arrival order: first as many receiving streams as it has, then its sending ones
//! (`iperf_run_server`). The two orders agree, so stream `k` is the same connection at both
//! ends and has the same id.

use std::fmt;

/// A stream's id in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u32);

impl StreamId {
    /// The id of the stream opened `index`-th (from 0): 1, then `index + 2`.
    pub const fn nth(index: u32) -> StreamId {
        if index == 0 {
            StreamId(1)
        } else {
            StreamId(index.saturating_add(2))
        }
    }

    /// The position this id is given to, the inverse of [`StreamId::nth`]; `None` for 0 and 2,
    /// which iperf3 never gives.
    pub const fn index(self) -> Option<u32> {
        match self.0 {
            0 | 2 => None,
            1 => Some(0),
            n => Some(n - 2),
        }
    }

    /// The ids of `count` streams, in the order they are opened.
    pub fn first(count: u32) -> impl Iterator<Item = StreamId> {
        (0..count).map(StreamId::nth)
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Which way the data flows, as the client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DataFlow {
    /// The client sends (iperf3's default).
    #[default]
    Forward,
    /// `-R`: the server sends.
    Reverse,
    /// `--bidir` (3.7): each end sends on its own streams, `-P` of them each.
    Bidir,
}

/// What one end does on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Sender,
    Receiver,
}

impl Role {
    /// The other end's role on the same stream.
    #[must_use]
    pub const fn other(self) -> Role {
        match self {
            Role::Sender => Role::Receiver,
            Role::Receiver => Role::Sender,
        }
    }
}

/// One stream of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stream {
    pub id: StreamId,
    /// What the client does on it; the server does the other.
    pub client: Role,
}

impl Stream {
    /// What the server does on it.
    pub const fn server(self) -> Role {
        self.client.other()
    }
}

/// The streams of a test of `parallel` streams (`-P`) in `direction`, in the order the client
/// opens them and the server accepts them.
pub fn plan(direction: DataFlow, parallel: u32) -> Vec<Stream> {
    let roles: Vec<Role> = match direction {
        DataFlow::Forward => vec![Role::Sender; parallel as usize],
        DataFlow::Reverse => vec![Role::Receiver; parallel as usize],
        DataFlow::Bidir => {
            let mut r = vec![Role::Sender; parallel as usize];
            r.extend(vec![Role::Receiver; parallel as usize]);
            r
        }
    };
    (0..)
        .zip(roles)
        .map(|(i, client)| Stream {
            id: StreamId::nth(i),
            client,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_skip_two() {
        let ids: Vec<u32> = StreamId::first(5).map(|s| s.0).collect();
        assert_eq!(ids, [1, 3, 4, 5, 6]);
        for i in 0..300 {
            assert_eq!(StreamId::nth(i).index(), Some(i));
        }
        assert_eq!(StreamId(2).index(), None);
        assert_eq!(StreamId(0).index(), None);
        assert_eq!(StreamId::nth(u32::MAX), StreamId(u32::MAX));
    }

    #[test]
    fn roles_by_direction() {
        let p = plan(DataFlow::Forward, 2);
        assert_eq!(
            p,
            [
                Stream {
                    id: StreamId(1),
                    client: Role::Sender
                },
                Stream {
                    id: StreamId(3),
                    client: Role::Sender
                },
            ]
        );
        assert!(p.iter().all(|s| s.server() == Role::Receiver));
        let p = plan(DataFlow::Reverse, 1);
        assert_eq!(p[0].server(), Role::Sender);
        // --bidir -P 2: the client's senders first (1, 3), then its receivers (4, 5); the
        // server takes its receivers first, the same connections.
        let p = plan(DataFlow::Bidir, 2);
        let ids: Vec<(u32, Role)> = p.iter().map(|s| (s.id.0, s.server())).collect();
        assert_eq!(
            ids,
            [
                (1, Role::Receiver),
                (3, Role::Receiver),
                (4, Role::Sender),
                (5, Role::Sender)
            ]
        );
        assert!(plan(DataFlow::Forward, 0).is_empty());
    }
}
