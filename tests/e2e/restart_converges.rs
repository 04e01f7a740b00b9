//! The host killed mid-way and started again converges with no duplicate child: the seed's
//! "restart → look at the present, carry on".

use std::time::Duration;

use serde_json::json;
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn a_host_killed_mid_way_and_restarted_converges_without_duplicates() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    for i in 0..30 {
        env.create(
            &kinds::blog(),
            &format!("b{i}"),
            json!({"title": format!("t{i}"), "replicas": 1}),
        )
        .await?;
    }
    let first = env.host(std::slice::from_ref(&blog)).await?;
    tokio::time::timeout(Duration::from_secs(20), async {
        while first.metrics().writes_total() < 10 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await?;
    first.kill();

    let second = env.host(&[blog]).await?;
    let blogs = env.api(&kinds::blog());
    for i in 0..30 {
        wait_ready(&blogs, &format!("b{i}")).await?;
    }
    for (kind, per_blog) in [
        (kinds::config_map(), 1),
        (kinds::deployment(), 1),
        (kinds::service(), 1),
    ] {
        let all = env.api(&kind).list(&Default::default()).await?;
        let owned = all
            .items
            .iter()
            .filter(|o| o.metadata.owner_references.is_some())
            .count();
        assert_eq!(owned, 30 * per_blog, "exactly one {} per Blog", kind.kind);
    }
    second.shutdown().await;
    Ok(())
}
