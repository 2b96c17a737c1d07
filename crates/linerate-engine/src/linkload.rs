//! What the interface of a test's address carried while the test ran: its byte counters
//! (`/sys/class/net/IF/statistics/{rx,tx}_bytes`) before and after. All traffic is counted,
//! this test's and anyone else's: the judgement of a result
//! (`linerate_rules::disturbance`) takes the test's own bytes off to see what competed with it.

use std::net::IpAddr;
use std::path::Path;
use std::time::Instant;

use linerate_proto::LinkTraffic;

/// One interface's counters at one instant.
#[derive(Debug, Clone)]
pub struct LinkSnapshot {
    interface: String,
    at: Instant,
    rx: u64,
    tx: u64,
}

/// An interface's `rx_bytes` and `tx_bytes` under `root` (`/sys/class/net`).
fn counters(root: &Path, interface: &str) -> Option<(u64, u64)> {
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(root.join(interface).join("statistics").join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("rx_bytes")?, read("tx_bytes")?))
}

impl LinkSnapshot {
    /// The counters of the interface holding `ip` now; None when there is none or its
    /// counters cannot be read.
    pub fn of(ip: IpAddr) -> Option<Self> {
        let interface = crate::sys::interface_of(ip)?;
        Self::at(Path::new("/sys/class/net"), interface)
    }

    fn at(root: &Path, interface: String) -> Option<Self> {
        let (rx, tx) = counters(root, &interface)?;
        Some(Self {
            interface,
            at: Instant::now(),
            rx,
            tx,
        })
    }

    /// What the interface carried since this snapshot (None when its counters went away).
    pub fn since(&self) -> Option<LinkTraffic> {
        self.since_at(Path::new("/sys/class/net"))
    }

    fn since_at(&self, root: &Path) -> Option<LinkTraffic> {
        let (rx, tx) = counters(root, &self.interface)?;
        Some(LinkTraffic {
            interface: self.interface.clone(),
            seconds: self.at.elapsed().as_secs_f64(),
            // A counter that went back (the interface was reset) says nothing: zero.
            rx_bytes: rx.saturating_sub(self.rx),
            tx_bytes: tx.saturating_sub(self.tx),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_and_subtracted() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("eth9/statistics");
        std::fs::create_dir_all(&stats).unwrap();
        std::fs::write(stats.join("rx_bytes"), "1000\n").unwrap();
        std::fs::write(stats.join("tx_bytes"), "50\n").unwrap();
        let s = LinkSnapshot::at(dir.path(), "eth9".into()).unwrap();
        std::fs::write(stats.join("rx_bytes"), "4000\n").unwrap();
        std::fs::write(stats.join("tx_bytes"), "10\n").unwrap();
        let t = s.since_at(dir.path()).unwrap();
        assert_eq!(
            (t.interface.as_str(), t.rx_bytes, t.tx_bytes),
            ("eth9", 3000, 0)
        );
        assert!(LinkSnapshot::at(dir.path(), "nope".into()).is_none());
        // Loopback is there on any Linux machine.
        assert!(LinkSnapshot::of("127.0.0.1".parse().unwrap()).is_some());
    }
}
