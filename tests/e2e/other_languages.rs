//! "Any WASM language": the Python, JavaScript and C Blog components, swapped in for the Rust
//! one, run the seed's scenario in the same host: children owned, Ready, and a hand edit
//! reverted.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, controlled_by, eventually, kinds, plugin, wait_ready};

async fn blog_scenario_with(component: &str) -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let blog = plugin(component)?;
    env.install_crd(&blog).await?;
    let host = env.host(&[blog]).await?;
    env.create(
        &kinds::blog(),
        "poly",
        json!({"title": "Polyglot", "replicas": 2}),
    )
    .await?;

    let parent = wait_ready(&env.api(&kinds::blog()), "poly").await?;
    for (kind, name) in [
        (kinds::config_map(), "poly-page"),
        (kinds::deployment(), "poly"),
        (kinds::service(), "poly"),
    ] {
        let child = env.api(&kind).get(name).await?;
        assert!(
            controlled_by(&child, &parent),
            "{component}: {name} is owned by the Blog"
        );
    }
    assert_eq!(
        parent.data["status"]["readyReplicas"], 2,
        "{component}: status from the plugin"
    );

    let deployments = env.typed::<Deployment>();
    deployments
        .patch(
            "poly",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await?;
    eventually(
        "the hand-edited replicas are reverted",
        CONVERGE,
        || async { (deployments.get("poly").await.ok()?.spec?.replicas == Some(2)).then_some(()) },
    )
    .await?;
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_python_blog_plugin_reconciles_like_the_rust_one() -> anyhow::Result<()> {
    blog_scenario_with("blog-py").await
}

#[tokio::test]
async fn the_javascript_blog_plugin_reconciles_like_the_rust_one() -> anyhow::Result<()> {
    blog_scenario_with("blog-js").await
}

#[tokio::test]
async fn the_c_blog_plugin_reconciles_like_the_rust_one() -> anyhow::Result<()> {
    blog_scenario_with("blog-c").await
}
