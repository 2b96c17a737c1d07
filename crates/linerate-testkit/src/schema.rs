//! The published JSON Schemas (`schemas/*.schema.json`), for every crate's tests.

use std::path::Path;

use serde_json::Value;

fn schemas_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The compiled schema `name` (`bench.schema.json`, ...). Every schema in `schemas/` is known
/// by its `$id`, so one may refer to another's definitions (`bench.schema.json#/$defs/test`).
pub fn validator(name: &str) -> jsonschema::Validator {
    let schema = load(&schemas_dir().join(name));
    let mut options = jsonschema::options();
    for entry in std::fs::read_dir(schemas_dir()).expect("schemas/ is readable") {
        let path = entry.expect("schemas/ is readable").path();
        if path.extension().is_some_and(|e| e == "json") {
            let other = load(&path);
            let id = other["$id"]
                .as_str()
                .unwrap_or_else(|| panic!("{} has no $id", path.display()))
                .to_string();
            let resource = jsonschema::Resource::from_contents(other)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            options.with_resource(id, resource);
        }
    }
    options
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name} compiles: {e}"))
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
