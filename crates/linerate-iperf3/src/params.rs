//! The parameters a client sends after PARAM_EXCHANGE (`send_parameters`/`get_parameters`).
//!
//! [`Iperf3Params`] holds every key iperf3 3.0 to 3.21 sends, as it travels: integers as cJSON's
//! 64-bit `valueint`, strings, and flags. [`Iperf3Params::check`] turns them into a [`Test`] a server
//! can run, or refuses them with the iperf3 error code a client understands.
//!
//! **Flags: present means true.** iperf3 sends a flag only when it is set (`"reverse": true`,
//! `"get_server_output": 1`) and never sends it false. Through 3.17 a server tested flags for
//! presence only, so `"reverse": false` turned reverse *on*; since 3.18 it wants a JSON boolean
//! (or a number, for the number-typed flags) and ignores a wrongly typed one with a message.
//! linerate encodes a flag only when true, so every version reads it the same. It decodes by
//! presence, as 3.17 and earlier do: `"reverse": false` or `"reverse": null` is reverse. No
//! iperf3 client sends either; the choice only matters for a hand-made or hostile client, and
//! presence is the reading that the larger part of the installed base (3.1.3 to 3.17) applies,
//! so a test linerate runs is the test such a server would run. [`Iperf3Params::odd_flags`] lists the
//! flags whose value was not `true`/a number, for the server's log.
//!
//! **Numbers.** A wrongly typed number (`"time": "10"`) is refused ([`DecodeError::WrongType`]),
//! where 3.18+ ignores it and older servers read it as 0: a server of ours has no good reading
//! of it, and no iperf3 client sends it. A fraction is truncated, and an integer above `i64::MAX`
//! is the negative that 3.12/3.13 printed unsigned (see `json.rs`).
//!
//! **Unknown keys** are kept in [`Iperf3Params::unknown`] (every iperf3 version ignores them), so a
//! newer client's options can be logged. Strings (`title`, `extra_data`, `client_version`,
//! `authtoken`, unknown values) are as the client sent them: escape them before printing.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::errors::ErrorCode;
use crate::frame::{self, JsonFrameError, PARAMS_MAX};
use crate::json::{self, is_false, DecodeError, Fields};
use crate::streams::DataFlow;
use crate::version::Version;

/// iperf3's limits on a test (`iperf.h`, unchanged since 3.1 unless noted).
pub mod limits {
    /// `-P` (`MAX_STREAMS`).
    pub const MAX_STREAMS: u32 = 128;
    /// `-t`, seconds (`MAX_TIME`).
    pub const MAX_TIME_S: u32 = 86_400;
    /// `-O`, seconds (`MAX_OMIT_TIME`; 3.1 had no check).
    pub const MAX_OMIT_S: u32 = 600;
    /// `-l` for TCP (`MAX_BLOCKSIZE`, 1 MiB).
    pub const MAX_TCP_LEN: u32 = 1024 * 1024;
    /// `-l` for UDP, at least: two 32-bit times and a 64-bit sequence (`MIN_UDP_BLOCKSIZE`).
    pub const MIN_UDP_LEN: u32 = 16;
    /// `-l` for UDP, at most: 65535 less the IPv4 and UDP headers (`MAX_UDP_BLOCKSIZE`).
    pub const MAX_UDP_LEN: u32 = 65_507;
    /// `-w` (`MAX_TCP_BUFFER`, 512 MiB).
    pub const MAX_WINDOW: u32 = 512 * 1024 * 1024;
    /// `-M` (`MAX_MSS`; 9 KiB in 3.1).
    pub const MAX_MSS: u32 = 32 * 1024 - 1;
    /// The burst of `-b RATE/COUNT` (`MAX_BURST`).
    pub const MAX_BURST: u32 = 1000;
    /// `-S`/`--dscp`.
    pub const MAX_TOS: u32 = 255;
    /// `-L` (an IPv6 flow label is 20 bits).
    pub const MAX_FLOWLABEL: u32 = 0xf_ffff;
    /// `-A n,m`: the server's CPU.
    pub const MAX_AFFINITY: u32 = 1024;
    /// A test's length when the client sends none (`DURATION`).
    pub const DEFAULT_TIME_S: u32 = 10;
    /// `-l` for TCP when the client sends none (`DEFAULT_TCP_BLKSIZE`).
    pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
    /// `-l` for UDP when the client sends none (`DEFAULT_UDP_BLKSIZE`; a client sends its
    /// control connection's MSS).
    pub const DEFAULT_UDP_LEN: u32 = 1460;
    /// `--pacing-timer`, µs (`DEFAULT_PACING_TIMER`).
    pub const DEFAULT_PACING_TIMER_US: u32 = 1000;
    /// UDP's rate per stream when the client gives none (`UDP_RATE`, 1 Mbit/s).
    pub const DEFAULT_UDP_RATE_BPS: u64 = 1024 * 1024;
}

/// The transport of the test's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// The key that names it in the parameters.
    pub const fn key(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

impl Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.key(), &true)?;
        m.end()
    }
}

