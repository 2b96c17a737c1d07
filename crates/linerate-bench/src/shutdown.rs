//! Ending a server before its tests are done: the trigger a temporary far end's lifelines pull
//! (its stdin closed, a signal, its hard deadline), and how it reaches the accept loop.

use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Ends a server early: `serve_on` stops accepting, gives the tests running a short grace, and
/// returns. Clones share one trigger; the first reason given is the one kept.
#[derive(Clone, Default)]
pub struct ShutdownTrigger(Arc<Inner>);

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    reason: Option<String>,
    /// Where the accept loop listens, once `serve_on` has armed the trigger: a connection of our
    /// own wakes it from `accept`.
    wake: Option<SocketAddr>,
}

impl std::fmt::Debug for ShutdownTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ShutdownTrigger")
            .field(&self.reason())
            .finish()
    }
}

impl ShutdownTrigger {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// End the server, for `reason` (the log and the exit say it).
    pub fn trigger(&self, reason: impl Into<String>) {
        let wake = {
            let mut s = self.state();
            if s.reason.is_some() {
                return;
            }
            s.reason = Some(reason.into());
            s.wake
        };
        self.0.changed.notify_all();
        if let Some(addr) = wake {
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
        }
    }

    /// Why the server was ended; None while it runs.
    pub fn reason(&self) -> Option<String> {
        self.state().reason.clone()
    }

    pub fn is_triggered(&self) -> bool {
        self.state().reason.is_some()
    }

    /// From `serve_on`: wake the accept loop at `addr` when triggered (at once if it already is).
    pub(crate) fn arm(&self, addr: SocketAddr) {
        let already = {
            let mut s = self.state();
            s.wake = Some(addr);
            s.reason.is_some()
        };
        if already {
            let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
        }
    }

    /// Wait until triggered or `until`, whichever comes first: true when triggered.
    pub fn wait_until(&self, until: Instant) -> bool {
        let mut s = self.state();
        while s.reason.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            s = self
                .0
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Trigger with `reason` at `at`, unless triggered before: a thread that sleeps until then.
    pub fn trigger_at(&self, at: Instant, reason: String) {
        let me = self.clone();
        let _ = std::thread::Builder::new()
            .name("exit-deadline".into())
            .spawn(move || {
                if !me.wait_until(at) {
                    me.trigger(reason);
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn first_reason_is_kept_and_wakes_a_listener() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = ShutdownTrigger::new();
        s.arm(l.local_addr().unwrap());
        assert!(!s.is_triggered());
        s.trigger("stdin closed");
        s.trigger("deadline");
        assert_eq!(s.reason().as_deref(), Some("stdin closed"));
        // The wake-up connection is there to accept.
        l.set_nonblocking(false).unwrap();
        assert!(l.accept().is_ok());
        assert!(s.wait_until(Instant::now()));
    }

    #[test]
    fn armed_after_the_trigger_wakes_at_once() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = ShutdownTrigger::new();
        s.trigger("signal");
        s.arm(l.local_addr().unwrap());
        assert!(l.accept().is_ok());
    }

    #[test]
    fn deadline_triggers_and_a_trigger_ends_the_wait() {
        let s = ShutdownTrigger::new();
        assert!(!s.wait_until(Instant::now() + Duration::from_millis(10)));
        s.trigger_at(Instant::now(), "exit deadline".into());
        assert!(s.wait_until(Instant::now() + Duration::from_secs(60)));
        assert_eq!(s.reason().as_deref(), Some("exit deadline"));
    }
}
