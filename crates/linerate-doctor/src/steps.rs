//! doctor's network steps: the test plan, the `--discard` re-runs, the disk-to-disk copy and
//! RDMA. Their branches (the first test fails and the port is down, a refusal, a UDP rate from
//! the best TCP result, a server without a write directory) are decided here, against two
//! traits: [`FarEndClient`] runs a test against the far end, [`ThisHost`] says what this host
//! did meanwhile and reads what the steps need of it. The unit tests below script both; the
//! real ones are `crate::far::LinerateServe` and `crate::host::LiveHost`.

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use linerate_bench::ClientError;
use linerate_engine::hostcpu::HostCpu;
use linerate_facts::{HostFacts, Inventory};
use linerate_proto::{Direction, RefusalKind, TestKind, TestParams};
use linerate_results::{LatencyMode, SkippedStep, TestResult};
use linerate_rules::thresholds::THREAD_SATURATED_PERCENT;

use crate::far::{FarEndClient, FarEndRun};
use crate::options::RdmaMode;
use crate::plan::{self, Depth, SpinChoice};

/// What the steps need of this host, besides the far end.
pub trait ThisHost {
    /// Runs `test` and says what this host's CPUs did meanwhile.
    fn during(&mut self, test: &mut dyn FnMut()) -> HostCpu;

    /// The interface the kernel routes `to` through.
    fn route_interface(&self, to: SocketAddr) -> Option<String>;

    /// Whether the latency test busy-polls or blocks, from how idle the cores are now
    /// (`self_check`: the far end's echo polls on this host too).
    fn spin_choice(&mut self, self_check: bool) -> SpinChoice;

    /// The copy's source: a file of `size` bytes written in `dir`, out of the page cache, open
    /// for reading; it is removed when the guard is dropped.
    fn copy_source(&mut self, dir: &Path, size: u64) -> Result<(File, tempfile::TempPath), String>;
}

/// The results so far, and what was learned about the path while running them.
#[derive(Debug, Default)]
pub struct Runs {
    pub tests: Vec<TestResult>,
    /// This host's CPU during each test (the same order as `tests`).
    pub cpu: Vec<HostCpu>,
    pub local_inv: Option<HostFacts>,
    pub remote_inv: Option<HostFacts>,
    /// The interface the tests used on this host.
    pub local_if: Option<String>,
    /// Tests that could not run or did not complete.
    pub errors: Vec<String>,
    /// Steps the far end's protocol cannot express, with the reason.
    pub skipped: Vec<SkippedStep>,
}

impl Runs {
    /// The best TCP result so far (not a `--discard` run, not one that failed), for the UDP
    /// test's rate; the report's best TCP result is the rules' (`linerate_rules::diagnose::best_tcp`).
    pub fn best_tcp(&self) -> Option<&TestResult> {
        self.tests
            .iter()
            .filter(|t| t.params.kind == TestKind::TcpBw && !t.params.discard && t.error.is_none())
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
    }

    fn push(&mut self, t: TestResult, cpu: HostCpu) {
        self.tests.push(t);
        self.cpu.push(cpu);
    }
}

/// The network steps of one doctor run.
pub struct Steps<'a> {
    pub far: &'a mut dyn FarEndClient,
    pub host: &'a mut dyn ThisHost,
    pub progress: &'a mut dyn FnMut(&str),
    pub depth: Depth,
    /// The far end runs in this process (the self-check).
    pub self_check: bool,
    pub runs: Runs,
}

impl std::fmt::Debug for Steps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steps")
            .field("far_end", &self.far.addr())
            .field("depth", &self.depth)
            .field("runs", &self.runs)
            .finish_non_exhaustive()
    }
}

/// The copy's time limit, seconds.
pub const COPY_TIME_LIMIT_S: f64 = 120.0;

/// Size of the file doctor copies: a few seconds at disk speed.
pub fn copy_size(depth: Depth) -> u64 {
    match depth {
        Depth::Quick => 128 << 20,
        Depth::Normal => 256 << 20,
        Depth::Thorough => 1 << 30,
    }
}

/// Doctor's RDMA messages: 1 MiB, the size of its TCP writes, so the two compare the same
/// transfer size (bench's default is 64 KiB, where RDMA already reaches line rate on FDR/EDR).
const RDMA_LENGTH: u32 = 1 << 20;

