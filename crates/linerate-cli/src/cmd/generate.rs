//! `linerate generate`: man pages and shell completions from the clap definitions in `cli.rs`, so
//! what `man linerate-doctor` and `linerate doctor <TAB>` show is what the binary accepts.
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
    // gives every subcommand its display name (`linerate-doctor`), which names its page.
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let mut written = Vec::new();
    write_pages(&root, dir, &mut written)?;
    Ok(written)
}

fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<String>) -> anyhow::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .title(
            cmd.get_display_name()
                .unwrap_or(cmd.get_name())
                .to_uppercase(),
        )
        // The footer names the program, not the subcommand (`linerate 0.1.0`).
        .source(format!("linerate {}", env!("CARGO_PKG_VERSION")));
    let name = man.get_filename();
    let page = render(&man, cmd).with_context(|| format!("rendering {name}"))?;
    let path = dir.join(&name);
    std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
    written.push(name);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() != "help" {
            write_pages(sub, dir, written)?;
        }
    }
    Ok(())
}

/// `Man::render`, section by section, but with the text after the options (`after_help`: exit
/// status, examples, forms) in a NOTES section without filling: clap_mangen fills it, which joins
/// its lines into one paragraph and breaks the examples' command lines.
fn render(man: &clap_mangen::Man, cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    use clap_mangen::roff::{roman, Roff};
    let mut w = Vec::new();
    man.render_title(&mut w)?;
    man.render_name_section(&mut w)?;
    man.render_synopsis_section(&mut w)?;
    man.render_description_section(&mut w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut w)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut w)?;
    }
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        let mut roff = Roff::default();
        roff.control("SH", ["NOTES"]).control("nf", []);
        for line in after.to_string().lines() {
            roff.text([roman(line)]);
        }
        roff.control("fi", []);
        roff.to_writer(&mut w)?;
    }
    man.render_version_section(&mut w)?;
    Ok(w)
}
