//! `promtool test rules` (Debian package `prometheus`) on Prometheus text files: does a rules
//! file fire exactly the alerts a test expects, on exactly the series a text file holds?
//!
//! The soak helpers take the PromQL recipe from `docs/soak.md` itself (the yaml block after its
//! `<!-- promtool:` marker), so the documented recipe is the one tested, and expect its alerts
//! on exactly the ports the soak's JSON document calls `marginal` or `bad`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

/// An alert's expected labels (the alert name aside).
pub type Labels = BTreeMap<String, String>;

/// One unit test: the samples of a text file, and every alert expected to fire on them (an
/// alert expected nowhere is listed with no labels: promtool then checks it fires nowhere).
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub textfile: String,
    pub alerts: Vec<(String, Vec<Labels>)>,
}

/// The first ```` ```yaml ```` block after the line holding `marker` in `markdown`.
pub fn yaml_after(markdown: &str, marker: &str) -> Option<String> {
    let rest = &markdown[markdown.find(marker)?..];
    let body = &rest[rest.find("```yaml\n")? + "```yaml\n".len()..];
    Some(body[..=body.find("\n```")?].to_string())
}

/// Every sample of a text file: (the series as promtool's `input_series` reads it, the value).
/// Comments and blank lines are skipped; a sample has no timestamp, so its value is the last
/// word.
pub fn samples(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(series, value)| (series.to_string(), value.to_string()))
        .collect()
}

/// The unit-test file for `cases`, as JSON (which YAML reads): each case's samples held for
/// two minutes, the alerts evaluated at one.
fn test_file(cases: &[Case]) -> Value {
    let tests: Vec<Value> = cases
        .iter()
        .map(|c| {
            let series: Vec<Value> = samples(&c.textfile)
                .into_iter()
                .map(|(s, v)| json!({"series": s, "values": format!("{v} {v} {v}")}))
                .collect();
            let alerts: Vec<Value> = c
                .alerts
                .iter()
                .map(|(name, expected)| {
                    let exp: Vec<Value> = expected
                        .iter()
                        .map(|labels| json!({ "exp_labels": labels }))
                        .collect();
                    json!({"eval_time": "1m", "alertname": name, "exp_alerts": exp})
                })
                .collect();
            json!({
                "name": c.name,
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": alerts,
            })
        })
        .collect();
    json!({
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": tests,
    })
}

/// Runs `promtool test rules` with `rules` (a rules file's YAML) on every case. `Ok(true)`: every
/// alert fired exactly as expected; `Ok(false)`: promtool is not installed (the caller records a
/// skip); `Err`: promtool's report of what differed.
pub fn test_rules(rules: &str, cases: &[Case]) -> Result<bool, String> {
    test_rules_file(rules, &test_file(cases))
}

