//! Writing to stdout: colour decision, and a closed pipe is not an error.

use std::io::{IsTerminal, Write};

use linerate_report::Style;

use crate::cli::ColorWhen;

pub fn style(when: ColorWhen) -> Style {
    let color = match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
                && launched_by(&|k| std::env::var_os(k)).is_none()
        }
    };
    Style { color }
}

/// The launcher variable that says this process is a rank of a parallel job, if one does.
/// `mpirun` gives each rank a pseudo-terminal even when its own output goes to a file
/// (`mpirun -np 3 linerate mesh > out.txt`), so a terminal on standard output proves nothing
/// there: automatic colour is off under a launcher (`--color always` still colours).
pub fn launched_by(env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<&'static str> {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
        "JOB_COMPLETION_INDEX",
    ]
    .into_iter()
    .find(|k| env(k).is_some())
}

/// Print, treating a closed pipe (`| head`) as success.
pub fn print(s: &str) -> std::io::Result<()> {
    let mut o = std::io::stdout().lock();
    match o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
