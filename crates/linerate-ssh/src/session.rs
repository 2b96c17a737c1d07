//! One ssh process and its pipes: started in a process group of its own, its output read by
//! threads into bounded tails, its first line of interest handed over within a deadline, and
//! its end bounded in time (stdin closed, then the group signalled, then reaped).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, Pid, Signal};

/// The longest line read from the far end; the rest of a longer line is dropped.
const MAX_LINE: usize = 4096;
/// Output kept of each stream: the last this many bytes.
const TAIL_BYTES: usize = 16 * 1024;
/// Output read before the line looked for, at most: a login banner or rc-file chatter fits.
const MAX_BEFORE: usize = 64 * 1024;
/// How often a bounded wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// The last `TAIL_BYTES` of a stream, and whether the stream has ended.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    bytes: Vec<u8>,
    ended: bool,
}

impl Tail {
    fn push(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
        if self.bytes.len() > TAIL_BYTES {
            let cut = self.bytes.len() - TAIL_BYTES;
            self.bytes.drain(..cut);
        }
    }
}

type Shared = Arc<Mutex<Tail>>;

fn lock(t: &Shared) -> std::sync::MutexGuard<'_, Tail> {
    t.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the stdout reader found.
#[derive(Debug)]
pub(crate) enum Found<T> {
    Line(T),
    /// The stream ended first.
    End,
    /// `MAX_BEFORE` bytes came without it.
    TooMuch,
}

/// A running ssh.
#[derive(Debug)]
pub(crate) struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Shared,
    stderr: Shared,
    /// Copy stderr lines to this process's stderr, prefixed, from now on.
    echo: Arc<AtomicBool>,
    reaped: Option<ExitStatus>,
}

impl Session {
    /// Start `cmd` in a process group of its own (so a Ctrl-C here reaches it only through its
    /// lifeline, and ending it ends whatever it started here). `find` is given each stdout line
    /// (without its line end) until it returns `Some`; what it found, or that it never came,
    /// is sent once on the receiver. `echo_prefix`: how stderr lines are labelled when echoed.
    pub(crate) fn spawn<T: Send + 'static>(
        cmd: Command,
        find: impl FnMut(&str) -> Option<T> + Send + 'static,
        echo_prefix: String,
    ) -> std::io::Result<(Session, Receiver<Found<T>>)> {
        Self::spawn_looking(cmd, find, Looking::First, echo_prefix)
    }

    /// As [`Session::spawn`], but every line `find` takes is sent, in order, each within
    /// `MAX_BEFORE` bytes of the one before; the stream's end is sent last.
    pub(crate) fn spawn_each<T: Send + 'static>(
        cmd: Command,
        find: impl FnMut(&str) -> Option<T> + Send + 'static,
        echo_prefix: String,
    ) -> std::io::Result<(Session, Receiver<Found<T>>)> {
        Self::spawn_looking(cmd, find, Looking::Each, echo_prefix)
    }

    fn spawn_looking<T: Send + 'static>(
        mut cmd: Command,
        find: impl FnMut(&str) -> Option<T> + Send + 'static,
        looking: Looking,
        echo_prefix: String,
    ) -> std::io::Result<(Session, Receiver<Found<T>>)> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn()?;
        let stdout = Shared::default();
        let stderr = Shared::default();
        let echo = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            let tail = Arc::clone(&stdout);
            std::thread::spawn(move || read_stdout(out, find, looking, &tail, &tx));
        }
        if let Some(err) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            let echo = Arc::clone(&echo);
            std::thread::spawn(move || read_stderr(err, &tail, &echo, &echo_prefix));
        }
        let stdin = child.stdin.take();
        Ok((
            Session {
                child,
                stdin,
                stdout,
                stderr,
                echo,
                reaped: None,
            },
            rx,
        ))
    }

    /// Write `bytes` to its stdin; an ssh already gone is found out by the caller's wait.
    pub(crate) fn write_stdin(&mut self, bytes: &[u8]) {
        if let Some(s) = self.stdin.as_mut() {
            let _ = s.write_all(bytes).and_then(|()| s.flush());
        }
    }

    /// Its stdin, to write from another thread (a write that may block); None once closed.
    pub(crate) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Give its stdin back after [`Session::take_stdin`].
    pub(crate) fn put_stdin(&mut self, stdin: ChildStdin) {
        self.stdin = Some(stdin);
    }

    /// Copy what ssh writes on stderr to this process's, from now on.
    pub(crate) fn echo_stderr(&self) {
        self.echo.store(true, Ordering::Relaxed);
    }

    /// Its exit status, when it has ended.
    pub(crate) fn try_status(&mut self) -> Option<ExitStatus> {
        if self.reaped.is_none() {
            self.reaped = self.child.try_wait().ok().flatten();
        }
        self.reaped
    }

    /// Wait up to `timeout` for it to end.
    pub(crate) fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Signal its process group (only while the child is not reaped: its pid is still ours).
    fn signal(&mut self, sig: Signal) {
        if self.try_status().is_some() {
            return;
        }
        let raw = i32::try_from(self.child.id()).unwrap_or(0);
        // Never 0 or 1: `kill(-1)` would reach every process.
        if let Some(pid) = Pid::from_raw(raw).filter(|_| raw > 1) {
            let _ = kill_process_group(pid, sig);
        }
    }

    /// End it: close its stdin (the far end's lifeline) and wait up to `timeout` for it to end;
    /// then SIGTERM, a second, and SIGKILL to its process group. It is reaped in every case.
    pub(crate) fn end(&mut self, timeout: Duration) -> Option<ExitStatus> {
        // Its last words are its end, which this side asked for: not echoed.
        self.echo.store(false, Ordering::Relaxed);
        self.stdin = None;
        if let Some(s) = self.wait(timeout) {
            return Some(s);
        }
        self.hang_up();
        None
    }

    /// End it at once: SIGTERM to its process group (ssh closes the connection, and the far
    /// end's terminal, if it has one, hangs up), then SIGKILL a second later if needed.
    pub(crate) fn hang_up(&mut self) {
        self.signal(Signal::TERM);
        if self.wait(Duration::from_secs(1)).is_none() {
            self.signal(Signal::KILL);
            self.reaped = self.child.wait().ok();
        }
    }

    /// What it wrote on stderr (its last `TAIL_BYTES`), once the stream has ended or `wait`
    /// has passed (a process it started may hold the pipe open).
    pub(crate) fn stderr_text(&self, wait: Duration) -> String {
        text_of(&self.stderr, wait)
    }

    /// What it wrote on stdout (the last `TAIL_BYTES`), waiting for the end up to `wait`.
    pub(crate) fn stdout_text(&self, wait: Duration) -> String {
        text_of(&self.stdout, wait)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.try_status().is_none() {
            let _ = self.end(crate::STOP_TIMEOUT);
        }
    }
}

