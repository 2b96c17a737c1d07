//! The far end's `listening` line (`schemas/serve-log.schema.json`): the port it listens on and
//! the protocol it speaks, read past whatever else a login prints.

/// The far end's `listening` line, as far as it matters here.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listening {
    pub(crate) port: u16,
    pub(crate) protocol: Option<u64>,
    pub(crate) version: Option<String>,
    pub(crate) write_dir: Option<String>,
}

/// The `listening` event of serve's log (`schemas/serve-log.schema.json`); any other line
/// (a login banner, a shell's chatter, another event) is None.
pub(crate) fn listening(line: &str) -> Option<Listening> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v.get("event")?.as_str()? != "listening" {
        return None;
    }
    let address = v.get("address")?.as_str()?;
    let port = address.rsplit_once(':')?.1.parse().ok()?;
    Some(Listening {
        port,
        protocol: v.get("protocol").and_then(serde_json::Value::as_u64),
        version: v
            .get("version")
            .and_then(|s| s.as_str())
            .map(str::to_string),
        write_dir: v
            .get("write_dir")
            .and_then(|s| s.as_str())
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listening_event_is_taken() {
        let l = listening(r#"{"address":"0.0.0.0:41234","event":"listening","protocol":1,"version":"0.1.0","write_dir":null}"#).unwrap();
        assert_eq!(l.port, 41234);
        assert_eq!(l.protocol, Some(1));
        assert_eq!(l.version.as_deref(), Some("0.1.0"));
        assert_eq!(l.write_dir, None);
        assert_eq!(
            listening(r#"{"address":"[::]:5301","event":"listening"}"#).map(|l| l.port),
            Some(5301)
        );
        assert!(listening("Welcome to Ubuntu").is_none());
        assert!(listening(r#"{"event":"test"}"#).is_none());
        assert!(listening(r#"{"event":"listening","address":"nowhere"}"#).is_none());
        assert!(listening("{not json").is_none());
    }
}
