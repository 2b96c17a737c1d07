//! iperf3 versions: what each can do, and what the protocol reveals about a peer's.
//!
//! **What the protocol reveals.** A client says its version in its parameters
//! (`client_version`, every version since 3.0), so a server knows what it talks to before the
//! test starts. A server says nothing about itself before the test: it sends state bytes only,
//! no greeting and no reply to the parameters, and every version silently ignores a key it does
//! not know (so `bidirectional` sent to a 3.6 server asks for nothing). A client learns about
//! the server only as the test goes:
//!
//! - the UDP connect reply: `"6789"` from 3.12 on, `987654321` before ([`crate::udp::Magic`]);
//! - the refusals: a data connection refused with ACCESS_DENIED in a `--bidir` test means a
//!   server before 3.7, which expected half the streams (captured: a 3.21 client against 3.1.3);
//! - the results: `start_time`/`end_time` from 3.2, `omitted_errors`/`omitted_packets` from 3.14,
//!   negative numbers printed unsigned by 3.12 and 3.13 ([`VersionRange::from_results_json`]);
//! - `server_output_json.start.version` (`"iperf 3.12"`), when the client asked for the
//!   server's output (`get_server_output`) and the server runs with `-J`.
//!
//! So a client that needs a feature a server may lack asks for it and checks the evidence
//! afterwards; [`Feature::since`] says which version brought each one.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::udp::Magic;

/// An iperf3 release, as `client_version` and `--version` print it (`3.1.3`, `3.12`, `3.17.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl Version {
    /// The UDP accounting rules this release counts by.
    pub fn udp_rules(self) -> crate::udp::Rules {
        crate::udp::Rules {
            take_back_loss: self.has(Feature::LossTakeBack),
            seed_first_transit: self.has(Feature::JitterSeeded),
        }
    }

    pub const fn new(major: u16, minor: u16, patch: u16) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Parse `3.12`, `3.1.3`, `3.17.1`, and the suffixed forms of development and beta builds
    /// (`3.21+`, `3.13-mt-beta2`, `iperf 3.12 (cJSON 1.7.15)`): the first dotted run of numbers.
    /// `None` when there is none.
    pub fn parse(text: &str) -> Option<Version> {
        let start = text.find(|c: char| c.is_ascii_digit())?;
        let run: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mut parts = run.split('.').filter(|p| !p.is_empty());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        let patch = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        Some(Version::new(major, minor, patch))
    }

    /// Whether this version has a feature (for a quirk: whether it shows it).
    pub fn has(self, feature: Feature) -> bool {
        self >= feature.since() && feature.until().is_none_or(|end| self < end)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.patch == 0 {
            write!(f, "{}.{}", self.major, self.minor)
        } else {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        }
    }
}

impl FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Version, String> {
        Version::parse(s).ok_or_else(|| format!("'{s}' is not an iperf3 version"))
    }
}

