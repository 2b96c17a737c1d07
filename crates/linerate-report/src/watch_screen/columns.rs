//! The table's columns: one row of [`columns!`] each (its title, width, the priority that keeps
//! it on a narrow screen, its alignment) and one arm of [`Column::cell`] (its text and colour
//! for a port). A column is a variant, not a position: the order of the rows is the order on
//! screen, and a row without its arm in `cell` does not build.
//!
//! To add one: a row here, then the arm the compiler asks for. When it shows something the
//! frame does not carry yet, a field of `linerate_watch::PortFrame` first (the compiler then
//! names where a frame is built, and `schemas/watch-stream.schema.json` needs its entry: the
//! schema test in `linerate-watch` fails until it has it).

use linerate_facts::{dbm, Level};
use linerate_units::fmt_utc_time;
use linerate_watch::PortFrame;
use ratatui_core::style::{Color, Modifier, Style};

use super::{bar, WatchScreen};
use crate::watch::{ceiling_words, error_words, fmt_pps, fmt_rate};

/// How wide a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    /// Always this many cells.
    Fixed(u16),
    /// What the other columns leave (shared when there are several), never under `min`;
    /// counted as `fit` when choosing the columns a screen has room for.
    Rest { fit: u16, min: u16 },
}

/// Which side of its cell a column's text keeps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// The priority of a column always shown.
pub(crate) const ALWAYS: u8 = 0;

macro_rules! columns {
    ($($variant:ident => $title:literal, $width:expr, priority $priority:literal, $align:ident;)*) => {
        /// A column of the table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Column {
            $($variant,)*
        }

        impl Column {
            /// Every column, from the left.
            pub(crate) const ALL: &'static [Self] = &[$(Self::$variant,)*];

            pub(crate) fn title(self) -> &'static str {
                match self {
                    $(Self::$variant => $title,)*
                }
            }

            pub(crate) fn width(self) -> Width {
                match self {
                    $(Self::$variant => $width,)*
                }
            }

            /// On a narrow screen the columns of the highest number go first; [`ALWAYS`]
            /// stays.
            pub(crate) fn priority(self) -> u8 {
                match self {
                    $(Self::$variant => $priority,)*
                }
            }

            pub(crate) fn align(self) -> Align {
                match self {
                    $(Self::$variant => Align::$align,)*
                }
            }
        }
    };
}

columns! {
    Port => "PORT", Width::Fixed(16), priority 0, Left;
    Kind => "KIND", Width::Fixed(5), priority 4, Left;
    State => "STATE", Width::Fixed(12), priority 3, Left;
    Link => "LINK", Width::Fixed(8), priority 5, Left;
    Rx => "RX", Width::Fixed(10), priority 0, Right;
    Tx => "TX", Width::Fixed(10), priority 0, Right;
    RxPkt => "RX PKT", Width::Fixed(10), priority 6, Right;
    TxPkt => "TX PKT", Width::Fixed(10), priority 6, Right;
    Utilisation => "UTILISATION", Width::Fixed(17), priority 1, Left;
    Ceiling => "CEILING", Width::Fixed(22), priority 2, Left;
    Temp => "TEMP", Width::Fixed(7), priority 7, Right;
    Light => "RX LIGHT", Width::Fixed(10), priority 7, Right;
    Events => "ERRORS / LINK EVENTS", Width::Rest { fit: 16, min: 8 }, priority 0, Left;
}

/// Cells of the bar in the UTILISATION column (the rest is the percentage).
const BAR: usize = 11;

impl Column {
    /// This column's text and style for port `p` on `screen`.
    pub(crate) fn cell(self, screen: &WatchScreen<'_>, p: &PortFrame) -> (String, Style) {
        let unit = screen.view.unit;
        let plain = Style::default();
        let rate = |g: Option<f64>| g.map_or("-".into(), |g| fmt_rate(g, unit));
        let pps = |n: Option<f64>| n.map_or("-".into(), fmt_pps);
        match self {
            Self::Port => {
                let name = if p.id.label() == p.name {
                    p.name.clone()
                } else {
                    format!("{} {}", p.name, p.id.label())
                };
                (name, Style::default().add_modifier(Modifier::BOLD))
            }
            Self::Kind => (p.kind.short().to_string(), plain),
            Self::State => {
                let style = if p.up {
                    plain
                } else {
                    screen.style(Color::Red)
                };
                (p.state.clone(), style)
            }
            Self::Link => (p.link.clone().unwrap_or_else(|| "-".into()), plain),
            Self::Rx => {
                let mut rx = rate(p.rx_gbps);
                if p.rate_saturated {
                    rx.push('*');
                }
                (rx, screen.style(Color::Cyan))
            }
            Self::Tx => (rate(p.tx_gbps), screen.style(Color::Magenta)),
            Self::RxPkt => (pps(p.rx_pps), plain),
            Self::TxPkt => (pps(p.tx_pps), plain),
            Self::Utilisation => utilisation(screen, p.utilisation),
            Self::Ceiling => (ceiling_words(p, unit), plain),
            Self::Events => events(screen, p),
            Self::Temp => match &p.temperature {
                Some(t) => (format!("{:.0} °C", t.c), level_style(screen, t.level)),
                None => ("-".into(), plain),
            },
            Self::Light => match &p.rx_power {
                Some(r) => (
                    dbm(r.mw).map_or("no light".into(), |d| format!("{d:.1} dBm")),
                    level_style(screen, r.level),
                ),
                None => ("-".into(), plain),
            },
        }
    }
}

