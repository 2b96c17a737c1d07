//! The results both ends exchange at EXCHANGE_RESULTS (`send_results`/`get_results`): the
//! client sends its own, then reads the server's.
//!
//! Each end lists **all** its streams with what it did on each; the other end pairs them by id
//! and reads each entry by its own role on that stream ([`StreamResults::peer_figures`]).
//!
//! What every version since 3.1 requires (else the reader fails with IERECVRESULTS, 117):
//! `cpu_util_total`, `cpu_util_user`, `cpu_util_system` and `sender_has_retransmits` as numbers,
//! `streams` as an array, and in each stream `id`, `bytes`, `retransmits`, `jitter`, `errors` and
//! `packets` as numbers. Optional: `start_time`/`end_time` (3.2+), `omitted_errors` with
//! `omitted_packets` (3.14+; both or neither, else IERECVRESULTS), `congestion_used`, and
//! `server_output_json` or `server_output_text` (the server's own output, when the client sent
//! `get_server_output`).

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::frame::{self, JsonFrameError};
use crate::json::{self, ser_f64, DecodeError, Fields};
use crate::streams::{Role, StreamId};

/// `sender_has_retransmits`: what the sending end can say about retransmissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SenderRetransmits {
    /// −1: this end only receives (iperf3's RECEIVER mode), so it has none to report.
    Receiver,
    /// 0: it sends, without retransmission counts (UDP, or no TCP_INFO).
    Unknown,
    /// 1: it sends TCP, with TCP_INFO's retransmission counts.
    Known,
}

impl SenderRetransmits {
    pub const fn value(self) -> i64 {
        match self {
            SenderRetransmits::Receiver => -1,
            SenderRetransmits::Unknown => 0,
            SenderRetransmits::Known => 1,
        }
    }

    pub const fn from_value(v: i64) -> Option<SenderRetransmits> {
        match v {
            -1 => Some(SenderRetransmits::Receiver),
            0 => Some(SenderRetransmits::Unknown),
            1 => Some(SenderRetransmits::Known),
            _ => None,
        }
    }
}

impl Serialize for SenderRetransmits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.value())
    }
}

/// The UDP counts of the omitted seconds (3.14+), sent together or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Omitted {
    /// `omitted_errors`: datagrams lost during the omitted seconds.
    pub errors: i64,
    /// `omitted_packets`: the highest sequence number (receiver) or datagrams sent (sender)
    /// when the omitted seconds ended.
    pub packets: i64,
}

/// One stream as one end saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamResults {
    pub id: StreamId,
    /// Bytes this end moved on it after the omitted seconds: sent (sender) or received
    /// (receiver).
    pub bytes: u64,
    /// TCP retransmissions (a sender with TCP_INFO); −1 when it has none to say.
    pub retransmits: i64,
    /// UDP jitter, **seconds** (RFC 1889's smoothed transit-time difference; a receiver's).
    pub jitter: f64,
    /// UDP datagrams lost, gap-based (a receiver's; a sender says 0).
    pub errors: i64,
    pub omitted: Option<Omitted>,
    /// UDP: datagrams sent (sender), or the highest sequence number seen (receiver).
    pub packets: i64,
    /// Seconds since the stream's start when it started counting (always 0 from iperf3).
    pub start_time: Option<f64>,
    /// Seconds from the stream's start to its end.
    pub end_time: Option<f64>,
}

impl Serialize for StreamResults {
    /// In 3.21's order of keys, the omitted pair interleaved as iperf3 writes it.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct F(f64);
        impl Serialize for F {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                ser_f64(&self.0, s)
            }
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id.0)?;
        m.serialize_entry("bytes", &self.bytes)?;
        m.serialize_entry("retransmits", &self.retransmits)?;
        m.serialize_entry("jitter", &F(self.jitter))?;
        m.serialize_entry("errors", &self.errors)?;
        if let Some(o) = self.omitted {
            m.serialize_entry("omitted_errors", &o.errors)?;
        }
        m.serialize_entry("packets", &self.packets)?;
        if let Some(o) = self.omitted {
            m.serialize_entry("omitted_packets", &o.packets)?;
        }
        if let Some(t) = self.start_time {
            m.serialize_entry("start_time", &F(t))?;
        }
        if let Some(t) = self.end_time {
            m.serialize_entry("end_time", &F(t))?;
        }
        m.end()
    }
}

