//! `--ssh-copy`: a far end without linerate (or with one that speaks an older protocol) gets a
//! copy of this very binary, over the ssh session that then runs it, and keeps nothing of it.
//!
//! One ssh session, one POSIX shell script ([`SCRIPT`], run by `sh -c` under the login's shell,
//! tested under dash, bash and busybox sh) that:
//! 1. says the far end's machine (`uname -m`) and C library (`getconf GNU_LIBC_VERSION`, else
//!    `ldd --version`), so this end refuses, naming both sides, a far end that cannot run it;
//! 2. makes a private directory (mode 0700, `mktemp -d`) in `$XDG_RUNTIME_DIR`, `$TMPDIR` or
//!    `/tmp`, `/var/tmp`, `/dev/shm` or the home directory: the first where a file can be
//!    executed (a `noexec` mount is tried with a two-line script, said, and passed over);
//! 3. takes exactly the binary's size in bytes from its stdin (`head -c`), checks its SHA-256
//!    and says `received`: only then does this end write the server's key, so no byte of the
//!    key can be read into the copy;
//! 4. `exec`s the copy as `linerate serve`, which removes its own file and directory before
//!    anything else ([`remove_own_copy`]): the far end keeps nothing from then on, however the
//!    run ends. Until then the script's trap removes the directory on every exit (a short
//!    copy, a wrong checksum, a dropped connection, a signal).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::elf::{glibc_needed, Glibc};
use crate::error::{Said, SshError};
use crate::listening::Listening;
use crate::session::{found_by, Found, Session};

/// When `--ssh` copies this binary to the far end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CopyMode {
    /// Never: the far end must have linerate.
    Never,
    /// When the far end has no `linerate` on its PATH, or one that speaks an older protocol
    /// (only for the default program: `--ssh-command` names the one to run).
    #[default]
    Auto,
    /// Always, whatever the far end has.
    Always,
}

/// The environment variable the copy is started with: the private directory it removes,
/// with itself, before anything else.
pub const REMOVE_ON_START_ENV: &str = "LINERATE_REMOVE_ON_START";

/// The prefix of the copy's private directory's name.
const DIR_PREFIX: &str = "linerate-copy.";

/// What was copied to the far end, for the output.
#[derive(Debug, Clone, PartialEq)]
pub struct Copied {
    /// Why: `--ssh-copy always`, `no linerate on its PATH`, `its linerate speaks protocol 0`.
    pub reason: String,
    /// The binary's size, bytes.
    pub bytes: u64,
    pub sha256: String,
    /// From the first byte sent to the far end's checksum checked, seconds.
    pub seconds: f64,
    /// The private directory on the far end it ran from (removed once its server started).
    pub directory: String,
    /// The far end's `uname -m`.
    pub machine: String,
    /// The far end's C library, as it said it (`glibc 2.31`).
    pub libc: String,
    /// Directories passed over because nothing can be executed there (`noexec`).
    pub noexec: Vec<String>,
}

impl Copied {
    /// One line for a person: what went where, its size and time.
    pub fn describe(&self, host: &str) -> String {
        let mut s = format!(
            "copied this linerate ({:.1} MiB, sha256 {}…) to {host}:{} in {:.2} s ({}; {} {}); removed there once its server started",
            self.bytes as f64 / f64::from(1u32 << 20),
            self.sha256.get(..12).unwrap_or(&self.sha256),
            self.directory,
            self.seconds,
            self.reason,
            self.machine,
            self.libc,
        );
        if !self.noexec.is_empty() {
            let _ = write!(
                s,
                "; passed over {} (mounted noexec)",
                self.noexec.join(", ")
            );
        }
        s
    }
}

