//! The screen's state and what each key does to it: the selected port, the sort, the filter,
//! bits or bytes, pause, the detail pane and the help. Pure: the terminal's keys come in as
//! [`Key`], the rows go out sorted and filtered; `linerate-report` draws them.

use std::cmp::Ordering;

use crate::frame::PortFrame;
use crate::port::PortId;

/// A key, as the view understands it (the terminal layer maps its events to these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Esc,
    Backspace,
    Char(char),
    /// Ctrl-C.
    Interrupt,
}

/// The order of the rows; `s` goes to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// The larger direction's rate, highest first.
    Rate,
    /// The rate over the ceiling, highest first (ports without a ceiling last).
    Utilisation,
    /// soak's verdict over the window, worst first, then the counters that moved.
    Errors,
    Name,
}

impl SortKey {
    #[must_use]
    pub fn next(self) -> Self {
        match self {
            Self::Rate => Self::Utilisation,
            Self::Utilisation => Self::Errors,
            Self::Errors => Self::Name,
            Self::Name => Self::Rate,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rate => "rate",
            Self::Utilisation => "utilisation",
            Self::Errors => "errors",
            Self::Name => "name",
        }
    }
}

/// Rates in bits (Gb/s = 10^9 bit/s) or bytes (GB/s = 10^9 byte/s); `b` switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnit {
    Bits,
    Bytes,
}

/// What the key asks of the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOutcome {
    Continue,
    Quit,
}

/// The screen's state.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewState {
    pub sort: SortKey,
    /// The filter applied: every word must appear in the port's name, device, kind, state or
    /// link (case ignored).
    pub filter: String,
    /// The filter being typed after `/` (applied as it is typed); `None` when not typing.
    pub editing: Option<String>,
    pub selected: Option<PortId>,
    /// The detail pane of the selected port is open.
    pub detail: bool,
    pub help: bool,
    pub unit: RateUnit,
    /// The screen keeps showing the same interval (sampling goes on).
    pub paused: bool,
    /// Rows a page moves (the renderer sets it from the table's height).
    pub page: usize,
}

impl Default for ViewState {
    fn default() -> Self {
        Self {
            sort: SortKey::Rate,
            filter: String::new(),
            editing: None,
            selected: None,
            detail: false,
            help: false,
            unit: RateUnit::Bits,
            paused: false,
            page: 10,
        }
    }
}

/// The longest filter kept (a paste into the filter cannot grow without bound).
pub const MAX_FILTER_CHARS: usize = 64;

impl ViewState {
    /// The filter in force: the one being typed, else the one applied.
    pub fn active_filter(&self) -> &str {
        self.editing.as_deref().unwrap_or(&self.filter)
    }

