//! The watcher on constructed samples, over the ports of fixture inventories: rates from the
//! port's own counters, a bond's ceiling from its members, a virtual port without one, errors
//! judged by soak and leaving with the window, link events logged once, totals through resets,
//! and memory bounded however long it runs.

use std::path::Path;

use linerate_facts::CounterSource;
use linerate_facts::{Bond, Inventory};
use linerate_proto::soak::{End, PortSample, SoakPortKind, SoakSample};
use linerate_soak::{JudgeParams, Verdict};
use linerate_watch::{
    watched_ports, ChangeKind, CountedFrom, PortId, Tick, WatchKind, WatchParams, Watcher,
};

fn inventory(name: &str) -> Inventory {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(name);
    linerate_inventory::probe(&root).expect("a fixture root")
}

fn params(window_s: f64) -> WatchParams {
    WatchParams {
        window_s,
        history: 50,
        log: 20,
    }
}

fn tick(seq: u64, t_s: f64) -> Tick {
    Tick {
        seq,
        t_ms: (t_s * 1000.0).round() as u64,
        unix_ms: 1_800_000_000_000 + (t_s * 1000.0).round() as u64,
    }
}

/// One port's sample: `(source, name, value)` counters.
fn sample(seq: u64, t_s: f64, id: &PortId, counters: &[(CounterSource, &str, u64)]) -> SoakSample {
    SoakSample {
        end: End::Local,
        seq,
        t_s,
        ports: vec![PortSample {
            phy: None,
            device: id.device.clone(),
            port: id.port.clone(),
            netdev: None,
            kind: SoakPortKind::Infiniband {
                speed: Some("QDR".into()),
                signalling_gbps: Some(40.0),
            },
            counters: counters
                .iter()
                .map(|(s, n, v)| (*s, (*n).to_string(), *v))
                .collect(),
        }],
        tcp_retrans_segs: Some(seq * 7),
        tcp_out_segs: None,
        bytes_sent: 0,
        bytes_received: 0,
        problems: Vec::new(),
        host: Vec::new(),
    }
}

use CounterSource::{IbCounters, NetdevStatistics};

fn ib() -> PortId {
    PortId::new("mlx4_0", "1")
}

/// The ConnectX-3 port at 4X QDR (ceiling 32 Gb/s, set by its line code).
fn qdr_watcher(window_s: f64) -> Watcher {
    let inv = inventory("cx3-fdr-at-qdr-datagram");
    let mut w = Watcher::new(params(window_s), JudgeParams::default());
    w.set_ports(watched_ports(&inv, &[], &[]), tick(0, 0.0));
    w
}

#[test]
fn rates_come_from_the_ports_own_counters_against_its_ceiling() {
    let mut w = qdr_watcher(60.0);
    let id = ib();
    let c = |data: u64, pkts: u64| {
        [
            (IbCounters, "port_rcv_data", data),
            (IbCounters, "port_xmit_data", data / 2),
            (IbCounters, "port_rcv_packets", pkts),
            (IbCounters, "port_xmit_packets", pkts),
            (NetdevStatistics, "rx_bytes", 5),
        ]
    };
    let f0 = w.push(sample(0, 0.0, &id, &c(1000, 10)), tick(0, 0.0));
    assert_eq!(f0.ports[0].rx_gbps, None, "no rate before an interval");
    // 2e9 units of 4 bytes in 2 s: 32 Gb/s received, 16 sent; the ceiling is 32.
    let f = w.push(
        sample(1, 2.0, &id, &c(1000 + 2_000_000_000, 1010)),
        tick(1, 2.0),
    );
    let p = &f.ports[0];
    assert_eq!(p.kind, WatchKind::Infiniband);
    assert_eq!(p.counted_from, Some(CountedFrom::IbCounters));
    assert_eq!(p.rx_gbps, Some(32.0));
    assert_eq!(p.tx_gbps, Some(16.0));
    assert_eq!(p.rx_pps, Some(500.0));
    assert_eq!(
        (p.ceiling_gbps, p.limited_by.as_str()),
        (Some(32.0), "encoding")
    );
    assert_eq!(p.utilisation, Some(1.0));
    assert_eq!(p.link.as_deref(), Some("4X QDR"));
    assert_eq!(p.pcie.as_deref(), Some("PCIe 3.0 x8"));
    let t = w.totals(&id).unwrap();
    assert_eq!((t.rx_bytes, t.tx_bytes), (8_000_000_000, 4_000_000_000));
    // The detail pane's counters, with their rates.
    let rates = w.counters(&id);
    let data = rates.iter().find(|c| c.counter == "port_rcv_data").unwrap();
    assert_eq!((data.delta, data.per_s), (2_000_000_000, Some(1e9)));
    assert_eq!(w.history(&id).unwrap().len(), 1);
}