/// The far end's side of the copy. `$1`: the size in bytes, `$2`: the SHA-256 (hex), the
/// rest: the copy's arguments. Lines it says start with `linerate-copy: `.
pub(crate) const SCRIPT: &str = r#"umask 077
size=$1
sum=$2
shift 2
say() { printf 'linerate-copy: %s\n' "$*"; }
d=
gone() { if [ -n "$d" ]; then rm -rf "$d"; d=; fi; }
trap gone EXIT
trap 'exit 1' HUP INT TERM PIPE
say "machine $(uname -m 2>/dev/null)"
libc=$(getconf GNU_LIBC_VERSION 2>/dev/null) || libc=
[ -n "$libc" ] || libc=$(ldd --version 2>&1 | head -n 1)
say "libc ${libc:-unknown}"
for base in "${XDG_RUNTIME_DIR:-}" "${TMPDIR:-/tmp}" /var/tmp /dev/shm "${HOME:-}"; do
    [ -n "$base" ] && [ -d "$base" ] && [ -w "$base" ] || continue
    d=$(mktemp -d "$base/linerate-copy.XXXXXXXX" 2>/dev/null) || { d=; continue; }
    chmod 700 "$d"
    printf '#!/bin/sh\nexit 0\n' >"$d/exec-check" && chmod 700 "$d/exec-check"
    if "$d/exec-check" 2>/dev/null; then
        rm -f "$d/exec-check"
        break
    fi
    say "noexec $base"
    gone
done
if [ -z "$d" ]; then
    say "nodir"
    exit 1
fi
say "dir $d"
head -c "$size" >"$d/linerate"
got=$(sha256sum <"$d/linerate" 2>/dev/null) || got=
got=${got%% *}
if [ -z "$got" ]; then
    say "error sha256sum cannot be run"
    exit 1
fi
if [ "$got" != "$sum" ]; then
    say "error received $(wc -c <"$d/linerate") bytes of sha256 $got"
    exit 1
fi
chmod 700 "$d/linerate"
say "received"
LINERATE_REMOVE_ON_START=$d
export LINERATE_REMOVE_ON_START
exec "$d/linerate" "$@"
"#;

/// A line of the copy session's stdout.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CopyLine {
    Machine(String),
    Libc(String),
    NoExec(String),
    Dir(String),
    NoDir,
    Received,
    Error(String),
    Listening(Listening),
}

/// The script's lines and the server's `listening` event; None for anything else.
pub(crate) fn copy_line(line: &str) -> Option<CopyLine> {
    let Some(rest) = line.trim().strip_prefix("linerate-copy: ") else {
        return crate::listening::listening(line).map(CopyLine::Listening);
    };
    let (word, value) = rest.split_once(' ').unwrap_or((rest, ""));
    let value = value.trim().to_string();
    Some(match word {
        "machine" => CopyLine::Machine(value),
        "libc" => CopyLine::Libc(value),
        "noexec" => CopyLine::NoExec(value),
        "dir" => CopyLine::Dir(value),
        "nodir" => CopyLine::NoDir,
        "received" => CopyLine::Received,
        "error" => CopyLine::Error(value),
        _ => return None,
    })
}

/// The far end's C library as its `getconf GNU_LIBC_VERSION` (`glibc 2.31`) or `ldd --version`
/// (`ldd (Debian GLIBC 2.31-13+deb11u5) 2.31`) said it: its glibc release, or None for another
/// C library (musl) or nothing said.
pub(crate) fn far_glibc(said: &str) -> Option<Glibc> {
    let lower = said.to_ascii_lowercase();
    if !(lower.contains("glibc") || lower.contains("gnu libc")) {
        return None;
    }
    said.split_whitespace().rev().find_map(Glibc::parse)
}

