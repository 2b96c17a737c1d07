//! The full screen: the terminal in raw mode on its alternate screen, always given back (on
//! `q`, Esc, Ctrl-C, an error, a panic, SIGTERM or SIGHUP; only SIGKILL cannot be answered),
//! keys read between samples, a resize redrawn. The drawing is `linerate_report::WatchScreen`;
//! what a key does is `linerate_watch::ViewState::key`.

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linerate_report::WatchScreen;
use linerate_watch::{Frame, Key, KeyOutcome, ViewState, Watcher};
use ratatui_core::terminal::Terminal;
use ratatui_crossterm::crossterm::cursor::{Hide, Show};
use ratatui_crossterm::crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
};
use ratatui_crossterm::crossterm::execute;
use ratatui_crossterm::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui_crossterm::CrosstermBackend;

use super::{Feed, Run};

/// The longest wait for a key before the stop flags are looked at again.
const KEY_POLL: Duration = Duration::from_millis(100);

/// Gives the terminal back: cooked mode, the main screen, the cursor. Safe to call twice.
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
}

/// The terminal while the screen is up; dropping it gives the terminal back (also while a
/// panic unwinds).
struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    fn enter() -> anyhow::Result<Self> {
        // A panic prints its message on the main screen, in cooked mode, where it can be read.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        enable_raw_mode()?;
        let entered = execute!(io::stdout(), EnterAlternateScreen, Hide)
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(Terminal::new(CrosstermBackend::new(io::stdout()))?));
        match entered {
            Ok(terminal) => Ok(Self { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// A terminal's key, as the view understands it.
fn key(k: KeyEvent) -> Option<Key> {
    if k.modifiers.contains(KeyModifiers::CONTROL) {
        return matches!(k.code, KeyCode::Char('c' | 'C')).then_some(Key::Interrupt);
    }
    Some(match k.code {
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Char(c) => Key::Char(c),
        _ => return None,
    })
}

/// Runs the screen until a key, a signal or `--count` ends it.
pub fn run(run: &mut Run, feed: &mut Feed, stop: &AtomicBool) -> anyhow::Result<()> {
    let mut screen = Screen::enter()?;
    let mut view = ViewState {
        unit: run.unit,
        ..ViewState::default()
    };
    let mut frame: Frame = feed.next()?;
    // While paused: the watch and the frame as they were (sampling goes on in `feed`).
    let mut paused: Option<(Watcher, Frame)> = None;
    let mut next = Instant::now() + run.interval;
    let mut dirty = true;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        if Instant::now() >= next {
            frame = feed.next()?;
            if run.done(frame.seq) {
                return Ok(());
            }
            next += run.interval;
            if next < Instant::now() {
                next = Instant::now() + run.interval;
            }
            dirty = dirty || paused.is_none();
        }
        if dirty {
            let (w, f) = paused
                .as_ref()
                .map_or((&feed.watcher, &frame), |(w, f)| (w, f));
            let size = screen.terminal.size()?;
            view.page = WatchScreen::table_rows(size.into(), view.detail).max(1);
            screen.terminal.draw(|t| {
                t.render_widget(
                    WatchScreen {
                        frame: f,
                        watcher: w,
                        view: &view,
                        host: &run.host,
                        interval_s: run.interval.as_secs_f64(),
                        color: run.color,
                    },
                    t.area(),
                );
            })?;
            dirty = false;
        }
        let wait = next.saturating_duration_since(Instant::now()).min(KEY_POLL);
        match terminal_input(wait)? {
            Input::Gone => return Ok(()),
            // A resize comes as a signal, without input: crossterm's queue has it.
            Input::Nothing if !event::poll(Duration::ZERO)? => continue,
            Input::Nothing => {}
            Input::Ready => {}
        }
        // Every event the input holds (a paste or a key repeat brings several).
        while event::poll(Duration::ZERO)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    let Some(k) = key(k) else { continue };
                    let shown = paused.as_ref().map_or(&frame, |(_, f)| f);
                    if view.key(k, &shown.ports) == KeyOutcome::Quit {
                        return Ok(());
                    }
                    match (view.paused, paused.is_some()) {
                        (true, false) => paused = Some((feed.watcher.clone(), frame.clone())),
                        (false, true) => paused = None,
                        _ => {}
                    }
                    dirty = true;
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
    }
}

/// What the terminal's input holds.
enum Input {
    Ready,
    Nothing,
    /// Hung up (a closed ssh session, a killed tmux pane) or closed: nobody is there.
    Gone,
}

/// Waits up to `wait` for input on the terminal. Asked before crossterm is: on a hung-up
/// terminal a read returns nothing at once, forever, and crossterm's wait would spin on it.
fn terminal_input(wait: Duration) -> anyhow::Result<Input> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let stdin = io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec::try_from(wait).unwrap_or_default();
    match poll(&mut fds, Some(&timeout)) {
        Ok(0) => return Ok(Input::Nothing),
        Ok(_) => {}
        // A signal (SIGWINCH, SIGTERM): the caller looks at its flags and crossterm's queue.
        Err(rustix::io::Errno::INTR) => return Ok(Input::Nothing),
        Err(e) => return Err(io::Error::from(e).into()),
    }
    let r = fds[0].revents();
    if r.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
        return Ok(Input::Gone);
    }
    Ok(Input::Ready)
}
