//! A Metacontroller CompositeController's hooks, unchanged, as a Weir plugin
//! (`plugins/metacontroller-example`, Python, through the SDK's adapter): the bundle ConfigMap is
//! owned by the ConfigBundle, a missing named source is reported, and its creation is bundled
//! well before the 30 s resync the hook asks for (the host's related-object index wakes the parent).

use std::time::Duration;

use anyhow::Result;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir::plugin::ResourceKind;
use weir_e2e::{TestEnv, controlled_by, eventually, kinds};

/// How long a bundle may take to follow its sources: shorter than the 30 s resync the hook asks
/// for while a source is missing, so only the source's own event can bring the change in time.
const BEFORE_RESYNC: Duration = Duration::from_secs(25);

fn config_bundle() -> ResourceKind {
    ResourceKind {
        group: "example.weir.dev".into(),
        version: "v1alpha1".into(),
        kind: "ConfigBundle".into(),
        plural: "configbundles".into(),
        namespaced: true,
    }
}

async fn put_config_map(env: &TestEnv, name: &str, data: Value) -> Result<()> {
    let api = env.api(&kinds::config_map());
    if api.get_opt(name).await?.is_some() {
        let merge = Patch::Merge(json!({"data": data}));
        api.patch(name, &PatchParams::default(), &merge).await?;
    } else {
        let cm: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": env.namespace},
            "data": data,
        }))?;
        api.create(&PostParams::default(), &cm).await?;
    }
    Ok(())
}

/// The bundle's data and the bundle's `status.missing`, once both are as wanted.
async fn bundled(env: &TestEnv, what: &str, data: Value, missing: Value) -> Result<DynamicObject> {
    let bundles = env.api(&config_bundle());
    let config_maps = env.api(&kinds::config_map());
    eventually(what, BEFORE_RESYNC, || async {
        let bundle = config_maps.get("app-bundle").await.ok()?;
        let parent = bundles.get("app").await.ok()?;
        (bundle.data["data"] == data && parent.data["status"]["missing"] == missing)
            .then_some(bundle)
    })
    .await
}

#[tokio::test]
async fn a_metacontroller_composite_controller_runs_unchanged_through_the_adapter() -> Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("metacontroller-example").await?;

    put_config_map(&env, "settings", json!({"mode": "fast"})).await?;
    env.create(
        &config_bundle(),
        "app",
        json!({"sources": ["settings", "later"]}),
    )
    .await?;
    let bundle = bundled(
        &env,
        "the found source is bundled and the missing one reported",
        json!({"settings.mode": "fast"}),
        json!(["later"]),
    )
    .await?;
    let parent = env.api(&config_bundle()).get("app").await?;
    assert!(
        controlled_by(&bundle, &parent),
        "the bundle is owned by its ConfigBundle"
    );

    // The hook asks for a resync in 30 s while a source is missing; `bundled` waits less
    // (BEFORE_RESYNC), so only the creation event can bring this in time.
    put_config_map(&env, "later", json!({"k": "v"})).await?;
    bundled(
        &env,
        "the created source is bundled at once",
        json!({"settings.mode": "fast", "later.k": "v"}),
        json!([]),
    )
    .await?;

    put_config_map(&env, "settings", json!({"mode": "slow"})).await?;
    bundled(
        &env,
        "an edited source is re-bundled",
        json!({"settings.mode": "slow", "later.k": "v"}),
        json!([]),
    )
    .await?;
    host.shutdown().await;
    Ok(())
}
