//! The guest agent: its protocol (one JSON object per line each way over the agent's
//! virtio-serial port, a reply for every request, in order) and its loop, which runs inside the
//! guest as the command virtme-ng starts.
//!
//! The agent's lifelines: when the host end of its port closes (the harness ended, however it
//! ended), or after `--max-life` seconds, it ends every command it started and exits, and
//! virtme-ng's init then powers the guest off. Every command runs in a process group of its
//! own under a deadline; its output is kept up to [`OUTPUT_CAP`] bytes per stream.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};
use serde::{Deserialize, Serialize};

/// The most output kept of each stream of a command (the rest is read and dropped).
pub const OUTPUT_CAP: usize = 8 << 20;
/// The longest request line the agent reads.
pub const REQUEST_CAP: usize = 1 << 20;
/// The longest deadline a command may ask for.
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// What the host asks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AgentRequest {
    /// Are you up? (The first request: answered once the guest has booted.)
    Ping,
    /// Run `sh -c SH` to its end or its deadline, with `stdin` as its input.
    Run {
        sh: String,
        timeout_ms: u64,
        #[serde(default)]
        env: Vec<(String, String)>,
        #[serde(default)]
        stdin: Option<String>,
    },
    /// Start `sh -c SH` in the background; its output goes to files until [`AgentRequest::Wait`].
    Spawn {
        sh: String,
        #[serde(default)]
        env: Vec<(String, String)>,
    },
    /// Wait up to `timeout_ms` for a spawned command's end.
    Wait { id: u64, timeout_ms: u64 },
    /// Wait up to `timeout_ms` for a line of a spawned command's standard output that
    /// contains `text` (a server's "listening" line): [`AgentReply::Seen`] with that line,
    /// [`AgentReply::Done`] if the command ended first, [`AgentReply::Running`] if neither.
    WaitOutput {
        id: u64,
        text: String,
        timeout_ms: u64,
    },
    /// Send `signal` to a spawned command's process group.
    Signal { id: u64, signal: i32 },
}

/// What the agent answers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum AgentReply {
    Pong {
        kernel: String,
        hostname: String,
        uptime_s: f64,
    },
    Done(Output),
    Spawned {
        id: u64,
        pid: u32,
    },
    Running {
        id: u64,
    },
    /// The line a [`AgentRequest::WaitOutput`] waited for.
    Seen {
        line: String,
    },
    Signalled,
    Error {
        message: String,
    },
}

/// How a command ended and what it printed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Output {
    pub status: Status,
    pub stdout: String,
    pub stderr: String,
    pub elapsed_ms: u64,
    /// Some output was dropped beyond [`OUTPUT_CAP`].
    pub truncated: bool,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Exited(i32),
    Signalled(i32),
    /// Its deadline passed: its process group was killed.
    TimedOut,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status == Status::Exited(0)
    }
}

/// The device node of the virtio-serial port named `name`, from
/// `/sys/class/virtio-ports/*/name` (no udev needed).
pub fn find_port(name: &str) -> Result<PathBuf, String> {
    let class = Path::new("/sys/class/virtio-ports");
    let entries = std::fs::read_dir(class).map_err(|e| format!("{}: {e}", class.display()))?;
    for e in entries.flatten() {
        let n = std::fs::read_to_string(e.path().join("name")).unwrap_or_default();
        if n.trim() == name {
            return Ok(Path::new("/dev").join(e.file_name()));
        }
    }
    Err(format!(
        "no virtio-serial port named {name} under {}",
        class.display()
    ))
}

struct Spawned {
    child: Child,
    out: PathBuf,
    err: PathBuf,
    started: Instant,
}

/// The agent's state: the commands it started in the background.
struct Agent {
    spawned: BTreeMap<u64, Spawned>,
    next: u64,
    dir: PathBuf,
}