#[test]
fn a_reset_data_counter_is_no_burst_and_totals_go_on() {
    let mut w = qdr_watcher(60.0);
    let id = ib();
    let data = |v: u64| {
        [
            (IbCounters, "port_rcv_data", v),
            (IbCounters, "port_xmit_data", v),
        ]
    };
    w.push(sample(0, 0.0, &id, &data(900_000_000)), tick(0, 0.0));
    w.push(sample(1, 1.0, &id, &data(1_000_000_000)), tick(1, 1.0));
    // A driver reload: the counter starts again from 250.
    let f = w.push(sample(2, 2.0, &id, &data(250)), tick(2, 2.0));
    assert!(
        f.ports[0].rx_gbps.unwrap() < 1e-3,
        "{:?}",
        f.ports[0].rx_gbps
    );
    assert_eq!(w.totals(&id).unwrap().rx_bytes, (100_000_000 + 250) * 4);
    // A 32-bit counter at its maximum: the rate is marked, not made up.
    let max = u64::from(u32::MAX);
    w.push(sample(3, 3.0, &id, &data(max - 10)), tick(3, 3.0));
    let f = w.push(sample(4, 4.0, &id, &data(max)), tick(4, 4.0));
    assert!(f.ports[0].rate_saturated);
}

#[test]
fn errors_get_soaks_verdict_and_leave_with_the_window() {
    let mut w = qdr_watcher(10.0);
    let id = ib();
    let errs = |downed: u64, rcv: u64| {
        [
            (IbCounters, "link_downed", downed),
            (IbCounters, "port_rcv_errors", rcv),
            (IbCounters, "symbol_error", 0),
        ]
    };
    w.push(sample(0, 0.0, &id, &errs(0, 0)), tick(0, 0.0));
    let f = w.push(sample(1, 1.0, &id, &errs(1, 50)), tick(1, 1.0));
    let p = &f.ports[0];
    let moved: Vec<(&str, u64)> = p
        .moved
        .iter()
        .map(|m| (m.counter.as_str(), m.delta))
        .collect();
    assert_eq!(moved, [("link_downed", 1), ("port_rcv_errors", 50)]);
    let mark = p.window.as_ref().expect("judged");
    assert_eq!(mark.verdict, Verdict::Bad);
    assert_eq!(mark.rule.as_str(), "link_downed");
    assert_eq!(mark.counters.len(), 2);
    // The link went down and up between two samples: a flap, logged once.
    assert_eq!(f.changes.len(), 1);
    assert_eq!(f.changes[0].what, ChangeKind::Flap);
    assert_eq!(w.log().len(), 1);
    assert_eq!(
        p.last_change.as_ref().map(|c| c.what),
        Some(ChangeKind::Flap)
    );
    // Host-wide retransmits rose every sample: not this port's (no retrans_with_errors).
    assert!(mark
        .findings
        .iter()
        .all(|f| f.rule.as_str() != "retrans_with_errors"));
    // Soak's verdict for every port, as the metrics export it.
    let v = w.verdicts();
    assert_eq!(v[0].1.as_ref().map(|r| r.verdict), Some(Verdict::Bad));
    // Quiet for a window: no mark; the event stays in the log.
    let mut last = f;
    for seq in 2..=12 {
        last = w.push(
            sample(seq, seq as f64, &id, &errs(1, 50)),
            tick(seq, seq as f64),
        );
    }
    assert!(last.ports[0].window.is_none());
    assert!(last.ports[0].moved.is_empty());
    assert_eq!(w.log().len(), 1);
    assert_eq!(w.totals(&id).unwrap().changes[&ChangeKind::Flap], 1);
}

