//! The rules below the port on constructed variations of the fixture trees' inventories: what
//! each rule leaves alone (copper, thresholds a module never set, a ring at its maximum, an LR
//! optic without FEC) as much as what it names.

use std::path::{Path, PathBuf};

use linerate_facts::{
    FecMode, Finding, HwmonSensor, Inventory, Level, Media, Severity, Thresholds,
};
use linerate_rules::analyze;

fn fixture(name: &str) -> Inventory {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name);
    linerate_inventory::probe(&p).expect("probe runs")
}

fn of<'a>(f: &'a [Finding], id: &str, subject: &str) -> Vec<&'a Finding> {
    f.iter()
        .filter(|x| x.id.as_str() == id && x.subject == subject)
        .collect()
}

fn phy<'a>(inv: &'a mut Inventory, n: &str) -> &'a mut linerate_facts::PortPhy {
    inv.phy.iter_mut().find(|p| p.netdev == n).unwrap()
}

/// The diagnostics of netdev `n`'s module (the fixture has them).
fn diagnostics<'a>(inv: &'a mut Inventory, n: &str) -> &'a mut linerate_facts::Diagnostics {
    phy(inv, n)
        .module
        .as_mut()
        .and_then(|m| m.diagnostics.as_mut())
        .unwrap()
}

#[test]
fn light_is_judged_only_on_optics_with_thresholds() {
    let mut inv = fixture("x520-optics-no-light");
    assert_eq!(
        of(&analyze(&inv).findings, "module.rx_power_low", "enp3s0f0").len(),
        1
    );
    // A copper cable has no light to measure.
    phy(&mut inv, "enp3s0f0").module.as_mut().unwrap().media = Media::PassiveCopper;
    assert!(of(&analyze(&inv).findings, "module.rx_power_low", "enp3s0f0").is_empty());
    // Thresholds a module left at zero judge nothing.
    let mut inv = fixture("x520-optics-no-light");
    let d = diagnostics(&mut inv, "enp3s0f0");
    d.rx_power_thresholds_mw = Some(Thresholds {
        high_alarm: 0.0,
        low_alarm: 0.0,
        high_warning: 0.0,
        low_warning: 0.0,
    });
    assert!(of(&analyze(&inv).findings, "module.rx_power_low", "enp3s0f0").is_empty());
    // Between its low warning and low alarm: a warning, not an error.
    let mut inv = fixture("x520-optics-no-light");
    let d = diagnostics(&mut inv, "enp3s0f0");
    d.lanes[0].rx_power_mw = Some(0.02);
    let a = analyze(&inv);
    let f = of(&a.findings, "module.rx_power_low", "enp3s0f0");
    assert_eq!(f[0].severity, Severity::Warning, "{}", f[0].message);
    assert!(
        f[0].message.contains(Level::LowWarning.as_str()),
        "{}",
        f[0].message
    );
}

#[test]
fn module_temperature_past_its_alarm_is_an_error() {
    let mut inv = fixture("cx7-400g-qsfp-dd-hot-module");
    diagnostics(&mut inv, "enp1s0f0np0").temperature_c = Some(76.0);
    let a = analyze(&inv);
    let f = of(&a.findings, "module.temperature_high", "enp1s0f0np0");
    assert_eq!(f[0].severity, Severity::Error);
}

#[test]
fn fec_follows_the_lane_rate_and_the_media() {
    // PAM4 lanes: 400G over 8 lanes needs RS(544,514) whatever the module.
    let mut inv = fixture("cx7-400g-qsfp-dd-hot-module");
    phy(&mut inv, "enp1s0f0np0").fec.as_mut().unwrap().active = Some(FecMode::None);
    let a = analyze(&inv);
    let f = of(&a.findings, "fec.missing", "enp1s0f0np0");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(f[0].message.contains("802.3bs"), "{}", f[0].message);
    // 100G over four 25G lanes with a CA-25G-N cable: no FEC is right.
    let mut inv = fixture("cx5-100g-dac-no-fec-hot");
    phy(&mut inv, "enp65s0f0np0")
        .module
        .as_mut()
        .unwrap()
        .extended_compliance = Some(0x0d);
    assert!(of(&analyze(&inv).findings, "fec.missing", "enp65s0f0np0").is_empty());
    // No module read: said as a note, with what would need it.
    let mut inv = fixture("cx5-100g-dac-no-fec-hot");
    phy(&mut inv, "enp65s0f0np0").module = None;
    let a = analyze(&inv);
    let f = of(&a.findings, "fec.missing", "enp65s0f0np0");
    assert_eq!(f[0].severity, Severity::Info);
    assert!(f[0].message.contains("not read"), "{}", f[0].message);
}

