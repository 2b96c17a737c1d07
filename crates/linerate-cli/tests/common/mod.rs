//! Shared by the CLI's integration tests: the binary's path, free ports, busy loops that
//! load this machine's cores (`BusyLoops`, killed on drop and bounded by `timeout`), JSON
//! and output helpers; and for the namespace tests, two network namespaces
//! joined by a veth pair, `linerate serve` in the second, the client run in the first
//! through `ip netns exec`; all of it removed on drop.
//!
//! Needs root (`ip netns`, `tc`); `Net::new` returns `None` where namespaces cannot be
//! made, after recording the skip with `linerate_testkit::skip` (counted as skipped by
//! `scripts/test.sh`; a failure under `LINERATE_REQUIRE_PRIVILEGED=1`), and the test returns. The tests share this machine's
//! CPUs and their figures are only meaningful one at a time, so each holds `serial()`: a
//! mutex in this process and a lock file across processes (another `cargo test` running
//! one of these binaries at the same time waits its turn).

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

pub use linerate_testkit::is_root;

pub mod lab;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_linerate");
/// The server's port inside namespace b (each test has its own namespaces, so no clashes).
pub const PORT: u16 = 15201;

static SERIAL: Mutex<()> = Mutex::new(());
static NEXT: AtomicU32 = AtomicU32::new(1);

/// One test at a time, in this process and across processes.
pub struct Serial {
    _file: Option<std::fs::File>,
    _guard: MutexGuard<'static, ()>,
}

pub fn serial() -> Serial {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("linerate-netns-bench.lock"))
        .ok()
        .filter(|f| f.lock().is_ok());
    Serial {
        _file: file,
        _guard: guard,
    }
}

