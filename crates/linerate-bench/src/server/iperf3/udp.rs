//! iperf3's UDP streams on serve's port number: their connects, matched to the test that waits
//! for them, and a connected socket per stream.
//!
//! An iperf3 client opens each UDP stream by sending a 4-byte connect (`"9876"`, or 123456789
//! before 3.12) from a socket of its own to the server's port, and waits for the reply from that
//! port. iperf3's server takes whatever datagram comes first as the stream, which is safe only
//! because it runs one test at a time. Here several tests run at once, so a connect is taken
//! only (far-end.md A11.6):
//!
//! - when it is exactly one of the four connects clients send ([`reply_to_connect`]): any other
//!   datagram on the port is not a stream;
//! - from the IP address of a test's control connection, while that test waits for its UDP
//!   streams (after CREATE_STREAMS): a stranger's connect is dropped and logged (at most once a
//!   second);
//! - by one test per client address at a time: a second test of the same address waits until
//!   the first has its streams (bounded by its handshake deadline), so neither can take the
//!   other's. Two programs on one host that set up their UDP streams in the same moment are
//!   still told apart: one waits.
//!
//! Each stream then gets a socket of its own, bound to the port with `SO_REUSEADDR` (as iperf3's
//! are) and connected to the client's socket, from which the reply goes: the kernel delivers
//! that client's datagrams to the connected socket rather than to the port's, so a repeated
//! connect lands on the stream (where it is too short to count) and cannot become a second
//! stream.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use linerate_iperf3::udp::reply_to_connect;

use crate::server::Shared;
use crate::serverlog::ServerLog;

/// A connect from a client's UDP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Connect {
    pub from: SocketAddr,
    pub datagram: [u8; 4],
}

/// The UDP socket on one listener's port number.
pub(crate) struct UdpPort {
    sock: UdpSocket,
    addr: SocketAddr,
    /// Tests waiting for their streams' connects, by the client's address.
    waiting: Mutex<HashMap<IpAddr, SyncSender<Connect>>>,
}

/// How long the reader waits for a datagram before it looks whether the server is ending.
const READ_TICK: Duration = Duration::from_millis(200);

/// At most one log line a second about connects no test waits for.
const STRANGER_LOG_EVERY: Duration = Duration::from_secs(1);

/// The address a client is matched by: an IPv4 client on a dual-stack socket comes as
/// `::ffff:a.b.c.d`, on its control connection too or not.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

impl UdpPort {
    /// A UDP socket on the address of a TCP listener (`SO_REUSEADDR`, so the streams' sockets
    /// can bind the same port).
    pub fn bind(addr: SocketAddr) -> Result<UdpPort, String> {
        let open = || -> std::io::Result<UdpSocket> {
            let s = socket2::Socket::new(
                socket2::Domain::for_address(addr),
                socket2::Type::DGRAM,
                Some(socket2::Protocol::UDP),
            )?;
            s.set_reuse_address(true)?;
            if addr.is_ipv6() {
                // As the TCP listener: `::` takes IPv4 clients too.
                let _ = s.set_only_v6(false);
            }
            s.bind(&addr.into())?;
            let u: UdpSocket = s.into();
            u.set_read_timeout(Some(READ_TICK))?;
            Ok(u)
        };
        let sock = open().map_err(|e| format!("binding UDP {addr}: {e}"))?;
        Ok(UdpPort {
            sock,
            addr,
            waiting: Mutex::new(HashMap::new()),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<IpAddr, SyncSender<Connect>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read the port until the server ends: hand each connect to the test waiting for its
    /// sender's address; drop everything else.
    pub fn read(&self, sh: &Shared) {
        let mut buf = [0u8; 16];
        let mut last_log: Option<Instant> = None;
        let mut unlogged = 0u64;
        while !sh.is_closing() {
            let (n, from) = match self.sock.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                // ICMP errors of earlier replies, and the like: nothing to do with this port.
                Err(_) => {
                    thread::sleep(READ_TICK / 10);
                    continue;
                }
            };
            // A longer datagram fills the buffer: exactly four bytes is a connect's length.
            let Some(datagram) = buf
                .get(..n)
                .filter(|d| reply_to_connect(d).is_some())
                .and_then(|d| <[u8; 4]>::try_from(d).ok())
            else {
                continue;
            };
            let tx = self.waiting().get(&canonical(from.ip())).cloned();
            match tx {
                Some(tx) => {
                    let _ = tx.try_send(Connect { from, datagram });
                }
                None => {
                    unlogged += 1;
                    if last_log.is_none_or(|t| t.elapsed() >= STRANGER_LOG_EVERY) {
                        sh.log(&ServerLog::Dropped {
                            client: from.to_string(),
                            reason: format!(
                                "an iperf3 UDP connect ({}) on {} from an address with no iperf3 \
                                 test setting up its streams: not taken as a stream ({unlogged} \
                                 such datagram{} since the last line)",
                                datagram.escape_ascii(),
                                self.addr,
                                if unlogged == 1 { "" } else { "s" }
                            ),
                        });
                        last_log = Some(Instant::now());
                        unlogged = 0;
                    }
                }
            }
        }
    }

    /// Wait, until `until`, to be the test of `client` that takes its UDP connects; then its
    /// `n` connects come on [`UdpWait::rx`] until the wait is dropped. `None`: another test of
    /// the same address still sets up its streams.
    pub fn expect(self: &Arc<Self>, client: IpAddr, n: usize, until: Instant) -> Option<UdpWait> {
        let client = canonical(client);
        loop {
            if let Entry::Vacant(e) = self.waiting().entry(client) {
                // Room for every stream's connect and a few repeats.
                let (tx, rx) = mpsc::sync_channel(n + 4);
                e.insert(tx);
                return Some(UdpWait {
                    port: Arc::clone(self),
                    client,
                    rx,
                });
            }
            if Instant::now() >= until {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A test's place as the taker of its client's UDP connects.
pub(crate) struct UdpWait {
    port: Arc<UdpPort>,
    client: IpAddr,
    pub rx: Receiver<Connect>,
}

impl Drop for UdpWait {
    fn drop(&mut self) {
        self.port.waiting().remove(&self.client);
    }
}

impl UdpWait {
    /// The stream of connect `c`: a socket bound to the port on `local` (the address the client
    /// reached this server at), connected to the client's socket, with `buffer` bytes of socket
    /// buffers; the reply in the client's dialect goes out of it.
    pub fn open_stream(
        &self,
        local: IpAddr,
        c: &Connect,
        buffer: usize,
    ) -> std::io::Result<UdpSocket> {
        let bind = SocketAddr::new(local, self.port.addr.port());
        let s = socket2::Socket::new(
            socket2::Domain::for_address(bind),
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )?;
        s.set_reuse_address(true)?;
        if bind.is_ipv6() {
            let _ = s.set_only_v6(false);
        }
        s.bind(&bind.into())?;
        s.connect(&c.from.into())?;
        let _ = s.set_recv_buffer_size(buffer);
        let _ = s.set_send_buffer_size(buffer);
        let u: UdpSocket = s.into();
        if let Some(reply) = reply_to_connect(&c.datagram) {
            u.send(&reply)?;
        }
        Ok(u)
    }
}
