//! `linerate-dist`: release tooling run by `scripts/package.sh` (not installed, not shipped).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use linerate_dist::changelog::{self, ChangelogOptions};

#[derive(Debug, Parser)]
#[command(
    name = "linerate-dist",
    about = "Release tooling for scripts/package.sh"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Print the Debian changelog (deb-changelog(5)) made from a Keep a Changelog file.
    Changelog {
        /// The Keep a Changelog file.
        #[arg(long, value_name = "FILE", default_value = "CHANGELOG.md")]
        input: PathBuf,
        /// The Debian package name.
        #[arg(long, default_value = "linerate")]
        package: String,
        /// The Debian version being built: upstream version, dash, revision (0.1.0-1).
        #[arg(long, value_name = "VERSION")]
        version: String,
        /// The distribution named in each entry.
        #[arg(long, default_value = "unstable")]
        distribution: String,
        /// `Name <address>`, as the package's Maintainer field.
        #[arg(long, value_name = "NAME <ADDRESS>")]
        maintainer: String,
        /// The date of an entry CHANGELOG.md gives none, as seconds since the epoch
        /// (SOURCE_DATE_EPOCH).
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        date: i64,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Changelog {
            input,
            package,
            version,
            distribution,
            maintainer,
            date,
        } => {
            let md = std::fs::read_to_string(&input)
                .with_context(|| format!("reading {}", input.display()))?;
            let releases = changelog::parse(&md).map_err(anyhow::Error::msg)?;
            let o = ChangelogOptions {
                package,
                version,
                distribution,
                maintainer,
                epoch: date,
            };
            let text = changelog::render(&releases, &o).map_err(anyhow::Error::msg)?;
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .context("writing the changelog to stdout")?;
        }
    }
    Ok(())
}
