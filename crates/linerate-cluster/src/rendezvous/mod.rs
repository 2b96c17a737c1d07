//! How every rank learns the coordinator's address, in this order (issue #12):
//!
//! 1. `--coordinator HOST:PORT`: rank 0 listens there, the others connect;
//! 2. PMIx, when the launcher provides it (`PMIX_RANK` and `PMIX_NAMESPACE` in the environment):
//!    rank 0 puts its address, every rank commits and fences, the others get it from rank 0
//!    (libpmix loaded at run time; a missing library is a note and the next method);
//! 3. a shared directory (`--rendezvous-dir`): rank 0 writes its address atomically under a name
//!    keyed by the job, the others poll for it and refuse a file from an older run;
//! 4. the first host of `SLURM_STEP_NODELIST`, 5. `$JOB_NAME-0.$SUBDOMAIN` (Indexed Job),
//!    6. the first of `--hosts`: a host name and the fixed coordinator port, no exchange.
//!
//! [`find_coordinator`] returns the address every rank (rank 0 included) connects to and, on
//! rank 0, the listener already bound, so a port the kernel picks can be published.

mod dir;
mod pmix;
mod pmix_ffi;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use linerate_mesh::launch::{coordinator_candidates, CandidateSource};
use linerate_mesh::RankId;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use dir::{coordinator_file, job_key};
pub use pmix::{probe as pmix_probe, ProbeResult as PmixProbe, KEY as PMIX_KEY};

/// The coordinator's TCP port when only a host is known (Slurm, Indexed Job, `--hosts`): one
/// above `linerate serve`'s 5301.
pub const DEFAULT_COORDINATOR_PORT: u16 = 5302;

/// What a rank knows when it looks for the coordinator (flags already parsed).
#[derive(Debug, Clone)]
pub struct Request {
    pub rank: RankId,
    pub size: u32,
    /// `--coordinator HOST[:PORT]` (the port defaults to `port`).
    pub coordinator: Option<String>,
    /// `--rendezvous-dir`: a directory every rank sees (NFS, a shared scratch).
    pub rendezvous_dir: Option<PathBuf>,
    /// `--job`: the key of the rendezvous file; else the launcher's job id.
    pub job: Option<String>,
    /// `--hosts`, expanded.
    pub hosts: Vec<String>,
    /// The coordinator's port for every method but `--coordinator`; 0 (PMIx and the directory
    /// only): one the kernel picks, published with the address.
    pub port: u16,
    /// The address rank 0 publishes (`--bind`); else the source address of its default route,
    /// else its host name.
    pub advertise: Option<IpAddr>,
    /// How long the exchange may take (PMIx fence, directory polling, name resolution).
    pub timeout: Duration,
}

/// The rendezvous methods, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `--coordinator HOST:PORT`.
    Flag,
    /// Put, commit, fence and get through the launcher's PMIx server.
    Pmix,
    /// A file in `--rendezvous-dir`.
    Directory,
    /// The first host of `SLURM_STEP_NODELIST`.
    SlurmNodelist,
    /// `$JOB_NAME-0.$SUBDOMAIN`.
    IndexedJob,
    /// The first of `--hosts`.
    HostList,
}

impl Method {
    /// Its name in JSON documents: `flag`, `pmix`, `directory`, `slurm_nodelist`,
    /// `indexed_job`, `host_list`.
    pub fn id(self) -> &'static str {
        match self {
            Method::Flag => "flag",
            Method::Pmix => "pmix",
            Method::Directory => "directory",
            Method::SlurmNodelist => "slurm_nodelist",
            Method::IndexedJob => "indexed_job",
            Method::HostList => "host_list",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Flag => "--coordinator",
            Method::Pmix => "PMIx",
            Method::Directory => "--rendezvous-dir",
            Method::SlurmNodelist => "SLURM_STEP_NODELIST",
            Method::IndexedJob => "$JOB_NAME-0.$SUBDOMAIN",
            Method::HostList => "--hosts",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A method that was passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub method: Method,
    pub why: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.method, self.why)
    }
}

