//! `linerate watch`'s renderers on a watcher fed constructed samples over a fixture's ports:
//! the screen drawn into a buffer (rows, the bar against the ceiling, the verdict, the detail
//! pane, the help, a narrow screen, no colour), the lines, the JSON line against its schema and
//! the metrics' families.

use std::path::Path;

use linerate_facts::CounterSource;
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};
use linerate_report::watch::{watch_json_line, watch_lines, watch_metrics};
use linerate_report::WatchScreen;
use linerate_soak::JudgeParams;
use linerate_watch::{watched_ports, Frame, Key, RateUnit, Tick, ViewState, WatchParams, Watcher};
use ratatui_core::buffer::Buffer;
use ratatui_core::layout::Rect;
use ratatui_core::style::Color;
use ratatui_core::widgets::Widget;

fn tick(seq: u64) -> Tick {
    Tick {
        seq,
        t_ms: seq * 1000,
        unix_ms: 1_800_000_000_000 + seq * 1000,
    }
}

fn sample(seq: u64, data: u64, downed: u64) -> SoakSample {
    let c = |n: &str, v: u64| (CounterSource::IbCounters, n.to_string(), v);
    SoakSample {
        end: End::Local,
        seq,
        t_s: seq as f64,
        ports: vec![PortSample {
            phy: None,
            device: "mlx4_0".into(),
            port: "1".into(),
            netdev: Some("ib0".into()),
            kind: SoakPortKind::Infiniband {
                speed: Some("QDR".into()),
                signalling_gbps: Some(40.0),
            },
            counters: vec![
                c("link_downed", downed),
                c("port_rcv_data", data),
                c("port_xmit_data", data),
                c("port_rcv_packets", data / 512),
                c("port_xmit_packets", data / 512),
            ],
        }],
        tcp_retrans_segs: None,
        tcp_out_segs: None,
        bytes_sent: 0,
        bytes_received: 0,
        problems: Vec::new(),
        host: Vec::new(),
    }
}

/// Three seconds of the ConnectX-3 port at 16 Gb/s (half its 32 Gb/s ceiling), its link going
/// down once in the last.
fn watched() -> (Watcher, Frame) {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sysfs/cx3-fdr-at-qdr-datagram");
    let inv = linerate_inventory::probe(&root).unwrap();
    let mut w = Watcher::new(
        WatchParams {
            window_s: 60.0,
            history: 100,
            log: 10,
        },
        JudgeParams::default(),
    );
    w.set_ports(watched_ports(&inv, &[], &[]), tick(0));
    let mut f = w.push(sample(0, 0, 0), tick(0));
    for s in 1..=3u64 {
        // 16 Gb/s is 5e8 units of 4 bytes a second.
        f = w.push(sample(s, s * 500_000_000, u64::from(s == 3)), tick(s));
    }
    (w, f)
}

fn draw(
    w: &Watcher,
    f: &Frame,
    view: &ViewState,
    width: u16,
    color: bool,
) -> (Buffer, Vec<String>) {
    let area = Rect::new(0, 0, width, 40);
    let mut buf = Buffer::empty(area);
    WatchScreen {
        frame: f,
        watcher: w,
        view,
        host: "node01",
        interval_s: 1.0,
        color,
    }
    .render(area, &mut buf);
    let lines = (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    (buf, lines)
}

#[test]
fn the_screen_shows_the_rate_against_the_ceiling_and_the_verdict() {
    let (w, f) = watched();
    let (_, lines) = draw(&w, &f, &ViewState::default(), 200, true);
    let row = lines
        .iter()
        .find(|l| l.starts_with("ib0 mlx4_0/1"))
        .unwrap_or_else(|| panic!("no row:\n{}", lines.join("\n")));
    for want in [
        "ib",
        "active",
        "4X QDR",
        "16.0 Gb/s",
        "█████▌·····  50%",
        "32.0 Gb/s (encoding)",
        "bad: link_downed +1",
        "flap (link_downed +1) at 08:00:03",
    ] {
        assert!(row.contains(want), "`{want}` not in `{row}`");
    }
    assert!(
        lines[0].starts_with("linerate watch  node01  08:00:03 UTC  every 1 s"),
        "{}",
        lines[0]
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("08:00:03  mlx4_0/1") && l.contains("flap")),
        "the log pane"
    );
}

