//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use linerate_model::spec::{LINK_FORMS, PCIE_FORMS};

/// Is this link running at line rate, and if not, exactly why?
#[derive(Debug, Parser)]
#[command(name = "linerate", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When to colour the terminal output.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inventory every network port from sysfs (no root needed), its ceiling chain, and findings.
    Probe(ProbeArgs),
    /// The ceiling chain for hardware you do not have yet.
    Plan(PlanArgs),
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Read sysfs and procfs under this directory instead of `/` (a copy or a fixture tree).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Print one JSON document (schemas/probe.schema.json) instead of the terminal view.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when a finding of at least this severity is present.
    #[arg(long, value_enum, default_value_t = FailOn::Never)]
    pub fail_on: FailOn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IpoibModeArg {
    Connected,
    Datagram,
}

#[derive(Debug, Args)]
#[command(after_help = format!("LINK forms: {LINK_FORMS}\nPCIE forms: {PCIE_FORMS}\n\nExample: what will a ConnectX-3 (FDR) give in an M.2 gen3 x4 slot?\n  linerate plan --link 4x-fdr --pcie gen3x4 --mtu 65520"))]
pub struct PlanArgs {
    /// The link: `4x-qdr`, `4x-fdr`, `hdr`, `1x-edr`, `10gbe`, `100gbe`, ...
    #[arg(long, value_name = "LINK")]
    pub link: String,
    /// The PCIe link the card gets: `gen2x4`, `gen3x16`, ... (omit to ignore PCIe).
    #[arg(long, value_name = "PCIE")]
    pub pcie: Option<String>,
    /// MTU of the IP interface, to add the TCP goodput stage.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub mtu: Option<u32>,
    /// IPoIB mode for an InfiniBand link with --mtu (default: connected above 4092, else datagram).
    #[arg(long, value_enum)]
    pub ipoib: Option<IpoibModeArg>,
    /// PCIe max payload size in bytes, if you know it (`lspci -vv` as root: DevCtl MaxPayload).
    #[arg(long, value_name = "BYTES", value_parser = ["128", "256", "512", "1024", "2048", "4096"])]
    pub mps: Option<String>,
    /// Print one JSON object with the ceiling instead of the terminal view.
    #[arg(long)]
    pub json: bool,
}

pub fn parse() -> Cli {
    Cli::parse()
}