/// Why this binary (for `ours_machine`, needing glibc `need`) cannot run on a far end of
/// `machine` and C library `libc`: None when it can.
pub(crate) fn refusal(
    ours_machine: &str,
    need: Option<Glibc>,
    machine: &str,
    libc: &str,
) -> Option<String> {
    let ours = need.map_or_else(
        || format!("this linerate is built for {ours_machine}"),
        |g| format!("this linerate is built for {ours_machine} with glibc {g} or newer"),
    );
    if machine != ours_machine {
        return Some(format!(
            "the far end's machine is {} (`uname -m`), {ours}",
            if machine.is_empty() {
                "not said"
            } else {
                machine
            }
        ));
    }
    let need = need?;
    match far_glibc(libc) {
        Some(g) if g >= need => None,
        Some(g) => Some(format!("the far end's C library is glibc {g}, {ours}")),
        None => Some(format!(
            "the far end's C library is `{}`, not glibc, {ours}",
            if libc.is_empty() { "unknown" } else { libc }
        )),
    }
}

/// Start the copy as `linerate SERVE_WORDS...` on `host` and wait until it listens: the session,
/// what its reader finds next, and what was copied.
pub(crate) fn start(
    ssh: &crate::Ssh,
    host: &str,
    serve_words: &[String],
    reason: String,
    key: &str,
) -> Result<(Session, Listening, Copied), SshError> {
    let exe = Path::new("/proc/self/exe");
    let bytes = std::fs::read(exe).map_err(|err| SshError::CopyFailed {
        host: host.to_string(),
        why: format!("reading this binary ({}): {err}", exe.display()),
        said: Said::default(),
    })?;
    let need = glibc_needed(&bytes).map_err(|e| SshError::CopyFailed {
        host: host.to_string(),
        why: format!("reading this binary's glibc needs: {e}"),
        said: Said::default(),
    })?;
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    let size = bytes.len().to_string();
    let mut words: Vec<&str> = vec!["exec", "sh", "-c", SCRIPT, "linerate-copy", &size, &sha256];
    words.extend(serve_words.iter().map(String::as_str));
    let remote = crate::remote_command(&words)?;
    let args = crate::Ssh::args(host, crate::ssh::Tty::None, remote);
    let (mut session, lines) = Session::spawn_each(
        ssh.command(&args),
        copy_line,
        format!("linerate: far end on {host}: "),
    )
    .map_err(|err| SshError::Spawn {
        program: ssh.describe(),
        err,
    })?;
    let mut c = Copied {
        reason,
        bytes: bytes.len() as u64,
        sha256,
        seconds: 0.0,
        directory: String::new(),
        machine: String::new(),
        libc: String::new(),
        noexec: Vec::new(),
    };
    let fail = |session: &mut Session, why: String| failed(session, host, why);
    // 1-2: what the far end is, and where the copy goes.
    far_end_facts(&mut session, &lines, host, &mut c)?;
    if let Some(why) = refusal(std::env::consts::ARCH, need, &c.machine, &c.libc) {
        // Its stdin closed: it receives nothing, removes its directory and ends.
        session.end(crate::STOP_TIMEOUT);
        return Err(SshError::CopyRefused {
            host: host.to_string(),
            why,
        });
    }
    // 3: the bytes, written by a thread (a far end that stops reading must not hang this one),
    // and the far end's check.
    let started = Instant::now();
    let writer = session.take_stdin().map(|mut stdin| {
        std::thread::spawn(move || {
            let r = stdin.write_all(&bytes).and_then(|()| stdin.flush());
            r.map(|()| stdin)
        })
    });
    let budget = crate::START_TIMEOUT + Duration::from_secs(c.bytes / COPY_MIN_BYTES_PER_S);
    let got = next(&lines, Instant::now() + budget);
    c.seconds = started.elapsed().as_secs_f64();
    match got {
        Some(CopyLine::Received) => {}
        Some(CopyLine::Error(e)) => return Err(fail(&mut session, e)),
        None => {
            let why = format!(
                "the far end had not received the {} bytes within {} s (at least {} KiB/s are expected)",
                c.bytes,
                budget.as_secs(),
                COPY_MIN_BYTES_PER_S / 1024
            );
            return Err(fail(&mut session, why));
        }
        other => return Err(no_step(&mut session, host, other, "receive the copy")),
    }
    if let Some(Ok(Ok(stdin))) = writer.map(std::thread::JoinHandle::join) {
        session.put_stdin(stdin);
    }
    // 4: the key on the server's stdin, then its `listening` line.
    session.write_stdin(format!("{key}\n").as_bytes());
    match next(&lines, Instant::now() + crate::START_TIMEOUT) {
        Some(CopyLine::Listening(l)) => Ok((session, l, c)),
        other => Err(no_step(&mut session, host, other, "start its server")),
    }
}

