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
    // A copy started by `--ssh-copy` removes its file before anything else.
    linerate_ssh::remove_own_copy();
    cmd::run(cli::parse())
}