fn list(tried: &[Skipped]) -> String {
    tried
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Debug, Error)]
pub enum RendezvousError {
    #[error("--coordinator {value:?}: {what}")]
    BadCoordinator { value: String, what: String },
    #[error("rank 0 cannot listen for the ranks on {addr} ({method}): {err}; is another run using the port? pick another with --coordinator HOST:PORT")]
    Bind {
        addr: String,
        method: Method,
        err: std::io::Error,
    },
    #[error("{method} gives the host {host:?} but no port: the coordinator port is 0, which only PMIx and --rendezvous-dir can publish")]
    NoPort { method: Method, host: String },
    #[error("PMIx rendezvous: {0}")]
    Pmix(String),
    #[error("--rendezvous-dir {dir}: {what}")]
    Directory { dir: PathBuf, what: String },
    #[error("launcher environment: {0}")]
    Launch(#[from] linerate_mesh::launch::LaunchError),
    #[error("cannot resolve the coordinator {addr:?} ({method}) within {secs:.0} s: {err}")]
    Resolve {
        addr: String,
        method: Method,
        secs: f64,
        err: String,
    },
    #[error("no way to find the coordinator: tried {}; pass --coordinator HOST:PORT (rank 0's address), --rendezvous-dir DIR (a directory every rank sees) or --hosts", list(.tried))]
    Nothing { tried: Vec<Skipped> },
}

/// Where the coordinator is, as this rank found it.
#[derive(Debug)]
pub struct Coordinator {
    /// `HOST:PORT` every rank connects to, rank 0 included (so its own data address is one
    /// that routes to the others).
    pub addr: String,
    pub method: Method,
    /// Rank 0: bound and listening. None on the other ranks.
    pub listener: Option<TcpListener>,
    /// The methods passed over before `method`, and why (for the run's notes).
    pub skipped: Vec<Skipped>,
    /// Rank 0's rendezvous file, removed when this is dropped.
    published: Option<dir::Published>,
}

impl Coordinator {
    /// Whether this rank runs the coordinator.
    pub fn listens(&self) -> bool {
        self.listener.is_some()
    }

    /// The address to connect to, resolving a host name until `timeout` (a Kubernetes
    /// headless Service publishes its records only when the pods are up).
    pub fn resolve(&self, timeout: Duration) -> Result<SocketAddr, RendezvousError> {
        let start = Instant::now();
        loop {
            let err = match self.addr.to_socket_addrs() {
                Ok(mut it) => match it.next() {
                    Some(a) => return Ok(a),
                    None => "no address".to_string(),
                },
                Err(e) => e.to_string(),
            };
            if start.elapsed() >= timeout {
                return Err(RendezvousError::Resolve {
                    addr: self.addr.clone(),
                    method: self.method,
                    secs: timeout.as_secs_f64(),
                    err,
                });
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// Finds the coordinator by the first method that applies (see the module's documentation).
/// `env` reads the launcher's environment (`std::env::var` in the binary, a map in tests).
pub fn find_coordinator(
    req: &Request,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Coordinator, RendezvousError> {
    let started = SystemTime::now();
    let mut skipped = Vec::new();
    if let Some(value) = &req.coordinator {
        return from_flag(req, value);
    }
    skipped.push(skip(Method::Flag, "not given"));

    match (env("PMIX_RANK"), env("PMIX_NAMESPACE")) {
        (Some(_), Some(_)) => match pmix::exchange(req)? {
            Ok(found) => return Ok(found.with_skipped(skipped)),
            Err(why) => skipped.push(skip(Method::Pmix, &why)),
        },
        _ => skipped.push(skip(
            Method::Pmix,
            "no PMIX_RANK and PMIX_NAMESPACE in the environment (not launched by a PMIx launcher)",
        )),
    }

    if let Some(d) = &req.rendezvous_dir {
        return Ok(dir::exchange(req, d, env, started)?.with_skipped(skipped));
    }
    skipped.push(skip(Method::Directory, "not given"));

    from_candidates(req, env, skipped)
}

fn skip(method: Method, why: &str) -> Skipped {
    Skipped {
        method,
        why: why.to_string(),
    }
}

impl Coordinator {
    fn with_skipped(mut self, skipped: Vec<Skipped>) -> Coordinator {
        self.skipped = skipped;
        self
    }

    fn new(addr: String, method: Method, listener: Option<TcpListener>) -> Coordinator {
        Coordinator {
            addr,
            method,
            listener,
            skipped: Vec::new(),
            published: None,
        }
    }
}

/// Splits `HOST:PORT`, `[V6]:PORT`, or a bare `HOST` / `[V6]` that takes `default_port`
/// (0: a port must be given). The port must be 1-65535.
pub fn parse_host_port(value: &str, default_port: u16) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address must be written [ADDR] or [ADDR]:PORT")?;
        if h.parse::<Ipv6Addr>().is_err() {
            return Err(format!("[{h}] is not an IPv6 address"));
        }
        match after {
            "" => (h, None),
            p => (
                h,
                Some(p.strip_prefix(':').ok_or("expected :PORT after ]")?),
            ),
        }
    } else {
        match value.split_once(':') {
            Some((_, p)) if p.contains(':') => {
                return Err("write an IPv6 address as [ADDR]:PORT".into());
            }
            Some((h, p)) => (h, Some(p)),
            None => (value, None),
        }
    };
    if host.is_empty() {
        return Err("the host is empty: expected HOST or HOST:PORT".into());
    }
    let port = match port {
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("port {p:?} is not a number from 1 to 65535")),
        },
        None if default_port > 0 => default_port,
        None => return Err("no port: expected HOST:PORT".into()),
    };
    Ok((host.to_string(), port))
}

/// `host:port`, bracketing an IPv6 literal.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.parse::<Ipv6Addr>().is_ok() {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn from_flag(req: &Request, value: &str) -> Result<Coordinator, RendezvousError> {
    let (host, port) =
        parse_host_port(value, req.port).map_err(|what| RendezvousError::BadCoordinator {
            value: value.to_string(),
            what,
        })?;
    let addr = join_host_port(&host, port);
    if req.rank != 0 {
        return Ok(Coordinator::new(addr, Method::Flag, None));
    }
    // Rank 0 listens on the address given; a name that is not this host's own address (behind
    // NAT, a Service) is served on every address at that port instead.
    let resolved: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| RendezvousError::BadCoordinator {
            value: value.to_string(),
            what: format!("cannot resolve {host:?}: {e}"),
        })?
        .collect();
    let mut last = None;
    for a in &resolved {
        match TcpListener::bind(a) {
            Ok(l) => return Ok(Coordinator::new(addr, Method::Flag, Some(l))),
            Err(e) => last = Some((a.to_string(), e)),
        }
    }
    let v6 = resolved.first().is_some_and(SocketAddr::is_ipv6);
    match last {
        Some((_, e)) if e.kind() == std::io::ErrorKind::AddrNotAvailable => {
            let l = bind_any(port, v6, Method::Flag)?;
            Ok(Coordinator::new(addr, Method::Flag, Some(l)))
        }
        Some((a, err)) => Err(RendezvousError::Bind {
            addr: a,
            method: Method::Flag,
            err,
        }),
        None => Err(RendezvousError::BadCoordinator {
            value: value.to_string(),
            what: format!("{host:?} resolves to no address"),
        }),
    }
}

