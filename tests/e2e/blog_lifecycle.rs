//! The seed's Blog: applied → ConfigMap, Deployment and Service owned by it, Ready once the
//! Deployment is available; replicas 2 → 5 scales the Deployment; a deleted child comes back.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::DeleteParams;
use serde_json::json;
use weir_e2e::{
    CONVERGE, TestEnv, condition, controlled_by, eventually, kinds, plugin, wait_ready,
};

#[tokio::test]
async fn a_new_blog_gets_its_children_and_becomes_ready() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let host = env.host(&[blog]).await?;
    env.create(
        &kinds::blog(),
        "my-blog",
        json!({"title": "Xiaoming blog", "replicas": 2}),
    )
    .await?;

    let parent = wait_ready(&env.api(&kinds::blog()), "my-blog").await?;
    let page = env.api(&kinds::config_map()).get("my-blog-page").await?;
    let web = env.api(&kinds::deployment()).get("my-blog").await?;
    let svc = env.api(&kinds::service()).get("my-blog").await?;
    for child in [&page, &web, &svc] {
        assert!(
            controlled_by(child, &parent),
            "{:?} is controlled by the Blog",
            child.metadata.name
        );
        let owner = &child.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert_eq!(
            child.metadata.labels.as_ref().unwrap()["weir.dev/parent-uid"],
            parent.metadata.uid.clone().unwrap()
        );
    }
    assert!(serde_json::to_string(&page.data)?.contains("Xiaoming blog"));
    assert_eq!(
        parent.data["status"]["observedGeneration"],
        json!(parent.metadata.generation)
    );
    let reconciled = condition(&parent, "Reconciled").unwrap();
    assert_eq!(reconciled["reason"], "Reconciled");
    assert!(reconciled["lastTransitionTime"].is_string());
    let ready_calls = env.emulator.as_ref().map(|e| {
        e.requests()
            .iter()
            .filter(|r| r.field_manager.as_deref() == Some("weir/blog"))
            .count()
    });
    assert!(
        ready_calls.is_none_or(|n| n >= 3),
        "children were applied with field manager weir/blog"
    );
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn changing_replicas_scales_the_deployment() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("blog").await?;
    let blogs = env.api(&kinds::blog());
    env.create(&kinds::blog(), "b", json!({"title": "t", "replicas": 2}))
        .await?;
    wait_ready(&blogs, "b").await?;

    env.patch_spec(&kinds::blog(), "b", json!({"replicas": 5}))
        .await?;
    let deployments = env.typed::<Deployment>();
    eventually("the Deployment has 5 replicas", CONVERGE, || async {
        (deployments.get("b").await.ok()?.spec?.replicas == Some(5)).then_some(())
    })
    .await?;
    let parent = wait_ready(&blogs, "b").await?;
    assert_eq!(parent.data["status"]["readyReplicas"], 5);
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_deleted_child_is_recreated() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("blog").await?;
    env.create(&kinds::blog(), "b", json!({"title": "t", "replicas": 1}))
        .await?;
    wait_ready(&env.api(&kinds::blog()), "b").await?;

    let services = env.api(&kinds::service());
    let old = services.get("b").await?;
    services.delete("b", &DeleteParams::default()).await?;
    let new = eventually("the Service is recreated", CONVERGE, || async {
        services
            .get_opt("b")
            .await
            .ok()?
            .filter(|s| s.metadata.uid != old.metadata.uid)
    })
    .await?;
    assert!(new.metadata.owner_references.is_some());
    host.shutdown().await;
    Ok(())
}
