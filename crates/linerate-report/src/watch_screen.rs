//! `linerate watch`'s screen, drawn into a ratatui buffer: a table of every port (rates,
//! packets, a bar of the rate against its ceiling, the stage that sets it, the errors judged
//! over the window and the latest link event), the selected port's detail pane (its rate
//! history as a chart, the ceiling chain, its PCIe link and NUMA node, every counter with its
//! rate), the log of link events, the keys, and the help. Pure: the binary hands the buffer to
//! the terminal. Without colour (`NO_COLOR`, `--color never`) only bold and reverse remain.

use linerate_units::{fmt_round, fmt_sig, fmt_utc_time};
use linerate_watch::{Frame, PortFrame, RateUnit, ViewState, Watcher};
use ratatui_core::buffer::Buffer;
use ratatui_core::layout::{Constraint, Layout, Rect};
use ratatui_core::style::{Color, Modifier, Style};
use ratatui_core::symbols::Marker;
use ratatui_core::text::{Line, Span};
use ratatui_core::widgets::Widget;
use ratatui_widgets::block::Block;
use ratatui_widgets::chart::{Axis, Chart, Dataset, GraphType};
use ratatui_widgets::clear::Clear;
use ratatui_widgets::paragraph::Paragraph;

use crate::watch::{fmt_rate, span_words};
use columns::Align;

mod columns;

/// The smallest screen drawn; below it, a line says so.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 8;
/// Link events the log pane shows at most.
const LOG_LINES: u16 = 5;

/// Everything one screen shows.
#[derive(Debug)]
pub struct WatchScreen<'a> {
    /// The interval shown (the last one, or the one paused on).
    pub frame: &'a Frame,
    /// The watch the frame came from: the history, counters and facts of the detail pane, and
    /// the log.
    pub watcher: &'a Watcher,
    pub view: &'a ViewState,
    /// The host's name, for the title.
    pub host: &'a str,
    /// The interval asked for, seconds.
    pub interval_s: f64,
    /// Colour allowed.
    pub color: bool,
}

impl WatchScreen<'_> {
    fn style(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    fn verdict_style(&self, v: linerate_soak::Verdict) -> Style {
        use linerate_soak::Verdict;
        match v {
            Verdict::Bad => self.style(Color::Red).add_modifier(Modifier::BOLD),
            Verdict::Marginal => self.style(Color::Yellow).add_modifier(Modifier::BOLD),
            Verdict::Congested => self.style(Color::Magenta),
            Verdict::Insufficient | Verdict::Clean => self.style(Color::Gray),
        }
    }

    /// The rows of the table at `height` lines of screen: what a page moves.
    pub fn table_rows(area: Rect, detail: bool) -> usize {
        let [table, ..] = areas(area, detail);
        usize::from(table.height.saturating_sub(1))
    }
}

/// The screen's areas: table, detail, log, header and footer. The layout of
/// `Layout::vertical([Length(1), Min(2), Length(detail), Length(log), Length(1)])`, computed
/// by hand where everything fits (every screen drawn: the solver costs more than the rest of a
/// frame's layout), by the layout solver on a screen too small to draw.
fn areas(area: Rect, detail: bool) -> [Rect; 5] {
    let (detail_h, log) = heights(area, detail);
    if area.height >= MIN_HEIGHT {
        let table_h = area.height - 2 - detail_h - log;
        let row = |y: u16, h: u16| Rect::new(area.x, y, area.width, h);
        let header = row(area.y, 1);
        let table = row(area.y + 1, table_h);
        let det = row(table.bottom(), detail_h);
        let log_area = row(det.bottom(), log);
        let footer = row(log_area.bottom(), 1);
        return [table, det, log_area, header, footer];
    }
    solved_areas(area, detail)
}

/// The heights of the detail pane and of the log (its title line included).
fn heights(area: Rect, detail: bool) -> (u16, u16) {
    let log = LOG_LINES.min(area.height.saturating_sub(6) / 3) + 1;
    let detail_h = if detail {
        (area.height.saturating_sub(2 + log)) * 11 / 20
    } else {
        0
    };
    (detail_h, log)
}