/// Run a command to completion; `Err` carries its stderr.
pub fn run(prog: &str, args: &[&str]) -> Result<Output, String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "`{prog} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The namespaces present on this host.
pub fn netns_list() -> Vec<String> {
    run("ip", &["netns", "list"])
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Two namespaces joined by a veth pair, `linerate serve` running in b; all of it is
/// removed on drop (also when the test panics).
#[derive(Debug)]
pub struct Net {
    /// Namespace of the client (`10.201.n.1`) and of the server (`10.201.n.2`).
    pub a: String,
    pub b: String,
    /// The veth ends: `va` in a, `vb` in b.
    pub va: String,
    pub vb: String,
    pub n: u32,
    server: Option<Child>,
    /// The server's `--write-dir` (doctor's disk-to-disk copy lands here, and is removed).
    pub write_dir: tempfile::TempDir,
}

impl Net {
    /// `None`, after recording the skip, when this machine cannot make namespaces.
    pub fn new(mtu: u32) -> Option<Net> {
        Net::with_mtus(mtu, mtu)
    }

    /// Like [`Net::new`] with a different MTU on each end (`mtu_a` on the client's veth).
    pub fn with_mtus(mtu_a: u32, mtu_b: u32) -> Option<Net> {
        if !is_root() {
            linerate_testkit::skip("needs root for ip netns and tc");
            return None;
        }
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(n < 255, "too many namespace pairs for 10.201.<n>.0/24");
        let pid = std::process::id();
        let mut net = Net {
            a: format!("lrt-{pid}-{n}-a"),
            b: format!("lrt-{pid}-{n}-b"),
            // Interface names have at most 15 characters.
            va: format!("lr{pid}x{n}a"),
            vb: format!("lr{pid}x{n}b"),
            n,
            server: None,
            write_dir: tempfile::tempdir().expect("a temporary directory"),
        };
        if let Err(e) = run("ip", &["netns", "add", &net.a]) {
            linerate_testkit::skip(format_args!("cannot create a network namespace: {e}"));
            return None;
        }
        if let Err(e) = run("ip", &["netns", "add", &net.b]) {
            linerate_testkit::skip(format_args!(
                "cannot create a second network namespace: {e}"
            ));
            return None;
        }
        if let Err(e) = run(
            "ip",
            &[
                "link", "add", &net.va, "type", "veth", "peer", "name", &net.vb,
            ],
        ) {
            linerate_testkit::skip(format_args!("cannot create a veth pair: {e}"));
            return None;
        }
        let (mtu_a, mtu_b) = (mtu_a.to_string(), mtu_b.to_string());
        let (a, b, va, vb) = (net.a.clone(), net.b.clone(), net.va.clone(), net.vb.clone());
        let addr_a = format!("10.201.{n}.1/24");
        let addr_b = format!("10.201.{n}.2/24");
        for args in [
            vec!["link", "set", &va, "netns", &a],
            vec!["link", "set", &vb, "netns", &b],
            vec!["-n", &a, "addr", "add", &addr_a, "dev", &va],
            vec!["-n", &b, "addr", "add", &addr_b, "dev", &vb],
            vec!["-n", &a, "link", "set", &va, "mtu", &mtu_a, "up"],
            vec!["-n", &b, "link", "set", &vb, "mtu", &mtu_b, "up"],
            vec!["-n", &a, "link", "set", "lo", "up"],
            vec!["-n", &b, "link", "set", "lo", "up"],
        ] {
            run("ip", &args).unwrap_or_else(|e| panic!("setting up {a}/{b}: {e}"));
        }
        net.serve();
        Some(net)
    }

    pub fn server_ip(&self) -> String {
        format!("10.201.{}.2", self.n)
    }

    /// Start `linerate serve` in b and wait for its `listening` line.
    fn serve(&mut self) {
        let port = PORT.to_string();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.b, BIN, "serve", "-p", &port])
            .args(["--max-duration", "15", "--write-dir"])
            .arg(self.write_dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ip netns exec … linerate serve");
        // Kept first: a server that does not come up is still ended with the namespaces.
        await_listening(self.server.insert(child));
    }

    /// The server's pid (`ip netns exec` execs the server, so it is the child's).
    pub fn server_pid(&self) -> Option<u32> {
        self.server.as_ref().map(Child::id)
    }

    /// Restart the server when it is no longer running (this machine is shared: a
    /// server can be killed from outside). True when it had to be restarted.
    pub fn ensure_serving(&mut self) -> bool {
        let exited = match self.server.as_mut().map(Child::try_wait) {
            None => true,
            Some(Ok(None)) => false,
            Some(Ok(Some(status))) => {
                println!(
                    "NOTE: linerate serve in {} exited ({status}) between tests; restarting it",
                    self.b
                );
                true
            }
            Some(Err(e)) => {
                println!("NOTE: cannot check linerate serve in {}: {e}", self.b);
                false
            }
        };
        if exited {
            self.server = None;
            self.serve();
        }
        exited
    }

    /// `tc -n a ARGS`.
    pub fn tc(&self, args: &[&str]) {
        let mut all = vec!["-n", self.a.as_str()];
        all.extend_from_slice(args);
        run("tc", &all).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Stop the server and remove the namespaces.
    fn teardown(&mut self) {
        if let Some(mut s) = self.server.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        let quiet = |args: &[&str]| {
            let _ = Command::new("ip")
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        // Deleting a namespace deletes the veth end in it, and with it the peer; the
        // `link del` covers a pair that never made it into the namespaces.
        quiet(&["link", "del", &self.va]);
        quiet(&["netns", "del", &self.a]);
        quiet(&["netns", "del", &self.b]);
    }

    /// Tear down now and check nothing is left: neither namespace, nor the server.
    pub fn close(mut self) {
        let pid = self.server_pid();
        self.teardown();
        let left: Vec<String> = netns_list()
            .into_iter()
            .filter(|n| *n == self.a || *n == self.b)
            .collect();
        assert!(left.is_empty(), "namespaces left behind: {left:?}");
        if let Some(pid) = pid {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "linerate serve (pid {pid}) still running"
            );
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// How long a `linerate serve` started by a test may take to say it listens (its first log
/// line): generous, for a machine whose cores other work holds.
pub const SERVE_READY: Duration = Duration::from_secs(60);

/// Read `linerate serve`'s log (`child`'s piped stdout) on a thread of its own, so the server
/// never blocks on a full pipe, and wait up to [`SERVE_READY`] for its first line, the
/// `listening` event: that line, and the channel of the lines after it. The test fails
/// naming why when the server ended first, printed something else, or said nothing in time.
pub fn await_listening(child: &mut Child) -> (Value, mpsc::Receiver<String>) {
    let stdout = child.stdout.take().expect("linerate serve's stdout, piped");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let Ok(first) = rx.recv_timeout(SERVE_READY) else {
        let state = match child.try_wait() {
            Ok(Some(status)) => format!("it ended ({status})"),
            _ => format!("it printed nothing within {} s", SERVE_READY.as_secs()),
        };
        panic!("linerate serve did not say it listens: {state}");
    };
    let v: Value = serde_json::from_str(&first)
        .unwrap_or_else(|e| panic!("linerate serve's first line is not JSON ({e}): {first}"));
    assert_eq!(
        v["event"], "listening",
        "linerate serve's first line: {first}"
    );
    (v, rx)
}

/// A `linerate serve` on loopback, killed and reaped on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `linerate serve` on loopback with `extra` options, once it listens.
pub fn server(extra: &[&str]) -> Server {
    server_env(extra, &[])
}

/// The same with environment variables set for the server; every test it serves ends within
/// 30 s (`--max-duration`).
pub fn server_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let child = Command::new(BIN)
        .envs(env.iter().copied())
        .args([
            "serve",
            "-B",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--max-duration",
            "30",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // It listens once it says so (the rest of its log is drained and dropped); it is
    // ended on drop, also when it does not come up.
    let mut s = Server { child, port };
    await_listening(&mut s.child);
    s
}

/// Busy loops (`sh -c 'while :; do :; done'`, each under `timeout LIMIT_S`, so one outlives a
/// test that died by at most that long), ended by PID when dropped: other work holding the
/// CPUs while a verdict is judged.
pub struct BusyLoops(Vec<Child>);

impl BusyLoops {
    pub fn start(n: usize, limit_s: &str) -> BusyLoops {
        let children = (0..n)
            .map(|_| {
                Command::new("timeout")
                    .args([limit_s, "sh", "-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start a busy loop under timeout(1)")
            })
            .collect();
        BusyLoops(children)
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SIGTERM to timeout(1), which passes it on to its shell.
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

/// A child's output as text (lossy).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The number at a JSON pointer, or a panic naming the pointer and the document.
pub fn num(v: &Value, path: &str) -> f64 {
    v.pointer(path)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{path} is not a number in {v}"))
}

/// A one-test `iperf3 -s -1 -J`'s JSON, once it has exited after its test: waits at most 30 s
/// (a panic naming it if it did not end), then reads its stdout.
pub fn iperf3_server_json(child: &mut Child) -> Value {
    let until = Instant::now() + Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() {
        assert!(
            Instant::now() < until,
            "iperf3 -s -1 did not end after its test"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    let _ = child
        .stdout
        .take()
        .expect("its stdout")
        .read_to_string(&mut out);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("iperf3 -J printed no JSON ({e}): {out}"))
}
