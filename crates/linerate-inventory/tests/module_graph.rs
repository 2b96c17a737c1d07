//! The modules of the inventory depend on each other in one direction only.
//!
//! `ib` and `ports` once imported each other (`LinkLayer` lived in `ports`, which
//! needs `IbDevice`); this test reads the sources and fails on any cycle among the
//! crate's modules, so the next shared type lands where it belongs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name → the sibling modules it names through `crate::NAME`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut g = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("src/ is readable") {
        let path = entry.expect("directory entry").path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()) else {
            continue;
        };
        // lib.rs is the root that declares and re-exports every module.
        if name == "lib" || path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source is readable");
        let deps: BTreeSet<String> = text
            .split("crate::")
            .skip(1)
            .flat_map(first_segments)
            .filter(|m| !m.is_empty() && m != name)
            .collect();
        g.insert(name.to_string(), deps);
    }
    g
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

#[test]
fn grouped_imports_name_each_module() {
    assert_eq!(first_segments("ib::IbDevice;"), vec!["ib"]);
    assert_eq!(
        first_segments("{ib::IbDevice, net::{Netdev, NetdevKind}, Inventory};"),
        vec!["ib", "net", "Inventory"]
    );
}

/// The first cycle found, as a path `a → b → a`.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == node) {
            let mut c = stack[i..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for dep in g.get(node).into_iter().flatten() {
            if let Some(c) = visit(g, dep, stack, done) {
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
fn inventory_modules_have_no_import_cycle() {
    let g = graph();
    assert!(g.contains_key("ib") && g.contains_key("ports"), "{g:?}");
    if let Some(c) = cycle(&g) {
        panic!("import cycle among inventory modules: {}", c.join(" → "));
    }
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&g).map(|c| c.len()), Some(3));
}