/// The copy failed for `why`: end the session and quote what it said.
fn failed(session: &mut Session, host: &str, why: String) -> SshError {
    session.hang_up();
    SshError::CopyFailed {
        host: host.to_string(),
        why,
        said: Said::new(&format!(
            "{}{}",
            session.stdout_text(Duration::from_secs(1)),
            session.stderr_text(Duration::from_secs(1))
        )),
    }
}

/// The script's first lines into `c`: the far end's machine, C library, the directories
/// passed over, and the private directory made for the copy.
fn far_end_facts(
    session: &mut Session,
    lines: &Receiver<Found<CopyLine>>,
    host: &str,
    c: &mut Copied,
) -> Result<(), SshError> {
    let until = Instant::now() + crate::START_TIMEOUT;
    loop {
        match next(lines, until) {
            Some(CopyLine::Machine(m)) => c.machine = m,
            Some(CopyLine::Libc(l)) => c.libc = l,
            Some(CopyLine::NoExec(d)) => c.noexec.push(d),
            Some(CopyLine::Dir(d)) => {
                c.directory = d;
                return Ok(());
            }
            Some(CopyLine::NoDir) => {
                let noexec = if c.noexec.is_empty() {
                    String::new()
                } else {
                    format!(" ({} noexec)", c.noexec.join(", "))
                };
                let why = format!("no directory there takes an executable file: $XDG_RUNTIME_DIR, $TMPDIR or /tmp, /var/tmp, /dev/shm and the home directory are missing, not writable or mounted noexec{noexec}");
                return Err(failed(session, host, why));
            }
            other => return Err(no_step(session, host, other, "say what it is")),
        }
    }
}

/// The slowest copy waited for, bytes per second (on top of `START_TIMEOUT`): a 7 MiB binary
/// over a 1 Mb/s management link.
const COPY_MIN_BYTES_PER_S: u64 = 100 * 1024;

fn next(lines: &Receiver<Found<CopyLine>>, until: Instant) -> Option<CopyLine> {
    match found_by(lines, until) {
        Some(Found::Line(l)) => Some(l),
        _ => None,
    }
}

/// The far end did not get to `step`: what it said instead, or that it said nothing in time.
fn no_step(session: &mut Session, host: &str, got: Option<CopyLine>, step: &str) -> SshError {
    let status = match got {
        Some(CopyLine::Error(e)) => e,
        Some(other) => format!("it said {other:?} instead"),
        None => "it ended or said nothing in time".into(),
    };
    let ended = session.end(Duration::from_secs(1));
    let said = Said::new(&format!(
        "{}{}",
        session.stdout_text(Duration::from_secs(1)),
        session.stderr_text(Duration::from_secs(1))
    ));
    let f = crate::error::classify(ended.and_then(|s| s.code()), &said);
    if let Some(e) = crate::error::ssh_error(f, host, said.clone()) {
        return e;
    }
    SshError::CopyFailed {
        host: host.to_string(),
        why: format!("the copy did not {step}: {status}"),
        said,
    }
}