#[test]
fn without_colour_only_bold_and_reverse_remain() {
    let (w, f) = watched();
    let coloured = |buf: &Buffer| {
        buf.content()
            .iter()
            .any(|c| c.fg != Color::Reset || c.bg != Color::Reset)
    };
    let (buf, _) = draw(&w, &f, &ViewState::default(), 200, true);
    assert!(coloured(&buf));
    let (buf, lines) = draw(&w, &f, &ViewState::default(), 200, false);
    assert!(!coloured(&buf), "colour drawn with colour off");
    assert!(lines.iter().any(|l| l.contains("bad: link_downed +1")));
}

#[test]
fn the_detail_pane_the_help_and_a_narrow_screen() {
    let (w, f) = watched();
    let mut view = ViewState::default();
    view.key(Key::Enter, &f.ports);
    let (_, lines) = draw(&w, &f, &view, 200, false);
    let text = lines.join("\n");
    for want in [
        "PCIe 0000:04:00.0: now PCIe 3.0 x8",
        "NUMA node 0",
        "ceiling ",
        "encoding",
        "window bad (link_downed)",
        "counters (increase in the last interval, per second)",
        "port_rcv_data",
    ] {
        assert!(
            text.contains(want),
            "`{want}` not in the detail pane:\n{text}"
        );
    }
    view.key(Key::Char('?'), &f.ports);
    let (_, lines) = draw(&w, &f, &view, 200, false);
    assert!(lines.iter().any(|l| l.contains("linerate watch: keys")));
    let (_, lines) = draw(&w, &f, &ViewState::default(), 80, false);
    assert!(lines.iter().all(|l| l.chars().count() <= 80));
    assert!(
        lines[1].contains("UTILISATION") && !lines[1].contains("CEILING"),
        "{}",
        lines[1]
    );
    let (_, lines) = draw(&w, &f, &ViewState::default(), 30, false);
    assert!(lines[0].starts_with("terminal too small"));
    // Bytes: GB/s = 10^9 byte/s.
    let view = ViewState {
        unit: RateUnit::Bytes,
        ..ViewState::default()
    };
    let (_, lines) = draw(&w, &f, &view, 200, false);
    assert!(lines
        .iter()
        .any(|l| l.contains("2.00 GB/s") && l.contains("4.00 GB/s (encoding)")));
}

#[test]
fn lines_json_and_metrics() {
    let (w, f) = watched();
    let text = watch_lines(&f, RateUnit::Bits);
    assert_eq!(
        text,
        "2027-01-15T08:00:03.000Z ib0 active rx 16.0 Gb/s 977 kp/s tx 16.0 Gb/s 977 kp/s 50.0% of 32.0 Gb/s (encoding) errors bad: link_downed +1 changed flap (link_downed +1) at 08:00:03\n"
    );
    let line = watch_json_line(&f).unwrap();
    assert!(!line.contains('\n'));
    let doc: serde_json::Value = serde_json::from_str(&line).unwrap();
    linerate_testkit::schema::assert_matches("watch-stream.schema.json", &doc);
    let m = watch_metrics(&w, &w.verdicts(), tick(3));
    let labels = r#"device="mlx4_0",port="1",netdev="ib0""#;
    for want in [
        "# TYPE linerate_watch_receive_bytes_total counter".to_string(),
        format!("linerate_watch_receive_bytes_total{{{labels}}} 6000000000"),
        format!("linerate_watch_ceiling_bytes_per_second{{{labels}}} 4000000000"),
        format!("linerate_watch_ceiling_stage_info{{{labels},stage=\"encoding\"}} 1"),
        format!("linerate_watch_errors_total{{{labels},source=\"ib_counters\",counter=\"link_downed\"}} 1"),
        format!("linerate_watch_link_changes_total{{{labels},what=\"flap\"}} 1"),
        format!("linerate_watch_verdict{{{labels}}} 4"),
        format!("linerate_watch_verdict_rule_info{{{labels},rule=\"link_downed\"}} 1"),
        "linerate_watch_samples_total 4".to_string(),
        "linerate_watch_last_sample_timestamp_seconds 1800000003".to_string(),
        "linerate_watch_threshold{name=\"ber\"} 0.000000000001".to_string(),
    ] {
        assert!(m.lines().any(|l| l == want), "`{want}` not in:\n{m}");
    }
    // Every family has its HELP and TYPE before its samples.
    let mut typed = std::collections::BTreeSet::new();
    for l in m.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            typed.insert(rest.split(' ').next().unwrap().to_string());
        } else if !l.starts_with('#') {
            let name = l.split(['{', ' ']).next().unwrap();
            assert!(typed.contains(name), "{name} has no TYPE before it");
        }
    }
}

