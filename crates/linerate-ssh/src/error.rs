//! Why a far end could not be started: in ssh's own words, with what to do about it.

use thiserror::Error;

/// The most lines of what ssh (or the far end) said that a message quotes: the last ones.
const SAID_LINES: usize = 14;
/// The longest line quoted.
const SAID_WIDTH: usize = 300;

/// What ssh or the far end wrote, quoted in a message: its last non-blank lines, indented.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Said(pub Vec<String>);

impl Said {
    pub fn new(text: &str) -> Self {
        let lines: Vec<String> = text
            .lines()
            .map(|l| l.trim_end_matches('\r').trim_end())
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                l.chars()
                    .filter(|c| !c.is_control() || *c == '\t')
                    .take(SAID_WIDTH)
                    .collect()
            })
            .collect();
        let skip = lines.len().saturating_sub(SAID_LINES);
        Said(lines.into_iter().skip(skip).collect())
    }

    fn contains(&self, needle: &str) -> bool {
        self.0.iter().any(|l| l.contains(needle))
    }
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str(" (nothing was said)");
        }
        f.write_str(":")?;
        for l in &self.0 {
            write!(f, "\n    {l}")?;
        }
        Ok(())
    }
}

/// A far end that could not be started, or a command line that cannot be used.
#[derive(Debug, Error)]
pub enum SshError {
    #[error("--ssh `{0}`: not a host ssh can log in to (empty, blank inside, or read as an option); give [USER@]HOST")]
    BadHost(String),
    #[error("`{0}` cannot be passed to the far end's shell (it holds a NUL byte)")]
    BadArgument(String),
    #[error("cannot run {program}: {err}; install OpenSSH's client (`apt install openssh-client`), or name the ssh command in LINERATE_SSH_COMMAND")]
    Spawn {
        program: String,
        err: std::io::Error,
    },
    #[error("ssh refused {host}: its host key is not known here, and linerate never accepts a host key on its own. ssh said{said}\n  Check the key and accept it by logging in once with `ssh {host}`, then run this again.")]
    UnknownHostKey { host: String, said: Said },
    #[error("ssh refused {host}: its host key is not the one recorded for it in known_hosts. ssh said{said}\n  This is what a man-in-the-middle attack looks like. If the host was reinstalled or its key replaced, confirm the new key with its administrator, remove the old one as ssh says above (`ssh-keygen -R {host_only}`, with the port when it is not 22) and log in once with `ssh {host}`.")]
    ChangedHostKey {
        host: String,
        host_only: String,
        said: Said,
    },
    #[error("ssh could not log in to {host} without a prompt. ssh said{said}\n  linerate runs ssh with BatchMode=yes, so it never asks for a password or passphrase: load your key into the agent (`ssh-add`) or install one there (`ssh-copy-id {host}`); `ssh {host} true` must work without a prompt.")]
    AuthRefused { host: String, said: Said },
    #[error("ssh could not reach {host}. ssh said{said}\n  Check the SSH host's name and port, and that sshd runs there; the SSH host may differ from the test address (`--ssh USER@MGMT-HOST`).")]
    Unreachable { host: String, said: Said },
    #[error("ssh to {host} failed (exit status 255). ssh said{said}")]
    Ssh { host: String, said: Said },
    #[error("`{program}` was not found on {host} by a non-interactive shell. It said{said}\n  {install}")]
    NotFound {
        host: String,
        program: String,
        said: Said,
        /// How to install it, or where it was found instead.
        install: String,
    },
    #[error("`{program}` on {host} cannot be run (exit status 126: not executable, a mount without exec, or built for another machine). It said{said}")]
    CannotRun {
        host: String,
        program: String,
        said: Said,
    },
    #[error("{host} has {theirs}, which this linerate ({ours}) cannot start as its far end: {why}. Install linerate {ours} there, or point --ssh-command at a build of it.")]
    Incompatible {
        host: String,
        theirs: String,
        ours: String,
        why: String,
    },
    #[error("`{program}` on {host} ended ({status}) before it was ready. It said{said}")]
    Exited {
        host: String,
        program: String,
        status: String,
        said: Said,
    },
    #[error("no answer from `{program}` on {host} within {secs} s (ssh's connect time-out is {connect} s; a login that prompts cannot pass BatchMode). ssh said{said}")]
    NoAnswer {
        host: String,
        program: String,
        secs: u64,
        connect: u32,
        said: Said,
    },
    #[error("`{program}` on {host} wrote more than 64 KiB without saying it was listening. Its first lines{said}")]
    Chatter {
        host: String,
        program: String,
        said: Said,
    },
    #[error("this linerate was not copied to {host}: {why}. Install a linerate built for it there (or point --ssh-command at one), or pass --ssh-copy never to require the far end's own.")]
    CopyRefused { host: String, why: String },
    #[error("copying this linerate to {host} failed: {why}. The far end said{said}")]
    CopyFailed {
        host: String,
        why: String,
        said: Said,
    },
    #[error(
        "every port tried on {host} is in use ({ports}): free one, or give a port with -p PORT"
    )]
    PortsInUse { host: String, ports: String },
}