/// Serve requests from `port` until its host end closes or `max_life` passes; then end every
/// command started and return.
pub fn serve(port: &Path, max_life: Duration) -> Result<(), String> {
    let dir = std::env::temp_dir().join("linerate-lab-agent");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(port)
        .map_err(|e| format!("{}: {e}", port.display()))?;
    let mut w = f.try_clone().map_err(|e| e.to_string())?;
    // The absolute bound: whatever the host does, this guest ends.
    std::thread::spawn(move || {
        std::thread::sleep(max_life);
        eprintln!("linerate-lab agent: --max-life reached, powering off");
        std::process::exit(3);
    });
    let mut agent = Agent {
        spawned: BTreeMap::new(),
        next: 1,
        dir,
    };
    let mut r = BufReader::new(f);
    let result = loop {
        let mut line = Vec::new();
        match (&mut r)
            .take(REQUEST_CAP as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => break Ok(()),
            Ok(_) if line.len() > REQUEST_CAP => {
                break Err(format!("a request longer than {REQUEST_CAP} bytes"))
            }
            Ok(_) => {}
            Err(e) => break Err(format!("reading {}: {e}", port.display())),
        }
        let reply = match serde_json::from_slice::<AgentRequest>(&line) {
            Ok(req) => agent.handle(req),
            Err(e) => AgentReply::Error {
                message: format!("not a request: {e}"),
            },
        };
        let mut out = serde_json::to_vec(&reply).map_err(|e| e.to_string())?;
        out.push(b'\n');
        if let Err(e) = w.write_all(&out).and_then(|()| w.flush()) {
            break Err(format!("writing {}: {e}", port.display()));
        }
    };
    agent.end_all();
    result
}

impl Agent {
    fn handle(&mut self, req: AgentRequest) -> AgentReply {
        match req {
            AgentRequest::Ping => AgentReply::Pong {
                kernel: read_trim("/proc/sys/kernel/osrelease"),
                hostname: read_trim("/proc/sys/kernel/hostname"),
                uptime_s: read_trim("/proc/uptime")
                    .split_whitespace()
                    .next()
                    .and_then(|u| u.parse().ok())
                    .unwrap_or(0.0),
            },
            AgentRequest::Run {
                sh,
                timeout_ms,
                env,
                stdin,
            } => match run(&sh, &env, stdin, timeout_ms) {
                Ok(o) => AgentReply::Done(o),
                Err(message) => AgentReply::Error { message },
            },
            AgentRequest::Spawn { sh, env } => self.spawn(&sh, &env),
            AgentRequest::Wait { id, timeout_ms } => self.wait(id, timeout_ms),
            AgentRequest::WaitOutput {
                id,
                text,
                timeout_ms,
            } => self.wait_output(id, &text, timeout_ms),
            AgentRequest::Signal { id, signal } => {
                let Some(s) = self.spawned.get(&id) else {
                    return AgentReply::Error {
                        message: format!("no spawned command {id}"),
                    };
                };
                match (
                    i32::try_from(s.child.id()).ok().and_then(Pid::from_raw),
                    Signal::from_named_raw(signal),
                ) {
                    (Some(pid), Some(sig)) => {
                        let _ = kill_process_group(pid, sig);
                        AgentReply::Signalled
                    }
                    _ => AgentReply::Error {
                        message: format!("signal {signal}: not a signal"),
                    },
                }
            }
        }
    }

    fn spawn(&mut self, sh: &str, env: &[(String, String)]) -> AgentReply {
        let id = self.next;
        self.next += 1;
        let out = self.dir.join(format!("{id}.out"));
        let err = self.dir.join(format!("{id}.err"));
        let files = File::create(&out).and_then(|o| Ok((o, File::create(&err)?)));
        let (o, e) = match files {
            Ok(f) => f,
            Err(e) => {
                return AgentReply::Error {
                    message: format!("{}: {e}", self.dir.display()),
                }
            }
        };
        let child = Command::new("sh")
            .arg("-c")
            .arg(sh)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(o)
            .stderr(e)
            .process_group(0)
            .spawn();
        match child {
            Ok(child) => {
                let pid = child.id();
                self.spawned.insert(
                    id,
                    Spawned {
                        child,
                        out,
                        err,
                        started: Instant::now(),
                    },
                );
                AgentReply::Spawned { id, pid }
            }
            Err(e) => AgentReply::Error {
                message: format!("sh: {e}"),
            },
        }
    }

