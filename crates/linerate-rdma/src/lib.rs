//! linerate's RDMA engine: send, write and read bandwidth and latency through libfabric.
//!
//! libfabric is loaded at run time ([`Fabric::load`]): programs using this crate build and run
//! on machines without it, and get [`RdmaError::Unavailable`] there. Endpoints are `FI_EP_MSG`
//! with `FI_MSG | FI_RMA`: on InfiniBand/RoCE the `verbs` provider maps them to RC queue pairs;
//! the `tcp` provider moves real data through the same code on any IP address (CI uses it on
//! 127.0.0.1). Memory registration asks for the modes verbs needs (`FI_MR_LOCAL`,
//! `FI_MR_VIRT_ADDR`, `FI_MR_ALLOCATED`, `FI_MR_PROV_KEY`) and follows what the provider
//! returns, so one code path serves both.
//!
//! # Shape of a measurement
//! ```no_run
//! # use std::{net::*, sync::atomic::AtomicBool, time::*};
//! # use linerate_rdma::*;
//! let fabric = Fabric::load()?;
//! let ip: IpAddr = "127.0.0.1".parse().unwrap();
//! let listener = fabric.listen(Some("tcp"), ip)?;          // server
//! let port = listener.port();
//! let params = Params { max_size: 1 << 20, ..Params::new(Op::Write, 1 << 20) };
//! let p2 = params.clone();
//! let server = std::thread::spawn(move || {
//!     let mut target = listener.accept(&p2, Duration::from_secs(5)).unwrap();
//!     target.serve(&AtomicBool::new(false), Instant::now() + Duration::from_secs(60))
//! });
//! let mut ini = fabric.connect(Some("tcp"), ip, SocketAddr::new(ip, port), &params, Duration::from_secs(5))?;
//! let bw = ini.bandwidth(1 << 20, Duration::from_secs(2), &AtomicBool::new(false), &mut |_| {}).map_err(|(_, e)| e)?;
//! let lat = ini.latency(8, 1000, Duration::from_secs(5)).map_err(|(_, e)| e)?;
//! ini.finish(Duration::from_secs(2))?;
//! # Ok::<(), RdmaError>(())
//! ```
//!
//! # What travels between the sides
//! - **Connection private data** (`fi_connect`/`fi_accept` CM data, ≤ 56 bytes as rdma_cm allows):
//!   the initiator sends its op, window, verify flag, largest message and its region (address,
//!   key, length); the target answers with its region. The target lays its region out from the
//!   initiator's parameters; its own [`Params`] are ceilings (`max_size`, `window`).
//! - **Control messages**: 64-byte sends carrying remote CQ data `0x8000_0000` (begin a run,
//!   ready, end, statistics, write acknowledgement, done); data sends carry their 31-bit
//!   sequence number as CQ data.
//! - **Region** of each side: `[latency source][data slots][receive buffers][control buffers]`;
//!   one slot when not verifying, `window` slots when verifying so every in-flight payload has
//!   its own place and can be checked.
//!
//! # Verification (`Params::verify`)
//! Payloads carry [`pattern`]: each byte depends on the message's sequence number and offset.
//! Send: the target checks every received message. Write: the initiator uses `fi_writedata`;
//! the target checks the slot when the remote completion arrives and acknowledges it before the
//! initiator reuses the slot. Read: the target fills its slots at the start of each run and the
//! initiator checks every read. Mismatched bytes are counted in `verify_errors`.
//!
//! # Ports and addresses
//! tcp provider: one TCP port per [`Listener`] (ephemeral by default, or [`Fabric::listen_on`]),
//! plus one TCP connection per initiator. verbs: the listener binds an rdma_cm port on the
//! IPoIB/RoCE interface's IP address, which must be configured; the initiator always binds its
//! source address explicitly (`local`) — without it the tcp provider may pick another interface.
//!
//! # Progress and bounds
//! The tcp provider uses manual progress: the target must keep polling its completion queue for
//! an RMA to complete, which [`Target::serve`] does. Every wait is bounded: event queues are read
//! with `fi_eq_sread` timeouts, completion queues are polled against deadlines, and an operation
//! that does not complete within `Params::op_timeout` fails the run (partial results are kept).
//!
//! # Devices
//! [`verbs::query`] loads libibverbs the same way (at run time) and lists every RDMA device and
//! port with what `ibv_query_device` and `ibv_query_port` say, as `ibv_devinfo -v` does.

