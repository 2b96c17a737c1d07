//! Peers of the previous release interoperate with this one, both ways: an old client against
//! this server and this client against an old server, for TCP and UDP bandwidth and TCP and
//! UDP latency, on loopback.
//!
//! The old binary is built from git history: commit [`PREVIOUS`] checked out in a throwaway
//! worktree, built with its own target directory (`target/previous-release/`, kept, so a second
//! run only rebuilds what changed), the worktree removed again. `LINERATE_PREVIOUS_BIN` names an
//! already built one instead. Without the commit in the repository's history (a shallow clone)
//! the test records a skip, which fails under `LINERATE_REQUIRE_PRIVILEGED=1` (CI).
//!
//! The golden transcripts in `crates/linerate-proto/tests/golden/` check the same messages
//! field by field without a build.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

/// The previous release: the commit before the host facts became typed on the wire.
const PREVIOUS: &str = "43439da";
const NEW: &str = env!("CARGO_BIN_EXE_linerate");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository")
}

fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Removes the worktree however the build ends.
struct Worktree(PathBuf);

impl Drop for Worktree {
    fn drop(&mut self) {
        let _ = git(&["worktree", "remove", "--force", &self.0.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = git(&["worktree", "prune"]);
    }
}

/// The previous release's binary, built once; `Err` says why it cannot be had here.
fn previous_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("LINERATE_PREVIOUS_BIN") {
        return Ok(PathBuf::from(p));
    }
    git(&["cat-file", "-e", &format!("{PREVIOUS}^{{commit}}")])
        .map_err(|e| format!("commit {PREVIOUS} is not in this clone's history ({e})"))?;
    let dir = repo().join("target/previous-release");
    let bin = dir.join(format!("linerate-{PREVIOUS}"));
    if bin.is_file() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tree = Worktree(dir.join(format!("src-{}", std::process::id())));
    git(&[
        "worktree",
        "add",
        "--detach",
        &tree.0.to_string_lossy(),
        PREVIOUS,
    ])?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = dir.join("target");
    let status = Command::new(cargo)
        .args(["build", "--locked", "-p", "linerate", "--manifest-path"])
        .arg(tree.0.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("CARGO_MANIFEST_DIR")
        .status()
        .map_err(|e| format!("cargo build of {PREVIOUS}: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build of {PREVIOUS} failed ({status})"));
    }
    std::fs::copy(target.join("debug/linerate"), &bin)
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    Ok(bin)
}

/// A `linerate serve` on loopback (the binary given), its log lines collected; killed on drop.
struct Server {
    child: Child,
    port: u16,
    log: mpsc::Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(bin: &Path) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(bin)
        .args(["serve", "-B", "127.0.0.1", "-p", &port.to_string()])
        .args(["--max-duration", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    // Ended on drop, also when it does not come up; it listens once it says so (its first
    // line, `listening`, in both releases).
    let mut s = Server {
        child,
        port,
        log: mpsc::channel().1,
    };
    let (_, log) = common::await_listening(&mut s.child);
    s.log = log;
    s
}

/// One bench run; its JSON document, or what went wrong.
fn bench(bin: &Path, port: u16, args: &[&str]) -> Result<Value, String> {
    let out = Command::new(bin)
        .args([
            "bench",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "--json",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "exit {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON ({e})"))
}

/// What each side must see: the test ran, measured, and both ends' interface came across.
fn check(kind: &str, doc: &Value, server_log: &[Value]) -> Vec<String> {
    let mut bad = Vec::new();
    let tests = doc["tests"].as_array().map_or(0, Vec::len);
    if tests != 1 {
        return vec![format!("{tests} tests in the document")];
    }
    let doc = &doc["tests"][0];
    if !doc["error"].is_null() {
        bad.push(format!("error: {}", doc["error"]));
    }
    if doc["kind"] != kind {
        bad.push(format!("kind {} (wanted {kind})", doc["kind"]));
    }
    let measured = if kind.ends_with("_lat") {
        doc["latency_us"]["p50"].as_f64()
    } else {
        doc["gbps"].as_f64()
    };
    if !measured.is_some_and(|x| x > 0.0) {
        bad.push("nothing measured".into());
    }
    for end in ["local", "remote"] {
        let e = &doc[end];
        if e["address"] != "127.0.0.1" || e["kind"] != "loopback" || e["name"] != "lo" {
            bad.push(format!("{end} interface: {e}"));
        }
    }
    if !server_log
        .iter()
        .any(|l| l["event"] == "test" && l["kind"] == kind && l["result"] == "ok")
    {
        bad.push(format!("the server logged no {kind} test that ended ok"));
    }
    bad
}

#[test]
fn previous_release_and_this_one_interoperate_both_ways() {
    let old = match previous_binary() {
        Ok(b) => b,
        Err(why) => {
            linerate_testkit::skip(format!("no previous release to test against: {why}"));
            return;
        }
    };
    let new = PathBuf::from(NEW);
    let kinds: [(&str, &[&str]); 4] = [
        ("tcp_bw", &[]),
        ("udp_bw", &["-u", "-b", "200M"]),
        ("tcp_lat", &["--latency"]),
        ("udp_lat", &["--test", "udp-lat"]),
    ];
    let mut failures = Vec::new();
    for (server_bin, client_bin, pairing) in [
        (&new, &old, "old client → new server"),
        (&old, &new, "new client → old server"),
    ] {
        let server = serve(server_bin);
        for (kind, args) in kinds {
            let result = bench(client_bin, server.port, args);
            // The server logs a test once it has sent its results: give it a moment.
            let until = Instant::now() + Duration::from_secs(5);
            let mut log = Vec::new();
            while Instant::now() < until {
                match server.log.recv_timeout(Duration::from_millis(100)) {
                    Ok(l) => log.push(serde_json::from_str(&l).unwrap_or(Value::Null)),
                    Err(_) if log.iter().any(|l: &Value| l["event"] == "test") => break,
                    Err(_) => {}
                }
            }
            match result {
                Ok(doc) => failures.extend(
                    check(kind, &doc, &log)
                        .into_iter()
                        .map(|b| format!("{pairing}, {kind}: {b}")),
                ),
                Err(e) => failures.push(format!("{pairing}, {kind}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
