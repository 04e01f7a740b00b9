//! Two hosts with leader election: only the leader writes; when it stops, the standby takes over.

use std::time::Duration;

use serde_json::json;

use weir_e2e::host::RunSource;
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn only_the_leader_writes_and_the_standby_takes_over() -> anyhow::Result<()> {
    let _exclusive = weir_e2e::exclusive().await;
    let env = TestEnv::start().await?;
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let host = |id: &str| {
        env.run_args(RunSource::Loaded(vec![blog.clone()]))
            .elected(id, &env.namespace)
            .in_process(&env)
            .start()
    };
    let a = host("a").await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let b = host("b").await?;
    let blogs = env.api(&kinds::blog());
    for i in 0..5 {
        env.create(
            &kinds::blog(),
            &format!("b{i}"),
            json!({"title": "t", "replicas": 1}),
        )
        .await?;
    }
    for i in 0..5 {
        wait_ready(&blogs, &format!("b{i}")).await?;
    }
    assert!(
        a.metrics().writes_total() > 0,
        "the first host leads and writes"
    );
    assert_eq!(b.metrics().writes_total(), 0, "the standby writes nothing");

    a.shutdown().await;
    env.create(
        &kinds::blog(),
        "later",
        json!({"title": "t", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "later").await?;
    assert!(b.metrics().writes_total() > 0, "the standby took over");
    b.shutdown().await;
    Ok(())
}