#[test]
fn a_changed_inventory_is_logged_once_with_its_time() {
    let inv = inventory("cx3-fdr-at-qdr-datagram");
    let mut w = Watcher::new(params(60.0), JudgeParams::default());
    w.set_ports(watched_ports(&inv, &[], &[]), tick(0, 0.0));
    assert!(w.log().is_empty(), "the first ports are no event");
    w.push(sample(0, 0.0, &ib(), &[]), tick(0, 0.0));
    // The link trained at 1X.
    let mut down = inv.clone();
    down.ib_devices[0].ports[0].rate = linerate_model::IbRate::parse("10 Gb/sec (1X QDR)");
    w.set_ports(watched_ports(&down, &[], &[]), tick(1, 1.5));
    let f = w.push(sample(1, 1.5, &ib(), &[]), tick(1, 1.5));
    let words: Vec<String> = f
        .changes
        .iter()
        .map(linerate_watch::LinkChange::words)
        .collect();
    assert_eq!(words, ["width 4X → 1X", "rate 4X QDR → 1X QDR"]);
    assert!(f
        .changes
        .iter()
        .all(|c| c.t_s == 1.5 && c.unix_ms == 1_800_000_001_500));
    assert_eq!(f.ports[0].ceiling_gbps, Some(8.0));
    // The next frame carries no new event, the port keeps its latest.
    let f = w.push(sample(2, 2.5, &ib(), &[]), tick(2, 2.5));
    assert!(f.changes.is_empty());
    assert_eq!(
        f.ports[0].last_change.as_ref().map(|c| c.what),
        Some(ChangeKind::Rate)
    );
    assert_eq!(w.log().len(), 2);
}

#[test]
fn a_bond_carries_its_members_ceilings() {
    // Two 10 GbE ports (the Intel fixture's, twice) under bond0.
    let mut inv = inventory("intel-82599-10g");
    let eth = inv.ports[0].clone();
    let nd = inv
        .netdevs
        .iter()
        .find(|n| n.name == eth.name)
        .unwrap()
        .clone();
    let (mut eth1, mut nd1) = (eth.clone(), nd.clone());
    eth1.name = "eth1".into();
    eth1.netdev = Some("eth1".into());
    nd1.name = "eth1".into();
    let mut bond_nd = nd.clone();
    bond_nd.name = "bond0".into();
    bond_nd.is_virtual = true;
    bond_nd.pci = None;
    let mut bond_port = eth.clone();
    bond_port.name = "bond0".into();
    bond_port.netdev = Some("bond0".into());
    bond_port.kind = linerate_facts::PortKind::Virtual;
    bond_port.device = None;
    bond_port.pci = None;
    inv.netdevs.extend([nd1, bond_nd]);
    inv.ports.extend([eth1, bond_port]);
    let members = vec![eth.name.clone(), "eth1".to_string()];
    let bond = |mode: &str| Bond {
        name: "bond0".into(),
        mode: Some(mode.into()),
        members: members.clone(),
        active: Some("eth1".into()),
    };
    let of = |b: Bond| {
        watched_ports(&inv, &[b], &[])
            .into_iter()
            .find(|p| p.name == "bond0")
            .expect("the bond's row")
    };
    let lacp = of(bond("802.3ad"));
    assert_eq!(lacp.kind, WatchKind::Bond);
    assert_eq!(lacp.ceiling.gbps, Some(20.0));
    assert_eq!(lacp.ceiling.limited_by.as_str(), "link");
    assert!(
        lacp.ceiling.summary.contains("added up"),
        "{}",
        lacp.ceiling.summary
    );
    assert_eq!(of(bond("active-backup")).ceiling.gbps, Some(10.0));
    assert_eq!(lacp.bond.as_ref().map(|b| b.members.len()), Some(2));
}

