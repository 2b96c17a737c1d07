//! CHANGELOG.md (Keep a Changelog) to a Debian changelog (deb-changelog(5)), for
//! `/usr/share/doc/linerate/changelog.Debian.gz`: what `apt-listchanges` shows on an upgrade.
//!
//! Each `## [X]` section becomes an entry `linerate (X-1)`. The package being built, version V,
//! gets `[Unreleased]` and `[V]` together: both are in this build. A `### Heading` becomes a
//! `* Heading:` line with its items below it; Markdown (backticks, bold, links) is dropped, and
//! lines are wrapped to fit 80 columns, as lintian wants.

use std::fmt::Write as _;

use crate::date::{rfc2822, Date};

/// One `## [X]` section.
#[derive(Debug, PartialEq)]
pub struct Release {
    /// `None` for `[Unreleased]`.
    pub version: Option<String>,
    /// The date after the version (`## [0.2.0] - 2026-12-01`); `None` when it has none.
    pub date: Option<Date>,
    pub groups: Vec<Group>,
}

/// The items under one `### Heading` (or under none, before the first).
#[derive(Debug, PartialEq)]
pub struct Group {
    pub heading: Option<String>,
    pub items: Vec<Item>,
}

/// A bullet (or a paragraph) with its nested bullets, each on one line.
#[derive(Debug, PartialEq)]
pub struct Item {
    pub text: String,
    pub sub: Vec<String>,
}

/// What the Debian changelog's entries need besides CHANGELOG.md.
#[derive(Debug)]
pub struct ChangelogOptions {
    pub package: String,
    /// The Debian version being built, `0.1.0-1`: the upstream version, a dash, the revision.
    pub version: String,
    pub distribution: String,
    /// `Name <address>`.
    pub maintainer: String,
    /// Seconds since the Unix epoch: the date of an entry CHANGELOG.md gives no date (the
    /// build's SOURCE_DATE_EPOCH, so two builds of one commit write the same file).
    pub epoch: i64,
}

/// Lines of a Debian changelog are at most this wide (lintian: debian-changelog-line-too-long
/// above 80).
const WIDTH: usize = 79;

/// The sections of a Keep a Changelog file, top first; the text before the first `##` (title,
/// introduction) and link definitions are left out.
pub fn parse(md: &str) -> Result<Vec<Release>, String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Last {
        Nothing,
        Item,
        Sub,
        Paragraph,
    }
    let mut releases: Vec<Release> = Vec::new();
    let mut last = Last::Nothing;
    for (n, line) in md.lines().enumerate() {
        let at = || format!("CHANGELOG.md line {}", n + 1);
        if let Some(h) = line.strip_prefix("## ") {
            releases.push(release_heading(h).map_err(|e| format!("{}: {e}", at()))?);
            last = Last::Nothing;
            continue;
        }
        let Some(rel) = releases.last_mut() else {
            continue; // title and introduction
        };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            last = Last::Nothing;
            continue;
        }
        if let Some(h) = line.strip_prefix("### ") {
            rel.groups.push(Group {
                heading: Some(plain(h.trim())),
                items: Vec::new(),
            });
            last = Last::Nothing;
            continue;
        }
        if is_link_definition(line) {
            continue;
        }
        if line.starts_with('#') {
            return Err(format!("{}: a heading below ### is not supported", at()));
        }
        if rel.groups.is_empty() {
            rel.groups.push(Group {
                heading: None,
                items: Vec::new(),
            });
        }
        let items = &mut rel.groups.last_mut().expect("pushed above").items;
        let indent = line.len() - line.trim_start().len();
        if let Some(text) = trimmed.strip_prefix("- ").or(trimmed.strip_prefix("* ")) {
            if indent == 0 {
                items.push(Item {
                    text: text.to_string(),
                    sub: Vec::new(),
                });
                last = Last::Item;
            } else {
                let item = items
                    .last_mut()
                    .filter(|_| last != Last::Nothing)
                    .ok_or_else(|| format!("{}: a nested item outside an item", at()))?;
                item.sub.push(text.to_string());
                last = Last::Sub;
            }
            continue;
        }
        match last {
            Last::Item | Last::Paragraph if indent < 4 || last == Last::Paragraph => {
                let item = items.last_mut().expect("an item was pushed");
                item.text.push(' ');
                item.text.push_str(trimmed);
            }
            Last::Item | Last::Sub => {
                let item = items.last_mut().expect("an item was pushed");
                match item.sub.last_mut() {
                    Some(s) => {
                        s.push(' ');
                        s.push_str(trimmed);
                    }
                    None => {
                        item.text.push(' ');
                        item.text.push_str(trimmed);
                    }
                }
            }
            Last::Nothing | Last::Paragraph => {
                items.push(Item {
                    text: trimmed.to_string(),
                    sub: Vec::new(),
                });
                last = Last::Paragraph;
            }
        }
    }
    Ok(releases)
}

