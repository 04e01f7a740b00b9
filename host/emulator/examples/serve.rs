//! Serve an emulator until Ctrl-C: `cargo run -p weir-emulator --example serve -- /tmp/kubeconfig`.

use std::time::Duration;

use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "kubeconfig".into());
    let config = EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_secs(1),
        }),
        ..EmulatorConfig::default()
    };
    let emulator = Emulator::start(config).await?;
    emulator.write_kubeconfig(std::path::Path::new(&path))?;
    println!("serving {} (kubeconfig: {path})", emulator.url());
    tokio::signal::ctrl_c().await?;
    emulator.shutdown().await;
    Ok(())
}
