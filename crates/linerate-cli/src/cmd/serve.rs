use std::io::{BufRead, Read};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use linerate_bench::{ServerConfig, ShutdownTrigger, WriteDir};
use linerate_proto::{Limits, Psk, MIN_PSK_BYTES};

use crate::cli::ServeArgs;

pub fn config(a: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let psk = a
        .psk_file
        .as_deref()
        .map(linerate_proto::load_psk)
        .transpose()?;
    Ok(ServerConfig {
        bind: SocketAddr::new(a.bind, a.port),
        iperf3_port: a.iperf3_port,
        limits: Limits {
            max_tests: a.max_tests,
            max_streams: a.max_streams,
            max_duration_ms: a.max_duration.max(1000),
            max_udp_bitrate_bps: a.max_udp_bitrate,
            max_length: a.max_length,
            max_file_bytes: a.max_file_size,
            max_spin_us: a.max_spin,
            max_soak_duration_ms: a.max_soak_duration.max(1000),
            ..Limits::default()
        },
        psk,
        handshake_timeout: Duration::from_millis(a.handshake_timeout.max(100)),
        max_pending: a.max_pending,
        max_memory_bytes: u64::from(a.max_memory),
        max_served: a.max_served.or(a.once.then_some(1)),
        inventory: Some(crate::iface::provider()),
        log: true,
        write_dir: a
            .write_dir
            .as_deref()
            .map(|d| WriteDir::open(d).map(Arc::new))
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?,
        soak: Some(linerate_inventory::counters::sampler_fn(
            a.root.clone(),
            linerate_proto::soak::End::Remote,
            Arc::new(linerate_inventory::counters::SamplingCost::default()),
        )),
        shutdown: None,
        exit_after: a.exit_after,
    })
}

pub fn run(a: &ServeArgs) -> anyhow::Result<u8> {
    let mut cfg = config(a)?;
    if a.psk_stdin {
        cfg.psk = Some(key_from_stdin()?);
    }
    // Removed, with whatever the clients left in it, when this function returns.
    let scratch = a
        .scratch_write_dir
        .as_deref()
        .map(scratch_dir)
        .transpose()?;
    if let Some(dir) = &scratch {
        let w = WriteDir::open(dir.path()).map_err(|e| anyhow::anyhow!(e))?;
        cfg.write_dir = Some(Arc::new(w));
    }
    let shutdown = ShutdownTrigger::new();
    if a.exit_on_stdin_close {
        watch_stdin(&shutdown);
        end_with_parent();
    }
    // A temporary server ends cleanly on a signal too, so its scratch directory goes with it.
    if a.exit_on_stdin_close || a.exit_after.is_some() || scratch.is_some() {
        on_signals(&shutdown)?;
    }
    cfg.shutdown = Some(shutdown.clone());
    linerate_bench::serve(cfg)?;
    if let Some(reason) = shutdown.reason() {
        eprintln!("linerate serve: ended by {reason}");
    }
    drop(scratch);
    Ok(0)
}

/// How long `--psk-stdin` waits for its key line: whoever started the server writes it first.
const KEY_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest key line read.
const MAX_KEY_LINE: u64 = 4096;

/// `--psk-stdin`: the first line of standard input, within `KEY_TIMEOUT`.
fn key_from_stdin() -> anyhow::Result<Psk> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = Vec::new();
        let r = std::io::stdin()
            .lock()
            .take(MAX_KEY_LINE)
            .read_until(b'\n', &mut line)
            .map(|_| line);
        let _ = tx.send(r);
    });
    let line = match rx.recv_timeout(KEY_TIMEOUT) {
        Ok(r) => r.context("--psk-stdin: reading the key from standard input")?,
        Err(_) => anyhow::bail!(
            "--psk-stdin: no key line on standard input within {} s",
            KEY_TIMEOUT.as_secs()
        ),
    };
    anyhow::ensure!(
        line.ends_with(b"\n"),
        "--psk-stdin: expected the key on the first line of standard input, ended by a newline (standard input closed, or the line is longer than {MAX_KEY_LINE} bytes)"
    );
    let key = line.trim_ascii();
    anyhow::ensure!(
        key.len() >= MIN_PSK_BYTES,
        "--psk-stdin: the key is {} bytes; at least {MIN_PSK_BYTES} are needed",
        key.len()
    );
    Ok(Psk::from_bytes(key))
}

/// `--exit-on-stdin-close`: end the server when standard input reaches its end (or fails). What
/// comes before is read and dropped, a buffer at a time.
fn watch_stdin(shutdown: &ShutdownTrigger) {
    let s = shutdown.clone();
    let _ = std::thread::Builder::new()
        .name("stdin-lifeline".into())
        .spawn(move || {
            let mut buf = [0u8; 512];
            let mut stdin = std::io::stdin().lock();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            s.trigger("its standard input closing (--exit-on-stdin-close: the client that started it is gone or done)");
        });
}

/// Linux: SIGTERM when the process that started this one (the ssh session) dies, a lifeline
/// besides stdin for when something else holds stdin open. Best effort.
fn end_with_parent() {
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM));
}

/// SIGTERM, SIGHUP or SIGINT end the server through `shutdown` (so a scratch directory is
/// removed); a second one ends the process at once.
fn on_signals(shutdown: &ShutdownTrigger) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGTERM, SIGHUP, SIGINT] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&flag))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&flag)))
            .context("installing the signal handlers")?;
    }
    let s = shutdown.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            while !s.is_triggered() {
                if flag.load(Ordering::Relaxed) {
                    s.trigger("a signal");
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
        .context("starting the signal watcher")?;
    Ok(())
}

/// `--scratch-write-dir PARENT`: a new directory of this process's own in PARENT, private to
/// its user.
fn scratch_dir(parent: &Path) -> anyhow::Result<tempfile::TempDir> {
    anyhow::ensure!(
        parent.is_dir(),
        "--scratch-write-dir {}: not a directory",
        parent.display()
    );
    tempfile::Builder::new()
        .prefix(&format!(".linerate-serve-{}-", std::process::id()))
        .tempdir_in(parent)
        .with_context(|| {
            format!(
                "--scratch-write-dir {}: cannot make a directory there",
                parent.display()
            )
        })
}
