//! Renderers. Every function here is pure: data in, bytes out.

pub mod bench;
pub mod disk;
pub mod doctor;
pub mod html;
pub mod json;
pub mod mem;
pub mod mesh;
mod phy_text;
pub mod setup;
pub mod soak;
pub mod style;
pub mod text;
pub mod watch;
pub mod watch_screen;

pub use bench::{bench_doc, render_bench, BenchDoc};
pub use doctor::render_doctor;
pub use html::doctor::doctor_html;
pub use html::mesh::mesh_html;
pub use html::soak::soak_html;
pub use json::{plan_doc, PlanDoc};
pub use mem::render_mem;
pub use mesh::{mesh_csv, render_mesh};
pub use setup::{render_setup, setup_doc, SetupAction, SetupDoc};
pub use soak::{render_soak, soak_json, soak_live_line, soak_textfile, thresholds_words};
pub use style::Style;
pub use text::{render_plan, render_probe};
pub use watch::{watch_json_line, watch_lines, watch_metrics};
pub use watch_screen::WatchScreen;

/// The name of the best TCP result of all (the pyramid's network row: every stream count, both
/// directions) in every output, text and HTML; the verdict's own figure is named by its test.
pub const BEST_TCP: &str = "network, best TCP result";
