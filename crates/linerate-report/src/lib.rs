//! Renderers. Every function here is pure: data in, bytes out.

pub mod json;
pub mod style;
pub mod text;

pub use json::{plan_doc, probe_doc, PlanDoc, ProbeDoc, SCHEMA_VERSION};
pub use style::Style;
pub use text::{render_plan, render_probe};