/// Binds every address of one family at `port` (0: the kernel picks).
fn bind_any(port: u16, v6: bool, method: Method) -> Result<TcpListener, RendezvousError> {
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    };
    let a = SocketAddr::new(ip, port);
    TcpListener::bind(a).map_err(|err| RendezvousError::Bind {
        addr: a.to_string(),
        method,
        err,
    })
}

/// What rank 0 publishes (PMIx, directory): `--bind`, else the source address of its default
/// route (no packet is sent: a UDP connect only picks the route), else its host name.
fn advertised_host(req: &Request) -> String {
    if let Some(ip) = req.advertise {
        return ip.to_string();
    }
    let routed = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|s| {
            // 192.0.2.1 (TEST-NET-1) is never a local address: the route to it is the default.
            s.connect((Ipv4Addr::new(192, 0, 2, 1), 9))?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_unspecified());
    if let Some(ip) = routed {
        return ip.to_string();
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| Ipv4Addr::LOCALHOST.to_string())
}

/// Rank 0 for PMIx and the directory: listen on every address at `req.port` and publish the
/// advertised host with the port actually bound.
fn listen_published(
    req: &Request,
    method: Method,
) -> Result<(TcpListener, String), RendezvousError> {
    let host = advertised_host(req);
    let v6 = host.parse::<Ipv6Addr>().is_ok();
    // The port is published with the address, so a taken one (another run on this host) is
    // no reason to fail: the kernel picks another.
    let l = match bind_any(req.port, v6, method) {
        Err(RendezvousError::Bind { err, .. })
            if req.port != 0 && err.kind() == std::io::ErrorKind::AddrInUse =>
        {
            bind_any(0, v6, method)?
        }
        other => other?,
    };
    let port = l.local_addr().map_err(|err| RendezvousError::Bind {
        addr: format!("port {}", req.port),
        method,
        err,
    })?;
    Ok((l, join_host_port(&host, port.port())))
}

fn from_candidates(
    req: &Request,
    env: &dyn Fn(&str) -> Option<String>,
    mut skipped: Vec<Skipped>,
) -> Result<Coordinator, RendezvousError> {
    let candidates = coordinator_candidates(env, &req.hosts)?;
    let found = candidates.first();
    for (method, source, why) in [
        (
            Method::SlurmNodelist,
            CandidateSource::SlurmStepNodelist,
            "not set (not launched by srun)",
        ),
        (
            Method::IndexedJob,
            CandidateSource::IndexedJob,
            "JOB_NAME and SUBDOMAIN not both set (the Indexed Job's pod template sets them)",
        ),
        (Method::HostList, CandidateSource::HostList, "not given"),
    ] {
        match found {
            Some(c) if c.source == source => {
                if req.port == 0 {
                    return Err(RendezvousError::NoPort {
                        method,
                        host: c.host.clone(),
                    });
                }
                let addr = join_host_port(&c.host, req.port);
                let listener = if req.rank == 0 {
                    let v6 = c.host.parse::<Ipv6Addr>().is_ok();
                    Some(bind_any(req.port, v6, method)?)
                } else {
                    None
                };
                return Ok(Coordinator::new(addr, method, listener).with_skipped(skipped));
            }
            _ => skipped.push(skip(method, why)),
        }
    }
    Err(RendezvousError::Nothing { tried: skipped })
}

#[cfg(test)]
mod tests;