/// `[Unreleased]`, `[0.1.0] - not yet released`, `[0.2.0] - 2026-12-01`.
fn release_heading(h: &str) -> Result<Release, String> {
    let (name, rest) = h
        .trim()
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .ok_or_else(|| format!("`## {h}` is not `## [VERSION] - DATE` or `## [Unreleased]`"))?;
    let version = (!name.eq_ignore_ascii_case("unreleased")).then(|| name.to_string());
    if let Some(v) = &version {
        if v.is_empty()
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".+~-".contains(c))
        {
            return Err(format!("`{v}` is not a version Debian accepts"));
        }
    }
    let date = rest
        .trim()
        .trim_start_matches(['-', '–'])
        .split_whitespace()
        .next()
        .and_then(Date::parse_iso);
    Ok(Release {
        version,
        date,
        groups: Vec::new(),
    })
}

fn is_link_definition(line: &str) -> bool {
    line.starts_with('[')
        && line
            .split_once("]: ")
            .is_some_and(|(label, _)| !label.contains(']'))
}

/// Markdown inline markup dropped: `code`, **bold**, [text](url) becomes text.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let tail = &rest[open + 1..];
        let link = tail.find("](").and_then(|mid| {
            let after = &tail[mid + 2..];
            after.find(')').map(|close| (mid, mid + 2 + close + 1))
        });
        match link {
            Some((mid, end)) if !tail[..mid].contains('[') => {
                out.push_str(&rest[..open]);
                out.push_str(&tail[..mid]);
                rest = &tail[end..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out.replace("**", "").replace('`', "")
}

/// The Debian changelog: the entry of the version being built, then one per older release.
pub fn render(releases: &[Release], o: &ChangelogOptions) -> Result<String, String> {
    let (upstream, _) = o
        .version
        .rsplit_once('-')
        .ok_or_else(|| format!("`{}` has no Debian revision (`0.1.0-1`)", o.version))?;
    let unreleased = releases.iter().find(|r| r.version.is_none());
    let this = releases
        .iter()
        .find(|r| r.version.as_deref() == Some(upstream));
    if unreleased.is_none() && this.is_none() {
        return Err(format!(
            "CHANGELOG.md has neither an [Unreleased] nor a [{upstream}] section"
        ));
    }
    let unreleased_items = unreleased.is_some_and(|r| r.groups.iter().any(|g| !g.items.is_empty()));
    let date = match this.and_then(|r| r.date) {
        Some(d) if !unreleased_items => d.at_midnight(),
        _ => o.epoch,
    };
    let groups: Vec<&Group> = unreleased
        .into_iter()
        .chain(this)
        .flat_map(|r| &r.groups)
        .collect();
    let mut out = String::new();
    entry(&mut out, o, &o.version, &groups, date);
    // Older releases: those below the one being built (all of them when it has no section of
    // its own yet), each released with a date; none may be above it.
    let pos = releases
        .iter()
        .position(|r| r.version.as_deref() == Some(upstream));
    if let Some(newer) = releases[..pos.unwrap_or(0)]
        .iter()
        .find_map(|r| r.version.as_deref())
    {
        return Err(format!(
            "CHANGELOG.md: [{newer}] is above [{upstream}], the version being built"
        ));
    }
    for r in releases[pos.map_or(0, |p| p + 1)..]
        .iter()
        .filter(|r| r.version.is_some())
    {
        let v = r.version.as_deref().unwrap_or_default();
        let d = r.date.ok_or_else(|| {
            format!("CHANGELOG.md: [{v}] comes before {upstream} but has no release date")
        })?;
        let groups: Vec<&Group> = r.groups.iter().collect();
        out.push('\n');
        entry(&mut out, o, &format!("{v}-1"), &groups, d.at_midnight());
    }
    Ok(out)
}

fn entry(out: &mut String, o: &ChangelogOptions, version: &str, groups: &[&Group], epoch: i64) {
    let _ = writeln!(
        out,
        "{} ({version}) {}; urgency=medium\n",
        o.package, o.distribution
    );
    let mut any = false;
    for g in groups.iter().filter(|g| !g.items.is_empty()) {
        any = true;
        let (item_mark, item_indent) = match &g.heading {
            Some(h) => {
                wrap(out, "  * ", "    ", &format!("{}:", plain(h)));
                ("    - ", "      ")
            }
            None => ("  * ", "    "),
        };
        let sub_mark = format!("{item_indent}+ ");
        let sub_indent = format!("{item_indent}  ");
        for item in &g.items {
            wrap(out, item_mark, item_indent, &plain(&item.text));
            for s in &item.sub {
                wrap(out, &sub_mark, &sub_indent, &plain(s));
            }
        }
    }
    if !any {
        wrap(out, "  * ", "    ", &format!("Version {version}."));
    }
    let _ = writeln!(out, "\n -- {}  {}", o.maintainer, rfc2822(epoch));
}

/// `text` after `first` on its first line and `rest` on the others, words wrapped at WIDTH.
fn wrap(out: &mut String, first: &str, rest: &str, text: &str) {
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "# Changelog

All notable changes. See [Keep a Changelog](https://keepachangelog.com/).

## [Unreleased]

### `linerate mesh`

- **`linerate mesh`** runtime: rank 0's coordinator, see [docs/mesh.md](docs/mesh.md); a
  continuation line.
- verdicts:
  - per link,
    continued;
  - per node.

## [0.2.0] - not yet released

The second version.

### Added

- `bench --file`.

## [0.1.0] - 2026-03-02

- First.

[Unreleased]: https://example.org/compare
";

    fn opts(version: &str) -> ChangelogOptions {
        ChangelogOptions {
            package: "linerate".into(),
            version: version.into(),
            distribution: "unstable".into(),
            maintainer: "M <m@example.org>".into(),
            epoch: 1_795_651_200, // 2026-11-26 00:00:00 UTC, a Thursday
        }
    }

    #[test]
    fn parses_sections_groups_items_and_nesting() {
        let r = parse(MD).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].version, None);
        assert_eq!(r[1].version.as_deref(), Some("0.2.0"));
        assert_eq!(r[1].date, None);
        assert_eq!(r[2].date, Date::parse_iso("2026-03-02"));
        let mesh = &r[0].groups[0];
        assert_eq!(mesh.heading.as_deref(), Some("linerate mesh"));
        assert_eq!(
            mesh.items[0].text,
            "**`linerate mesh`** runtime: rank 0's coordinator, see [docs/mesh.md](docs/mesh.md); a continuation line."
        );
        assert_eq!(mesh.items[1].sub, vec!["per link, continued;", "per node."]);
        // A paragraph before the first ### is an item of a group without heading.
        assert_eq!(r[1].groups[0].heading, None);
        assert_eq!(r[1].groups[0].items[0].text, "The second version.");
        assert_eq!(r[2].groups[0].items[0].text, "First.");
    }

    #[test]
    fn markdown_is_dropped() {
        assert_eq!(
            plain("**`a`** see [docs/x.md](docs/x.md#y) and [b] or `c`"),
            "a see docs/x.md and [b] or c"
        );
    }

    #[test]
    fn the_built_version_gets_unreleased_and_its_own_section() {
        let out = render(&parse(MD).unwrap(), &opts("0.2.0-1")).unwrap();
        let want = "\
linerate (0.2.0-1) unstable; urgency=medium

  * linerate mesh:
    - linerate mesh runtime: rank 0's coordinator, see docs/mesh.md; a
      continuation line.
    - verdicts:
      + per link, continued;
      + per node.
  * The second version.
  * Added:
    - bench --file.

 -- M <m@example.org>  Thu, 26 Nov 2026 00:00:00 +0000

linerate (0.1.0-1) unstable; urgency=medium

  * First.

 -- M <m@example.org>  Mon, 02 Mar 2026 00:00:00 +0000
";
        assert_eq!(out, want);
        assert!(out.lines().all(|l| l.chars().count() <= 80));
    }

    #[test]
    fn an_inconsistent_changelog_is_refused() {
        let r = parse(MD).unwrap();
        // 0.1.0 is below an unreleased 0.2.0.
        assert!(render(&r, &opts("0.1.0-1"))
            .unwrap_err()
            .contains("[0.2.0] is above"));
        // No section for 0.3.0 and [0.2.0] has no date: it cannot be an older release.
        let e = render(&r, &opts("0.3.0-1")).unwrap_err();
        assert!(e.contains("[0.2.0] comes before 0.3.0"), "{e}");
        assert!(render(&r, &opts("0.2.0")).unwrap_err().contains("revision"));
        assert!(parse("## 0.1.0\n").is_err());
        assert!(parse("## [0.1.0]\n  - nested first\n").is_err());
        assert!(render(
            &parse("## [0.1.0] - 2026-01-01\n- a\n").unwrap(),
            &opts("0.2.0-1")
        )
        .is_err());
    }

    #[test]
    fn a_released_version_keeps_its_date() {
        let md = "## [Unreleased]\n\n## [0.1.0] - 2026-03-02\n\n- First.\n";
        let out = render(&parse(md).unwrap(), &opts("0.1.0-1")).unwrap();
        assert!(out.ends_with("Mon, 02 Mar 2026 00:00:00 +0000\n"), "{out}");
    }

    #[test]
    fn long_words_and_lines_wrap_within_80_columns() {
        let md = format!("## [Unreleased]\n\n- {}\n", "word ".repeat(60));
        let out = render(&parse(&md).unwrap(), &opts("0.1.0-1")).unwrap();
        assert!(out.lines().count() > 6);
        assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    }
}