    /// The rows to show: filtered, then sorted.
    pub fn rows<'a>(&self, ports: &'a [PortFrame]) -> Vec<&'a PortFrame> {
        let words: Vec<String> = self
            .active_filter()
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let mut rows: Vec<&PortFrame> = ports.iter().filter(|p| matches(p, &words)).collect();
        rows.sort_by(|a, b| self.compare(a, b));
        rows
    }

    fn compare(&self, a: &PortFrame, b: &PortFrame) -> Ordering {
        let by_name = || a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id));
        // Highest first, `None` last.
        let desc = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        match self.sort {
            SortKey::Rate => desc(a.peak_gbps(), b.peak_gbps()).then_with(by_name),
            SortKey::Utilisation => desc(a.utilisation, b.utilisation).then_with(by_name),
            SortKey::Errors => errors_key(b).cmp(&errors_key(a)).then_with(by_name),
            SortKey::Name => by_name(),
        }
    }

    /// The selected row's index in `rows` (the first row when the selection is not shown).
    pub fn selected_index(&self, rows: &[&PortFrame]) -> Option<usize> {
        if rows.is_empty() {
            return None;
        }
        Some(
            self.selected
                .as_ref()
                .and_then(|s| rows.iter().position(|r| &r.id == s))
                .unwrap_or(0),
        )
    }

    /// The selected port among `rows` (the first when the selection is not shown).
    pub fn selected_row<'a>(&self, rows: &[&'a PortFrame]) -> Option<&'a PortFrame> {
        self.selected_index(rows).map(|i| rows[i])
    }

    /// Applies a key to the view of `ports` (the frame on screen).
    pub fn key(&mut self, key: Key, ports: &[PortFrame]) -> KeyOutcome {
        if key == Key::Interrupt {
            return KeyOutcome::Quit;
        }
        if self.help {
            match key {
                Key::Char('q') => return KeyOutcome::Quit,
                _ => self.help = false,
            }
            return KeyOutcome::Continue;
        }
        if let Some(text) = self.editing.as_mut() {
            match key {
                Key::Char(c) if !c.is_control() && text.chars().count() < MAX_FILTER_CHARS => {
                    text.push(c);
                }
                Key::Backspace => {
                    text.pop();
                }
                Key::Enter => self.filter = self.editing.take().unwrap_or_default(),
                Key::Esc => self.editing = None,
                _ => {}
            }
            self.keep_selection_visible(ports);
            return KeyOutcome::Continue;
        }
        match key {
            Key::Char('q') => return KeyOutcome::Quit,
            Key::Esc if self.detail => self.detail = false,
            Key::Esc if !self.filter.is_empty() => self.filter.clear(),
            Key::Esc => return KeyOutcome::Quit,
            Key::Up | Key::Char('k') => self.move_to(ports, |i, _| i.saturating_sub(1)),
            Key::Down | Key::Char('j') => self.move_to(ports, |i, last| (i + 1).min(last)),
            Key::PageUp => {
                let page = self.page.max(1);
                self.move_to(ports, |i, _| i.saturating_sub(page));
            }
            Key::PageDown => {
                let page = self.page.max(1);
                self.move_to(ports, |i, last| i.saturating_add(page).min(last));
            }
            Key::Home | Key::Char('g') => self.move_to(ports, |_, _| 0),
            Key::End | Key::Char('G') => self.move_to(ports, |_, last| last),
            Key::Enter => {
                self.detail = !self.detail;
                self.keep_selection_visible(ports);
            }
            Key::Char('s') => self.sort = self.sort.next(),
            Key::Char('/') => self.editing = Some(self.filter.clone()),
            Key::Char('b') => {
                self.unit = match self.unit {
                    RateUnit::Bits => RateUnit::Bytes,
                    RateUnit::Bytes => RateUnit::Bits,
                }
            }
            Key::Char('p') => self.paused = !self.paused,
            Key::Char('?' | 'h') => self.help = true,
            _ => {}
        }
        KeyOutcome::Continue
    }

    /// Selects the row `to(current, last)` of the rows shown.
    fn move_to(&mut self, ports: &[PortFrame], to: impl Fn(usize, usize) -> usize) {
        let rows = self.rows(ports);
        let Some(i) = self.selected_index(&rows) else {
            return;
        };
        let j = to(i, rows.len() - 1).min(rows.len() - 1);
        self.selected = Some(rows[j].id.clone());
    }

    /// The selection follows the filter: a selected port filtered out gives way to the first
    /// row shown.
    pub fn keep_selection_visible(&mut self, ports: &[PortFrame]) {
        let rows = self.rows(ports);
        if let Some(r) = self.selected_row(&rows) {
            self.selected = Some(r.id.clone());
        }
    }
}

/// A port's errors, for the `errors` sort: its verdict over the window, then how many
/// counters moved in the window and in this interval.
fn errors_key(p: &PortFrame) -> (u8, usize, usize) {
    let verdict = p
        .window
        .as_ref()
        .map_or(0, |w| w.verdict.metric_value() + 1);
    let in_window = p.window.as_ref().map_or(0, |w| w.counters.len());
    (verdict, in_window, p.moved.len())
}