fn text_of(t: &Shared, wait: Duration) -> String {
    let until = Instant::now() + wait;
    while !lock(t).ended && Instant::now() < until {
        std::thread::sleep(POLL);
    }
    String::from_utf8_lossy(&lock(t).bytes).into_owned()
}

/// Which lines of stdout are looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Looking {
    /// Until the first one found.
    First,
    /// Every line: each one found is sent.
    Each,
}

/// Read stdout a line at a time: hand `find` each line until it finds what it looks for (or
/// `MAX_BEFORE` bytes pass; with `Looking::Each`, every line until then, counted from the last
/// found), then keep draining, so the far end never blocks on a full pipe.
fn read_stdout<T>(
    out: impl Read,
    mut find: impl FnMut(&str) -> Option<T>,
    mode: Looking,
    tail: &Shared,
    tx: &mpsc::Sender<Found<T>>,
) {
    let mut looking = true;
    let mut before = 0usize;
    each_line(out, |line, n| {
        lock(tail).push(line);
        if !looking {
            return;
        }
        before += n;
        let text = String::from_utf8_lossy(line);
        if let Some(t) = find(text.trim_end_matches(['\n', '\r'])) {
            let _ = tx.send(Found::Line(t));
            looking = mode == Looking::Each;
            before = 0;
        } else if before > MAX_BEFORE {
            let _ = tx.send(Found::TooMuch);
            looking = false;
        }
    });
    lock(tail).ended = true;
    if looking {
        let _ = tx.send(Found::End);
    }
}

/// Each line of `r` (at most `MAX_LINE` bytes of it) and the bytes it took, until the end or
/// an error.
fn each_line(r: impl Read, mut f: impl FnMut(&[u8], usize)) {
    let mut r = BufReader::new(r);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut r, &mut line) {
            Ok(0) | Err(_) => break,
            Ok(n) => f(&line, n),
        }
    }
}

/// One line of at most `MAX_LINE` bytes into `line`; the rest of a longer line is read and
/// dropped. The bytes read, 0 at the end.
fn read_line(r: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let n = r.by_ref().take(MAX_LINE as u64).read_until(b'\n', line)?;
    let mut total = n;
    if n == MAX_LINE && line.last() != Some(&b'\n') {
        let mut rest = Vec::new();
        loop {
            rest.clear();
            let m = r
                .by_ref()
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut rest)?;
            total += m;
            if m == 0 || rest.last() == Some(&b'\n') {
                break;
            }
        }
    }
    Ok(total)
}