#[test]
fn a_ring_at_its_maximum_wants_queues_not_length() {
    let mut inv = fixture("x520-optics-no-light");
    let r = phy(&mut inv, "enp3s0f1").rings.as_mut().unwrap();
    r.rx = Some(4096);
    let a = analyze(&inv);
    let f = of(&a.findings, "ring.drops", "enp3s0f1");
    assert_eq!(f[0].severity, Severity::Info);
    assert!(!f[0].evidence.contains_key("ring.rx_target"));
    assert!(f[0].fix.contains("ethtool -L"), "{}", f[0].fix);
    // The netdev's own counter counts the same drops: the larger is quoted, once.
    let mut inv = fixture("x520-optics-no-light");
    inv.netdevs
        .iter_mut()
        .find(|n| n.name == "enp3s0f1")
        .unwrap()
        .errors
        .insert("rx_missed_errors".into(), 50_000);
    let a = analyze(&inv);
    let f = of(&a.findings, "ring.drops", "enp3s0f1");
    let quoted: Vec<&String> = f[0]
        .evidence
        .keys()
        .filter(|k| k.ends_with("rx_missed_errors"))
        .collect();
    assert_eq!(
        quoted,
        ["/sys/class/net/enp3s0f1/statistics/rx_missed_errors"]
    );
}

#[test]
fn queues_already_at_the_devices_maximum_are_not_named() {
    let mut inv = fixture("cx5-100g-dac-no-fec-hot");
    phy(&mut inv, "enp65s0f0np0")
        .channels
        .as_mut()
        .unwrap()
        .combined_max = Some(4);
    assert!(of(&analyze(&inv).findings, "nic.channels_few", "enp65s0f0np0").is_empty());
}

#[test]
fn a_nics_sensor_is_judged_by_its_own_limits() {
    let mut inv = fixture("cx5-100g-dac-no-fec-hot");
    let f = inv
        .pci
        .iter_mut()
        .find(|f| f.address == "0000:41:00.0")
        .unwrap();
    // Another driver's `_crit` is its critical limit: past it, an error.
    f.hwmon = vec![HwmonSensor {
        chip: Some("ice".into()),
        sensor: "temp1".into(),
        label: None,
        input_c: Some(110.0),
        max_c: Some(100.0),
        crit_c: Some(105.0),
        highest_c: None,
        path: "/sys/bus/pci/devices/0000:41:00.0/hwmon/hwmon2".into(),
    }];
    let a = analyze(&inv);
    assert_eq!(
        of(&a.findings, "nic.temperature_high", "0000:41:00.0")[0].severity,
        Severity::Error
    );
    // Past `_max` only: a warning; below it: nothing.
    let f = inv
        .pci
        .iter_mut()
        .find(|f| f.address == "0000:41:00.0")
        .unwrap();
    f.hwmon[0].input_c = Some(101.0);
    let a = analyze(&inv);
    assert_eq!(
        of(&a.findings, "nic.temperature_high", "0000:41:00.0")[0].severity,
        Severity::Warning
    );
    let f = inv
        .pci
        .iter_mut()
        .find(|f| f.address == "0000:41:00.0")
        .unwrap();
    f.hwmon[0].input_c = Some(60.0);
    assert!(of(
        &analyze(&inv).findings,
        "nic.temperature_high",
        "0000:41:00.0"
    )
    .is_empty());
}

#[test]
fn a_vf_on_its_hosts_pf_shares_nothing_to_say_but_its_cap() {
    let inv = fixture("sriov-pf-vfs");
    let a = analyze(&inv);
    // The host sees its PF: no `vf.shared_port`, the cap is in the chain.
    assert!(a.findings.iter().all(|f| f.id.as_str() != "vf.shared_port"));
    let vf = a.ports.iter().find(|p| p.name == "enp65s0f0v0").unwrap();
    assert!((vf.ceiling.gbps - 10.0).abs() < 1e-9);
    // Lift the cap: the VF's ceiling is the port's again, with the shared-port stage.
    let mut inv = inv;
    phy(&mut inv, "enp65s0f0np0").vfs[0].max_tx_rate_mbps = None;
    let a = analyze(&inv);
    let vf = a.ports.iter().find(|p| p.name == "enp65s0f0v0").unwrap();
    assert!(
        (vf.ceiling.gbps - 100.0).abs() < 1e-9,
        "{}",
        vf.ceiling.summary
    );
    assert!(vf
        .ceiling
        .chain
        .iter()
        .any(|s| s.explain.contains("shares 100 Gb/s")));
}

