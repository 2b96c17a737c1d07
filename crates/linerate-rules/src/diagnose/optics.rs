//! Both ends' optics together: `optics.light_lost`. An optic that receives too little light
//! (`module.rx_power_low`, each end's own finding) cannot say from its end whether the light
//! left the far end weak or was lost on the way; with both ends' diagnostics doctor can: the
//! far optic's Tx power against its own thresholds, and the decibels between what it sent and
//! what arrived.

use linerate_facts::{
    dbm, EndFacts, Finding, FindingId, LaneDiagnostics, Level, OpticsEnd, Severity, Thresholds,
};

use super::context::Ctx;
use super::registry::{rule, FromFacts};
use crate::thresholds::LIGHT_LOST_DB;

/// One lane of one end whose Rx power is under the module's low warning.
struct Dim {
    lane: u8,
    rx_mw: f64,
    level: Level,
}

/// The lanes of `o` whose Rx power is under its low warning (or alarm).
fn dim_lanes(o: &OpticsEnd) -> Vec<Dim> {
    let Some(t) = o.rx_power_thresholds_mw.filter(Thresholds::is_ordered) else {
        return Vec::new();
    };
    o.lanes
        .iter()
        .filter_map(|l| {
            let rx = l.rx_power_mw?;
            let level = t.level(rx);
            matches!(level, Level::LowWarning | Level::LowAlarm).then_some(Dim {
                lane: l.lane,
                rx_mw: rx,
                level,
            })
        })
        .collect()
}

/// The Tx power the far optic sends towards lane `lane` of the near one: the same lane when
/// both have as many lanes (a direct link pairs them so), else the mean of its lanes.
fn far_tx(far: &OpticsEnd, near_lanes: usize, lane: u8) -> Option<f64> {
    let tx = |l: &LaneDiagnostics| l.tx_power_mw;
    if far.lanes.len() == near_lanes {
        if let Some(t) = far.lanes.iter().find(|l| l.lane == lane).and_then(tx) {
            return Some(t);
        }
    }
    let all: Vec<f64> = far.lanes.iter().filter_map(tx).collect();
    (!all.is_empty()).then(|| all.iter().sum::<f64>() / all.len() as f64)
}

fn words(mw: f64) -> String {
    match dbm(mw) {
        Some(d) => format!("{d:.2} dBm"),
        None => "no light".into(),
    }
}

/// `optics.light_lost`: where the light an optic misses went, for each end whose optic
/// receives too little (under its low warning) while the other end's optic reports its Tx: the
/// far transmitter (its Tx under its own low warning), the way between (more than
/// [`LIGHT_LOST_DB`] lost), or neither (a receiver that needs more than the far optic gives:
/// optics of different reaches). Only where both ends report their optics' diagnostics; the
/// two ports are taken as cabled to each other (with a switch between, an end's Rx is the
/// switch's Tx, and the message says so).
impl FromFacts for rule::OpticsLightLost {
    type Output = Vec<Finding>;

    fn run(self, c: &Ctx<'_>) -> Vec<Finding> {
        let i = c.i;
        let remote = i.remote.as_ref();
        let (Some(local), Some(far)) = (
            i.local.optics.as_ref().map(|o| (&i.local, o)),
            remote.and_then(|r| r.optics.as_ref().map(|o| (r, o))),
        ) else {
            return Vec::new();
        };
        [
            (("local", local), ("remote", far)),
            (("remote", far), ("local", local)),
        ]
        .into_iter()
        .filter_map(|(near, far)| light_lost(near, far))
        .collect()
    }
}