mod error;
mod ffi;
mod initiator;
mod link;
mod params;
pub mod pattern;
mod proto;
mod results;
mod target;
pub mod verbs;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use error::RdmaError;
pub use initiator::Initiator;
pub use params::{Op, Params, MAX_MESSAGE, MAX_REGION, MAX_WINDOW};
pub use results::{
    BwResult, LatResult, LatencyConvention, ProviderInfo, RdmaInterval, TargetStats,
};
pub use target::Target;

use ffi::conn::{Conn, FiError, Passive};
use ffi::{InfoQuery, Lib, LoadError};
use link::Link;
use params::Layout;

/// The loaded libfabric. Cheap to clone; Send + Sync.
#[derive(Debug, Clone)]
pub struct Fabric {
    lib: Arc<Lib>,
}

impl Fabric {
    /// Loads `libfabric.so.1` (or the library the environment variable `LINERATE_LIBFABRIC` names).
    pub fn load() -> Result<Fabric, RdmaError> {
        match Lib::load() {
            Ok(lib) => Ok(Fabric { lib }),
            Err(LoadError::NotFound(detail)) => Err(RdmaError::Unavailable(format!(
                "libfabric not found (libfabric.so.1); install libfabric1 ({detail})"
            ))),
            Err(LoadError::Symbol(sym, ver)) => Err(RdmaError::Unavailable(format!(
                "libfabric.so.1 has no {sym}@{ver}: an incompatible libfabric (1.17 ABI expected)"
            ))),
        }
    }

    /// The library's version, e.g. "1.17.0".
    pub fn version(&self) -> String {
        results::version_string(self.lib.version())
    }

    /// Every (provider, domain) offering message endpoints with RMA or MSG, for `probe`.
    pub fn providers(&self) -> Result<Vec<ProviderInfo>, RdmaError> {
        let list = match self.lib.getinfo(&InfoQuery::default()) {
            Ok(l) => l,
            Err(e) if e == ffi::bindings::FI_ENODATA => return Ok(Vec::new()),
            Err(e) => {
                return Err(RdmaError::Call {
                    call: "fi_getinfo".into(),
                    target: "(all providers)".into(),
                    provider: "any".into(),
                    text: self.lib.strerror(e),
                    code: e,
                })
            }
        };
        let mut rows: Vec<ProviderInfo> = list
            .iter()
            .filter(|i| i.is_msg_rma())
            .map(|i| ProviderInfo {
                provider: i.provider(),
                fabric: i.fabric(),
                domain: i.domain(),
                src_addr: i.src_addr().map(|a| a.to_string()),
            })
            .collect();
        rows.dedup();
        Ok(rows)
    }

    fn no_provider(&self, provider: Option<&str>, what: &str, e: &FiError) -> RdmaError {
        let all = self.lib.all_providers();
        let here = if all.is_empty() {
            "none".to_string()
        } else {
            all.join(", ")
        };
        match provider {
            // A named provider this libfabric does not have: say which it has.
            Some(p) if !all.iter().any(|a| a.split(';').any(|x| x == p)) => RdmaError::NoProvider {
                tried: p.to_string(),
                detail: format!(
                    ": libfabric {} has no provider `{p}` (it has: {here})",
                    self.version()
                ),
            },
            _ => RdmaError::NoProvider {
                tried: provider.map_or(here, str::to_string),
                detail: format!(": fi_getinfo {what}: {}", e.text),
            },
        }
    }

    /// Listens on an ephemeral port of `bind`.
    pub fn listen(&self, provider: Option<&str>, bind: IpAddr) -> Result<Listener, RdmaError> {
        self.listen_on(provider, SocketAddr::new(bind, 0))
    }

    /// Listens on `bind` (port 0: ephemeral).
    pub fn listen_on(
        &self,
        provider: Option<&str>,
        bind: SocketAddr,
    ) -> Result<Listener, RdmaError> {
        let passive = Passive::listen(&self.lib, provider, bind).map_err(|e| {
            if e.call == "fi_getinfo" {
                self.no_provider(provider, &format!("for {bind}"), &e)
            } else {
                RdmaError::Call {
                    call: e.call.into(),
                    target: format!("on {bind}"),
                    provider: provider.unwrap_or("any").into(),
                    text: e.text,
                    code: e.code,
                }
            }
        })?;
        let local = passive.local_addr().map_err(|e| RdmaError::Call {
            call: e.call.into(),
            target: format!("on {bind}"),
            provider: passive.provider.clone(),
            text: e.text,
            code: e.code,
        })?;
        Ok(Listener { passive, local })
    }