/// What came with which release. Each was read in `git show TAG:src/iperf_api.c` (and
/// `iperf_udp.c`, `iperf.h`, `iperf_server_api.c`) of esnet/iperf, tag by tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// `get_server_output`: the server's own output in its results (3.0.5).
    ServerOutput,
    /// `udp_counters_64bit`: 64-bit UDP sequence numbers (3.1).
    UdpCounters64,
    /// A UDP receiver takes a loss back for each datagram out of order (3.2).
    LossTakeBack,
    /// Random cookies from `[a-z2-7]` (3.2; before, `hostname.sec.usec.random`).
    RandomCookie,
    /// `start_time`/`end_time` per stream in the results (3.2).
    StreamTimes,
    /// `fqrate`, `pacing_timer`, `congestion_used` and `authtoken` in the parameters (3.2).
    FqRate,
    /// RSA authentication (`authtoken`, IEAUTHTEST) (3.2).
    Authentication,
    /// `extra_data` (3.6).
    ExtraData,
    /// `--bidir` (`bidirectional`) (3.7). An older server ignores the key and refuses the
    /// client's extra connections with ACCESS_DENIED.
    Bidir,
    /// `repeating_payload` (3.7).
    RepeatingPayload,
    /// A UDP receiver's jitter starts from the first datagram's transit, not from 0 (3.8).
    JitterSeeded,
    /// `--server-bitrate-limit` (3.9). Until 3.20 the server closes the control connection
    /// without saying why when the limit is exceeded; 3.21 sends SERVER_ERROR IETOTALRATE (27).
    ServerBitrateLimit,
    /// TCP_NODELAY on the control connection (3.10; commit 97a1d11a).
    ControlNodelay,
    /// `dont_fragment` (3.10).
    DontFragment,
    /// `--rcv-timeout`: a receiving end gives up on silence with IENOMSG (144) (3.10).
    ReceiveTimeout,
    /// `zerocopy` sent to the server, so a sending server uses it too (3.11).
    ServerZerocopy,
    /// The UDP connect and reply messages `"9876"`/`"6789"` (3.12; before, 123456789 and
    /// 987654321 in host byte order). 3.12 to 3.16 wrote them in host order too, so on
    /// big-endian hosts they were reversed until 3.17 ([`Feature::PortableUdpMagic`]).
    TextUdpMagic,
    /// A quirk: negative integers in JSON printed as unsigned 64-bit values (`-1` as
    /// `18446744073709551615`), 3.12 and 3.13 (fixed in 3.14, ff458b2e).
    UnsignedNegatives,
    /// `omitted_errors`/`omitted_packets` per stream in the results (3.14).
    OmittedCounts,
    /// One thread per stream (3.16); the protocol did not change.
    Threads,
    /// The UDP magic in the same bytes on big- and little-endian hosts (3.17, 9caff37f).
    PortableUdpMagic,
    /// Parameters read with type checks (3.18, 3f66f604): a flag must be a JSON boolean, a
    /// number a number; a wrongly typed key is ignored with a message. Before, any value of a
    /// present key counted.
    TypedParams,
    /// The parameters capped at 8 KiB (`MAX_PARAMS_JSON_STRING`, 3.18); before, unbounded.
    ParamsCap,
    /// `skip_rx_copy` and `mptcp` (3.19).
    SkipRxCopy,
    /// `--server-max-duration` (3.20): SERVER_ERROR IEMAXSERVERTESTDURATIONEXCEEDED (37).
    ServerMaxDuration,
    /// `gso`/`gro` keys in every UDP test's parameters, and SERVER_ERROR
    /// IESERVERTESTDURATIONEXPIRED (160) when a test overruns the server's timer (3.21).
    Gso,
}

impl Feature {
    /// Every feature, oldest first.
    pub const ALL: [Feature; 26] = [
        Feature::ServerOutput,
        Feature::UdpCounters64,
        Feature::LossTakeBack,
        Feature::RandomCookie,
        Feature::StreamTimes,
        Feature::FqRate,
        Feature::Authentication,
        Feature::ExtraData,
        Feature::Bidir,
        Feature::RepeatingPayload,
        Feature::JitterSeeded,
        Feature::ServerBitrateLimit,
        Feature::ControlNodelay,
        Feature::DontFragment,
        Feature::ReceiveTimeout,
        Feature::ServerZerocopy,
        Feature::TextUdpMagic,
        Feature::UnsignedNegatives,
        Feature::OmittedCounts,
        Feature::Threads,
        Feature::PortableUdpMagic,
        Feature::TypedParams,
        Feature::ParamsCap,
        Feature::SkipRxCopy,
        Feature::ServerMaxDuration,
        Feature::Gso,
    ];

