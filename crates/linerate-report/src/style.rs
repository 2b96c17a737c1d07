//! Terminal styling that can be switched off (pipes, NO_COLOR, --color never).

use anstyle::{AnsiColor, Effects};
use linerate_facts::Severity;

/// Whether to emit ANSI styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub const PLAIN: Style = Style { color: false };

    fn paint(self, s: &str, st: anstyle::Style) -> String {
        if self.color {
            format!("{}{s}{}", st.render(), st.render_reset())
        } else {
            s.to_string()
        }
    }

    pub fn bold(self, s: &str) -> String {
        self.paint(s, anstyle::Style::new().effects(Effects::BOLD))
    }

    pub fn dim(self, s: &str) -> String {
        self.paint(s, anstyle::Style::new().effects(Effects::DIMMED))
    }

    pub fn good(self, s: &str) -> String {
        self.paint(
            s,
            anstyle::Style::new().fg_color(Some(AnsiColor::Green.into())),
        )
    }

    pub fn severity(self, sev: Severity, s: &str) -> String {
        let c = match sev {
            Severity::Error => AnsiColor::Red,
            Severity::Warning => AnsiColor::Yellow,
            Severity::Info => AnsiColor::Cyan,
        };
        self.paint(
            s,
            anstyle::Style::new()
                .fg_color(Some(c.into()))
                .effects(if sev == Severity::Info {
                    Effects::new()
                } else {
                    Effects::BOLD
                }),
        )
    }
}
