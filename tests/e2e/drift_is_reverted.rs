//! The seed's three drift cases: a hand-edited replica count, a changed image (the seed's
//! `rollout undo`) and a removed annotation are each put back.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, wait_ready};

fn as_user() -> PatchParams {
    PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..PatchParams::default()
    }
}

#[tokio::test]
async fn hand_edits_of_a_child_are_reverted() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("blog").await?;
    env.create(&kinds::blog(), "b", json!({"title": "t", "replicas": 2}))
        .await?;
    wait_ready(&env.api(&kinds::blog()), "b").await?;
    let deployments = env.typed::<Deployment>();
    let desired = deployments.get("b").await?;
    let image = desired
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|p| p.containers[0].image.clone());
    // The Blog's own annotations; the deployment controller's revision ones change with every
    // rollout (as in a cluster), the image edit below included.
    let mut annotations = desired.metadata.annotations.clone().unwrap_or_default();
    annotations.retain(|k, _| !k.starts_with("deployment.kubernetes.io/"));
    assert!(
        !annotations.is_empty(),
        "the Deployment carries annotations to remove"
    );

    deployments
        .patch(
            "b",
            &as_user(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await?;
    eventually("replicas are back to 2", CONVERGE, || async {
        (deployments.get("b").await.ok()?.spec?.replicas == Some(2)).then_some(())
    })
    .await?;

    let containers = json!([{"name": "web", "image": "nginx:0.1-old"}]);
    deployments
        .patch(
            "b",
            &as_user(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": containers}}}})),
        )
        .await?;
    eventually("the image is restored", CONVERGE, || async {
        let d = deployments.get("b").await.ok()?;
        let now = d.spec?.template.spec.map(|p| p.containers[0].image.clone());
        (now == image).then_some(())
    })
    .await?;

    let removed: serde_json::Map<String, serde_json::Value> = annotations
        .keys()
        .map(|k| (k.clone(), serde_json::Value::Null))
        .collect();
    deployments
        .patch(
            "b",
            &as_user(),
            &Patch::Merge(json!({"metadata": {"annotations": removed}})),
        )
        .await?;
    eventually("the annotations are restored", CONVERGE, || async {
        let now = deployments
            .get("b")
            .await
            .ok()?
            .metadata
            .annotations
            .unwrap_or_default();
        annotations
            .iter()
            .all(|(k, v)| now.get(k) == Some(v))
            .then_some(())
    })
    .await?;
    host.shutdown().await;
    Ok(())
}