fn read_stderr(err: impl Read, tail: &Shared, echo: &AtomicBool, prefix: &str) {
    each_line(err, |line, _| {
        lock(tail).push(line);
        if echo.load(Ordering::Relaxed) {
            let text = String::from_utf8_lossy(line);
            let _ = writeln!(
                std::io::stderr().lock(),
                "{prefix}{}",
                text.trim_end_matches(['\n', '\r'])
            );
        }
    });
    lock(tail).ended = true;
}

/// A short command run to its end: its exit status (None: it did not end in time and was
/// ended), and what it wrote.
#[derive(Debug)]
pub(crate) struct Probe {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `cmd` with its stdin closed, for at most `timeout`.
pub(crate) fn probe(cmd: Command, timeout: Duration) -> std::io::Result<Probe> {
    let (mut s, _found) = Session::spawn(cmd, |_| None::<()>, String::new())?;
    s.stdin = None;
    let status = s.wait(timeout);
    if status.is_none() {
        s.hang_up();
    }
    let grace = Duration::from_secs(1);
    Ok(Probe {
        status,
        stdout: s.stdout_text(grace),
        stderr: s.stderr_text(grace),
    })
}

/// Wait for the reader's verdict until `until`.
pub(crate) fn found_by<T>(rx: &Receiver<Found<T>>, until: Instant) -> Option<Found<T>> {
    match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
        Ok(f) => Some(f),
        Err(RecvTimeoutError::Timeout) => None,
        Err(RecvTimeoutError::Disconnected) => Some(Found::End),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_and_the_rest_dropped() {
        let mut input = vec![b'a'; MAX_LINE * 2 + 10];
        input.extend_from_slice(b"\nnext\n");
        let mut r = BufReader::new(&input[..]);
        let mut line = Vec::new();
        let n = read_line(&mut r, &mut line).unwrap();
        assert_eq!(n, MAX_LINE * 2 + 11);
        assert_eq!(line.len(), MAX_LINE);
        line.clear();
        read_line(&mut r, &mut line).unwrap();
        assert_eq!(line, b"next\n");
    }

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut t = Tail::default();
        t.push(&vec![b'x'; TAIL_BYTES]);
        t.push(b"end");
        assert_eq!(t.bytes.len(), TAIL_BYTES);
        assert!(t.bytes.ends_with(b"xend"));
    }

    #[test]
    fn the_line_is_found_past_a_banner_and_the_rest_drained() {
        let input = b"Welcome to host\r\n\n{\"event\":\"listening\"}\nlater\n".to_vec();
        let (tx, rx) = mpsc::channel();
        let tail = Shared::default();
        read_stdout(
            &input[..],
            |l| l.starts_with('{').then(|| l.to_string()),
            Looking::First,
            &tail,
            &tx,
        );
        match rx.try_recv().unwrap() {
            Found::Line(l) => assert_eq!(l, "{\"event\":\"listening\"}"),
            other => panic!("{other:?}"),
        }
        assert!(rx.try_recv().is_err());
        assert!(lock(&tail).ended);
        assert!(String::from_utf8_lossy(&lock(&tail).bytes).ends_with("later\n"));
    }

    #[test]
    fn output_without_the_line_is_bounded() {
        let input = "chatter\n".repeat(MAX_BEFORE / 8 + 10);
        let (tx, rx) = mpsc::channel::<Found<()>>();
        read_stdout(
            input.as_bytes(),
            |_| None,
            Looking::First,
            &Shared::default(),
            &tx,
        );
        assert!(matches!(rx.try_recv().unwrap(), Found::TooMuch));
        let (tx, rx) = mpsc::channel::<Found<()>>();
        read_stdout(
            &b"short\n"[..],
            |_| None,
            Looking::First,
            &Shared::default(),
            &tx,
        );
        assert!(matches!(rx.try_recv().unwrap(), Found::End));
        // Each line found, in order, then the end.
        let (tx, rx) = mpsc::channel();
        read_stdout(
            &b"a1\nx\na2\n"[..],
            |l| l.strip_prefix('a').map(str::to_string),
            Looking::Each,
            &Shared::default(),
            &tx,
        );
        let got: Vec<String> = rx
            .try_iter()
            .map(|f| match f {
                Found::Line(l) => l,
                Found::End => "end".into(),
                Found::TooMuch => "too much".into(),
            })
            .collect();
        assert_eq!(got, ["1", "2", "end"]);
    }
}