/// One end of `optics.light_lost`: `near` (its name, facts and optic) receiving from `far`.
fn light_lost(
    (end, (near_f, near)): (&str, (&EndFacts, &OpticsEnd)),
    (other, (far_f, far)): (&str, (&EndFacts, &OpticsEnd)),
) -> Option<Finding> {
    let dim = dim_lanes(near);
    let worst = dim.iter().map(|d| d.level).max()?;
    // The lane that lost the most light between the far Tx and this Rx.
    let (d, tx) = dim
        .iter()
        .filter_map(|d| Some((d, far_tx(far, near.lanes.len(), d.lane)?)))
        .max_by(|a, b| (a.1 / a.0.rx_mw.max(1e-9)).total_cmp(&(b.1 / b.0.rx_mw.max(1e-9))))?;
    let loss_db = match (dbm(tx), dbm(d.rx_mw)) {
        (Some(t), Some(r)) => Some(t - r),
        (Some(_), None) => Some(f64::INFINITY),
        _ => None,
    };
    let far_weak = far
        .tx_power_thresholds_mw
        .filter(Thresholds::is_ordered)
        .map(|t| t.level(tx))
        .filter(|l| matches!(l, Level::LowWarning | Level::LowAlarm));
    let netdev = |f: &EndFacts| f.netdev.clone().unwrap_or_else(|| "?".into());
    let there = format!("the {other} {} ({})", netdev(far_f), far.module);
    let received = format!(
        "the {end} {} ({}) receives {} on lane {} (under its low {})",
        netdev(near_f),
        near.module,
        words(d.rx_mw),
        d.lane,
        if worst.is_alarm() { "alarm" } else { "warning" }
    );
    let (side, message, fix) = if let Some(l) = far_weak {
        (
            format!("{other} transmitter"),
            format!(
                "{received}, and {there} transmits only {} (under its own low {}): the light leaves the far end weak, its optic's laser is failing or set low, not the fibre",
                words(tx),
                if l.is_alarm() { "alarm" } else { "warning" }
            ),
            format!("Replace the optic of the {other} end (reseat it first; read its Tx power again with `ethtool -m {}`).", netdev(far_f)),
        )
    } else if loss_db.is_some_and(|l| l > LIGHT_LOST_DB) {
        let lost = match loss_db {
            Some(l) if l.is_finite() => format!("{l:.1} dB of the light is"),
            _ => "all the light is".into(),
        };
        (
            "between the ends".to_string(),
            format!(
                "{received}, while {there} transmits {} on its side, within its range: {lost} lost between them (a dirty or damaged connector, a bent or broken fibre, a patch panel), if the two ports are cabled to each other (with a switch between, the light is the switch port's: read its optic)",
                words(tx)
            ),
            "Clean both connectors and the optics' ports (a one-click cleaner), replace the patch cord, and check every patch panel between; an optical power meter at each end tells which piece loses the light.".to_string(),
        )
    } else {
        (
            format!("{end} receiver"),
            format!(
                "{received}, while {there} transmits {} within its range and only {} is lost between them: this optic needs more light than the far one gives (optics of different reaches or wavelengths at the two ends, e.g. an LR receiver facing an SR transmitter), if the two ports are cabled to each other",
                words(tx),
                loss_db.map_or("little".into(), |l| format!("{l:.1} dB"))
            ),
            "Use optics of the same type at both ends (reach, wavelength, multimode or single-mode as the fibre is).".to_string(),
        )
    };
    let severity = if worst.is_alarm() {
        Severity::Error
    } else {
        Severity::Warning
    };
    let mut f = Finding::new(FindingId::OpticsLightLost, severity, "path")
        .evidence("side", side)
        .evidence(format!("{end} Rx lane {}", d.lane), words(d.rx_mw))
        .evidence(format!("{other} Tx towards it"), words(tx));
    if let Some(l) = loss_db.filter(|l| l.is_finite()) {
        f = f.evidence("lost between (dB)", format!("{l:.1}"));
    }
    Some(f.message(message).fix(fix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::testing::{input, nic};
    use linerate_facts::Thresholds;

    /// An SR4-like optic: 4 lanes at `tx` mW and `rx` mW, warnings at 0.1 mW (-10 dBm) low and
    /// 2 mW high, alarms at 0.05 and 2.5.
    fn optic(name: &str, tx: [f64; 4], rx: [f64; 4]) -> OpticsEnd {
        let t = Thresholds {
            high_alarm: 2.5,
            low_alarm: 0.05,
            high_warning: 2.0,
            low_warning: 0.1,
        };
        OpticsEnd {
            module: name.into(),
            lanes: (0..4)
                .map(|l| LaneDiagnostics {
                    lane: l + 1,
                    tx_bias_ma: Some(7.0),
                    tx_power_mw: Some(tx[l as usize]),
                    tx_power_dbm: dbm(tx[l as usize]),
                    rx_power_mw: Some(rx[l as usize]),
                    rx_power_dbm: dbm(rx[l as usize]),
                })
                .collect(),
            tx_power_thresholds_mw: Some(t),
            rx_power_thresholds_mw: Some(t),
        }
    }

    fn run(local: OpticsEnd, remote: Option<OpticsEnd>) -> Vec<Finding> {
        let mut i = input(nic("eth0", 100.0), Some(nic("eth0", 100.0)), Vec::new());
        i.local.optics = Some(local);
        if let Some(r) = i.remote.as_mut() {
            r.optics = remote;
        }
        rule::OpticsLightLost.run(&Ctx::new(&i))
    }

    #[test]
    fn light_lost_between_the_ends_is_the_fibre() {
        // Lane 3 here gets 0.06 mW (-12.2 dBm) of the 0.8 mW (-1 dBm) the far lane 3 sends.
        let f = run(
            optic("A SR4", [0.8; 4], [0.7, 0.7, 0.06, 0.7]),
            Some(optic("B SR4", [0.8; 4], [0.7; 4])),
        );
        let [f] = f.as_slice() else { panic!("{f:?}") };
        assert_eq!(
            (f.id, f.severity),
            (FindingId::OpticsLightLost, Severity::Warning)
        );
        assert_eq!(f.evidence["side"], "between the ends");
        assert_eq!(f.evidence["lost between (dB)"], "11.2");
        assert!(
            f.message
                .contains("the local eth0 (A SR4) receives -12.22 dBm on lane 3")
                && f.message.contains("transmits -0.97 dBm")
                && f.message
                    .contains("11.2 dB of the light is lost between them"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_weak_far_laser_is_the_far_optic() {
        // The remote receives 0.04 mW (under the low alarm): the local lane sends 0.07 mW,
        // under the local optic's own Tx low warning.
        let f = run(
            optic("A SR4", [0.8, 0.07, 0.8, 0.8], [0.7; 4]),
            Some(optic("B SR4", [0.8; 4], [0.7, 0.04, 0.7, 0.7])),
        );
        let [f] = f.as_slice() else { panic!("{f:?}") };
        assert_eq!(f.severity, Severity::Error);
        assert_eq!(f.evidence["side"], "local transmitter");
        assert!(
            f.message.contains("the remote eth0 (B SR4) receives")
                && f.message.contains("the light leaves the far end weak"),
            "{}",
            f.message
        );
        assert!(
            f.fix.contains("Replace the optic of the local end"),
            "{}",
            f.fix
        );
    }

    #[test]
    fn little_lost_and_a_normal_far_laser_is_this_receiver() {
        // 0.12 mW sent, 0.09 received: 1.2 dB lost, the far Tx within its range.
        let f = run(
            optic("A LR4", [0.8; 4], [0.09; 4]),
            Some(optic("B SR4", [0.12; 4], [0.7; 4])),
        );
        let [f] = f.as_slice() else { panic!("{f:?}") };
        assert_eq!(f.evidence["side"], "local receiver");
        assert!(
            f.message.contains("optics of different reaches"),
            "{}",
            f.message
        );
    }

    #[test]
    fn nothing_without_both_ends_or_with_enough_light() {
        assert!(run(optic("A", [0.8; 4], [0.06; 4]), None).is_empty());
        assert!(run(
            optic("A", [0.8; 4], [0.7; 4]),
            Some(optic("B", [0.8; 4], [0.7; 4]))
        )
        .is_empty());
        // No light at all on a lane: all of it lost.
        let f = run(
            optic("A", [0.8; 4], [0.7, 0.0, 0.7, 0.7]),
            Some(optic("B", [0.8; 4], [0.7; 4])),
        );
        assert!(
            f[0].message.contains("all the light is lost"),
            "{}",
            f[0].message
        );
    }
}
