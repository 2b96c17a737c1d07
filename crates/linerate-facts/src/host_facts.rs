//! What a host says about itself and the interface holding one of its addresses: `serve` sends
//! it to the client in `accepted`, the client builds its own, bench shows each end's port in
//! its result, doctor judges both ends by them.
//!
//! A peer may run an older or a newer linerate: reading its document never fails. A field this
//! version does not know is ignored, a finding id it does not know is left out, a part that
//! cannot be read at all (a newer port kind in a port, a malformed ceiling) is left out, and
//! each is named in [`HostFacts::unread`] for the caller to report.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{EndFacts, FindingId, PortDoc, ProbeDoc};

/// Everything a host says about the interface holding `address`. Two are equal when they say
/// the same: [`HostFacts::unread`] is about how one was read, and is not compared.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HostFacts {
    /// The address (`192.0.2.1`, `::1`).
    pub address: String,
    /// The interface holding it, when the kernel named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// That interface's port in probe's shape, when probe found it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<PortDoc>,
    /// The whole probe document of the host (absent when probe could not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeDoc>,
    /// The facts doctor judges this end by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<EndFacts>,
    /// What could not be read from a peer's document (never sent).
    #[serde(skip)]
    pub unread: Vec<Unread>,
}

impl PartialEq for HostFacts {
    fn eq(&self, other: &Self) -> bool {
        let Self {
            address,
            name,
            port,
            probe,
            facts,
            unread: _,
        } = self;
        *address == other.address
            && *name == other.name
            && *port == other.port
            && *probe == other.probe
            && *facts == other.facts
    }
}

/// Something of a peer's document this version could not read, and left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// A field this version does not know (a newer peer's), at this path: ignored.
    Field(String),
    /// A finding id this version does not know (a newer peer's), in this part: left out.
    Finding { part: String, id: String },
    /// A part that could not be read: left out.
    Part { part: String, error: String },
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Field(path) => write!(f, "unknown field `{path}` ignored"),
            Self::Finding { part, id } => {
                write!(
                    f,
                    "{part}: finding `{id}` unknown to this version, left out"
                )
            }
            Self::Part { part, error } => write!(f, "{part} could not be read ({error}), left out"),
        }
    }
}

/// One end of a bench result (`local`, `remote`): the port the test used, in probe's shape,
/// with the address; or the address and the interface's name when probe did not find the port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterfaceView {
    #[serde(flatten)]
    pub port: Option<PortDoc>,
    pub address: String,
    /// Only without `port` (whose own `name` says it then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl InterfaceView {
    /// The interface's name: the port's, else the one the kernel gave.
    pub fn name(&self) -> Option<&str> {
        self.port
            .as_ref()
            .map(|p| p.name.as_str())
            .or(self.name.as_deref())
    }
}

impl HostFacts {
    /// The view bench keeps of this end.
    pub fn interface_view(&self) -> InterfaceView {
        InterfaceView {
            port: self.port.clone(),
            address: self.address.clone(),
            name: if self.port.is_some() {
                None
            } else {
                self.name.clone()
            },
        }
    }

    /// Read a document, leniently (see the module's documentation).
    pub fn from_value(v: Value) -> Self {
        let mut unread = Vec::new();
        let Value::Object(mut o) = v else {
            unread.push(Unread::Part {
                part: "the host facts".into(),
                error: format!("expected an object, found {}", kind_of(&v)),
            });
            return Self {
                unread,
                ..Self::default()
            };
        };
        let mut text = |key: &str, unread: &mut Vec<Unread>| match o.remove(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                unread.push(Unread::Part {
                    part: format!("`{key}`"),
                    error: format!("expected a string, found {}", kind_of(&other)),
                });
                None
            }
        };
        let address = text("address", &mut unread).unwrap_or_default();
        let name = text("name", &mut unread);
        let port = o
            .remove("port")
            .filter(|v| !v.is_null())
            .and_then(|v| decode("port", v, &mut unread));
        let probe = o
            .remove("probe")
            .filter(|v| !v.is_null())
            .and_then(|v| decode_probe(v, &mut unread));
        let facts = o
            .remove("facts")
            .filter(|v| !v.is_null())
            .and_then(|v| decode_with_findings::<EndFacts>("facts", v, &mut unread));
        unread.extend(o.keys().map(|k| Unread::Field(k.clone())));
        Self {
            address,
            name,
            port,
            probe,
            facts,
            unread,
        }
    }
}

