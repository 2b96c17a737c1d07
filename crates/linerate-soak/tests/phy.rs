//! soak over a port whose end reads its temperatures and its module's light
//! (`PortSample::phy`): each against the device's own thresholds, a rise said, and the light
//! just before and after each time the link went down.

use linerate_facts::{
    dbm, CounterSource, Diagnostics, HwmonSensor, LaneDiagnostics, PhyGauges, RxPowerMeasure,
    Thresholds,
};
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};
use linerate_soak::{judge_port, JudgeParams, PortReport, RuleId, Tracker, Verdict};

/// An SR optic's thresholds: temperature warnings at 0 and 70 °C (alarms -5, 75), Rx power
/// warnings at 0.0316 mW (-15 dBm) and 1 mW, alarms at 0.0158 mW (-18 dBm) and 1.26 mW.
fn optic(temp_c: f64, rx_mw: f64) -> Diagnostics {
    let lane = |n: u8, rx: f64| LaneDiagnostics {
        lane: n,
        tx_bias_ma: Some(6.5),
        tx_power_mw: Some(0.6),
        tx_power_dbm: dbm(0.6),
        rx_power_mw: Some(rx),
        rx_power_dbm: dbm(rx),
    };
    Diagnostics {
        temperature_c: Some(temp_c),
        temperature_thresholds_c: Some(Thresholds {
            high_alarm: 75.0,
            low_alarm: -5.0,
            high_warning: 70.0,
            low_warning: 0.0,
        }),
        supply_v: Some(3.3),
        supply_thresholds_v: None,
        lanes: vec![lane(1, 0.5), lane(2, rx_mw)],
        tx_bias_thresholds_ma: None,
        tx_power_thresholds_mw: None,
        rx_power_thresholds_mw: Some(Thresholds {
            high_alarm: 1.26,
            low_alarm: 0.0158,
            high_warning: 1.0,
            low_warning: 0.0316,
        }),
        rx_power_measure: RxPowerMeasure::Average,
    }
}

fn asic(c: f64) -> HwmonSensor {
    HwmonSensor {
        chip: Some("ice".into()),
        sensor: "temp1".into(),
        label: None,
        input_c: Some(c),
        max_c: Some(95.0),
        crit_c: Some(105.0),
        highest_c: None,
        path: "/sys/bus/pci/devices/0000:17:00.0/hwmon/hwmon2".into(),
    }
}

/// A 25 GbE port sampled every 10 s: `(seconds, carrier_down, optic (°C, lane 2's mW), the
/// NIC's sensor °C)`, the PHY readings only where given; judged.
/// One sample: seconds, carrier downs, the optic's (°C, lane 2's mW), the NIC's sensor °C.
type Point = (f64, u64, Option<(f64, f64)>, Option<f64>);

fn soak(points: &[Point]) -> PortReport {
    let mut t = Tracker::new();
    for (seq, (t_s, downs, optic_at, nic)) in points.iter().enumerate() {
        let mut s = SoakSample::new(End::Local, seq as u64, *t_s);
        let phy = (optic_at.is_some() || nic.is_some()).then(|| PhyGauges {
            sensors: nic.map(asic).into_iter().collect(),
            module: optic_at.map(|(c, rx)| optic(c, rx)),
        });
        s.ports.push(PortSample {
            device: "enp23s0f0".into(),
            port: String::new(),
            netdev: Some("enp23s0f0".into()),
            kind: SoakPortKind::Ethernet {
                speed_mbps: Some(25_000),
                roce: false,
            },
            counters: vec![
                (CounterSource::Carrier, "carrier_down_count".into(), *downs),
                (
                    CounterSource::NetdevStatistics,
                    "rx_bytes".into(),
                    seq as u64 * 1_000_000,
                ),
            ],
            phy,
        });
        t.push(&s);
    }
    let info = t.ports().next().expect("a port").clone();
    judge_port(&t, &info, &JudgeParams::default())
}

fn rules(r: &PortReport) -> Vec<RuleId> {
    r.findings.iter().map(|f| f.rule).collect()
}

fn text(r: &PortReport, rule: RuleId) -> String {
    r.findings.iter().find(|f| f.rule == rule).map_or_else(
        || panic!("no {rule} in {:?}", r.findings),
        |f| f.text.clone(),
    )
}

