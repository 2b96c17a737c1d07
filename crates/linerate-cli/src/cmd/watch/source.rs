//! Sampling: the inventory under the root (read again whenever a link file or the set of ports
//! changes), the counters of the ports watched every interval through soak's sampler (the
//! link files read once for both), and the time of each sample.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use linerate_facts::{Bond, Inventory};
use linerate_inventory::counters::{targets_where, CounterSampler};
use linerate_inventory::links::{bonds, LinkWatch};
use linerate_proto::soak::{End, SoakSample};
use linerate_watch::{asked_for, port_id, watched_ports, Tick, WatchedPort};

/// One sample: when, the counters, and the ports again when the inventory changed.
#[derive(Debug)]
pub struct Sampled {
    pub tick: Tick,
    pub sample: SoakSample,
    pub ports: Option<Vec<WatchedPort>>,
}

/// What is read every interval.
#[derive(Debug)]
pub struct Sampling {
    root: PathBuf,
    /// The ports asked for on the command line (every port but loopback when empty).
    asked: Vec<String>,
    inv: Inventory,
    bonds: Vec<Bond>,
    links: LinkWatch,
    counters: CounterSampler,
    start: Instant,
    seq: u64,
}

impl Sampling {
    /// The inventory under `root` and the ports to watch in it. Refused: a root that is not a
    /// filesystem root, a port asked for that is not there.
    pub fn open(root: &Path, asked: &[String]) -> anyhow::Result<Self> {
        let inv = linerate_inventory::probe(root)?;
        for a in asked {
            if !inv
                .ports
                .iter()
                .any(|p| asked_for(std::slice::from_ref(a), p))
            {
                let here: Vec<String> = inv
                    .ports
                    .iter()
                    .map(|p| match port_id(p) {
                        Some(id) if Some(id.label().as_str()) != p.netdev.as_deref() => {
                            format!("{} ({})", p.name, id.label())
                        }
                        _ => p.name.clone(),
                    })
                    .collect();
                bail!(
                    "PORT `{a}`: no such port under {}; expected an interface, an RDMA port \
                     (device/port) or an RDMA device of: {}",
                    root.display(),
                    if here.is_empty() {
                        "(none: this root has no ports)".to_string()
                    } else {
                        here.join(", ")
                    }
                );
            }
        }
        let bonds = bonds(root);
        let links = LinkWatch::new(root, &inv, &bonds);
        let asked = asked.to_vec();
        let counters = CounterSampler::new(root, targets_where(&inv, |p| asked_for(&asked, p)));
        Ok(Self {
            root: root.to_path_buf(),
            asked,
            inv,
            bonds,
            links,
            counters,
            start: Instant::now(),
            seq: 0,
        })
    }

    /// The ports watched, as the inventory has them now.
    pub fn ports(&self) -> Vec<WatchedPort> {
        watched_ports(&self.inv, &self.bonds, &self.asked)
    }

    /// The host's name (`/proc/sys/kernel/hostname` under the root).
    pub fn host(&self) -> String {
        self.inv
            .host
            .hostname
            .clone()
            .unwrap_or_else(|| "this host".into())
    }

    /// Reads the link files, the inventory again if they changed, then every counter.
    pub fn sample(&mut self) -> Sampled {
        let t = self.start.elapsed();
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let tick = Tick {
            seq: self.seq,
            t_ms: u64::try_from(t.as_millis()).unwrap_or(u64::MAX),
            unix_ms,
        };
        self.seq += 1;
        let mut problems = Vec::new();
        let ports = if self.links.changed() {
            match linerate_inventory::probe(&self.root) {
                Ok(inv) => {
                    self.bonds = bonds(&self.root);
                    self.links = LinkWatch::new(&self.root, &inv, &self.bonds);
                    let asked = &self.asked;
                    self.counters = CounterSampler::new(
                        &self.root,
                        targets_where(&inv, |p| asked_for(asked, p)),
                    );
                    self.inv = inv;
                    Some(self.ports())
                }
                Err(e) => {
                    problems.push(format!("the inventory could not be read again: {e}"));
                    None
                }
            }
        } else {
            None
        };
        // The link files just read give the ports' `rate` and `speed`: read once.
        let mut sample =
            self.counters
                .sample_with(End::Local, tick.seq, tick.t_s(), Some(&self.links));
        sample.problems.extend(problems);
        Sampled {
            tick,
            sample,
            ports,
        }
    }
}
