//! The far end of doctor's network tests, behind one trait: [`FarEndClient`] runs one test
//! against it and hands back what was measured. Doctor's steps (`crate::steps`) know nothing
//! else of it, so they are tested with a scripted far end, and another wire protocol is one
//! more implementation: [`LinerateServe`] is bench's client against `linerate serve` (on HOST,
//! started there through ssh, or in this process for the self-check); a `doctor --iperf3`
//! would be an implementation on bench's iperf3 client and a variant of [`FarEndProtocol`],
//! whose exhaustive matches ask what that far end tells of itself and the words the verdict
//! then adds.
//!
//! [`open`] makes the far end for doctor's options: the server given, one started through the
//! `far_end` hook (`--ssh`), or a server of its own on loopback.

use std::fs::File;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;

use linerate_bench::{ClientConfig, ClientError, InventoryFn, ServerConfig};
use linerate_facts::HostFacts;
use linerate_proto::{Psk, TestParams};
use linerate_results::TestResult;

use crate::options::{DoctorError, DoctorOptions, FarEndNeeds};

/// Runs doctor's tests against the far end.
pub trait FarEndClient {
    /// Where the tests go (the report's `server`).
    fn addr(&self) -> SocketAddr;

    /// The protocol the far end speaks, and so what it says of itself.
    fn protocol(&self) -> FarEndProtocol;

    /// Runs one test. `Ok` with what was measured, also when the test was cut short (the
    /// result carries the error); `Err` when nothing was measured: no connection, a refusal.
    fn run(
        &mut self,
        params: &TestParams,
        file: Option<Arc<File>>,
    ) -> Result<FarEndRun, ClientError>;
}

/// One test against the far end: the result, and what each end said about itself.
#[derive(Debug)]
pub struct FarEndRun {
    pub result: TestResult,
    /// This host and the interface the test used.
    pub local: Option<HostFacts>,
    /// The far end's host and interface, when its protocol says.
    pub remote: Option<HostFacts>,
}

/// The wire protocols doctor's far end may speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FarEndProtocol {
    /// `linerate serve`: each test brings the far end's interface, probe, ceiling, socket limits
    /// and per-stream CPU.
    Linerate,
}

impl FarEndProtocol {
    pub fn name(self) -> &'static str {
        match self {
            Self::Linerate => "linerate",
        }
    }

    /// The words the verdict adds when the far end says nothing of its host, so the path is
    /// judged from this end alone; None when it says what doctor judges by.
    pub fn judged_from_this_end(self) -> Option<&'static str> {
        match self {
            Self::Linerate => None,
        }
    }
}

/// `linerate serve`, through bench's client.
pub struct LinerateServe {
    addr: SocketAddr,
    bind: Option<IpAddr>,
    psk: Option<Psk>,
    inventory: InventoryFn,
}

impl std::fmt::Debug for LinerateServe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinerateServe")
            .field("addr", &self.addr)
            .field("bind", &self.bind)
            .finish_non_exhaustive()
    }
}

impl LinerateServe {
    pub fn new(
        addr: SocketAddr,
        bind: Option<IpAddr>,
        psk: Option<Psk>,
        inventory: InventoryFn,
    ) -> Self {
        Self {
            addr,
            bind,
            psk,
            inventory,
        }
    }
}

impl FarEndClient for LinerateServe {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn protocol(&self) -> FarEndProtocol {
        FarEndProtocol::Linerate
    }

    fn run(
        &mut self,
        params: &TestParams,
        file: Option<Arc<File>>,
    ) -> Result<FarEndRun, ClientError> {
        let cfg = ClientConfig {
            bind: self.bind,
            psk: self.psk.clone(),
            inventory: Some(self.inventory.clone()),
            file,
            ..ClientConfig::new(self.addr, params.clone())
        };
        let run = linerate_bench::run_client(&cfg, &mut |_| {})?;
        Ok(FarEndRun {
            result: linerate_bench::assemble(&run),
            local: run.local_inventory,
            remote: run.remote_inventory,
        })
    }
}

/// The far end of this run, and what keeps it alive until it is dropped.
pub struct OpenedFarEnd {
    pub client: Box<dyn FarEndClient>,
    /// The far end runs in this process (the self-check).
    pub self_check: bool,
    /// A far end started through ssh ends when this is dropped.
    _guard: Option<Box<dyn std::any::Any + Send>>,
}

impl std::fmt::Debug for OpenedFarEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedFarEnd")
            .field("addr", &self.client.addr())
            .field("self_check", &self.self_check)
            .finish_non_exhaustive()
    }
}