/// [`areas`] by the layout solver.
fn solved_areas(area: Rect, detail: bool) -> [Rect; 5] {
    let (detail_h, log) = heights(area, detail);
    let [header, table, det, log_area, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(2),
        Constraint::Length(detail_h),
        Constraint::Length(log),
        Constraint::Length(1),
    ])
    .areas(area);
    [table, det, log_area, header, footer]
}

impl Widget for WatchScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            buf.set_string(
                area.x,
                area.y,
                format!("terminal too small: {MIN_WIDTH}x{MIN_HEIGHT} at least"),
                Style::default(),
            );
            return;
        }
        let [table, detail, log, header, footer] = areas(area, self.view.detail);
        let rows = self.view.rows(&self.frame.ports);
        self.header(header, buf, rows.len());
        self.table(table, buf, &rows);
        if self.view.detail {
            if let Some(p) = self.view.selected_row(&rows) {
                self.detail(detail, buf, p);
            }
        }
        self.log(log, buf);
        self.footer(footer, buf);
        if self.view.help {
            help(area, buf);
        }
    }
}

impl WatchScreen<'_> {
    fn header(&self, area: Rect, buf: &mut Buffer, shown: usize) {
        let f = self.frame;
        let unit = match self.view.unit {
            RateUnit::Bits => "bits (Gb/s = 10^9 bit/s)",
            RateUnit::Bytes => "bytes (GB/s = 10^9 byte/s)",
        };
        let every = fmt_round(self.interval_s, 3);
        let mut spans = vec![
            Span::styled("linerate watch", Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "  {}  {} UTC  every {every} s  errors judged over {} (window {})  sort {}  {unit}  {shown}/{} ports",
                self.host,
                fmt_utc_time(f.unix_ms),
                span_words(f.window_s),
                span_words(self.watcher.window().window_s()),
                self.view.sort.as_str(),
                f.ports.len()
            )),
        ];
        if self.view.paused {
            spans.push(Span::styled(
                "  PAUSED",
                self.style(Color::Yellow).add_modifier(Modifier::REVERSED),
            ));
        }
        buf.set_line(area.x, area.y, &Line::from(spans), area.width);
    }

    fn table(&self, area: Rect, buf: &mut Buffer, rows: &[&PortFrame]) {
        let cols = columns::fitting(area.width, |c| c.shown(rows));
        let widths = columns::widths(&cols, area.width);
        let mut x = area.x;
        for (c, &w) in cols.iter().zip(&widths) {
            let t = pad(c.title(), usize::from(w), c.align());
            buf.set_string(x, area.y, t, Style::default().add_modifier(Modifier::BOLD));
            x += w + 1;
        }
        let height = usize::from(area.height.saturating_sub(1));
        let selected = self.view.selected_index(rows).unwrap_or(0);
        let first = (selected + 1).saturating_sub(height);
        for (n, p) in rows.iter().enumerate().skip(first).take(height) {
            let y = area.y + 1 + (n - first) as u16;
            let mut x = area.x;
            for (c, &w) in cols.iter().zip(&widths) {
                let (text, style) = c.cell(self, p);
                put_padded(buf, x, y, &text, usize::from(w), c.align(), style);
                x += w + 1;
            }
            if n == selected {
                // A background under the cells' own colours; reverse video without colour.
                let row = Rect::new(area.x, y, area.width, 1);
                let mark = if self.color {
                    Style::default().bg(Color::DarkGray)
                } else {
                    Style::default().add_modifier(Modifier::REVERSED)
                };
                buf.set_style(row, mark);
            }
        }
        if rows.is_empty() {
            let why = if self.frame.ports.is_empty() {
                "no ports to watch".to_string()
            } else {
                format!("no port matches the filter `{}`", self.view.active_filter())
            };
            buf.set_string(area.x, area.y + 1, why, Style::default());
        }
    }

    fn detail(&self, area: Rect, buf: &mut Buffer, p: &PortFrame) {
        if area.height < 3 {
            return;
        }
        let [chart, info] =
            Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
                .areas(area);
        self.chart(chart, buf, p);
        let lines = self.detail_lines(p);
        Paragraph::new(lines)
            .block(Block::bordered().title(format!(" {} ", p.id.label())))
            .render(info, buf);
    }

    fn chart(&self, area: Rect, buf: &mut Buffer, p: &PortFrame) {
        let unit = self.view.unit;
        let (scale, name) = match unit {
            RateUnit::Bits => (1.0, "Gb/s"),
            RateUnit::Bytes => (1.0 / 8.0, "GB/s"),
        };
        let points: Vec<_> = self
            .watcher
            .history(&p.id)
            .map(|h| h.iter().copied().collect())
            .unwrap_or_default();
        let rx: Vec<(f64, f64)> = points.iter().map(|q| (q.t_s, q.rx_gbps * scale)).collect();
        let tx: Vec<(f64, f64)> = points.iter().map(|q| (q.t_s, q.tx_gbps * scale)).collect();
        let (t0, t1) = match (points.first(), points.last()) {
            (Some(a), Some(b)) if b.t_s > a.t_s => (a.t_s, b.t_s),
            (Some(a), _) => (a.t_s - 1.0, a.t_s),
            _ => (0.0, 1.0),
        };
        let ceiling = p.ceiling_gbps.map(|c| c * scale);
        let top = rx
            .iter()
            .chain(&tx)
            .map(|q| q.1)
            .chain(ceiling)
            .fold(0.0, f64::max)
            .max(1e-3)
            * 1.1;
        let line: Vec<(f64, f64)> = ceiling.map(|c| vec![(t0, c), (t1, c)]).unwrap_or_default();
        let mut sets = vec![
            Dataset::default()
                .name("rx")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(self.style(Color::Cyan))
                .data(&rx),
            Dataset::default()
                .name("tx")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(self.style(Color::Magenta))
                .data(&tx),
        ];
        if !line.is_empty() {
            sets.push(
                Dataset::default()
                    .name("ceiling")
                    .marker(Marker::Dot)
                    .graph_type(GraphType::Line)
                    .style(self.style(Color::Green))
                    .data(&line),
            );
        }
        Chart::new(sets)
            .block(Block::bordered().title(format!(" {name}, last {} ", span_words(t1 - t0))))
            .x_axis(Axis::default().bounds([t0, t1]))
            .y_axis(Axis::default().bounds([0.0, top]).labels([
                "0".to_string(),
                fmt_sig(top / 1.1 / 2.0),
                fmt_sig(top / 1.1),
            ]))
            .render(area, buf);
    }

    fn detail_lines(&self, p: &PortFrame) -> Vec<Line<'static>> {
        let unit = self.view.unit;
        let mut out: Vec<Line<'static>> = Vec::new();
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let facts = self.watcher.port(&p.id);
        out.push(Line::from(format!(
            "{} {}  {}  {}  MTU {}  NUMA node {}",
            p.kind.as_str(),
            p.netdev.as_deref().unwrap_or(""),
            p.state,
            p.link.as_deref().unwrap_or("no link rate"),
            facts
                .and_then(|f| f.link.mtu)
                .map_or("-".into(), |m| m.to_string()),
            p.numa_node.map_or("unknown".into(), |n| n.to_string()),
        )));
        if let Some(pci) = facts.and_then(|f| f.pcie.as_ref()) {
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
            out.push(Line::from(format!(
                "PCIe {}: now {} · card {} · slot {}",
                pci.address,
                show(&pci.current),
                show(&pci.max),
                show(&pci.slot)
            )));
        }
        if let Some(f) = facts {
            out.push(Line::from(vec![
                Span::styled("ceiling ", bold),
                Span::raw(f.ceiling.summary.clone()),
            ]));
            for s in &f.ceiling.chain {
                out.push(Line::from(format!(
                    "  {:<13} {:>10}  {}",
                    s.stage.as_str(),
                    fmt_rate(s.gbps, unit),
                    s.explain
                )));
            }
            if let Some(b) = &f.bond {
                out.push(Line::from(format!(
                    "bond {}: {}{}",
                    b.mode.as_deref().unwrap_or("?"),
                    b.members.join(", "),
                    b.active
                        .as_ref()
                        .map_or(String::new(), |a| format!(" (active {a})"))
                )));
            }
        }
        if let Some(w) = &p.window {
            out.push(Line::from(vec![
                Span::styled("window ", bold),
                Span::styled(
                    format!("{} ({})", w.verdict, w.rule.as_str()),
                    self.verdict_style(w.verdict),
                ),
                Span::raw(format!(" over {}", span_words(w.span_s))),
            ]));
            for f in &w.findings {
                out.push(Line::from(format!("  {}: {}", f.rule.as_str(), f.text)));
            }
        }
        out.push(Line::styled(
            "counters (increase in the last interval, per second)",
            bold,
        ));
        for c in self.watcher.counters(&p.id) {
            let mut note = String::new();
            if c.saturated {
                note.push_str(" saturated");
            }
            if c.reset {
                note.push_str(" reset");
            }
            let style = if c.health && c.delta > 0 {
                self.style(Color::Red)
            } else {
                Style::default()
            };
            out.push(Line::styled(
                format!(
                    "  {:<32} {:>14} {:>12}/s{note}",
                    c.counter,
                    c.value,
                    c.per_s.map_or("-".into(), |r| fmt_round(r, 1)),
                ),
                style,
            ));
        }
        out
    }

    fn log(&self, area: Rect, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        buf.set_string(
            area.x,
            area.y,
            "link events",
            Style::default().add_modifier(Modifier::BOLD),
        );
        let log = self.watcher.log();
        let n = usize::from(area.height - 1);
        if log.is_empty() {
            buf.set_string(area.x + 12, area.y, "(none yet)", Style::default());
        }
        for (k, c) in log.iter().skip(log.len().saturating_sub(n)).enumerate() {
            let text = format!(
                "{}  {:<20} {}",
                fmt_utc_time(c.unix_ms),
                c.id.label(),
                c.words()
            );
            buf.set_stringn(
                area.x,
                area.y + 1 + k as u16,
                text,
                usize::from(area.width),
                self.style(Color::Yellow),
            );
        }
    }

    fn footer(&self, area: Rect, buf: &mut Buffer) {
        let line = match &self.view.editing {
            Some(t) => Line::from(vec![
                Span::styled("filter: ", Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(format!("{t}_")),
                Span::raw("   Enter apply  Esc cancel"),
            ]),
            None => {
                let filter = if self.view.filter.is_empty() {
                    String::new()
                } else {
                    format!("   filter `{}`", self.view.filter)
                };
                Line::from(format!(
                    "↑↓/jk move  Enter details  s sort  / filter  b bits/bytes  p pause  ? help  q quit{filter}"
                ))
            }
        };
        buf.set_line(area.x, area.y, &line, area.width);
    }
}

