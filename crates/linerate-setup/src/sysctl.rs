//! sysctl: socket buffers sized to the bandwidth-delay product of the fastest port at a stated
//! round-trip time, with perfSONAR's speed tiers as the floor, never lowering a value that is
//! already higher (running or configured). Pure.

use std::collections::BTreeMap;

use linerate_facts::{
    Analysis, FindingId, Inventory, Plan, PlanCommand, Step, TcpBufferSizes, Topic, When, Why,
};
use linerate_units::{fmt_num, r2, r3};

use crate::plan;
use crate::snapshot::Snapshot;
use crate::Options;

/// The file setup writes.
pub const PATH: &str = linerate_facts::SYSCTL_FILE;

/// A sysctl value: one number or the triple of `tcp_rmem`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Value(Vec<u64>);

impl Value {
    fn parse(s: &str) -> Option<Self> {
        let v: Option<Vec<u64>> = s.split_whitespace().map(|w| w.parse().ok()).collect();
        v.filter(|v| !v.is_empty()).map(Self)
    }

    /// Element-wise maximum (a value the user raised stays raised).
    fn max(&self, other: &Self) -> Self {
        if self.0.len() != other.0.len() {
            return self.clone();
        }
        Self(
            self.0
                .iter()
                .zip(&other.0)
                .map(|(a, b)| *a.max(b))
                .collect(),
        )
    }

