//! A running lab: its guests booted under virtme-ng, each reached through its agent, their
//! NICs addressed and their soft-RoCE devices made; all of it ended by PID when the lab is
//! dropped (and, should this process die without dropping it, by the agents' lifeline).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};

use crate::agent::{AgentReply, AgentRequest, Output, Status};
use crate::host::{self, Accel, Kernel};
use crate::spec::{self, GuestSpec, LabSpec, Launch};
use crate::LabError;

/// How long a guest may take from its start to its agent's first answer
/// (`LINERATE_LAB_BOOT_TIMEOUT`, seconds): under TCG a boot takes 30-60 s on a quiet 2-core
/// machine, and up to 4 minutes beside other builds and labs; Debian 11's 5.10 waits longer
/// still for udev (docs/lab.md, "The kernels").
pub const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
/// Added to a command's own deadline before its guest is declared silent.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(30);
/// A guest's absolute lifetime (its agent powers it off after this, whatever happens).
pub const MAX_LIFE: Duration = Duration::from_secs(4 * 3600);
/// Keep the lab's directory (logs, sockets, scratch) after it ends (`LINERATE_LAB_KEEP=1`).
pub const KEEP_ENV: &str = "LINERATE_LAB_KEEP";

/// One lab at a time in a process: the guests of two would share two host cores.
static ONE_LAB: Mutex<()> = Mutex::new(());

/// A running lab.
#[derive(Debug)]
pub struct Lab {
    pub guests: Vec<Guest>,
    pub kernel: Kernel,
    pub accel: Accel,
    /// From the first guest's start to every guest up, addressed, with its RDMA devices, and
    /// every wire carrying traffic.
    pub boot_time: Duration,
    dir: tempfile::TempDir,
    _one: MutexGuard<'static, ()>,
}

/// One running guest.
#[derive(Debug)]
pub struct Guest {
    pub name: String,
    pub spec: GuestSpec,
    /// The netdev name of each NIC of the spec, in order.
    pub netdevs: Vec<String>,
    /// The soft-RoCE device made on each NIC that has an address (`None` for the others).
    pub rxe: Vec<Option<String>>,
    /// The kernel release the guest runs.
    pub kernel: String,
    child: Child,
    conn: Mutex<Conn>,
    log: PathBuf,
}

#[derive(Debug)]
struct Conn {
    r: BufReader<UnixStream>,
    w: UnixStream,
}

/// What [`Guest::wait_output`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Awaited {
    /// The line it waited for.
    Line(String),
    /// The command ended first: its output.
    Ended(Output),
    /// Neither, in the time given: the command still runs.
    NotYet,
}

/// A command started in the background in a guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bg {
    pub id: u64,
    pub pid: u32,
}

impl Lab {
    /// Boot the guests of `spec` in parallel on the lab's default kernel ([`Kernel::find`])
    /// and make them ready: each agent answering, each NIC addressed and up, soft-RoCE devices
    /// where asked, and every wire carrying traffic.
    pub fn boot(spec: &LabSpec) -> Result<Lab, LabError> {
        spec.check().map_err(LabError::Spec)?;
        Lab::boot_on(spec, Kernel::find()?)
    }

    /// [`Lab::boot`] on the kernel `name` names (a series such as `5.10`, a release, or an
    /// image: [`Kernel::named`]).
    pub fn boot_named(spec: &LabSpec, name: &str) -> Result<Lab, LabError> {
        spec.check().map_err(LabError::Spec)?;
        Lab::boot_on(spec, Kernel::named(name)?)
    }

