//! A plugin that stops wanting a child → the host deletes it; children it still wants stay.
//! A plugin that stops setting a field of a child it created → the field goes.

use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, controlled_by, eventually, kinds, plugin, wait_ready};

#[tokio::test]
async fn a_child_the_plugin_no_longer_wants_is_pruned() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("scenario").await?;
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

#[tokio::test]
async fn a_field_the_plugin_drops_from_a_created_child_is_removed() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let scenario = plugin("scenario")?;
    env.install_crd(&scenario).await?;
    let host = env.host(&[scenario]).await?;
    let parents = env.api(&kinds::scenario());
    let cms = env.api(&kinds::config_map());

    env.create(
        &kinds::scenario(),
        "f",
        json!({"configMaps": ["page"], "data": {"kept": "1", "dropped": "2"}}),
    )
    .await?;
    wait_ready(&parents, "f").await?;
    let created = cms.get("page").await?;
    assert_eq!(created.data["data"]["dropped"], "2");
    let metrics = host.metrics().encode();
    assert!(
        metrics.contains(r#"verb="create",resource="configmaps"} 1"#)
            && !metrics.contains(r#"verb="apply",resource="configmaps""#),
        "the child was created by POST, its fields recorded under an Update entry:\n{metrics}"
    );

    env.patch_spec(&kinds::scenario(), "f", json!({"data": {"dropped": null}}))
        .await?;
    let page = eventually("the dropped field is removed", CONVERGE, || async {
        let page = cms.get("page").await.ok()?;
        page.data["data"].get("dropped").is_none().then_some(page)
    })
    .await?;
    assert_eq!(
        page.data["data"]["kept"], "1",
        "the fields still wanted stay"
    );
    let entries = page.metadata.managed_fields.unwrap_or_default();
    assert!(
        entries
            .iter()
            .all(|e| !(e.manager.as_deref() == Some("weir/scenario")
                && e.operation.as_deref() == Some("Update"))),
        "the create's Update entry is folded into the Apply entry: {entries:?}"
    );
    host.shutdown().await;
    Ok(())
}