/// Seconds of doctor's RDMA test.
pub fn rdma_secs(depth: Depth) -> f64 {
    match depth {
        Depth::Quick => 2.0,
        Depth::Normal => 4.0,
        Depth::Thorough => 8.0,
    }
}

/// Streams of the plan's multi-stream tests: one per CPU, 2 to 8.
pub fn multi_streams(before: &Inventory) -> u32 {
    let cpus = before.host.cpus.len().max(1);
    u32::try_from(cpus.clamp(2, 8)).unwrap_or(2)
}

/// The RDMA test of doctor's plan with `provider`.
pub fn rdma_params(depth: Depth, provider: Option<String>) -> TestParams {
    TestParams {
        interval_ms: 0,
        length: RDMA_LENGTH,
        rdma: Some(linerate_proto::RdmaSpec {
            op: linerate_proto::RdmaOp::Write,
            latency: false,
            provider,
            window: linerate_proto::defaults::RDMA_WINDOW,
            qps: 1,
            verify: false,
            sweep: false,
        }),
        ..plan::p(TestKind::Rdma, Direction::Send, 1, rdma_secs(depth), 0.0)
    }
}

/// The copy through the tested path, of a file called `name`.
pub fn copy_params(depth: Depth, name: String) -> TestParams {
    TestParams {
        interval_ms: 0,
        file: Some(linerate_proto::FileSpec {
            name,
            size: copy_size(depth),
            fsync: true,
            remove_after: true,
        }),
        ..plan::p(
            TestKind::FileTransfer,
            Direction::Send,
            1,
            COPY_TIME_LIMIT_S,
            0.0,
        )
    }
}

fn short_result(t: &TestResult) -> String {
    t.summary_parts().join(", ")
}

/// Why the copy did not run: the far end's refusal (with its kind) or a local error.
#[derive(Debug)]
struct CopyFailed {
    kind: Option<RefusalKind>,
    message: String,
}

impl<'a> Steps<'a> {
    /// Steps against `far`, measuring this host through `host`.
    pub fn new(
        far: &'a mut dyn FarEndClient,
        host: &'a mut dyn ThisHost,
        progress: &'a mut dyn FnMut(&str),
        depth: Depth,
        self_check: bool,
    ) -> Self {
        Self {
            far,
            host,
            progress,
            depth,
            self_check,
            runs: Runs::default(),
        }
    }

    /// A step the far end cannot run, skipped with the reason: true when it is.
    fn skipped(&mut self, step: &str, params: &TestParams) -> bool {
        let Some(reason) = self.far.cannot_run(params) else {
            return false;
        };
        (self.progress)(&format!("{step}\n  → skipped: {reason}"));
        self.runs.skipped.push(SkippedStep {
            step: step.to_string(),
            reason,
        });
        true
    }

    /// One test, with this host's CPU while it ran.
    fn run_one(&mut self, params: &TestParams) -> (Result<FarEndRun, ClientError>, HostCpu) {
        let far = &mut *self.far;
        let mut out = None;
        let cpu = self.host.during(&mut || {
            out = Some(far.run(params, None));
        });
        let out = out.unwrap_or_else(|| Err(ClientError::Protocol("the test did not run".into())));
        (out, cpu)
    }