    /// The first release with it.
    pub const fn since(self) -> Version {
        match self {
            Feature::ServerOutput => Version::new(3, 0, 5),
            Feature::UdpCounters64 => Version::new(3, 1, 0),
            Feature::RandomCookie
            | Feature::LossTakeBack
            | Feature::StreamTimes
            | Feature::FqRate
            | Feature::Authentication => Version::new(3, 2, 0),
            Feature::ExtraData => Version::new(3, 6, 0),
            Feature::Bidir | Feature::RepeatingPayload => Version::new(3, 7, 0),
            Feature::JitterSeeded => Version::new(3, 8, 0),
            Feature::ServerBitrateLimit => Version::new(3, 9, 0),
            Feature::ControlNodelay | Feature::DontFragment | Feature::ReceiveTimeout => {
                Version::new(3, 10, 0)
            }
            Feature::ServerZerocopy => Version::new(3, 11, 0),
            Feature::TextUdpMagic | Feature::UnsignedNegatives => Version::new(3, 12, 0),
            Feature::OmittedCounts => Version::new(3, 14, 0),
            Feature::Threads => Version::new(3, 16, 0),
            Feature::PortableUdpMagic => Version::new(3, 17, 0),
            Feature::TypedParams | Feature::ParamsCap => Version::new(3, 18, 0),
            Feature::SkipRxCopy => Version::new(3, 19, 0),
            Feature::ServerMaxDuration => Version::new(3, 20, 0),
            Feature::Gso => Version::new(3, 21, 0),
        }
    }

    /// The first release without it, for a quirk that was fixed.
    pub const fn until(self) -> Option<Version> {
        match self {
            Feature::UnsignedNegatives => Some(Version::new(3, 14, 0)),
            _ => None,
        }
    }

    /// What to tell a user whose server lacks it, naming the release that brought it.
    pub fn needs(self) -> String {
        let what = match self {
            Feature::ServerOutput => "--get-server-output",
            Feature::UdpCounters64 => "64-bit UDP counters",
            Feature::LossTakeBack => "UDP loss counted net of late datagrams",
            Feature::JitterSeeded => "UDP jitter without the first datagram's clock offset",
            Feature::RandomCookie => "random cookies",
            Feature::StreamTimes => "per-stream start and end times in the results",
            Feature::FqRate => "--fq-rate",
            Feature::Authentication => "RSA authentication",
            Feature::ExtraData => "--extra-data",
            Feature::Bidir => "--bidir",
            Feature::RepeatingPayload => "--repeating-payload",
            Feature::ServerBitrateLimit => "--server-bitrate-limit",
            Feature::ControlNodelay => "TCP_NODELAY on the control connection",
            Feature::DontFragment => "--dont-fragment",
            Feature::ReceiveTimeout => "--rcv-timeout",
            Feature::ServerZerocopy => "zero copy (-Z) on the server's side",
            Feature::TextUdpMagic => "the \"9876\"/\"6789\" UDP handshake",
            Feature::UnsignedNegatives => "unsigned negative numbers (a 3.12/3.13 quirk)",
            Feature::OmittedCounts => "UDP counts of the omitted seconds in the results",
            Feature::Threads => "one thread per stream",
            Feature::PortableUdpMagic => "the same UDP handshake bytes on every host",
            Feature::TypedParams => "type-checked parameters",
            Feature::ParamsCap => "an 8 KiB limit on the parameters",
            Feature::SkipRxCopy => "--skip-rx-copy and --mptcp",
            Feature::ServerMaxDuration => "--server-max-duration",
            Feature::Gso => "UDP GSO/GRO",
        };
        format!("{what} needs iperf3 {} or later", self.since())
    }
}

/// What is known of a peer's version: at least `min`, and below `below` when that is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    pub min: Version,
    pub below: Option<Version>,
}

impl VersionRange {
    /// Nothing known: any iperf3 3.x.
    pub const ANY: VersionRange = VersionRange {
        min: Version::new(3, 0, 0),
        below: None,
    };

    /// Exactly one release (from a version string).
    pub fn exactly(v: Version) -> VersionRange {
        VersionRange {
            min: v,
            below: Some(Version::new(v.major, v.minor, v.patch.saturating_add(1))),
        }
    }

    /// Both facts at once; `None` when they contradict each other.
    pub fn and(self, other: VersionRange) -> Option<VersionRange> {
        let min = self.min.max(other.min);
        let below = match (self.below, other.below) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match below {
            Some(b) if b <= min => None,
            _ => Some(VersionRange { min, below }),
        }
    }

