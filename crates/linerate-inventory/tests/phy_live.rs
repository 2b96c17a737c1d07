//! What probe reads below this machine's own NICs, set against the `ethtool` binary's answer
//! for the same netdev: the same kernel asked twice, through linerate's netlink decoder and
//! through ethtool's. Runs without privileges; without a hardware netdev or without `ethtool`
//! it records a skip.

use std::path::Path;
use std::process::Command;

use linerate_facts::{PhyQuery, UnreadWhy};

/// The value of `label` under `section` of ethtool's report.
fn field(text: &str, section: &str, label: &str) -> Option<u32> {
    linerate_testkit::ethtool_field(text, section, label)
}

fn ethtool(args: &[&str]) -> Option<String> {
    let out = Command::new("ethtool").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn rings_and_channels_agree_with_ethtool() {
    if ethtool(&["--version"]).is_none() {
        linerate_testkit::skip("no ethtool binary to compare with (apt install ethtool)");
        return;
    }
    let inv = linerate_inventory::probe(Path::new("/")).expect("probe /");
    let mut compared = 0;
    for p in &inv.phy {
        let n = p.netdev.as_str();
        if let (Some(r), Some(text)) = (&p.rings, ethtool(&["-g", n])) {
            let cur = "Current hardware settings:";
            let max = "Pre-set maximums:";
            // ethtool prints n/a for 0.
            let want = |v: Option<u32>| v.filter(|x| *x > 0);
            assert_eq!(field(&text, cur, "RX"), want(r.rx), "{n} rx\n{text}");
            assert_eq!(field(&text, cur, "TX"), want(r.tx), "{n} tx\n{text}");
            assert_eq!(
                field(&text, max, "RX"),
                want(r.rx_max),
                "{n} rx max\n{text}"
            );
            assert_eq!(
                field(&text, max, "TX"),
                want(r.tx_max),
                "{n} tx max\n{text}"
            );
            compared += 1;
        }
        if let (Some(c), Some(text)) = (&p.channels, ethtool(&["-l", n])) {
            let want = |v: Option<u32>| v.filter(|x| *x > 0);
            let cur = "Current hardware settings:";
            assert_eq!(
                field(&text, cur, "Combined"),
                want(c.combined),
                "{n}\n{text}"
            );
            assert_eq!(
                field(&text, "Pre-set maximums:", "Combined"),
                want(c.combined_max),
                "{n}\n{text}"
            );
            compared += 1;
        }
        // What the driver lacks is said as unsupported, never as a failure.
        if ethtool(&["-a", n]).is_none() && p.pause.is_none() {
            assert_eq!(
                p.unread(PhyQuery::Pause).map(|u| u.why),
                Some(UnreadWhy::Unsupported),
                "{n}: {:?}",
                p.unread
            );
        }
    }
    if compared == 0 {
        linerate_testkit::skip("no netdev here answers ring or channel queries");
    }
}

/// The ioctls of kernels before ethtool netlink (5.6), asked of this kernel beside its netlink:
/// the same rings, channels, coalescing and pause, decoded by the same decoder.
#[test]
fn the_ioctl_path_agrees_with_netlink() {
    use linerate_inventory::phy::{Answer, Live, Replies, Typed};
    use linerate_phy::ethtool::{self, Get};
    let inv = linerate_inventory::probe(Path::new("/")).expect("probe /");
    let mut live = Live::new();
    let mut compared = 0;
    for p in &inv.phy {
        let n = p.netdev.as_str();
        for get in [Get::Rings, Get::Channels, Get::Coalesce, Get::Pause] {
            let by_netlink = live.get(n, get);
            let by_ioctl = live.typed(n, get);
            match (by_netlink, by_ioctl) {
                (Answer::Got(reply), Answer::Got(t)) => {
                    match (get, t) {
                        (Get::Rings, Typed::Rings(r)) => {
                            let nl = ethtool::decode_rings(&reply).unwrap();
                            assert_eq!(
                                (nl.rx, nl.rx_max, nl.tx, nl.tx_max),
                                (r.rx, r.rx_max, r.tx, r.tx_max),
                                "{n}"
                            );
                        }
                        (Get::Channels, Typed::Channels(c)) => {
                            let nl = ethtool::decode_channels(&reply).unwrap();
                            assert_eq!(nl.combined.unwrap_or(0), c.combined.unwrap_or(0), "{n}");
                            assert_eq!(
                                nl.combined_max.unwrap_or(0),
                                c.combined_max.unwrap_or(0),
                                "{n}"
                            );
                        }
                        (Get::Coalesce, Typed::Coalesce(c)) => {
                            // Netlink omits what the driver does not support; the ioctl says 0.
                            match ethtool::decode_coalesce(&reply) {
                                Ok(nl) => {
                                    assert_eq!(
                                        nl.rx_usecs.unwrap_or(0),
                                        c.rx_usecs.unwrap_or(0),
                                        "{n}"
                                    );
                                }
                                // The kernel refused one and not the other: both paths said so.
                                Err(e) => panic!("{n}: netlink coalesce {e}, ioctl {c:?}"),
                            }
                        }
                        (Get::Pause, Typed::Pause(x)) => {
                            if let Ok(nl) = ethtool::decode_pause(&reply) {
                                assert_eq!((nl.rx, nl.tx), (x.rx, x.tx), "{n}");
                            }
                        }
                        (g, t) => panic!("{g:?} answered {t:?}"),
                    }
                    compared += 1;
                }
                // A driver without the operation refuses both ways.
                (Answer::Got(reply), Answer::Refused { errno, .. }) => {
                    assert_eq!(errno, 95, "{n} {get:?}");
                    assert!(
                        matches!(
                            linerate_phy::nl::messages(&reply),
                            Err(linerate_phy::nl::NlError::Kernel { errno: 95, .. })
                        ),
                        "{n} {get:?}: netlink answered what the ioctl refused"
                    );
                }
                (a, b) => panic!("{n} {get:?}: netlink {a:?}, ioctl {b:?}"),
            }
        }
    }
    if compared == 0 {
        linerate_testkit::skip("no hardware netdev here answers ethtool");
    }
}
