//! The shared-directory rendezvous: rank 0 writes its address to a file named by the job
//! (temp file + rename, so a reader sees all of it or nothing); the others poll for it until
//! the timeout, and refuse a file an older run left behind (another job key, another size, or
//! written longer before this rank started than the timeout allows).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{listen_published, Coordinator, Method, RendezvousError, Request};

/// How often the other ranks look for the file.
const POLL: Duration = Duration::from_millis(100);
/// The longest job key kept in a file name (the rest is cut).
const MAX_KEY: usize = 128;
/// A rendezvous file is a few hundred bytes; anything larger is not ours.
const MAX_FILE: u64 = 64 * 1024;

/// What rank 0 writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    job: String,
    size: u32,
    addr: String,
    host: String,
    pid: u32,
    written_unix_ms: u64,
}

/// Rank 0's rendezvous file, removed when dropped (the end of the run).
#[derive(Debug)]
pub(super) struct Published {
    path: PathBuf,
}

impl Drop for Published {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The job key: `--job`, else the launcher's job id (`SLURM_JOB_ID`, with `.SLURM_STEP_ID`
/// when set; else `PMIX_NAMESPACE`), with where it came from.
pub fn job_key(
    job: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, &'static str)> {
    if let Some(j) = job {
        return Some((j.to_string(), "--job"));
    }
    if let Some(id) = env("SLURM_JOB_ID") {
        return Some(match env("SLURM_STEP_ID") {
            Some(step) => (format!("{id}.{step}"), "SLURM_JOB_ID.SLURM_STEP_ID"),
            None => (id, "SLURM_JOB_ID"),
        });
    }
    env("PMIX_NAMESPACE").map(|ns| (ns, "PMIX_NAMESPACE"))
}

/// The rendezvous file of job `key` in `dir`: `linerate-mesh-KEY.coord`, with every character
/// but letters, digits, `.`, `-` and `_` replaced by `_` (a key cannot name another directory).
pub fn coordinator_file(dir: &Path, key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .take(MAX_KEY)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("linerate-mesh-{safe}.coord"))
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(super) fn exchange(
    req: &Request,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    started: SystemTime,
) -> Result<Coordinator, RendezvousError> {
    let err = |what: String| RendezvousError::Directory {
        dir: dir.to_path_buf(),
        what,
    };
    if !dir.is_dir() {
        return Err(err("not a directory (expected one every rank sees)".into()));
    }
    let (key, _from) = job_key(req.job.as_deref(), env).ok_or_else(|| {
        err("no job key: pass --job NAME (the same on every rank and new for each run), or run under a launcher that sets SLURM_JOB_ID or PMIX_NAMESPACE".into())
    })?;
    if key.trim().is_empty() {
        return Err(err("the job key is empty: pass --job NAME".into()));
    }
    let path = coordinator_file(dir, &key);
    if req.rank == 0 {
        let (listener, addr) = listen_published(req, Method::Directory)?;
        let rec = Record {
            job: key,
            size: req.size,
            addr: addr.clone(),
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            pid: std::process::id(),
            written_unix_ms: unix_ms(SystemTime::now()),
        };
        write_atomically(&path, &rec)
            .map_err(|e| err(format!("writing {}: {e}", path.display())))?;
        let mut c = Coordinator::new(addr, Method::Directory, Some(listener));
        c.published = Some(Published { path });
        return Ok(c);
    }
    let addr = poll(&path, &key, req, started).map_err(err)?;
    Ok(Coordinator::new(addr, Method::Directory, None))
}

fn write_atomically(path: &Path, rec: &Record) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(rec).map_err(std::io::Error::other)?)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Why the file at hand is not this run's (None: it is).
fn refuse(rec: &Record, key: &str, size: u32, oldest_ms: u64) -> Option<String> {
    if rec.job != key {
        return Some(format!("it is for job {:?}, not {key:?}", rec.job));
    }
    if rec.size != size {
        return Some(format!(
            "it is for a run of {} ranks, this one has {size}",
            rec.size
        ));
    }
    if rec.written_unix_ms < oldest_ms {
        return Some(format!(
            "it was written {:.0} s before this rank started, by pid {} on {:?}: an older run's",
            (oldest_ms.saturating_sub(rec.written_unix_ms)) as f64 / 1000.0,
            rec.pid,
            rec.host
        ));
    }
    None
}

fn read_record(path: &Path) -> Result<Option<Record>, String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
        Ok(m) if m.len() > MAX_FILE => {
            return Err(format!(
                "it is {} bytes, not a linerate rendezvous file",
                m.len()
            ))
        }
        Ok(_) => {}
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("not a linerate rendezvous file ({e})"))
}

fn poll(path: &Path, key: &str, req: &Request, started: SystemTime) -> Result<String, String> {
    // Rank 0 may have started up to the timeout before this rank did; earlier is stale.
    let oldest_ms =
        unix_ms(started).saturating_sub(u64::try_from(req.timeout.as_millis()).unwrap_or(u64::MAX));
    let deadline = Instant::now() + req.timeout;
    let mut refused = None;
    loop {
        match read_record(path) {
            Ok(Some(rec)) => match refuse(&rec, key, req.size, oldest_ms) {
                None => return Ok(rec.addr),
                Some(why) => refused = Some(why),
            },
            Ok(None) => {}
            Err(why) => refused = Some(why),
        }
        if Instant::now() >= deadline {
            let secs = req.timeout.as_secs();
            return Err(match refused {
                Some(why) => format!(
                    "{} was refused ({why}) and rank 0 did not replace it within {secs} s; is rank 0 running with the same --rendezvous-dir and --job?",
                    path.display()
                ),
                None => format!(
                    "rank 0 did not write {} within {secs} s; is rank 0 running with the same --rendezvous-dir and --job, and does every rank see the same directory?",
                    path.display()
                ),
            });
        }
        thread::sleep(POLL);
    }
}
