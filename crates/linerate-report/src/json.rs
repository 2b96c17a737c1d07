//! The plan document (`linerate plan --json`, `schemas/plan.schema.json`). The probe document
//! is `linerate_facts::ProbeDoc`. Field names are a contract.

use linerate_facts::{Tool, SCHEMA_VERSION, TOOL};
use linerate_model::{Ceiling, CeilingInput};
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct PlanDoc<'a> {
    pub schema_version: u32,
    pub tool: Tool,
    pub input: &'a CeilingInput,
    pub ceiling: &'a Ceiling,
}

pub fn plan_doc<'a>(input: &'a CeilingInput, ceiling: &'a Ceiling) -> PlanDoc<'a> {
    PlanDoc {
        schema_version: SCHEMA_VERSION,
        tool: TOOL,
        input,
        ceiling,
    }
}
