//! One vocabulary: every closed set of names linerate writes (finding ids, test kinds,
//! directions, verdicts, causes, port kinds, ...) is the same in the code, in the published
//! schemas' enums, in docs/findings.md and in the fixture generator's expectations. A variant
//! added to an enum and forgotten in a schema or a doc fails here, with what is missing where.
//!
//! The code's names come from the enums themselves: serde's derive hands a deserializer the
//! list of an enum's variant names (as written, after renames), which [`names`] reads; a
//! finding id from `FindingId::ALL`, which is generated from the enum's own table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use linerate_facts::{FindingId, FindingOrigin};
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

/// A deserializer that only records the variant names serde's derive gives `deserialize_enum`.
struct VariantNames(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut VariantNames {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a unit enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(variants);
        Err(de::Error::custom("names read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

/// The serialized names of a unit enum's variants.
fn names<T: de::DeserializeOwned>() -> BTreeSet<String> {
    let mut v = VariantNames(None);
    let _ = T::deserialize(&mut v);
    v.0.unwrap_or_else(|| panic!("{} is not a derived enum", std::any::type_name::<T>()))
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema(name: &str) -> Value {
    let p = repo().join("schemas").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The string values of the enum at `pointer` in schema `file` (`null` left out).
fn schema_enum(file: &str, pointer: &str) -> BTreeSet<String> {
    let s = schema(file);
    let e = s
        .pointer(pointer)
        .and_then(|v| v.get("enum"))
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{file}: no enum at {pointer}"));
    e.iter()
        .filter_map(Value::as_str)
        .map(ToString::to_string)
        .collect()
}

/// `want` and the schema's enum at `pointer` hold the same names; else what each lacks.
fn same(file: &str, pointer: &str, what: &str, want: &BTreeSet<String>, errors: &mut Vec<String>) {
    let got = schema_enum(file, pointer);
    let missing: Vec<&String> = want.difference(&got).collect();
    let extra: Vec<&String> = got.difference(want).collect();
    if !missing.is_empty() || !extra.is_empty() {
        errors.push(format!(
            "schemas/{file} {pointer}: {what} missing from the schema {missing:?}; in the schema but not the code {extra:?}"
        ));
    }
}

/// The kinds a bench result names: the test kinds, with `rdma` spelled out per operation and
/// measure (`rdma_write_bw`, ... as `RdmaSpec::kind` writes them).
fn result_kinds() -> BTreeSet<String> {
    let mut k = names::<linerate_proto::TestKind>();
    assert!(k.remove("rdma"), "TestKind has rdma");
    for op in names::<linerate_proto::RdmaOp>() {
        for m in ["bw", "lat"] {
            k.insert(format!("rdma_{op}_{m}"));
        }
    }
    k
}

#[test]
#[expect(clippy::too_many_lines, reason = "a table: one row per schema enum")]
fn every_schema_enum_is_the_codes_vocabulary() {
    use linerate_facts as f;
    use linerate_proto as p;
    let mut errors = Vec::new();
    let kinds = names::<p::TestKind>();
    let directions = names::<p::Direction>();
    let ops = names::<p::RdmaOp>();
    let severities = names::<f::Severity>();
    let stages = names::<linerate_model::StageKind>();
    let limits = names::<linerate_model::LimitedBy>();
    let latency_modes: BTreeSet<String> = ["busy_polled", "client_polled", "blocking"]
        .map(String::from)
        .into();
    let checks: Vec<(&str, &str, &str, BTreeSet<String>)> = vec![
        (
            "bench-stream.schema.json",
            "/$defs/params/properties/kind",
            "TestKind",
            kinds.clone(),
        ),
        (
            "bench-stream.schema.json",
            "/$defs/params/properties/direction",
            "Direction",
            directions.clone(),
        ),
        (
            "bench-stream.schema.json",
            "/$defs/params/properties/rdma/properties/op",
            "RdmaOp",
            ops.clone(),
        ),
        (
            "bench.schema.json",
            "/$defs/test/properties/kind",
            "result kinds",
            result_kinds(),
        ),
        (
            "bench.schema.json",
            "/$defs/test/properties/direction",
            "Direction",
            directions.clone(),
        ),
        (
            "bench.schema.json",
            "/$defs/test/properties/rdma/properties/op",
            "RdmaOp",
            ops.clone(),
        ),
        (
            "bench.schema.json",
            "/$defs/test/properties/latency_mode/properties/mode",
            "LatencyMode modes",
            latency_modes.clone(),
        ),
        (
            "doctor.schema.json",
            "/$defs/test/properties/kind",
            "result kinds",
            result_kinds(),
        ),
        (
            "doctor.schema.json",
            "/$defs/test/properties/direction",
            "Direction",
            directions.clone(),
        ),
        (
            "doctor.schema.json",
            "/$defs/test/properties/latency_mode/properties/mode",
            "LatencyMode modes",
            latency_modes,
        ),
        (
            "doctor.schema.json",
            "/properties/verdict/properties/limited_by",
            "Cause",
            names::<f::Cause>(),
        ),
        (
            "doctor.schema.json",
            "/$defs/finding/properties/severity",
            "Severity",
            severities.clone(),
        ),
        (
            "probe.schema.json",
            "/$defs/finding/properties/severity",
            "Severity",
            severities,
        ),
        (
            "probe.schema.json",
            "/$defs/port/properties/kind",
            "PortKind",
            names::<f::PortKind>(),
        ),
        (
            "probe.schema.json",
            "/$defs/port/properties/link_layer",
            "LinkLayer",
            names::<f::LinkLayer>(),
        ),
        (
            "probe.schema.json",
            "/$defs/stage/properties/stage",
            "StageKind",
            stages.clone(),
        ),
        (
            "probe.schema.json",
            "/$defs/ceiling/properties/limited_by",
            "LimitedBy",
            limits.clone(),
        ),
        (
            "plan.schema.json",
            "/$defs/stage/properties/stage",
            "StageKind",
            stages,
        ),
        (
            "plan.schema.json",
            "/$defs/ceiling/properties/limited_by",
            "LimitedBy",
            limits,
        ),
        (
            "watch-stream.schema.json",
            "/$defs/port/properties/kind",
            "WatchKind",
            names::<linerate_watch::WatchKind>(),
        ),
        (
            "watch-stream.schema.json",
            "/$defs/port/properties/limited_by",
            "LimitedBy",
            names::<linerate_model::LimitedBy>(),
        ),
        (
            "watch-stream.schema.json",
            "/$defs/port/properties/counted_from",
            "CountedFrom",
            names::<linerate_watch::CountedFrom>(),
        ),
        (
            "watch-stream.schema.json",
            "/$defs/counter_source",
            "CounterSource",
            names::<linerate_facts::CounterSource>(),
        ),
        (
            "watch-stream.schema.json",
            "/$defs/change/properties/what",
            "ChangeKind",
            names::<linerate_watch::ChangeKind>(),
        ),
        (
            "serve-log.schema.json",
            "/$defs/test_ran/properties/kind",
            "TestKind but rdma (rdma_ran)",
            {
                let mut k = kinds;
                k.remove("rdma");
                k
            },
        ),
        (
            "serve-log.schema.json",
            "/$defs/test_ran/properties/direction",
            "Direction",
            directions,
        ),
        (
            "serve-log.schema.json",
            "/$defs/test_ran/properties/result",
            "Outcome",
            names::<linerate_bench::serverlog::Outcome>(),
        ),
        (
            "serve-log.schema.json",
            "/$defs/rdma_ran/properties/result",
            "Outcome",
            names::<linerate_bench::serverlog::Outcome>(),
        ),
        (
            "bench.schema.json",
            "/$defs/qdisc_delta/properties/side",
            "QdiscSide",
            names::<f::QdiscSide>(),
        ),
        (
            "disk.schema.json",
            "/$defs/test/properties/kind",
            "DiskTestKind",
            names::<linerate_results::disk::DiskTestKind>(),
        ),
        (
            "disk.schema.json",
            "/$defs/test/properties/engine",
            "Engine",
            names::<linerate_results::disk::Engine>(),
        ),
        (
            "disk.schema.json",
            "/properties/engine",
            "Engine",
            names::<linerate_results::disk::Engine>(),
        ),
        (
            "setup.schema.json",
            "/properties/action",
            "SetupAction",
            names::<linerate_report::SetupAction>(),
        ),
        (
            "setup.schema.json",
            "/properties/distro/oneOf/1/properties/family",
            "Family",
            names::<f::Family>(),
        ),
        (
            "setup.schema.json",
            "/$defs/topic",
            "Topic",
            names::<f::Topic>(),
        ),
        (
            "setup.schema.json",
            "/$defs/step/properties/files/items/properties/action",
            "FileAction",
            names::<f::FileAction>(),
        ),
        (
            "setup.schema.json",
            "/$defs/step/properties/commands/items/properties/when",
            "When",
            names::<f::When>(),
        ),
        (
            "soak.schema.json",
            "/$defs/verdict",
            "soak Verdict",
            names::<linerate_soak::Verdict>(),
        ),
        (
            "soak.schema.json",
            "/$defs/rule",
            "RuleId",
            names::<linerate_soak::RuleId>(),
        ),
        (
            "soak.schema.json",
            "/$defs/source",
            "Source",
            names::<linerate_soak::Source>(),
        ),
        (
            "soak.schema.json",
            "/$defs/counter/properties/source",
            "CounterSource",
            names::<linerate_facts::CounterSource>(),
        ),
        (
            "soak.schema.json",
            "/$defs/port/properties/bits_basis",
            "BitsBasis",
            names::<linerate_soak::BitsBasis>(),
        ),
        (
            "soak.schema.json",
            "/$defs/interval/properties/end",
            "End",
            names::<p::soak::End>(),
        ),
        (
            "soak.schema.json",
            "/$defs/end/properties/end",
            "End",
            names::<p::soak::End>(),
        ),
        (
            "soak.schema.json",
            "/$defs/dip/properties/end",
            "End",
            names::<p::soak::End>(),
        ),
        (
            "mesh.schema.json",
            "/properties/schedule",
            "ScheduleKind",
            names::<linerate_mesh::ScheduleKind>(),
        ),
        (
            "mesh.schema.json",
            "/properties/transport",
            "Transport",
            names::<linerate_mesh::Transport>(),
        ),
        (
            "mesh.schema.json",
            "/properties/rendezvous/properties/method",
            "rendezvous Method",
            names::<linerate_cluster::rendezvous::Method>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/rank/properties/port/properties/ipoib_mode",
            "IpoibMode",
            names::<f::IpoibMode>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/rank/properties/shapers/items/properties/direction",
            "ShaperDirection",
            names::<linerate_mesh::ShaperDirection>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/rank/properties/identity_source",
            "IdentitySource",
            names::<linerate_mesh::IdentitySource>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/measurement/properties/phase",
            "Phase",
            names::<linerate_mesh::Phase>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/measurement/properties/transport",
            "Transport",
            names::<linerate_mesh::Transport>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/link/properties/status",
            "LinkStatus",
            names::<linerate_mesh::LinkStatus>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/node/properties/status",
            "NodeStatus",
            names::<linerate_mesh::NodeStatus>(),
        ),
        (
            "mesh.schema.json",
            "/$defs/fleet_finding/properties/attribute",
            "FleetAttribute",
            names::<linerate_mesh::FleetAttribute>(),
        ),
        (
            "mesh-event.schema.json",
            "/properties/phase",
            "Phase",
            names::<linerate_mesh::Phase>(),
        ),
        (
            "mesh-event.schema.json",
            "/properties/transport",
            "Transport",
            names::<linerate_mesh::Transport>(),
        ),
    ];
    for (file, pointer, what, want) in &checks {
        same(file, pointer, what, want, &mut errors);
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The check fails on a schema that misses a name, and on one that has a name too many.
/// `Topic::ALL` (what `setup all` plans, counted by hand) lists every topic, each once; and
/// docs/setup.md has a section for each.
#[test]
fn every_setup_topic_is_in_all_and_documented() {
    let all: BTreeSet<String> = linerate_facts::Topic::ALL
        .iter()
        .map(|t| t.as_str().to_string())
        .collect();
    assert_eq!(
        all.len(),
        linerate_facts::Topic::ALL.len(),
        "a topic twice in ALL"
    );
    assert_eq!(
        all,
        names::<linerate_facts::Topic>(),
        "Topic::ALL and the enum differ"
    );
    let doc = std::fs::read_to_string(repo().join("docs/setup.md")).unwrap();
    for t in &all {
        assert!(
            doc.lines().any(|l| l == format!("## {t}")),
            "docs/setup.md has no `## {t}` section"
        );
    }
}

#[test]
fn the_schema_check_names_what_is_missing() {
    let mut errors = Vec::new();
    let mut want = names::<linerate_proto::TestKind>();
    want.insert("tcp_zerocopy".into());
    same(
        "bench-stream.schema.json",
        "/$defs/params/properties/kind",
        "TestKind",
        &want,
        &mut errors,
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("\"tcp_zerocopy\""), "{}", errors[0]);
    assert!(names::<linerate_proto::TestKind>().contains("tcp_bw"));
}

/// The ids of each findings table in docs/findings.md: (inventory, measurement).
fn documented_ids() -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(repo().join("docs/findings.md")).expect("docs/findings.md");
    let inv = text
        .find("## Inventory findings")
        .expect("docs/findings.md has an inventory table");
    let meas = text
        .find("## Doctor findings")
        .expect("docs/findings.md has a doctor table");
    let ids = |section: &str| -> Vec<String> {
        section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once('`'))
            .map(|(id, _)| id.to_string())
            .collect()
    };
    let (a, b) = if inv < meas {
        (&text[inv..meas], &text[meas..])
    } else {
        (&text[inv..], &text[meas..inv])
    };
    (ids(a), ids(b))
}

#[test]
fn docs_findings_has_one_row_per_finding_in_its_table() {
    let (inv, meas) = documented_ids();
    let mut errors = Vec::new();
    for &id in FindingId::ALL {
        let (table, other) = match id.origin() {
            FindingOrigin::Inventory => (&inv, &meas),
            FindingOrigin::Measurement => (&meas, &inv),
        };
        let rows = table.iter().filter(|d| *d == id.as_str()).count();
        if rows != 1 {
            errors.push(format!(
                "`{id}` ({:?}) has {rows} rows in its table of docs/findings.md, not one",
                id.origin()
            ));
        }
        if other.iter().any(|d| d == id.as_str()) {
            errors.push(format!("`{id}` is in the other table of docs/findings.md"));
        }
    }
    for d in inv.iter().chain(&meas) {
        if FindingId::parse(d).is_none() {
            errors.push(format!(
                "docs/findings.md documents `{d}`, which linerate does not emit"
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Inventory findings read from the running system, which a fixture root cannot hold: libfabric
/// is loaded to learn what it offers. Shown in a lab guest instead (tests/lab_stack.rs).
const LIVE_ONLY: &[&str] = &["rdma.no_libfabric_verbs"];

/// The fixture generator (`fixtures/sysfs/build.py`, whose output `--check` keeps in step)
/// expects every inventory finding in at least one tree, and names no id linerate lacks.
#[test]
fn the_fixture_generator_expects_every_inventory_finding() {
    let dir = repo().join("fixtures/sysfs");
    let mut required = BTreeSet::new();
    let mut errors = Vec::new();
    let mut trees = 0;
    for e in std::fs::read_dir(&dir)
        .expect("fixtures/sysfs")
        .filter_map(Result::ok)
    {
        let p = e.path().join("expect.json");
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        trees += 1;
        let v: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let req = v["findings_required"].as_array().into_iter().flatten();
        let ids = req.filter_map(|r| r["id"].as_str()).chain(
            v["findings_forbidden"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        );
        for id in ids {
            if FindingId::parse(id).is_none() {
                errors.push(format!(
                    "{}: `{id}` is not a finding linerate emits",
                    p.display()
                ));
            }
        }
        required.extend(
            v["findings_required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["id"].as_str().map(str::to_string)),
        );
    }
    assert!(trees > 20, "the fixture trees were read: {trees}");
    for &id in FindingId::ALL {
        if id.origin() == FindingOrigin::Inventory
            && !required.contains(id.as_str())
            && !LIVE_ONLY.contains(&id.as_str())
        {
            errors.push(format!(
                "no fixture tree expects `{id}`: add a case to fixtures/sysfs/build.py that shows it"
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