/// The help over the screen.
fn help(area: Rect, buf: &mut Buffer) {
    const KEYS: [(&str, &str); 11] = [
        ("↑ ↓  j k", "move the selection"),
        ("PgUp PgDn Home End", "move by a page, to the first or last"),
        (
            "Enter",
            "details of the selected port: history, ceiling chain, counters",
        ),
        ("s", "sort by rate, utilisation, errors, name"),
        (
            "/",
            "filter: every word must match (Enter applies, Esc cancels)",
        ),
        (
            "b",
            "bits (Gb/s = 10^9 bit/s) or bytes (GB/s = 10^9 byte/s)",
        ),
        ("p", "pause the screen (sampling goes on)"),
        ("?", "this help (any key closes it)"),
        ("q  Ctrl-C", "quit"),
        ("Esc", "close the details, clear the filter, else quit"),
        (
            "errors",
            "soak's verdict over the window, the counters that moved",
        ),
    ];
    let w = area.width.min(78);
    let h = (KEYS.len() as u16 + 4).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    let lines: Vec<Line<'static>> = KEYS
        .iter()
        .map(|(k, what)| Line::from(format!(" {k:<20} {what}")))
        .collect();
    Paragraph::new(lines)
        .block(Block::bordered().title(" linerate watch: keys "))
        .render(r, buf);
}