    /// [`Lab::boot`] on `kernel`.
    pub fn boot_on(spec: &LabSpec, kernel: Kernel) -> Result<Lab, LabError> {
        spec.check().map_err(LabError::Spec)?;
        let vng = host::find_vng()?;
        host::check_qemu()?;
        if spec.guests.iter().any(|g| g.rxe) {
            kernel.check_modules(host::RDMA_MODULES)?;
        }
        let agent = host::find_agent()?;
        let accel = host::choose_accel()?;
        // A test that panicked while holding the lock left nothing running: take it anyway.
        let one = ONE_LAB
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let started = Instant::now();
        let launch = Launch {
            vng,
            kernel: kernel.image.clone(),
            kvm: accel.kvm,
            agent,
            max_life_s: MAX_LIFE.as_secs(),
        };
        // KVM only where it boots the stock kernel: a guest that does not come up under KVM
        // chosen by looking is booted again under TCG.
        let auto = std::env::var(host::ACCEL_ENV).map_or(true, |v| v.is_empty() || v == "auto");
        let (dir, guests, accel) = match start_all(spec, &launch, &kernel) {
            Err(LabError::Boot { .. }) if launch.kvm && auto => {
                let tcg = Launch {
                    kvm: false,
                    ..launch
                };
                let (d, g) = start_all(spec, &tcg, &kernel)?;
                let why = "TCG: a guest did not come up under KVM, so this machine's KVM cannot boot the stock kernel".to_string();
                (d, g, Accel { kvm: false, why })
            }
            other => {
                let (d, g) = other?;
                (d, g, accel)
            }
        };
        let mut lab = Lab {
            guests,
            kernel,
            accel,
            boot_time: Duration::ZERO,
            dir,
            _one: one,
        };
        lab.configure()?;
        lab.boot_time = started.elapsed();
        Ok(lab)
    }