/// The far end for `o`: `o.far_end` starts one (with what `needs` says the tests need, asked
/// only then), else `o.server`, else a server of this process on loopback that writes copies
/// into `copy_dir`/in.
pub fn open(
    o: &DoctorOptions,
    needs: impl FnOnce() -> FarEndNeeds,
    copy_dir: Option<&tempfile::TempDir>,
) -> Result<OpenedFarEnd, DoctorError> {
    if let Some(start) = &o.far_end {
        let f = start(&needs()).map_err(DoctorError::FarEnd)?;
        return Ok(OpenedFarEnd {
            client: Box::new(LinerateServe::new(
                f.addr,
                o.bind,
                Some(f.psk),
                o.inventory.clone(),
            )),
            self_check: false,
            _guard: Some(f.guard),
        });
    }
    let (addr, psk, self_check) = match o.server {
        Some(s) => (s, o.psk.clone(), false),
        None => (start_local_server(o, copy_dir)?, None, true),
    };
    Ok(OpenedFarEnd {
        client: Box::new(LinerateServe::new(addr, o.bind, psk, o.inventory.clone())),
        self_check,
        _guard: None,
    })
}

/// The self-check's own server on loopback (writing copies into `copy_dir`/in when given).
fn start_local_server(
    o: &DoctorOptions,
    copy_dir: Option<&tempfile::TempDir>,
) -> Result<SocketAddr, DoctorError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(DoctorError::LocalServer)?;
    let addr = l.local_addr().map_err(DoctorError::LocalServer)?;
    let write_dir = copy_dir.and_then(|d| {
        let w = d.path().join("in");
        std::fs::create_dir(&w).ok()?;
        linerate_bench::WriteDir::open(&w).ok().map(Arc::new)
    });
    let cfg = ServerConfig {
        bind: addr,
        inventory: Some(o.inventory.clone()),
        log: false,
        write_dir,
        ..ServerConfig::default()
    };
    std::thread::Builder::new()
        .name("doctor-server".into())
        .spawn(move || linerate_bench::serve_on(&l, cfg))
        .map_err(DoctorError::LocalServer)?;
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{RdmaMode, StartedFarEnd};
    use crate::plan::Depth;
    use std::sync::Mutex;

    fn options() -> DoctorOptions {
        DoctorOptions {
            server: Some("192.0.2.1:5301".parse().unwrap()),
            bind: None,
            psk: None,
            depth: Depth::Quick,
            root: "/".into(),
            inventory: Arc::new(|_| None),
            disks: Vec::new(),
            rdma: RdmaMode::Off,
            far_end: None,
        }
    }

    #[test]
    fn a_far_end_over_ssh_that_fails_to_start_is_the_error() {
        let asked: Arc<Mutex<Option<FarEndNeeds>>> = Arc::default();
        let seen = asked.clone();
        let o = DoctorOptions {
            far_end: Some(Arc::new(move |n: &FarEndNeeds| {
                *seen.lock().unwrap() = Some(n.clone());
                Err("ssh: Permission denied (publickey): ssh-add, or ssh-copy-id node2".into())
            })),
            ..options()
        };
        let needs = FarEndNeeds {
            tests: crate::plan::plan(Depth::Quick, true, 1_000_000_000, 2),
            write_dir: true,
        };
        let e = open(&o, || needs.clone(), None).expect_err("the start failed");
        assert!(matches!(e, DoctorError::FarEnd(_)), "{e:?}");
        assert!(e.to_string().contains("ssh-copy-id"), "{e}");
        // It was told what the tests need (its deadline and write directory depend on it).
        assert_eq!(asked.lock().unwrap().as_ref(), Some(&needs));
    }

    #[test]
    fn a_started_far_end_gets_the_tests_with_its_own_key() {
        let key = Psk::from_bytes(&[7; 32]);
        let k = key.clone();
        let o = DoctorOptions {
            far_end: Some(Arc::new(move |_: &FarEndNeeds| {
                Ok(StartedFarEnd {
                    addr: "192.0.2.9:41234".parse().unwrap(),
                    psk: k.clone(),
                    guard: Box::new(()),
                })
            })),
            ..options()
        };
        let f = open(
            &o,
            || FarEndNeeds {
                tests: Vec::new(),
                write_dir: false,
            },
            None,
        )
        .unwrap();
        assert_eq!(f.client.addr(), "192.0.2.9:41234".parse().unwrap());
        assert!(!f.self_check);
        assert_eq!(f.client.protocol(), FarEndProtocol::Linerate);
        // Without the hook: the server given, or a server of this process.
        let given = open(&options(), || unreachable!(), None).unwrap();
        assert_eq!(given.client.addr(), "192.0.2.1:5301".parse().unwrap());
        let own = open(
            &DoctorOptions {
                server: None,
                ..options()
            },
            || unreachable!(),
            None,
        )
        .unwrap();
        assert!(own.self_check && own.client.addr().ip().is_loopback());
    }
}
