//! An object someone else creates after the host's cache was read is not taken over: the host
//! creates new children (never a forced apply), the `409 AlreadyExists` becomes the foreign-object
//! refusal, and the object stays as its author wrote it.
//!
//! The race window is held open deterministically: the ConfigMap informer's watch is cut and every
//! new list or watch of ConfigMaps answers 503, so the cache keeps its old view while the
//! foreign ConfigMap is created behind it.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin};
use weir_emulator::{Fault, Rule, Verb};

#[tokio::test]
async fn a_child_created_by_someone_else_behind_the_cache_is_refused_not_taken_over()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        return Ok(()); // Holding the cache stale needs the emulator's fault injection.
    };
    let scenario = plugin("scenario")?;
    env.install_crd(&scenario).await?;
    let host = env.host(&[scenario]).await?;
    let parents = env.api(&kinds::scenario());
    let cms = env.typed::<ConfigMap>();

    // The ConfigMap informer works: a first parent gets its child.
    env.create(&kinds::scenario(), "warm", json!({"configMaps": ["w"]}))
        .await?;
    eventually("the warm-up child is cached", CONVERGE, || async {
        let p = parents.get("warm").await.ok()?;
        (p.data["status"]["configMaps"] == 1).then_some(())
    })
    .await?;

    // Freeze the host's view of ConfigMaps, then create the foreign object behind it.
    emulator.faults().set(vec![Rule::new(
        &[Verb::List, Verb::Watch],
        Some("configmaps"),
        Fault::Status { code: 503 },
    )]);
    emulator.drop_watches();
    let foreign: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "taken"}, "data": {"mine": "yes"}}))?;
    let before = cms.create(&PostParams::default(), &foreign).await?;

    env.create(
        &kinds::scenario(),
        "racer",
        json!({"configMaps": ["taken"]}),
    )
    .await?;
    let message = eventually("the racer is refused", CONVERGE, || async {
        let c = condition(&parents.get("racer").await.ok()?, "Reconciled")?;
        (c["status"] == "False" && c["reason"] == "Refused")
            .then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await?;
    assert!(
        message.contains("taken") && message.contains("not owned by any controller"),
        "{message}"
    );
    assert!(
        emulator
            .faults()
            .injected()
            .get("status")
            .is_some_and(|n| *n > 0),
        "the cache really was held stale"
    );

    let after = cms.get("taken").await?;
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "the foreign object was not written"
    );
    assert!(after.metadata.owner_references.is_none());
    let path = format!("/api/v1/namespaces/{}/configmaps", env.namespace);
    let by_host = |r: &weir_emulator::RequestRecord| {
        r.field_manager.as_deref() == Some("weir/scenario") && r.path.starts_with(&path)
    };
    let requests = emulator.requests();
    assert!(
        requests
            .iter()
            .any(|r| by_host(r) && r.method == "POST" && r.status == 409),
        "the host created the child and met the foreign object"
    );
    assert!(
        !requests
            .iter()
            .any(|r| by_host(r) && r.method == "PATCH" && r.path.ends_with("/taken")),
        "no apply was sent to the foreign object"
    );

    emulator.faults().clear();
    host.shutdown().await;
    Ok(())
}