/// The parameters, key by key, in the order iperf3 3.21 writes them. `None` is a key not sent.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Iperf3Params {
    /// `tcp`/`udp`/`sctp`: true. With several, iperf3 applies them in that order, so the last
    /// wins; with none, TCP.
    #[serde(flatten)]
    pub protocol: Protocol,
    /// `-O`, seconds, left out of the figures at the start. Always sent.
    pub omit: i64,
    /// `-A n,m`: the server's CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_affinity: Option<i64>,
    /// `-t`, seconds; 0 when the test ends on bytes or blocks. Always sent since 3.2; 3.1
    /// sends it only when not 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
    /// `-n`, bytes. Sent (0 when unset) by recent versions, only when set by 3.1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num: Option<i64>,
    /// `-k`, blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blockcount: Option<i64>,
    /// `-M`, bytes.
    #[serde(rename = "MSS", skip_serializing_if = "Option::is_none")]
    pub mss: Option<i64>,
    /// `-N`.
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_true")]
    pub nodelay: bool,
    /// `-P`. Always sent.
    pub parallel: i64,
    /// `-R`.
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_true")]
    pub reverse: bool,
    /// `--bidir` (3.7).
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_true")]
    pub bidirectional: bool,
    /// `-m`, MPTCP (3.19).
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_true")]
    pub mptcp: bool,
    /// `-w`, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<i64>,
    /// `-l`, bytes per write (TCP) or per datagram (UDP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub len: Option<i64>,
    /// `-b`, bit/s per stream (application pacing); 0 or absent is unlimited for TCP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<i64>,
    /// `--fq-rate`, bit/s (3.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqrate: Option<i64>,
    /// `--pacing-timer`, µs (3.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing_timer: Option<i64>,
    /// The burst of `-b RATE/COUNT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<i64>,
    /// UDP GSO (3.21, sent in every UDP test).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso_dg_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gso_bf_size: Option<i64>,
    /// UDP GRO (3.21).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro_bf_size: Option<i64>,
    /// `-S`/`--dscp`: the IP TOS byte.
    #[serde(rename = "TOS", skip_serializing_if = "Option::is_none")]
    pub tos: Option<i64>,
    /// `-L`: the IPv6 flow label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flowlabel: Option<i64>,
    /// `-T`: a prefix for the output lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `--extra-data` (3.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// `-C`: the congestion control algorithm asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// The client's congestion control in use (3.2; informational).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// `--get-server-output`: the server adds its own output to its results (sent as 1).
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_one")]
    pub get_server_output: bool,
    /// `--udp-counters-64bit` (3.1; sent as 1).
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_one")]
    pub udp_counters_64bit: bool,
    /// `--repeating-payload` (3.7; sent as 1).
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_one")]
    pub repeating_payload: bool,
    /// `--no-fq-socket-pacing` (3.1 only, replaced by `fqrate` in 3.2; sent as 1).
    #[serde(skip_serializing_if = "is_false", serialize_with = "json::ser_one")]
    pub no_fq_socket_pacing: bool,
    /// `-Z` (3.11): not 0 asks a sending server for zero copy. Read by value, not presence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<i64>,
    /// `--dont-fragment` (3.10). Read by value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dont_fragment: Option<i64>,
    /// iperf3's RSA authentication token (3.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authtoken: Option<String>,
    /// `--skip-rx-copy` (3.19): a receiving server discards data without copying it. By value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_rx_copy: Option<i64>,
    /// The client's version, e.g. `"3.12"`; informational, no server reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// Keys no version linerate knows sends, as received.
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

