//! One vocabulary: the schema's enums, `docs/soak.md` and the Rust enums name the same rules,
//! verdicts, sources, units and thresholds. Each list in Rust is generated with its enum
//! (`string_enum!` in `src/lib.rs`), so a variant cannot be missing from it; these tests fail
//! when the schema or the docs miss a value, or have one the enum does not.

use std::collections::BTreeSet;
use std::path::Path;

use linerate_soak::{RuleId, Source, Threshold, Unit, Verdict, VerdictRule};
use serde_json::Value;

fn repo(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn schema() -> Value {
    serde_json::from_str(&repo("schemas/soak.schema.json")).expect("the schema is JSON")
}

/// The strings of a schema `enum` at `pointer`.
fn schema_enum(s: &Value, pointer: &str) -> Vec<String> {
    s.pointer(pointer)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("no enum at {pointer}"))
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}

/// `Ok` when both lists hold the same values; else what each one misses.
fn same(what: &str, schema: &[String], rust: &[&str]) -> Result<(), String> {
    let a: BTreeSet<&str> = schema.iter().map(String::as_str).collect();
    let b: BTreeSet<&str> = rust.iter().copied().collect();
    let missing_in_schema: Vec<&&str> = b.difference(&a).collect();
    let missing_in_rust: Vec<&&str> = a.difference(&b).collect();
    if missing_in_schema.is_empty() && missing_in_rust.is_empty() && a.len() == schema.len() {
        Ok(())
    } else {
        Err(format!(
            "{what}: the schema misses {missing_in_schema:?}, the Rust enum misses \
             {missing_in_rust:?} (schema has {} values, {} distinct)",
            schema.len(),
            a.len()
        ))
    }
}

#[test]
fn same_names_what_each_side_misses() {
    let schema = vec!["a".to_string(), "b".to_string()];
    assert_eq!(same("x", &schema, &["a", "b"]), Ok(()));
    let e = same("x", &schema, &["a", "c"]).unwrap_err();
    assert!(
        e.contains(r#"the schema misses ["c"], the Rust enum misses ["b"]"#),
        "{e}"
    );
    assert!(same("x", &["a".into(), "a".into()], &["a"]).is_err());
}

#[test]
fn the_schema_enums_are_the_rust_enums() {
    let s = schema();
    let strs = |v: Vec<&'static str>| v;
    let checks: [(&str, &str, Vec<&str>); 6] = [
        (
            "rules",
            "/$defs/rule/enum",
            strs(RuleId::ALL.iter().map(|r| r.as_str()).collect()),
        ),
        (
            "verdict rules",
            "/$defs/verdict_rule/enum",
            VerdictRule::all().map(VerdictRule::as_str).collect(),
        ),
        (
            "verdicts",
            "/$defs/verdict/enum",
            Verdict::ALL.iter().map(|v| v.as_str()).collect(),
        ),
        (
            "sources",
            "/$defs/source/enum",
            Source::ALL.iter().map(|v| v.as_str()).collect(),
        ),
        (
            "units",
            "/$defs/unit/enum",
            Unit::ALL.iter().map(|v| v.as_str()).collect(),
        ),
        (
            "threshold names",
            "/$defs/threshold_name/enum",
            Threshold::ALL.iter().map(|v| v.as_str()).collect(),
        ),
    ];
    let errors: Vec<String> = checks
        .iter()
        .filter_map(|(what, pointer, rust)| same(what, &schema_enum(&s, pointer), rust).err())
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    // Every value of the schema parses into the enum (the strings are the serde names).
    for r in schema_enum(&s, "/$defs/verdict_rule/enum") {
        let v: VerdictRule = serde_json::from_value(Value::from(r.clone())).expect(&r);
        assert_eq!(v.as_str(), r);
    }
    // The thresholds object has one property per threshold, all required.
    let props: Vec<String> = s["$defs"]["thresholds"]["properties"]
        .as_object()
        .expect("thresholds properties")
        .keys()
        .cloned()
        .collect();
    let names: Vec<&str> = Threshold::ALL.iter().map(|t| t.as_str()).collect();
    same("threshold properties", &props, &names).unwrap();
    same(
        "required thresholds",
        &schema_enum(&s, "/$defs/thresholds/required"),
        &names,
    )
    .unwrap();
    // And the document's JudgeParams serializes to exactly those fields.
    let jp = serde_json::to_value(linerate_soak::JudgeParams::default()).unwrap();
    let keys: Vec<String> = jp.as_object().unwrap().keys().cloned().collect();
    same("JudgeParams fields", &keys, &names).unwrap();
}

/// The backticked names in the first column of the table after `heading` in docs/soak.md.
fn doc_table(doc: &str, heading: &str) -> Vec<String> {
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/soak.md has no {heading:?}"));
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .flat_map(|l| {
            let first = l.split('|').nth(1).unwrap_or("");
            first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn docs_soak_md_lists_every_rule_and_threshold() {
    let doc = repo("docs/soak.md");
    let rules: Vec<&str> = RuleId::ALL.iter().map(|r| r.as_str()).collect();
    same("docs/soak.md rules", &doc_table(&doc, "### Rules"), &rules).unwrap();
    let names: Vec<&str> = Threshold::ALL.iter().map(|t| t.as_str()).collect();
    same(
        "docs/soak.md thresholds",
        &doc_table(&doc, "### Thresholds"),
        &names,
    )
    .unwrap();
    // Each threshold's default is in its row as the tool prints it.
    let section = &doc[doc.find("### Thresholds").expect("the section")..];
    for t in Threshold::ALL {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| `{t}` |")))
            .unwrap_or_else(|| panic!("no row for {t}"));
        let default = t.fmt_value(t.default_value());
        assert!(
            row.contains(&format!("| {default} |")),
            "{t}: default {default} not in {row}"
        );
    }
}
