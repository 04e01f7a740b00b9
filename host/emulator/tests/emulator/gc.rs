use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::{api_error, configmap, emulator, eventually};

async fn gone(api: &Api<ConfigMap>, name: &str) -> bool {
    api.get_opt(name).await.unwrap().is_none()
}

async fn clear_finalizers(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn finalizers_keep_a_deleted_object_until_they_are_removed() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("f")
        .finalizer("example.com/hold")
        .create(&api)
        .await;
    let answer = api.delete("f", &DeleteParams::default()).await.unwrap();
    let pending = answer
        .left()
        .expect("a pending deletion returns the object");
    assert!(pending.metadata.deletion_timestamp.is_some());
    let still = api.get("f").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    assert_eq!(still.finalizers(), ["example.com/hold".to_string()]);
    clear_finalizers(&api, "f").await;
    assert!(gone(&api, "f").await);
}

#[tokio::test]
async fn background_deletion_collects_dependents_in_cascade() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let owner = configmap("owner").create(&api).await;
    let child = configmap("child").owned_by(&owner).create(&api).await;
    configmap("grandchild").owned_by(&child).create(&api).await;
    let other = configmap("other").create(&api).await;
    configmap("shared")
        .owned_by(&owner)
        .owned_by(&other)
        .create(&api)
        .await;
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    for name in ["owner", "child", "grandchild"] {
        assert!(gone(&api, name).await, "{name} should be collected");
    }
    let shared = api.get("shared").await.unwrap();
    let owners: Vec<String> = shared
        .owner_references()
        .iter()
        .map(|r| r.name.clone())
        .collect();
    assert_eq!(
        owners,
        vec!["other"],
        "a dependent with a live owner stays and loses the dead reference"
    );
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let owner = configmap("owner").create(&api).await;
    configmap("child")
        .owned_by(&owner)
        .finalizer("example.com/slow")
        .create(&api)
        .await;
    api.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let waiting = api.get("owner").await.unwrap();
    assert!(
        waiting
            .finalizers()
            .contains(&"foregroundDeletion".to_string())
    );
    assert!(
        api.get("child")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    clear_finalizers(&api, "child").await;
    eventually("owner removed after its dependent", || async {
        gone(&api, "owner").await.then_some(())
    })
    .await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_owner_reference() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let owner = configmap("owner").create(&api).await;
    configmap("child").owned_by(&owner).create(&api).await;
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    assert!(gone(&api, "owner").await);
    let child = api.get("child").await.unwrap();
    assert!(child.owner_references().is_empty());
}

#[tokio::test]
async fn delete_preconditions_are_checked() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let cm = configmap("p").create(&api).await;
    let wrong = DeleteParams::default().preconditions(Preconditions {
        uid: Some("nope".into()),
        resource_version: None,
    });
    let err = api_error(api.delete("p", &wrong).await.unwrap_err());
    assert_eq!(err.code, 409);
    assert!(
        err.message.contains("Precondition failed"),
        "{}",
        err.message
    );
    let right = DeleteParams::default().preconditions(Preconditions {
        uid: cm.uid(),
        resource_version: cm.resource_version(),
    });
    api.delete("p", &right).await.unwrap();
    assert!(gone(&api, "p").await);
}

#[tokio::test]
async fn a_json_patch_test_of_an_absent_field_against_null_passes_as_kube_runtime_finalizers_expect()
 {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    configmap("f").create(&api).await;
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["weir.dev/cleanup"]}
    ]))
    .unwrap();
    let patched = api
        .patch("f", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(patched.finalizers(), ["weir.dev/cleanup".to_string()]);
    let again: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null}
    ]))
    .unwrap();
    let err = api_error(
        api.patch("f", &PatchParams::default(), &Patch::<()>::Json(again))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "a present field still fails a null test");
}

#[tokio::test]
async fn a_dependent_written_after_its_owner_went_is_collected() {
    let em = emulator().await;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());
    let owner = configmap("owner").create(&api).await;
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    // A controller writing from a cache that still shows the owner: the reference names a uid
    // nothing serves any more, and the collector deletes the dependent, as kube-controller-manager's does.
    configmap("late").owned_by(&owner).create(&api).await;
    assert!(
        gone(&api, "late").await,
        "a dependent of a gone owner is collected"
    );
    let alive = configmap("alive").create(&api).await;
    configmap("kept").owned_by(&alive).create(&api).await;
    assert!(
        !gone(&api, "kept").await,
        "a dependent of a live owner stays"
    );
}
