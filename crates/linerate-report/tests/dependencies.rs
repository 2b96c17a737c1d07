//! `linerate-report` is documented as pure renderers: functions from data to text and JSON. It
//! must depend on data (model, inventory, rules, results, proto, mesh) and never on the crates that
//! measure (doctor, bench, engine, storage, rdma): those pull in sockets, io_uring and the
//! libfabric FFI, and a renderer that can reach them stops being testable on constructed data.
//! This test reads the manifests, so a dependency added by mistake fails here, with its name,
//! rather than going unnoticed until someone looks at `cargo tree`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What `linerate-report` may depend on directly.
const ALLOWED: &[&str] = &[
    "linerate-facts",
    "linerate-units",
    "linerate-model",
    "linerate-results",
    "linerate-proto",
    "linerate-mesh",
    "linerate-soak",
    "serde",
    "serde_json",
    "anstyle",
];

/// What it must not reach, directly or through a workspace crate it depends on.
const FORBIDDEN: &[&str] = &[
    "linerate-doctor",
    "linerate-bench",
    "linerate-engine",
    "linerate-storage",
    "linerate-rdma",
    "io-uring",
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits in crates/")
        .to_path_buf()
}

/// The names of a manifest's normal dependencies: `[dependencies]`, `[dependencies.NAME]` and
/// `[target.'cfg(..)'.dependencies]` (dev- and build-dependencies do not reach users). A
/// renamed dependency (`x = { package = "..." }`) counts under its package name.
fn dependencies(manifest: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            if let Some(name) = header.strip_prefix("dependencies.") {
                names.insert(name.trim_matches('"').to_string());
                in_deps = false;
            } else {
                in_deps = header == "dependencies" || header.ends_with(".dependencies");
            }
            continue;
        }
        if !in_deps {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let package = value.split_once("package").and_then(|(_, rest)| {
            let rest = rest.trim_start().strip_prefix('=')?.trim_start();
            rest.strip_prefix('"')?.split('"').next()
        });
        // `name.workspace = true` and `name = "1"` both start with the name.
        let key = key
            .split('.')
            .next()
            .unwrap_or(key)
            .trim()
            .trim_matches('"');
        names.insert(package.unwrap_or(key).to_string());
    }
    names
}

fn manifest_of(krate: &str) -> String {
    let path = crates_dir().join(krate).join("Cargo.toml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_parser_reads_every_form_of_dependency() {
    let deps = dependencies(
        "[package]\nname = \"x\"\n\n[dependencies]\na.workspace = true\nb = \"1\"\n\
         c = { version = \"1\", package = \"real-c\" }\n\n[dev-dependencies]\nd = \"1\"\n\n\
         [target.'cfg(unix)'.dependencies]\ne = \"1\"\n\n[dependencies.f]\nversion = \"1\"\n",
    );
    let want: BTreeSet<String> = ["a", "b", "real-c", "e", "f"]
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(deps, want);
}

#[test]
fn report_depends_only_on_data_crates() {
    let deps = dependencies(&manifest_of("linerate-report"));
    // The manifest was read: the data the renderers show comes from these.
    assert!(deps.contains("linerate-results") && deps.contains("linerate-facts"));
    let extra: Vec<&String> = deps
        .iter()
        .filter(|d| !ALLOWED.contains(&d.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "linerate-report depends on {extra:?}: renderers take data; move the types they need \
         into linerate-results or linerate-rules instead"
    );
}

#[test]
fn report_reaches_no_engine_through_the_workspace() {
    // Walk the workspace crates report depends on, and theirs, collecting every dependency.
    let mut seen = BTreeSet::new();
    let mut todo = vec!["linerate-report".to_string()];
    while let Some(krate) = todo.pop() {
        for dep in dependencies(&manifest_of(&krate)) {
            if dep.starts_with("linerate-") && !seen.contains(&dep) {
                todo.push(dep.clone());
            }
            seen.insert(dep);
        }
    }
    assert!(
        seen.contains("linerate-units"),
        "the walk went through the workspace"
    );
    let reached: Vec<&&str> = FORBIDDEN.iter().filter(|f| seen.contains(**f)).collect();
    assert!(
        reached.is_empty(),
        "linerate-report reaches {reached:?} through its dependencies: {seen:?}"
    );
}