impl<'de> Deserialize<'de> for HostFacts {
    /// Never fails on content: see [`HostFacts::from_value`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(Self::from_value)
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `part` as a `T`, naming the fields it ignored; None (and why) when it cannot be read.
fn decode<T: serde::de::DeserializeOwned>(
    part: &str,
    v: Value,
    unread: &mut Vec<Unread>,
) -> Option<T> {
    let mut ignored = Vec::new();
    let r = serde_ignored::deserialize(v, |path| {
        ignored.push(Unread::Field(format!("{part}.{path}")));
    });
    match r {
        Ok(t) => {
            unread.extend(ignored);
            Some(t)
        }
        Err(e) => {
            unread.push(Unread::Part {
                part: part.to_string(),
                error: e.to_string(),
            });
            None
        }
    }
}

/// The findings of `part` this version knows; the others named and left out.
fn known_findings(part: &str, findings: Value, unread: &mut Vec<Unread>) -> Vec<Value> {
    let Value::Array(items) = findings else {
        unread.push(Unread::Part {
            part: format!("{part}.findings"),
            error: format!("expected an array, found {}", kind_of(&findings)),
        });
        return Vec::new();
    };
    items
        .into_iter()
        .enumerate()
        .filter(|(i, f)| match f.get("id").and_then(Value::as_str) {
            Some(id) if FindingId::parse(id).is_none() => {
                unread.push(Unread::Finding {
                    part: format!("{part}.findings[{i}]"),
                    id: id.to_string(),
                });
                false
            }
            _ => true,
        })
        .map(|(_, f)| f)
        .collect()
}

/// A part with a `findings` array: the unknown findings left out first (named), then the part
/// read; a finding that still cannot be read is left out on its own, not with the part.
fn decode_with_findings<T: serde::de::DeserializeOwned>(
    part: &str,
    v: Value,
    unread: &mut Vec<Unread>,
) -> Option<T> {
    let Value::Object(mut o) = v else {
        return decode(part, v, unread);
    };
    if let Some(f) = o.remove("findings") {
        let known = known_findings(part, f, unread);
        let read: Vec<Value> = known
            .into_iter()
            .enumerate()
            .filter(|(i, f)| {
                decode::<crate::Finding>(&format!("{part}.findings[{i}]"), f.clone(), unread)
                    .is_some()
            })
            .map(|(_, f)| f)
            .collect();
        o.insert("findings".into(), Value::Array(read));
    }
    decode(part, Value::Object(o), unread)
}

/// The probe document: each port read on its own, so one a newer peer describes in terms this
/// version does not know is left out alone.
fn decode_probe(v: Value, unread: &mut Vec<Unread>) -> Option<ProbeDoc> {
    let Value::Object(mut o) = v else {
        return decode("probe", v, unread);
    };
    let ports = match o.remove("ports") {
        Some(Value::Array(ports)) => ports,
        Some(other) => {
            unread.push(Unread::Part {
                part: "probe.ports".into(),
                error: format!("expected an array, found {}", kind_of(&other)),
            });
            Vec::new()
        }
        None => Vec::new(),
    };
    o.insert("ports".into(), Value::Array(Vec::new()));
    let mut doc: ProbeDoc = decode_with_findings("probe", Value::Object(o), unread)?;
    doc.ports = ports
        .into_iter()
        .enumerate()
        .filter_map(|(i, p)| decode(&format!("probe.ports[{i}]"), p, unread))
        .collect();
    Some(doc)
}
