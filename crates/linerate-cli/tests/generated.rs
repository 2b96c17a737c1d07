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
