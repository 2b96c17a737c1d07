//! The counter table (`linerate_facts::COUNTERS`) tied to its users: every counter a soak rule
//! judges is a row of the table, a rise of it is judged by the family its row names (a check
//! or finding that names it), it is reported on its port even when it did not move, and
//! `docs/soak.md` lists it with the same source, class, width and judge.

use std::path::Path;

use linerate_facts::{
    CounterClass, CounterDef, CounterName, CounterRole, CounterSource, CounterWidth, COUNTERS,
};
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};
use linerate_soak::{judge_port, JudgeParams, PortReport, RuleId, Tracker};

/// The rows soak judges (a role that is no basis), with a counter name each row takes.
fn judged_rows() -> Vec<(&'static CounterDef, String)> {
    COUNTERS
        .iter()
        .filter(|d| d.judged_by_soak())
        .filter_map(|d| {
            let name = match d.name {
                CounterName::Exact(n) => n.to_string(),
                CounterName::AllOf(parts) | CounterName::AnyOf(parts) => parts.join("_"),
                CounterName::EndsWith(parts) => format!("x{}", parts[0]),
                CounterName::Edges(starts, ends) => format!("{}prio3{}", starts[0], ends[0]),
                CounterName::Other => return None,
            };
            Some((d, name))
        })
        .collect()
}

fn source_words(d: &CounterDef) -> &'static str {
    if let linerate_facts::CounterRead::Snmp { group, .. } = d.read {
        if linerate_facts::CounterRead::snmp_file(group) == "netstat" {
            return "`/proc/net/netstat`";
        }
    }
    match d.source {
        CounterSource::IbCounters => "InfiniBand `counters/`",
        CounterSource::IbHwCounters => "InfiniBand `hw_counters/`",
        CounterSource::NetdevStatistics => "`statistics/` (rtnetlink `IFLA_STATS64`)",
        CounterSource::Carrier => "the interface's directory (rtnetlink `IFLA_CARRIER_*`)",
        CounterSource::Ethtool => "`ethtool -S`",
        CounterSource::Snmp => "`/proc/net/snmp`",
    }
}

fn counter_words(d: &CounterDef) -> String {
    match d.name {
        CounterName::Exact(n) => format!("`{n}`"),
        CounterName::AllOf(parts) => {
            let words: Vec<String> = parts.iter().map(|p| format!("`{p}`")).collect();
            format!("any with {} in its name", words.join(" and "))
        }
        CounterName::AnyOf(parts) | CounterName::EndsWith(parts) => {
            let words: Vec<String> = parts.iter().map(|p| format!("`{p}`")).collect();
            format!("any with {} in its name", words.join(" or "))
        }
        CounterName::Edges(starts, ends) => {
            let words = |w: &[&str]| {
                w.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            };
            format!(
                "any starting with {} and ending with {}",
                words(starts),
                words(ends)
            )
        }
        CounterName::Other => "any other".into(),
    }
}

fn class_words(c: CounterClass) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The line of docs/soak.md's table of judged counters for row `d`.
fn doc_line(d: &CounterDef) -> String {
    let role = d.judges.soak.expect("a judged row");
    let family = role.family().map_or("reported only", |f| f.as_str());
    let doctor = if d.judges.doctor { ", doctor" } else { "" };
    format!(
        "| {} | {} | {} | {} | {family}: `{}`{doctor} |",
        counter_words(d),
        source_words(d),
        class_words(d.class),
        d.width.label(),
        role.as_str()
    )
}

