//! Scope widened only by the operator's policy (`plugins/metacontroller-propagation`, Python v2
//! hooks through the Metacontroller adapter): a cluster-scoped ConfigPropagation copies a
//! ConfigMap it reads in another namespace (`related` keyed `namespace/name`) into the namespaces
//! a label selects, only into those the policy's entry for the plugin allows; without the entry
//! the plugin is refused with the words it always was.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir::plugin::{LabelSelector, ResourceKind};
use weir::policy::{Grant, Policy};
use weir_e2e::{
    CONVERGE, TestEnv, condition, controlled_by, eventually, fast_config, kinds, plugin,
};

const PLUGIN: &str = "metacontroller-propagation";

fn config_propagation() -> ResourceKind {
    ResourceKind {
        group: "example.weir.dev".into(),
        version: "v1alpha1".into(),
        kind: "ConfigPropagation".into(),
        plural: "configpropagations".into(),
        namespaced: false,
    }
}

/// The policy an operator writes for the plugin: read the source's namespace, write copies
/// into namespaces labelled `weir-e2e/allowed=<env>`.
fn widening(env: &TestEnv) -> Policy {
    let grant = Grant {
        cluster_scoped_parent: true,
        namespaces: vec![env.namespace.clone()],
        namespace_selector: Some(LabelSelector {
            match_labels: BTreeMap::from([("weir-e2e/allowed".into(), env.namespace.clone())]),
            match_expressions: vec![],
        }),
        ..Grant::default()
    };
    Policy {
        plugins: BTreeMap::from([("config-propagation".into(), grant)]),
        ..Policy::default()
    }
}

