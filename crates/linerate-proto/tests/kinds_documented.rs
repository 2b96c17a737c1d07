//! Every kind of test is in every schema that lists kinds and in the docs: a new kind that
//! misses one fails here, naming the file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use linerate_proto::TestKind;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `enum` of the schema `rel` that lists kinds (it holds `tcp_bw`), by its JSON pointer.
fn kind_enums(rel: &str) -> Vec<(String, BTreeSet<String>)> {
    fn walk(v: &Value, at: &str, out: &mut Vec<(String, BTreeSet<String>)>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(e)) = m.get("enum") {
                    if e.iter().any(|x| x == "tcp_bw") {
                        let set = e.iter().filter_map(|x| x.as_str().map(String::from));
                        out.push((at.to_string(), set.collect()));
                    }
                }
                for (k, x) in m {
                    walk(x, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let doc: Value = serde_json::from_str(&read(rel)).expect("a schema is JSON");
    let mut out = Vec::new();
    walk(&doc, "", &mut out);
    assert!(!out.is_empty(), "{rel} lists no kinds");
    out
}

fn names(it: impl Iterator<Item = &'static str>) -> BTreeSet<String> {
    it.map(String::from).collect()
}

#[test]
fn every_schema_lists_every_kind() {
    let wire = names(TestKind::ALL.into_iter().map(TestKind::as_str));
    let results = names(
        TestKind::ALL
            .into_iter()
            .flat_map(|k| k.spec().facts().result_kinds.iter().copied()),
    );
    // Kinds whose results carry their own name log a `test_ran` line; RDMA logs its own.
    let logged = names(
        TestKind::ALL
            .into_iter()
            .filter(|k| k.spec().facts().result_kinds == [k.as_str()])
            .map(TestKind::as_str),
    );
    for (schema, expected) in [
        ("schemas/bench-stream.schema.json", &wire),
        ("schemas/bench.schema.json", &results),
        ("schemas/doctor.schema.json", &results),
        ("schemas/serve-log.schema.json", &logged),
    ] {
        for (at, listed) in kind_enums(schema) {
            assert_eq!(&listed, expected, "{schema}#{at}");
        }
    }
}

#[test]
fn the_docs_name_every_kind() {
    let protocol = read("docs/protocol.md");
    let bench = read("docs/bench.md");
    for k in TestKind::ALL {
        assert!(
            protocol.contains(&format!("`{}`", k.as_str())),
            "docs/protocol.md does not name `{}`",
            k.as_str()
        );
        for r in k.spec().facts().result_kinds {
            assert!(
                bench.contains(&format!("`{r}`")),
                "docs/bench.md does not name the result kind `{r}`"
            );
        }
    }
}
