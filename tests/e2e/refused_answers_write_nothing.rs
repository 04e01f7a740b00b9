//! A plugin asking for another namespace, an undeclared kind, or an object it does not own is
//! refused as a whole: nothing is written, and the parent says why.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::PostParams;
use serde_json::json;
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin};

async fn refusal(env: &TestEnv, name: &str) -> anyhow::Result<String> {
    let parents = env.api(&kinds::scenario());
    eventually(&format!("{name} is refused"), CONVERGE, || async {
        let c = condition(&parents.get(name).await.ok()?, "Reconciled")?;
        (c["status"] == "False" && c["reason"] == "Refused")
            .then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await
}

#[tokio::test]
async fn another_namespace_an_undeclared_kind_and_a_foreign_object_are_refused()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let scenario = plugin("scenario")?;
    env.install_crd(&scenario).await?;
    let other = format!("{}-other", env.namespace);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": other}}))?;
    kube::Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    let foreign: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "foreign"}, "data": {"mine": "yes"}}))?;
    env.typed::<ConfigMap>()
        .create(&PostParams::default(), &foreign)
        .await?;
    let host = env.host(&[scenario]).await?;

    env.create(
        &kinds::scenario(),
        "elsewhere",
        json!({"configMaps": ["a"], "namespace": other}),
    )
    .await?;
    env.create(
        &kinds::scenario(),
        "secret",
        json!({"configMaps": ["b"], "secret": "s"}),
    )
    .await?;
    env.create(
        &kinds::scenario(),
        "adopter",
        json!({"configMaps": ["c", "foreign"]}),
    )
    .await?;

    let msg = refusal(&env, "elsewhere").await?;
    assert!(msg.contains(&other), "{msg}");
    let msg = refusal(&env, "secret").await?;
    assert!(msg.contains("Secret"), "{msg}");
    let msg = refusal(&env, "adopter").await?;
    assert!(msg.contains("foreign"), "{msg}");

    let cms = env.typed::<ConfigMap>();
    for name in ["a", "b", "c"] {
        assert!(
            cms.get_opt(name).await?.is_none(),
            "nothing of a refused answer is written ({name})"
        );
    }
    assert!(
        kube::Api::<ConfigMap>::namespaced(env.client.clone(), &other)
            .get_opt("a")
            .await?
            .is_none()
    );
    let untouched = cms.get("foreign").await?;
    assert!(
        untouched.metadata.owner_references.is_none(),
        "the foreign object is not adopted"
    );
    assert_eq!(
        untouched
            .data
            .unwrap_or_default()
            .get("mine")
            .map(String::as_str),
        Some("yes")
    );
    assert!(
        !host.metrics().encode().contains(r#"verb="apply""#),
        "no child was applied"
    );
    host.shutdown().await;
    Ok(())
}
