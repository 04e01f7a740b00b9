//! Watch streams dropped and the history compacted (resume answers 410 Gone): the host relists,
//! resumes, and keeps reconciling.

use k8s_openapi::api::apps::v1::Deployment;
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, wait_ready};

#[tokio::test]
async fn dropped_watches_and_a_410_are_recovered_from() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        anyhow::bail!(
            "this scenario needs the emulator (it drops watches and compacts history); unset KUBECONFIG"
        );
    };
    let host = env.serve("blog").await?;
    let blogs = env.api(&kinds::blog());
    env.create(&kinds::blog(), "b", json!({"title": "t", "replicas": 1}))
        .await?;
    wait_ready(&blogs, "b").await?;

    emulator.compact();
    emulator.drop_watches();
    env.patch_spec(&kinds::blog(), "b", json!({"replicas": 3}))
        .await?;
    let deployments = env.typed::<Deployment>();
    eventually(
        "the change made during the outage is reconciled",
        CONVERGE,
        || async { (deployments.get("b").await.ok()?.spec?.replicas == Some(3)).then_some(()) },
    )
    .await?;
    env.create(
        &kinds::blog(),
        "after",
        json!({"title": "t", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "after").await?;
    host.shutdown().await;
    Ok(())
}
