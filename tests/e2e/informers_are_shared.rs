//! One watch per kind for the whole host: two plugins owning ConfigMaps share one list and one
//! watch of them, and removing one plugin leaves the other's watch and cache as they were.

use anyhow::Result;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, wait_ready};

use weir_e2e::install;

/// How many controllers the host has subscribed to `kind` right now.
fn subscribers(host: &weir::Manager, kind: &str) -> usize {
    host.watched()
        .into_iter()
        .find(|(k, _)| k.kind == kind)
        .map_or(0, |(_, n)| n)
}

#[tokio::test]
async fn plugins_owning_the_same_kind_share_one_watch_and_removing_one_leaves_the_other_undisturbed()
-> Result<()> {
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    env.install_crd(&plugin("scenario")?).await?;
    let dir = tempfile::tempdir()?;
    install(dir.path(), "blog.wasm", "blog.wasm")?;
    install(dir.path(), "scenario.wasm", "scenario.wasm")?;
    let host = env
        .in_process(RunSource::Plugins(dir.path().into()))
        .start()
        .await?;
    eventually(
        "both plugins serve and their caches are synced",
        CONVERGE,
        || async { (host.catalog().len() == 2 && host.is_ready()).then_some(()) },
    )
    .await?;
    env.create(&kinds::blog(), "b", json!({"title": "t", "replicas": 1}))
        .await?;
    env.create(&kinds::scenario(), "s", json!({"configMaps": ["a"]}))
        .await?;
    wait_ready(&env.api(&kinds::blog()), "b").await?;
    wait_ready(&env.api(&kinds::scenario()), "s").await?;

    let cm = kinds::config_map();
    // The Blog subscribes twice (it owns page ConfigMaps and reads themes and posts), the
    // scenario plugin once: three subscriptions, one informer.
    assert_eq!(
        subscribers(&host, "ConfigMap"),
        3,
        "both plugins read ConfigMaps"
    );
    assert_eq!(subscribers(&host, "Deployment"), 1);
    let (lists, watches) = (env.lists_of(&cm), env.watches_of(&cm));
    if env.emulator.is_some() {
        assert_eq!(lists, Some(1), "one list of ConfigMaps for two plugins");
        assert_eq!(watches, Some(1), "one watch of ConfigMaps for two plugins");
    }

    std::fs::remove_file(dir.path().join("scenario.wasm"))?;
    eventually("the scenario plugin is unloaded", CONVERGE, || async {
        (host.catalog().len() == 1 && subscribers(&host, "ConfigMap") == 2).then_some(())
    })
    .await?;

    // The Blog's ConfigMap is still watched: a hand edit is put back.
    let config_maps = env.api(&cm);
    let page = config_maps.get("b-page").await?;
    let original = page.data["data"].clone();
    let (key, _) = original
        .as_object()
        .and_then(|d| d.iter().next())
        .ok_or_else(|| anyhow::anyhow!("the Blog's ConfigMap has no data"))?;
    let edit = json!({"data": {key.clone(): "edited by hand"}});
    let as_user = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..PatchParams::default()
    };
    config_maps
        .patch("b-page", &as_user, &Patch::Merge(edit))
        .await?;
    eventually("the hand edit is reverted", CONVERGE, || async {
        let now = config_maps.get("b-page").await.ok()?;
        (now.data["data"] == original).then_some(())
    })
    .await?;
    assert_eq!(
        (env.lists_of(&cm), env.watches_of(&cm)),
        (lists, watches),
        "removing the other plugin neither re-listed nor re-watched ConfigMaps"
    );
    host.shutdown().await;
    Ok(())
}
