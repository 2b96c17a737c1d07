//! One port's counters with what the rules need beside them: its kind, data rate, the bits it
//! received and how they were counted; shared by the judge and the rules.

use std::collections::BTreeMap;

use linerate_facts::{CounterRole, CounterUnit};
use linerate_model::ib::IbSpeed;
use linerate_proto::soak::SoakPortKind;
use linerate_units::fmt_round;

use crate::phy::PhyTrack;
use crate::report::BitsBasis;
use crate::thresholds::JudgeParams;
use crate::tracker::{CounterTrack, EndTotals, IntervalRecord, PortInfo, Tracker};

/// Speeds that run PAM4 with FEC, where raw symbol errors are normal.
pub fn is_pam4(speed: &str) -> bool {
    matches!(speed.to_ascii_uppercase().as_str(), "HDR" | "NDR" | "XDR")
}

/// The data rate of a port (signalling × line code), Gb/s: the most traffic it can carry one
/// way. InfiniBand without a known speed grade: its signalling rate (an upper bound).
pub fn data_gbps(kind: &SoakPortKind) -> Option<f64> {
    match kind {
        SoakPortKind::Infiniband {
            speed,
            signalling_gbps,
        } => {
            let g = signalling_gbps.filter(|g| g.is_finite() && *g > 0.0)?;
            let efficiency = speed
                .as_deref()
                .and_then(IbSpeed::from_name)
                .map_or(1.0, |s| s.encoding().efficiency());
            Some(g * efficiency)
        }
        SoakPortKind::Ethernet { speed_mbps, .. } => {
            speed_mbps.filter(|m| *m > 0).map(|m| m as f64 / 1000.0)
        }
    }
}

/// A counter with its row in `linerate_facts::COUNTERS` and its place among the port's
/// counters: the rules take a role's counters in row order, then in the order read.
type Ranked<'a> = (usize, usize, &'a CounterTrack);

/// The counters of one port by role (`linerate_facts::CounterRole`, from the counter table),
/// with what the rules need beside them.
pub(crate) struct PortCtx<'a> {
    tracker: &'a Tracker,
    pub info: &'a PortInfo,
    pub totals: &'a EndTotals,
    pub jp: &'a JudgeParams,
    roles: BTreeMap<CounterRole, Vec<Ranked<'a>>>,
    /// The end's host-wide counters (`/proc/net/snmp`) by role.
    host: BTreeMap<CounterRole, Vec<Ranked<'a>>>,
    /// The port's counters in the order first seen.
    pub order: Vec<&'a CounterTrack>,
    /// Bits the port received, how they were counted, and its data rate.
    pub bits: f64,
    pub bits_basis: BitsBasis,
    pub data_gbps: Option<f64>,
    /// The port's temperatures and light over the soak, where its end read any.
    pub phy: Option<&'a PhyTrack>,
}

/// The counters of `tracks` by the role of their row, each role's in row order, then read order.
fn by_role<'a>(
    tracks: impl Iterator<Item = &'a CounterTrack>,
) -> BTreeMap<CounterRole, Vec<Ranked<'a>>> {
    let mut roles: BTreeMap<CounterRole, Vec<Ranked<'a>>> = BTreeMap::new();
    for (i, c) in tracks.enumerate() {
        let (row, def) = c.row_def();
        if let Some(r) = def.judges.soak {
            roles.entry(r).or_default().push((row, i, c));
        }
    }
    for v in roles.values_mut() {
        v.sort_by_key(|(row, i, _)| (*row, *i));
    }
    roles
}

impl<'a> PortCtx<'a> {
    pub(crate) fn new(tracker: &'a Tracker, info: &'a PortInfo, jp: &'a JudgeParams) -> Self {
        let order: Vec<&CounterTrack> = tracker
            .counters()
            .iter()
            .filter(|c| {
                c.key.end == info.end && c.key.device == info.device && c.key.port == info.port
            })
            .collect();
        let host = by_role(tracker.host_counters(info.end));
        let mut ctx = Self {
            tracker,
            info,
            totals: tracker.totals(info.end),
            jp,
            roles: by_role(order.iter().copied()),
            host,
            order,
            bits: 0.0,
            bits_basis: BitsBasis::Engine,
            data_gbps: data_gbps(&info.kind),
            phy: tracker.phy(info.end, &info.device, &info.port),
        };
        (ctx.bits, ctx.bits_basis) = ctx.bits_received();
        ctx
    }

    /// The port's counters of role `r`: in the table's order, then in the order read.
    pub fn role(&self, r: CounterRole) -> impl Iterator<Item = &'a CounterTrack> + '_ {
        self.roles.get(&r).into_iter().flatten().map(|(_, _, c)| *c)
    }

