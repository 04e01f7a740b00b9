//! Related objects (the seed's Watches, contract 0.2.0): a plugin reads a ConfigMap it does not
//! own, named in its parent's spec. Its absence is reported, its creation and edits reconcile the
//! parent at once (no requeue timer: the plugin answers `done` and the resync is 10 minutes), an
//! unrelated ConfigMap edited 100 times reconciles nothing, a selection in another namespace is
//! refused on the parent, and a 0.1.0 plugin runs beside it in the same host.

use std::time::Duration;

use anyhow::Result;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir::plugin::Contract;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin, wait_ready};

/// `weir_reconciles_total` of `plugin`, all results, from the host's `/metrics` text.
fn reconciles_of(host: &weir::Manager, plugin: &str) -> u64 {
    let label = format!("plugin=\"{plugin}\"");
    host.metrics()
        .encode()
        .lines()
        .filter(|l| l.starts_with("weir_reconciles_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn put_config_map(env: &TestEnv, name: &str, data: Value) -> Result<()> {
    let cm: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": env.namespace},
        "data": data,
    }))?;
    let api = env.api(&kinds::config_map());
    if api.get_opt(name).await?.is_some() {
        let pp = PatchParams::default();
        api.patch(name, &pp, &Patch::Merge(json!({"data": data})))
            .await?;
    } else {
        api.create(&PostParams::default(), &cm).await?;
    }
    Ok(())
}

async fn copied_value(env: &TestEnv, want: &str) -> Result<()> {
    let api = env.api(&kinds::config_map());
    eventually(&format!("m-copy holds {want:?}"), CONVERGE, || async {
        let copy = api.get_opt("m-copy").await.ok()??;
        (copy.data["data"]["value"] == want).then_some(())
    })
    .await
}

#[tokio::test]
async fn a_plugin_reads_a_config_map_it_does_not_own_and_hears_only_its_changes() -> Result<()> {
    let env = TestEnv::start().await?;
    let (related, scenario) = (plugin("related")?, plugin("scenario")?);
    assert_eq!(
        related.contract(),
        Contract::V0_4,
        "the SDK's contract, keeping 0.2.0's related objects"
    );
    assert_eq!(scenario.contract(), Contract::V0_1, "the 0.1.0 component");
    env.install_crd(&related).await?;
    env.install_crd(&scenario).await?;
    let host = env.host(&[related, scenario]).await?;
    let mirrors = env.api(&kinds::mirror());

    // Missing source: not Ready, and nothing asks to look again.
    env.create(
        &kinds::mirror(),
        "m",
        json!({"source": "theme", "key": "css"}),
    )
    .await?;
    eventually("m reports its source missing", CONVERGE, || async {
        let m = mirrors.get("m").await.ok()?;
        (condition(&m, "Ready")?["reason"] == "SourceNotFound").then_some(())
    })
    .await?;

    // Created: the watch on ConfigMaps wakes the Mirror through the related index.
    put_config_map(&env, "theme", json!({"css": "body{}"})).await?;
    wait_ready(&mirrors, "m").await?;
    copied_value(&env, "body{}").await?;

    // Edited: the child follows.
    put_config_map(&env, "theme", json!({"css": "h1{}"})).await?;
    copied_value(&env, "h1{}").await?;

    // The 0.1.0 plugin beside it, in the same host and on the same ConfigMap informer.
    env.create(&kinds::scenario(), "s", json!({"configMaps": ["a"]}))
        .await?;
    wait_ready(&env.api(&kinds::scenario()), "s").await?;
    if env.emulator.is_some() {
        assert_eq!(
            env.watches_of(&kinds::config_map()),
            Some(1),
            "one ConfigMap watch for the children of both plugins and the related reads"
        );
    }

    // An unrelated ConfigMap edited 100 times: no reconcile of either plugin.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = (
        reconciles_of(&host, "related"),
        reconciles_of(&host, "scenario"),
    );
    for i in 0..100 {
        put_config_map(&env, "noise", json!({"n": i.to_string()})).await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        (
            reconciles_of(&host, "related"),
            reconciles_of(&host, "scenario")
        ),
        before,
        "an unrelated ConfigMap reconciles nobody"
    );

    // Reading another namespace is refused on the parent, with nothing written.
    env.patch_spec(
        &kinds::mirror(),
        "m",
        json!({"sourceNamespace": "kube-system"}),
    )
    .await?;
    let refused = eventually("the selection is refused", CONVERGE, || async {
        let m = mirrors.get("m").await.ok()?;
        let c = condition(&m, "Reconciled")?;
        (c["reason"] == "Refused").then_some(c)
    })
    .await?;
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(message.contains(r#"namespace "kube-system""#), "{message}");
    copied_value(&env, "h1{}").await?;
    host.shutdown().await;
    Ok(())
}
