//! Man pages from the clap definitions in `cli.rs` (`linerate generate man`): one page per
//! command, with the sections a man page reader expects (NAME, SYNOPSIS, DESCRIPTION, COMMANDS,
//! OPTIONS, EXIT STATUS, FILES, EXAMPLES, SEE ALSO), from the same texts as `--help`.
//!
//! A command's `after_help` follows a convention (`AfterHelp::parse`, checked for every command
//! by `cli.rs`'s tests): paragraphs separated by blank lines; one that starts `Exit status:`
//! lists the codes; the last, `Examples:`, holds `# comment` / command pairs; any other
//! paragraph is more description. Text in backticks is set in bold, as a command or a name to
//! type; roff does the filling, so a page fits the reader's terminal (80 columns included).
//!
//! The output is deterministic (no date, no host name): `packaging/man` holds a generated copy
//! that the .deb ships, and `tests/generated.rs` fails when it differs from what this writes.

use std::collections::BTreeSet;

use clap::{Arg, ArgAction, Command};
use roff::{bold, italic, roman, Inline, Roff};

/// The widest example command line, in characters: a page indents an example by 11 columns (7
/// for the section, 4 for the example), and an example is not filled, so anything wider would
/// run past 80 columns.
pub const EXAMPLE_WIDTH: usize = 69;

/// FILES sections: the files a command reads or writes that are not named by an option.
const FILES: &[(&str, &[(&str, &str)])] = &[
    (
        "linerate-serve",
        &[
            (
                "/usr/lib/systemd/system/linerate-serve.service",
                "The systemd unit the Debian package installs, disabled: \
                 `systemctl enable --now linerate-serve` starts it. It runs `linerate serve` \
                 under a dynamic user in a sandbox; local changes go in a drop-in \
                 (`systemctl edit linerate-serve`).",
            ),
            (
                "/etc/default/linerate",
                "The service's options: `LINERATE_SERVE_OPTS`, the arguments the unit gives \
                 `linerate serve` (examples in the file). A configuration file: kept on \
                 removal, deleted on purge.",
            ),
            (
                "/var/lib/linerate",
                "The service's state directory, a link to /var/lib/private/linerate: the one \
                 place the service may write, so the `--write-dir` for `bench --file` copies. \
                 Purging the package (`dpkg --purge linerate`) deletes it with the copies in it.",
            ),
        ],
    ),
    (
        "linerate-setup",
        &[(
            linerate_setup::apply::BACKUP_DIR,
            "One directory per `--apply`, named by the id it printed: the files it replaced, \
             byte for byte, which `--rollback ID` restores. Kept when the package is purged: \
             they are the administrator's.",
        )],
    ),
];

/// SEE ALSO entries beyond linerate's own pages (found from the texts).
const SEE_ALSO: &[(&str, &[&str])] = &[
    ("linerate-bench", &["iperf3(1)"]),
    ("linerate-disk", &["fio(1)"]),
    ("linerate-mesh", &["mpirun(1)", "srun(1)", "pdsh(1)"]),
    ("linerate-serve", &["systemctl(1)", "systemd.exec(5)"]),
    (
        "linerate-setup",
        &["nmcli(1)", "netplan(5)", "sysctl.conf(5)"],
    ),
    ("linerate-soak", &["ethtool(8)"]),
];

/// One page: its file name (`linerate-doctor.1`) and roff source.
#[derive(Debug)]
pub struct Page {
    pub file_name: String,
    pub source: String,
}

/// What a command's `after_help` says, by the convention in the module documentation.
#[derive(Debug, Default, PartialEq)]
pub struct AfterHelp {
    /// More description, one entry per paragraph, its lines joined.
    pub prose: Vec<String>,
    /// `Exit status: 0 healthy, 1 a finding, 2 could not run.`: (code, meaning), codes rising.
    pub exit_status: Vec<(u8, String)>,
    pub examples: Vec<Example>,
}

/// One example: what it does, and the command (a line ending in ` \` continues on the next).
#[derive(Debug, PartialEq)]
pub struct Example {
    pub comment: String,
    pub lines: Vec<String>,
}

