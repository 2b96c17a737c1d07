//! The PMIx exchange: rank 0 puts its address under [`KEY`], every rank commits and fences
//! (all processes of the namespace, data collected), the others get the key from rank 0.
//! Runs on its own thread, bounded by the request's timeout: a rank that never reaches the
//! fence makes the others fail with a message, never hang.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::pmix_ffi::{Client, PmixError};
use super::{listen_published, Coordinator, Method, RendezvousError, Request};

/// The PMIx key rank 0's coordinator address is published under.
pub const KEY: &str = "linerate.coord";

/// How the exchange ended on the PMIx thread.
enum Outcome {
    /// No usable PMIx here (library or server): the next method is tried.
    Unavailable(String),
    Failed(String),
    Found(String),
}

/// `Ok(Err(why))`: PMIx is not usable here, try the next method; `Err`: it is, and failed.
pub(super) fn exchange(req: &Request) -> Result<Result<Coordinator, String>, RendezvousError> {
    let (listener, publish) = if req.rank == 0 {
        let (l, a) = listen_published(req, Method::Pmix)?;
        (Some(l), Some(a))
    } else {
        (None, None)
    };
    let (tx, rx) = mpsc::channel();
    let rank = req.rank;
    let timeout_s = i32::try_from(req.timeout.as_secs().max(1)).unwrap_or(i32::MAX);
    thread::Builder::new()
        .name("linerate-pmix".into())
        .spawn(move || {
            let _ = tx.send(run(rank, publish.as_deref(), timeout_s));
        })
        .map_err(|e| RendezvousError::Pmix(format!("cannot start the PMIx thread: {e}")))?;
    // The server enforces the timeout where it can; this bounds it where it does not.
    match rx.recv_timeout(req.timeout + Duration::from_secs(2)) {
        Ok(Outcome::Unavailable(why)) => Ok(Err(why)),
        Ok(Outcome::Failed(e)) => Err(RendezvousError::Pmix(e)),
        Ok(Outcome::Found(addr)) => Ok(Ok(Coordinator::new(addr, Method::Pmix, listener))),
        Err(_) => Err(RendezvousError::Pmix(format!(
            "the exchange did not finish within {} s: every process of the job must run linerate mesh with the same options",
            req.timeout.as_secs()
        ))),
    }
}

fn run(rank: u32, publish: Option<&str>, timeout_s: i32) -> Outcome {
    let client = match Client::init() {
        Ok(c) => c,
        Err(e) => return Outcome::Unavailable(e.to_string()),
    };
    match steps(&client, rank, publish, timeout_s) {
        Ok(addr) => Outcome::Found(addr),
        Err(e) => Outcome::Failed(format!(
            "{e}; every process of the job must run linerate mesh with the same options (PMIx {}, namespace {}, PMIx rank {})",
            client.version(),
            client.namespace(),
            client.rank()
        )),
    }
}

fn steps(
    client: &Client,
    rank: u32,
    publish: Option<&str>,
    timeout_s: i32,
) -> Result<String, PmixError> {
    if (rank == 0) != (client.rank() == 0) {
        return Err(PmixError::Value(format!(
            "this is mesh rank {rank} but PMIx rank {}: rank 0 must be PMIx rank 0 (drop --rank under a PMIx launcher)",
            client.rank()
        )));
    }
    if let Some(addr) = publish {
        client.put(KEY, addr)?;
    }
    client.commit()?;
    client.fence(timeout_s)?;
    match publish {
        Some(addr) => Ok(addr.to_string()),
        None => client.get(0, KEY, timeout_s),
    }
}

/// What [`probe`] saw: this process's PMIx rank, the value rank 0 put, and this process's own
/// value read back through the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub pmix_rank: u32,
    pub from_rank_0: String,
    pub own: String,
}

/// A check of the PMIx exchange for the launcher tests: every process puts `value` under its
/// own rank, commits, fences, then gets rank 0's value and its own back. Bounded by `timeout`.
pub fn probe(value: &str, timeout: Duration) -> Result<ProbeResult, String> {
    const PROBE_KEY: &str = "linerate.probe";
    let (tx, rx) = mpsc::channel();
    let value = value.to_string();
    let timeout_s = i32::try_from(timeout.as_secs().max(1)).unwrap_or(i32::MAX);
    thread::spawn(move || {
        let r = (|| {
            let c = Client::init()?;
            c.put(PROBE_KEY, &value)?;
            c.commit()?;
            c.fence(timeout_s)?;
            Ok::<_, PmixError>(ProbeResult {
                pmix_rank: c.rank(),
                from_rank_0: c.get(0, PROBE_KEY, timeout_s)?,
                own: c.get(c.rank(), PROBE_KEY, timeout_s)?,
            })
        })();
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    rx.recv_timeout(timeout + Duration::from_secs(2))
        .map_err(|_| format!("no answer within {} s", timeout.as_secs()))?
}
