//! The man pages and shell completions in `packaging/` (what the .deb ships) are exactly what
//! `linerate generate` prints from the clap definitions today: a flag or help text changed without
//! regenerating them fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const REGEN: &str =
    "run `scripts/package.sh --regen` (it runs `linerate generate man packaging/man` \
     and `linerate generate completions SHELL` for each shell) and commit packaging/";

/// The files `scripts/package.sh --regen` writes, by shell.
const COMPLETIONS: [(&str, &str); 5] = [
    ("bash", "linerate.bash"),
    ("zsh", "_linerate"),
    ("fish", "linerate.fish"),
    ("elvish", "linerate.elv"),
    ("powershell", "_linerate.ps1"),
];

fn packaging() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging")
}

fn linerate() -> Command {
    let mut c = Command::cargo_bin("linerate").unwrap();
    c.env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_mins(1));
    c
}

fn pages(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}; {REGEN}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".1"))
        .collect()
}

#[test]
fn committed_man_pages_are_current() {
    let tmp = tempfile::tempdir().unwrap();
    let out = linerate()
        .args(["generate", "man"])
        .arg(tmp.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let generated = pages(tmp.path());
    // What it says it wrote is what it wrote: one line per page.
    assert_eq!(
        String::from_utf8(out).unwrap().lines().count(),
        generated.len()
    );
    for must in [
        "linerate.1",
        "linerate-doctor.1",
        "linerate-serve.1",
        "linerate-bench.1",
    ] {
        assert!(generated.contains(must), "no {must} in {generated:?}");
    }
    let committed_dir = packaging().join("man");
    let committed = pages(&committed_dir);
    assert_eq!(
        committed, generated,
        "packaging/man has other pages than `linerate generate man` writes: {REGEN}"
    );
    for name in &generated {
        let want = std::fs::read(tmp.path().join(name)).unwrap();
        let have = std::fs::read(committed_dir.join(name)).unwrap();
        assert!(have == want, "packaging/man/{name} is stale: {REGEN}");
    }
}

/// Each committed page as a reader gets it: NAME, SYNOPSIS, DESCRIPTION, EXIT STATUS, EXAMPLES
/// and SEE ALSO sections, no Markdown left, and a NAME line `apropos` shows whole.
#[test]
fn man_pages_have_the_sections_a_reader_expects() {
    let dir = packaging().join("man");
    let names = pages(&dir);
    assert!(names.len() >= 14, "{names:?}");
    for name in &names {
        let page = std::fs::read_to_string(dir.join(name)).unwrap();
        let sections: Vec<&str> = page
            .lines()
            .filter_map(|l| l.strip_prefix(".SH "))
            .map(|s| s.trim_matches('"'))
            .collect();
        for must in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "EXIT STATUS",
            "EXAMPLES",
            "SEE ALSO",
        ] {
            assert!(
                sections.contains(&must),
                "{name}: no {must} in {sections:?}"
            );
        }
        assert!(!page.contains('`'), "{name}: a Markdown backtick is left");
        // What `apropos linerate` prints for the page: `linerate-doctor (1)  - explain ...`, the
        // name padded to 20 columns (man-db's whatis), cut past 80 columns.
        let name_line = page
            .lines()
            .skip_while(|l| *l != ".SH NAME")
            .nth(1)
            .unwrap()
            .replace("\\-", "-");
        let (page_name, what) = name_line.split_once(" - ").unwrap();
        assert_eq!(
            format!("{page_name}.1"),
            *name,
            "{name}: NAME line {name_line:?}"
        );
        let apropos = format!("{:<20} - {what}", format!("{page_name} (1)"));
        assert!(
            apropos.chars().count() <= 80,
            "{name}: `{apropos}` is wider than 80 columns, so apropos cuts it: shorten the \
             command's about (cli.rs)"
        );
    }
    // The service's page says where the packaged service keeps its files.
    let serve = std::fs::read_to_string(dir.join("linerate-serve.1")).unwrap();
    let files = serve
        .split(".SH FILES")
        .nth(1)
        .expect("linerate-serve.1 has FILES");
    for path in [
        "/usr/lib/systemd/system/linerate\\-serve.service",
        "/etc/default/linerate",
        "/var/lib/linerate",
    ] {
        assert!(
            files.contains(path),
            "linerate-serve.1 FILES does not name {path}"
        );
    }
}

/// `man` renders every page without a warning, in 80 columns.
#[test]
fn man_pages_render_in_80_columns_without_warnings() {
    if std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_err()
    {
        linerate_testkit::skip("man is not installed (scripts/setup-tests.sh installs man-db)");
        return;
    }
    let dir = packaging().join("man");
    for name in pages(&dir) {
        let out = std::process::Command::new("man")
            .args(["-l", "--warnings", "-E", "UTF-8"])
            .arg(dir.join(&name))
            .env("MANWIDTH", "80")
            .env_remove("MAN_KEEP_FORMATTING")
            .env_remove("MANPAGER")
            .env("PAGER", "cat")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.trim().is_empty(),
            "{name}: {err}"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("EXIT STATUS"),
            "{name}: did not render:\n{text}"
        );
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(
            widest <= 80,
            "{name}: a line of {widest} columns:\n{}",
            text.lines().find(|l| l.chars().count() == widest).unwrap()
        );
    }
}

#[test]
fn committed_completions_are_current() {
    for (shell, file) in COMPLETIONS {
        let want = linerate()
            .args(["generate", "completions", shell])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        assert!(
            String::from_utf8_lossy(&want).contains("bench"),
            "{shell}: the completion script does not name the bench subcommand"
        );
        let path = packaging().join("completions").join(file);
        let have = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}; {REGEN}", path.display()));
        assert!(
            have == want,
            "packaging/completions/{file} is stale: {REGEN}"
        );
    }
}

#[test]
fn generate_refuses_bad_input_with_an_error() {
    linerate()
        .args(["generate", "completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("invalid value 'tcsh'"));
    // A DIR that cannot be created: under a regular file.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    std::fs::write(&file, "").unwrap();
    linerate()
        .args(["generate", "man"])
        .arg(file.join("man1"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("linerate: creating "));
}
