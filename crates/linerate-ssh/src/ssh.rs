//! Which ssh runs, with which options, and how a command for the far end's shell is quoted.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::SshError;

/// The environment variable that replaces the ssh program and its options, as
/// `GIT_SSH_COMMAND` does for git: `LINERATE_SSH_COMMAND="ssh -F ./ssh_config"`.
pub const SSH_COMMAND_ENV: &str = "LINERATE_SSH_COMMAND";

/// Seconds ssh waits for the TCP connection and the server's banner (`ConnectTimeout`).
pub const CONNECT_TIMEOUT_S: u32 = 10;

/// The options linerate adds to every ssh it runs: no prompt ever (BatchMode: a host key not
/// yet known, or a key that needs a passphrase the agent does not hold, fails instead of
/// asking), a bounded connect, a dead connection noticed within a minute, and nothing
/// forwarded. Host key checking is left as the user's configuration sets it: never turned off.
/// Given after `LINERATE_SSH_COMMAND`'s own options, which therefore win (ssh keeps the first
/// value of an option); they win over `~/.ssh/config` too.
pub fn base_options() -> Vec<String> {
    [
        "BatchMode=yes".to_string(),
        format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
        "ServerAliveInterval=10".into(),
        "ServerAliveCountMax=6".into(),
        "ClearAllForwardings=yes".into(),
        "ForwardAgent=no".into(),
        "ForwardX11=no".into(),
    ]
    .into_iter()
    .flat_map(|o| ["-o".to_string(), o])
    .collect()
}

/// How ssh is run: the `ssh` on this PATH, or `LINERATE_SSH_COMMAND` through `sh -c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssh {
    /// `LINERATE_SSH_COMMAND`; None: `ssh`.
    shell_command: Option<String>,
}

impl Default for Ssh {
    fn default() -> Self {
        Self::from_env()
    }
}

impl Ssh {
    /// `LINERATE_SSH_COMMAND` when it is set and not blank, else `ssh`.
    pub fn from_env() -> Self {
        Self::with_command(std::env::var(SSH_COMMAND_ENV).ok().as_deref())
    }

    /// `command` in place of `LINERATE_SSH_COMMAND` (None or blank: plain `ssh`).
    pub fn with_command(command: Option<&str>) -> Self {
        Self {
            shell_command: command
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string),
        }
    }

    /// What runs, for messages: `ssh`, or `LINERATE_SSH_COMMAND (ssh -F x)`.
    pub fn describe(&self) -> String {
        match &self.shell_command {
            None => "ssh".into(),
            Some(c) => format!("{SSH_COMMAND_ENV} ({c})"),
        }
    }

    /// The ssh command line: the program (or `sh -c 'LINERATE_SSH_COMMAND "$@"'`, as git runs
    /// `GIT_SSH_COMMAND`, so the variable may hold quotes and several options), then `args`.
    pub fn command(&self, args: &[String]) -> Command {
        match &self.shell_command {
            None => {
                let mut c = Command::new("ssh");
                c.args(args);
                c
            }
            Some(sc) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("{sc} \"$@\""))
                    .arg("linerate-ssh")
                    .args(args);
                c
            }
        }
    }

    /// The ssh arguments that run `remote` (already quoted for the far end's shell) on `host`:
    /// the base options, `tty` (`-T` or `-tt`), `--`, the host, the command.
    pub(crate) fn args(host: &str, tty: Tty, remote: String) -> Vec<String> {
        let mut v = base_options();
        v.push(
            match tty {
                Tty::None => "-T",
                Tty::Forced => "-tt",
            }
            .into(),
        );
        v.extend(["--".to_string(), host.to_string(), remote]);
        v
    }

    /// What `ssh -G HOST` says of the host: the name it connects to and whether it goes
    /// through a jump host. None when that cannot be learnt (an ssh without `-G`, a wrapper).
    pub fn config(&self, host: &str) -> Option<HostConfig> {
        check_host(host).ok()?;
        let mut cmd = self.command(&["-G".into(), "--".into(), host.into()]);
        cmd.stdin(Stdio::null());
        let out = crate::session::probe(cmd, Duration::from_secs(5)).ok()?;
        if !out.status.is_some_and(|s| s.success()) {
            return None;
        }
        let text = out.stdout;
        let mut c = HostConfig::default();
        for line in text.lines() {
            let (k, v) = line.split_once(' ').unwrap_or((line, ""));
            match k.to_ascii_lowercase().as_str() {
                "hostname" => c.hostname = v.trim().to_string(),
                "proxyjump" | "proxycommand" if !v.trim().eq_ignore_ascii_case("none") => {
                    c.proxy = Some(v.trim().to_string());
                }
                _ => {}
            }
        }
        (!c.hostname.is_empty()).then_some(c)
    }
}

/// Whether the far end gets a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tty {
    /// `-T`: pipes; the far end sees its stdin close when this end goes.
    None,
    /// `-tt`: a terminal, whose hang-up (SIGHUP) ends a program that does not watch stdin.
    Forced,
}

/// What `ssh -G` resolved for a host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostConfig {
    /// The name or address ssh connects to (`HostName`).
    pub hostname: String,
    /// `ProxyJump` or `ProxyCommand`, when set.
    pub proxy: Option<String>,
}

/// A host ssh will not take for an option or an empty name.
pub(crate) fn check_host(host: &str) -> Result<(), SshError> {
    if host.is_empty() || host.starts_with('-') || host.chars().any(char::is_whitespace) {
        return Err(SshError::BadHost(host.to_string()));
    }
    Ok(())
}

/// `words` as one command line for the far end's shell, each word quoted as needed. A word
/// starting with `~/` keeps its tilde unquoted, so the shell expands it to the home directory
/// (`--ssh-command ~/.cargo/bin/linerate`).
pub fn remote_command(words: &[&str]) -> Result<String, SshError> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let quoted = match w.strip_prefix("~/") {
            Some(rest) if !rest.is_empty() => format!("~/{}", quote(rest)?),
            _ => quote(w)?,
        };
        out.push(quoted);
    }
    Ok(out.join(" "))
}

fn quote(w: &str) -> Result<String, SshError> {
    shlex::try_quote(w)
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| SshError::BadArgument(w.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_words_are_quoted_and_tilde_kept() {
        let c = remote_command(&["exec", "~/.cargo/bin/linerate", "serve", "a b", "it's"]).unwrap();
        assert_eq!(c, r#"exec ~/.cargo/bin/linerate serve 'a b' "it's""#);
        assert!(remote_command(&["nul\0"]).is_err());
        // The shell reads them back as the same words.
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s|' {}",
                remote_command(&["a b", "$HOME", "`x`", "'q'"]).unwrap()
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a b|$HOME|`x`|'q'|");
    }

    #[test]
    fn hosts_that_read_as_options_are_refused() {
        assert!(check_host("-oProxyCommand=x").is_err());
        assert!(check_host("").is_err());
        assert!(check_host("a b").is_err());
        assert!(check_host("root@node2").is_ok());
    }

    #[test]
    fn the_command_variable_runs_through_sh_with_the_arguments_after_it() {
        let s = Ssh::with_command(Some("  printf '<%s>' x  "));
        let out = s.command(&["a b".into(), "c".into()]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "<x><a b><c>");
        assert_eq!(Ssh::with_command(Some("  ")), Ssh::with_command(None));
        assert_eq!(Ssh::with_command(None).describe(), "ssh");
        let args = Ssh::args("h", Tty::None, "exec x".into());
        assert_eq!(&args[args.len() - 4..], ["-T", "--", "h", "exec x"]);
        assert!(args.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
    }
}
