//! The storage pyramid: memory, disks and the network side by side, and the layer
//! that limits a disk-to-disk copy. Pure: measured figures in, rows and a finding out.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::finding::{Finding, FindingId, Severity};

/// One disk (a directory's file system) as measured by `linerate disk`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskIn {
    /// `local` or `remote`.
    pub host: String,
    pub path: String,
    pub filesystem: String,
    /// Sequential read / write in large blocks, Gb/s.
    pub read_gbps: Option<f64>,
    pub write_gbps: Option<f64>,
    /// 4 KiB random reads per second.
    pub rand_read_iops: Option<f64>,
}

/// A measured file copy (`bench --file`): its layers, Gb/s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyIn {
    /// Where the copy went: `loopback` (self-check) or the server.
    pub to: String,
    pub end_to_end_gbps: f64,
    pub source_read_gbps: Option<f64>,
    pub network_gbps: Option<f64>,
    pub destination_write_gbps: Option<f64>,
    pub bottleneck: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PyramidInput {
    /// Memory copy, all cores, Gb/s.
    pub memory_gbps: Option<f64>,
    /// Theoretical DRAM bandwidth, Gb/s, when known.
    pub memory_ceiling_gbps: Option<f64>,
    pub disks: Vec<DiskIn>,
    /// Best TCP result on the tested path, Gb/s, and its ceiling.
    pub network_gbps: Option<f64>,
    pub network_ceiling_gbps: Option<f64>,
    /// `loopback` or the interface tested.
    pub network_subject: String,
    pub copy: Option<CopyIn>,
    /// Why a layer could not be measured (shown as is).
    pub notes: Vec<String>,
}

/// One row of the pyramid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `memory`, `disk_read`, `disk_write`, `network`, `file_copy`.
    pub layer: String,
    /// `local` or `remote`.
    pub host: String,
    /// A path, an interface, or `all cores`.
    pub subject: String,
    pub gbps: f64,
    pub ceiling_gbps: Option<f64>,
}

/// What limits a disk-to-disk copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyLimit {
    /// The expected rate of a copy, Gb/s: the slowest of reading, the network and writing.
    pub gbps: f64,
    /// The row (layer, host, subject) that sets it.
    pub limited_by: Row,
    /// A copy was measured: its end-to-end rate, Gb/s.
    pub measured_gbps: Option<f64>,
    pub sentence: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pyramid {
    pub rows: Vec<Row>,
    pub copy: Option<CopyLimit>,
    pub notes: Vec<String>,
}

fn layer_words(r: &Row) -> String {
    let what = match r.layer.as_str() {
        "disk_read" => "reading from",
        "disk_write" => "writing to",
        "network" => "the network",
        "memory" => "memory",
        _ => "copying",
    };
    let host = if r.host == "remote" {
        "the server's "
    } else {
        ""
    };
    match r.layer.as_str() {
        "disk_read" | "disk_write" => format!("{what} {host}disk {}", r.subject),
        "network" => format!("{what} ({})", r.subject),
        _ => what.to_string(),
    }
}

fn gbs(gbps: f64) -> String {
    let b = gbps / 8.0;
    if b >= 10.0 {
        format!("{b:.0} GB/s")
    } else if b >= 1.0 {
        format!("{b:.1} GB/s")
    } else {
        format!("{b:.2} GB/s")
    }
}

