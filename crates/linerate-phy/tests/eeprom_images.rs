//! The module decoders on real modules' memory, each value checked against the decoded text
//! the same source published with it (`fixtures/eeprom/README.md` names each source).

use std::path::PathBuf;

use linerate_facts::{Level, Media, Module, ModuleStandard, RxPowerMeasure};
use linerate_phy::eeprom::{decode, plan, Image};

fn image(name: &str) -> Image {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/eeprom")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Image::from_hex(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn module(name: &str) -> Module {
    let img = image(name);
    assert!(
        plan(&img).is_empty(),
        "{name}: the image lacks {:?}",
        plan(&img)
    );
    decode(&img).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Within the last digit the source prints.
fn near(got: Option<f64>, want: f64, digits: i32) {
    let got = got.unwrap_or(f64::NAN);
    let tol = 0.5 * 10f64.powi(-digits) + 1e-9;
    assert!((got - want).abs() <= tol, "{got} != {want} (±{tol})");
}

#[test]
fn sff8472_flexoptix_10g_lr() {
    let m = module("sff8472-flexoptix-p.b1696.10.da.hex");
    assert_eq!(m.standard, ModuleStandard::Sff8472);
    assert_eq!(m.form_factor, "SFP/SFP+/SFP28");
    assert_eq!(m.connector.as_deref(), Some("LC"));
    assert_eq!(m.vendor.as_deref(), Some("FLEXOPTIX"));
    assert_eq!(m.part_number.as_deref(), Some("P.B1696.10.DA"));
    assert_eq!(m.revision.as_deref(), Some("A"));
    assert_eq!(m.serial_number.as_deref(), Some("F79B5KH"));
    assert_eq!(m.date_code.as_deref(), Some("191218"));
    // Bytes 37-39 (SFF-8472 Table 4-1). The source's test expects `20:00:00`, which is bytes
    // 35-37: its reader is one byte early there (README).
    assert_eq!(m.oui.as_deref(), Some("00:02:c9"));
    assert_eq!(m.nominal_lane_mbd, Some(10_300));
    assert_eq!(m.wavelength_nm, Some(1330.0));
    assert_eq!(m.media, Media::SinglemodeFiber);
    assert_eq!(m.interfaces, ["10GBASE-LR"]);
    let d = m.diagnostics.expect("DDM implemented");
    near(d.tx_power_thresholds_mw.map(|t| t.high_alarm), 1.7783, 4);
}

#[test]
fn sff8472_oem_10g_lr_with_no_light() {
    let m = module("sff8472-oem-sfp-10gb-lr-no-rx.hex");
    assert_eq!(m.vendor.as_deref(), Some("OEM"));
    assert_eq!(m.part_number.as_deref(), Some("SFP-10GB-LR"));
    assert_eq!(m.reach_m.get("smf"), Some(&10_000.0));
    let d = m.diagnostics.expect("DDM implemented");
    near(d.temperature_c, 34.54, 2);
    near(d.supply_v, 3.29, 2);
    let lane = &d.lanes[0];
    near(lane.tx_bias_ma, 35.994, 3);
    assert_eq!(lane.rx_power_mw, Some(0.0));
    assert_eq!(lane.rx_power_dbm, None, "0 mW is ethtool's -inf dBm");
    let rx = d.rx_power_thresholds_mw.expect("Rx thresholds");
    near(Some(rx.high_warning), 1.0, 4);
    near(Some(rx.low_alarm), 0.0158, 4);
    near(Some(rx.low_warning), 0.0316, 4);
    // No light at all: below the module's own low alarm.
    assert_eq!(rx.level(0.0), Level::LowAlarm);
    assert_eq!(d.rx_power_measure, RxPowerMeasure::Average);
}

#[test]
fn sff8472_brocade_without_diagnostics() {
    let m = module("sff8472-brocade-57-1000042-no-ddm.hex");
    assert_eq!(m.vendor.as_deref(), Some("BROCADE"));
    assert_eq!(m.part_number.as_deref(), Some("57-1000042-02"));
    assert_eq!(m.wavelength_nm, None);
    assert!(m.diagnostics.is_none());
    assert!(m.diagnostics_note.unwrap().contains("byte 92"));
}

#[test]
fn sff8636_fs_qsfp28_ir4() {
    let m = module("sff8636-fs-qsfp28-ir4-100g.hex");
    assert_eq!(m.standard, ModuleStandard::Sff8636);
    assert_eq!(m.form_factor, "QSFP28");
    assert_eq!(m.connector.as_deref(), Some("LC"));
    assert_eq!(m.vendor.as_deref(), Some("FS"));
    assert_eq!(m.part_number.as_deref(), Some("QSFP28-IR4-100G"));
    assert_eq!(m.revision.as_deref(), Some("A1"));
    assert_eq!(m.serial_number.as_deref(), Some("C1812155461"));
    assert_eq!(m.oui.as_deref(), Some("00:02:c9"));
    assert_eq!(m.date_code.as_deref(), Some("190110"));
    near(m.wavelength_nm, 1302.35, 2);
    assert_eq!(m.reach_m.get("smf"), Some(&2000.0));
    // 26 GBd per lane (byte 140 = 0xff, byte 222 = 104 × 250 MBd).
    assert_eq!(m.nominal_lane_mbd, Some(26_000));
    assert_eq!(m.media, Media::SinglemodeFiber);
    assert_eq!(m.lanes, 4);
    let d = m.diagnostics.expect("monitors");
    near(d.lanes[0].tx_bias_ma, 34.432, 3);
    let b = d.tx_bias_thresholds_ma.expect("page 03h");
    assert_eq!(
        (b.high_alarm, b.low_alarm, b.high_warning, b.low_warning),
        (75.0, 10.0, 70.0, 15.0)
    );
    assert_eq!(d.lanes.len(), 4);
}

#[test]
fn sff8636_fs_passive_dac() {
    let m = module("sff8636-fs-q28-pcxx-dac.hex");
    assert_eq!(m.part_number.as_deref(), Some("Q28-PCxx"));
    // Non-optical: copper cable, unequalized (byte 147), so no wavelength; 1 m long.
    assert_eq!(m.media, Media::PassiveCopper);
    assert_eq!(m.wavelength_nm, None);
    assert_eq!(m.cable_length_m, Some(1.0));
    assert_eq!(m.extended_compliance, Some(0x0b));
    assert!(
        m.interfaces.iter().any(|i| i.contains("CA-25G-L")),
        "{:?}",
        m.interfaces
    );
    assert!(
        m.diagnostics.is_none(),
        "a passive cable implements no monitors"
    );
}

#[test]
fn cmis_arista_qdd_400g_xdr4_over_its_temperature_warning() {
    let m = module("cmis-arista-qdd-400g-xdr4.hex");
    assert_eq!(m.standard, ModuleStandard::Cmis);
    assert_eq!(m.form_factor, "QSFP-DD");
    assert_eq!(m.spec_revision.as_deref(), Some("CMIS 4.0"));
    assert_eq!(m.module_state.as_deref(), Some("ModuleReady"));
    assert_eq!(m.vendor.as_deref(), Some("Arista Networks"));
    assert_eq!(m.oui.as_deref(), Some("00:1c:73"));
    assert_eq!(m.part_number.as_deref(), Some("QDD-400G-XDR4"));
    assert_eq!(m.serial_number.as_deref(), Some("XKT242211481"));
    assert_eq!(m.date_code.as_deref(), Some("240531"));
    assert_eq!(m.connector.as_deref(), Some("MPO 1x12"));
    assert_eq!(m.media, Media::SinglemodeFiber);
    near(m.wavelength_nm, 1311.0, 3);
    assert_eq!(m.reach_m.get("smf"), Some(&2000.0));
    assert_eq!(m.max_gbps, Some(400.0));
    assert_eq!(m.lanes, 4);
    let d = m.diagnostics.expect("paged memory");
    near(d.temperature_c, 70.49, 2);
    near(d.supply_v, 3.2186, 4);
    let want = [
        (83.806, 1.5975, 2.2489),
        (81.878, 1.6486, 1.8629),
        (72.900, 1.6333, 1.8427),
        (110.100, 1.4387, 1.8215),
    ];
    for (l, (b, tx, rx)) in d.lanes.iter().zip(want) {
        near(l.tx_bias_ma, b, 3);
        near(l.tx_power_mw, tx, 4);
        near(l.rx_power_mw, rx, 4);
    }
    near(d.lanes[0].tx_power_dbm, 2.03, 2);
    near(d.lanes[0].rx_power_dbm, 3.52, 2);
    let t = d.temperature_thresholds_c.unwrap();
    assert_eq!(
        (t.high_alarm, t.low_alarm, t.high_warning, t.low_warning),
        (75.0, -5.0, 70.0, 0.0)
    );
    // ethtool printed "Module temperature high warning : On".
    assert_eq!(t.level(d.temperature_c.unwrap()), Level::HighWarning);
    let rx = d.rx_power_thresholds_mw.unwrap();
    near(Some(rx.low_alarm), 0.1288, 4);
    near(Some(rx.low_warning), 0.2042, 4);
    let b = d.tx_bias_thresholds_ma.unwrap();
    assert_eq!((b.high_alarm, b.low_alarm), (130.0, 10.0));
    let v = d.supply_thresholds_v.unwrap();
    near(Some(v.high_warning), 3.465, 4);
}

#[test]
fn cmis_sixteen_lanes_in_low_power() {
    let m = module("cmis-qsfp-dd-16-lane-low-power.hex");
    assert_eq!(m.module_state.as_deref(), Some("ModuleLowPwr"));
    assert_eq!(m.lanes, 16);
    let d = m.diagnostics.unwrap();
    assert_eq!(d.lanes.len(), 16);
    for l in &d.lanes {
        near(l.tx_power_mw, 0.0001, 4);
        near(l.rx_power_mw, 0.0001, 4);
        near(l.rx_power_dbm, -40.0, 2);
        assert_eq!(l.tx_bias_ma, None, "no bias monitor advertised");
    }
    assert_eq!(d.lanes[15].lane, 16);
}