impl Example {
    /// The command as one line, continuations joined (what the tests parse).
    #[cfg(test)]
    pub fn command(&self) -> String {
        self.lines
            .iter()
            .map(|l| l.strip_suffix('\\').unwrap_or(l).trim())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl AfterHelp {
    /// Parses an `after_help`; the error says which rule of the convention it breaks.
    pub fn parse(text: &str) -> Result<AfterHelp, String> {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .rposition(|l| l.trim() == "Examples:")
            .ok_or("no `Examples:` section")?;
        let mut a = AfterHelp {
            examples: examples(&lines[at + 1..])?,
            ..AfterHelp::default()
        };
        for para in lines[..at].split(|l| l.trim().is_empty()) {
            let joined = para.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
            if joined.is_empty() {
                continue;
            }
            if let Some(list) = joined.strip_prefix("Exit status:") {
                if !a.exit_status.is_empty() {
                    return Err("two `Exit status:` paragraphs".into());
                }
                a.exit_status = exit_status(list)?;
            } else if joined.contains("Exit status:") {
                return Err(format!(
                    "`Exit status:` must start its own paragraph: {joined:?}"
                ));
            } else {
                a.prose.push(joined);
            }
        }
        Ok(a)
    }
}

fn examples(lines: &[&str]) -> Result<Vec<Example>, String> {
    let mut out: Vec<Example> = Vec::new();
    let mut lines = lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    while let Some(first) = lines.next() {
        let comment = first
            .strip_prefix("# ")
            .ok_or_else(|| format!("expected a `# comment` line, got {first:?}"))?;
        let mut cmd = vec![lines
            .next()
            .filter(|l| l.starts_with("linerate "))
            .ok_or_else(|| format!("`# {comment}` is not followed by a `linerate ...` line"))?
            .to_string()];
        while cmd.last().is_some_and(|l| l.ends_with('\\')) {
            let more = lines
                .next()
                .ok_or_else(|| format!("`{}` continues past the end", cmd[0]))?;
            cmd.push(format!("  {more}"));
        }
        out.push(Example {
            comment: comment.to_string(),
            lines: cmd,
        });
    }
    Ok(out)
}

/// `0 healthy, 1 a finding at or above --fail-on, 2 could not run.`: items start at the
/// beginning and after each `, N `.
fn exit_status(list: &str) -> Result<Vec<(u8, String)>, String> {
    let list = list.trim();
    let list = list.strip_suffix('.').unwrap_or(list);
    let mut starts = vec![0];
    starts.extend(
        list.match_indices(", ")
            .map(|(i, _)| i + 2)
            .filter(|&i| starts_with_code(&list[i..])),
    );
    let mut out: Vec<(u8, String)> = Vec::new();
    for (n, &s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(list.len(), |&e| e - 2);
        let item = &list[s..end];
        let (code, meaning) = item
            .split_once(' ')
            .filter(|_| starts_with_code(item))
            .ok_or_else(|| format!("`Exit status:` item {item:?} is not `CODE meaning`"))?;
        let code: u8 = code
            .parse()
            .map_err(|_| format!("`Exit status:` code {code:?} is not 0-255"))?;
        if out.last().is_some_and(|(c, _)| *c >= code) {
            return Err(format!("`Exit status:` codes must rise: {list:?}"));
        }
        out.push((code, meaning.trim().to_string()));
    }
    if out.first().is_none_or(|(c, _)| *c != 0) {
        return Err(format!("`Exit status:` must start with 0: {list:?}"));
    }
    Ok(out)
}

fn starts_with_code(s: &str) -> bool {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && s.as_bytes().get(digits) == Some(&b' ')
}

/// Every page: the root's and one per visible subcommand, nested ones included, in that order.
/// `root` must have been built (`Command::build`), which gives subcommands their display names.
pub fn pages(root: &Command) -> Result<Vec<Page>, String> {
    let version = root.get_version().unwrap_or("").to_string();
    let top: Vec<String> = visible_subcommands(root)
        .map(|s| s.get_name().to_string())
        .collect();
    let mut out = Vec::new();
    walk(root, &[], &version, &top, &mut out)?;
    Ok(out)
}

fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

fn walk(
    cmd: &Command,
    parent: &[String],
    version: &str,
    top: &[String],
    out: &mut Vec<Page>,
) -> Result<(), String> {
    let mut path = parent.to_vec();
    path.push(cmd.get_name().to_string());
    let name = path.join("-");
    let source = page(cmd, &path, version, top).map_err(|e| format!("{name}: {e}"))?;
    out.push(Page {
        file_name: format!("{name}.1"),
        source,
    });
    for sub in visible_subcommands(cmd) {
        walk(sub, &path, version, top, out)?;
    }
    Ok(())
}

fn page(cmd: &Command, path: &[String], version: &str, top: &[String]) -> Result<String, String> {
    let name = path.join("-");
    let after = AfterHelp::parse(
        &cmd.get_after_long_help()
            .or(cmd.get_after_help())
            .map(ToString::to_string)
            .unwrap_or_default(),
    )?;
    if after.exit_status.is_empty() {
        return Err("no `Exit status:` paragraph in its after_help".into());
    }
    if let Some(wide) = after
        .examples
        .iter()
        .flat_map(|e| &e.lines)
        .find(|l| l.chars().count() > EXAMPLE_WIDTH)
    {
        return Err(format!(
            "the example line `{wide}` is wider than {EXAMPLE_WIDTH} characters"
        ));
    }
    let mut r = Roff::new();
    // No hyphenation: option names, commands and paths stay whole. The man macros reset
    // hyphenation from this register at every paragraph, so it is set before they start.
    r.control("nr", ["HY", "0"]);
    // .TH title section date source manual: no date, so the page is the same whenever built.
    r.control(
        "TH",
        [
            esc(&name.to_uppercase()).as_str(),
            "1",
            "\"\"",
            &format!("linerate {version}"),
            // The header's middle: short, so that the longest page name fits on both sides.
            "linerate",
        ],
    );
    // Left-aligned: words evenly spaced, as a terminal reader expects.
    r.control("ad", ["l"]);
    r.control("SH", ["NAME"]);
    r.text([roman(format!("{name} - {}", name_line(cmd)))]);
    synopsis(&mut r, cmd, path);
    description(&mut r, cmd, &after);
    commands(&mut r, cmd, path);
    options(&mut r, cmd);
    exit_section(&mut r, &after);
    files(&mut r, &name);
    examples_section(&mut r, &after);
    see_also(&mut r, cmd, path, top, &after);
    Ok(break_after_bars(&r.render()))
}

/// Lets roff break a long `a|b|c` list (`LINK forms`) after each bar: `\:` is a break point
/// that prints nothing. Only in text lines; control lines and examples keep theirs.
fn break_after_bars(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut literal = false;
    for line in page.lines() {
        if line.starts_with(".EX") {
            literal = true;
        } else if line.starts_with(".EE") {
            literal = false;
        }
        if literal || line.starts_with('.') {
            out.push_str(line);
        } else {
            out.push_str(&line.replace('|', "|\\:"));
        }
        out.push('\n');
    }
    out
}

/// The NAME line's description: the command's `about`, lower-cased as man pages write it
/// (`Explain ...` becomes `explain ...`, `TCP ...` stays), without a final period.
pub fn name_line(cmd: &Command) -> String {
    let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
    let about = about.trim().trim_end_matches('.');
    let mut chars = about.chars();
    match (chars.next(), chars.next()) {
        (Some(a), Some(b)) if a.is_uppercase() && b.is_lowercase() => a
            .to_lowercase()
            .chain(about[a.len_utf8()..].chars())
            .collect(),
        _ => about.to_string(),
    }
}

fn synopsis(r: &mut Roff, cmd: &Command, path: &[String]) {
    r.control("SH", ["SYNOPSIS"]);
    r.control("SY", [esc(&path.join(" ")).as_str()]);
    for a in cmd
        .get_arguments()
        .filter(|a| shown(a) && !a.is_positional() && !is_help_or_version(a))
    {
        let flag = a.get_long().map_or_else(
            || format!("-{}", a.get_short().unwrap_or('?')),
            |l| format!("--{l}"),
        );
        if takes_value(a) {
            // `[--flag VALUE]` is not broken: a list of values too long for one line gives
            // way to the argument's name (the values are under OPTIONS).
            let mut v = value_name(a);
            let indent = 7 + path.join(" ").len() + 1;
            if indent + flag.len() + v.len() + 3 > 78 {
                v = a.get_id().as_str().to_uppercase();
            }
            r.control("OP", [esc(&flag).as_str(), esc(&v).as_str()]);
        } else {
            r.control("OP", [esc(&flag).as_str()]);
        }
    }
    for a in cmd
        .get_arguments()
        .filter(|a| shown(a) && a.is_positional())
    {
        let mut v = value_name(a);
        if repeats(a) {
            v.push_str("...");
        }
        if a.is_required_set() {
            r.text([italic(v)]);
        } else {
            r.text([roman("["), italic(v), roman("]")]);
        }
    }
    if visible_subcommands(cmd).next().is_some() {
        r.text([italic("COMMAND"), roman(" ...")]);
    }
    r.control("YS", []);
}

fn description(r: &mut Roff, cmd: &Command, after: &AfterHelp) {
    r.control("SH", ["DESCRIPTION"]);
    let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
    let long = cmd.get_long_about().map(ToString::to_string);
    let mut paras: Vec<String> = match &long {
        // The first paragraph of a long about is the about, already the NAME line.
        Some(l) => {
            let mut p = paragraphs(l);
            if p.len() > 1 && p[0].trim_end_matches('.') == about.trim_end_matches('.') {
                p.remove(0);
            }
            p
        }
        None => vec![about],
    };
    paras.extend(after.prose.iter().cloned());
    for (i, p) in paras.iter().enumerate() {
        if i > 0 {
            r.control("PP", []);
        }
        r.text(inline(&sentence(p)));
    }
}

fn commands(r: &mut Roff, cmd: &Command, path: &[String]) {
    if visible_subcommands(cmd).next().is_none() {
        return;
    }
    r.control("SH", ["COMMANDS"]);
    for sub in visible_subcommands(cmd) {
        let full = format!("{} {}", path.join(" "), sub.get_name());
        let page = format!("{}-{}", path.join("-"), sub.get_name());
        r.control("TP", []);
        r.text([bold(full)]);
        let mut line = inline(&sentence(
            &sub.get_about().map(ToString::to_string).unwrap_or_default(),
        ));
        line.extend([roman(" See "), bold(page), roman("(1).")]);
        r.text(line);
    }
}

fn options(r: &mut Roff, cmd: &Command) {
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| shown(a) && a.is_positional())
        .chain(
            cmd.get_arguments()
                .filter(|a| shown(a) && !a.is_positional()),
        )
        .collect();
    if args.is_empty() {
        return;
    }
    r.control("SH", ["OPTIONS"]);
    for a in args {
        r.control("TP", []);
        r.text(arg_heading(a));
        let help = a
            .get_long_help()
            .or(a.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        let mut paras: Vec<String> = paragraphs(&help).iter().map(|p| sentence(p)).collect();
        let mut tail = Vec::new();
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| match v.get_help() {
                Some(h) => format!("`{}` ({h})", v.get_name()),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        if takes_value(a) && !values.is_empty() {
            tail.push(format!("One of {}.", values.join(", ")));
        }
        let defaults: Vec<String> = a
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect();
        if takes_value(a) && !defaults.is_empty() && !a.is_hide_default_value_set() {
            tail.push(format!("Default: {}.", defaults.join(", ")));
        }
        if !tail.is_empty() {
            match paras.last_mut() {
                Some(last) => {
                    last.push(' ');
                    last.push_str(&tail.join(" "));
                }
                None => paras.push(tail.join(" ")),
            }
        }
        for (i, p) in paras.iter().enumerate() {
            if i > 0 {
                r.control("IP", []);
            }
            r.text(inline(p));
        }
    }
}

/// `-p, --port PORT`, `--quick`, `HOST`.
fn arg_heading(a: &Arg) -> Vec<Inline> {
    if a.is_positional() {
        let mut v = value_name(a);
        if repeats(a) {
            v.push_str("...");
        }
        return vec![italic(v)];
    }
    let mut out = Vec::new();
    if let Some(s) = a.get_short() {
        out.push(bold(format!("-{s}")));
    }
    if let Some(l) = a.get_long() {
        if !out.is_empty() {
            out.push(roman(", "));
        }
        out.push(bold(format!("--{l}")));
    }
    if takes_value(a) {
        out.push(roman(" "));
        out.push(italic(value_name(a)));
    }
    out
}

fn exit_section(r: &mut Roff, after: &AfterHelp) {
    r.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in &after.exit_status {
        r.control("TP", ["4"]);
        r.text([bold(code.to_string())]);
        r.text(inline(&sentence(&capitalized(meaning))));
    }
}

fn files(r: &mut Roff, name: &str) {
    let Some((_, list)) = FILES.iter().find(|(n, _)| *n == name) else {
        return;
    };
    r.control("SH", ["FILES"]);
    for (path, what) in *list {
        r.control("TP", []);
        r.text([italic(*path)]);
        r.text(inline(what));
    }
}

fn examples_section(r: &mut Roff, after: &AfterHelp) {
    r.control("SH", ["EXAMPLES"]);
    for (i, ex) in after.examples.iter().enumerate() {
        if i > 0 {
            r.control("PP", []);
        }
        let mut comment = capitalized(&ex.comment);
        comment.push(':');
        r.text(inline(&comment));
        r.control("PP", []);
        r.control("RS", ["4"]);
        r.control("EX", []);
        for line in &ex.lines {
            r.text([roman(line.as_str())]);
        }
        r.control("EE", []);
        r.control("RE", []);
    }
}

fn see_also(r: &mut Roff, cmd: &Command, path: &[String], top: &[String], after: &AfterHelp) {
    let name = path.join("-");
    let mut pages: BTreeSet<String> = BTreeSet::new();
    if path.len() > 1 {
        pages.insert(path[..path.len() - 1].join("-"));
    }
    for sub in visible_subcommands(cmd) {
        pages.insert(format!("{name}-{}", sub.get_name()));
    }
    // Other commands the page's texts name (`linerate serve`).
    let mut texts: Vec<String> = vec![
        cmd.get_about().map(ToString::to_string).unwrap_or_default(),
        cmd.get_long_about()
            .map(ToString::to_string)
            .unwrap_or_default(),
    ];
    texts.extend(after.prose.iter().cloned());
    texts.extend(after.examples.iter().map(|e| e.comment.clone()));
    texts.extend(cmd.get_arguments().filter(|a| shown(a)).map(|a| {
        a.get_long_help()
            .or(a.get_help())
            .map(ToString::to_string)
            .unwrap_or_default()
    }));
    if path.len() > 1 {
        for t in &texts {
            for sub in top {
                if mentions(t, &format!("linerate {sub}")) {
                    pages.insert(format!("linerate-{sub}"));
                }
            }
        }
        pages.insert("linerate".to_string());
    }
    pages.remove(&name);
    let mut refs: Vec<String> = pages.into_iter().map(|p| format!("{p}(1)")).collect();
    if let Some((_, more)) = SEE_ALSO.iter().find(|(n, _)| *n == name) {
        refs.extend(more.iter().map(ToString::to_string));
    }
    r.control("SH", ["SEE ALSO"]);
    let mut line = Vec::new();
    for (i, re) in refs.iter().enumerate() {
        let (page, section) = re.split_once('(').unwrap_or((re, ""));
        if i > 0 {
            line.push(roman(", "));
        }
        line.push(bold(page));
        line.push(roman(format!("({section}")));
    }
    r.text(line);
}

/// `text` names `cmd` as a command: `linerate serve` in `a linerate serve.` but not in
/// `linerate server`.
fn mentions(text: &str, cmd: &str) -> bool {
    text.match_indices(cmd).any(|(i, _)| {
        !text[i + cmd.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

fn shown(a: &Arg) -> bool {
    !a.is_hide_set()
}

fn is_help_or_version(a: &Arg) -> bool {
    matches!(
        a.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    )
}

fn takes_value(a: &Arg) -> bool {
    a.get_action().takes_values()
}

fn repeats(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::Append)
        || a.get_num_args().is_some_and(|n| n.max_values() > 1)
}

/// `PORT`, `SECS`, or the possible values when they are few (`auto|always|never`) and the
/// argument has no value name of its own; clap's default otherwise (the id in capitals, which
/// build() gives every argument: so a value name equal to it counts as none).
fn value_name(a: &Arg) -> String {
    let default = a.get_id().as_str().to_uppercase();
    // build() gives every argument clap's default name: the id in capitals.
    let named = a
        .get_value_names()
        .map(|n| {
            n.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|n| *n != default);
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    match named {
        Some(n) => n,
        None if !values.is_empty() && values.join("|").len() <= 24 => values.join("|"),
        None => default,
    }
}

/// Paragraphs of a help text (blank-line separated), each on one line.
fn paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect()
}

/// A help text as a sentence: clap drops the final period of a one-line help.
fn sentence(text: &str) -> String {
    let t = text.trim();
    if t.ends_with(['.', '?', '!', ':']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Text with `code` spans set in bold, the backticks dropped.
fn inline(text: &str) -> Vec<Inline> {
    text.split('`')
        .enumerate()
        .filter(|(_, s)| !s.is_empty())
        .map(|(i, s)| if i % 2 == 1 { bold(s) } else { roman(s) })
        .collect()
}

/// An argument of a control line (`.SY`, `.OP`): roff's escapes for backslash and minus.
fn esc(s: &str) -> String {
    s.replace('\\', r"\e").replace('-', r"\-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_lists_codes_in_order() {
        assert_eq!(
            exit_status(" 0 healthy, 1 a finding at or above --fail-on, 2 could not run.").unwrap(),
            vec![
                (0, "healthy".to_string()),
                (1, "a finding at or above --fail-on".to_string()),
                (2, "could not run".to_string()),
            ]
        );
        // A comma inside a meaning is not a new item unless a code follows it.
        assert_eq!(
            exit_status("0 clean (or congested, or idle), 2 stopped, early").unwrap(),
            vec![
                (0, "clean (or congested, or idle)".to_string()),
                (2, "stopped, early".to_string()),
            ]
        );
        assert!(exit_status("healthy, 1 bad").is_err());
        assert!(exit_status("1 bad, 0 good").is_err());
        assert!(exit_status("0 good, 0 good").is_err());
        assert!(exit_status("0 good, 300 bad").is_err());
        assert!(exit_status("").is_err());
    }

    #[test]
    fn after_help_splits_prose_exit_status_and_examples() {
        let a = AfterHelp::parse(
            "Some words\nacross lines.\n\nExit status: 0 ok, 2 could not run.\n\nExamples:\n  \
             # one\n  linerate probe\n  # two, continued\n  linerate probe \\\n    --json\n",
        )
        .unwrap();
        assert_eq!(a.prose, vec!["Some words across lines.".to_string()]);
        assert_eq!(a.exit_status.len(), 2);
        assert_eq!(a.examples.len(), 2);
        assert_eq!(a.examples[1].command(), "linerate probe --json");
        assert_eq!(a.examples[1].lines, vec!["linerate probe \\", "  --json"]);
        assert!(AfterHelp::parse("words\n").is_err());
        assert!(AfterHelp::parse("Examples:\n  linerate probe\n").is_err());
        assert!(AfterHelp::parse("Examples:\n  # x\n  ls\n").is_err());
        assert!(AfterHelp::parse("Examples:\n  # x\n  linerate a \\\n").is_err());
        assert!(
            AfterHelp::parse("Sizes. Exit status: 0 ok.\n\nExamples:\n  # x\n  linerate a\n")
                .is_err()
        );
    }

    #[test]
    fn name_line_is_lower_cased_like_a_man_page() {
        let c = Command::new("x").about("Explain why.");
        assert_eq!(name_line(&c), "explain why");
        let c = Command::new("x").about("TCP bandwidth");
        assert_eq!(name_line(&c), "TCP bandwidth");
    }

    #[test]
    fn mentions_needs_the_whole_command_name() {
        assert!(mentions("a `linerate serve`.", "linerate serve"));
        assert!(mentions("linerate serve", "linerate serve"));
        assert!(!mentions("linerate server", "linerate serve"));
        assert!(!mentions("linerate serve-x", "linerate serve"));
    }

    #[test]
    fn code_spans_become_bold() {
        let r = Roff::new()
            .text(inline("run `linerate serve` now"))
            .to_roff();
        assert_eq!(r, "run \\fBlinerate serve\\fR now\n");
    }
}
