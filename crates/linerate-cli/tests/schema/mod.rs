//! The published JSON Schemas (`schemas/*.schema.json`), shared by the CLI tests.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

/// The compiled schema `name` (`bench.schema.json`, ...).
pub fn validator(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name} compiles: {e}"))
}

/// Panics with every place `doc` breaks the schema `v`.
pub fn assert_valid(v: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// `doc` matches the schema `name`.
pub fn assert_matches(name: &str, doc: &Value) {
    assert_valid(&validator(name), doc);
}
