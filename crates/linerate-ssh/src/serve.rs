//! A temporary `linerate serve` on the far end, for this client only: started through ssh, it
//! listens on a port the kernel picks (or the one asked for) and says which on stdout, takes a
//! fresh key on its stdin, and ends when its stdin closes, when its tests are done, or at its
//! deadline, whichever comes first (and, on Linux, when its ssh session dies).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use linerate_proto::{random_hex, Psk, PROTOCOL_VERSION};

use crate::copy::{Copied, CopyMode};
use crate::error::{classify, ssh_error, Failure, Said, SshError};
use crate::listening::{listening, Listening};
use crate::session::{found_by, probe, Found, Session};
use crate::ssh::{check_host, remote_command, Ssh, Tty};
use crate::{START_TIMEOUT, STOP_TIMEOUT};

/// What the far end must serve.
#[derive(Debug, Clone, PartialEq)]
pub struct FarEndSpec {
    /// `[USER@]HOST` to log in to, as ssh takes it (a `~/.ssh/config` alias works).
    pub ssh_host: String,
    /// The linerate program there: `linerate` (found on the PATH a non-interactive shell has),
    /// or a path (`~/` is the login's home).
    pub program: String,
    /// The address to listen on: `0.0.0.0`, or `::` for an IPv6 test address.
    pub bind: IpAddr,
    /// The port; 0: one the kernel picks.
    pub port: u16,
    /// The most tests it serves before it exits.
    pub tests: u32,
    /// How long those tests may take in all, seconds (their time limits one after the other);
    /// its deadline adds a margin to this.
    pub seconds: f64,
    /// Accept file transfers into a scratch directory it makes in this directory on the far
    /// end (relative: to the login directory) and removes when it exits.
    pub write_dir: Option<String>,
    /// More `linerate serve` options: the limits the tests need (`--max-duration 600`, ...).
    pub serve_args: Vec<String>,
    /// When this binary is copied there and run instead (`--ssh-copy`).
    pub copy: CopyMode,
}

/// The far end's program unless `--ssh-command` names another: with `--ssh-copy auto`, only
/// this one is replaced by a copy when it is missing or too old.
pub const DEFAULT_PROGRAM: &str = "linerate";

/// A test's handshake and results exchange at most, on top of its time limit.
const MARGIN_PER_TEST: Duration = Duration::from_secs(15);
/// On top of the tests: ssh, the start and the end.
const MARGIN: Duration = Duration::from_secs(60);

impl FarEndSpec {
    /// The far end's hard deadline: the tests' time, a margin per test, and one for the whole.
    pub fn deadline(&self) -> Duration {
        Duration::from_secs_f64(self.seconds.clamp(0.0, 30.0 * 86_400.0))
            + MARGIN_PER_TEST * self.tests
            + MARGIN
    }

    /// The far end's command line, quoted for its shell.
    fn remote(&self) -> Result<String, SshError> {
        let serve = self.serve_words();
        let mut w: Vec<&str> = vec!["exec", &self.program];
        w.extend(serve.iter().map(String::as_str));
        remote_command(&w)
    }

    /// `serve` and its options: the far end's command line after the program.
    fn serve_words(&self) -> Vec<String> {
        let mut w: Vec<String> = [
            "serve",
            "--port",
            &self.port.to_string(),
            "--bind",
            &self.bind.to_string(),
            "--psk-stdin",
            "--exit-on-stdin-close",
            "--max-served",
            &self.tests.max(1).to_string(),
            "--exit-after",
            &self.deadline().as_secs().to_string(),
        ]
        .map(str::to_string)
        .into();
        if let Some(d) = &self.write_dir {
            w.extend(["--scratch-write-dir".to_string(), d.clone()]);
        }
        w.extend(self.serve_args.iter().cloned());
        w
    }
}