/// `text` cut or padded to `w` columns, on the side of `align`.
fn pad(text: &str, w: usize, align: Align) -> String {
    let n = text.chars().count();
    if n > w {
        let mut s: String = text.chars().take(w.saturating_sub(1)).collect();
        s.push('…');
        s
    } else if align == Align::Right {
        format!("{}{text}", " ".repeat(w - n))
    } else {
        format!("{text}{}", " ".repeat(w - n))
    }
}

/// A character the screen's cells hold as one grapheme one column wide whatever follows it:
/// printable ASCII, and the bar's and the cut's characters.
fn single_cell(c: char) -> bool {
    matches!(c, ' '..='~' | '█' | '▉'..='▏' | '·' | '…')
}

/// `buf.set_stringn(x, y, pad(text, w, align), w, style)` without building the padded text:
/// written cell by cell when every character is [`single_cell`] (every cell of the table but
/// an unusual port name), else by `set_stringn`. The same cells either way (a test compares
/// them).
fn put_padded(buf: &mut Buffer, x: u16, y: u16, text: &str, w: usize, align: Align, style: Style) {
    if !text.chars().all(single_cell) {
        buf.set_stringn(x, y, pad(text, w, align), w, style);
        return;
    }
    let room = usize::from(buf.area.right().saturating_sub(x)).min(w);
    let n = text.chars().count();
    let mut cells = 0;
    let mut put = |c: char| {
        if cells < room {
            buf[(x + cells as u16, y)].set_char(c).set_style(style);
            cells += 1;
        }
    };
    if n > w {
        text.chars().take(w.saturating_sub(1)).for_each(&mut put);
        put('…');
    } else {
        let fill = w - n;
        if align == Align::Right {
            (0..fill).for_each(|_| put(' '));
        }
        text.chars().for_each(&mut put);
        if align == Align::Left {
            (0..fill).for_each(|_| put(' '));
        }
    }
}

