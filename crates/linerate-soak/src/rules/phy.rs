//! Below the port, beside the counters (`SoakFamily::Phy`): each temperature against its
//! device's own warning and alarm (`temperature_warning`, `temperature_alarm`) and how far it
//! rose (`temperature_rise`, a note); the weakest lane's light against the module's low
//! warning and alarm (`rx_power_warning`, `rx_power_alarm`); and the light just before and
//! after each time the link went down (`link_down_light`, a note beside `link_down`), which
//! tells light lost from a link dropped for another reason.

use linerate_facts::{dbm, Level, RxReading};

use super::{finding, Out};
use crate::phy::{PhyTrack, TempTrack};
use crate::port::{fmt_duration, PortCtx};
use crate::verdict::{RuleId, Unit};

/// Every PHY rule on one port whose end read its temperatures or light.
pub(crate) fn phy_rules(ctx: &PortCtx, out: &mut Out) {
    let Some(t) = ctx.phy else { return };
    for temp in &t.temperatures {
        temperature(ctx, temp, out);
    }
    light(t, out);
    downs(t, out);
}

fn temperature(ctx: &PortCtx, t: &TempTrack, out: &mut Out) {
    let (at, hottest) = t.hottest;
    let limit = t.limit_c;
    let rule = match t.worst {
        Level::HighAlarm => Some(RuleId::TemperatureAlarm),
        Level::HighWarning => Some(RuleId::TemperatureWarning),
        _ => None,
    };
    if let (Some(rule), Some(limit)) = (rule, limit) {
        out.check(rule, None, hottest, limit, Unit::Celsius, || {
            format!(
                "{} reached {hottest:.1} °C at {} into the soak, past its {} ({limit:.1} °C{}); it started at {:.1} °C and read {:.1} °C last: the card or the module is too hot. Give it airflow (a server slot in the fans' path, a fan across the heatsink in a desktop case); a hot optic loses light and a hot NIC throttles or drops its link",
                t.what,
                fmt_duration(t.worst_at_s.max(at)),
                if rule == RuleId::TemperatureAlarm { "alarm" } else { "warning" },
                if rule == RuleId::TemperatureAlarm { ", the warning it is judged by" } else { "" },
                t.first.1,
                t.last.1
            )
        });
        return;
    }
    let rise = hottest - t.first.1;
    if rise > ctx.jp.temperature_rise_c {
        out.push(finding(
            RuleId::TemperatureRise,
            None,
            Some(rise),
            Some(ctx.jp.temperature_rise_c),
            Unit::Celsius,
            format!(
                "{} rose {rise:.1} °C over the soak, from {:.1} °C to {hottest:.1} °C at {}{}: under load it heats; a warmer room or a busier rack leaves it little margin",
                t.what,
                t.first.1,
                fmt_duration(at),
                limit.map_or(String::new(), |l| format!(" (its warning: {l:.1} °C)"))
            ),
        ));
    }
}

/// "-12.3 dBm" or "no light".
fn words(r: &RxReading) -> String {
    dbm(r.mw).map_or("no light".into(), |d| format!("{d:.1} dBm"))
}

/// Decibels under the module's low warning (0 when at or over it).
fn db_under(r: &RxReading) -> Option<f64> {
    let w = r.low_warning_mw.filter(|w| *w > 0.0)?;
    Some(if r.mw > 0.0 {
        10.0 * (w / r.mw).log10()
    } else {
        f64::INFINITY
    })
}

fn light(t: &PhyTrack, out: &mut Out) {
    let Some(rx) = &t.rx else { return };
    let (at, weakest) = rx.weakest;
    let rule = match weakest.level {
        Level::LowAlarm => RuleId::RxPowerAlarm,
        Level::LowWarning => RuleId::RxPowerWarning,
        _ => return,
    };
    let Some(under) = db_under(&weakest) else {
        return;
    };
    // A check's figures are finite: no light at all is 99 dB under.
    let value = under.min(99.0);
    out.check(rule, None, value, 0.0, Unit::Db, || {
        format!(
            "the module's lane {} received {} at {} into the soak, {} under its low {} ({}): the far transmitter is weak or light is lost on the way (a dirty connector, a bent fibre); `linerate doctor` against the far end compares its Tx with this Rx and names the side",
            weakest.lane,
            words(&weakest),
            fmt_duration(at),
            if under.is_finite() { format!("{under:.1} dB") } else { "all of it".into() },
            if rule == RuleId::RxPowerAlarm { "alarm" } else { "warning" },
            weakest
                .low_warning_mw
                .and_then(dbm)
                .map_or("?".into(), |d| format!("warning at {d:.1} dBm"))
        )
    });
}

fn downs(t: &PhyTrack, out: &mut Out) {
    if t.downs.is_empty() {
        return;
    }
    let dark = |r: &Option<(f64, RxReading)>| {
        r.as_ref().is_some_and(|(_, r)| {
            matches!(r.level, Level::LowWarning | Level::LowAlarm) || r.mw <= 0.0
        })
    };
    let each: Vec<String> = t
        .downs
        .iter()
        .map(|d| {
            let side = |r: &Option<(f64, RxReading)>, when: &str| match r {
                Some((s, r)) => format!("{} {when} (at {})", words(r), fmt_duration(*s)),
                None => format!("not read {when}"),
            };
            format!(
                "at {}: {}, {}",
                fmt_duration(d.at_s),
                side(&d.before, "before"),
                side(&d.after, "after")
            )
        })
        .collect();
    let lost = t.downs.iter().any(|d| dark(&d.before) || dark(&d.after));
    let read = t
        .downs
        .iter()
        .any(|d| d.before.is_some() || d.after.is_some());
    if !read {
        return;
    }
    let more = t.downs_total.saturating_sub(t.downs.len() as u64);
    out.push(finding(
        RuleId::LinkDownLight,
        None,
        Some(t.downs_total as f64),
        None,
        Unit::Count,
        format!(
            "the link went down {} time(s); the weakest lane's light {}{}: {}",
            t.downs_total,
            each.join("; "),
            if more > 0 { format!(" (and {more} more)") } else { String::new() },
            if lost {
                "the light was under the module's low warning around the drop: light lost (the far transmitter, the fibre or a connector), not the electronics"
            } else {
                "the light was normal before and after: not the optics or the fibre (a reset of either end, autonegotiation, the far end's driver, the switch)"
            }
        ),
    ));
}