/// A `linerate serve` started over ssh, serving this client only. Dropping it ends it.
#[derive(Debug)]
pub struct FarEnd {
    session: Session,
    host: String,
    port: u16,
    psk: Psk,
    version: Option<String>,
    write_dir: Option<String>,
    deadline: Duration,
    copied: Option<Copied>,
}

impl FarEnd {
    /// Log in to `spec.ssh_host`, start `linerate serve` there, and wait (at most
    /// `START_TIMEOUT`) for it to say on which port it listens. With `spec.copy`, a copy of
    /// this binary instead when the far end has none that speaks this protocol (`Auto`, a
    /// second ssh session after the first said so), or in every case (`Always`).
    pub fn start(ssh: &Ssh, spec: &FarEndSpec) -> Result<FarEnd, SshError> {
        check_host(&spec.ssh_host)?;
        match spec.copy {
            CopyMode::Always => Self::start_copy(ssh, spec, "--ssh-copy always".into()),
            CopyMode::Never => Self::start_installed(ssh, spec),
            CopyMode::Auto => match Self::start_installed(ssh, spec) {
                Err(e) if spec.program == DEFAULT_PROGRAM => match copy_reason(&e) {
                    Some(why) => Self::start_copy(ssh, spec, why),
                    None => Err(e),
                },
                r => r,
            },
        }
    }

    /// A copy of this binary, started over one ssh session (`crate::copy`).
    fn start_copy(ssh: &Ssh, spec: &FarEndSpec, reason: String) -> Result<FarEnd, SshError> {
        let key = random_hex(32);
        let (mut session, l, copied) =
            crate::copy::start(ssh, &spec.ssh_host, &spec.serve_words(), reason, &key)?;
        if l.protocol != Some(u64::from(PROTOCOL_VERSION)) {
            session.end(STOP_TIMEOUT);
            return Err(SshError::CopyFailed {
                host: spec.ssh_host.clone(),
                why: format!(
                    "the copy says protocol {:?}, not {PROTOCOL_VERSION}",
                    l.protocol
                ),
                said: Said::default(),
            });
        }
        session.echo_stderr();
        Ok(FarEnd {
            session,
            host: spec.ssh_host.clone(),
            port: l.port,
            psk: Psk::from_bytes(key.as_bytes()),
            version: l.version,
            write_dir: l.write_dir,
            deadline: spec.deadline(),
            copied: Some(copied),
        })
    }

    /// The far end's own linerate (`spec.program`).
    fn start_installed(ssh: &Ssh, spec: &FarEndSpec) -> Result<FarEnd, SshError> {
        check_host(&spec.ssh_host)?;
        let host = spec.ssh_host.clone();
        let args = Ssh::args(&host, Tty::None, spec.remote()?);
        let (mut session, found) = Session::spawn(
            ssh.command(&args),
            listening,
            format!("linerate: far end on {host}: "),
        )
        .map_err(|err| SshError::Spawn {
            program: ssh.describe(),
            err,
        })?;
        // A fresh key, on the first line of its stdin: in no command line, environment or file.
        let key = random_hex(32);
        session.write_stdin(format!("{key}\n").as_bytes());
        let fail = |session: &mut Session, found: Option<&Found<Listening>>| {
            failed(ssh, spec, session, found)
        };
        let l = match found_by(&found, Instant::now() + START_TIMEOUT) {
            Some(Found::Line(l)) => l,
            other => return Err(fail(&mut session, other.as_ref())),
        };
        if l.protocol != Some(u64::from(PROTOCOL_VERSION)) {
            session.end(STOP_TIMEOUT);
            return Err(SshError::Incompatible {
                host,
                theirs: format!(
                    "linerate {}",
                    l.version.as_deref().unwrap_or("of an older version")
                ),
                ours: env!("CARGO_PKG_VERSION").into(),
                why: format!(
                    "it speaks protocol {}, this one {PROTOCOL_VERSION}",
                    l.protocol.map_or("?".into(), |p| p.to_string())
                ),
            });
        }
        session.echo_stderr();
        Ok(FarEnd {
            session,
            host,
            port: l.port,
            psk: Psk::from_bytes(key.as_bytes()),
            version: l.version,
            write_dir: l.write_dir,
            deadline: spec.deadline(),
            copied: None,
        })
    }

