//! The workspace's shape, checked: which crates may depend on which, no module cycle inside a
//! crate, one name per type. `cargo metadata` gives the graph as cargo sees it (every manifest
//! form, renamed packages, target-specific dependencies); the sources give the modules.
//!
//! Every crate is in one class:
//! - **pure**: data and pure functions; reads no file, opens no socket, calls no system
//!   interface. Tested on constructed data. A pure crate depends only on pure crates, the codec,
//!   and the external crates in [`PURE_EXTERNAL`].
//! - **codec**: `linerate-proto` and `linerate-iperf3`, the control protocols' messages, frames
//!   and each end's conversation as a machine fed bytes, time and events (sans I/O). Beyond
//!   that, linerate-proto reads the key file its caller names (`load_psk`), draws nonces from
//!   the OS, and reads and writes frames on a blocking stream its caller opened, for the peers
//!   that speak one frame at a time (the mesh's rank protocol, tests playing a peer): no
//!   socket, no system state. Pure crates may use their types (a test's parameters are part of
//!   every result); they depend only on pure crates.
//! - **io**: the crates that read the system, measure or write: they may depend on anything
//!   but the dev kit.
//! - **dev**: `linerate-testkit`, for tests only, and `linerate-dist`, a tool of the packaging
//!   script; neither is shipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const PURE: &[&str] = &[
    "linerate-units",
    "linerate-model",
    "linerate-stats",
    "linerate-facts",
    "linerate-phy",
    "linerate-results",
    "linerate-rules",
    "linerate-soak",
    "linerate-watch",
    "linerate-mesh",
    "linerate-report",
];
const CODEC: &[&str] = &["linerate-proto", "linerate-iperf3"];
const IO: &[&str] = &[
    "linerate-inventory",
    "linerate-engine",
    "linerate-rdma",
    "linerate-storage",
    "linerate-bench",
    "linerate-doctor",
    "linerate-setup",
    "linerate-cluster",
    "linerate-soak-run",
    "linerate-ssh",
    "linerate",
];
const DEV: &[&str] = &["linerate-testkit", "linerate-dist", "linerate-lab"];

/// External crates a pure crate may use: serialization, errors, a histogram, terminal styles
/// and cells.
const PURE_EXTERNAL: &[&str] = &[
    "serde",
    "serde_json",
    "serde_ignored",
    "thiserror",
    "hdrhistogram",
    "anstyle",
    // Terminal cells and widgets drawn into a buffer (`linerate watch`'s screen); no backend,
    // no terminal I/O: the binary hands the buffer to the terminal.
    "ratatui-core",
    "ratatui-widgets",
];
/// And the codec: the HMAC of its challenge-response, hex, the OS's random source.
const CODEC_EXTERNAL: &[&str] = &["hmac", "sha2", "hex", "getrandom"];

/// Edges the classes allow but the design does not: (from, to, why).
const FORBIDDEN_EDGES: &[(&str, &str, &str)] = &[
    (
        "linerate-inventory",
        "linerate-soak",
        "a soak's sample types live in linerate-proto",
    ),
    (
        "linerate-bench",
        "linerate-soak",
        "a soak's sample types live in linerate-proto",
    ),
    (
        "linerate-doctor",
        "linerate-report",
        "doctor hands its results and its progress (`linerate_doctor::Progress`) to its caller, which renders them",
    ),
];

struct Crate {
    name: String,
    /// Normal dependencies (not dev-, not build-), by package name.
    deps: BTreeSet<String>,
    /// `src/` of the crate.
    src: PathBuf,
}

fn workspace() -> Vec<Crate> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| members.contains(id)))
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str().map(str::to_string))
                .collect();
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
            Crate {
                name: p["name"].as_str().expect("name").to_string(),
                deps,
                src: manifest.parent().expect("a crate directory").join("src"),
            }
        })
        .collect()
}

