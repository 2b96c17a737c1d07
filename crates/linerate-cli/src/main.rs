//! The `linerate` binary: command-line parsing and the commands, each a thin driver that reads,
//! measures through the other crates and hands plain data to `linerate-report`.

use std::process::ExitCode;

mod cli;
mod cmd;
mod iface;
mod man;
mod out;
mod units;

fn main() -> ExitCode {
    cmd::run(cli::parse())
}
