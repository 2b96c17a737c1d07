//! Scripted soaks over fixture trees, shared by `soak_cli` (passive soaks, no root) and
//! `netns_soak` (traffic between namespaces): a private copy of a fixture with extra ports,
//! counters set atomically while the soak reads them, and a `--json-stream` soak read event by
//! event, so a script can wait until the soak has seen one change before making the next.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_linerate");

/// Bits counted from port_rcv_data (×32) for a port to be judged: well above 3e12.
pub const DATA_STEP: u64 = 200_000_000_000;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name)
}

/// A copy of fixture `name` with its IB device `dev` duplicated under `copies` (same PCI
/// function, the class link added): several ports to script on one end.
pub fn tree(name: &str, dev: &str, copies: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new("cp")
        .arg("-a")
        .arg(fixture(name).join("."))
        .arg(dir.path())
        .output()
        .expect("cp");
    assert!(out.status.success(), "cp -a: {out:?}");
    let class = dir.path().join("sys/class/infiniband");
    let target = std::fs::read_link(class.join(dev)).expect("the device's class link");
    let real = class.join(&target);
    for c in copies {
        let out = Command::new("cp")
            .arg("-a")
            .arg(&real)
            .arg(real.with_file_name(c))
            .output()
            .expect("cp");
        assert!(out.status.success(), "cp -a: {out:?}");
        std::os::unix::fs::symlink(target.with_file_name(c), class.join(c)).expect("class link");
    }
    dir
}

/// Write `text` to `path` atomically (a reader never sees half a value).
fn put(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, text).expect("write a counter");
    std::fs::rename(&tmp, path).expect("rename a counter");
}

/// Set counter `name` of `dev` port 1 to `v`.
pub fn set(root: &Path, dev: &str, name: &str, v: u64) {
    put(
        &root.join(format!(
            "sys/class/infiniband/{dev}/ports/1/counters/{name}"
        )),
        &format!("{v}\n"),
    );
}

/// Set the `rate` of `dev` port 1 (`400 Gb/sec (4X NDR)`).
pub fn set_rate(root: &Path, dev: &str, rate: &str) {
    put(
        &root.join(format!("sys/class/infiniband/{dev}/ports/1/rate")),
        &format!("{rate}\n"),
    );
}

pub fn get(root: &Path, dev: &str, name: &str) -> u64 {
    let p = root.join(format!(
        "sys/class/infiniband/{dev}/ports/1/counters/{name}"
    ));
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .trim()
        .parse()
        .expect("a counter")
}

/// Add `DATA_STEP` to `dev`'s `port_rcv_data`: traffic counted on the port.
pub fn add_data(root: &Path, dev: &str) {
    set(
        root,
        dev,
        "port_rcv_data",
        get(root, dev, "port_rcv_data") + DATA_STEP,
    );
}

/// A soak started with `--json-stream`, read one event at a time.
pub struct Stream {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every event read so far.
    pub events: Vec<Value>,
    stderr: mpsc::Receiver<String>,
}

impl Stream {
    /// Starts `cmd` (a `linerate soak ... --json-stream`, under `timeout`), its stdout read by
    /// a thread.
    pub fn start(mut cmd: Command) -> Stream {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn linerate soak");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let (etx, stderr) = mpsc::channel();
        let err = child.stderr.take().expect("stderr");
        thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = etx.send(l);
            }
        });
        Stream {
            child,
            lines,
            events: Vec::new(),
            stderr,
        }
    }

    /// The next event, within `limit`; `None` at the end of the stream or past the limit.
    pub fn next(&mut self, limit: Duration) -> Option<&Value> {
        let line = self.lines.recv_timeout(limit).ok()?;
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.events.push(v);
        self.events.last()
    }

    /// Reads events until one matches `pred` (within 30 s in all); panics if the stream ends
    /// or the time runs out first.
    pub fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(v) if pred(v) => return v.clone(),
                Some(_) => {}
                None => panic!(
                    "the soak ended or stalled before {what}: {:#?}\nstderr: {}",
                    self.events,
                    self.stderr()
                ),
            }
        }
    }

    /// Waits for the `n`th interval event of `end`.
    pub fn interval(&mut self, end: &str, n: usize) {
        let seen = |events: &[Value]| {
            events
                .iter()
                .filter(|e| e["event"] == "interval" && e["interval"]["end"] == end)
                .count()
        };
        while seen(&self.events) < n {
            self.until(&format!("interval {n} of the {end} end"), |e| {
                e["event"] == "interval" && e["interval"]["end"] == end
            });
        }
    }

    /// Waits for an interval in which `device`'s counter `name` was reset (the soak saw the
    /// clear), so that what is written next lands in a later sample.
    pub fn reset_seen(&mut self, device: &str, name: &str) {
        self.until(&format!("{device} {name} reset"), |e| {
            e["interval"]["moved"].as_array().is_some_and(|m| {
                m.iter()
                    .any(|c| c["device"] == device && c["name"] == name && c["reset"] == true)
            })
        });
    }

    /// Reads to the end; returns the exit status and the final document (the `end` event's).
    pub fn finish(mut self) -> (Option<i32>, Value) {
        while self.next(Duration::from_secs(60)).is_some() {}
        let status = self.child.wait().expect("wait for linerate soak");
        let end = self
            .events
            .iter()
            .rev()
            .find(|e| e["event"] == "end")
            .unwrap_or_else(|| {
                panic!(
                    "no end event: {:#?}\nstderr: {}",
                    self.events,
                    self.stderr()
                )
            })
            .clone();
        (status.code(), end["report"].clone())
    }

    fn stderr(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// The first line of its stderr holding `text`, within `limit` (a panic otherwise).
    pub fn stderr_line(&mut self, text: &str, limit: Duration) -> String {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(l) if l.contains(text) => return l,
                Ok(_) => {}
                Err(e) => panic!("no line with `{text}` on stderr within {limit:?} ({e})"),
            }
        }
    }

    /// The process id of the command started.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port of the document.
pub fn port<'a>(doc: &'a Value, end: &str, device: &str) -> &'a Value {
    doc["ends"]
        .as_array()
        .expect("ends")
        .iter()
        .filter(|e| e["end"] == end)
        .flat_map(|e| e["ports"].as_array().expect("ports"))
        .find(|p| p["device"] == device && p["port"] == "1")
        .unwrap_or_else(|| panic!("no {end} port {device}/1 in {doc}"))
}

pub fn counter<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["counters"]
        .as_array()
        .expect("counters")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no counter {name} in {p}"))
}

/// The findings of a port with rule `rule`.
pub fn findings<'a>(p: &'a Value, rule: &str) -> Vec<&'a Value> {
    p["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

pub fn verdict(p: &Value) -> (&str, &str) {
    (
        p["verdict"].as_str().expect("verdict"),
        p["rule"].as_str().expect("rule"),
    )
}