fn class(name: &str) -> Option<&'static str> {
    [("pure", PURE), ("codec", CODEC), ("io", IO), ("dev", DEV)]
        .into_iter()
        .find(|(_, list)| list.contains(&name))
        .map(|(c, _)| c)
}

#[test]
fn every_crate_has_one_class() {
    let ws = workspace();
    let names: BTreeSet<&str> = ws.iter().map(|c| c.name.as_str()).collect();
    assert!(names.contains("linerate-facts"), "{names:?}");
    for c in &ws {
        assert!(
            class(&c.name).is_some(),
            "{} has no class: add it to PURE, CODEC, IO or DEV in this test (see its doc)",
            c.name
        );
    }
    for listed in PURE.iter().chain(CODEC).chain(IO).chain(DEV) {
        assert!(
            names.contains(listed),
            "{listed} is classed here but is not in the workspace"
        );
    }
}

/// The edges of `c` that its class forbids, with the reason.
fn bad_edges(c: &Crate, ws: &BTreeSet<&str>) -> Vec<String> {
    let mut bad = Vec::new();
    for d in &c.deps {
        let ok = match (class(&c.name), ws.contains(d.as_str())) {
            (_, true) if class(d) == Some("dev") => false,
            (Some("pure"), true) => matches!(class(d), Some("pure" | "codec")),
            (Some("codec"), true) => class(d) == Some("pure"),
            (Some("pure"), false) => PURE_EXTERNAL.contains(&d.as_str()),
            (Some("codec"), false) => {
                PURE_EXTERNAL.contains(&d.as_str()) || CODEC_EXTERNAL.contains(&d.as_str())
            }
            _ => true,
        };
        if !ok {
            bad.push(format!(
                "{} ({}) → {d} ({})",
                c.name,
                class(&c.name).unwrap_or("?"),
                class(d).unwrap_or("external")
            ));
        }
        if let Some((_, _, why)) = FORBIDDEN_EDGES
            .iter()
            .find(|(from, to, _)| *from == c.name && to == d)
        {
            bad.push(format!("{} → {d}: {why}", c.name));
        }
    }
    bad
}