    /// Connects from `local` (bound explicitly) to a [`Listener`] at `server`.
    pub fn connect(
        &self,
        provider: Option<&str>,
        local: IpAddr,
        server: SocketAddr,
        params: &Params,
        timeout: Duration,
    ) -> Result<Initiator, RdmaError> {
        self.connect_on(provider, None, local, server, params, timeout)
    }

    /// [`Fabric::connect`] through this end's device `domain` (`mlx5_0`, `rxe0`) when given.
    pub fn connect_on(
        &self,
        provider: Option<&str>,
        domain: Option<&str>,
        local: IpAddr,
        server: SocketAddr,
        params: &Params,
        timeout: Duration,
    ) -> Result<Initiator, RdmaError> {
        params.validate()?;
        let layout = Layout::of(params);
        let conn = Conn::prepare_active(
            &self.lib,
            provider,
            domain,
            SocketAddr::new(local, 0),
            server,
            layout.total(),
        )
        .map_err(|e| {
            if e.call == "fi_getinfo" {
                let via = domain.map_or_else(String::new, |d| format!(" through device {d}"));
                self.no_provider(provider, &format!("for {server} from {local}{via}"), &e)
            } else if let Some(m) = memlock_error(&e, layout.total()) {
                m
            } else {
                RdmaError::Call {
                    call: e.call.into(),
                    target: format!("to {server}"),
                    provider: provider.unwrap_or("any").into(),
                    text: e.text,
                    code: e.code,
                }
            }
        })?;
        check_queue(&conn, params.window)?;
        let mut link = Link::new(conn, layout, format!("to {server}"));
        link.post_all_rx()?;
        let data = proto::encode_connect(params, link.local_desc());
        let reply = link.conn.connect(&data, timeout).map_err(|e| {
            if e.code == ffi::bindings::FI_ETIMEDOUT {
                RdmaError::Timeout {
                    what: format!("connecting to {server} (provider {})", link.conn.provider),
                    after: timeout,
                }
            } else {
                link.err(e)
            }
        })?;
        link.remote = proto::decode_accept(&reply)?;
        if link.remote.len < layout.total() as u64 {
            return Err(RdmaError::Protocol(format!(
                "the target's region is {} bytes, {} needed",
                link.remote.len,
                layout.total()
            )));
        }
        Ok(Initiator::new(link, params.clone()))
    }
}

/// What an rdma_cm connection attempt to `server` found ([`Fabric::knock`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Knock {
    /// Something listens there and accepted the connection (closed again at once).
    Accepted,
    /// The far host's rdma_cm answered that nothing listens on that port (a CM reject).
    Refused,
    /// No answer within the time given.
    TimedOut,
    /// The attempt failed before or without an answer: `call` failed with `text` (no route
    /// or no RDMA device towards the address, no verbs provider, ...).
    Failed { call: String, text: String },
}

impl Fabric {
    /// Opens an RDMA connection (rdma_cm, provider `verbs`) to `server` and closes it at once:
    /// whether anything listens for RDMA there. The local end is the address this host's
    /// routing table sends `server`'s packets from. No data moves; the listener sees a
    /// connection open and close (an NFS server's svcrdma accepts it and drops it).
    pub fn knock(&self, server: SocketAddr, timeout: Duration) -> Knock {
        let failed = |call: &str, text: String| Knock::Failed {
            call: call.to_string(),
            text,
        };
        let local = match std::net::UdpSocket::bind(SocketAddr::new(
            if server.is_ipv4() {
                IpAddr::from([0, 0, 0, 0])
            } else {
                IpAddr::from([0u16; 8])
            },
            0,
        ))
        .and_then(|s| s.connect(server).and_then(|()| s.local_addr()))
        {
            Ok(a) => a.ip(),
            Err(e) => return failed("route lookup", format!("no route to {}: {e}", server.ip())),
        };
        let mut conn = match Conn::prepare_active(
            &self.lib,
            Some("verbs"),
            None,
            SocketAddr::new(local, 0),
            server,
            4096,
        ) {
            Ok(c) => c,
            Err(e) => return failed(e.call, e.text),
        };
        match conn.connect(&[], timeout) {
            Ok(_) => {
                conn.shutdown();
                Knock::Accepted
            }
            Err(e) if e.code == ffi::bindings::FI_ECONNREFUSED => Knock::Refused,
            Err(e) if e.code == ffi::bindings::FI_ETIMEDOUT => Knock::TimedOut,
            Err(e) => failed(e.call, e.text),
        }
    }
}