/// A PHY reading's colour: yellow past a warning, red past an alarm.
fn level_style(screen: &WatchScreen<'_>, l: Level) -> Style {
    match l {
        Level::Normal => Style::default(),
        Level::LowWarning | Level::HighWarning => screen.style(Color::Yellow),
        Level::LowAlarm | Level::HighAlarm => screen.style(Color::Red),
    }
}

/// The bar against the ceiling and the percentage, bold green from 90 %.
fn utilisation(screen: &WatchScreen<'_>, u: Option<f64>) -> (String, Style) {
    match u {
        Some(u) => {
            let text = format!("{} {:>4}", bar(u, BAR), format!("{}%", (u * 100.0).round()));
            let style = screen.style(Color::Green);
            if u >= 0.9 {
                (text, style.add_modifier(Modifier::BOLD))
            } else {
                (text, style)
            }
        }
        None => (format!("{} {:>4}", " ".repeat(BAR), "-"), Style::default()),
    }
}

/// soak's verdict over the window (else the counters that moved in the interval), then the
/// latest link event with its time; coloured by the verdict, else yellow for an event.
fn events(screen: &WatchScreen<'_>, p: &PortFrame) -> (String, Style) {
    let mut events = Vec::new();
    let mut style = Style::default();
    if let Some(e) = error_words(p) {
        if let Some(w) = &p.window {
            style = screen.verdict_style(w.verdict);
        }
        events.push(e);
    } else if !p.moved.is_empty() {
        events.push(
            p.moved
                .iter()
                .map(|m| m.counter.clone())
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    if let Some(c) = &p.last_change {
        if events.is_empty() {
            style = screen.style(Color::Yellow);
        }
        events.push(format!("{} at {}", c.words(), fmt_utc_time(c.unix_ms)));
    }
    (events.join("; "), style)
}

impl Column {
    /// Whether the column has anything to show for `rows`: the PHY readings only where a port
    /// reports them (most ports have no sensor or optic to read), every other column always.
    pub(crate) fn shown(self, rows: &[&PortFrame]) -> bool {
        match self {
            Self::Temp => rows.iter().any(|p| p.temperature.is_some()),
            Self::Light => rows.iter().any(|p| p.rx_power.is_some()),
            _ => true,
        }
    }
}

/// The columns that `shown` keeps and that fit `width`, from the left: the highest priority
/// numbers go first.
pub(crate) fn fitting(width: u16, shown: impl Fn(Column) -> bool) -> Vec<Column> {
    let mut keep: Vec<Column> = Column::ALL.iter().copied().filter(|c| shown(*c)).collect();
    let total = |k: &[Column]| {
        k.iter()
            .map(|c| match c.width() {
                Width::Fixed(w) | Width::Rest { fit: w, .. } => w + 1,
            })
            .sum::<u16>()
    };
    let lowest = Column::ALL
        .iter()
        .map(|c| c.priority())
        .max()
        .unwrap_or(ALWAYS);
    for p in (ALWAYS + 1..=lowest).rev() {
        if total(&keep) <= width {
            break;
        }
        keep.retain(|c| c.priority() != p);
    }
    keep
}

/// Each of `cols`' width on a table `width` cells wide: the fixed ones as they are, the rest
/// shared among the others (one cell between two columns).
pub(crate) fn widths(cols: &[Column], width: u16) -> Vec<u16> {
    let fixed: u16 = cols
        .iter()
        .filter_map(|c| match c.width() {
            Width::Fixed(w) => Some(w + 1),
            Width::Rest { .. } => None,
        })
        .sum();
    let rest = cols
        .iter()
        .filter(|c| matches!(c.width(), Width::Rest { .. }))
        .count();
    let rest = u16::try_from(rest).unwrap_or(u16::MAX).max(1);
    let share = width.saturating_sub(fixed).saturating_sub(rest - 1) / rest;
    cols.iter()
        .map(|c| match c.width() {
            Width::Fixed(w) => w,
            Width::Rest { min, .. } => share.max(min),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_screens_drop_columns_by_priority() {
        assert_eq!(fitting(400, |_| true), Column::ALL);
        assert!(!fitting(400, |c| c != Column::Temp).contains(&Column::Temp));
        let titles =
            |w: u16| -> Vec<&str> { fitting(w, |_| true).iter().map(|c| c.title()).collect() };
        assert_eq!(
            titles(80),
            ["PORT", "RX", "TX", "UTILISATION", "ERRORS / LINK EVENTS"]
        );
        assert!(titles(100).contains(&"CEILING"));
        assert!(titles(125).contains(&"LINK") && !titles(125).contains(&"RX PKT"));
    }

    #[test]
    fn the_rest_of_the_screen_goes_to_the_stretching_column() {
        let cols = fitting(80, |_| true);
        let w = widths(&cols, 80);
        // PORT 16, RX 10, TX 10, UTILISATION 17, each with its gap: 57; the events get 23.
        assert_eq!(w, [16, 10, 10, 17, 23]);
        // Never under its minimum, even past the edge.
        assert_eq!(widths(&cols, 40).last(), Some(&8));
    }

    #[test]
    fn every_column_is_listed_once_with_a_title() {
        for (i, c) in Column::ALL.iter().enumerate() {
            assert!(!c.title().is_empty());
            assert!(!Column::ALL[i + 1..].contains(c), "{c:?} twice");
        }
        assert!(Column::ALL.iter().any(|c| c.priority() == ALWAYS));
    }
}
