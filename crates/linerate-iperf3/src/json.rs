//! Reading JSON values the way iperf3's cJSON gives them to iperf3, and writing numbers the way
//! cJSON prints them.
//!
//! iperf3 bundles cJSON with a 64-bit `valueint`: an integer key is read as `(int64_t)` of the
//! number (a fraction truncated toward zero, saturating at the `i64` bounds). 3.12 and 3.13 print
//! a negative `valueint` as unsigned (`-1` as `18446744073709551615`, esnet/iperf#1435, fixed in
//! 3.14), so an integer above `i64::MAX` is read back as the negative it was printed from (its
//! two's complement: `u64::MAX` is −1).
//!
//! Keys are matched as serde_json matches them: exactly, and the last of a duplicated key wins.
//! cJSON matches case-insensitively and takes the first. No iperf3 sends a key twice or in
//! another case, so the two readings differ only for a hand-made message.

use serde::Serializer;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::frame::JsonFrameError;

/// Why a parameters or results message could not be read. A server answers any of these in
/// the parameters with SERVER_ERROR IERECVPARAMS (114); iperf3 fails results it cannot read
/// with IERECVRESULTS (117).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    #[error(transparent)]
    Frame(#[from] JsonFrameError),
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("the message is JSON {found}, not an object")]
    NotObject { found: &'static str },
    #[error("\"{key}\" is missing")]
    Missing { key: String },
    #[error("\"{key}\" is {found}, where iperf3 expects {expected}")]
    WrongType {
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("\"{key}\" is {value}: {why}")]
    BadValue {
        key: String,
        value: String,
        why: &'static str,
    },
    #[error(
        "stream {index}: \"omitted_errors\" and \"omitted_packets\" come together or not at all \
         (iperf3 refuses one without the other)"
    )]
    OmittedPair { index: usize },
}

/// The JSON type's name, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parse a message body into its top-level object.
pub(crate) fn object(body: &[u8]) -> Result<Map<String, Value>, DecodeError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(DecodeError::NotObject {
            found: kind(&other),
        }),
        Err(e) => Err(DecodeError::NotJson(e.to_string())),
    }
}

/// A number as cJSON's `valueint`.
pub(crate) fn valueint(v: &Value) -> Option<i64> {
    let Value::Number(n) = v else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        Some(i)
    } else if let Some(u) = n.as_u64() {
        // Above i64::MAX: a 3.12/3.13 peer's negative, printed unsigned.
        Some(u.cast_signed())
    } else {
        // A fraction: truncated toward zero, saturating (Rust's `as` from f64 does both).
        n.as_f64().map(|f| f as i64)
    }
}

/// Typed access to one JSON object, naming keys by their path for errors.
pub(crate) struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub path: String,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>, path: &str) -> Fields<'a> {
        Fields {
            map,
            path: path.to_string(),
        }
    }

    pub fn key(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Whether the key is there, whatever its value.
    pub fn present(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    fn wrong(&self, key: &str, expected: &'static str, v: &Value) -> DecodeError {
        DecodeError::WrongType {
            key: self.key(key),
            expected,
            found: kind(v),
        }
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, DecodeError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => valueint(v)
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a number", v)),
        }
    }

    pub fn req_int(&self, key: &str) -> Result<i64, DecodeError> {
        self.int(key)?
            .ok_or_else(|| DecodeError::Missing { key: self.key(key) })
    }

    pub fn float(&self, key: &str) -> Result<Option<f64>, DecodeError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                // u64 above i64::MAX: a 3.12/3.13 negative, as for integers.
                let f = match (n.as_i64(), n.as_u64()) {
                    (None, Some(u)) => u.cast_signed() as f64,
                    _ => n.as_f64().unwrap_or(0.0),
                };
                Ok(Some(f))
            }
            Some(v) => Err(self.wrong(key, "a number", v)),
        }
    }

    pub fn req_float(&self, key: &str) -> Result<f64, DecodeError> {
        self.float(key)?
            .ok_or_else(|| DecodeError::Missing { key: self.key(key) })
    }

    pub fn string(&self, key: &str) -> Result<Option<String>, DecodeError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.wrong(key, "a string", v)),
        }
    }

    pub fn bad(&self, key: &str, value: i64, why: &'static str) -> DecodeError {
        DecodeError::BadValue {
            key: self.key(key),
            value: value.to_string(),
            why,
        }
    }
}

/// Write an `f64` as cJSON does where it matters for the shape: a whole number as an integer
/// (`0`, not `0.0`), anything else as the shortest text that reads back the same.
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
pub(crate) fn ser_f64<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if v.fract() == 0.0 && v.abs() < EXACT {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// Write a flag that is present only when true, as a JSON `true`.
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
pub(crate) fn ser_true<S: Serializer>(_: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bool(true)
}

/// Write a flag that is present only when true, as the number 1 (iperf3's number-typed flags).
#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
pub(crate) fn ser_one<S: Serializer>(_: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_i64(1)
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_as_cjson_reads_them() {
        assert_eq!(valueint(&json!(5)), Some(5));
        assert_eq!(valueint(&json!(-1)), Some(-1));
        // 3.12/3.13's -1 and -2.
        assert_eq!(valueint(&json!(18_446_744_073_709_551_615_u64)), Some(-1));
        assert_eq!(valueint(&json!(18_446_744_073_709_551_614_u64)), Some(-2));
        assert_eq!(
            valueint(&json!(9_223_372_036_854_775_807_i64)),
            Some(i64::MAX)
        );
        // Fractions truncate toward zero; huge ones saturate.
        assert_eq!(valueint(&json!(10.9)), Some(10));
        assert_eq!(valueint(&json!(-10.9)), Some(-10));
        assert_eq!(valueint(&json!(1e300)), Some(i64::MAX));
        assert_eq!(valueint(&json!(-1e300)), Some(i64::MIN));
        assert_eq!(valueint(&json!("5")), None);
        assert_eq!(valueint(&json!(true)), None);
    }

    #[test]
    fn floats_print_like_cjson() {
        let s = |v: f64| {
            let mut out = Vec::new();
            ser_f64(&v, &mut serde_json::Serializer::new(&mut out)).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(s(0.0), "0");
        assert_eq!(s(12.0), "12");
        assert_eq!(s(-1.0), "-1");
        assert_eq!(s(1.000_059), "1.000059");
        assert_eq!(s(4.123_048_506_499_761e-5), "0.00004123048506499761");
        assert_eq!(s(1e300), "1e+300");
    }

    #[test]
    fn errors_name_the_key() {
        let map = object(br#"{"a":"x","n":{"b":1}}"#).unwrap();
        let f = Fields::new(&map, "streams[0]");
        assert_eq!(
            f.int("a").unwrap_err().to_string(),
            "\"streams[0].a\" is a string, where iperf3 expects a number"
        );
        assert_eq!(
            f.req_int("zz").unwrap_err().to_string(),
            "\"streams[0].zz\" is missing"
        );
        assert_eq!(
            object(b"[1]").unwrap_err(),
            DecodeError::NotObject { found: "an array" }
        );
        assert!(matches!(object(b"{"), Err(DecodeError::NotJson(_))));
        assert!(matches!(object(b"\xff"), Err(DecodeError::NotJson(_))));
    }
}