    /// The guest named `name`.
    ///
    /// # Panics
    /// When the lab has no such guest (a test's mistake).
    pub fn guest(&self, name: &str) -> &Guest {
        self.guests
            .iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("the lab has no guest {name}"))
    }

    /// The lab's directory on the host (sockets, logs, each guest's scratch).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Guest `name`'s scratch directory: read-write, at the same path on the host and in the guest.
    pub fn scratch(&self, name: &str) -> PathBuf {
        spec::scratch_dir(self.dir.path(), name)
    }

    fn configure(&mut self) -> Result<(), LabError> {
        for g in &mut self.guests {
            g.configure()?;
        }
        // Every wire carries traffic: each addressed NIC reaches its peer's address.
        for (gi, g) in self.guests.iter().enumerate() {
            for (ni, n) in g.spec.nics.iter().enumerate() {
                let (Some(w), Some(_)) = (&n.wire, n.addr) else {
                    continue;
                };
                let peer = self.guests.iter().enumerate().find_map(|(pi, p)| {
                    p.spec.nics.iter().enumerate().find_map(|(pn, pnic)| {
                        ((pi, pn) != (gi, ni) && pnic.wire.as_ref() == Some(w))
                            .then_some(pnic.addr)
                            .flatten()
                    })
                });
                if let Some((ip, _)) = peer {
                    g.sh_within(
                        &format!("for i in 1 2 3 4 5; do ping -c 1 -W 3 {ip} >/dev/null && exit 0; done; echo 'no answer from {ip}' >&2; exit 1"),
                        Duration::from_secs(60),
                    )?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for g in &mut self.guests {
            g.end();
        }
        if std::env::var_os(KEEP_ENV).is_some_and(|v| v == "1") {
            let kept = std::mem::replace(
                &mut self.dir,
                tempfile::Builder::new()
                    .prefix("lrlab-void-")
                    .tempdir()
                    .expect("a temporary directory"),
            );
            eprintln!("linerate-lab: kept {}", kept.keep().display());
        }
    }
}

fn boot_timeout() -> Duration {
    std::env::var("LINERATE_LAB_BOOT_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(BOOT_TIMEOUT, Duration::from_secs)
}

/// Start every guest and wait for each agent's first answer.
fn start_all(
    spec: &LabSpec,
    launch: &Launch,
    kernel: &Kernel,
) -> Result<(tempfile::TempDir, Vec<Guest>), LabError> {
    // Short: a socket's path must fit in 108 bytes.
    let dir = tempfile::Builder::new()
        .prefix("lrlab-")
        .tempdir_in("/tmp")
        .map_err(|e| LabError::Io(format!("a lab directory in /tmp: {e}")))?;
    let mut starting = Vec::new();
    for (gi, g) in spec.guests.iter().enumerate() {
        match spawn_guest(spec, gi, dir.path(), launch) {
            Ok((child, listener, log)) => starting.push((g.clone(), child, listener, log)),
            Err(e) => {
                for (_, mut child, _, _) in starting {
                    end_child(&mut child);
                }
                return Err(e);
            }
        }
    }
    let accel_name = if launch.kvm { "KVM" } else { "TCG" };
    let deadline = Instant::now() + boot_timeout();
    let mut guests = Vec::new();
    let mut pending = starting.into_iter();
    // Each guest's agent, in turn (they boot at the same time).
    let result = (|| {
        for (spec, mut child, listener, log) in pending.by_ref() {
            let stream = match accept_until(&listener, &mut child, deadline) {
                Ok(s) => s,
                Err(why) => {
                    end_child(&mut child);
                    return Err(LabError::Boot {
                        guest: spec.name.clone(),
                        why: format!("{why} ({accel_name}, kernel {})", kernel.release),
                        log: tail(&log),
                    });
                }
            };
            let w = stream
                .try_clone()
                .map_err(|e| LabError::Io(e.to_string()))?;
            let mut guest = Guest {
                name: spec.name.clone(),
                spec,
                netdevs: Vec::new(),
                rxe: Vec::new(),
                kernel: String::new(),
                child,
                conn: Mutex::new(Conn {
                    r: BufReader::new(stream),
                    w,
                }),
                log,
            };
            match guest.request(&AgentRequest::Ping, deadline.saturating_duration_since(Instant::now())) {
                Ok(AgentReply::Pong { kernel, .. }) => guest.kernel = kernel,
                Ok(other) => {
                    return Err(LabError::Agent {
                        guest: guest.name.clone(),
                        message: format!("answered a ping with {other:?}"),
                    })
                }
                Err(LabError::Silent { .. }) => {
                    return Err(LabError::Boot {
                        guest: guest.name.clone(),
                        why: format!(
                            "its agent did not answer within {} s of the start ({accel_name}, kernel {})",
                            boot_timeout().as_secs(),
                            kernel.release
                        ),
                        log: tail(&guest.log),
                    })
                }
                Err(e) => return Err(e),
            }
            guests.push(guest);
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok((dir, guests)),
        Err(e) => {
            for g in &mut guests {
                g.end();
            }
            for (_, mut child, _, _) in pending {
                end_child(&mut child);
            }
            Err(e)
        }
    }
}

/// Start guest `gi`: its scratch directory, the agent's socket QEMU will connect to, its log,
/// and vng in a process group of its own.
fn spawn_guest(
    spec: &LabSpec,
    gi: usize,
    dir: &Path,
    launch: &Launch,
) -> Result<(Child, UnixListener, PathBuf), LabError> {
    let g = &spec.guests[gi];
    let scratch = spec::scratch_dir(dir, &g.name);
    std::fs::create_dir_all(&scratch)
        .map_err(|e| LabError::Io(format!("{}: {e}", scratch.display())))?;
    let sock = spec::agent_socket(dir, &g.name);
    let listener =
        UnixListener::bind(&sock).map_err(|e| LabError::Io(format!("{}: {e}", sock.display())))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| LabError::Io(e.to_string()))?;
    let log = dir.join(format!("{}.log", g.name));
    let out =
        std::fs::File::create(&log).map_err(|e| LabError::Io(format!("{}: {e}", log.display())))?;
    let err = out.try_clone().map_err(|e| LabError::Io(e.to_string()))?;
    let mut cmd = Command::new(&launch.vng);
    // vng runs its `virtme-run` by name through the shell: the one beside it (the lab's
    // virtual environment is not in PATH).
    if let Some(bin) = launch.vng.parent().filter(|d| !d.as_os_str().is_empty()) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let joined = std::env::join_paths(
            std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&path)),
        )
        .map_err(|e| LabError::Io(format!("PATH with {}: {e}", bin.display())))?;
        cmd.env("PATH", joined);
    }
    cmd.args(spec::vng_args(spec, gi, dir, launch))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if std::env::var_os("LINERATE_LAB_VERBOSE").is_some_and(|v| v == "1") {
        cmd.arg("--verbose");
    }
    let child = cmd
        .spawn()
        .map_err(|e| LabError::Missing(format!("{}: {e}", launch.vng.display())))?;
    Ok((child, listener, log))
}

/// QEMU connects to the agent's socket when it starts; vng first builds an initramfs.
fn accept_until(
    listener: &UnixListener,
    child: &mut Child,
    deadline: Instant,
) -> Result<UnixStream, String> {
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).map_err(|e| e.to_string())?;
                return Ok(s);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(format!("accepting QEMU's connection: {e}")),
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!("vng ended ({st}) before QEMU connected"));
        }
        if Instant::now() >= deadline {
            return Err("QEMU did not start".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn end_child(child: &mut Child) {
    if let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
    let _ = child.wait();
}

/// The last lines of a guest's log, for a failure's one line.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join(" | ")
}

impl Guest {
    /// Send one request to the guest's agent and read its reply within `within`.
    pub fn request(&self, req: &AgentRequest, within: Duration) -> Result<AgentReply, LabError> {
        let mut conn = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut line = serde_json::to_vec(req).map_err(|e| LabError::Io(e.to_string()))?;
        line.push(b'\n');
        let what = describe(req);
        conn.w
            .write_all(&line)
            .map_err(|e| self.gone(&what, &e.to_string()))?;
        let deadline = Instant::now() + within;
        let mut reply = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(LabError::Silent {
                    guest: self.name.clone(),
                    what,
                    secs: within.as_secs(),
                });
            }
            conn.r
                .get_ref()
                .set_read_timeout(Some(left.min(Duration::from_secs(1))))
                .map_err(|e| LabError::Io(e.to_string()))?;
            match conn.r.read_until(b'\n', &mut reply) {
                Ok(0) => return Err(self.gone(&what, "its agent closed the connection")),
                Ok(_) if reply.ends_with(b"\n") => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(self.gone(&what, &e.to_string())),
            }
        }
        let reply: AgentReply = serde_json::from_slice(&reply).map_err(|e| LabError::Agent {
            guest: self.name.clone(),
            message: format!("an answer that is not a reply ({e})"),
        })?;
        if let AgentReply::Error { message } = reply {
            return Err(LabError::Agent {
                guest: self.name.clone(),
                message: format!("{what}: {message}"),
            });
        }
        Ok(reply)
    }

    fn gone(&self, what: &str, why: &str) -> LabError {
        LabError::Gone {
            guest: self.name.clone(),
            what: what.to_string(),
            why: why.to_string(),
            log: tail(&self.log),
        }
    }

    /// Run `sh -c SH` in the guest; its output whatever its status.
    pub fn run(&self, sh: &str, timeout: Duration) -> Result<Output, LabError> {
        self.run_with(sh, &[], timeout)
    }

    /// [`Guest::run`] with environment variables.
    pub fn run_with(
        &self,
        sh: &str,
        env: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Output, LabError> {
        let req = AgentRequest::Run {
            sh: sh.to_string(),
            timeout_ms: timeout.as_millis() as u64,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            stdin: None,
        };
        match self.request(&req, timeout + ANSWER_MARGIN)? {
            AgentReply::Done(o) => Ok(o),
            other => Err(self.odd(&other)),
        }
    }

    /// Run `sh -c SH` (at most 60 s): its standard output, or the error that says how it failed.
    pub fn sh(&self, sh: &str) -> Result<String, LabError> {
        self.sh_within(sh, Duration::from_secs(60))
    }

    /// [`Guest::sh`] with its own deadline.
    pub fn sh_within(&self, sh: &str, timeout: Duration) -> Result<String, LabError> {
        let o = self.run(sh, timeout)?;
        if o.success() {
            Ok(o.stdout)
        } else {
            Err(LabError::Failed {
                guest: self.name.clone(),
                command: sh.to_string(),
                status: o.status,
                stderr: o.stderr.trim().chars().take(2000).collect(),
            })
        }
    }

    /// Start `sh -c SH` in the background.
    pub fn spawn(&self, sh: &str) -> Result<Bg, LabError> {
        let req = AgentRequest::Spawn {
            sh: sh.to_string(),
            env: Vec::new(),
        };
        match self.request(&req, ANSWER_MARGIN)? {
            AgentReply::Spawned { id, pid } => Ok(Bg { id, pid }),
            other => Err(self.odd(&other)),
        }
    }

    /// Wait up to `timeout` for a background command: its output once it ended, `None` if it
    /// still runs.
    pub fn wait(&self, bg: Bg, timeout: Duration) -> Result<Option<Output>, LabError> {
        let req = AgentRequest::Wait {
            id: bg.id,
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.request(&req, timeout + ANSWER_MARGIN)? {
            AgentReply::Done(o) => Ok(Some(o)),
            AgentReply::Running { .. } => Ok(None),
            other => Err(self.odd(&other)),
        }
    }

    /// Wait up to `timeout` for a line of a background command's standard output that
    /// contains `text`.
    pub fn wait_output(&self, bg: Bg, text: &str, timeout: Duration) -> Result<Awaited, LabError> {
        let req = AgentRequest::WaitOutput {
            id: bg.id,
            text: text.to_string(),
            timeout_ms: timeout.as_millis() as u64,
        };
        match self.request(&req, timeout + ANSWER_MARGIN)? {
            AgentReply::Seen { line } => Ok(Awaited::Line(line)),
            AgentReply::Done(o) => Ok(Awaited::Ended(o)),
            AgentReply::Running { .. } => Ok(Awaited::NotYet),
            other => Err(self.odd(&other)),
        }
    }

    /// Start `sh -c SH` in the background and wait up to `within` until its standard output
    /// has a line containing `ready` (a server's `"event":"listening"`): the command, or why
    /// it is not ready, with what it printed (a command not ready in time is ended).
    pub fn spawn_ready(&self, sh: &str, ready: &str, within: Duration) -> Result<Bg, LabError> {
        let bg = self.spawn(sh)?;
        let started = Instant::now();
        let not_ready = |why: String, o: &Output| LabError::NotReady {
            guest: self.name.clone(),
            command: sh.to_string(),
            ready: ready.to_string(),
            why,
            output: format!("{}{}", o.stdout, o.stderr)
                .trim()
                .chars()
                .take(2000)
                .collect(),
        };
        match self.wait_output(bg, ready, within)? {
            Awaited::Line(_) => Ok(bg),
            Awaited::Ended(o) => Err(not_ready(
                format!(
                    "it ended ({}) after {:.1} s",
                    o.status.describe(),
                    started.elapsed().as_secs_f64()
                ),
                &o,
            )),
            Awaited::NotYet => {
                let o = self.stop(bg, Duration::from_secs(5))?;
                Err(not_ready(
                    format!("not within {} s (it was ended)", within.as_secs()),
                    &o,
                ))
            }
        }
    }

    /// End a background command: SIGTERM, then SIGKILL if it has not ended within `grace`;
    /// its output.
    pub fn stop(&self, bg: Bg, grace: Duration) -> Result<Output, LabError> {
        self.signal(bg, 15)?;
        if let Some(o) = self.wait(bg, grace)? {
            return Ok(o);
        }
        self.signal(bg, 9)?;
        self.wait(bg, Duration::from_secs(10))?
            .ok_or_else(|| LabError::Agent {
                guest: self.name.clone(),
                message: format!("background command {} survived SIGKILL", bg.pid),
            })
    }

    /// Send `signal` to a background command's process group.
    pub fn signal(&self, bg: Bg, signal: i32) -> Result<(), LabError> {
        match self.request(&AgentRequest::Signal { id: bg.id, signal }, ANSWER_MARGIN)? {
            AgentReply::Signalled => Ok(()),
            other => Err(self.odd(&other)),
        }
    }

    fn odd(&self, reply: &AgentReply) -> LabError {
        LabError::Agent {
            guest: self.name.clone(),
            message: format!("unexpected reply {reply:?}"),
        }
    }

    /// Address, MTU and state of each NIC, then its soft-RoCE device.
    fn configure(&mut self) -> Result<(), LabError> {
        let mut netdevs = Vec::new();
        for n in &self.spec.nics {
            let mac = n.mac.to_string();
            let name = self
                .sh_within(&netdev_of(&mac), NETDEV_WAIT + Duration::from_secs(30))?
                .trim()
                .to_string();
            if name.is_empty() {
                return Err(LabError::Agent {
                    guest: self.name.clone(),
                    message: format!(
                        "no netdev with MAC {mac} within {} s of the agent's start",
                        NETDEV_WAIT.as_secs()
                    ),
                });
            }
            let mut cmd = String::new();
            if let Some(m) = n.mtu {
                let _ = write!(cmd, "ip link set {name} mtu {m} && ");
            }
            let _ = write!(cmd, "ip link set {name} up");
            if let Some((ip, len)) = n.addr {
                let _ = write!(cmd, " && ip addr add {ip}/{len} dev {name}");
            }
            self.sh(&cmd)?;
            netdevs.push(name);
        }
        let mut rxe = Vec::new();
        if self.spec.rxe {
            self.sh("modprobe rdma_rxe && modprobe ib_uverbs && modprobe rdma_ucm")?;
        }
        let mut k = 0;
        for (n, name) in self.spec.nics.iter().zip(&netdevs) {
            if self.spec.rxe && n.addr.is_some() {
                let dev = format!("rxe{k}");
                k += 1;
                self.sh(&format!("rdma link add {dev} type rxe netdev {name}"))?;
                rxe.push(Some(dev));
            } else {
                rxe.push(None);
            }
        }
        self.netdevs = netdevs;
        self.rxe = rxe;
        Ok(())
    }

    /// The guest's address on its NIC `nic`.
    ///
    /// # Panics
    /// When that NIC has none (a test's mistake).
    pub fn addr(&self, nic: usize) -> std::net::Ipv4Addr {
        self.spec.nics[nic].addr.expect("an addressed NIC").0
    }

    fn end(&mut self) {
        end_child(&mut self.child);
    }
}

/// How long a guest's NIC may take to appear once the agent runs.
const NETDEV_WAIT: Duration = Duration::from_secs(180);
/// How long, from the agent's start, a NIC that is there may wait for udev to be done with it
/// (its name final) before the lab goes on with the name it has.
const UDEV_WAIT: Duration = Duration::from_secs(60);

/// A shell command that prints the name of the netdev with MAC `mac`: once udev is done with
/// it (its `/run/udev/data/nIFINDEX`, written after any rename), or no udev runs, or
/// [`UDEV_WAIT`] has passed; nothing if no such netdev appears within [`NETDEV_WAIT`]. The NIC
/// drivers are loaded first: on 5.10 the agent starts while udev still works through the
/// coldplug (docs/lab.md, "The kernels"). Shell built-ins in the loop: under TCG every program
/// started costs.
fn netdev_of(mac: &str) -> String {
    format!(
        "modprobe -a -q virtio_net e1000e; t0=$(date +%s); \
         while :; do n=; for d in /sys/class/net/*; do read -r a < \"$d/address\" && [ \"$a\" = {mac} ] && n=${{d##*/}}; done; \
         now=$(date +%s); \
         if [ -n \"$n\" ]; then read -r i < \"/sys/class/net/$n/ifindex\"; \
         if [ -e \"/run/udev/data/n$i\" ] || [ $((now - t0)) -ge {udev} ] || ! pidof systemd-udevd >/dev/null; then echo \"$n\"; exit 0; fi; fi; \
         [ $((now - t0)) -ge {secs} ] && exit 0; sleep 1; done",
        udev = UDEV_WAIT.as_secs(),
        secs = NETDEV_WAIT.as_secs()
    )
}

fn describe(req: &AgentRequest) -> String {
    match req {
        AgentRequest::Ping => "the first answer".into(),
        AgentRequest::Run { sh, .. } | AgentRequest::Spawn { sh, .. } => {
            let short: String = sh.chars().take(120).collect();
            format!("`{short}`")
        }
        AgentRequest::Wait { id, .. } => format!("waiting for background command {id}"),
        AgentRequest::WaitOutput { id, text, .. } => {
            format!("waiting for `{text}` from background command {id}")
        }
        AgentRequest::Signal { id, .. } => format!("signalling background command {id}"),
    }
}

impl Status {
    /// As a shell would say it.
    pub fn describe(self) -> String {
        match self {
            Status::Exited(c) => format!("exit status {c}"),
            Status::Signalled(s) => format!("killed by signal {s}"),
            Status::TimedOut => "its deadline passed".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_netdev_is_found_by_its_mac() {
        // On this host (no udev in a container, or udev done with lo): lo's all-zero MAC.
        if std::process::Command::new("pidof")
            .arg("systemd-udevd")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return;
        }
        let o = crate::agent::run(&netdev_of("00:00:00:00:00:00"), &[], None, 20_000).unwrap();
        assert_eq!(o.stdout.trim(), "lo", "{o:?}");
        assert!(o.elapsed_ms < 15_000, "{o:?}");
        // A MAC no netdev has: nothing, once the wait is over (not waited for here).
        let script =
            netdev_of("02:00:00:00:00:99").replace(&NETDEV_WAIT.as_secs().to_string(), "2");
        let o = crate::agent::run(&script, &[], None, 20_000).unwrap();
        assert_eq!(o.stdout.trim(), "", "{o:?}");
    }
}