/// The flags read by presence (3.17 and earlier), and the type 3.18+ wants for each.
const FLAGS: [(&str, FlagType); 11] = [
    ("tcp", FlagType::Bool),
    ("udp", FlagType::Bool),
    ("sctp", FlagType::Bool),
    ("nodelay", FlagType::Bool),
    ("reverse", FlagType::Bool),
    ("bidirectional", FlagType::Bool),
    ("mptcp", FlagType::Bool),
    ("get_server_output", FlagType::Number),
    ("udp_counters_64bit", FlagType::Number),
    ("repeating_payload", FlagType::Number),
    ("no_fq_socket_pacing", FlagType::Number),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FlagType {
    Bool,
    Number,
}

/// Every key [`Iperf3Params`] has a field for.
const KNOWN: [&str; 40] = [
    "tcp",
    "udp",
    "sctp",
    "omit",
    "server_affinity",
    "time",
    "num",
    "blockcount",
    "MSS",
    "nodelay",
    "parallel",
    "reverse",
    "bidirectional",
    "mptcp",
    "window",
    "len",
    "bandwidth",
    "fqrate",
    "pacing_timer",
    "burst",
    "gso",
    "gso_dg_size",
    "gso_bf_size",
    "gro",
    "gro_bf_size",
    "TOS",
    "flowlabel",
    "title",
    "extra_data",
    "congestion",
    "congestion_used",
    "get_server_output",
    "udp_counters_64bit",
    "repeating_payload",
    "no_fq_socket_pacing",
    "zerocopy",
    "dont_fragment",
    "authtoken",
    "skip_rx_copy",
    "client_version",
];

impl Iperf3Params {
    /// What an iperf3 3.21 client sends for a plain test of this protocol: `-t 10 -P 1`,
    /// TCP's 128 KiB writes or UDP's 1460-byte datagrams at 1 Mbit/s. Without 3.21's GSO keys
    /// (a server without them does not use GSO) and without `client_version`: the client says
    /// what it is.
    pub fn new(protocol: Protocol) -> Iperf3Params {
        let udp = protocol == Protocol::Udp;
        Iperf3Params {
            protocol,
            omit: 0,
            time: Some(i64::from(limits::DEFAULT_TIME_S)),
            num: Some(0),
            blockcount: Some(0),
            parallel: 1,
            len: Some(i64::from(if udp {
                limits::DEFAULT_UDP_LEN
            } else {
                limits::DEFAULT_TCP_LEN
            })),
            bandwidth: udp.then_some(limits::DEFAULT_UDP_RATE_BPS.cast_signed()),
            pacing_timer: Some(i64::from(limits::DEFAULT_PACING_TIMER_US)),
            ..Iperf3Params::default()
        }
    }

    /// Read a parameters message's body (a frame's content).
    pub fn decode(body: &[u8]) -> Result<Iperf3Params, DecodeError> {
        let map = json::object(body)?;
        Iperf3Params::from_object(&map)
    }

    /// The message to send: length and body in one buffer, refused over iperf3's 8 KiB (a
    /// 3.18+ server would refuse it; only a long `title` or `extra_data` gets there).
    pub fn encode(&self) -> Result<Vec<u8>, JsonFrameError> {
        // Plain data with string keys: serializing cannot fail (an empty body would be refused).
        let body = serde_json::to_vec(self).unwrap_or_default();
        frame::encode_frame(&body, PARAMS_MAX)
    }

    fn from_object(map: &Map<String, Value>) -> Result<Iperf3Params, DecodeError> {
        let f = Fields::new(map, "");
        let protocol = if f.present("sctp") {
            Protocol::Sctp
        } else if f.present("udp") {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let unknown = map
            .iter()
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Iperf3Params {
            protocol,
            omit: f.int("omit")?.unwrap_or(0),
            server_affinity: f.int("server_affinity")?,
            time: f.int("time")?,
            num: f.int("num")?,
            blockcount: f.int("blockcount")?,
            mss: f.int("MSS")?,
            nodelay: f.present("nodelay"),
            parallel: f.int("parallel")?.unwrap_or(1),
            reverse: f.present("reverse"),
            bidirectional: f.present("bidirectional"),
            mptcp: f.present("mptcp"),
            window: f.int("window")?,
            len: f.int("len")?,
            bandwidth: f.int("bandwidth")?,
            fqrate: f.int("fqrate")?,
            pacing_timer: f.int("pacing_timer")?,
            burst: f.int("burst")?,
            gso: f.int("gso")?,
            gso_dg_size: f.int("gso_dg_size")?,
            gso_bf_size: f.int("gso_bf_size")?,
            gro: f.int("gro")?,
            gro_bf_size: f.int("gro_bf_size")?,
            tos: f.int("TOS")?,
            flowlabel: f.int("flowlabel")?,
            title: f.string("title")?,
            extra_data: f.string("extra_data")?,
            congestion: f.string("congestion")?,
            congestion_used: f.string("congestion_used")?,
            get_server_output: f.present("get_server_output"),
            udp_counters_64bit: f.present("udp_counters_64bit"),
            repeating_payload: f.present("repeating_payload"),
            no_fq_socket_pacing: f.present("no_fq_socket_pacing"),
            zerocopy: f.int("zerocopy")?,
            dont_fragment: f.int("dont_fragment")?,
            authtoken: f.string("authtoken")?,
            skip_rx_copy: f.int("skip_rx_copy")?,
            client_version: f.string("client_version")?,
            unknown,
        })
    }

    /// The flags in a message whose value is not what iperf3 sends (`true`, or a number for
    /// the number-typed ones): linerate counts them as set, as 3.17 and earlier do; 3.18+
    /// would ignore them. For the server's log.
    pub fn odd_flags(body: &[u8]) -> Vec<&'static str> {
        let Ok(map) = json::object(body) else {
            return Vec::new();
        };
        FLAGS
            .iter()
            .filter(|(key, kind)| match map.get(*key) {
                None => false,
                Some(Value::Bool(true)) => *kind == FlagType::Number,
                Some(Value::Number(_)) => *kind == FlagType::Bool,
                Some(_) => true,
            })
            .map(|(key, _)| *key)
            .collect()
    }

    /// The direction of the test, as the client asked: `-R` and `--bidir` together are
    /// refused by [`Iperf3Params::check`].
    pub fn direction(&self) -> DataFlow {
        if self.bidirectional {
            DataFlow::Bidir
        } else if self.reverse {
            DataFlow::Reverse
        } else {
            DataFlow::Forward
        }
    }

    /// The client's version, when it says one that parses.
    pub fn client_version(&self) -> Option<Version> {
        self.client_version.as_deref().and_then(Version::parse)
    }

    /// Check the parameters against iperf3's own limits (what an iperf3 client checks before
    /// it sends them) and a server's, and read them into a [`Test`]. The first violation
    /// refuses the test, with the code a server sends after SERVER_ERROR.
    pub fn check(&self, limits: &ServerLimits) -> Result<Test, Violation> {
        if self.protocol == Protocol::Sctp && !limits.sctp {
            return Err(Violation::new(
                ErrorCode::IENOSCTP,
                "SCTP tests are not supported by this server",
            ));
        }
        if self.reverse && self.bidirectional {
            return Err(Violation::new(
                ErrorCode::IEREVERSEBIDIR,
                "the test asks for both reverse (-R) and bidirectional (--bidir)",
            ));
        }
        let streams = in_range(self.parallel, 1, limits::MAX_STREAMS).ok_or_else(|| {
            Violation::new(
                ErrorCode::IENUMSTREAMS,
                format!(
                    "{} parallel streams asked for; iperf3 allows 1 to {}",
                    self.parallel,
                    limits::MAX_STREAMS
                ),
            )
        })?;
        if streams > limits.max_streams {
            return Err(Violation::new(
                ErrorCode::IENUMSTREAMS,
                format!(
                    "{streams} parallel streams asked for; this server allows at most {}",
                    limits.max_streams
                ),
            ));
        }
        let Times {
            duration_s,
            omit_s,
            bytes,
            blocks,
        } = self.check_times(limits)?;
        let len = self.check_len()?;
        let Sockets {
            window,
            mss,
            burst,
            tos,
        } = self.check_sockets(limits)?;
        if let Some(name) = &self.congestion {
            if !is_algorithm_name(name) {
                return Err(Violation::new(
                    ErrorCode::IESETCONGESTION,
                    format!(
                        "congestion control \"{}\" (-C) is not an algorithm's name",
                        name.escape_debug()
                    ),
                ));
            }
        }
        let bitrate_bps = non_negative(self.bandwidth, "bandwidth (-b)")?.unwrap_or(0);
        let fq_rate_bps = non_negative(self.fqrate, "fqrate (--fq-rate)")?.filter(|r| *r > 0);
        let pacing_timer_us = non_negative(self.pacing_timer, "pacing_timer")?
            .map(|p| u32::try_from(p).unwrap_or(u32::MAX));
        let direction = self.direction();
        if let Some(max) = limits.max_total_bitrate_bps {
            check_total_rate(streams, direction, bitrate_bps, fq_rate_bps, max)?;
        }
        Ok(Test {
            protocol: self.protocol,
            direction,
            streams,
            duration_s,
            bytes: bytes.filter(|b| *b > 0),
            blocks: blocks.filter(|b| *b > 0),
            omit_s,
            len,
            window,
            bitrate_bps,
            burst,
            fq_rate_bps,
            pacing_timer_us,
            mss,
            nodelay: self.nodelay,
            tos,
            congestion: self.congestion.clone(),
            udp_counters_64bit: self.udp_counters_64bit,
            zerocopy: self.zerocopy.is_some_and(|z| z != 0),
            skip_rx_copy: self.skip_rx_copy.is_some_and(|s| s != 0),
            get_server_output: self.get_server_output,
            repeating_payload: self.repeating_payload,
            client_version: self.client_version(),
        })
    }

    /// The test's end conditions and omitted seconds, against iperf3's limits and the server's
    /// limit on a test's length.
    fn check_times(&self, limits: &ServerLimits) -> Result<Times, Violation> {
        let bytes = non_negative(self.num, "num (-n)")?;
        let blocks = non_negative(self.blockcount, "blockcount (-k)")?;
        let default_time = if bytes.unwrap_or(0) > 0 || blocks.unwrap_or(0) > 0 {
            0
        } else {
            i64::from(limits::DEFAULT_TIME_S)
        };
        let time = self.time.unwrap_or(default_time);
        let duration_s = in_range(time, 0, limits::MAX_TIME_S).ok_or_else(|| {
            Violation::new(
                ErrorCode::IEDURATION,
                format!(
                    "a test of {time} s; iperf3 allows 0 to {} s",
                    limits::MAX_TIME_S
                ),
            )
        })?;
        let omit_s = in_range(self.omit, 0, limits::MAX_OMIT_S).ok_or_else(|| {
            Violation::new(
                ErrorCode::IEOMIT,
                format!(
                    "{} s omitted (-O); iperf3 allows 0 to {} s",
                    self.omit,
                    limits::MAX_OMIT_S
                ),
            )
        })?;
        if let Some(max) = limits.max_duration_s {
            check_duration(
                duration_s,
                omit_s,
                max,
                limits.open_ended,
                self.client_version(),
            )?;
        }
        Ok(Times {
            duration_s,
            omit_s,
            bytes,
            blocks,
        })
    }

    /// The socket options and the burst, each against iperf3's limit (the window also against
    /// the server's).
    fn check_sockets(&self, limits: &ServerLimits) -> Result<Sockets, Violation> {
        let max_window = limits.max_window.min(limits::MAX_WINDOW);
        let window = bounded(
            self.window,
            0,
            max_window,
            ErrorCode::IEBUFSIZE,
            "socket buffer (-w)",
        )?
        .filter(|w| *w > 0);
        let mss =
            bounded(self.mss, 0, limits::MAX_MSS, ErrorCode::IEMSS, "MSS (-M)")?.filter(|m| *m > 0);
        let burst = bounded(
            self.burst,
            0,
            limits::MAX_BURST,
            ErrorCode::IEBURST,
            "burst (-b RATE/COUNT)",
        )?
        .filter(|b| *b > 0);
        let tos = bounded(
            self.tos,
            0,
            limits::MAX_TOS,
            ErrorCode::IEBADTOS,
            "TOS (-S)",
        )?
        .filter(|t| *t > 0)
        .map(|t| t as u8);
        bounded(
            self.flowlabel,
            0,
            limits::MAX_FLOWLABEL,
            ErrorCode::IESETFLOW,
            "flow label (-L)",
        )?;
        bounded(
            self.server_affinity,
            0,
            limits::MAX_AFFINITY,
            ErrorCode::IEAFFINITY,
            "server CPU (-A)",
        )?;
        Ok(Sockets {
            window,
            mss,
            burst,
            tos,
        })
    }

    fn check_len(&self) -> Result<u32, Violation> {
        match self.protocol {
            Protocol::Udp => {
                let len = self.len.unwrap_or(i64::from(limits::DEFAULT_UDP_LEN));
                in_range(len, limits::MIN_UDP_LEN, limits::MAX_UDP_LEN).ok_or_else(|| {
                    Violation::new(
                        ErrorCode::IEUDPBLOCKSIZE,
                        format!(
                            "UDP datagrams of {len} bytes (-l); iperf3 allows {} to {}",
                            limits::MIN_UDP_LEN,
                            limits::MAX_UDP_LEN
                        ),
                    )
                })
            }
            Protocol::Tcp | Protocol::Sctp => {
                let len = self.len.unwrap_or(i64::from(limits::DEFAULT_TCP_LEN));
                in_range(len, 1, limits::MAX_TCP_LEN).ok_or_else(|| {
                    Violation::new(
                        ErrorCode::IEBLOCKSIZE,
                        format!(
                            "writes of {len} bytes (-l); iperf3 allows 1 to {}",
                            limits::MAX_TCP_LEN
                        ),
                    )
                })
            }
        }
    }
}