    /// The port's counters of several roles, sorted as the table lists them: a role's
    /// counters, and the roles, in table order.
    pub fn roles(&self, rs: &[CounterRole]) -> Vec<&'a CounterTrack> {
        let mut v: Vec<Ranked<'a>> = rs
            .iter()
            .filter_map(|r| self.roles.get(r))
            .flatten()
            .copied()
            .collect();
        v.sort_by_key(|(row, i, _)| (*row, *i));
        v.into_iter().map(|(_, _, c)| c).collect()
    }

    /// The port's counters of the roles `keep` keeps: the roles in their order, each one's
    /// counters in table order.
    pub fn roles_where(&self, keep: impl Fn(CounterRole) -> bool) -> Vec<&'a CounterTrack> {
        self.roles
            .iter()
            .filter(|(r, _)| keep(**r))
            .flat_map(|(_, v)| v.iter().map(|(_, _, c)| *c))
            .collect()
    }

    /// The first counter of role `r` (the roles of one counter per port).
    pub fn first(&self, r: CounterRole) -> Option<&'a CounterTrack> {
        self.role(r).next()
    }

    /// The increase of the first counter of role `r`; 0 without one.
    pub fn delta(&self, r: CounterRole) -> u64 {
        self.first(r).map_or(0, |c| c.delta)
    }

    /// The end's host-wide counters of role `r` (`/proc/net/snmp`): every port of the end sees
    /// the same.
    pub fn host(&self, r: CounterRole) -> impl Iterator<Item = &'a CounterTrack> + '_ {
        self.host.get(&r).into_iter().flatten().map(|(_, _, c)| *c)
    }

    /// The intervals of the port's end, in order, each with the counters of `tracks` that
    /// rose in it (their increase summed).
    pub fn intervals_with(
        &self,
        tracks: &[&CounterTrack],
    ) -> impl Iterator<Item = (&'a IntervalRecord, u64)> + '_ {
        let all = self.tracker.counters();
        let idx: Vec<u32> = tracks
            .iter()
            .filter_map(|t| all.iter().position(|c| std::ptr::eq(c, *t)))
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        self.tracker
            .timeline()
            .iter()
            .filter(|r| r.end == self.info.end)
            .map(move |r| {
                let rose = r
                    .moved
                    .iter()
                    .filter(|m| idx.contains(&m.counter))
                    .map(|m| m.delta)
                    .sum();
                (r, rose)
            })
    }

    pub fn pam4(&self) -> bool {
        matches!(&self.info.kind, SoakPortKind::Infiniband { speed: Some(s), .. } if is_pam4(s))
    }

    /// The port's count of what it received (role `ReceivedData`), the most direct there is:
    /// bits (ethtool's `rx_bits_phy`), else 4-byte words (InfiniBand's `port_rcv_data`), else
    /// bytes (the netdev's `rx_bytes`).
    pub fn received_data(&self) -> Option<&'a CounterTrack> {
        let rank = |c: &&CounterTrack| match c.def().unit {
            CounterUnit::Bits => 0,
            CounterUnit::Words => 1,
            _ => 2,
        };
        self.role(CounterRole::ReceivedData).min_by_key(rank)
    }

    /// Bits this port received, and how they were counted: the larger of the port's own
    /// counter and the engines' bytes (a port counter includes headers; the engines' bytes are
    /// end-wide, and are all a fixture port has), the engines' credited at most at the port's
    /// data rate × time.
    fn bits_received(&self) -> (f64, BitsBasis) {
        let engine = self.totals.bytes_received as f64 * 8.0;
        let (engine, engine_basis) = match self.data_gbps {
            Some(g) if engine > g * 1e9 * self.duration_s() => {
                (g * 1e9 * self.duration_s(), BitsBasis::DataRate)
            }
            _ => (engine, BitsBasis::Engine),
        };
        let port = self.received_data().and_then(|c| {
            let unit = c.def().unit;
            let basis = match unit {
                CounterUnit::Bits => BitsBasis::RxBitsPhy,
                CounterUnit::Words => BitsBasis::PortRcvData,
                _ => BitsBasis::RxBytes,
            };
            unit.bits().map(|b| (c.delta as f64 * b, basis))
        });
        match port {
            Some((bits, basis)) if bits >= engine => (bits, basis),
            _ => (engine, engine_basis),
        }
    }

    pub fn duration_s(&self) -> f64 {
        self.totals.duration_s()
    }
}

/// `90 s`, `12 min`, `2.5 h`.
pub fn fmt_duration(s: f64) -> String {
    if s >= 5400.0 {
        format!("{} h", fmt_round(s / 3600.0, 1))
    } else if s >= 120.0 {
        format!("{} min", fmt_round(s / 60.0, 1))
    } else {
        format!("{} s", fmt_round(s, 1))
    }
}
