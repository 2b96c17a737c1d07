//! `linerate generate`: man pages (`crate::man`) and shell completions from the clap definitions
//! in `cli.rs`, so what `man linerate-doctor` and `linerate doctor <TAB>` show is what the binary
//! accepts.
//!
//! The output is deterministic (no date, no host name): `packaging/` holds a generated copy that
//! the .deb ships, and `tests/generated.rs` fails when that copy differs from what this prints.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, GenerateArgs, GenerateWhat};

pub fn run(a: &GenerateArgs) -> anyhow::Result<u8> {
    match &a.what {
        GenerateWhat::Man { dir } => {
            for name in man_pages(dir)? {
                println!("{}", dir.join(name).display());
            }
        }
        GenerateWhat::Completions { shell } => {
            let mut cmd = Cli::command();
            // Into memory first: clap_complete panics when its writer fails (a closed pipe).
            let mut buf = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "linerate", &mut buf);
            std::io::stdout()
                .lock()
                .write_all(&buf)
                .context("writing the completion script to stdout")?;
        }
    }
    Ok(0)
}

/// Writes `linerate.1` and one page per subcommand, nested ones included
/// (`linerate-generate-man.1`), into `dir`; returns the file names written, in order.
fn man_pages(dir: &Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // No `help` subcommand in the pages: `--help` and `man` already are the help. build()
    // propagates the global options (--color) and the version to every subcommand.
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let pages = crate::man::pages(&root).map_err(|e| anyhow::anyhow!("rendering {e}"))?;
    let mut written = Vec::new();
    for page in pages {
        let path = dir.join(&page.file_name);
        std::fs::write(&path, page.source)
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(page.file_name);
    }
    Ok(written)
}
