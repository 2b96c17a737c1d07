//! Headless Chromium for the tests that look at what linerate draws: doctor's HTML report
//! (`crates/linerate-cli/tests/report_html.rs`) and the screenshot of `linerate watch`'s screen
//! (`watch_tmux.rs`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Chromium binary: `$CHROMIUM` when set (and then only it), else `chromium` /
/// `chromium-browser` on the PATH or in /usr/bin.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
        .find(|p| p.is_file())
}

/// A headless Chromium with a fresh profile under `dir/profile`, no network, `extra` flags and
/// then the page.
pub fn headless(bin: &Path, dir: &Path, profile: &str, extra: &[String], page: &Path) -> Command {
    let home = dir.join(profile);
    std::fs::create_dir_all(home.join("profile")).expect("a profile directory");
    let mut c = Command::new(bin);
    c.env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            // Any fetch from the network fails outright (the pages must not make one).
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!(
            "--user-data-dir={}",
            home.join("profile").display()
        ))
        .args(extra)
        .arg(format!("file://{}", page.display()));
    c
}

/// Width and height of a PNG, from its IHDR chunk.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert!(
        png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG"
    );
    (be(&png[16..20]), be(&png[20..24]))
}

/// The 16 colours of a dark terminal.
const PALETTE: [&str; 16] = [
    "#1d1f21", "#cc6666", "#8cb369", "#f0c674", "#81a2be", "#b294bb", "#8abeb7", "#c5c8c6",
    "#666666", "#d54e53", "#b9ca4a", "#e7c547", "#7aa6da", "#c397d8", "#70c0b1", "#eaeaea",
];

/// The colour of an xterm 256-colour index.
fn color256(n: u16) -> String {
    match n {
        0..=15 => PALETTE[n as usize].to_string(),
        16..=231 => {
            let n = n - 16;
            let c = |v: u16| if v == 0 { 0 } else { 55 + v * 40 };
            format!("#{:02x}{:02x}{:02x}", c(n / 36), c(n / 6 % 6), c(n % 6))
        }
        _ => {
            let g = 8 + (n - 232) * 10;
            format!("#{g:02x}{g:02x}{g:02x}")
        }
    }
}

/// The style SGR sequences have set so far.
#[derive(Clone, Default, PartialEq)]
struct Pen {
    fg: Option<String>,
    bg: Option<String>,
    bold: bool,
    dim: bool,
    reverse: bool,
}
/// The pen after one SGR sequence's codes (`1;36`, `38;5;196`).
fn apply(pen: &mut Pen, codes: &str) {
    let v: Vec<u16> = codes.split(';').map(|c| c.parse().unwrap_or(0)).collect();
    let mut i = 0;
    while i < v.len() {
        match v[i] {
            0 => *pen = Pen::default(),
            1 => pen.bold = true,
            2 => pen.dim = true,
            7 => pen.reverse = true,
            22 => (pen.bold, pen.dim) = (false, false),
            27 => pen.reverse = false,
            30..=37 => pen.fg = Some(PALETTE[(v[i] - 30) as usize].into()),
            90..=97 => pen.fg = Some(PALETTE[(v[i] - 90 + 8) as usize].into()),
            40..=47 => pen.bg = Some(PALETTE[(v[i] - 40) as usize].into()),
            100..=107 => pen.bg = Some(PALETTE[(v[i] - 100 + 8) as usize].into()),
            39 => pen.fg = None,
            49 => pen.bg = None,
            38 | 48 if v.get(i + 1) == Some(&5) => {
                let c = color256(*v.get(i + 2).unwrap_or(&7));
                if v[i] == 38 {
                    pen.fg = Some(c);
                } else {
                    pen.bg = Some(c);
                }
                i += 2;
            }
            38 | 48 if v.get(i + 1) == Some(&2) => {
                let g = |k: usize| *v.get(i + k).unwrap_or(&0) as u8;
                let c = format!("#{:02x}{:02x}{:02x}", g(2), g(3), g(4));
                if v[i] == 38 {
                    pen.fg = Some(c);
                } else {
                    pen.bg = Some(c);
                }
                i += 4;
            }
            _ => {}
        }
        i += 1;
    }
}
/// The `<span>` that draws with `pen`.
fn open(pen: &Pen) -> String {
    let (mut fg, mut bg) = (
        pen.fg.clone().unwrap_or_else(|| PALETTE[7].into()),
        pen.bg.clone().unwrap_or_else(|| PALETTE[0].into()),
    );
    if pen.reverse {
        std::mem::swap(&mut fg, &mut bg);
    }
    format!(
        "<span style=\"color:{fg};background:{bg};{}{}\">",
        if pen.bold { "font-weight:bold;" } else { "" },
        if pen.dim { "opacity:0.7;" } else { "" }
    )
}

/// A terminal capture with SGR colours (`tmux capture-pane -e`) as an HTML page: the cells in
/// a `<pre>`, one `<span>` per run of one style, on a dark terminal's 16 colours (256 and RGB
/// colours too).
pub fn ansi_html(ansi: &str) -> String {
    let mut out = String::from(
        "<!doctype html><meta charset=\"utf-8\"><body style=\"margin:0;background:#1d1f21\">\
         <pre style=\"margin:12px;font:13px/1.25 'DejaVu Sans Mono',monospace;color:#c5c8c6\">",
    );
    let mut pen = Pen::default();
    out.push_str(&open(&pen));
    let mut chars = ansi.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            let mut codes = String::new();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    if d == 'm' {
                        let before = pen.clone();
                        apply(&mut pen, &codes);
                        if pen != before {
                            out.push_str("</span>");
                            out.push_str(&open(&pen));
                        }
                    }
                    break;
                }
                codes.push(d);
            }
            continue;
        }
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            // One cell each, whatever the font's fallback makes of box drawing and braille.
            _ if !c.is_ascii() => {
                let _ = write!(
                    out,
                    "<span style=\"display:inline-block;width:1ch\">{c}</span>"
                );
            }
            _ => out.push(c),
        }
    }
    out.push_str("</span></pre></body>");
    out
}

/// The text of a terminal capture, its escape sequences left out.
pub fn ansi_strip(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_becomes_coloured_spans() {
        let page = ansi_html("\x1b[1;36mrx <b>\x1b[0m \x1b[38;5;196mred\x1b[7m rev");
        assert!(
            page.contains("color:#8abeb7;background:#1d1f21;font-weight:bold;\">rx &lt;b&gt;"),
            "{page}"
        );
        assert!(page.contains("color:#ff0000;"), "{page}");
        assert!(page.contains("color:#1d1f21;background:#ff0000;"), "{page}");
        assert_eq!(ansi_strip("\x1b[1mA\x1b[0m B"), "A B");
    }
}
