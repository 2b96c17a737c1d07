//! The far end of doctor's network tests, behind one trait: [`FarEndClient`] runs one test
//! against it and hands back what was measured. Doctor's steps (`crate::steps`) know nothing
//! else of it, so they are tested with a scripted far end, and another wire protocol is one
//! more implementation: [`LinerateServe`] is bench's client against `linerate serve` (on HOST,
//! started there through ssh, or in this process for the self-check); [`Iperf3Serve`] is
//! bench's iperf3 client against a stock `iperf3 -s` (`doctor --iperf3`), which says nothing
//! of its host and carries TCP and UDP bandwidth tests only: what else the plan holds,
//! [`FarEndClient::cannot_run`] says, and the steps skip it with that reason.
//!
//! [`open`] makes the far end for doctor's options: the server given, one started through the
//! `far_end` hook (`--ssh`), or a server of its own on loopback.

use std::fs::File;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;

use linerate_bench::client::{iperf3_plan, Iperf3Options};
use linerate_bench::{ClientConfig, ClientError, InventoryFn, ServerConfig, WireProtocol};
use linerate_engine::hostcpu::HostCpuMeter;
use linerate_facts::HostFacts;
use linerate_iperf3::{Feature, Version, VersionRange};
use linerate_proto::{Direction, TestKind};
use linerate_proto::{Psk, TestParams};
use linerate_results::TestResult;

use crate::options::{DoctorError, DoctorOptions, FarEndNeeds, StartedProtocol};

/// Runs doctor's tests against the far end.
pub trait FarEndClient {
    /// Where the tests go (the report's `server`).
    fn addr(&self) -> SocketAddr;

    /// The protocol the far end speaks, and so what it says of itself.
    fn protocol(&self) -> FarEndProtocol;

    /// Why the far end cannot run `params` (its protocol cannot express the test, or cannot
    /// be trusted to have run it as asked); None when it can. Doctor skips such a step with
    /// the reason rather than guess.
    fn cannot_run(&self, params: &TestParams) -> Option<String>;

    /// What is known of the far end's release, in words (`iperf3 3.12`); None when its
    /// protocol does not say, or nothing told it.
    fn version(&self) -> Option<String>;

    /// Runs one test. `Ok` with what was measured, also when the test was cut short (the
    /// result carries the error); `Err` when nothing was measured: no connection, a refusal.
    fn run(
        &mut self,
        params: &TestParams,
        file: Option<Arc<File>>,
    ) -> Result<FarEndRun, ClientError>;

    /// Measures this host's CPU in each test with `meter` (the far end's processes on this
    /// host found once for every test) rather than looking for them in each.
    fn use_cpu_meter(&mut self, _meter: HostCpuMeter) {}
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
    /// A stock `iperf3 -s`: its bytes, its retransmissions when it sends, its UDP loss and
    /// jitter, and its whole process's CPU; nothing of its host.
    Iperf3,
}

impl FarEndProtocol {
    pub fn name(self) -> &'static str {
        match self {
            Self::Linerate => "linerate",
            Self::Iperf3 => "iperf3",
        }
    }

    /// The words the verdict adds when the far end says nothing of its host, so the path is
    /// judged from this end alone; None when it says what doctor judges by.
    pub fn judged_from_this_end(self) -> Option<&'static str> {
        match self {
            Self::Linerate => None,
            Self::Iperf3 => Some(
                "the far end is a stock iperf3 server: its hardware is unknown, so this is judged from this end only",
            ),
        }
    }
}

/// `linerate serve`, through bench's client.
pub struct LinerateServe {
    addr: SocketAddr,
    bind: Option<IpAddr>,
    psk: Option<Psk>,
    inventory: InventoryFn,
    cpu_meter: Option<HostCpuMeter>,
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
            cpu_meter: None,
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

    fn cannot_run(&self, _: &TestParams) -> Option<String> {
        None
    }

    fn version(&self) -> Option<String> {
        None
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
            cpu_meter: self.cpu_meter.clone(),
            ..ClientConfig::new(self.addr, params.clone())
        };
        let run = linerate_bench::run_client(&cfg, &mut |_| {})?;
        Ok(FarEndRun {
            result: linerate_bench::assemble(&run),
            local: run.local_inventory,
            remote: run.remote_inventory,
        })
    }

    fn use_cpu_meter(&mut self, meter: HostCpuMeter) {
        self.cpu_meter = Some(meter);
    }
}

/// A stock `iperf3 -s`, through bench's iperf3 client. What it tells of its release over the
/// tests (its UDP reply, the shape of its results, its own output) is kept, so a step that
/// needs a later release is run only once the far end is known to have it.
pub struct Iperf3Serve {
    addr: SocketAddr,
    bind: Option<IpAddr>,
    inventory: InventoryFn,
    /// From `--ssh` (the far end's `iperf3 --version`), when it was started there.
    known: Option<Version>,
    /// What the tests so far showed of its release.
    seen: VersionRange,
    /// A test ran against it already.
    served: bool,
    cpu_meter: Option<HostCpuMeter>,
}

