//! The native twin's process: the Blog logic as a plain kube-runtime controller (see
//! `weir_e2e::native_twin`), started by `weir-bench` once per twin it measures.
//!
//! Its own binary, not a mode of `weir-bench`, so that it runs on the allocator `weir` ships
//! with (the system's) while the bench's process, which hosts the emulator, runs on mimalloc:
//! the two controllers compared run on the same allocator, and the ground they run on is not
//! the one that decides the race (tests/BENCHMARKS.md, "The emulator's allocator").
//!
//! ```text
//! weir-twin KUBECONFIG [--namespace NS] [--workers N] [--resync-secs S]
//! ```
//! It prints `STARTED` once its client is built.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The cluster's kubeconfig.
    kubeconfig: PathBuf,
    /// Watch and reconcile only this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Reconciles at once.
    #[arg(long, default_value_t = 8)]
    workers: u16,
    /// Each Blog is reconciled again this long after its last reconcile.
    #[arg(long, default_value_t = 3)]
    resync_secs: u64,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    // `RUST_LOG` shows what the twin logs.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    // A plain kube client, as a careful kube-rs user builds it: kube-rs has no client-side rate
    // limit (the API server's own fairness and 429s pace it).
    let kc = kube::config::Kubeconfig::read_from(&args.kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    let client = kube::Client::try_from(config)?;
    println!("STARTED");
    let resync = Duration::from_secs(args.resync_secs);
    weir_e2e::native_twin::run(client, args.namespace.as_deref(), args.workers, resync).await;
    Ok(())
}
