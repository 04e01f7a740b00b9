//! A plugin that stops wanting a child → the host deletes it; children it still wants stay.

use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, controlled_by, eventually, kinds, plugin, wait_ready};

#[tokio::test]
async fn a_child_the_plugin_no_longer_wants_is_pruned() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let scenario = plugin("scenario")?;
    env.install_crd(&scenario).await?;
    let host = env.host(&[scenario]).await?;
    let parents = env.api(&kinds::scenario());
    let cms = env.api(&kinds::config_map());

    env.create(
        &kinds::scenario(),
        "s",
        json!({"configMaps": ["keep", "drop"]}),
    )
    .await?;
    let parent = wait_ready(&parents, "s").await?;
    for name in ["keep", "drop"] {
        assert!(
            controlled_by(&cms.get(name).await?, &parent),
            "{name} is owned by its parent"
        );
    }

    env.patch_spec(&kinds::scenario(), "s", json!({"configMaps": ["keep"]}))
        .await?;
    eventually("the dropped child is deleted", CONVERGE, || async {
        cms.get_opt("drop").await.ok()?.is_none().then_some(())
    })
    .await?;
    assert!(
        cms.get_opt("keep").await?.is_some(),
        "the wanted child stays"
    );
    assert!(
        host.metrics()
            .encode()
            .contains(r#"verb="delete",resource="configmaps"} 1"#)
    );
    host.shutdown().await;
    Ok(())
}
