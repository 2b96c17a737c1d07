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