    fn wait(&mut self, id: u64, timeout_ms: u64) -> AgentReply {
        let Some(s) = self.spawned.get_mut(&id) else {
            return AgentReply::Error {
                message: format!("no spawned command {id}"),
            };
        };
        let deadline = Instant::now() + Duration::from_millis(timeout_ms.min(MAX_TIMEOUT_MS));
        let status = loop {
            match s.child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() >= deadline => return AgentReply::Running { id },
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => {
                    return AgentReply::Error {
                        message: format!("waiting for {id}: {e}"),
                    }
                }
            }
        };
        let s = self.spawned.remove(&id).expect("present above");
        let (stdout, t1) = read_capped(&s.out);
        let (stderr, t2) = read_capped(&s.err);
        let _ = std::fs::remove_file(&s.out);
        let _ = std::fs::remove_file(&s.err);
        AgentReply::Done(Output {
            status: exit_status(status),
            stdout,
            stderr,
            elapsed_ms: s.started.elapsed().as_millis() as u64,
            truncated: t1 || t2,
        })
    }

    fn wait_output(&mut self, id: u64, text: &str, timeout_ms: u64) -> AgentReply {
        let Some(s) = self.spawned.get_mut(&id) else {
            return AgentReply::Error {
                message: format!("no spawned command {id}"),
            };
        };
        let deadline = Instant::now() + Duration::from_millis(timeout_ms.min(MAX_TIMEOUT_MS));
        loop {
            // Its end first: a line written just before it ended is still read below.
            let ended = match s.child.try_wait() {
                Ok(st) => st.is_some(),
                Err(e) => {
                    return AgentReply::Error {
                        message: format!("waiting for {id}: {e}"),
                    }
                }
            };
            let (out, _) = read_capped(&s.out);
            // Whole lines only: the last may still be being written.
            let whole = out.rfind('\n').map_or("", |i| &out[..i]);
            if let Some(line) = whole.lines().find(|l| l.contains(text)) {
                return AgentReply::Seen {
                    line: line.to_string(),
                };
            }
            if ended {
                return self.wait(id, 0);
            }
            if Instant::now() >= deadline {
                return AgentReply::Running { id };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn end_all(&mut self) {
        for s in self.spawned.values_mut() {
            if let Some(pid) = i32::try_from(s.child.id()).ok().and_then(Pid::from_raw) {
                let _ = kill_process_group(pid, Signal::KILL);
            }
            let _ = s.child.wait();
        }
        self.spawned.clear();
    }
}

fn read_trim(p: &str) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn read_capped(p: &Path) -> (String, bool) {
    let mut buf = Vec::new();
    let n = File::open(p)
        .and_then(|f| f.take(OUTPUT_CAP as u64 + 1).read_to_end(&mut buf))
        .unwrap_or(0);
    let truncated = n > OUTPUT_CAP;
    buf.truncate(OUTPUT_CAP);
    (String::from_utf8_lossy(&buf).into_owned(), truncated)
}

fn exit_status(st: std::process::ExitStatus) -> Status {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => Status::Exited(c),
        (None, Some(s)) => Status::Signalled(s),
        (None, None) => Status::Exited(-1),
    }
}

/// Run `sh -c SH` to its end or `timeout_ms`, whichever comes first (then its process group is
/// killed). Used by the agent, and by its tests on the host.
pub fn run(
    sh: &str,
    env: &[(String, String)],
    stdin: Option<String>,
    timeout_ms: u64,
) -> Result<Output, String> {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(timeout_ms.min(MAX_TIMEOUT_MS));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(sh)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("sh: {e}"))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        std::thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let readers = [
        child.stdout.take().map(|p| reader(Box::new(p))),
        child.stderr.take().map(|p| reader(Box::new(p))),
    ];
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                if let Some(pid) = pid {
                    let _ = kill_process_group(pid, Signal::KILL);
                }
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for sh: {e}")),
        }
    };
    // A background process that kept the pipes open must not hold the answer: its group goes.
    if let Some(pid) = pid {
        let _ = kill_process_group(pid, Signal::KILL);
    }
    let mut outs = readers.map(|r| {
        r.and_then(|h| h.join().ok())
            .unwrap_or((String::new(), false))
    });
    let (stderr, t2) = std::mem::take(&mut outs[1]);
    let (stdout, t1) = std::mem::take(&mut outs[0]);
    Ok(Output {
        status: if timed_out {
            Status::TimedOut
        } else {
            status.map_or(Status::Exited(-1), exit_status)
        },
        stdout,
        stderr,
        elapsed_ms: started.elapsed().as_millis() as u64,
        truncated: t1 || t2,
    })
}

