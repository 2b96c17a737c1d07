//! Link events: a port's state, rate, width, PCIe link or MTU changed between two readings of
//! the inventory (a flap, a downtrain, a retrain), a link went down and up between two samples
//! (its link-down counters moved), or a port appeared or went away (a driver reload, a
//! hot-plugged cable). Each is kept with the time it was seen, for the row and the log pane.

use serde::{Deserialize, Serialize};

use crate::port::{PortId, WatchedPort};

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A port that was not there (a driver loaded, a device hot-plugged).
    Appeared,
    /// A port that is no longer there.
    Gone,
    /// The link state (`active` → `down (polling)`, `up` → `down (no carrier)`).
    State,
    /// The link's rate (`4X EDR` → `4X FDR`, `25GbE` → `10GbE`).
    Rate,
    /// The InfiniBand link's lanes (`4X` → `1X`: a lane failed, a downtrain).
    Width,
    /// The PCIe link (`PCIe 3.0 x8` → `PCIe 3.0 x4`: a downtrain).
    Pcie,
    Mtu,
    /// The link went down and came back between two samples: its link-down counter moved
    /// while its state did not change.
    Flap,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Appeared => "appeared",
            Self::Gone => "gone",
            Self::State => "state",
            Self::Rate => "rate",
            Self::Width => "width",
            Self::Pcie => "pcie",
            Self::Mtu => "mtu",
            Self::Flap => "flap",
        }
    }
}

/// The time of a sample: its number, seconds since the watch began (monotonic) and the wall
/// clock in milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Tick {
    pub seq: u64,
    pub t_ms: u64,
    pub unix_ms: u64,
}

impl Tick {
    pub fn t_s(&self) -> f64 {
        self.t_ms as f64 / 1000.0
    }
}

/// One link event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkChange {
    #[serde(flatten)]
    pub id: PortId,
    pub name: String,
    pub what: ChangeKind,
    pub from: Option<String>,
    pub to: Option<String>,
    /// When it was seen: the sample that saw it.
    pub seq: u64,
    pub t_s: f64,
    pub unix_ms: u64,
}

impl LinkChange {
    /// `width 4X → 1X`, `appeared`, `flap (link_downed +1)`.
    pub fn words(&self) -> String {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
        match self.what {
            ChangeKind::Appeared | ChangeKind::Gone => self.what.as_str().to_string(),
            ChangeKind::Flap => match &self.to {
                Some(t) => format!("flap ({t})"),
                None => "flap".into(),
            },
            _ => format!(
                "{} {} → {}",
                self.what.as_str(),
                show(&self.from),
                show(&self.to)
            ),
        }
    }
}

fn change(
    f: &WatchedPort,
    what: ChangeKind,
    from: Option<String>,
    to: Option<String>,
    at: Tick,
) -> LinkChange {
    LinkChange {
        id: f.id.clone(),
        name: f.name.clone(),
        what,
        from,
        to,
        seq: at.seq,
        t_s: at.t_s(),
        unix_ms: at.unix_ms,
    }
}

/// The events between two readings of the ports.
pub fn diff(old: &[WatchedPort], new: &[WatchedPort], at: Tick) -> Vec<LinkChange> {
    let mut out = Vec::new();
    for n in new {
        let Some(o) = old.iter().find(|o| o.id == n.id) else {
            out.push(change(n, ChangeKind::Appeared, None, None, at));
            continue;
        };
        let (a, b) = (&o.link, &n.link);
        let mtu = |m: Option<u32>| m.map(|m| m.to_string());
        for (what, from, to) in [
            (
                ChangeKind::State,
                Some(a.state.clone()),
                Some(b.state.clone()),
            ),
            (ChangeKind::Width, a.width.clone(), b.width.clone()),
            (ChangeKind::Rate, a.rate.clone(), b.rate.clone()),
            (ChangeKind::Pcie, a.pcie.clone(), b.pcie.clone()),
            (ChangeKind::Mtu, mtu(a.mtu), mtu(b.mtu)),
        ] {
            // A link that goes down loses its rate and width with it: the state says it all.
            let with_state = matches!(what, ChangeKind::Rate | ChangeKind::Width)
                && a.up != b.up
                && (from.is_none() || to.is_none());
            if from != to && !with_state {
                out.push(change(n, what, from, to, at));
            }
        }
    }
    for o in old {
        if !new.iter().any(|n| n.id == o.id) {
            out.push(change(o, ChangeKind::Gone, None, None, at));
        }
    }
    out
}

