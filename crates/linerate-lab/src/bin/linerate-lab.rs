//! `linerate-lab`: the guest agent (`agent`, run by virtme-ng inside each guest) and a lab for
//! people and scripts (`up`, `exec`, `down`): see docs/lab.md.
//!
//! ```text
//! linerate-lab up --dir /tmp/lab &          # two guests, a wire, soft-RoCE; stays up
//! linerate-lab ready /tmp/lab               # wait for it (prints what is up)
//! linerate-lab exec /tmp/lab a -- ibv_devinfo -v
//! linerate-lab exec /tmp/lab b --bg -- ib_write_bw -d rxe0 -R   # prints an id
//! linerate-lab exec /tmp/lab a -- ib_write_bw -d rxe0 -R 198.18.0.2
//! linerate-lab wait /tmp/lab b ID
//! linerate-lab down /tmp/lab
//! ```

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use linerate_lab::agent::{self, AgentReply, AgentRequest, Status};
use linerate_lab::{Lab, LabSpec, NicSpec};
use serde::{Deserialize, Serialize};

#[derive(Parser, Debug)]
#[command(
    name = "linerate-lab",
    about = "linerate's lab: guests of a stock kernel under QEMU, joined by wires, with soft-RoCE"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Inside a guest: serve the host's requests on a virtio-serial port (virtme-ng runs this).
    Agent {
        #[arg(long, default_value = linerate_lab::spec::AGENT_PORT)]
        port: String,
        /// Seconds after which the agent ends, and the guest with it.
        #[arg(long, default_value_t = 4 * 3600)]
        max_life: u64,
    },
    /// Boot a lab and keep it up until `down`, SIGTERM or SIGINT; its control socket is in DIR.
    Up {
        /// The lab's control directory (created).
        #[arg(long)]
        dir: PathBuf,
        /// 2: guests a and b joined by one wire; 1: guest a alone with its NIC on no wire.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
        guests: u8,
        /// A NIC of each guest (repeat for more): `virtio[:SPEED_MBPS][@GTxWIDTH]` (paravirtual,
        /// reporting that speed, behind a PCIe root port of that rate and width) or
        /// `e1000e[@GTxWIDTH]` (an emulated Intel 82574L). Two guests: NIC i of a is wired to
        /// NIC i of b; one guest: its NICs are wired to each other in pairs.
        #[arg(long = "nic", action = clap::ArgAction::Append, default_value = "virtio:40000@5x4")]
        nics: Vec<String>,
        /// No soft-RoCE devices.
        #[arg(long)]
        no_rxe: bool,
        #[arg(long, default_value_t = 1)]
        cpus: u32,
        /// MiB of memory per guest.
        #[arg(long, default_value_t = 1024)]
        memory: u32,
        /// The NICs' MTU.
        #[arg(long)]
        mtu: Option<u32>,
        /// The guests' kernel: a series (`5.10`, `6.1`, `6.12`: the newest installed of it), a
        /// release (`6.1.0-57-amd64`) or an image (`/boot/vmlinuz-...`); the lab's default
        /// kernel (`LINERATE_LAB_KERNEL`, else 6.1) when left out.
        #[arg(long)]
        kernel: Option<String>,
    },
    /// Wait until the lab in DIR is up (or says why it is not); print what is up.
    Ready {
        dir: PathBuf,
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Run a command in a guest of the lab in DIR: its output, and its exit status as ours.
    Exec {
        dir: PathBuf,
        guest: String,
        /// Seconds before the command is killed (exit status 124).
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// Start it in the background and print its id (for `wait` and `stop`).
        #[arg(long)]
        bg: bool,
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
    /// Wait for a background command: its output and exit status (124 if still running).
    Wait {
        dir: PathBuf,
        guest: String,
        id: u64,
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
    /// End a background command (SIGTERM, then SIGKILL): its output.
    Stop {
        dir: PathBuf,
        guest: String,
        id: u64,
    },
    /// End the lab in DIR.
    Down { dir: PathBuf },
    /// Print, as JSON, the sysfs files linerate reads about this machine's ports (run it in a
    /// guest: `exec DIR a -- linerate-lab capture`), for fixtures/sysfs/build.py.
    Capture {
        #[arg(long, default_value = "/")]
        root: PathBuf,
    },
}

/// One request to `up`'s control socket.
#[derive(Debug, Serialize, Deserialize)]
struct Control {
    guest: Option<String>,
    request: Option<AgentRequest>,
    /// Answer within this long.
    within_ms: u64,
    #[serde(default)]
    down: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("linerate-lab: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cmd: Cmd) -> Result<ExitCode, String> {
    match cmd {
        Cmd::Agent { port, max_life } => {
            let dev = agent::find_port(&port)?;
            agent::serve(&dev, Duration::from_secs(max_life))?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Up {
            dir,
            guests,
            nics,
            no_rxe,
            cpus,
            memory,
            mtu,
            kernel,
        } => {
            let spec = up_spec(guests, &nics, no_rxe, cpus, memory, mtu)?;
            up(&dir, &spec, kernel.as_deref())
        }
        Cmd::Ready { dir, timeout } => ready(&dir, timeout),
        Cmd::Exec {
            dir,
            guest,
            timeout,
            bg,
            command,
        } => exec(&dir, &guest, timeout, bg, &command),
        Cmd::Wait {
            dir,
            guest,
            id,
            timeout,
        } => {
            let req = AgentRequest::Wait {
                id,
                timeout_ms: timeout * 1000,
            };
            finish(ask(&dir, &guest, req, Duration::from_secs(timeout + 30))?)
        }
        Cmd::Stop { dir, guest, id } => stop(&dir, &guest, id),
        Cmd::Capture { root } => {
            let c = linerate_lab::capture::Capture::take(&root);
            println!(
                "{}",
                serde_json::to_string_pretty(&c).map_err(|e| e.to_string())?
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Down { dir } => {
            let mut s = UnixStream::connect(dir.join("control.sock"))
                .map_err(|e| format!("no lab at {}: {e}", dir.display()))?;
            let msg = Control {
                guest: None,
                request: None,
                within_ms: 0,
                down: true,
            };
            let mut line = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
            line.push(b'\n');
            s.write_all(&line).map_err(|e| e.to_string())?;
            // `up` removes its socket once the guests have ended.
            let deadline = Instant::now() + Duration::from_secs(60);
            while dir.join("control.sock").exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The lab `up` boots.
fn up_spec(
    guests: u8,
    nics: &[String],
    no_rxe: bool,
    cpus: u32,
    memory: u32,
    mtu: Option<u32>,
) -> Result<LabSpec, String> {
    let nics = nics
        .iter()
        .map(|n| NicSpec::parse_short(n))
        .collect::<Result<Vec<_>, _>>()?;
    let mut spec = LabSpec::build(usize::from(guests), &nics, !no_rxe);
    for g in &mut spec.guests {
        g.cpus = cpus;
        g.memory_mib = memory;
        for n in &mut g.nics {
            n.mtu = mtu;
        }
    }
    spec.check()?;
    Ok(spec)
}

/// `ready`: wait for the lab in `dir` to be up, or to say why it is not.
fn ready(dir: &Path, timeout: u64) -> Result<ExitCode, String> {
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        if let Ok(s) = std::fs::read_to_string(dir.join("failed")) {
            return Err(s.trim().to_string());
        }
        if let Ok(s) = std::fs::read_to_string(dir.join("ready")) {
            print!("{s}");
            return Ok(ExitCode::SUCCESS);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the lab in {} is not up after {timeout} s",
                dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `stop`: SIGTERM, then SIGKILL, to a background command; its output.
fn stop(dir: &Path, guest: &str, id: u64) -> Result<ExitCode, String> {
    ask(
        dir,
        guest,
        AgentRequest::Signal { id, signal: 15 },
        Duration::from_secs(30),
    )?;
    let req = AgentRequest::Wait {
        id,
        timeout_ms: 5000,
    };
    match ask(dir, guest, req, Duration::from_secs(40))? {
        AgentReply::Running { .. } => {
            ask(
                dir,
                guest,
                AgentRequest::Signal { id, signal: 9 },
                Duration::from_secs(30),
            )?;
            let req = AgentRequest::Wait {
                id,
                timeout_ms: 10_000,
            };
            finish(ask(dir, guest, req, Duration::from_secs(40))?)
        }
        other => finish(other),
    }
}

/// `exec`: one command in a guest, in the foreground or the background.
fn exec(
    dir: &Path,
    guest: &str,
    timeout: u64,
    bg: bool,
    command: &[String],
) -> Result<ExitCode, String> {
    // One word is a shell command line; several are quoted into one.
    let sh = if command.len() == 1 {
        command[0].clone()
    } else {
        shlex::try_join(command.iter().map(String::as_str)).map_err(|e| e.to_string())?
    };
    let within = Duration::from_secs(timeout);
    if bg {
        match ask(
            dir,
            guest,
            AgentRequest::Spawn { sh, env: vec![] },
            Duration::from_secs(30),
        )? {
            AgentReply::Spawned { id, .. } => {
                println!("{id}");
                Ok(ExitCode::SUCCESS)
            }
            other => Err(format!("{other:?}")),
        }
    } else {
        let req = AgentRequest::Run {
            sh,
            timeout_ms: within.as_millis() as u64,
            env: vec![],
            stdin: None,
        };
        finish(ask(dir, guest, req, within + Duration::from_secs(30))?)
    }
}

fn finish(reply: AgentReply) -> Result<ExitCode, String> {
    match reply {
        AgentReply::Done(o) => {
            print!("{}", o.stdout);
            eprint!("{}", o.stderr);
            let _ = std::io::stdout().flush();
            Ok(match o.status {
                Status::Exited(c) => ExitCode::from(c.clamp(0, 255) as u8),
                Status::Signalled(s) => ExitCode::from((128 + s).clamp(0, 255) as u8),
                Status::TimedOut => ExitCode::from(124),
            })
        }
        AgentReply::Running { id } => {
            eprintln!("linerate-lab: background command {id} still runs");
            Ok(ExitCode::from(124))
        }
        other => Err(format!("{other:?}")),
    }
}

/// One request to the lab in `dir`, through `up`'s control socket.
fn ask(
    dir: &Path,
    guest: &str,
    request: AgentRequest,
    within: Duration,
) -> Result<AgentReply, String> {
    let sock = dir.join("control.sock");
    let s = UnixStream::connect(&sock).map_err(|e| format!("no lab at {}: {e}", dir.display()))?;
    s.set_read_timeout(Some(within + Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let msg = Control {
        guest: Some(guest.to_string()),
        request: Some(request),
        within_ms: within.as_millis() as u64,
        down: false,
    };
    let mut line = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
    line.push(b'\n');
    (&s).write_all(&line).map_err(|e| e.to_string())?;
    let mut reply = String::new();
    BufReader::new(&s)
        .read_line(&mut reply)
        .map_err(|e| format!("the lab did not answer: {e}"))?;
    let reply: Result<AgentReply, String> =
        serde_json::from_str(&reply).map_err(|e| format!("the lab's answer: {e}"))?;
    reply
}

fn up(dir: &Path, spec: &LabSpec, kernel: Option<&str>) -> Result<ExitCode, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for f in ["ready", "failed", "control.sock"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| e.to_string())?;
    }
    let booted = match kernel {
        Some(k) => Lab::boot_named(spec, k),
        None => Lab::boot(spec),
    };
    let lab = match booted {
        Ok(l) => l,
        Err(e) => {
            let _ = std::fs::write(dir.join("failed"), format!("{e}\n"));
            return Err(e.to_string());
        }
    };
    let listener = UnixListener::bind(dir.join("control.sock"))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let mut text = format!(
        "lab up in {:.1} s: kernel {} under {} ({})\n",
        lab.boot_time.as_secs_f64(),
        lab.kernel.release,
        if lab.accel.kvm { "KVM" } else { "TCG" },
        lab.accel.why
    );
    for g in &lab.guests {
        for (i, n) in g.netdevs.iter().enumerate() {
            let addr = g.spec.nics[i]
                .addr
                .map_or_else(String::new, |(ip, len)| format!(" {ip}/{len}"));
            let rxe = g.rxe[i]
                .as_deref()
                .map_or_else(String::new, |r| format!(" {r}"));
            let _ = writeln!(text, "  {}: {n}{addr}{rxe}", g.name);
        }
    }
    std::fs::write(dir.join("ready"), &text).map_err(|e| e.to_string())?;
    print!("{text}");
    let _ = std::io::stdout().flush();
    std::thread::scope(|scope| {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((s, _)) => {
                    let lab = &lab;
                    let stop = &stop;
                    scope.spawn(move || serve_control(lab, &s, stop));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(_) => break,
            }
        }
    });
    drop(lab);
    let _ = std::fs::remove_file(dir.join("control.sock"));
    let _ = std::fs::remove_file(dir.join("ready"));
    Ok(ExitCode::SUCCESS)
}

fn serve_control(lab: &Lab, s: &UnixStream, stop: &AtomicBool) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let mut line = String::new();
    if BufReader::new(s.take_line_limit())
        .read_line(&mut line)
        .is_err()
    {
        return;
    }
    let Ok(msg) = serde_json::from_str::<Control>(&line) else {
        return;
    };
    if msg.down {
        stop.store(true, Ordering::Relaxed);
        return;
    }
    let answer: Result<AgentReply, String> = match (msg.guest, msg.request) {
        (Some(g), Some(req)) => match lab.guests.iter().find(|x| x.name == g) {
            Some(guest) => guest
                .request(&req, Duration::from_millis(msg.within_ms))
                .map_err(|e| e.to_string()),
            None => Err(format!("the lab has no guest {g}")),
        },
        _ => Err("a request names a guest and what to do".into()),
    };
    if let Ok(mut out) = serde_json::to_vec(&answer) {
        out.push(b'\n');
        let _ = (&*s).write_all(&out);
    }
}

trait LineLimit: std::io::Read + Sized {
    /// At most one request's worth of bytes.
    fn take_line_limit(self) -> std::io::Take<Self> {
        self.take(agent::REQUEST_CAP as u64 + 4096)
    }
}
impl<R: std::io::Read> LineLimit for R {}