    /// What was copied to run it, when it is a copy of this binary.
    pub fn copied(&self) -> Option<&Copied> {
        self.copied.as_ref()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The key it requires: this client's alone.
    pub fn psk(&self) -> &Psk {
        &self.psk
    }

    /// The SSH host it runs on.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Its linerate version.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// Its scratch write directory on the far end, if it has one.
    pub fn write_dir(&self) -> Option<&str> {
        self.write_dir.as_deref()
    }

    /// Its hard deadline, from its start.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Whether it is still running (its ssh has not ended).
    pub fn is_running(&mut self) -> bool {
        self.session.try_status().is_none()
    }

    /// End it: close its stdin (it exits, and its ssh session with it), wait up to
    /// `STOP_TIMEOUT`, then end the local ssh by signal. What went wrong, if anything: for a
    /// warning, the measurements are done.
    pub fn finish(mut self) -> Option<String> {
        match self.session.end(STOP_TIMEOUT) {
            Some(s) if s.success() => None,
            Some(s) => Some(format!(
                "the far end on {} ended with {s}{}",
                self.host,
                Said::new(&self.session.stderr_text(Duration::from_secs(1)))
            )),
            None => Some(format!(
                "the far end on {} did not end within {} s of its stdin closing: its ssh was ended by signal (its deadline, {} s from its start, ends it there)",
                self.host,
                STOP_TIMEOUT.as_secs(),
                self.deadline.as_secs()
            )),
        }
    }
}

/// The error of a far end that did not say it was listening: ssh's own failure, the program
/// missing or too old, or the program's.
fn failed(
    ssh: &Ssh,
    spec: &FarEndSpec,
    session: &mut Session,
    found: Option<&Found<Listening>>,
) -> SshError {
    let host = spec.ssh_host.clone();
    let program = spec.program.clone();
    let grace = Duration::from_secs(1);
    match found {
        None => {
            session.hang_up();
            let said = Said::new(&session.stderr_text(grace));
            return SshError::NoAnswer {
                host,
                program,
                secs: START_TIMEOUT.as_secs(),
                connect: crate::ssh::CONNECT_TIMEOUT_S,
                said,
            };
        }
        Some(Found::TooMuch) => {
            session.hang_up();
            let said = Said::new(&session.stdout_text(grace));
            return SshError::Chatter {
                host,
                program,
                said,
            };
        }
        _ => {}
    }
    // Its stdout ended: so will ssh, at once or nearly.
    let status = session.end(STOP_TIMEOUT);
    // ssh's words are on stderr; a program's (a login refused by the shell, a message) on
    // either.
    let said = Said::new(&format!(
        "{}{}",
        session.stdout_text(grace),
        session.stderr_text(grace)
    ));
    let f = classify(status.and_then(|s| s.code()), &said);
    if let Some(e) = ssh_error(f, &host, said.clone()) {
        return e;
    }
    match f {
        Failure::NotFound => SshError::NotFound {
            install: if spec.copy == CopyMode::Auto && spec.program == DEFAULT_PROGRAM {
                // A copy follows: no second round trip for a hint that is not shown.
                String::new()
            } else {
                install_hint(ssh, spec)
            },
            host,
            program,
            said,
        },
        Failure::CannotRun => SshError::CannotRun {
            host,
            program,
            said,
        },
        _ if said.0.iter().any(|l| {
            l.contains("unexpected argument") || l.contains("unrecognized subcommand")
        }) =>
        {
            let theirs = version_of(ssh, spec).map_or_else(
                || "a linerate that does not know `serve --psk-stdin`".into(),
                |v| format!("`{v}`"),
            );
            SshError::Incompatible {
                host,
                theirs,
                ours: env!("CARGO_PKG_VERSION").into(),
                why: "it predates the options `--ssh` starts it with".into(),
            }
        }
        _ => SshError::Exited {
            host,
            program,
            status: status.map_or_else(|| "ended by signal".into(), |s| s.to_string()),
            said,
        },
    }
}

/// Why a far end that could not be started gets a copy of this binary (`--ssh-copy auto`):
/// it has no linerate, or one that speaks another protocol. None for any other failure.
fn copy_reason(e: &SshError) -> Option<String> {
    match e {
        SshError::NotFound { .. } => Some("no linerate on its PATH".into()),
        SshError::Incompatible { theirs, why, .. } => Some(format!("it has {theirs}: {why}")),
        _ => None,
    }
}

/// How long a second, diagnostic round trip may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// `PROGRAM --version` on the far end: its first line.
fn version_of(ssh: &Ssh, spec: &FarEndSpec) -> Option<String> {
    let remote = remote_command(&["exec", &spec.program, "--version"]).ok()?;
    let p = probe(
        ssh.command(&Ssh::args(&spec.ssh_host, Tty::None, remote)),
        PROBE_TIMEOUT,
    )
    .ok()?;
    p.stdout
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("linerate"))
        .map(str::to_string)
}

