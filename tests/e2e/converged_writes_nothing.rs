//! Converged Blogs cost zero API writes over several periodic resyncs (the seed's idempotency rule,
//! checked on the host's own write counter and on the emulator's request log).

use std::time::Duration;

use serde_json::json;
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn converged_blogs_cost_no_writes_over_several_resyncs() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    // A resync every 300 ms (`--resync-secs` counts whole seconds).
    let host = env
        .loaded(&[blog])
        .config(|c| c.controller.resync = Duration::from_millis(300))
        .start()
        .await?;
    let blogs = env.api(&kinds::blog());
    for i in 0..5 {
        env.create(
            &kinds::blog(),
            &format!("b{i}"),
            json!({"title": format!("Blog {i}"), "replicas": 2}),
        )
        .await?;
    }
    for i in 0..5 {
        wait_ready(&blogs, &format!("b{i}")).await?;
    }
    // Let the last echoes settle, then watch at least four resyncs go by.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let writes = host.metrics().writes_total();
    let server_writes = env.server_writes();
    let reconciles = host.metrics().reconciles_total();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        host.metrics().reconciles_total() >= reconciles + 4 * 5,
        "resyncs ran"
    );
    assert_eq!(
        host.metrics().writes_total(),
        writes,
        "no write on resync:\n{}",
        host.metrics().encode()
    );
    assert_eq!(
        env.server_writes(),
        server_writes,
        "the API server saw no write"
    );
    host.shutdown().await;
    Ok(())
}