/// What the other end's entry for a stream says, read by this end's role on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeerFigures {
    /// This end sent; the peer received.
    FromReceiver {
        bytes: u64,
        /// Seconds.
        jitter: f64,
        /// Gap-based loss, datagrams.
        errors: i64,
        /// The highest sequence number the peer saw.
        packets: i64,
        omitted: Option<Omitted>,
        /// The peer's time on the stream (`end_time − start_time`), when it says.
        seconds: Option<f64>,
    },
    /// This end received; the peer sent.
    FromSender {
        bytes: u64,
        /// `None` when the sender has no count (−1).
        retransmits: Option<u64>,
        /// Datagrams sent.
        packets: i64,
        omitted_packets: Option<i64>,
        seconds: Option<f64>,
    },
}

impl StreamResults {
    /// Read the other end's entry for a stream on which this end is `mine`.
    pub fn peer_figures(&self, mine: Role) -> PeerFigures {
        let seconds = match (self.start_time, self.end_time) {
            (Some(s), Some(e)) => Some(e - s),
            _ => None,
        };
        match mine {
            Role::Sender => PeerFigures::FromReceiver {
                bytes: self.bytes,
                jitter: self.jitter,
                errors: self.errors,
                packets: self.packets,
                omitted: self.omitted,
                seconds,
            },
            Role::Receiver => PeerFigures::FromSender {
                bytes: self.bytes,
                retransmits: u64::try_from(self.retransmits).ok(),
                packets: self.packets,
                omitted_packets: self.omitted.map(|o| o.packets),
                seconds,
            },
        }
    }
}

/// One end's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    /// The whole process's CPU over the test, user + system, in percent of one core (can exceed
    /// 100).
    #[serde(serialize_with = "ser_f64")]
    pub cpu_util_total: f64,
    #[serde(serialize_with = "ser_f64")]
    pub cpu_util_user: f64,
    #[serde(serialize_with = "ser_f64")]
    pub cpu_util_system: f64,
    pub sender_has_retransmits: SenderRetransmits,
    /// This end's congestion control in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    /// The server's `-J` report, when the client asked for it (any JSON; its objects' keys come
    /// back sorted, as serde_json keeps them, where iperf3 keeps its own order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<Value>,
    /// The server's text output, when the client asked for it and the server runs without `-J`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    pub streams: Vec<StreamResults>,
    /// Keys no version linerate knows sends, as received.
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

const KNOWN: [&str; 8] = [
    "cpu_util_total",
    "cpu_util_user",
    "cpu_util_system",
    "sender_has_retransmits",
    "congestion_used",
    "server_output_json",
    "server_output_text",
    "streams",
];

/// How the streams in a results message fit the test's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamMismatch {
    /// Ids listed that the test has no stream for (iperf3 fails with IESTREAMID, 208).
    pub unknown: Vec<StreamId>,
    /// The test's streams the message does not list.
    pub missing: Vec<StreamId>,
    /// Ids listed more than once.
    pub repeated: Vec<StreamId>,
}

impl Results {
    /// Read a results message's body (a frame's content).
    pub fn decode(body: &[u8]) -> Result<Results, DecodeError> {
        let map = json::object(body)?;
        let f = Fields::new(&map, "");
        let sender_has_retransmits = {
            let v = f.req_int("sender_has_retransmits")?;
            SenderRetransmits::from_value(v)
                .ok_or_else(|| f.bad("sender_has_retransmits", v, "iperf3 sends -1, 0 or 1"))?
        };
        let streams = match map.get("streams") {
            None => {
                return Err(DecodeError::Missing {
                    key: "streams".into(),
                })
            }
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| stream(i, v))
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(DecodeError::WrongType {
                    key: "streams".into(),
                    expected: "an array",
                    found: json::kind(other),
                })
            }
        };
        Ok(Results {
            cpu_util_total: f.req_float("cpu_util_total")?,
            cpu_util_user: f.req_float("cpu_util_user")?,
            cpu_util_system: f.req_float("cpu_util_system")?,
            sender_has_retransmits,
            congestion_used: f.string("congestion_used")?,
            server_output_json: map.get("server_output_json").cloned(),
            server_output_text: f.string("server_output_text")?,
            streams,
            unknown: map
                .iter()
                .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }

    /// The message to send: length and body in one buffer, refused over `limit` (the limit
    /// the peer reads with; iperf3 has none, [`crate::frame::RESULTS_MAX`] is linerate's).
    pub fn encode(&self, limit: u32) -> Result<Vec<u8>, JsonFrameError> {
        // Plain data with string keys: serializing cannot fail (an empty body would be refused).
        let body = serde_json::to_vec(self).unwrap_or_default();
        frame::encode_frame(&body, limit)
    }

    /// The entry for a stream.
    pub fn stream(&self, id: StreamId) -> Option<&StreamResults> {
        self.streams.iter().find(|s| s.id == id)
    }

    /// Compare the listed streams with the test's. A server before 3.7 asked for `--bidir`
    /// lists only half of them; an unknown id is what iperf3 fails with IESTREAMID.
    pub fn match_streams(&self, expected: &[StreamId]) -> Result<(), StreamMismatch> {
        let mut m = StreamMismatch::default();
        let mut seen: Vec<StreamId> = Vec::with_capacity(self.streams.len());
        for s in &self.streams {
            if !expected.contains(&s.id) {
                m.unknown.push(s.id);
            } else if seen.contains(&s.id) {
                m.repeated.push(s.id);
            }
            seen.push(s.id);
        }
        m.missing = expected
            .iter()
            .copied()
            .filter(|id| !seen.contains(id))
            .collect();
        if m == StreamMismatch::default() {
            Ok(())
        } else {
            Err(m)
        }
    }
}