async fn namespace(env: &TestEnv, name: &str, labels: Value) -> Result<()> {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?;
    Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

async fn label(env: &TestEnv, name: &str, labels: Value) -> Result<()> {
    let patch = Patch::Merge(json!({"metadata": {"labels": labels}}));
    Api::<Namespace>::all(env.client.clone())
        .patch(name, &PatchParams::default(), &patch)
        .await?;
    Ok(())
}

fn config_maps_in(env: &TestEnv, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(env.client.clone(), ns, &kinds::config_map().api_resource())
}

/// The copy of `settings` in `ns`, once its data is `data`.
async fn copied(env: &TestEnv, ns: &str, data: Value) -> Result<DynamicObject> {
    let api = config_maps_in(env, ns);
    eventually(
        &format!("the copy in {ns} holds {data}"),
        CONVERGE,
        || async {
            let copy = api.get_opt("settings").await.ok()??;
            (copy.data["data"] == data).then_some(copy)
        },
    )
    .await
}

#[tokio::test]
async fn a_cluster_scoped_parent_copies_a_config_map_into_the_labelled_namespaces_the_policy_allows()
-> Result<()> {
    let env = TestEnv::start().await?;
    let served = plugin(PLUGIN)?;
    env.install_crd(&served).await?;
    let (a, b) = (
        format!("{}-a", env.namespace),
        format!("{}-b", env.namespace),
    );
    let wants = json!({"weir-e2e/wants": env.namespace});
    let allowed = json!({"weir-e2e/wants": env.namespace, "weir-e2e/allowed": env.namespace});
    namespace(&env, &a, allowed.clone()).await?;
    // The hook selects B too, but the policy's entry does not allow it (yet).
    namespace(&env, &b, wants.clone()).await?;
    let source = config_maps_in(&env, &env.namespace);
    let settings: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": env.namespace},
        "data": {"mode": "fast"},
    }))?;
    source.create(&PostParams::default(), &settings).await?;

    let mut config = fast_config(&env.namespace);
    config.controller.namespace = None;
    config.policy = Arc::new(widening(&env));
    let host = env.host_with(&[served], config).await?;
    let parents: Api<DynamicObject> =
        Api::all_with(env.client.clone(), &config_propagation().api_resource());
    let parent: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.weir.dev/v1alpha1", "kind": "ConfigPropagation",
        "metadata": {"name": env.namespace},
        "spec": {
            "source": {"namespace": env.namespace, "name": "settings"},
            "namespaceSelector": {"matchLabels": {"weir-e2e/wants": env.namespace}},
        },
    }))?;
    parents.create(&PostParams::default(), &parent).await?;

    // A copy into B would leave the entry: the whole answer is refused, nothing is written.
    let refused = eventually("the copy into B is refused", CONVERGE, || async {
        let p = parents.get(&env.namespace).await.ok()?;
        let c = condition(&p, "Reconciled")?;
        (c["status"] == "False").then_some(c["message"].as_str()?.to_owned())
    })
    .await?;
    assert!(
        refused.contains(&format!(
            "asks for namespace {b:?}, which the policy's entry for this plugin does not allow"
        )),
        "{refused}"
    );
    assert!(
        config_maps_in(&env, &a)
            .get_opt("settings")
            .await?
            .is_none()
    );
    assert!(
        config_maps_in(&env, &b)
            .get_opt("settings")
            .await?
            .is_none()
    );

    // The operator allows B: both copies appear, owned by the cluster-scoped parent.
    label(&env, &b, allowed).await?;
    let copy_a = copied(&env, &a, json!({"mode": "fast"})).await?;
    copied(&env, &b, json!({"mode": "fast"})).await?;
    let owner = parents.get(&env.namespace).await?;
    assert!(
        controlled_by(&copy_a, &owner),
        "the copy is the parent's child"
    );
    let status = eventually("the status lists the copies", CONVERGE, || async {
        let p = parents.get(&env.namespace).await.ok()?;
        (p.data["status"]["copies"] == json!([a, b])).then_some(p)
    })
    .await?;
    assert_eq!(condition(&status, "Reconciled").unwrap()["status"], "True");

    // The source, read in another namespace by `namespace/name`, is followed.
    let edit = Patch::Merge(json!({"data": {"mode": "slow"}}));
    source
        .patch("settings", &PatchParams::default(), &edit)
        .await?;
    copied(&env, &a, json!({"mode": "slow"})).await?;
    copied(&env, &b, json!({"mode": "slow"})).await?;

    // B no longer selected by the hook: its copy is pruned, A's stays.
    label(&env, &b, json!({"weir-e2e/wants": null})).await?;
    let in_b = config_maps_in(&env, &b);
    eventually("B's copy is pruned", CONVERGE, || async {
        in_b.get_opt("settings").await.ok()?.is_none().then_some(())
    })
    .await?;
    assert!(
        config_maps_in(&env, &a)
            .get_opt("settings")
            .await?
            .is_some()
    );

    // The owner reference from a namespaced copy to the cluster-scoped parent is one Kubernetes
    // honours: deleting the parent collects the copies, and never the source.
    parents.delete(&env.namespace, &Default::default()).await?;
    let in_a = config_maps_in(&env, &a);
    eventually("A's copy goes with its parent", CONVERGE, || async {
        in_a.get_opt("settings").await.ok()?.is_none().then_some(())
    })
    .await?;
    assert!(
        source.get_opt("settings").await?.is_some(),
        "the source is not the parent's"
    );
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn without_the_policy_entry_the_cluster_scoped_plugin_is_refused_with_the_usual_message()
-> Result<()> {
    let env = TestEnv::start().await?;
    let served = plugin(PLUGIN)?;
    env.install_crd(&served).await?;
    let mut config = fast_config(&env.namespace);
    config.controller.namespace = None;
    let Err(refused) = env.host_with(&[served], config).await else {
        anyhow::bail!("the host served a cluster-scoped parent without a policy entry");
    };
    let text = format!("{refused:#}");
    assert!(
        text.contains(
            "plugin config-propagation@0.1.0: parent example.weir.dev/v1alpha1 ConfigPropagation is cluster-scoped; only namespaced parents are served"
        ),
        "{text}"
    );
    Ok(())
}
