//! Deleting a parent: the host holds its finalizer until the plugin's cleanup completes, then
//! releases it, and the API server's garbage collector removes the children. The same for a
//! component of contract 0.1.0 and of 0.2.0, whose cleanup answers carry nothing to apply.

use std::time::Duration;

use kube::api::DeleteParams;
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, wait_ready};

#[tokio::test]
async fn the_finalizer_holds_until_cleanup_completes_then_children_are_collected()
-> anyhow::Result<()> {
    holds_until_released("scenario").await
}

#[tokio::test]
async fn a_0_2_0_plugins_cleanup_holds_and_releases_the_finalizer_as_before() -> anyhow::Result<()>
{
    holds_until_released("scenario-0.2.0").await
}

async fn holds_until_released(plugin: &str) -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve(plugin).await?;
    let parents = env.api(&kinds::scenario());
    let cms = env.api(&kinds::config_map());

    env.create(
        &kinds::scenario(),
        "s",
        json!({"configMaps": ["page"], "finalizeAfterMs": 100}),
    )
    .await?;
    let parent = wait_ready(&parents, "s").await?;
    assert_eq!(
        parent.metadata.finalizers,
        Some(vec!["test.weir.dev/cleanup".to_owned()])
    );

    parents.delete("s", &DeleteParams::default()).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = parents.get("s").await?;
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "still there while cleanup is pending"
    );
    assert!(
        cms.get_opt("page").await?.is_some(),
        "a cleanup answer carrying no children leaves them as they are"
    );

    env.patch_spec(&kinds::scenario(), "s", json!({"release": true}))
        .await?;
    eventually("the parent is gone", CONVERGE, || async {
        parents.get_opt("s").await.ok()?.is_none().then_some(())
    })
    .await?;
    eventually("the child is garbage-collected", CONVERGE, || async {
        cms.get_opt("page").await.ok()?.is_none().then_some(())
    })
    .await?;
    host.shutdown().await;
    Ok(())
}