    /// The network tests of the plan. `Err` only when nothing reached the far end and this
    /// end's port can pass traffic (then doctor cannot run); a port that cannot is the
    /// diagnosis (`before`: this host's inventory).
    pub fn plan(&mut self, before: &Inventory) -> Result<(), ClientError> {
        let planned = plan::plan(
            self.depth,
            !self.self_check,
            linerate_proto::defaults::UDP_BITRATE_BPS,
            multi_streams(before),
        );
        for (n, mut params) in planned.into_iter().enumerate() {
            if params.kind == TestKind::UdpBw {
                let best = self.runs.best_tcp().map_or(0.0, |t| t.gbps);
                params.bitrate_bps = plan::udp_rate_bps(best);
            }
            if self.skipped(&params.describe(), &params) {
                continue;
            }
            let spin = (params.kind == TestKind::TcpLat).then(|| {
                let c = self.host.spin_choice(self.self_check);
                params.spin_us = Some(c.spin_us);
                c
            });
            (self.progress)(&params.describe());
            let (result, cpu) = self.run_one(&params);
            match result {
                Ok(run) => {
                    if self.runs.local_inv.is_none() {
                        self.runs.local_inv = run.local;
                        self.runs.local_if =
                            self.runs.local_inv.as_ref().and_then(|h| h.name.clone());
                    }
                    if self.runs.remote_inv.is_none() {
                        self.runs.remote_inv = run.remote;
                    }
                    let mut t = run.result;
                    if let (Some(c), Some(m)) = (spin, t.latency_mode.as_mut()) {
                        *m = LatencyMode::new(m.client_spin_us, m.server_spin_us, c.reason);
                    }
                    if let Some(e) = &t.error {
                        self.runs.errors.push(format!("{}: {e}", params.describe()));
                    }
                    (self.progress)(&format!("  → {}", short_result(&t)));
                    self.runs.push(t, cpu);
                }
                Err(e) if n == 0 => {
                    // Nothing reached the far end. If this end's port cannot pass traffic (down,
                    // no subnet manager), that is the diagnosis; otherwise doctor cannot run.
                    let route_if = self
                        .runs
                        .local_if
                        .clone()
                        .or_else(|| self.host.route_interface(self.far.addr()));
                    if !port_down(before, route_if.as_deref()) {
                        return Err(e);
                    }
                    self.runs.local_if = route_if;
                    self.runs.errors.push(format!("{}: {e}", params.describe()));
                    (self.progress)(&format!("  → failed: {e}"));
                    break;
                }
                Err(e) => {
                    self.runs.errors.push(format!("{}: {e}", params.describe()));
                    (self.progress)(&format!("  → failed: {e}"));
                }
            }
        }
        Ok(())
    }

    /// The receiver's copy: each single stream whose receiver was CPU-bound runs again with the
    /// data dropped in the receiver's kernel (`--discard`), so the diagnosis can say how much of
    /// the stream's limit is the receiving application's copy (`linerate_rules::receiver_copy`),
    /// and the verdict has a bound measured on the spot.
    pub fn discard_twins(&mut self) {
        let bound: Vec<TestParams> = self
            .runs
            .tests
            .iter()
            .filter(|t| {
                t.params.kind == TestKind::TcpBw
                    && t.streams == 1
                    && !t.params.discard
                    && t.error.is_none()
                    && t.receiver
                        .as_ref()
                        .is_some_and(|r| r.cpu_percent >= THREAD_SATURATED_PERCENT)
            })
            .map(|t| TestParams {
                discard: true,
                ..t.params.clone()
            })
            .collect();
        for params in bound {
            if self.skipped(&params.describe(), &params) {
                continue;
            }
            (self.progress)(&params.describe());
            let (result, cpu) = self.run_one(&params);
            match result {
                Ok(run) => {
                    let t = run.result;
                    if let Some(e) = &t.error {
                        self.runs.errors.push(format!("{}: {e}", params.describe()));
                    }
                    (self.progress)(&format!("  → {}", short_result(&t)));
                    self.runs.push(t, cpu);
                }
                Err(e) => {
                    (self.progress)(&format!("  → not run: {e}"));
                    self.runs.errors.push(format!("{}: {e}", params.describe()));
                }
            }
        }
    }

    /// Disk → network → disk: a file written in `dir` copied through the tested path, once a
    /// network test ran. Returns the copy and where it went (`loopback` or the far end); a far
    /// end that takes no files is a note of the pyramid, not an error.
    pub fn copy(
        &mut self,
        dir: &Path,
        pyramid_notes: &mut Vec<String>,
    ) -> Option<(TestResult, String)> {
        if self.runs.tests.is_empty() {
            return None;
        }
        let params = copy_params(self.depth, String::new());
        if self.skipped("file copy", &params) {
            let reason = self.runs.skipped.last().map(|s| s.reason.clone());
            pyramid_notes
                .extend(reason.map(|r| format!("the server's disk was not measured: {r}")));
            return None;
        }
        match self.file_copy(dir) {
            Ok(t) => {
                if let Some(e) = &t.error {
                    self.runs.errors.push(format!("file copy: {e}"));
                }
                let to = if self.self_check {
                    "loopback".into()
                } else {
                    self.far.addr().to_string()
                };
                Some((t, to))
            }
            // Servers before refusal kinds say it in words only (their refusals read as `Other`).
            Err(e)
                if e.kind == Some(RefusalKind::NoWriteDir)
                    || (e.kind == Some(RefusalKind::Other)
                        && e.message.contains("accepts no files")) =>
            {
                pyramid_notes.push(format!("the server's disk was not measured: {}", e.message));
                None
            }
            Err(e) => {
                self.runs.errors.push(format!("file copy: {}", e.message));
                None
            }
        }
    }