#[test]
fn a_module_past_its_warning_is_marginal_with_its_figures() {
    let r = soak(&[
        (0.0, 0, Some((45.0, 0.5)), None),
        (10.0, 0, Some((68.0, 0.5)), None),
        (20.0, 0, Some((72.5, 0.5)), None),
        (30.0, 0, Some((69.0, 0.5)), None),
    ]);
    assert_eq!(r.verdict, Verdict::Marginal, "{:?}", r.findings);
    let t = text(&r, RuleId::TemperatureWarning);
    assert!(
        t.contains("module reached 72.5 °C at 20 s")
            && t.contains("(70.0 °C)")
            && t.contains("started at 45.0 °C"),
        "{t}"
    );
    let c = r
        .checks
        .iter()
        .find(|c| c.rule == RuleId::TemperatureWarning)
        .expect("its check");
    assert!(c.fired && c.value == 72.5 && c.limit == 70.0, "{c:?}");
    // Past the alarm: bad.
    let r = soak(&[
        (0.0, 0, Some((50.0, 0.5)), None),
        (10.0, 0, Some((76.0, 0.5)), None),
    ]);
    assert_eq!(r.verdict, Verdict::Bad);
    assert!(
        rules(&r).contains(&RuleId::TemperatureAlarm),
        "{:?}",
        r.findings
    );
}

#[test]
fn a_rise_under_the_warning_is_said_and_changes_nothing() {
    let r = soak(&[
        (0.0, 0, None, Some(48.0)),
        (10.0, 0, None, Some(55.0)),
        (20.0, 0, None, Some(61.5)),
    ]);
    assert!(
        !rules(&r).contains(&RuleId::TemperatureWarning),
        "{:?}",
        r.findings
    );
    let t = text(&r, RuleId::TemperatureRise);
    assert!(
        t.contains("ice temp1 rose 13.5 °C over the soak, from 48.0 °C to 61.5 °C")
            && t.contains("95.0 °C"),
        "{t}"
    );
    assert_ne!(r.verdict, Verdict::Marginal);
    // Under the rise threshold: nothing.
    let r = soak(&[(0.0, 0, None, Some(48.0)), (10.0, 0, None, Some(52.0))]);
    assert!(r.findings.iter().all(|f| f.rule != RuleId::TemperatureRise));
}

#[test]
fn weak_light_is_judged_in_decibels_under_the_modules_warning() {
    // Lane 2 falls to 0.02 mW (-17.0 dBm): 2.0 dB under the low warning (-15.0 dBm).
    let r = soak(&[
        (0.0, 0, Some((40.0, 0.4)), None),
        (10.0, 0, Some((40.0, 0.02)), None),
        (20.0, 0, Some((40.0, 0.3)), None),
    ]);
    assert_eq!(r.verdict, Verdict::Marginal, "{:?}", r.findings);
    let t = text(&r, RuleId::RxPowerWarning);
    assert!(
        t.contains("lane 2 received -17.0 dBm at 10 s")
            && t.contains("2.0 dB under its low warning"),
        "{t}"
    );
    // No light at all: past the alarm.
    let r = soak(&[
        (0.0, 0, Some((40.0, 0.4)), None),
        (10.0, 0, Some((40.0, 0.0)), None),
    ]);
    assert!(
        rules(&r).contains(&RuleId::RxPowerAlarm),
        "{:?}",
        r.findings
    );
    assert!(text(&r, RuleId::RxPowerAlarm).contains("no light"));
}

#[test]
fn the_light_around_a_link_down_tells_lost_light_from_a_reset() {
    // The link drops between 10 and 20 s; the light was read at 10 s and again at 30 s.
    let dropped = |after_mw: f64| {
        soak(&[
            (0.0, 0, Some((40.0, 0.4)), None),
            (10.0, 0, Some((40.0, 0.4)), None),
            (20.0, 1, None, None),
            (30.0, 1, Some((40.0, after_mw)), None),
        ])
    };
    let r = dropped(0.0);
    assert!(rules(&r).contains(&RuleId::LinkDown), "{:?}", r.findings);
    let t = text(&r, RuleId::LinkDownLight);
    assert!(
        t.contains("went down 1 time(s)")
            && t.contains("at 20 s: -4.0 dBm before (at 10 s), no light after (at 30 s)")
            && t.contains("light lost"),
        "{t}"
    );
    let t = text(&dropped(0.4), RuleId::LinkDownLight);
    assert!(t.contains("not the optics or the fibre"), "{t}");
    // Without a module read, no note: nothing to say about the light.
    let r = soak(&[(0.0, 0, None, Some(40.0)), (10.0, 1, None, Some(40.0))]);
    assert!(rules(&r).contains(&RuleId::LinkDown));
    assert!(!rules(&r).contains(&RuleId::LinkDownLight));
}