/// A flap seen by the link-down counters that moved in an interval (`counters`: the names
/// with their increase) on a port whose state did not change.
pub fn flap(f: &WatchedPort, counters: &[(String, u64)], at: Tick) -> Option<LinkChange> {
    if counters.is_empty() {
        return None;
    }
    let words: Vec<String> = counters.iter().map(|(n, d)| format!("{n} +{d}")).collect();
    Some(change(
        f,
        ChangeKind::Flap,
        None,
        Some(words.join(", ")),
        at,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::{CeilingFacts, LinkFacts, WatchKind};
    use linerate_model::LimitedBy;

    fn port(id: &str, state: &str, width: Option<&str>, pcie: &str) -> WatchedPort {
        let up = state == "active";
        WatchedPort {
            id: PortId::new(id, "1"),
            name: format!("{id}/1"),
            netdev: None,
            kind: WatchKind::Infiniband,
            link: LinkFacts {
                up,
                state: state.into(),
                rate: width.map(|w| format!("{w} EDR")),
                width: width.map(str::to_string),
                pcie: Some(pcie.into()),
                mtu: None,
            },
            ceiling: CeilingFacts {
                gbps: Some(100.0),
                limited_by: LimitedBy::Link,
                summary: String::new(),
                chain: Vec::new(),
            },
            pcie: None,
            bond: None,
        }
    }

    const AT: Tick = Tick {
        seq: 7,
        t_ms: 7000,
        unix_ms: 1_700_000_007_000,
    };

    #[test]
    fn a_downtrain_is_a_width_and_a_rate_change() {
        let old = [port("mlx5_0", "active", Some("4X"), "PCIe 3.0 x16")];
        let new = [port("mlx5_0", "active", Some("1X"), "PCIe 3.0 x16")];
        let c = diff(&old, &new, AT);
        let words: Vec<String> = c.iter().map(LinkChange::words).collect();
        assert_eq!(words, ["width 4X → 1X", "rate 4X EDR → 1X EDR"]);
        assert!(c.iter().all(|c| c.seq == 7 && c.t_s == 7.0));
    }

    #[test]
    fn a_pcie_downtrain_is_named() {
        let old = [port("mlx5_0", "active", Some("4X"), "PCIe 3.0 x16")];
        let new = [port("mlx5_0", "active", Some("4X"), "PCIe 3.0 x8")];
        let c = diff(&old, &new, AT);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].words(), "pcie PCIe 3.0 x16 → PCIe 3.0 x8");
    }

    #[test]
    fn a_link_going_down_is_one_state_change() {
        let old = [port("mlx5_0", "active", Some("4X"), "PCIe 3.0 x16")];
        let new = [port("mlx5_0", "down (polling)", None, "PCIe 3.0 x16")];
        let c = diff(&old, &new, AT);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].words(), "state active → down (polling)");
    }

    #[test]
    fn ports_come_and_go() {
        let a = port("mlx5_0", "active", Some("4X"), "PCIe 3.0 x16");
        let b = port("mlx5_1", "active", Some("4X"), "PCIe 3.0 x16");
        let c = diff(std::slice::from_ref(&a), std::slice::from_ref(&b), AT);
        let what: Vec<(String, ChangeKind)> = c.iter().map(|c| (c.id.label(), c.what)).collect();
        assert_eq!(
            what,
            [
                ("mlx5_1/1".to_string(), ChangeKind::Appeared),
                ("mlx5_0/1".to_string(), ChangeKind::Gone)
            ]
        );
        assert!(diff(std::slice::from_ref(&a), std::slice::from_ref(&a), AT).is_empty());
    }

    #[test]
    fn a_flap_names_its_counters() {
        let a = port("mlx5_0", "active", Some("4X"), "PCIe 3.0 x16");
        assert!(flap(&a, &[], AT).is_none());
        let f = flap(&a, &[("link_downed".into(), 1)], AT).expect("a flap");
        assert_eq!(f.words(), "flap (link_downed +1)");
    }
}