/// How an ssh that ended failed, from its exit status and what it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    UnknownHostKey,
    ChangedHostKey,
    AuthRefused,
    Unreachable,
    /// Another failure of ssh itself (exit status 255).
    Ssh,
    /// Exit status 127: the command was not found on the far end.
    NotFound,
    /// Exit status 126: found but not executable.
    CannotRun,
    /// The far end's program ended on its own (status, or None: a signal).
    Exited(Option<i32>),
}

/// Words ssh uses when the connection itself failed.
const UNREACHABLE: &[&str] = &[
    "Could not resolve hostname",
    "Connection refused",
    "Connection timed out",
    "Operation timed out",
    "No route to host",
    "Network is unreachable",
    "Connection reset",
    "Connection closed by",
    "kex_exchange_identification",
    "banner exchange",
];

pub(crate) fn classify(code: Option<i32>, said: &Said) -> Failure {
    match code {
        Some(255) => {
            if said.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
                || said.contains("has changed and you have requested strict checking")
            {
                Failure::ChangedHostKey
            } else if said.contains("host key is known for")
                || said.contains("Host key verification failed")
            {
                Failure::UnknownHostKey
            } else if said.contains("Permission denied (")
                || said.contains("Too many authentication failures")
            {
                Failure::AuthRefused
            } else if UNREACHABLE.iter().any(|w| said.contains(w)) {
                Failure::Unreachable
            } else {
                Failure::Ssh
            }
        }
        Some(127) => Failure::NotFound,
        Some(126) => Failure::CannotRun,
        other => Failure::Exited(other),
    }
}

/// The error for a failed ssh of `host` that was not the far end's own doing.
pub(crate) fn ssh_error(f: Failure, host: &str, said: Said) -> Option<SshError> {
    let host = host.to_string();
    Some(match f {
        Failure::UnknownHostKey => SshError::UnknownHostKey { host, said },
        Failure::ChangedHostKey => SshError::ChangedHostKey {
            host_only: crate::host::host_part(&host).to_string(),
            host,
            said,
        },
        Failure::AuthRefused => SshError::AuthRefused { host, said },
        Failure::Unreachable => SshError::Unreachable { host, said },
        Failure::Ssh => SshError::Ssh { host, said },
        Failure::NotFound | Failure::CannotRun | Failure::Exited(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_words_are_classified() {
        let c = |code, text: &str| classify(Some(code), &Said::new(text));
        assert_eq!(
            c(255, "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n"),
            Failure::UnknownHostKey
        );
        assert_eq!(
            c(255, "@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.\n"),
            Failure::ChangedHostKey
        );
        assert_eq!(
            c(255, "root@127.0.0.1: Permission denied (publickey).\n"),
            Failure::AuthRefused
        );
        assert_eq!(
            c(
                255,
                "ssh: connect to host 127.0.0.1 port 9: Connection refused\n"
            ),
            Failure::Unreachable
        );
        assert_eq!(
            c(255, "Connection timed out during banner exchange\n"),
            Failure::Unreachable
        );
        assert_eq!(c(255, "something new\n"), Failure::Ssh);
        assert_eq!(
            c(127, "sh: 1: exec: linerate: not found\n"),
            Failure::NotFound
        );
        assert_eq!(
            c(2, "error: unexpected argument\n"),
            Failure::Exited(Some(2))
        );
        assert_eq!(classify(None, &Said::default()), Failure::Exited(None));
    }

    #[test]
    fn said_keeps_the_last_lines_without_control_characters() {
        let text = (0..30)
            .map(|i| format!("line {i}\x1b[0m\r\n\n"))
            .collect::<Vec<_>>()
            .concat();
        let s = Said::new(&text);
        assert_eq!(s.0.len(), SAID_LINES);
        assert_eq!(s.0.last().map(String::as_str), Some("line 29[0m"));
        assert_eq!(Said::default().to_string(), " (nothing was said)");
        assert_eq!(Said::new("a\n").to_string(), ":\n    a");
        let e = SshError::UnknownHostKey {
            host: "root@node2".into(),
            said: Said::new("Host key verification failed.\n"),
        };
        let m = e.to_string();
        assert!(m.contains("Host key verification failed."), "{m}");
        assert!(m.contains("`ssh root@node2`"), "{m}");
    }
}