/// A bar of `u` (1 = full) in `cells` cells, in eighths: `█████▍·····`; past the ceiling its
/// last cell is `+`.
pub fn bar(u: f64, cells: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let u = if u.is_finite() { u.max(0.0) } else { 0.0 };
    let eighths = (u.min(1.0) * cells as f64 * 8.0).round() as usize;
    let full = eighths / 8;
    let mut s: String = "█".repeat(full);
    if full < cells {
        let part = eighths % 8;
        if part > 0 {
            s.push(EIGHTHS[part]);
        }
        let used = full + usize::from(part > 0);
        s.push_str(&"·".repeat(cells - used));
    }
    if u > 1.0 {
        s.pop();
        s.push('+');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The areas computed by hand are the layout solver's, on every screen drawn.
    #[test]
    fn areas_are_the_solvers() {
        for detail in [false, true] {
            for height in MIN_HEIGHT..=300 {
                for (x, y, width) in [(0, 0, MIN_WIDTH), (3, 2, 200), (0, 0, 1000)] {
                    let area = Rect::new(x, y, width, height);
                    assert_eq!(
                        areas(area, detail),
                        solved_areas(area, detail),
                        "{area:?} detail {detail}"
                    );
                }
            }
        }
    }

    /// A cell written by `put_padded` is the cell `set_stringn` writes of the padded text:
    /// short, long and exact texts, each side, cut by the buffer's edge, bars, a wide and a
    /// combining character.
    #[test]
    fn padded_cells_are_set_stringns() {
        let texts = [
            "",
            "ib0",
            "mlx5_0/1 ib0",
            "12.3 Gb/s*",
            "exactly10!",
            "a much longer text than the cell",
            "██▍·····",
            "███+",
            "…",
            "名前",
            "e\u{301}th0",
            "tab\there",
        ];
        let style = Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD);
        for text in texts {
            for align in [Align::Left, Align::Right] {
                for (x, w) in [(0, 10), (5, 1), (2, 0), (15, 10), (18, 4)] {
                    let area = Rect::new(0, 0, 20, 1);
                    let mut want = Buffer::empty(area);
                    want.set_stringn(x, 0, pad(text, w, align), w, style);
                    let mut got = Buffer::empty(area);
                    put_padded(&mut got, x, 0, text, w, align, style);
                    assert_eq!(got, want, "{text:?} {align:?} x {x} w {w}");
                }
            }
        }
    }

    #[test]
    fn bars_fill_in_eighths() {
        assert_eq!(bar(0.0, 4), "····");
        assert_eq!(bar(0.5, 4), "██··");
        assert_eq!(bar(0.53, 4), "██▏·");
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(1.3, 4), "███+");
        assert_eq!(bar(f64::NAN, 2), "··");
    }
}