/// How long a stock iperf3 server may take to listen again after a test: it closes its
/// listening socket when a test ends and opens it anew for the next, so a test that follows at
/// once can find the port closed.
const IPERF3_RELISTEN: std::time::Duration = std::time::Duration::from_secs(5);

impl std::fmt::Debug for Iperf3Serve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iperf3Serve")
            .field("addr", &self.addr)
            .field("known", &self.known)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

impl Iperf3Serve {
    pub fn new(
        addr: SocketAddr,
        bind: Option<IpAddr>,
        inventory: InventoryFn,
        known: Option<Version>,
    ) -> Self {
        let seen = known.map_or(VersionRange::ANY, VersionRange::exactly);
        Self {
            addr,
            bind,
            inventory,
            known,
            seen,
            served: false,
            cpu_meter: None,
        }
    }

    fn options(&self) -> Iperf3Options {
        Iperf3Options {
            server_version: self.known,
            ..Iperf3Options::default()
        }
    }
}

impl FarEndClient for Iperf3Serve {
    fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn protocol(&self) -> FarEndProtocol {
        FarEndProtocol::Iperf3
    }

    fn cannot_run(&self, params: &TestParams) -> Option<String> {
        let what = match params.kind {
            TestKind::FileTransfer => Some(
                "iperf3's protocol carries no files, so the far end's disk is not measured (doctor against `linerate serve --write-dir DIR` copies to it)",
            ),
            TestKind::Rdma => Some(
                "iperf3's protocol carries TCP and UDP only, not RDMA (doctor against `linerate serve` measures it)",
            ),
            k if k.is_latency() => Some(
                "iperf3's protocol has no round-trip test, so latency is not measured (doctor against `linerate serve` measures it)",
            ),
            _ => None,
        };
        if let Some(w) = what {
            return Some(w.to_string());
        }
        // A receive without copy on the far end's side needs skip_rx_copy, which an older
        // server ignores: the twin would measure the copy it is meant to leave out.
        let far_receives = matches!(params.direction, Direction::Send | Direction::Bidir);
        if params.discard && far_receives && self.seen.has(Feature::SkipRxCopy) != Some(true) {
            return Some(format!(
                "the far end's receive without copy (--discard): {}, and the far end is {}",
                Feature::SkipRxCopy.needs(),
                self.seen
            ));
        }
        iperf3_plan(params, &self.options()).err()
    }

    fn version(&self) -> Option<String> {
        (self.seen != VersionRange::ANY).then(|| self.seen.to_string())
    }

    fn run(
        &mut self,
        params: &TestParams,
        file: Option<Arc<File>>,
    ) -> Result<FarEndRun, ClientError> {
        if let Some(why) = self.cannot_run(params) {
            return Err(ClientError::Protocol(why));
        }
        let cfg = ClientConfig {
            bind: self.bind,
            inventory: Some(self.inventory.clone()),
            file,
            protocol: WireProtocol::Iperf3(self.options()),
            cpu_meter: self.cpu_meter.clone(),
            ..ClientConfig::new(self.addr, params.clone())
        };
        let until = std::time::Instant::now() + IPERF3_RELISTEN;
        let run = loop {
            match linerate_bench::run_client(&cfg, &mut |_| {}) {
                Err(ClientError::Connect { err, .. })
                    if self.served
                        && err.kind() == std::io::ErrorKind::ConnectionRefused
                        && std::time::Instant::now() < until =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                r => break r?,
            }
        };
        self.served = true;
        if let Some(r) = run.iperf3.as_ref().and_then(|i| self.seen.and(i.version)) {
            self.seen = r;
        }
        Ok(FarEndRun {
            result: linerate_bench::assemble(&run),
            local: run.local_inventory,
            remote: None,
        })
    }

    fn use_cpu_meter(&mut self, meter: HostCpuMeter) {
        self.cpu_meter = Some(meter);
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
        let client: Box<dyn FarEndClient> = match f.speaks {
            StartedProtocol::Linerate { psk } => Box::new(LinerateServe::new(
                f.addr,
                o.bind,
                Some(psk),
                o.inventory.clone(),
            )),
            StartedProtocol::Iperf3 { version } => Box::new(Iperf3Serve::new(
                f.addr,
                o.bind,
                o.inventory.clone(),
                version,
            )),
        };
        return Ok(OpenedFarEnd {
            client,
            self_check: false,
            _guard: Some(f.guard),
        });
    }
    let (addr, psk, self_check) = match o.server {
        Some(s) if o.iperf3 => {
            return Ok(OpenedFarEnd {
                client: Box::new(Iperf3Serve::new(s, o.bind, o.inventory.clone(), None)),
                self_check: false,
                _guard: None,
            })
        }
        Some(s) => (s, o.psk.clone(), false),
        None if o.iperf3 => return Err(DoctorError::Iperf3WithoutServer),
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
            iperf3: false,
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
                    speaks: StartedProtocol::Linerate { psk: k.clone() },
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