    /// Copies a source file written in `dir` to the far end (which removes its copy once
    /// measured). `Err` carries the far end's refusal.
    fn file_copy(&mut self, dir: &Path) -> Result<TestResult, CopyFailed> {
        let (src, path) = self
            .host
            .copy_source(dir, copy_size(self.depth))
            .map_err(|message| CopyFailed {
                kind: None,
                message,
            })?;
        let name = format!("linerate-doctor-{}.bin", linerate_proto::random_hex(6));
        let params = copy_params(self.depth, name);
        (self.progress)(&params.describe());
        let r = self.far.run(&params, Some(Arc::new(src)));
        drop(path);
        match r {
            Ok(run) => {
                (self.progress)(&format!("  → {}", short_result(&run.result)));
                Ok(run.result)
            }
            Err(e) => {
                (self.progress)(&format!("  → not run: {e}"));
                Err(CopyFailed {
                    kind: e.refusal_kind(),
                    message: e.to_string(),
                })
            }
        }
    }

    /// RDMA beside TCP on the same path, where this end has RDMA hardware (or when asked), once
    /// a TCP test ran.
    pub fn rdma(&mut self, mode: &RdmaMode, before: &Inventory) {
        let rdma_port = self.runs.local_if.as_deref().is_some_and(|n| {
            before
                .rdma_port_of_netdev(n)
                .is_some_and(|p| p.device.is_some())
        });
        let provider = match mode {
            RdmaMode::Off => None,
            RdmaMode::Auto => rdma_port.then(|| "verbs".to_string()),
            RdmaMode::Provider(p) => Some(p.clone()),
        };
        let Some(provider) = provider.filter(|_| {
            self.runs
                .tests
                .iter()
                .any(|t| t.params.kind == TestKind::TcpBw)
        }) else {
            return;
        };
        let params = rdma_params(self.depth, Some(provider.clone()));
        if self.skipped(&params.describe(), &params) {
            return;
        }
        // This host's RDMA software cannot run the test: said first, as what stops it.
        if provider == "verbs" {
            let findings = linerate_rules::analyze(before).findings;
            let blocks = linerate_rules::stack::blocks_rdma(&findings);
            if let Some(f) = blocks.first() {
                let mut reason = format!("the RDMA step was skipped: {}; {}", f.message, f.fix);
                if blocks.len() > 1 {
                    let also: Vec<&str> = blocks[1..].iter().map(|b| b.id.as_str()).collect();
                    reason = format!("{reason} (also: {})", also.join(", "));
                }
                (self.progress)(&format!("{}\n  → skipped: {reason}", params.describe()));
                self.runs.skipped.push(SkippedStep {
                    step: params.describe(),
                    reason,
                });
                return;
            }
        }
        (self.progress)(&params.describe());
        match self.far.run(&params, None) {
            Ok(run) => {
                let t = run.result;
                if let Some(e) = &t.error {
                    self.runs.errors.push(format!("RDMA ({provider}): {e}"));
                }
                (self.progress)(&format!("  → {}", short_result(&t)));
                self.runs.push(t, HostCpu::default());
            }
            Err(e) => {
                (self.progress)(&format!("  → not run: {e}"));
                self.runs.errors.push(format!("RDMA ({provider}): {e}"));
            }
        }
    }
}

/// This end's port cannot pass traffic (down, or waiting for a subnet manager).
fn port_down(before: &Inventory, netdev: Option<&str>) -> bool {
    let facts = linerate_rules::end_facts(before, netdev, Vec::new());
    facts.ceiling.as_ref().is_some_and(|c| {
        matches!(
            c.limited_by,
            linerate_model::LimitedBy::PortDown | linerate_model::LimitedBy::NoSubnetManager
        )
    })
}

#[cfg(test)]
mod tests;