struct Times {
    duration_s: u32,
    omit_s: u32,
    bytes: Option<u64>,
    blocks: Option<u64>,
}

struct Sockets {
    window: Option<u32>,
    mss: Option<u32>,
    burst: Option<u32>,
    tos: Option<u8>,
}

/// A name the kernel could know: at most 15 bytes (`TCP_CA_NAME_MAX` less its NUL) of letters,
/// digits, `_` and `-`. iperf3 hands any string to `setsockopt(TCP_CONGESTION)` and only warns
/// when the kernel does not know it; a server of ours refuses what cannot be a name, so it never
/// reaches a socket or a log line.
fn is_algorithm_name(name: &str) -> bool {
    (1..=15).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn in_range(v: i64, min: u32, max: u32) -> Option<u32> {
    u32::try_from(v).ok().filter(|v| (min..=max).contains(v))
}

fn non_negative(v: Option<i64>, what: &str) -> Result<Option<u64>, Violation> {
    match v {
        Some(n) if n < 0 => Err(Violation::new(
            ErrorCode::IERECVPARAMS,
            format!("{what} is {n}, a negative amount"),
        )),
        other => Ok(other.map(i64::cast_unsigned)),
    }
}

/// An optional number within `min..=max`, else refused with `code`, naming `what`.
fn bounded(
    v: Option<i64>,
    min: u32,
    max: u32,
    code: ErrorCode,
    what: &str,
) -> Result<Option<u32>, Violation> {
    match v {
        None => Ok(None),
        Some(n) => in_range(n, min, max).map(Some).ok_or_else(|| {
            Violation::new(code, format!("a {what} of {n}; allowed: {min} to {max}"))
        }),
    }
}

/// A server's limit on a test's length. A test without one (`-t 0`, or ended by `-n`/`-k`,
/// which a slow path can stretch without bound) is refused too, as 3.20's
/// `--server-max-duration` does, unless the server ends such tests itself (`open_ended`); its
/// warm-up (`-O`) must still fit. The code is 3.20's IEMAXSERVERTESTDURATIONEXCEEDED (37) for a
/// client that knows it, else IEDURATION (5), which every version prints in words.
fn check_duration(
    duration_s: u32,
    omit_s: u32,
    max_s: u32,
    open_ended: bool,
    client: Option<Version>,
) -> Result<(), Violation> {
    let code =
        if client.is_some_and(|v| ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED.understood_by(v)) {
            ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED
        } else {
            ErrorCode::IEDURATION
        };
    if duration_s == 0 && open_ended && omit_s < max_s {
        return Ok(());
    }
    if duration_s == 0 {
        return Err(Violation::new(
            code,
            format!(
                "a test without a time limit (-t 0, -n or -k); this server allows tests of at \
                 most {max_s} s"
            ),
        ));
    }
    let total = u64::from(duration_s) + u64::from(omit_s);
    if total > u64::from(max_s) {
        return Err(Violation::new(
            code,
            format!(
                "a test of {total} s (-t {duration_s} -O {omit_s}); this server allows at most \
                 {max_s} s"
            ),
        ));
    }
    Ok(())
}

/// A server's limit on a test's total rate (`--server-bitrate-limit`): streams × rate, twice
/// for `--bidir`, and the same for `--fq-rate`. An unpaced test (rate 0) is over any limit;
/// iperf3 lets it through, which makes its limit easy to step around.
fn check_total_rate(
    streams: u32,
    direction: DataFlow,
    bitrate_bps: u64,
    fq_rate_bps: Option<u64>,
    max_bps: u64,
) -> Result<(), Violation> {
    let ways = if direction == DataFlow::Bidir { 2 } else { 1 };
    let per_stream = match (bitrate_bps, fq_rate_bps) {
        (0, None) => {
            return Err(Violation::new(
                ErrorCode::IETOTALRATE,
                format!(
                    "an unpaced test (no -b); this server allows at most {max_bps} bit/s in \
                     total: ask for -b"
                ),
            ))
        }
        (0, Some(fq)) => fq,
        (b, fq) => b.max(fq.unwrap_or(0)),
    };
    let total = u128::from(per_stream) * u128::from(streams) * ways;
    if total > u128::from(max_bps) {
        return Err(Violation::new(
            ErrorCode::IETOTALRATE,
            format!("{total} bit/s in total asked for; this server allows at most {max_bps}"),
        ));
    }
    Ok(())
}

/// A server's limits, over iperf3's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// At most this many streams per direction (iperf3: 128).
    pub max_streams: u32,
    /// At most this many seconds of test and omitted warm-up together; `None`: iperf3's own
    /// 86400 s for the test alone, and tests without a time limit are allowed.
    pub max_duration_s: Option<u32>,
    /// The largest socket buffer (iperf3: 512 MiB).
    pub max_window: u32,
    /// The largest total rate, bit/s (`--server-bitrate-limit`).
    pub max_total_bitrate_bps: Option<u64>,
    /// With `max_duration_s`: a test without a time limit of its own (`-t 0`, `-n`, `-k`) is
    /// accepted, and the server ends it at `max_duration_s` (iperf3 3.20's
    /// `--server-max-duration` refuses it instead).
    pub open_ended: bool,
    /// Whether SCTP tests are allowed.
    pub sctp: bool,
}