    /// Whether every version in the range has the feature (`Some(true)`), none has it
    /// (`Some(false)`), or the range does not tell (`None`).
    pub fn has(self, feature: Feature) -> Option<bool> {
        let since = feature.since();
        let until = feature.until();
        let all_after_since = self.min >= since;
        let all_before_since = self.below.is_some_and(|b| b <= since);
        let all_before_until = until.is_none_or(|u| self.below.is_some_and(|b| b <= u));
        let all_after_until = until.is_some_and(|u| self.min >= u);
        if all_before_since || all_after_until {
            Some(false)
        } else if all_after_since && all_before_until {
            Some(true)
        } else {
            None
        }
    }

    /// What the shape of a results message (its JSON body, as received) says about the version
    /// of the end that sent it.
    ///
    /// - `start_time`/`end_time` in the streams: 3.2 or later; absent from every stream: before.
    /// - `omitted_errors`/`omitted_packets`: 3.14 or later; absent: before.
    /// - an integer above `i64::MAX` (a negative printed unsigned): 3.12 or 3.13. Absence says
    ///   nothing: only a receiving side's `-1` shows it.
    ///
    /// A body that is not a results object says nothing ([`VersionRange::ANY`]).
    pub fn from_results_json(body: &[u8]) -> VersionRange {
        let Ok(Value::Object(top)) = serde_json::from_slice::<Value>(body) else {
            return VersionRange::ANY;
        };
        let Some(Value::Array(streams)) = top.get("streams") else {
            return VersionRange::ANY;
        };
        let mut range = VersionRange::ANY;
        let objects: Vec<_> = streams.iter().filter_map(Value::as_object).collect();
        if !objects.is_empty() {
            let times = objects.iter().all(|s| s.contains_key("start_time"));
            let no_times = objects.iter().all(|s| !s.contains_key("start_time"));
            let omitted = objects.iter().all(|s| s.contains_key("omitted_errors"));
            let no_omitted = objects.iter().all(|s| !s.contains_key("omitted_errors"));
            if times {
                range = range.and(from(Feature::StreamTimes)).unwrap_or(range);
            } else if no_times {
                range = range.and(before(Feature::StreamTimes)).unwrap_or(range);
            }
            if omitted {
                range = range.and(from(Feature::OmittedCounts)).unwrap_or(range);
            } else if no_omitted {
                range = range.and(before(Feature::OmittedCounts)).unwrap_or(range);
            }
        }
        let unsigned = |v: &Value| v.as_u64().is_some_and(|n| n > i64::MAX as u64);
        let any_unsigned =
            top.values().any(unsigned) || objects.iter().any(|s| s.values().any(unsigned));
        if any_unsigned {
            let quirk = VersionRange {
                min: Feature::UnsignedNegatives.since(),
                below: Feature::UnsignedNegatives.until(),
            };
            range = range.and(quirk).unwrap_or(range);
        }
        range
    }

    /// Every release with `feature` (for a quirk: from the release that showed it on).
    pub fn with(feature: Feature) -> VersionRange {
        from(feature)
    }

    /// Every release before `feature` came.
    pub fn without(feature: Feature) -> VersionRange {
        before(feature)
    }

    /// What a server's reply in the UDP handshake says of its release: `"6789"` from 3.12 on,
    /// `"9876"` from a big-endian 3.12 to 3.16, 987654321 before 3.12. `None` for a datagram
    /// no server replies with.
    pub fn from_udp_reply(reply: Magic) -> Option<VersionRange> {
        match reply {
            Magic::Text6789 => Some(from(Feature::TextUdpMagic)),
            Magic::Text9876 => from(Feature::TextUdpMagic).and(before(Feature::PortableUdpMagic)),
            Magic::Legacy987654321(_) => Some(before(Feature::TextUdpMagic)),
            Magic::Legacy123456789(_) => None,
        }
    }