fn reader(mut p: Box<dyn Read + Send>) -> std::thread::JoinHandle<(String, bool)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut truncated = false;
        let mut buf = vec![0u8; 65536];
        loop {
            match p.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = OUTPUT_CAP.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    truncated |= n > room;
                }
            }
        }
        (String::from_utf8_lossy(&kept).into_owned(), truncated)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_are_one_json_object_each() {
        let r = AgentRequest::Run {
            sh: "echo hi".into(),
            timeout_ms: 1000,
            env: vec![],
            stdin: None,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"op":"run","sh":"echo hi","timeout_ms":1000,"env":[],"stdin":null}"#
        );
        assert_eq!(serde_json::from_str::<AgentRequest>(&s).unwrap(), r);
        assert_eq!(
            serde_json::from_str::<AgentRequest>(r#"{"op":"run","sh":"x","timeout_ms":5}"#)
                .unwrap(),
            AgentRequest::Run {
                sh: "x".into(),
                timeout_ms: 5,
                env: vec![],
                stdin: None
            }
        );
        assert!(serde_json::from_str::<AgentRequest>(r#"{"op":"format_disk"}"#).is_err());
    }

    #[test]
    fn a_command_gives_its_output_and_status() {
        let o = run(
            "echo out; echo err >&2; cat; exit 3",
            &[("X".into(), "1".into())],
            Some("in\n".into()),
            10_000,
        )
        .unwrap();
        assert_eq!(o.status, Status::Exited(3));
        assert_eq!(o.stdout, "out\nin\n");
        assert_eq!(o.stderr, "err\n");
        assert!(!o.truncated);
    }

    #[test]
    fn a_command_past_its_deadline_is_killed_with_its_children() {
        let o = run("sleep 30 & sleep 30", &[], None, 300).unwrap();
        assert_eq!(o.status, Status::TimedOut);
        assert!(o.elapsed_ms < 20_000, "{}", o.elapsed_ms);
    }

    #[test]
    fn output_beyond_the_cap_is_dropped_and_said() {
        let o = run(
            &format!("head -c {} /dev/zero", OUTPUT_CAP + 10),
            &[],
            None,
            60_000,
        )
        .unwrap();
        assert!(o.truncated);
        assert_eq!(o.stdout.len(), OUTPUT_CAP);
    }

    #[test]
    fn spawned_commands_are_waited_for_signalled_and_ended() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Agent {
            spawned: BTreeMap::new(),
            next: 1,
            dir: dir.path().to_path_buf(),
        };
        let AgentReply::Spawned { id, .. } = a.spawn("echo started; exec sleep 30", &[]) else {
            panic!()
        };
        assert_eq!(a.wait(id, 50), AgentReply::Running { id });
        assert_eq!(
            a.handle(AgentRequest::Signal { id, signal: 15 }),
            AgentReply::Signalled
        );
        let AgentReply::Done(o) = a.wait(id, 10_000) else {
            panic!()
        };
        assert_eq!(o.status, Status::Signalled(15));
        assert_eq!(o.stdout, "started\n");
        assert!(matches!(a.wait(id, 10), AgentReply::Error { .. }));
        let AgentReply::Spawned { .. } = a.spawn("sleep 30", &[]) else {
            panic!()
        };
        a.end_all();
        assert!(a.spawned.is_empty());
    }

    #[test]
    fn a_spawned_command_is_waited_for_until_it_prints_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Agent {
            spawned: BTreeMap::new(),
            next: 1,
            dir: dir.path().to_path_buf(),
        };
        // The line comes after a while, and half a line is not a line.
        let AgentReply::Spawned { id, .. } = a.spawn(
            r#"sleep 0.3; printf 'starting\n{"event":"listen'; sleep 0.3; printf 'ing"}\n'; exec sleep 30"#,
            &[],
        ) else {
            panic!()
        };
        assert_eq!(
            a.wait_output(id, "\"event\":\"listening\"", 10),
            AgentReply::Running { id }
        );
        assert_eq!(
            a.wait_output(id, "\"event\":\"listening\"", 10_000),
            AgentReply::Seen {
                line: "{\"event\":\"listening\"}".into()
            }
        );
        // Still running: its output is had when it ends.
        a.handle(AgentRequest::Signal { id, signal: 9 });
        let AgentReply::Done(o) = a.wait(id, 10_000) else {
            panic!()
        };
        assert!(o.stdout.starts_with("starting\n"), "{o:?}");
        // A command that ends without the line: its output, at once.
        let AgentReply::Spawned { id, .. } = a.spawn("echo refused >&2; exit 2", &[]) else {
            panic!()
        };
        let AgentReply::Done(o) = a.wait_output(id, "listening", 10_000) else {
            panic!()
        };
        assert_eq!(o.status, Status::Exited(2));
        assert_eq!(o.stderr, "refused\n");
        assert!(matches!(
            a.wait_output(id, "listening", 10),
            AgentReply::Error { .. }
        ));
        assert!(a.spawned.is_empty());
    }
}
