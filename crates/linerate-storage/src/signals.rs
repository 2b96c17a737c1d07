//! SIGINT and SIGTERM while a disk test runs: note the signal, let the loops stop and the guard
//! delete the test file. While no test runs, the signals keep their default action (terminate).
//!
//! signal-hook cannot give a signal its default action back once a handler is installed
//! (`unregister` leaves it ignored), so the handler is installed once per process with two
//! actions: "terminate if idle" first, then "remember the signal".

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use signal_hook::consts::signal::{SIGINT, SIGTERM};

struct Handlers {
    /// The last signal seen while armed (0: none).
    seen: Arc<AtomicUsize>,
    /// No run is active: the default action applies.
    idle: Arc<AtomicBool>,
}

static HANDLERS: OnceLock<Option<Handlers>> = OnceLock::new();
static ACTIVE: Mutex<usize> = Mutex::new(0);

fn handlers() -> Option<&'static Handlers> {
    HANDLERS
        .get_or_init(|| {
            let h = Handlers {
                seen: Arc::new(AtomicUsize::new(0)),
                idle: Arc::new(AtomicBool::new(true)),
            };
            for sig in [SIGINT, SIGTERM] {
                signal_hook::flag::register_conditional_default(sig, Arc::clone(&h.idle)).ok()?;
                signal_hook::flag::register_usize(sig, Arc::clone(&h.seen), sig as usize).ok()?;
            }
            Some(h)
        })
        .as_ref()
}

/// While alive, SIGINT/SIGTERM are caught and reported by [`pending`].
#[derive(Debug)]
pub struct Armed(());

impl Armed {
    pub fn new() -> Self {
        if let Some(h) = handlers() {
            let mut n = ACTIVE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *n == 0 {
                h.seen.store(0, Ordering::SeqCst);
            }
            *n += 1;
            h.idle.store(false, Ordering::SeqCst);
        }
        Self(())
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(h) = handlers() {
            let mut n = ACTIVE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *n = n.saturating_sub(1);
            if *n == 0 {
                h.idle.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// The signal received since the first active [`Armed`] was made, if any.
pub fn pending() -> Option<i32> {
    let s = handlers()?.seen.load(Ordering::Relaxed);
    (s != 0).then(|| i32::try_from(s).unwrap_or(SIGINT))
}

pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