/// Remove this executable and its private directory when it was started as a copy
/// ([`REMOVE_ON_START_ENV`], set by [`SCRIPT`]): called first thing in `main`. It removes only a
/// directory named like the script's, holding this executable, and owned by this user; the
/// running program keeps its file open and runs on.
pub fn remove_own_copy() {
    let Some(dir) = std::env::var_os(REMOVE_ON_START_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
        return;
    };
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(DIR_PREFIX));
    if !named || exe.parent() != Some(dir) {
        return;
    }
    let mine = std::fs::symlink_metadata(dir).is_ok_and(|m| {
        std::os::unix::fs::MetadataExt::uid(&m) == rustix::process::getuid().as_raw() && m.is_dir()
    });
    if mine {
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_lines_are_read() {
        assert_eq!(
            copy_line("linerate-copy: machine x86_64"),
            Some(CopyLine::Machine("x86_64".into()))
        );
        assert_eq!(
            copy_line("linerate-copy: libc glibc 2.31\r"),
            Some(CopyLine::Libc("glibc 2.31".into()))
        );
        assert_eq!(copy_line("linerate-copy: nodir"), Some(CopyLine::NoDir));
        assert_eq!(
            copy_line("linerate-copy: received"),
            Some(CopyLine::Received)
        );
        assert_eq!(copy_line("linerate-copy: whatever"), None);
        assert_eq!(copy_line("Welcome"), None);
        assert!(matches!(
            copy_line(r#"{"event":"listening","address":"0.0.0.0:4000","protocol":1}"#),
            Some(CopyLine::Listening(_))
        ));
    }

    #[test]
    fn the_far_ends_glibc_is_read_from_getconf_or_ldd() {
        assert_eq!(far_glibc("glibc 2.31"), Some(Glibc(2, 31)));
        assert_eq!(
            far_glibc("ldd (Debian GLIBC 2.31-13+deb11u5) 2.31"),
            Some(Glibc(2, 31))
        );
        assert_eq!(far_glibc("ldd (GNU libc) 2.28"), Some(Glibc(2, 28)));
        assert_eq!(far_glibc("musl libc (x86_64)"), None);
        assert_eq!(far_glibc("unknown"), None);
    }

    #[test]
    fn a_far_end_that_cannot_run_it_is_refused_naming_both_sides() {
        let need = Some(Glibc(2, 28));
        assert_eq!(refusal("x86_64", need, "x86_64", "glibc 2.31"), None);
        assert_eq!(refusal("x86_64", need, "x86_64", "glibc 2.28"), None);
        let arch = refusal("x86_64", need, "aarch64", "glibc 2.36").unwrap();
        assert!(
            arch.contains("aarch64") && arch.contains("x86_64"),
            "{arch}"
        );
        let old = refusal("x86_64", need, "x86_64", "glibc 2.17").unwrap();
        assert!(old.contains("2.17") && old.contains("2.28"), "{old}");
        let musl = refusal("x86_64", need, "x86_64", "musl libc (x86_64)").unwrap();
        assert!(musl.contains("musl") && musl.contains("2.28"), "{musl}");
        // A static binary needs no glibc.
        assert_eq!(refusal("x86_64", None, "x86_64", "musl libc"), None);
    }

    #[test]
    fn the_copy_is_said_with_its_size_time_and_place() {
        let c = Copied {
            reason: "no linerate on its PATH".into(),
            bytes: 7 << 20,
            sha256: "0123456789abcdef".repeat(4),
            seconds: 0.25,
            directory: "/var/tmp/linerate-copy.abcd".into(),
            machine: "x86_64".into(),
            libc: "glibc 2.31".into(),
            noexec: vec!["/tmp".into()],
        };
        assert_eq!(
            c.describe("node2"),
            "copied this linerate (7.0 MiB, sha256 0123456789ab…) to node2:/var/tmp/linerate-copy.abcd in 0.25 s (no linerate on its PATH; x86_64 glibc 2.31); removed there once its server started; passed over /tmp (mounted noexec)"
        );
    }

    /// The shells a far end's login may run the script under: dash (Debian's sh), bash, and
    /// busybox's ash (scripts/setup-tests.sh installs busybox-static). A shell missing here
    /// fails the test: the script must be checked under each.
    const SHELLS: &[&[&str]] = &[&["dash"], &["bash"], &["busybox", "sh"]];

    /// Run the script under `shell` with `input` on its stdin, in `tmp` (its TMPDIR).
    fn run_script(
        shell: &[&str],
        tmp: &Path,
        size: usize,
        sum: &str,
        input: &[u8],
    ) -> (String, bool) {
        let mut child = std::process::Command::new(shell[0])
            .args(&shell[1..])
            .args(["-c", SCRIPT, "linerate-copy", &size.to_string(), sum])
            .args(["serve", "a b", "$HOME"])
            .env("TMPDIR", tmp)
            .env_remove("XDG_RUNTIME_DIR")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{shell:?} is needed to check the copy script: {e}"));
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.status.success(),
        )
    }

    fn left_in(tmp: &Path) -> Vec<String> {
        std::fs::read_dir(tmp)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_script_receives_checks_and_runs_the_copy_under_dash_bash_and_busybox() {
        // The "binary": a script that says what it was started with, then removes its
        // directory as linerate's `remove_own_copy` does.
        let payload = b"#!/bin/sh\necho \"ran $# [$1] [$2] [$3] dir=$LINERATE_REMOVE_ON_START\"\nrm -rf \"$LINERATE_REMOVE_ON_START\"\n";
        let sum = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(payload));
        for shell in SHELLS {
            let tmp = tempfile::tempdir().unwrap();
            let (out, ok) = run_script(shell, tmp.path(), payload.len(), &sum, payload);
            assert!(ok, "{shell:?}: {out}");
            let lines: Vec<CopyLine> = out.lines().filter_map(copy_line).collect();
            assert!(
                matches!(&lines[0], CopyLine::Machine(m) if m == std::env::consts::ARCH),
                "{shell:?}: {out}"
            );
            assert!(
                matches!(&lines[1], CopyLine::Libc(l) if far_glibc(l).is_some()),
                "{shell:?}: {out}"
            );
            let CopyLine::Dir(dir) = &lines[2] else {
                panic!("{shell:?}: {out}");
            };
            assert!(dir.starts_with(&format!("{}/{DIR_PREFIX}", tmp.path().display())));
            assert_eq!(lines[3], CopyLine::Received, "{shell:?}: {out}");
            // The arguments arrive as they were given, the directory named for removal.
            assert!(
                out.contains(&format!("ran 3 [serve] [a b] [$HOME] dir={dir}")),
                "{shell:?}: {out}"
            );
            assert!(left_in(tmp.path()).is_empty(), "{shell:?}");
        }
    }

    #[test]
    fn a_short_or_wrong_copy_is_refused_and_its_directory_removed_under_every_shell() {
        let payload = b"#!/bin/sh\necho should-not-run\n";
        let sum = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(payload));
        for shell in SHELLS {
            let tmp = tempfile::tempdir().unwrap();
            // Cut short (the connection dropped, or this end refused and closed stdin).
            let (out, ok) = run_script(shell, tmp.path(), payload.len(), &sum, &payload[..5]);
            assert!(!ok && !out.contains("should-not-run"), "{shell:?}: {out}");
            assert!(
                out.lines()
                    .filter_map(copy_line)
                    .any(|l| matches!(l, CopyLine::Error(e) if e.contains("received 5 bytes"))),
                "{shell:?}: {out}"
            );
            assert!(left_in(tmp.path()).is_empty(), "{shell:?}");
            // Every byte there, but not the ones sent.
            let mut wrong = payload.to_vec();
            wrong[3] ^= 1;
            let (out, ok) = run_script(shell, tmp.path(), payload.len(), &sum, &wrong);
            assert!(!ok && !out.contains("should-not-run"), "{shell:?}: {out}");
            assert!(left_in(tmp.path()).is_empty(), "{shell:?}");
        }
    }
}
