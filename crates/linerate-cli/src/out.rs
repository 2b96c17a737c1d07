//! Writing to stdout: colour decision, and a closed pipe is not an error.

use std::io::{IsTerminal, Write};

use linerate_report::Style;

use crate::cli::ColorWhen;

pub fn style(when: ColorWhen) -> Style {
    let color = match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    };
    Style { color }
}

/// Print, treating a closed pipe (`| head`) as success.
pub fn print(s: &str) -> std::io::Result<()> {
    let mut o = std::io::stdout().lock();
    match o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
