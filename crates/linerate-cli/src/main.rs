use std::process::ExitCode;

mod cli;
mod cmd;
mod out;

fn main() -> ExitCode {
    cmd::run(cli::parse())
}