/// Where linerate is often installed but a non-interactive shell does not look.
const USUAL_PLACES: &[&str] = &[
    "~/.cargo/bin/linerate",
    "~/.local/bin/linerate",
    "/usr/local/bin/linerate",
    "/opt/linerate/bin/linerate",
];

/// What to do about a linerate not found: where it is instead (one more round trip, only for
/// the default program name), or how to install it.
fn install_hint(ssh: &Ssh, spec: &FarEndSpec) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let install = format!(
        "Install linerate {version} there (its .deb or .rpm, the release tarball, or `cargo install --path crates/linerate-cli` from its source), give its path with --ssh-command PATH, or let this one copy itself there for the run (--ssh-copy auto, the default, for the program `linerate`)."
    );
    if spec.program != DEFAULT_PROGRAM {
        return install;
    }
    let script = format!(
        "for p in {}; do [ -x \"$p\" ] && echo \"found $p\"; done; exit 0",
        USUAL_PLACES.join(" ")
    );
    let found = remote_command(&["exec", "sh", "-c", &script])
        .ok()
        .and_then(|remote| {
            probe(
                ssh.command(&Ssh::args(&spec.ssh_host, Tty::None, remote)),
                PROBE_TIMEOUT,
            )
            .ok()
        })
        .and_then(|p| {
            p.stdout
                .lines()
                .find_map(|l| l.trim().strip_prefix("found ").map(str::to_string))
        });
    match found {
        Some(path) => {
            let home = USUAL_PLACES
                .iter()
                .find(|u| u.starts_with('~') && path.ends_with(&u[1..]))
                .map_or(path.as_str(), |u| u);
            format!("It is at {path} there, which non-interactive logins leave off PATH: pass --ssh-command {home}.")
        }
        None => install,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> FarEndSpec {
        FarEndSpec {
            ssh_host: "root@node2".into(),
            program: "~/.cargo/bin/linerate".into(),
            bind: IpAddr::from([0, 0, 0, 0]),
            port: 0,
            tests: 4,
            seconds: 20.5,
            write_dir: Some("/data dir".into()),
            serve_args: vec!["--max-duration".into(), "600".into()],
            copy: CopyMode::Never,
        }
    }

    #[test]
    fn the_far_end_command_carries_its_bounds_and_no_key() {
        let s = spec();
        assert_eq!(
            s.deadline(),
            Duration::from_secs_f64(20.5) + Duration::from_secs(120)
        );
        let r = s.remote().unwrap();
        assert_eq!(
            r,
            "exec ~/.cargo/bin/linerate serve --port 0 --bind 0.0.0.0 --psk-stdin --exit-on-stdin-close --max-served 4 --exit-after 140 --scratch-write-dir '/data dir' --max-duration 600"
        );
    }
}
