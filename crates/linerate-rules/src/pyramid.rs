//! The storage pyramid: memory, disks and the network side by side, and the layer
//! that limits a disk-to-disk copy. Pure: measured figures in, rows and a finding out.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use linerate_facts::{CopyLimit, Finding, FindingId, Pyramid, Row, Severity};

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
    /// The test of the best TCP result, in words (`TCP send, 2 streams`).
    #[serde(default)]
    pub network_test: Option<String>,
    pub copy: Option<CopyIn>,
    /// Why a layer could not be measured (shown as is).
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
    let durable = if r.durable { " (durable, fsync)" } else { "" };
    match r.layer.as_str() {
        "disk_read" | "disk_write" => format!("{what} {host}disk {}{durable}", r.subject),
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

/// The rows: memory, each disk (read, write, and the durable write a measured copy made on
/// it), the network, and the measured copy end to end.
fn rows(i: &PyramidInput) -> Vec<Row> {
    let mut rows = Vec::new();
    if let Some(g) = i.memory_gbps {
        rows.push(Row {
            ceiling_gbps: i.memory_ceiling_gbps,
            ..Row::new("memory", "local", "copy, all cores", g)
        });
    }
    for d in &i.disks {
        let subject = disk_subject(d);
        for (layer, g) in [("disk_read", d.read_gbps), ("disk_write", d.write_gbps)] {
            if let Some(g) = g {
                rows.push(Row::new(layer, &d.host, subject.clone(), g));
            }
        }
    }
    if let Some(c) = &i.copy {
        // The copy's destination is a disk too: the first local disk on loopback (the
        // self-check's server writes next to the source), else the server's write directory.
        if let (Some(g), Some(row)) = (c.destination_write_gbps, copy_destination(i, c)) {
            rows.push(Row { gbps: g, ..row });
        }
    }
    if let Some(g) = i.network_gbps {
        rows.push(Row {
            ceiling_gbps: i.network_ceiling_gbps,
            test: i.network_test.clone(),
            ..Row::new("network", "local", i.network_subject.clone(), g)
        });
    }
    if let Some(c) = &i.copy {
        rows.push(Row::new(
            "file_copy",
            "local",
            format!("disk → {} → disk", c.to),
            c.end_to_end_gbps,
        ));
    }
    rows
}

fn disk_subject(d: &DiskIn) -> String {
    format!("{} ({})", d.path, d.filesystem)
}

/// The row of the disk a measured copy wrote to (durable), without its rate.
fn copy_destination(i: &PyramidInput, c: &CopyIn) -> Option<Row> {
    let row = if c.to == "loopback" {
        let d = i.disks.iter().find(|d| d.host == "local")?;
        Row::new("disk_write", "local", disk_subject(d), 0.0)
    } else {
        Row::new("disk_write", "remote", "its write directory", 0.0)
    };
    Some(Row {
        durable: true,
        ..row
    })
}

/// A measured copy's own layers (source read, network, durable write), as the copy saw them.
fn copy_layers(i: &PyramidInput, c: &CopyIn) -> Vec<Row> {
    let mut v = Vec::new();
    if let Some(g) = c.source_read_gbps {
        let subject = i
            .disks
            .iter()
            .find(|d| d.host == "local")
            .map_or_else(|| "its source file".to_string(), disk_subject);
        v.push(Row::new("disk_read", "local", subject, g));
    }
    if let Some(g) = c.network_gbps {
        v.push(Row::new(
            "network",
            "local",
            format!("{}, during the copy", i.network_subject),
            g,
        ));
    }
    if let (Some(g), Some(row)) = (c.destination_write_gbps, copy_destination(i, c)) {
        v.push(Row { gbps: g, ..row });
    }
    v
}

/// The slowest layer of a disk-to-disk copy: the measured copy's layers when a copy ran,
/// else the disk tests and the network test standing in for them.
fn copy_limit(i: &PyramidInput, rows: &[Row]) -> Option<CopyLimit> {
    let layers = i
        .copy
        .as_ref()
        .map(|c| copy_layers(i, c))
        .unwrap_or_default();
    let chain: Vec<Row> = if layers.len() >= 2 {
        layers.clone()
    } else {
        let best = |layer: &str| {
            rows.iter()
                .filter(|r| r.layer == layer && r.host == "local" && !r.durable)
                .max_by(|a, b| a.gbps.total_cmp(&b.gbps))
                .cloned()
        };
        [best("disk_read"), best("network"), best("disk_write")]
            .into_iter()
            .flatten()
            .collect()
    };
    if chain.len() < 2 {
        return None;
    }
    let slow = chain.iter().min_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
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
    Some(CopyLimit {
        gbps: slow.gbps,
        limited_by: slow.clone(),
        measured_gbps: measured,
        layers,
        sentence,
    })
}

/// Build the pyramid and, when a disk limits a copy well below the network, a finding.
pub fn pyramid(i: &PyramidInput) -> (Pyramid, Vec<Finding>) {
    let rows = rows(i);
    let copy = copy_limit(i, &rows);
    let mut notes = i.notes.clone();
    let net = rows.iter().find(|r| r.layer == "network").cloned();
    if copy.is_none() && net.is_some() && i.disks.is_empty() {
        notes.push("no disk measured: give doctor --disk PATH to include one".into());
    }
    let mut findings = Vec::new();
    if let (Some(c), Some(n)) = (&copy, &net) {
        // A disk far below the network: the network is not what a file copy will feel.
        if c.limited_by.layer != "network"
            && c.gbps < crate::thresholds::DISK_LIMITS_COPY_FRACTION * n.gbps
        {
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
            network_test: Some("TCP send, 4 streams".into()),
            copy: None,
            notes: Vec::new(),
        }
    }

    /// A copy through loopback whose durable write (2.4 Gb/s) is its slowest layer.
    fn loopback_copy() -> CopyIn {
        CopyIn {
            to: "loopback".into(),
            end_to_end_gbps: 2.3,
            source_read_gbps: Some(27.0),
            network_gbps: Some(18.0),
            destination_write_gbps: Some(2.4),
            bottleneck: Some("destination_write".into()),
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
        assert!(p.rows.iter().all(|r| !r.durable));
    }

    #[test]
    fn one_row_per_disk_layer_and_the_copys_layers_stay_the_copys() {
        let mut i = input();
        i.copy = Some(loopback_copy());
        let (p, _) = pyramid(&i);
        let disk = "/data (ext4 on nvme0n1)";
        let of = |layer: &str, durable: bool| {
            p.rows
                .iter()
                .filter(|r| r.layer == layer && r.durable == durable)
                .map(|r| (r.subject.as_str(), r.gbps))
                .collect::<Vec<_>>()
        };
        // The disk: read and write from the disk test, the durable write from the copy; the
        // copy's source read is not a second "disk read" row.
        assert_eq!(of("disk_read", false), vec![(disk, 24.0)]);
        assert_eq!(of("disk_write", false), vec![(disk, 3.2)]);
        assert_eq!(of("disk_write", true), vec![(disk, 2.4)]);
        assert_eq!(of("file_copy", false).len(), 1);
        assert_eq!(p.rows.len(), 6, "{:?}", p.rows);
        let c = p.copy.unwrap();
        assert_eq!(c.layers.len(), 3);
        assert!(c.limited_by.durable);
        assert!(c.sentence.contains("(durable, fsync)"), "{}", c.sentence);
        let json = serde_json::to_value(&c.layers[0]).unwrap();
        assert!(json.get("durable").is_none(), "{json}");
    }

    #[test]
    fn a_measured_loopback_copy_overrides_the_disk_tests() {
        // O_DIRECT writes look fast (a write-back cache below); the copy's fsync tells the truth.
        let mut i = input();
        i.disks[0].write_gbps = Some(28.0);
        i.copy = Some(loopback_copy());
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
