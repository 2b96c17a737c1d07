//! One module per subcommand. Exit codes: 0 ok, 1 findings at or above --fail-on, 2 could not run.

use std::process::ExitCode;

use crate::cli::{Cli, Command, FailOn};
use linerate_facts::Severity;

mod bench;
mod disk;
mod doctor;
mod far;
mod generate;
mod mem;
mod mesh;
mod plan;
mod probe;
mod serve;
mod setup;
mod soak;
mod watch;

pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_CANNOT_RUN: u8 = 2;

pub fn run(cli: Cli) -> ExitCode {
    let style = crate::out::style(cli.color);
    let r = match cli.command {
        Command::Probe(a) => probe::run(&a, style),
        Command::Plan(a) => plan::run(&a, style),
        Command::Doctor(a) => doctor::run(&a, style),
        Command::Mem(a) => mem::run(&a, style),
        Command::Serve(a) => serve::run(&a),
        Command::Bench(a) => bench::run(&a, style),
        Command::Disk(a) => disk::run(&a, style),
        Command::Mesh(a) => mesh::run(&a, style),
        Command::Generate(a) => generate::run(&a),
        Command::Setup(a) => setup::run(&a, style),
        Command::Soak(a) => soak::run(&a, style),
        Command::Watch(a) => watch::run(&a, style),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("linerate: {e:#}");
            ExitCode::from(EXIT_CANNOT_RUN)
        }
    }
}

pub fn fail_threshold(f: FailOn) -> Option<Severity> {
    match f {
        FailOn::Error => Some(Severity::Error),
        FailOn::Warning => Some(Severity::Warning),
        FailOn::Info => Some(Severity::Info),
        FailOn::Never => None,
    }
}
