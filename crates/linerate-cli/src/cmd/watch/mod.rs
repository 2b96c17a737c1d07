//! `linerate watch`: every port live, against its ceiling, with its errors judged as they
//! happen. The sampling is `source` (soak's counter sampler and the inventory, read again when
//! a link changes), the state `linerate_watch::Watcher` (soak's tracker and judge over a rolling
//! window), the outputs `linerate-report`'s: the full screen (`screen`), one line per port per
//! interval, one JSON object per interval, and the metrics endpoint (`http`).

mod http;
mod screen;
mod source;

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use linerate_report::Style;
use linerate_watch::{Frame, RateUnit, Tick, WatchParams, Watcher};

use crate::cli::WatchArgs;

/// The shortest interval.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The window holds at least this many intervals (soak's judge needs some to call a rate).
const MIN_WINDOW_INTERVALS: u32 = 10;
/// The longest window (its trackers hold one small record per interval).
const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// The most intervals a window holds: each of its two trackers keeps a record of about 100
/// bytes per interval, so 36 000 (an hour at 100 ms, ten at 1 s) is under 4 MB each.
const MAX_WINDOW_INTERVALS: u32 = 36_000;
/// Rate points kept per port for the detail pane's chart.
const HISTORY_POINTS: usize = 600;
/// Link events kept for the log pane.
const LOG_EVENTS: usize = 1000;
/// The metrics endpoint's verdicts and text are made again at most this often (a scrape reads
/// the last ones; at short intervals this bounds what the sampler spends on them).
const METRICS_EVERY: Duration = Duration::from_secs(1);

/// How this run shows what it samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Screen,
    Plain,
    JsonStream,
    /// Only the metrics endpoint.
    Quiet,
}

/// What the loops share.
#[derive(Debug)]
pub struct Run {
    interval: Duration,
    count: Option<u64>,
    unit: RateUnit,
    host: String,
    color: bool,
}

impl Run {
    /// `--count` intervals were shown (the sample `seq` closes interval `seq`).
    fn done(&self, seq: u64) -> bool {
        self.count.is_some_and(|n| seq >= n)
    }
}

/// The sampling and the state, advanced one sample at a time.
#[derive(Debug)]
pub struct Feed {
    source: source::Sampling,
    watcher: Watcher,
    metrics: Option<http::MetricsServer>,
    metrics_at: Option<Instant>,
}

impl Feed {
    /// Takes the next sample, and the metrics are made again when due.
    fn next(&mut self) -> anyhow::Result<Frame> {
        let s = self.source.sample();
        if let Some(ports) = s.ports {
            self.watcher.set_ports(ports, s.tick);
        }
        let frame = self.watcher.push(s.sample, s.tick);
        self.publish(s.tick);
        Ok(frame)
    }

    fn publish(&mut self, at: Tick) {
        let Some(m) = &self.metrics else { return };
        if self.metrics_at.is_some_and(|t| t.elapsed() < METRICS_EVERY) {
            return;
        }
        self.metrics_at = Some(Instant::now());
        let verdicts = self.watcher.verdicts();
        m.publish(linerate_report::watch_metrics(&self.watcher, &verdicts, at));
    }
}

fn check(a: &WatchArgs) -> anyhow::Result<()> {
    if a.interval < MIN_INTERVAL {
        bail!(
            "--interval {:?}: at least {} ms is expected",
            a.interval,
            MIN_INTERVAL.as_millis()
        );
    }
    if a.window < a.interval * MIN_WINDOW_INTERVALS {
        bail!(
            "--window {:?}: at least {MIN_WINDOW_INTERVALS} intervals ({:?}) is expected",
            a.window,
            a.interval * MIN_WINDOW_INTERVALS
        );
    }
    if a.window > MAX_WINDOW {
        bail!("--window {:?}: at most 24 h is accepted", a.window);
    }
    if a.window > a.interval * MAX_WINDOW_INTERVALS {
        bail!(
            "--window {:?}: at most {MAX_WINDOW_INTERVALS} intervals ({:?} at -i {:?}) is accepted",
            a.window,
            a.interval * MAX_WINDOW_INTERVALS,
            a.interval
        );
    }
    Ok(())
}

/// Writes to stdout; `false` when nobody reads it any more (a closed pipe).
fn write_out(text: &str) -> anyhow::Result<bool> {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// SIGINT, SIGTERM and SIGHUP set the flag: every loop ends cleanly on it.
fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    stop
}

pub fn run(a: &WatchArgs, style: Style) -> anyhow::Result<u8> {
    check(a)?;
    let jp = linerate_soak::JudgeParams::from_set(&a.threshold)
        .map_err(|e| anyhow::anyhow!("--threshold {e}"))?;
    let source = source::Sampling::open(&a.root, &a.ports)?;
    let mode = if a.json_stream {
        Mode::JsonStream
    } else if a.plain {
        Mode::Plain
    } else if a.listen.is_some() {
        Mode::Quiet
    } else if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        Mode::Screen
    } else {
        Mode::Plain
    };
    let metrics = match &a.listen {
        Some(l) => {
            let e = http::MetricsServer::start(
                http::listen_addr(l)?,
                http::ClientLimits {
                    max_clients: a.max_clients as usize,
                    timeout: a.client_timeout,
                },
            )?;
            eprintln!(
                "linerate watch: metrics at http://{}/metrics",
                e.local_addr()
            );
            Some(e)
        }
        None => None,
    };
    let mut watcher = Watcher::new(
        WatchParams {
            window_s: a.window.as_secs_f64(),
            history: HISTORY_POINTS,
            log: LOG_EVENTS,
        },
        jp,
    );
    watcher.set_ports(
        source.ports(),
        Tick {
            seq: 0,
            t_ms: 0,
            unix_ms: 0,
        },
    );
    let mut run = Run {
        interval: a.interval,
        count: a.count,
        unit: if a.bytes {
            RateUnit::Bytes
        } else {
            RateUnit::Bits
        },
        host: source.host(),
        color: style.color,
    };
    let mut feed = Feed {
        source,
        watcher,
        metrics,
        metrics_at: None,
    };
    let stop = stop_flag();
    match mode {
        Mode::Screen => screen::run(&mut run, &mut feed, &stop)?,
        _ => lines(&run, &mut feed, &stop, mode)?,
    }
    Ok(0)
}

/// Off the screen: a sample every interval, each interval written as asked, until `--count`
/// or a signal.
fn lines(run: &Run, feed: &mut Feed, stop: &AtomicBool, mode: Mode) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut seq: u32 = 0;
    loop {
        let frame = feed.next()?;
        if frame.seq > 0 {
            let text = match mode {
                Mode::JsonStream => format!("{}\n", linerate_report::watch_json_line(&frame)?),
                Mode::Plain => linerate_report::watch_lines(&frame, run.unit),
                Mode::Screen | Mode::Quiet => String::new(),
            };
            // A reader that went away (`| head`, a closed ssh session) ends the watch.
            if !text.is_empty() && !write_out(&text)? {
                return Ok(());
            }
            if run.done(frame.seq) {
                return Ok(());
            }
        }
        seq += 1;
        // The next sample is due on the interval's grid; a late one does not pile up.
        let mut due = start + run.interval * seq;
        if due < Instant::now() {
            seq = (start.elapsed().as_secs_f64() / run.interval.as_secs_f64()).ceil() as u32;
            due = start + run.interval * seq;
        }
        while Instant::now() < due {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            std::thread::sleep(
                due.saturating_duration_since(Instant::now())
                    .min(MIN_INTERVAL),
            );
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
    }
}