impl ServerLimits {
    /// iperf3's own limits, with SCTP.
    pub const IPERF3: ServerLimits = ServerLimits {
        max_streams: limits::MAX_STREAMS,
        max_duration_s: None,
        max_window: limits::MAX_WINDOW,
        max_total_bitrate_bps: None,
        open_ended: false,
        sctp: true,
    };
}

impl Default for ServerLimits {
    fn default() -> ServerLimits {
        ServerLimits::IPERF3
    }
}

/// Why a test is refused: the code to send after SERVER_ERROR, and the reason in words for the
/// server's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub code: ErrorCode,
    pub reason: String,
}

impl Violation {
    fn new(code: ErrorCode, reason: impl Into<String>) -> Violation {
        Violation {
            code,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.reason, self.code.cite())
    }
}

impl std::error::Error for Violation {}

/// A test a server can run: the parameters checked and in the types they have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Test {
    pub protocol: Protocol,
    pub direction: DataFlow,
    /// Streams per direction (`-P`); `--bidir` has twice as many connections.
    pub streams: u32,
    /// Seconds of test after the omitted warm-up; 0 when the client ends it on bytes or blocks
    /// (or never: `-t 0`). A 3.1 client that sends no `time` gets iperf3's default of 10 s,
    /// or 0 when it sends `num` or `blockcount`.
    pub duration_s: u32,
    /// `-n`: the client ends the test after this many bytes.
    pub bytes: Option<u64>,
    /// `-k`: the client ends the test after this many blocks.
    pub blocks: Option<u64>,
    /// Seconds left out of the figures at the start (`-O`).
    pub omit_s: u32,
    /// Bytes per write (TCP) or per datagram (UDP): what the client sent, else iperf3's
    /// default.
    pub len: u32,
    /// Socket buffer size asked for, bytes.
    pub window: Option<u32>,
    /// Application pacing per stream, bit/s; 0 is unpaced.
    pub bitrate_bps: u64,
    /// Datagrams or writes sent back to back per pacing tick.
    pub burst: Option<u32>,
    /// `SO_MAX_PACING_RATE`, bit/s.
    pub fq_rate_bps: Option<u64>,
    /// The pacing timer, µs.
    pub pacing_timer_us: Option<u32>,
    pub mss: Option<u32>,
    pub nodelay: bool,
    pub tos: Option<u8>,
    /// The congestion control asked for, a plausible name (checked); iperf3 only warns when the
    /// server lacks it.
    pub congestion: Option<String>,
    /// 64-bit sequence numbers in the UDP header.
    pub udp_counters_64bit: bool,
    /// A sending server uses zero copy.
    pub zerocopy: bool,
    /// A receiving server discards data without copying it (`MSG_TRUNC`).
    pub skip_rx_copy: bool,
    /// The server's output goes into its results.
    pub get_server_output: bool,
    /// The payload is `0123456789…` rather than random bytes.
    pub repeating_payload: bool,
    pub client_version: Option<Version>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3.12 client's `-t 1`, as captured (tests/transcripts/3.12/tcp.txt).
    const TCP_3_12: &str = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;

    fn check(json: &str) -> Result<Test, Violation> {
        Iperf3Params::decode(json.as_bytes())
            .unwrap()
            .check(&ServerLimits::IPERF3)
    }

    #[test]
    fn decodes_and_reencodes_a_real_client() {
        let p = Iperf3Params::decode(TCP_3_12.as_bytes()).unwrap();
        assert_eq!(p.protocol, Protocol::Tcp);
        assert_eq!(p.time, Some(1));
        assert_eq!(p.len, Some(131_072));
        assert_eq!(p.client_version(), Some(Version::new(3, 12, 0)));
        assert!(p.unknown.is_empty());
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            TCP_3_12,
            "same keys, same order"
        );
        let framed = p.encode().unwrap();
        assert_eq!(&framed[..4], &(TCP_3_12.len() as u32).to_be_bytes());
    }

    #[test]
    fn new_matches_what_3_21_sends() {
        let mut p = Iperf3Params::new(Protocol::Tcp);
        p.time = Some(1);
        p.client_version = Some("3.12".into());
        assert_eq!(serde_json::to_string(&p).unwrap(), TCP_3_12);
        let udp = Iperf3Params::new(Protocol::Udp);
        let t = udp.check(&ServerLimits::IPERF3).unwrap();
        assert_eq!((t.len, t.bitrate_bps, t.duration_s), (1460, 1_048_576, 10));
    }

    #[test]
    fn flags_are_emitted_only_when_true() {
        let mut p = Iperf3Params::new(Protocol::Tcp);
        let s = serde_json::to_string(&p).unwrap();
        for flag in [
            "reverse",
            "bidirectional",
            "nodelay",
            "get_server_output",
            "mptcp",
        ] {
            assert!(!s.contains(flag), "{flag} in {s}");
        }
        p.reverse = true;
        p.get_server_output = true;
        p.udp_counters_64bit = true;
        let s = serde_json::to_string(&p).unwrap();
        assert!(s.contains(r#""reverse":true"#), "{s}");
        assert!(s.contains(r#""get_server_output":1"#), "{s}");
        assert!(s.contains(r#""udp_counters_64bit":1"#), "{s}");
        assert!(!s.contains("false"), "{s}");
    }

    #[test]
    fn presence_is_truth() {
        for value in ["true", "false", "null", "0", "\"no\"", "[]"] {
            let p = Iperf3Params::decode(
                format!(
                    r#"{{"tcp":true,"parallel":1,"reverse":{value},"get_server_output":{value}}}"#
                )
                .as_bytes(),
            )
            .unwrap();
            assert!(p.reverse, "reverse: {value}");
            assert!(p.get_server_output, "get_server_output: {value}");
            assert_eq!(p.direction(), DataFlow::Reverse);
        }
        let body = br#"{"reverse":false,"nodelay":true,"get_server_output":true,"udp_counters_64bit":1,"bidirectional":1}"#;
        assert_eq!(
            Iperf3Params::odd_flags(body),
            vec!["reverse", "bidirectional", "get_server_output"]
        );
        assert!(Iperf3Params::odd_flags(TCP_3_12.as_bytes()).is_empty());
    }

    #[test]
    fn protocol_precedence_is_iperf3s() {
        let p = |s: &str| Iperf3Params::decode(s.as_bytes()).unwrap().protocol;
        assert_eq!(p(r#"{"udp":true}"#), Protocol::Udp);
        assert_eq!(p(r#"{"tcp":true,"udp":true}"#), Protocol::Udp);
        assert_eq!(p(r#"{"sctp":true,"udp":true}"#), Protocol::Sctp);
        assert_eq!(p("{}"), Protocol::Tcp);
    }

    #[test]
    fn numbers_as_iperf3_reads_them() {
        let p = Iperf3Params::decode(br#"{"tcp":true,"time":10.9,"parallel":2,"window":18446744073709551615,"server_affinity":3}"#).unwrap();
        assert_eq!(p.time, Some(10));
        assert_eq!(p.window, Some(-1), "3.12's unsigned -1");
        let err = Iperf3Params::decode(br#"{"tcp":true,"time":"10"}"#).unwrap_err();
        assert_eq!(
            err,
            DecodeError::WrongType {
                key: "time".into(),
                expected: "a number",
                found: "a string"
            }
        );
        assert!(matches!(
            Iperf3Params::decode(br#"{"title":5}"#),
            Err(DecodeError::WrongType { .. })
        ));
        assert!(matches!(
            Iperf3Params::decode(b"[]"),
            Err(DecodeError::NotObject { .. })
        ));
        assert!(matches!(
            Iperf3Params::decode(b"{\"tcp\":tru"),
            Err(DecodeError::NotJson(_))
        ));
    }

    #[test]
    fn unknown_keys_are_kept_and_resent() {
        let body = r#"{"tcp":true,"omit":0,"parallel":1,"future_flag":1,"nested":{"a":[1]}}"#;
        let p = Iperf3Params::decode(body.as_bytes()).unwrap();
        assert_eq!(p.unknown.len(), 2);
        let again = Iperf3Params::decode(&serde_json::to_vec(&p).unwrap()).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn every_key_of_the_a6_table_has_a_field() {
        let all = r#"{"sctp":true,"omit":1,"server_affinity":2,"time":3,"num":4,"blockcount":5,"MSS":6,"nodelay":true,"parallel":7,"reverse":true,"bidirectional":true,"mptcp":true,"window":8,"len":9,"bandwidth":10,"fqrate":11,"pacing_timer":12,"burst":13,"gso":1,"gso_dg_size":14,"gso_bf_size":15,"gro":1,"gro_bf_size":16,"TOS":17,"flowlabel":18,"title":"t","extra_data":"e","congestion":"bbr","congestion_used":"cubic","get_server_output":1,"udp_counters_64bit":1,"repeating_payload":1,"no_fq_socket_pacing":1,"zerocopy":1,"dont_fragment":1,"authtoken":"tok","skip_rx_copy":1,"client_version":"3.21"}"#;
        let p = Iperf3Params::decode(all.as_bytes()).unwrap();
        assert!(p.unknown.is_empty(), "{:?}", p.unknown);
        assert_eq!(
            serde_json::from_str::<Value>(&serde_json::to_string(&p).unwrap())
                .unwrap()
                .as_object()
                .unwrap()
                .len(),
            KNOWN.len() - 2,
            "every key back but tcp and udp"
        );
        assert_eq!(p.protocol, Protocol::Sctp);
    }

    #[test]
    fn iperf3s_limits_with_their_codes() {
        let refused = |json: &str| check(json).unwrap_err().code;
        let base = |extra: &str| {
            format!(r#"{{"tcp":true,"omit":0,"time":10,"parallel":1,"len":131072{extra}}}"#)
        };
        assert!(check(&base("")).is_ok());
        assert_eq!(
            refused(&base(r#","parallel":129"#)),
            ErrorCode::IENUMSTREAMS
        );
        assert_eq!(refused(&base(r#","parallel":0"#)), ErrorCode::IENUMSTREAMS);
        assert!(check(&base(r#","parallel":128"#)).is_ok());
        assert_eq!(refused(&base(r#","time":86401"#)), ErrorCode::IEDURATION);
        assert_eq!(refused(&base(r#","time":-1"#)), ErrorCode::IEDURATION);
        assert!(check(&base(r#","time":86400"#)).is_ok());
        assert_eq!(refused(&base(r#","omit":601"#)), ErrorCode::IEOMIT);
        assert_eq!(refused(&base(r#","len":1048577"#)), ErrorCode::IEBLOCKSIZE);
        assert_eq!(refused(&base(r#","len":0"#)), ErrorCode::IEBLOCKSIZE);
        assert_eq!(
            refused(&base(r#","window":536870913"#)),
            ErrorCode::IEBUFSIZE
        );
        assert_eq!(
            refused(&base(r#","window":18446744073709551615"#)),
            ErrorCode::IEBUFSIZE
        );
        assert_eq!(refused(&base(r#","MSS":32768"#)), ErrorCode::IEMSS);
        assert_eq!(refused(&base(r#","burst":1001"#)), ErrorCode::IEBURST);
        assert_eq!(refused(&base(r#","TOS":256"#)), ErrorCode::IEBADTOS);
        assert_eq!(
            refused(&base(r#","flowlabel":1048576"#)),
            ErrorCode::IESETFLOW
        );
        assert_eq!(
            refused(&base(r#","server_affinity":1025"#)),
            ErrorCode::IEAFFINITY
        );
        assert_eq!(
            refused(&base(r#","reverse":true,"bidirectional":true"#)),
            ErrorCode::IEREVERSEBIDIR
        );
        assert_eq!(refused(&base(r#","num":-5"#)), ErrorCode::IERECVPARAMS);
        assert_eq!(
            refused(&base(r#","congestion":"bbr; rm -rf /""#)),
            ErrorCode::IESETCONGESTION
        );
        assert_eq!(
            refused(&base(r#","congestion":"a_very_long_name_x""#)),
            ErrorCode::IESETCONGESTION
        );
        assert_eq!(
            refused(&base(r#","congestion":"""#)),
            ErrorCode::IESETCONGESTION
        );
        assert!(check(&base(r#","congestion":"cubic""#)).is_ok());
        assert!(check(&base(r#","congestion":"bbr2-x_1""#)).is_ok());
        assert_eq!(
            refused(&base(r#","bandwidth":-5"#)),
            ErrorCode::IERECVPARAMS
        );
        let udp = |len: i64| format!(r#"{{"udp":true,"parallel":1,"len":{len}}}"#);
        assert_eq!(refused(&udp(15)), ErrorCode::IEUDPBLOCKSIZE);
        assert_eq!(refused(&udp(65508)), ErrorCode::IEUDPBLOCKSIZE);
        assert!(check(&udp(16)).is_ok());
        assert!(check(&udp(65507)).is_ok());
        let sctp = Iperf3Params::decode(br#"{"sctp":true,"parallel":1}"#).unwrap();
        let no_sctp = ServerLimits {
            sctp: false,
            ..ServerLimits::IPERF3
        };
        assert_eq!(sctp.check(&no_sctp).unwrap_err().code, ErrorCode::IENOSCTP);
    }

    #[test]
    fn a_test_in_its_types() {
        let t = check(r#"{"udp":true,"omit":2,"time":5,"parallel":4,"bidirectional":true,"len":1400,"bandwidth":100000000,"window":4194304,"TOS":184,"udp_counters_64bit":1,"zerocopy":1,"skip_rx_copy":0,"congestion":"bbr","client_version":"3.21"}"#).unwrap();
        assert_eq!(t.protocol, Protocol::Udp);
        assert_eq!(t.direction, DataFlow::Bidir);
        assert_eq!((t.streams, t.duration_s, t.omit_s, t.len), (4, 5, 2, 1400));
        assert_eq!(t.window, Some(4_194_304));
        assert_eq!(t.bitrate_bps, 100_000_000);
        assert_eq!(t.tos, Some(184));
        assert!(t.udp_counters_64bit && t.zerocopy && !t.skip_rx_copy);
        assert_eq!(t.congestion.as_deref(), Some("bbr"));
        assert_eq!(t.client_version, Some(Version::new(3, 21, 0)));
        // 3.1: no time, a byte count: the test has no time of its own.
        let t = check(r#"{"tcp":true,"omit":0,"num":1000000,"parallel":1,"len":131072}"#).unwrap();
        assert_eq!((t.duration_s, t.bytes), (0, Some(1_000_000)));
        // 3.1 with neither: iperf3's default.
        let t = check(r#"{"tcp":true,"omit":0,"parallel":1}"#).unwrap();
        assert_eq!((t.duration_s, t.len), (10, 131_072));
    }

    #[test]
    fn a_servers_limits() {
        let limits = ServerLimits {
            max_streams: 8,
            max_duration_s: Some(60),
            max_window: 16 << 20,
            max_total_bitrate_bps: Some(10_000_000_000),
            open_ended: false,
            sctp: false,
        };
        let p = |extra: &str| {
            Iperf3Params::decode(format!(r#"{{"tcp":true,"omit":0,"time":10,"parallel":1,"bandwidth":1000000000{extra}}}"#).as_bytes()).unwrap()
        };
        assert!(p("").check(&limits).is_ok());
        let v = p(r#","parallel":9"#).check(&limits).unwrap_err();
        assert_eq!(v.code, ErrorCode::IENUMSTREAMS);
        assert_eq!(
            v.reason,
            "9 parallel streams asked for; this server allows at most 8"
        );
        // Over the length: 37 for a client that knows it, else 5.
        let v = p(r#","time":55,"omit":10,"client_version":"3.20""#)
            .check(&limits)
            .unwrap_err();
        assert_eq!(v.code, ErrorCode::IEMAXSERVERTESTDURATIONEXCEEDED);
        assert_eq!(
            v.reason,
            "a test of 65 s (-t 55 -O 10); this server allows at most 60 s"
        );
        let v = p(r#","time":61,"client_version":"3.12""#)
            .check(&limits)
            .unwrap_err();
        assert_eq!(v.code, ErrorCode::IEDURATION);
        let v = p(r#","time":0"#).check(&limits).unwrap_err();
        assert_eq!(v.code, ErrorCode::IEDURATION, "no time limit, no version");
        // A server that ends open-ended tests itself takes them, within its limit.
        let open = ServerLimits {
            open_ended: true,
            ..limits.clone()
        };
        let t = p(r#","time":0,"num":1000000"#).check(&open).unwrap();
        assert_eq!((t.duration_s, t.bytes), (0, Some(1_000_000)));
        assert!(p(r#","time":0,"omit":5"#).check(&open).is_ok());
        assert_eq!(
            p(r#","time":0,"omit":60"#).check(&open).unwrap_err().code,
            ErrorCode::IEDURATION,
            "the warm-up alone fills the limit"
        );
        assert_eq!(
            p(r#","time":61"#).check(&open).unwrap_err().code,
            ErrorCode::IEDURATION
        );
        assert_eq!(
            p(r#","window":16777217"#).check(&limits).unwrap_err().code,
            ErrorCode::IEBUFSIZE
        );
        // Rate: 8 × 1 Gbit/s is 8 of 10 allowed; bidir doubles it.
        assert!(p(r#","parallel":8"#).check(&limits).is_ok());
        let v = p(r#","parallel":8,"bidirectional":true"#)
            .check(&limits)
            .unwrap_err();
        assert_eq!(v.code, ErrorCode::IETOTALRATE);
        assert_eq!(v.to_string(), "16000000000 bit/s in total asked for; this server allows at most 10000000000 (iperf3 error 27, IETOTALRATE)");
        let v = p(r#","bandwidth":0"#).check(&limits).unwrap_err();
        assert_eq!(v.code, ErrorCode::IETOTALRATE, "unpaced");
        assert!(p(r#","bandwidth":0,"fqrate":1000000"#)
            .check(&limits)
            .is_ok());
        assert_eq!(ServerLimits::default(), ServerLimits::IPERF3);
    }
}