/// Build the pyramid and, when a disk limits a copy well below the network, a finding.
pub fn pyramid(i: &PyramidInput) -> (Pyramid, Vec<Finding>) {
    let mut rows = Vec::new();
    if let Some(g) = i.memory_gbps {
        rows.push(Row {
            layer: "memory".into(),
            host: "local".into(),
            subject: "copy, all cores".into(),
            gbps: g,
            ceiling_gbps: i.memory_ceiling_gbps,
        });
    }
    for d in &i.disks {
        for (layer, g) in [("disk_read", d.read_gbps), ("disk_write", d.write_gbps)] {
            if let Some(g) = g {
                rows.push(Row {
                    layer: layer.into(),
                    host: d.host.clone(),
                    subject: format!("{} ({})", d.path, d.filesystem),
                    gbps: g,
                    ceiling_gbps: None,
                });
            }
        }
    }
    if let Some(g) = i.network_gbps {
        rows.push(Row {
            layer: "network".into(),
            host: "local".into(),
            subject: i.network_subject.clone(),
            gbps: g,
            ceiling_gbps: i.network_ceiling_gbps,
        });
    }
    if let Some(c) = &i.copy {
        rows.push(Row {
            layer: "file_copy".into(),
            host: "local".into(),
            subject: format!("disk → {} → disk", c.to),
            gbps: c.end_to_end_gbps,
            ceiling_gbps: None,
        });
    }
    let mut notes = i.notes.clone();
    let net = rows.iter().find(|r| r.layer == "network").cloned();
    // A copy reads a local disk, crosses the network and writes a disk at the other end.
    // A measured copy knows each of these as the copy saw them (writes made durable);
    // without one, the disk tests and the network test stand in.
    let measured_chain: Option<Vec<Row>> = i.copy.as_ref().map(|c| {
        let remote = c.to != "loopback";
        let mut v = Vec::new();
        if let Some(g) = c.source_read_gbps {
            v.push(Row {
                layer: "disk_read".into(),
                host: "local".into(),
                subject: "(the copy's source file)".into(),
                gbps: g,
                ceiling_gbps: None,
            });
        }
        if let Some(g) = c.network_gbps {
            v.push(Row {
                layer: "network".into(),
                host: "local".into(),
                subject: format!("{}, during the copy", i.network_subject),
                gbps: g,
                ceiling_gbps: None,
            });
        }
        if let Some(g) = c.destination_write_gbps {
            v.push(Row {
                layer: "disk_write".into(),
                host: if remote { "remote" } else { "local" }.into(),
                subject: "(the copy, made durable with fsync)".into(),
                gbps: g,
                ceiling_gbps: None,
            });
        }
        v
    });
    let chain: Vec<Row> = match measured_chain {
        Some(v) if v.len() >= 2 => {
            rows.extend(v.iter().filter(|r| r.layer != "network").cloned());
            v
        }
        _ => {
            let best = |layer: &str| {
                rows.iter()
                    .filter(|r| r.layer == layer && r.host == "local")
                    .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
                    .cloned()
            };
            [best("disk_read"), net.clone(), best("disk_write")]
                .into_iter()
                .flatten()
                .collect()
        }
    };
    let copy = chain
        .iter()
        .min_by(|a, b| a.gbps.total_cmp(&b.gbps))
        .filter(|_| chain.len() >= 2)
        .map(|slow| {
            let measured = i.copy.as_ref().map(|c| c.end_to_end_gbps);
            let mut sentence = format!(
                "a disk-to-disk copy can reach about {} ({:.2} Gb/s): {} is the slowest layer",
                gbs(slow.gbps),
                slow.gbps,
                layer_words(slow)
            );
            if let Some(m) = measured {
                let _ = write!(sentence, "; a measured copy reached {}", gbs(m));
            }
            CopyLimit {
                gbps: slow.gbps,
                limited_by: slow.clone(),
                measured_gbps: measured,
                sentence,
            }
        });
    if copy.is_none() && net.is_some() && i.disks.is_empty() {
        notes.push("no disk measured: give doctor --disk PATH to include one".into());
    }
    let mut findings = Vec::new();
    if let (Some(c), Some(n)) = (&copy, &net) {
        // A disk far below the network: the network is not what a file copy will feel.
        if c.limited_by.layer != "network" && c.gbps < 0.5 * n.gbps {
            findings.push(
                Finding::new(
                    FindingId::StorageDiskLimitsCopy,
                    Severity::Info,
                    if c.limited_by.host == "remote" { "remote:storage" } else { "storage" },
                )
                    .evidence("disk (Gb/s)", format!("{:.2}", c.gbps))
                    .evidence("network (Gb/s)", format!("{:.2}", n.gbps))
                    .message(format!(
                        "file copies will run at the disk's speed, not the network's: {} ({}) against {} ({:.2} Gb/s) on the network",
                        layer_words(&c.limited_by),
                        gbs(c.gbps),
                        n.subject,
                        n.gbps
                    ))
                    .fix("for faster copies use a faster disk or several in parallel (RAID 0, striping), or stage the data in RAM (tmpfs); a faster link will not help"),
            );
        }
    }
    (Pyramid { rows, copy, notes }, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> PyramidInput {
        PyramidInput {
            memory_gbps: Some(400.0),
            memory_ceiling_gbps: Some(1024.0),
            disks: vec![DiskIn {
                host: "local".into(),
                path: "/data".into(),
                filesystem: "ext4 on nvme0n1".into(),
                read_gbps: Some(24.0),
                write_gbps: Some(3.2),
                rand_read_iops: Some(400_000.0),
            }],
            network_gbps: Some(36.0),
            network_ceiling_gbps: Some(40.0),
            network_subject: "ib0".into(),
            copy: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_slowest_layer_of_a_copy_is_named() {
        let (p, f) = pyramid(&input());
        let c = p.copy.unwrap();
        assert_eq!(c.limited_by.layer, "disk_write");
        assert!((c.gbps - 3.2).abs() < 1e-9);
        assert!(
            c.sentence.contains("writing to disk /data"),
            "{}",
            c.sentence
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, FindingId::StorageDiskLimitsCopy);
        assert_eq!(p.rows.len(), 4);
    }

    #[test]
    fn a_measured_loopback_copy_overrides_the_disk_tests() {
        // O_DIRECT writes look fast (a write-back cache below); the copy's fsync tells the truth.
        let mut i = input();
        i.disks[0].write_gbps = Some(28.0);
        i.copy = Some(CopyIn {
            to: "loopback".into(),
            end_to_end_gbps: 2.3,
            source_read_gbps: Some(27.0),
            network_gbps: Some(18.0),
            destination_write_gbps: Some(2.4),
            bottleneck: Some("destination_write".into()),
        });
        let (p, f) = pyramid(&i);
        let c = p.copy.unwrap();
        assert_eq!(c.limited_by.layer, "disk_write");
        assert_eq!(c.limited_by.host, "local");
        assert!((c.gbps - 2.4).abs() < 1e-9);
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn a_fast_disk_leaves_the_network_as_the_limit() {
        let mut i = input();
        i.disks[0].read_gbps = Some(60.0);
        i.disks[0].write_gbps = Some(50.0);
        let (p, f) = pyramid(&i);
        assert_eq!(p.copy.unwrap().limited_by.layer, "network");
        assert!(f.is_empty());
    }

    #[test]
    fn the_servers_disk_counts_when_a_copy_measured_it() {
        let mut i = input();
        i.disks[0].write_gbps = Some(50.0);
        i.copy = Some(CopyIn {
            to: "10.0.0.2:5301".into(),
            end_to_end_gbps: 1.9,
            source_read_gbps: Some(20.0),
            network_gbps: Some(30.0),
            destination_write_gbps: Some(2.0),
            bottleneck: Some("destination_write".into()),
        });
        let (p, f) = pyramid(&i);
        let c = p.copy.unwrap();
        assert_eq!(
            (c.limited_by.layer.as_str(), c.limited_by.host.as_str()),
            ("disk_write", "remote")
        );
        assert_eq!(c.measured_gbps, Some(1.9));
        assert!(c.sentence.contains("server's disk"), "{}", c.sentence);
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn without_disks_there_is_no_copy_verdict() {
        let mut i = input();
        i.disks.clear();
        let (p, f) = pyramid(&i);
        assert!(p.copy.is_none());
        assert!(f.is_empty());
        assert!(p.notes.iter().any(|n| n.contains("--disk")));
    }
}