    /// The version in a server's `server_output_json` (`start.version`, e.g. `"iperf 3.12"`).
    pub fn from_server_output(json: &Value) -> Option<VersionRange> {
        let text = json.get("start")?.get("version")?.as_str()?;
        Version::parse(text).map(VersionRange::exactly)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.below {
            None => write!(f, "iperf3 {} or later", self.min),
            Some(b) if VersionRange::exactly(self.min).below == Some(b) => {
                write!(f, "iperf3 {}", self.min)
            }
            Some(b) => write!(f, "iperf3 {} or later, before {b}", self.min),
        }
    }
}

fn from(feature: Feature) -> VersionRange {
    VersionRange {
        min: feature.since(),
        below: None,
    }
}

fn before(feature: Feature) -> VersionRange {
    VersionRange {
        min: VersionRange::ANY.min,
        below: Some(feature.since()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::udp::{Receiver, Rules, Timestamp};

    #[test]
    fn parses_what_iperf3_prints() {
        assert_eq!(Version::parse("3.12"), Some(Version::new(3, 12, 0)));
        assert_eq!(Version::parse("3.1.3"), Some(Version::new(3, 1, 3)));
        assert_eq!(Version::parse("3.17.1"), Some(Version::new(3, 17, 1)));
        assert_eq!(Version::parse("3.21+"), Some(Version::new(3, 21, 0)));
        assert_eq!(
            Version::parse("3.13-mt-beta2"),
            Some(Version::new(3, 13, 0))
        );
        assert_eq!(
            Version::parse("iperf 3.12 (cJSON 1.7.15)"),
            Some(Version::new(3, 12, 0))
        );
        assert_eq!(Version::parse("3"), Some(Version::new(3, 0, 0)));
        assert_eq!(Version::parse("no digits"), None);
        assert_eq!(Version::parse(""), None);
        assert_eq!(Version::parse("99999999.1"), None);
        assert_eq!(Version::new(3, 1, 3).to_string(), "3.1.3");
        assert_eq!(Version::new(3, 12, 0).to_string(), "3.12");
        assert!("x".parse::<Version>().is_err());
        // Numeric, not textual, order.
        assert!(Version::new(3, 9, 0) < Version::new(3, 12, 0));
        assert!(Version::new(3, 1, 3) < Version::new(3, 2, 0));
    }

    #[test]
    fn features_by_version() {
        let v = |s: &str| Version::parse(s).unwrap();
        assert!(!v("3.6").has(Feature::Bidir));
        assert!(v("3.7").has(Feature::Bidir));
        assert!(v("3.1.3").has(Feature::UdpCounters64));
        assert!(!v("3.0.11").has(Feature::UdpCounters64));
        assert!(!v("3.11").has(Feature::UnsignedNegatives));
        assert!(v("3.12").has(Feature::UnsignedNegatives));
        assert!(v("3.13").has(Feature::UnsignedNegatives));
        assert!(!v("3.14").has(Feature::UnsignedNegatives));
        assert!(v("3.21").has(Feature::Gso));
        assert_eq!(Feature::Bidir.needs(), "--bidir needs iperf3 3.7 or later");
        // ALL is oldest first and holds every feature once.
        for w in Feature::ALL.windows(2) {
            assert!(w[0].since() <= w[1].since(), "{w:?}");
        }
    }

    #[test]
    fn ranges_combine_and_answer() {
        let r = VersionRange::ANY.and(from(Feature::OmittedCounts)).unwrap();
        assert_eq!(r.has(Feature::Bidir), Some(true));
        assert_eq!(r.has(Feature::UnsignedNegatives), Some(false));
        assert_eq!(r.has(Feature::SkipRxCopy), None);
        let old = VersionRange::ANY.and(before(Feature::StreamTimes)).unwrap();
        assert_eq!(old.has(Feature::Bidir), Some(false));
        assert_eq!(old.has(Feature::UdpCounters64), None);
        assert_eq!(r.and(old), None, "3.14+ and before 3.2 contradict");
        let quirk = VersionRange {
            min: Version::new(3, 12, 0),
            below: Some(Version::new(3, 14, 0)),
        };
        assert_eq!(quirk.has(Feature::UnsignedNegatives), Some(true));
        assert_eq!(quirk.to_string(), "iperf3 3.12 or later, before 3.14");
        assert_eq!(
            VersionRange::exactly(Version::new(3, 12, 0)).to_string(),
            "iperf3 3.12"
        );
        assert_eq!(VersionRange::ANY.to_string(), "iperf3 3.0 or later");
    }

    #[test]
    fn results_shape_tells_the_age() {
        let r = |s: &str| VersionRange::from_results_json(s.as_bytes());
        // 3.1.3's shape.
        let old = r(
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":5,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#,
        );
        assert_eq!(old.below, Some(Version::new(3, 2, 0)));
        // 3.12's: times, no omitted counts, an unsigned -1.
        let q = r(
            r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":5,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1}]}"#,
        );
        assert_eq!(q.min, Version::new(3, 12, 0));
        assert_eq!(q.below, Some(Version::new(3, 14, 0)));
        // 3.14 and later.
        let new = r(
            r#"{"streams":[{"id":1,"omitted_errors":0,"omitted_packets":0,"start_time":0,"end_time":1}]}"#,
        );
        assert_eq!(new.min, Version::new(3, 14, 0));
        assert_eq!(new.below, None);
        // Garbage says nothing.
        assert_eq!(r("not json"), VersionRange::ANY);
        assert_eq!(r("[]"), VersionRange::ANY);
        assert_eq!(r(r#"{"streams":5}"#), VersionRange::ANY);
    }

    #[test]
    fn the_udp_reply_tells_the_age() {
        use crate::udp::ByteOrder;
        let new = VersionRange::from_udp_reply(Magic::Text6789).unwrap();
        assert_eq!(new.has(Feature::Bidir), Some(true));
        let big = VersionRange::from_udp_reply(Magic::Text9876).unwrap();
        assert_eq!(big.to_string(), "iperf3 3.12 or later, before 3.17");
        let old = VersionRange::from_udp_reply(Magic::Legacy987654321(ByteOrder::Little)).unwrap();
        assert_eq!(old.has(Feature::TextUdpMagic), Some(false));
        assert_eq!(old.has(Feature::Bidir), None, "3.7 to 3.11 too");
        assert_eq!(
            VersionRange::from_udp_reply(Magic::Legacy123456789(ByteOrder::Big)),
            None
        );
        assert_eq!(
            VersionRange::without(Feature::Bidir).has(Feature::Bidir),
            Some(false)
        );
        assert_eq!(
            VersionRange::with(Feature::SkipRxCopy).has(Feature::SkipRxCopy),
            Some(true)
        );
    }

    #[test]
    fn server_output_names_the_version() {
        let json: Value =
            serde_json::from_str(r#"{"start":{"version":"iperf 3.12","system_info":"Linux"}}"#)
                .unwrap();
        assert_eq!(
            VersionRange::from_server_output(&json),
            Some(VersionRange::exactly(Version::new(3, 12, 0)))
        );
        assert_eq!(VersionRange::from_server_output(&Value::Null), None);
    }

    #[test]
    fn older_rules() {
        let v = |s| Version::parse(s).unwrap();
        let ts = |sec, usec| Timestamp { sec, usec };
        assert_eq!(v("3.21").udp_rules(), Rules::CURRENT);
        assert_eq!(v("3.8").udp_rules(), Rules::CURRENT);
        let r37 = v("3.7").udp_rules();
        assert!(r37.take_back_loss && !r37.seed_first_transit);
        let r31 = v("3.1.3").udp_rules();
        assert!(!r31.take_back_loss && !r31.seed_first_transit);
        // 3.1: a late datagram does not take its loss back.
        let mut r = Receiver::with_rules(r31);
        let t = ts(0, 0);
        for seq in [1, 3, 2] {
            r.record(seq, t, t);
        }
        assert_eq!((r.errors(), r.out_of_order()), (1, 1));
        // Before 3.8: the first transit (here 1.6 s of clock offset) counts from 0.
        let mut r = Receiver::with_rules(r37);
        r.record(1, ts(0, 0), ts(1, 600_000));
        assert!((r.jitter() - 1.6 / 16.0).abs() < 1e-12);
        assert_eq!(Rules::default(), Rules::CURRENT);
    }
}