fn stream(index: usize, v: &Value) -> Result<StreamResults, DecodeError> {
    let path = format!("streams[{index}]");
    let Value::Object(map) = v else {
        return Err(DecodeError::WrongType {
            key: path,
            expected: "an object",
            found: json::kind(v),
        });
    };
    let f = Fields::new(map, &path);
    let id_value = f.req_int("id")?;
    let id = u32::try_from(id_value)
        .ok()
        .filter(|id| *id > 0)
        .map(StreamId)
        .ok_or_else(|| f.bad("id", id_value, "not a stream id"))?;
    let bytes_value = f.req_int("bytes")?;
    let bytes = u64::try_from(bytes_value)
        .map_err(|_| f.bad("bytes", bytes_value, "a negative byte count"))?;
    let omitted = match (f.int("omitted_errors")?, f.int("omitted_packets")?) {
        (Some(errors), Some(packets)) => Some(Omitted { errors, packets }),
        (None, None) => None,
        _ => return Err(DecodeError::OmittedPair { index }),
    };
    Ok(StreamResults {
        id,
        bytes,
        retransmits: f.req_int("retransmits")?,
        jitter: f.req_float("jitter")?,
        errors: f.req_int("errors")?,
        omitted,
        packets: f.req_int("packets")?,
        start_time: f.float("start_time")?,
        end_time: f.float("end_time")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3.21 server's results of a UDP test with 64-bit counters (tests/transcripts/3.21/udp64.txt).
    const UDP_3_21: &str = r#"{"cpu_util_total":0.83478222659858459,"cpu_util_user":0,"cpu_util_system":0.83458249404047979,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1251600,"retransmits":-1,"jitter":4.1230485064997612e-05,"errors":0,"omitted_errors":0,"packets":894,"omitted_packets":0,"start_time":0,"end_time":1.001309}]}"#;
    /// A 3.12 server's, TCP, with its unsigned -1.
    const TCP_3_12: &str = r#"{"cpu_util_total":17.371733314187189,"cpu_util_user":0.42739773018498967,"cpu_util_system":16.944136145024046,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":672920521,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.002774}]}"#;
    /// A 3.1.3 client's: no times, no omitted counts.
    const TCP_3_1_3: &str = r#"{"cpu_util_total":3.5,"cpu_util_user":0.5,"cpu_util_system":3,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":1000,"retransmits":7,"jitter":0,"errors":0,"packets":0}]}"#;

    #[test]
    fn decodes_every_generation() {
        let r = Results::decode(UDP_3_21.as_bytes()).unwrap();
        assert_eq!(r.sender_has_retransmits, SenderRetransmits::Receiver);
        let s = &r.streams[0];
        assert_eq!((s.id, s.bytes, s.packets), (StreamId(1), 1_251_600, 894));
        assert_eq!(
            s.omitted,
            Some(Omitted {
                errors: 0,
                packets: 0
            })
        );
        assert!((s.jitter - 4.123e-5).abs() < 1e-8);
        assert_eq!(s.end_time, Some(1.001_309));

        let r = Results::decode(TCP_3_12.as_bytes()).unwrap();
        assert_eq!(
            r.sender_has_retransmits,
            SenderRetransmits::Receiver,
            "unsigned -1"
        );
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.congestion_used.as_deref(), Some("bbr"));
        assert_eq!(r.streams[0].omitted, None);

        let r = Results::decode(TCP_3_1_3.as_bytes()).unwrap();
        assert_eq!(r.sender_has_retransmits, SenderRetransmits::Known);
        assert_eq!(
            (r.streams[0].start_time, r.streams[0].end_time),
            (None, None)
        );
    }

    #[test]
    fn reencodes_in_iperf3s_shape() {
        for body in [UDP_3_21, TCP_3_1_3] {
            let r = Results::decode(body.as_bytes()).unwrap();
            let again = serde_json::to_string(&r).unwrap();
            let keys = |s: &str| -> Vec<String> {
                s.split('"')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_string)
                    .collect()
            };
            assert_eq!(keys(&again), keys(body), "{again}");
            assert_eq!(Results::decode(again.as_bytes()).unwrap(), r);
        }
        // 3.12's unsigned -1 goes back out signed.
        let r = Results::decode(TCP_3_12.as_bytes()).unwrap();
        let again = serde_json::to_string(&r).unwrap();
        assert!(again.contains(r#""sender_has_retransmits":-1"#), "{again}");
        assert!(again.contains(r#""retransmits":-1"#), "{again}");
        assert!(
            again.contains(r#""jitter":0,"#),
            "whole numbers as integers: {again}"
        );
    }

    #[test]
    fn required_keys() {
        let full: Value = serde_json::from_str(UDP_3_21).unwrap();
        for key in [
            "cpu_util_total",
            "cpu_util_user",
            "cpu_util_system",
            "sender_has_retransmits",
            "streams",
        ] {
            let mut v = full.clone();
            v.as_object_mut().unwrap().remove(key);
            assert_eq!(
                Results::decode(v.to_string().as_bytes()).unwrap_err(),
                DecodeError::Missing { key: key.into() }
            );
        }
        for key in ["id", "bytes", "retransmits", "jitter", "errors", "packets"] {
            let mut v = full.clone();
            v["streams"][0].as_object_mut().unwrap().remove(key);
            assert_eq!(
                Results::decode(v.to_string().as_bytes()).unwrap_err(),
                DecodeError::Missing {
                    key: format!("streams[0].{key}")
                }
            );
        }
        for key in ["start_time", "end_time", "congestion_used"] {
            let mut v = full.clone();
            v["streams"][0].as_object_mut().unwrap().remove(key);
            v.as_object_mut().unwrap().remove(key);
            assert!(
                Results::decode(v.to_string().as_bytes()).is_ok(),
                "{key} is optional"
            );
        }
    }

    #[test]
    fn omitted_both_or_neither() {
        let full: Value = serde_json::from_str(UDP_3_21).unwrap();
        for key in ["omitted_errors", "omitted_packets"] {
            let mut v = full.clone();
            v["streams"][0].as_object_mut().unwrap().remove(key);
            assert_eq!(
                Results::decode(v.to_string().as_bytes()).unwrap_err(),
                DecodeError::OmittedPair { index: 0 }
            );
        }
        let mut v = full.clone();
        v["streams"][0]
            .as_object_mut()
            .unwrap()
            .remove("omitted_errors");
        v["streams"][0]
            .as_object_mut()
            .unwrap()
            .remove("omitted_packets");
        assert_eq!(
            Results::decode(v.to_string().as_bytes()).unwrap().streams[0].omitted,
            None
        );
    }

    #[test]
    fn sender_has_retransmits_values() {
        let with = |v: &str| {
            Results::decode(format!(r#"{{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":{v},"streams":[]}}"#).as_bytes())
        };
        assert_eq!(
            with("-1").unwrap().sender_has_retransmits,
            SenderRetransmits::Receiver
        );
        assert_eq!(
            with("0").unwrap().sender_has_retransmits,
            SenderRetransmits::Unknown
        );
        assert_eq!(
            with("1").unwrap().sender_has_retransmits,
            SenderRetransmits::Known
        );
        assert_eq!(
            with("18446744073709551615").unwrap().sender_has_retransmits,
            SenderRetransmits::Receiver
        );
        assert!(matches!(with("2"), Err(DecodeError::BadValue { .. })));
        assert!(matches!(with("\"1\""), Err(DecodeError::WrongType { .. })));
        for v in [-1, 0, 1] {
            assert_eq!(SenderRetransmits::from_value(v).unwrap().value(), v);
        }
    }

    #[test]
    fn hostile_values() {
        let base = |stream: &str| {
            format!(
                r#"{{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{stream}]}}"#
            )
        };
        let s = |extra: &str| {
            base(&format!(
                r#"{{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0{extra}}}"#
            ))
        };
        assert!(Results::decode(s("").as_bytes()).is_ok());
        assert!(matches!(
            Results::decode(s(r#","bytes":-1"#).as_bytes()),
            Err(DecodeError::BadValue { .. })
        ));
        assert!(matches!(
            Results::decode(s(r#","id":0"#).as_bytes()),
            Err(DecodeError::BadValue { .. })
        ));
        assert!(matches!(
            Results::decode(s(r#","id":4294967296"#).as_bytes()),
            Err(DecodeError::BadValue { .. })
        ));
        assert!(matches!(
            Results::decode(base("5").as_bytes()),
            Err(DecodeError::WrongType { .. })
        ));
        let not_array = base("").replace("[]", "{}");
        assert!(
            matches!(
                Results::decode(not_array.as_bytes()),
                Err(DecodeError::WrongType { .. })
            ),
            "{not_array}"
        );
        assert!(matches!(
            Results::decode(b"null"),
            Err(DecodeError::NotObject { found: "null" })
        ));
    }

    #[test]
    fn server_output_and_unknown_keys() {
        let body = r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":-1,"server_output_json":{"start":{"version":"iperf 3.21"}},"streams":[],"later":true}"#;
        let r = Results::decode(body.as_bytes()).unwrap();
        assert_eq!(
            r.server_output_json.as_ref().unwrap()["start"]["version"],
            "iperf 3.21"
        );
        assert_eq!(r.unknown.len(), 1);
        let text = r#"{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":-1,"server_output_text":"Accepted connection\n","streams":[]}"#;
        assert_eq!(
            Results::decode(text.as_bytes())
                .unwrap()
                .server_output_text
                .as_deref(),
            Some("Accepted connection\n")
        );
    }

    #[test]
    fn reading_the_peers_entry() {
        let r = Results::decode(UDP_3_21.as_bytes()).unwrap();
        // This end sent on stream 1; the server's entry is the receiver's.
        let PeerFigures::FromReceiver {
            bytes,
            packets,
            errors,
            seconds,
            ..
        } = r.streams[0].peer_figures(Role::Sender)
        else {
            panic!()
        };
        assert_eq!((bytes, packets, errors), (1_251_600, 894, 0));
        assert_eq!(seconds, Some(1.001_309));
        let r = Results::decode(TCP_3_12.as_bytes()).unwrap();
        let PeerFigures::FromSender { retransmits, .. } = r.streams[0].peer_figures(Role::Receiver)
        else {
            panic!()
        };
        assert_eq!(retransmits, None, "-1: none to say");
        let r = Results::decode(TCP_3_1_3.as_bytes()).unwrap();
        let PeerFigures::FromSender {
            retransmits,
            seconds,
            ..
        } = r.streams[0].peer_figures(Role::Receiver)
        else {
            panic!()
        };
        assert_eq!((retransmits, seconds), (Some(7), None));
    }

    #[test]
    fn matching_streams() {
        let r = Results::decode(TCP_3_1_3.as_bytes()).unwrap();
        assert_eq!(r.match_streams(&[StreamId(1)]), Ok(()));
        // --bidir to a server before 3.7: it lists one stream where the test has two.
        assert_eq!(
            r.match_streams(&[StreamId(1), StreamId(3)]),
            Err(StreamMismatch {
                missing: vec![StreamId(3)],
                ..Default::default()
            })
        );
        let mut twice = r.clone();
        twice.streams.push(r.streams[0].clone());
        twice.streams.push(StreamResults {
            id: StreamId(9),
            ..r.streams[0].clone()
        });
        assert_eq!(
            twice.match_streams(&[StreamId(1)]),
            Err(StreamMismatch {
                unknown: vec![StreamId(9)],
                repeated: vec![StreamId(1)],
                missing: vec![]
            })
        );
        assert!(r.stream(StreamId(1)).is_some());
        assert!(r.stream(StreamId(3)).is_none());
    }

    #[test]
    fn encoded_in_one_frame() {
        let r = Results::decode(UDP_3_21.as_bytes()).unwrap();
        let f = r.encode(crate::frame::RESULTS_MAX).unwrap();
        let len = u32::from_be_bytes(f[..4].try_into().unwrap()) as usize;
        assert_eq!(len, f.len() - 4);
        assert_eq!(Results::decode(&f[4..]).unwrap(), r);
        assert!(matches!(r.encode(10), Err(JsonFrameError::TooLarge { .. })));
    }
}