#[test]
fn soak_md_lists_every_judged_counter_as_the_table_has_it() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/soak.md");
    let doc = std::fs::read_to_string(&p).expect("docs/soak.md");
    let lines: Vec<String> = judged_rows().iter().map(|(d, _)| doc_line(d)).collect();
    if std::env::var_os("LINERATE_PRINT_COUNTERS").is_some() {
        println!("{}", lines.join("\n"));
    }
    let missing: Vec<&String> = lines.iter().filter(|l| !doc.contains(l.as_str())).collect();
    assert!(
        missing.is_empty(),
        "docs/soak.md (The counters soak judges) misses these lines of the counter table:\n{}",
        missing
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // ... and lists nothing the table does not judge.
    let section = doc
        .split("### The counters soak judges")
        .nth(1)
        .expect("a section `### The counters soak judges`");
    let listed = section
        .lines()
        .skip_while(|l| !l.starts_with("| counter"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .count();
    assert_eq!(listed, lines.len(), "one line per judged row");
}

fn kind(source: CounterSource) -> SoakPortKind {
    match source {
        CounterSource::IbCounters | CounterSource::IbHwCounters => SoakPortKind::Infiniband {
            speed: Some("QDR".into()),
            signalling_gbps: Some(40.0),
        },
        _ => SoakPortKind::Ethernet {
            speed_mbps: Some(100_000),
            roce: false,
        },
    }
}

/// A port whose counter `name` of `source` rose by 5 over 60 s (a host-wide one: the host's,
/// with TCP's segments sent beside it), judged.
fn rise(source: CounterSource, name: &str) -> PortReport {
    let mut t = Tracker::new();
    for (seq, v) in [(0u64, 0u64), (1, 5)] {
        let mut s = SoakSample::new(End::Local, seq, seq as f64 * 60.0);
        let counters = if source == CounterSource::Snmp {
            // Host-wide: the retransmits rise with it (TCP's spurious ones are some of them).
            if name != "TcpRetransSegs" {
                s.set_host(source, "TcpRetransSegs", v);
            }
            s.set_host(source, name, v);
            s.set_host(CounterSource::Snmp, "TcpOutSegs", 1000 * seq);
            Vec::new()
        } else {
            vec![(source, name.to_string(), v)]
        };
        s.ports.push(PortSample {
            phy: None,
            device: "dev0".into(),
            port: "1".into(),
            netdev: None,
            kind: kind(source),
            counters,
        });
        t.push(&s);
    }
    let info = t.ports().next().expect("a port").clone();
    judge_port(&t, &info, &JudgeParams::default())
}

#[test]
fn every_judged_counter_is_judged_by_its_family_and_reported() {
    for (d, name) in judged_rows() {
        let role = d.judges.soak.expect("judged");
        let Some(family) = role.family() else {
            continue;
        };
        let r = rise(d.source, &name);
        let named = r
            .checks
            .iter()
            .any(|c| c.counter.as_deref() == Some(name.as_str()))
            || r.findings
                .iter()
                .any(|f| f.counter.as_deref() == Some(name.as_str()));
        match role {
            // The pre-FEC BER is one figure of the port, the check names no counter.
            CounterRole::PreFec => assert!(
                r.checks.iter().any(|c| c.rule == RuleId::PreFecBer),
                "{name}: {:?}",
                r.checks
            ),
            // Judged beside the throughput of the direction they slow: a port whose only
            // interval had them has nothing to compare with, and no check.
            CounterRole::PauseReceived | CounterRole::PauseSent => assert!(
                r.checks.iter().all(|c| c.rule != RuleId::PauseFrames),
                "{name}: {:?}",
                r.checks
            ),
            // Host-wide: judged as the share of what the host sent, on every port.
            CounterRole::TcpRetrans => assert!(
                r.checks.iter().any(|c| c.rule == RuleId::TcpRetransmits),
                "{name}: {:?}",
                r.checks
            ),
            _ => assert!(
                named,
                "{name} ({}) rose and nothing of {family:?} named it: {:?} {:?}",
                d.source.as_str(),
                r.checks,
                r.findings
            ),
        }
        if d.source != CounterSource::Snmp {
            assert!(
                r.counters.iter().any(|c| c.name == name),
                "{name}: a judged counter is reported on its port"
            );
        }
    }
}

#[test]
fn a_counter_without_a_row_of_its_own_is_its_sources_other() {
    for s in CounterSource::ALL {
        let d = CounterDef::of(s, "no_such_counter_anywhere");
        assert_eq!((d.source, d.name), (s, CounterName::Other));
        assert!(!d.judged_by_soak());
        assert!(!d.judges.doctor);
    }
    // A data counter of the PMA is 32 or 64 bits, decided from its values.
    assert_eq!(
        CounterDef::of(CounterSource::IbCounters, "port_rcv_data").width,
        CounterWidth::DataCounter
    );
}