/// Runs `promtool test rules` on a unit-test file of one's own (`tests`, as JSON: its
/// `rule_files` must be `["rules.yml"]`, which holds `rules`): for recording rules
/// (`promql_expr_test`) as much as alerts. Same answers as [`test_rules`].
pub fn test_rules_file(rules: &str, tests: &Value) -> Result<bool, String> {
    let dir = std::env::temp_dir().join(format!(
        "linerate-promtool-{}-{}",
        std::process::id(),
        crate::current_test().replace([':', '/'], "_")
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = run_file_in(&dir, rules, tests);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_file_in(dir: &Path, rules: &str, tests: &Value) -> Result<bool, String> {
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write("rules.yml", rules)?;
    let tests = serde_json::to_string_pretty(tests).map_err(|e| e.to_string())?;
    write("tests.yml", &tests)?;
    let out = match Command::new("promtool")
        .args(["test", "rules", "tests.yml"])
        .current_dir(dir)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("promtool: {e}")),
    };
    if out.status.success() {
        Ok(true)
    } else {
        Err(format!(
            "promtool test rules failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The alerting rules of `docs/soak.md` (the yaml block after `<!-- promtool:`), and the names
/// of the alerts in it that must fire exactly on the ports judged `marginal` or `bad`.
pub fn soak_recipe() -> (String, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/soak.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rules = yaml_after(&doc, "<!-- promtool:")
        .unwrap_or_else(|| panic!("docs/soak.md has no yaml block after `<!-- promtool:`"));
    let alerts: Vec<String> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .map(|a| a.trim().to_string())
        .collect();
    assert!(!alerts.is_empty(), "no alert in the recipe:\n{rules}");
    (rules, alerts)
}

/// The ports of a soak document (`schemas/soak.schema.json`) judged `marginal` or `bad`, as the
/// recipe's alerts label them: `end`, `device`, and `port` unless empty (Prometheus drops an
/// empty label).
pub fn soak_cable_ports(doc: &Value) -> Vec<Labels> {
    let mut out = Vec::new();
    for e in doc["ends"].as_array().into_iter().flatten() {
        for p in e["ports"].as_array().into_iter().flatten() {
            if matches!(p["verdict"].as_str(), Some("marginal" | "bad")) {
                let mut l = Labels::new();
                l.insert("end".into(), e["end"].as_str().unwrap_or("").into());
                l.insert("device".into(), p["device"].as_str().unwrap_or("").into());
                let port = p["port"].as_str().unwrap_or("");
                if !port.is_empty() {
                    l.insert("port".into(), port.into());
                }
                out.push(l);
            }
        }
    }
    out
}

/// A case per soak (name, its text file, its JSON document): every alert of the recipe
/// expected on exactly the ports the document calls `marginal` or `bad`.
pub fn soak_cases(soaks: &[(String, String, Value)], alerts: &[String]) -> Vec<Case> {
    soaks
        .iter()
        .map(|(name, textfile, doc)| Case {
            name: name.clone(),
            textfile: textfile.clone(),
            alerts: alerts
                .iter()
                .map(|a| (a.clone(), soak_cable_ports(doc)))
                .collect(),
        })
        .collect()
}

/// Asserts that the documented recipe fires exactly on the ports each soak's JSON calls
/// `marginal` or `bad`, on each soak's text file; records a skip (and returns) without promtool.
pub fn assert_soak_recipe_agrees(soaks: &[(String, String, Value)]) {
    let (rules, alerts) = soak_recipe();
    match test_rules(&rules, &soak_cases(soaks, &alerts)) {
        Ok(true) => {}
        Ok(false) => crate::skip("promtool is not installed (Debian package prometheus)"),
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_split_the_value_off_the_series() {
        let text = "# HELP x y\n# TYPE x gauge\nx{a=\"b c\",d=\"e}\"} 1.5\ny 0\n\n";
        assert_eq!(
            samples(text),
            [
                ("x{a=\"b c\",d=\"e}\"}".to_string(), "1.5".to_string()),
                ("y".to_string(), "0".to_string())
            ]
        );
    }

    #[test]
    fn the_yaml_block_after_the_marker() {
        let md =
            "```yaml\nno: 1\n```\n<!-- promtool: x -->\ntext\n```yaml\ngroups: []\nmore: 2\n```\n";
        assert_eq!(
            yaml_after(md, "<!-- promtool:").as_deref(),
            Some("groups: []\nmore: 2\n")
        );
        assert_eq!(yaml_after(md, "<!-- nothing"), None);
    }

    #[test]
    fn promtool_fails_a_wrong_expectation() {
        let rules = "groups:\n  - name: t\n    rules:\n      - alert: High\n        expr: x > 1\n";
        let high = Labels::from([("a".to_string(), "b".to_string())]);
        let case = |expected: Vec<Labels>| Case {
            name: "t".into(),
            textfile: "x{a=\"b\"} 2\nx{a=\"c\"} 0\n".into(),
            alerts: vec![("High".into(), expected)],
        };
        match test_rules(rules, &[case(vec![high.clone()])]) {
            Ok(false) => {
                crate::skip("promtool is not installed (Debian package prometheus)");
                return;
            }
            r => assert_eq!(r, Ok(true)),
        }
        // Not a rubber stamp: no alert expected where one fires, or one more than fires.
        assert!(test_rules(rules, &[case(vec![])]).is_err());
        let other = Labels::from([("a".to_string(), "c".to_string())]);
        assert!(test_rules(rules, &[case(vec![high, other])]).is_err());
    }
}