#[test]
fn a_virtual_port_has_no_ceiling_and_no_link_rate() {
    let inv = inventory("virtual-only");
    let ports = watched_ports(&inv, &[], &[]);
    assert!(
        !ports.iter().any(|p| p.name == "lo"),
        "loopback is not watched"
    );
    let veth = ports.iter().find(|p| p.name == "veth0").expect("veth0");
    assert_eq!(veth.kind, WatchKind::Virtual);
    assert_eq!((veth.ceiling.gbps, veth.link.rate.as_deref()), (None, None));
}

#[test]
fn memory_is_bounded_however_long_it_runs() {
    let mut w = qdr_watcher(10.0);
    let id = ib();
    for seq in 0..5000u64 {
        let t = seq as f64 * 0.1;
        let v = seq * 1000;
        w.push(
            sample(
                seq,
                t,
                &id,
                &[
                    (IbCounters, "port_rcv_data", v),
                    (IbCounters, "link_downed", seq / 100),
                ],
            ),
            tick(seq, t),
        );
    }
    // The judged tracker holds at most a window of intervals (10 s at 100 ms), the chart and
    // the log their capacities.
    let timeline = w.window().tracker().unwrap().timeline().len();
    assert!(timeline <= 100, "{timeline} intervals kept");
    assert_eq!(w.history(&id).unwrap().len(), 50);
    assert_eq!(w.log().len(), 20);
    assert_eq!(w.log().pushed(), 49);
    assert!(w.window().span_s() <= 10.0);
}

#[test]
fn phy_gauges_stay_until_read_again() {
    use linerate_facts::{HwmonSensor, Level, PhyGauges};
    let mut w = qdr_watcher(60.0);
    let id = ib();
    let c = [(IbCounters, "port_rcv_data", 1000)];
    let sensor = |c: f64| HwmonSensor {
        chip: Some("mlx5".into()),
        sensor: "temp1".into(),
        label: Some("asic".into()),
        input_c: Some(c),
        max_c: None,
        crit_c: Some(105.0),
        highest_c: None,
        path: "/sys/bus/pci/devices/0000:04:00.0/hwmon/hwmon3".into(),
    };
    let with = |s: SoakSample, c: f64| {
        let mut s = s;
        s.ports[0].phy = Some(PhyGauges {
            sensors: vec![sensor(c)],
            module: None,
        });
        s
    };
    let f = w.push(sample(0, 0.0, &id, &c), tick(0, 0.0));
    assert_eq!(f.ports[0].temperature, None, "nothing read yet");
    let f = w.push(with(sample(1, 1.0, &id, &c), 64.0), tick(1, 1.0));
    let t = f.ports[0]
        .temperature
        .clone()
        .expect("the sensor's reading");
    assert_eq!(
        (t.what.as_str(), t.c, t.level),
        ("mlx5 asic", 64.0, Level::Normal)
    );
    // A sample between two readings keeps the last one.
    let f = w.push(sample(2, 2.0, &id, &c), tick(2, 2.0));
    assert_eq!(f.ports[0].temperature.as_ref().map(|t| t.c), Some(64.0));
    // mlx5's `_crit` is its warning threshold.
    let f = w.push(with(sample(3, 12.0, &id, &c), 106.0), tick(3, 12.0));
    let t = f.ports[0].temperature.clone().unwrap();
    assert_eq!((t.c, t.level), (106.0, Level::HighWarning));
    assert_eq!(f.ports[0].rx_power, None, "no module, no light");
}
