//! The `weir` binary: parse the command line, set up logging, run the subcommand.

mod cli;

use std::process::ExitCode;

use clap::Parser;

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