fn matches(p: &PortFrame, words: &[String]) -> bool {
    if words.is_empty() {
        return true;
    }
    let hay = format!(
        "{} {} {} {} {} {}",
        p.name,
        p.id.label(),
        p.netdev.as_deref().unwrap_or(""),
        p.kind.as_str(),
        p.state,
        p.link.as_deref().unwrap_or("")
    )
    .to_lowercase();
    words.iter().all(|w| hay.contains(w.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::tests::example_port;
    use crate::frame::{PortFrame, WindowMark};
    use crate::port::WatchKind;
    use linerate_soak::{Verdict, VerdictRule};

    /// A port of `name` at `gbps` under `ceiling`: what the view reads set here, the rest the
    /// example's.
    fn port(name: &str, gbps: Option<f64>, ceiling: Option<f64>) -> PortFrame {
        PortFrame {
            id: PortId::new(name, ""),
            name: name.into(),
            netdev: Some(name.into()),
            kind: WatchKind::Ethernet,
            up: true,
            state: "up".into(),
            link: Some("25GbE".into()),
            rx_gbps: gbps,
            tx_gbps: gbps.map(|g| g / 2.0),
            ceiling_gbps: ceiling,
            utilisation: gbps.zip(ceiling).map(|(g, c)| g / c),
            moved: Vec::new(),
            window: None,
            ..example_port()
        }
    }

    fn names(v: &ViewState, ports: &[PortFrame]) -> Vec<String> {
        v.rows(ports).iter().map(|p| p.name.clone()).collect()
    }

    fn frame() -> Vec<PortFrame> {
        let mut bad = port("eth2", Some(1.0), Some(100.0));
        bad.window = Some(WindowMark {
            verdict: Verdict::Bad,
            rule: VerdictRule::Clean,
            span_s: 10.0,
            counters: Vec::new(),
            findings: Vec::new(),
        });
        vec![
            port("eth0", Some(9.0), Some(10.0)),
            port("eth1", Some(20.0), Some(100.0)),
            bad,
            port("veth7", Some(30.0), None),
            port("ib0", None, Some(40.0)),
        ]
    }

    #[test]
    fn each_sort_orders_the_rows() {
        let ports = frame();
        let mut v = ViewState::default();
        assert_eq!(names(&v, &ports), ["veth7", "eth1", "eth0", "eth2", "ib0"]);
        v.key(Key::Char('s'), &ports);
        assert_eq!(v.sort, SortKey::Utilisation);
        assert_eq!(names(&v, &ports), ["eth0", "eth1", "eth2", "ib0", "veth7"]);
        v.key(Key::Char('s'), &ports);
        assert_eq!(names(&v, &ports)[0], "eth2");
        v.key(Key::Char('s'), &ports);
        assert_eq!(names(&v, &ports), ["eth0", "eth1", "eth2", "ib0", "veth7"]);
        v.key(Key::Char('s'), &ports);
        assert_eq!(v.sort, SortKey::Rate);
    }

    #[test]
    fn the_filter_is_typed_applied_and_cleared() {
        let ports = frame();
        let mut v = ViewState::default();
        v.key(Key::Char('/'), &ports);
        for c in "ETH 1".chars() {
            v.key(Key::Char(c), &ports);
        }
        // Applied as it is typed: every word must match.
        assert_eq!(names(&v, &ports), ["eth1"]);
        v.key(Key::Backspace, &ports);
        v.key(Key::Backspace, &ports);
        v.key(Key::Enter, &ports);
        assert_eq!(v.filter, "ETH");
        // `eth` is in every row's kind (`ethernet`).
        assert_eq!(names(&v, &ports).len(), 5);
        v.key(Key::Char('/'), &ports);
        for _ in 0..3 {
            v.key(Key::Backspace, &ports);
        }
        for c in "veth".chars() {
            v.key(Key::Char(c), &ports);
        }
        v.key(Key::Enter, &ports);
        assert_eq!(names(&v, &ports), ["veth7"]);
        // Esc clears the filter before it quits.
        assert_eq!(v.key(Key::Esc, &ports), KeyOutcome::Continue);
        assert_eq!(names(&v, &ports).len(), 5);
        assert_eq!(v.key(Key::Esc, &ports), KeyOutcome::Quit);
        // A typed filter is bounded.
        let mut v = ViewState::default();
        v.key(Key::Char('/'), &ports);
        for _ in 0..1000 {
            v.key(Key::Char('x'), &ports);
        }
        assert_eq!(v.active_filter().len(), MAX_FILTER_CHARS);
    }

    #[test]
    fn moving_follows_the_rows_and_stays_in_bounds() {
        let ports = frame();
        let mut v = ViewState::default();
        v.key(Key::Down, &ports);
        assert_eq!(v.selected, Some(PortId::new("eth1", "")));
        v.key(Key::Char('j'), &ports);
        v.key(Key::End, &ports);
        assert_eq!(v.selected, Some(PortId::new("ib0", "")));
        v.key(Key::Down, &ports);
        assert_eq!(v.selected, Some(PortId::new("ib0", "")));
        v.key(Key::Char('k'), &ports);
        assert_eq!(v.selected, Some(PortId::new("eth2", "")));
        v.key(Key::Home, &ports);
        assert_eq!(v.selected, Some(PortId::new("veth7", "")));
        // The selection is a port, not a position: a new sort keeps it.
        v.key(Key::Char('s'), &ports);
        let rows = v.rows(&ports);
        assert_eq!(
            v.selected_row(&rows).map(|r| r.name.as_str()),
            Some("veth7")
        );
    }

    #[test]
    fn keys_toggle_details_units_pause_and_help() {
        let ports = frame();
        let mut v = ViewState::default();
        v.key(Key::Enter, &ports);
        assert!(v.detail);
        v.key(Key::Char('b'), &ports);
        assert_eq!(v.unit, RateUnit::Bytes);
        v.key(Key::Char('p'), &ports);
        assert!(v.paused);
        v.key(Key::Char('?'), &ports);
        assert!(v.help);
        // Any key closes the help; q still quits.
        v.key(Key::Char('x'), &ports);
        assert!(!v.help);
        // Esc closes the details before anything else.
        assert_eq!(v.key(Key::Esc, &ports), KeyOutcome::Continue);
        assert!(!v.detail);
        assert_eq!(v.key(Key::Char('q'), &ports), KeyOutcome::Quit);
        assert_eq!(v.key(Key::Interrupt, &ports), KeyOutcome::Quit);
    }
}