#[test]
fn no_pure_crate_depends_on_a_crate_that_does_io() {
    let ws = workspace();
    let names: BTreeSet<&str> = ws.iter().map(|c| c.name.as_str()).collect();
    let bad: Vec<String> = ws.iter().flat_map(|c| bad_edges(c, &names)).collect();
    assert!(
        bad.is_empty(),
        "edges the architecture forbids:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_edge_check_catches_a_renderer_reaching_io() {
    let names: BTreeSet<&str> = ["linerate-report", "linerate-setup", "linerate-facts"].into();
    let report = Crate {
        name: "linerate-report".into(),
        deps: ["linerate-facts", "linerate-setup", "libc"]
            .map(String::from)
            .into(),
        src: PathBuf::new(),
    };
    let bad = bad_edges(&report, &names);
    assert_eq!(bad.len(), 2, "{bad:?}");
    let inventory = Crate {
        name: "linerate-inventory".into(),
        deps: ["linerate-soak".to_string()].into(),
        src: PathBuf::new(),
    };
    assert_eq!(bad_edges(&inventory, &names).len(), 1);
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().and_then(|x| x.to_str()) == Some("rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a source file belongs to (`rendezvous` for `src/rendezvous/dir.rs`);
/// None for the crate root.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// The modules named right after a `crate::`: `ib` in `crate::ib::IbDevice`, and `ib` and `net`
/// in a group `crate::{ib::IbDevice, net::{Netdev, NetdevKind}}`.
fn first_segments(rest: &str) -> Vec<String> {
    let ident = |s: &str| {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    // Split the group at its top-level commas, up to its closing brace.
    let (mut depth, mut start, mut out) = (0u32, 0usize, Vec::new());
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(ident(&group[start..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(ident(&group[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// Module → the sibling modules it names through `crate::NAME`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = sources(src);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(src, f)).collect();
    for f in &files {
        let Some(m) = module_of(src, f) else {
            continue;
        };
        let text = std::fs::read_to_string(f).expect("a readable source");
        // Code only: a doc comment's link (`[`crate::thresholds`]`) is no dependency.
        let code: String = text
            .lines()
            .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
            .collect::<Vec<_>>()
            .join("\n");
        let deps = g.entry(m.clone()).or_default();
        deps.extend(
            code.split("crate::")
                .skip(1)
                .flat_map(first_segments)
                .filter(|d| *d != m && modules.contains(d)),
        );
    }
    g
}

/// The first cycle found, as a path `a → b → a`.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|n| n == node) {
            let mut c = stack[i..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in g.get(node).into_iter().flatten() {
            if let Some(c) = visit(g, next, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_module_cycle() {
    let ws = workspace();
    let mut cycles = Vec::new();
    let mut modules = 0;
    for c in &ws {
        let g = module_graph(&c.src);
        modules += g.len();
        if let Some(cy) = cycle(&g) {
            cycles.push(format!("{}: {}", c.name, cy.join(" → ")));
        }
    }
    assert!(modules > 50, "the sources were read: {modules} modules");
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    assert_eq!(first_segments("ib::IbDevice;"), vec!["ib"]);
    assert_eq!(
        first_segments("{ib::IbDevice, net::{Netdev, NetdevKind}, Inventory};"),
        vec!["ib", "net", "Inventory"]
    );
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&g).map(|c| c.len()), Some(3));
}

/// A type (or function) has one name: no library crate re-exports another workspace crate's
/// items under its own path, which would give them two (`linerate_doctor::DoctorReport` beside
/// the real one), and leave readers to guess which is meant.
#[test]
fn one_name_per_item() {
    let ws = workspace();
    let mut found = Vec::new();
    for c in ws.iter().filter(|c| c.name != "linerate") {
        for f in sources(&c.src) {
            let text = std::fs::read_to_string(&f).expect("a readable source");
            for (i, line) in text.lines().enumerate() {
                let l = line.trim_start();
                if l.starts_with("pub use linerate_") || l.starts_with("pub use ::linerate_") {
                    found.push(format!("{}:{}: {}", f.display(), i + 1, l));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "re-exports of another crate's items (use them where they are defined):\n{}",
        found.join("\n")
    );
}

/// One vocabulary: no two crates define a public type of the same name (a doctor `Verdict`
/// beside a soak `Verdict`, a bench `IntervalOut` beside a soak one), so a name read anywhere
/// means one thing.
#[test]
fn no_two_public_types_share_a_name() {
    let ws = workspace();
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in &ws {
        for f in sources(&c.src) {
            let text = std::fs::read_to_string(&f).expect("a readable source");
            for line in text.lines() {
                let l = line.trim_start();
                let Some(rest) = ["pub struct ", "pub enum ", "pub type ", "pub trait "]
                    .iter()
                    .find_map(|k| l.strip_prefix(k))
                else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let at = format!("{}", f.strip_prefix(&c.src).unwrap_or(&f).display());
                defined
                    .entry(name)
                    .or_default()
                    .push(format!("{} {at}", c.name));
            }
        }
    }
    assert!(defined.contains_key("FindingId"), "the sources were read");
    let twice: Vec<String> = defined
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "public types defined more than once (give each its own name):\n{}",
        twice.join("\n")
    );
}

/// An import makes an edge, a doc comment's link does not.
#[test]
fn the_module_graph_reads_code_not_comments() {
    let d = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        d.path().join("a.rs"),
        "//! see [`crate::b`]\nuse crate::c::Z;\n",
    )
    .unwrap();
    std::fs::write(d.path().join("b.rs"), "use crate::a::X; // and crate::c\n").unwrap();
    std::fs::write(d.path().join("c.rs"), "").unwrap();
    let g = module_graph(d.path());
    assert_eq!(g["a"], BTreeSet::from(["c".to_string()]));
    assert_eq!(g["b"], BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&g), None);
}
