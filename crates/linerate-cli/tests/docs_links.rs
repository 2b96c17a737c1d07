//! No relative link in the README, the changelog or `docs/*.md` is dead: every file or directory
//! a link names exists, and every `#anchor` names a heading of the markdown file it points into
//! (GitHub's slugs: lowercase, spaces to `-`, punctuation dropped, `-1`, `-2`, ... for repeats).
//!
//! Links to other sites (`https:`, `mailto:`) are not followed: the test runs offline.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize()
        .unwrap_or_else(|e| panic!("the repository root {}: {e}", root.display()))
}

/// The markdown files whose links are checked.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    let docs = root.join("docs");
    let entries =
        std::fs::read_dir(&docs).unwrap_or_else(|e| panic!("reading {}: {e}", docs.display()));
    for e in entries {
        let path = e.expect("a docs/ entry").path();
        if path.extension().is_some_and(|x| x == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The text outside fenced code blocks and inline code spans, line by line: a `[x](y)` inside
/// code is an example, not a link. Each line keeps its number (1-based) for the messages.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    outside_fences(text)
        .map(|(n, line)| (n, strip_code_spans(line)))
        .collect()
}

/// Lines outside fenced code blocks (``` or ~~~), with their numbers (1-based).
fn outside_fences(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fence: Option<&str> = None;
    text.lines().enumerate().filter_map(move |(i, line)| {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => return Some((i + 1, line)),
            _ => {}
        }
        None
    })
}

/// A line with its inline code spans (`` `...` ``) removed.
fn strip_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links `[text](target)` and images `![alt](target)` of a line.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        let inner = &after[..end];
        // `[text](<a target>)` may hold spaces; `[text](target "title")`: the first word.
        let target = match inner.strip_prefix('<') {
            Some(t) => t.split('>').next().unwrap_or(""),
            None => inner.split_whitespace().next().unwrap_or(""),
        };
        out.push(target.to_owned());
        rest = &after[end + 1..];
    }
    out
}

/// GitHub's anchor of a heading: lowercase; letters, digits, `-` and `_` kept; spaces become
/// `-`; everything else (punctuation, backticks, `/`, `.`) dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a markdown file offers: its headings' slugs, with GitHub's `-1`, `-2`, ...
/// suffixes for repeated ones.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    // Code spans kept: a heading's `` `linerate probe` `` is part of its slug, without the
    // backticks.
    for (_, line) in outside_fences(text) {
        let Some(heading) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut candidate = base.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{base}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// What is wrong with one link of `file`, or None when it resolves.
fn check_link(file: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link target".to_owned());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path_part, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let dest = if path_part.is_empty() {
        file.to_path_buf()
    } else if path_part.starts_with('/') {
        return Some(format!(
            "`{target}` is absolute: links must be relative to work on GitHub and in a clone"
        ));
    } else {
        file.parent().expect("a file's directory").join(path_part)
    };
    if !dest.exists() {
        return Some(format!("`{target}`: {} does not exist", dest.display()));
    }
    let anchor = anchor?;
    if dest.extension().is_none_or(|x| x != "md") {
        return Some(format!(
            "`{target}`: an anchor into a file that is not markdown"
        ));
    }
    let text = std::fs::read_to_string(&dest)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dest.display()));
    (!anchors(&text).contains(anchor)).then(|| {
        format!(
            "`{target}`: {} has no heading whose anchor is `#{anchor}`",
            dest.display()
        )
    })
}

/// Every dead relative link of the given markdown files, as `file:line: what`.
fn dead_links(files: &[PathBuf]) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut dead = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (n, line) in prose_lines(&text) {
            for target in link_targets(&line) {
                checked += 1;
                if let Some(why) = check_link(file, &target) {
                    dead.push(format!("{}:{n}: {why}", file.display()));
                }
            }
        }
    }
    (checked, dead)
}

#[test]
fn no_dead_relative_link_in_readme_or_docs() {
    let root = repo_root();
    let files = markdown_files(&root);
    assert!(
        files.len() > 3,
        "expected the README, the changelog and docs/*.md, found {files:?}"
    );
    let (checked, dead) = dead_links(&files);
    // The README alone links every doc and every schema: far more than this.
    assert!(
        checked > 40,
        "only {checked} links found: is the parser broken?"
    );
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

#[test]
fn readme_links_every_doc_and_every_schema() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let targets: HashSet<String> = prose_lines(&readme)
        .iter()
        .flat_map(|(_, l)| link_targets(l))
        .map(|t| t.split('#').next().unwrap_or("").to_owned())
        .collect();
    let mut missing = Vec::new();
    for dir in ["docs", "schemas"] {
        for e in std::fs::read_dir(root.join(dir)).expect(dir) {
            let name = e.expect("an entry").file_name();
            let rel = format!("{dir}/{}", name.to_string_lossy());
            if !targets.contains(&rel) {
                missing.push(rel);
            }
        }
    }
    assert!(missing.is_empty(), "README.md does not link {missing:?}");
}

// The checker itself, on constructed input: it must find what is dead and accept what is not.

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("Exit status"), "exit-status");
    assert_eq!(slug("`linerate doctor [HOST]`"), "linerate-doctor-host");
    assert_eq!(
        slug("The host stack: paths without hardware (loopback, veth, bridges)"),
        "the-host-stack-paths-without-hardware-loopback-veth-bridges"
    );
    assert_eq!(slug("linerate-cli and tests"), "linerate-cli-and-tests");
    let a = anchors("# A\n## A\n```\n# not a heading\n```\n#nospace\n");
    assert_eq!(a, HashSet::from(["a".to_owned(), "a-1".to_owned()]));
}

#[test]
fn links_outside_code_only() {
    let lines = prose_lines("see [x](a.md) and `[y](b.md)`\n```\n[z](c.md)\n```\n");
    let targets: Vec<String> = lines.iter().flat_map(|(_, l)| link_targets(l)).collect();
    assert_eq!(targets, ["a.md"]);
    assert_eq!(
        link_targets("![img](p.png \"t\") [l](<q r.md>)"),
        ["p.png", "q r.md"]
    );
}

#[test]
fn dead_files_and_anchors_are_found() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let a = dir.path().join("a.md");
    std::fs::write(dir.path().join("b.md"), "# Title\n## Some `code` here\n").expect("b.md");
    std::fs::write(
        &a,
        "[ok](b.md) [ok](b.md#title) [ok](b.md#some-code-here) [ok](#top) [web](https://x.invalid/y)\n\
         # Top\n[gone](missing.md) [bad anchor](b.md#nope) [self](#nowhere)\n",
    )
    .expect("a.md");
    let (checked, dead) = dead_links(&[a]);
    assert_eq!(checked, 8);
    assert_eq!(dead.len(), 3, "{dead:?}");
    assert!(
        dead[0].contains("missing.md") && dead[0].contains(":3:"),
        "{dead:?}"
    );
    assert!(dead[1].contains("#nope"), "{dead:?}");
    assert!(dead[2].contains("#nowhere"), "{dead:?}");
}