/// The window plus the control messages must fit the provider's transmit queue.
fn check_queue(conn: &Conn, window: usize) -> Result<(), RdmaError> {
    let need = window + params::CTRL_EXTRA;
    if conn.tx_size > 0 && need > conn.tx_size {
        return Err(RdmaError::InvalidParams(format!(
            "window {window} needs {need} transmit queue entries; provider {} offers {} (lower the window)",
            conn.provider, conn.tx_size
        )));
    }
    Ok(())
}

/// A passive endpoint waiting for one initiator.
#[derive(Debug)]
pub struct Listener {
    passive: Passive,
    local: SocketAddr,
}

impl Listener {
    pub fn port(&self) -> u16 {
        self.local.port()
    }
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
    pub fn provider(&self) -> &str {
        &self.passive.provider
    }
    /// The domain (device) name: verbs `mlx5_0`, tcp the netdev.
    pub fn domain(&self) -> &str {
        &self.passive.domain
    }

    /// Waits (at most `timeout`) for one initiator and accepts it. The connection takes the
    /// initiator's op, window, verify and max_size; `params.max_size` and `params.window` are
    /// the largest accepted.
    pub fn accept(self, params: &Params, timeout: Duration) -> Result<Target, RdmaError> {
        let deadline = Instant::now() + timeout;
        let local = self.local;
        let provider = self.passive.provider.clone();
        let call_err = |e: FiError, peer: &str| {
            if e.code == ffi::bindings::FI_ETIMEDOUT {
                RdmaError::Timeout {
                    what: format!("waiting for an initiator on {local} (provider {provider})"),
                    after: timeout,
                }
            } else {
                RdmaError::Call {
                    call: e.call.into(),
                    target: peer.to_string(),
                    provider: provider.clone(),
                    text: e.text,
                    code: e.code,
                }
            }
        };
        let req = self
            .passive
            .wait_connreq(deadline, &|| false)
            .map_err(|e| call_err(e, &format!("on {local}")))?;
        let checked = proto::decode_connect(&req.data, params).and_then(|(theirs, remote)| {
            theirs.validate()?;
            if theirs.max_size > params.max_size || theirs.window > params.window {
                return Err(RdmaError::InvalidParams(format!(
                    "the initiator asks for {}-byte messages with window {}; this target allows {} and {}",
                    theirs.max_size, theirs.window, params.max_size, params.window
                )));
            }
            Ok((theirs, remote))
        });
        let (theirs, remote) = match checked {
            Ok(v) => v,
            Err(e) => {
                self.passive.reject(&req);
                return Err(e);
            }
        };
        let layout = Layout::of(&theirs);
        let conn = self.passive.prepare(&req, layout.total()).map_err(|e| {
            memlock_error(&e, layout.total()).unwrap_or_else(|| call_err(e, &format!("on {local}")))
        })?;
        check_queue(&conn, theirs.window)?;
        let mut link = Link::new(conn, layout, format!("from the initiator on {local}"));
        link.remote = remote;
        link.post_all_rx()?;
        let data = proto::encode_accept(link.local_desc());
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(500));
        link.conn
            .accept(&data, left)
            .map_err(|e| call_err(e, &format!("on {local}")))?;
        Ok(Target::new(link, theirs))
    }
}

/// ENOMEM from a call that pins memory (registration, queues), under a finite locked-memory
/// limit that applies to this process (no CAP_IPC_LOCK): the limit is what ran out.
fn memlock_error(e: &ffi::conn::FiError, bytes: usize) -> Option<RdmaError> {
    if e.code != libc::ENOMEM {
        return None;
    }
    let limit = ffi::memlock_soft_limit()?;
    if cap_ipc_lock() {
        return None;
    }
    Some(RdmaError::Memlock {
        call: e.call.to_string(),
        bytes: bytes as u64,
        limit,
    })
}

/// This process holds CAP_IPC_LOCK (`CapEff` bit 14): no memlock limit applies to it.
fn cap_ipc_lock() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|c| c & (1 << 14) != 0)
}
