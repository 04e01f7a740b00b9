//! The `weir` binary: parse the command line, set up logging, run the subcommand.

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// The shipped binary's allocator (the library and the tests keep the system's): freed memory
/// goes back to the system, so the host's resident set falls after a compile or a burst of
/// events instead of staying at its peak.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<ExitCode> {
    let cli = cli::Cli::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&cli.log)?)
        .with_writer(std::io::stderr);
    match cli.log_format {
        cli::LogFormat::Text => logs.init(),
        cli::LogFormat::Json => logs.json().init(),
    }
    cli.run()
}