/// doctor sets one end's Rx against the other end's Tx (`optics.light_lost`): the fixture's
/// optic receives no light; a far end with the same optic, lit and sending within its range,
/// puts the loss between the two; the same far end sending under its own low warning is the
/// far transmitter. Each end's facts carry its optic (`EndFacts::optics`).
#[test]
fn doctor_names_the_side_that_lost_the_light() {
    use linerate_rules::{diagnose, end_facts, DiagnoseInput};
    let near = fixture("x520-optics-no-light");
    let far_with = |tx_mw: f64| {
        let mut far = fixture("x520-optics-no-light");
        let d = diagnostics(&mut far, "enp3s0f0");
        for l in &mut d.lanes {
            l.rx_power_mw = Some(0.5);
            l.tx_power_mw = Some(tx_mw);
        }
        end_facts(&far, Some("enp3s0f0"), Vec::new())
    };
    let local = end_facts(&near, Some("enp3s0f0"), Vec::new());
    let o = local
        .optics
        .as_ref()
        .expect("the fixture's optic reports its light");
    assert!(
        !o.lanes.is_empty() && o.rx_power_thresholds_mw.is_some(),
        "{o:?}"
    );
    let run = |remote| {
        let d = diagnose(&DiagnoseInput {
            local: local.clone(),
            remote: Some(remote),
            tests: Vec::new(),
            host_stack: None,
            counter_deltas: Vec::new(),
            qdiscs: linerate_facts::QdiscsSeen::default(),
        });
        let f: Vec<Finding> = d
            .findings
            .into_iter()
            .filter(|f| f.id.as_str() == "optics.light_lost")
            .collect();
        (f, d.checked)
    };
    let (f, checked) = run(far_with(0.6));
    let [f] = f.as_slice() else { panic!("{f:?}") };
    assert_eq!(f.evidence["side"], "between the ends", "{f:?}");
    assert!(
        f.message.contains("all the light is lost between them"),
        "{}",
        f.message
    );
    assert!(
        checked.iter().any(|c| c.contains("both ends' optics")),
        "{checked:?}"
    );
    // The far laser under its own low warning: the far end's transmitter.
    let t = far_with(0.6)
        .optics
        .unwrap()
        .tx_power_thresholds_mw
        .filter(Thresholds::is_ordered)
        .expect("the fixture's optic has Tx thresholds");
    let (f, _) = run(far_with(f64::midpoint(t.low_warning, t.low_alarm)));
    assert_eq!(f[0].evidence["side"], "remote transmitter", "{f:?}");
    // A far end that reports no optic (an older peer, copper): nothing to compare.
    let mut bare = far_with(0.6);
    bare.optics = None;
    assert!(run(bare).0.is_empty());
}

#[test]
fn doctor_compares_the_two_ends_fec() {
    use linerate_rules::{diagnose, end_facts, DiagnoseInput};
    // The fixture's two ports: enp5s0f0np0 runs RS-FEC, enp5s0f1np1 none (both 25 Gb/s).
    let inv = fixture("cx4lx-25g-module-faults");
    let rs = end_facts(&inv, Some("enp5s0f0np0"), Vec::new());
    let none = end_facts(&inv, Some("enp5s0f1np1"), Vec::new());
    assert_eq!(
        (
            rs.fec.as_ref().map(|f| f.active.as_str()),
            none.fec.as_ref().map(|f| f.active.as_str())
        ),
        (Some("RS"), Some("none"))
    );
    let run = |local: &linerate_facts::EndFacts, remote: &linerate_facts::EndFacts| {
        let d = diagnose(&DiagnoseInput {
            local: local.clone(),
            remote: Some(remote.clone()),
            tests: Vec::new(),
            host_stack: None,
            counter_deltas: Vec::new(),
            qdiscs: linerate_facts::QdiscsSeen::default(),
        });
        let f: Vec<Finding> = d
            .findings
            .into_iter()
            .filter(|f| f.id.as_str() == "fec.mismatch")
            .collect();
        (f, d.checked)
    };
    let (f, checked) = run(&rs, &none);
    let [f] = f.as_slice() else { panic!("{f:?}") };
    assert!(
        f.message.contains("the local enp5s0f0np0 runs RS FEC")
            && f.message.contains("the remote enp5s0f1np1 runs no FEC"),
        "{}",
        f.message
    );
    assert!(
        f.fix.contains("ethtool --set-fec enp5s0f1np1 encoding rs"),
        "{}",
        f.fix
    );
    assert!(
        checked.iter().any(|c| c.contains("both ends' FEC modes")),
        "{checked:?}"
    );
    // The same mode at both ends, or an end that reports none (an older peer): nothing.
    assert!(run(&rs, &rs).0.is_empty());
    let mut older = none.clone();
    older.fec = None;
    assert!(run(&rs, &older).0.is_empty());
}