#[test]
fn the_phy_readings_are_columns_and_metrics_where_a_port_has_them() {
    use linerate_facts::{
        dbm, Diagnostics, LaneDiagnostics, PhyGauges, RxPowerMeasure, Thresholds,
    };
    let (mut w, f) = watched();
    let (_, lines) = draw(&w, &f, &ViewState::default(), 200, false);
    assert!(
        !lines[2..].iter().any(|l| l.contains("TEMP")),
        "no PHY columns without readings:\n{}",
        lines.join("\n")
    );
    // An optic at 72 °C (warning 70) whose lane 2 receives 0.02 mW (low warning 0.0316).
    let t = |lo: f64, hi: f64| Thresholds {
        high_alarm: hi * 1.1,
        low_alarm: lo / 2.0,
        high_warning: hi,
        low_warning: lo,
    };
    let lane = |n: u8, rx: f64| LaneDiagnostics {
        lane: n,
        tx_bias_ma: Some(6.0),
        tx_power_mw: Some(0.5),
        tx_power_dbm: dbm(0.5),
        rx_power_mw: Some(rx),
        rx_power_dbm: dbm(rx),
    };
    let mut s = sample(4, 4 * 500_000_000, 1);
    s.ports[0].phy = Some(PhyGauges {
        sensors: Vec::new(),
        module: Some(Diagnostics {
            temperature_c: Some(72.0),
            temperature_thresholds_c: Some(t(5.0, 70.0)),
            supply_v: None,
            supply_thresholds_v: None,
            lanes: vec![lane(1, 0.4), lane(2, 0.02)],
            tx_bias_thresholds_ma: None,
            tx_power_thresholds_mw: Some(t(0.0316, 1.0)),
            rx_power_thresholds_mw: Some(t(0.0316, 1.0)),
            rx_power_measure: RxPowerMeasure::Average,
        }),
    });
    let f = w.push(s, tick(4));
    let (_, lines) = draw(&w, &f, &ViewState::default(), 200, false);
    let screen = lines.join("\n");
    assert!(
        screen.contains("TEMP") && screen.contains("RX LIGHT"),
        "{screen}"
    );
    assert!(
        screen.contains("72 °C") && screen.contains("-17.0 dBm"),
        "{screen}"
    );
    let m = watch_metrics(&w, &w.verdicts(), tick(4));
    let labels = r#"device="mlx4_0",port="1",netdev="ib0""#;
    for want in [
        format!("linerate_watch_module_temperature_celsius{{{labels}}} 72"),
        format!("linerate_watch_module_temperature_high_warning_celsius{{{labels}}} 70"),
        format!("linerate_watch_module_rx_power_watts{{{labels},lane=\"2\"}} 0.00002"),
        format!("linerate_watch_module_rx_power_low_warning_watts{{{labels}}} 0.0000316"),
    ] {
        assert!(m.lines().any(|l| l == want), "`{want}` not in:\n{m}");
    }
}