    fn at_least(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a >= b)
    }

    fn show(&self) -> String {
        self.0
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Keys set by the sysctl files, in the order sysctl reads them (`/etc/sysctl.d/*.conf` by
/// name, then `/etc/sysctl.conf`), the last setting winning; with the file that set each.
fn configured(s: &Snapshot) -> BTreeMap<String, (Value, String)> {
    let mut out = BTreeMap::new();
    let files = s
        .files_in("/etc/sysctl.d")
        .filter(|(p, _)| {
            std::path::Path::new(p)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("conf"))
        })
        .chain(s.file("/etc/sysctl.conf").map(|t| ("/etc/sysctl.conf", t)));
    for (path, text) in files {
        for line in text.lines() {
            let t = line.trim().trim_start_matches('-');
            if t.starts_with('#') || t.starts_with(';') {
                continue;
            }
            if let Some((k, v)) = t.split_once('=') {
                if let Some(v) = Value::parse(v) {
                    out.insert(k.trim().replace('/', "."), (v, path.to_string()));
                }
            }
        }
    }
    out
}

fn running(s: &Snapshot, key: &str) -> Option<Value> {
    s.file(&format!("/proc/sys/{}", key.replace('.', "/")))
        .and_then(Value::parse)
}

/// The fastest port: its name and rate in Gb/s (the ceiling, or what it would carry once up).
fn fastest(analysis: &Analysis) -> Option<(String, f64)> {
    analysis
        .ports
        .iter()
        .map(|p| {
            let g = p.ceiling.gbps.max(p.ceiling.potential_gbps.unwrap_or(0.0));
            (p.name.clone(), g)
        })
        .filter(|(_, g)| *g > 0.0)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The proposed values for a rate and round trip (the sizing doctor quotes too).
fn proposed(gbps: f64, rtt_ms: f64) -> (u64, Vec<(&'static str, Value)>) {
    let b = TcpBufferSizes::for_path(gbps, rtt_ms);
    (
        b.bdp,
        b.sysctls()
            .into_iter()
            .map(|(k, v)| (k, Value(v)))
            .collect(),
    )
}

pub fn build(inv: &Inventory, analysis: &Analysis, s: &Snapshot, o: &Options, plan: &mut Plan) {
    let _ = inv;
    let given = o.gbps.map(|g| ("the path".to_string(), g));
    let Some((port, gbps)) = given.or_else(|| fastest(analysis)) else {
        plan.refuse(
            Topic::Sysctl,
            "host",
            "no port with a known rate: the buffers are sized to the fastest port's bandwidth-delay product",
            Some("A port whose link is up, `--gbps RATE` (the rate to size for: what `linerate doctor` quotes), or `linerate plan` for hardware that is not there yet.".to_string()),
        );
        return;
    };
    let (bdp, want) = proposed(gbps, o.rtt_ms);
    let conf = configured(s);
    let mut lines = Vec::new();
    let mut raises = Vec::new();
    let mut why = Why::new(
        analysis
            .findings
            .iter()
            .find(|f| f.id == FindingId::TcpBuffersSmall)
            .map(|f| f.id),
        format!(
            "{port} carries up to {} Gb/s; at {} ms round trip its bandwidth-delay product is {} bytes, and TCP needs twice that in buffer; perfSONAR's tier for this speed is the floor",
            fmt_num(r2(gbps)),
            fmt_num(r3(o.rtt_ms)),
            bdp
        ),
    );
    for (key, v) in &want {
        let run = running(s, key);
        let set = conf.get(*key).map(|(v, _)| v.clone());
        let mut final_v = v.clone();
        for have in run.iter().chain(set.iter()) {
            final_v = final_v.max(have);
        }
        let effective = match (&run, &set) {
            (Some(r), Some(c)) => Some(r.max(c)),
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (None, None) => None,
        };
        if !effective.as_ref().is_some_and(|e| e.at_least(v)) {
            raises.push(*key);
        }
        if let Some(r) = &run {
            why = why.evidence(format!("/proc/sys/{}", key.replace('.', "/")), &r.show());
        }
        if let Some((c, file)) = conf.get(*key) {
            why = why.evidence(format!("{file}: {key}"), &c.show());
        }
        lines.push(format!("{key} = {}", final_v.show()));
    }
    if raises.is_empty() {
        plan.note(
            Topic::Sysctl,
            format!("the socket buffers are already at or above the values for {} Gb/s at {} ms: nothing to do", fmt_num(r2(gbps)), fmt_num(r3(o.rtt_ms))),
        );
        return;
    }
    let content = format!(
        "# Written by `linerate setup sysctl`: socket buffers for {port} at {} Gb/s and a {} ms round trip\n# (bandwidth-delay product {bdp} bytes; perfSONAR's speed tiers as the floor). Values that were\n# already higher, running or in another sysctl file, are kept. Remove this file to undo.\n{}\n",
        fmt_num(r2(gbps)),
        fmt_num(r3(o.rtt_ms)),
        lines.join("\n")
    );
    if s.file(PATH) == Some(content.as_str()) {
        plan.note(
            Topic::Sysctl,
            format!("{PATH} already holds these values; run `sysctl --system` to load them"),
        );
        return;
    }
    plan.steps.push(Step {
        topic: Topic::Sysctl,
        subject: "host".to_string(),
        summary: format!("raise {} in {PATH}", raises.join(", ")),
        why: vec![why],
        files: vec![plan::write_file(s, PATH, content)],
        commands: vec![
            PlanCommand::new(format!("sysctl -p {PATH}"), When::AfterApply, "loads the values now (they load at every boot from /etc/sysctl.d); no connection is interrupted"),
            PlanCommand::new("sysctl net.core.rmem_max net.core.wmem_max net.ipv4.tcp_rmem net.ipv4.tcp_wmem", When::Check, "prints the values in force"),
        ],
        undo: vec![format!("remove {PATH} and set the old values back with `sysctl -w` (they are in the evidence above), or reboot")],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_and_bdp() {
        // 100 Gb/s at 10 ms: BDP 125 MB, twice that rounds up to 256 MiB = the ≥40G tier's tcp max.
        let (bdp, v) = proposed(100.0, 10.0);
        assert_eq!(bdp, 125_000_000);
        assert_eq!(v[2].1, Value(vec![4096, 87380, 268_435_456]));
        assert_eq!(v[0].1, Value(vec![536_870_912]));
        // 100 Gb/s at 50 ms: twice the BDP (1.25 GB) is above every tier.
        let (_, v) = proposed(100.0, 50.0);
        assert_eq!(v[2].1 .0[2], 2_147_483_648);
        // 1 Gb/s on a LAN: the base tier.
        let (_, v) = proposed(1.0, 0.1);
        assert_eq!(v[0].1, Value(vec![67_108_864]));
        assert_eq!(v[3].1, Value(vec![4096, 65536, 33_554_432]));
    }

    #[test]
    fn never_lowers() {
        let a = Value(vec![4096, 131_072, 6_291_456]);
        let b = Value(vec![8192, 87380, 268_435_456]);
        assert_eq!(a.max(&b), Value(vec![8192, 131_072, 268_435_456]));
        assert!(!a.at_least(&b));
        assert!(a.max(&b).at_least(&b));
    }
}
