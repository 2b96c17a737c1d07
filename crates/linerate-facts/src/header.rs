//! The header every JSON document carries: `schema_version` and `tool`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// Bumped when a field is renamed or removed; adding fields does not bump it.
pub const SCHEMA_VERSION: u32 = 1;

/// The `tool` object of every JSON document: which program wrote it. Owned when read back
/// from a peer's document (whose version may differ from this one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: Cow<'static, str>,
    pub version: Cow<'static, str>,
}

/// This program (every crate of the workspace shares its version).
pub const TOOL: Tool = Tool {
    name: Cow::Borrowed("linerate"),
    version: Cow::Borrowed(env!("CARGO_PKG_VERSION")),
};
