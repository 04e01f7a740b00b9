//! Scope widened only by the operator's policy (`plugins/metacontroller-propagation`, Python v1
//! hooks through the Metacontroller adapter), served by `weir dev --policy FILE` as a user runs
//! it: a cluster-scoped ConfigPropagation copies a ConfigMap it reads in another namespace into
//! the namespaces a label selects, only into those the policy's entry for the plugin allows;
//! without the entry the plugin is refused with the words it always was. Its v1 hooks key objects
//! as Metacontroller's do under a cluster-scoped parent: the source in `related` and each copy in
//! `children` by `namespace/name`, and each copy is written into the namespace it names. `weir
//! dev` brings its own emulator: with `KUBECONFIG` set these still run there.

use anyhow::Result;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use weir::plugin::ResourceKind;
use weir_e2e::weir_dev::WeirDev;
use weir_e2e::{CONVERGE, condition, controlled_by, eventually, kinds};

const COMPONENT: &str = "metacontroller-propagation.wasm";

/// The policy an operator writes for the plugin (its README's): read the source's namespace,
/// write copies into the namespaces labelled `example.weir.dev/propagate=true`.
const WIDENING: &str = r#"
plugins:
  config-propagation:
    clusterScopedParent: true
    namespaces: [config-source]
    namespaceSelector:
      matchLabels: {example.weir.dev/propagate: "true"}
"#;

fn config_propagation() -> ResourceKind {
    ResourceKind {
        group: "example.weir.dev".into(),
        version: "v1alpha1".into(),
        kind: "ConfigPropagation".into(),
        plural: "configpropagations".into(),
        namespaced: false,
    }
}

async fn namespace(client: &Client, name: &str, labels: Value) -> Result<()> {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(())
}

async fn label(client: &Client, name: &str, labels: Value) -> Result<()> {
    let patch = Patch::Merge(json!({"metadata": {"labels": labels}}));
    Api::<Namespace>::all(client.clone())
        .patch(name, &PatchParams::default(), &patch)
        .await?;
    Ok(())
}

fn config_maps_in(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &kinds::config_map().api_resource())
}

/// The copy of `settings` in `ns`, once its data is `data`.
async fn copied(client: &Client, ns: &str, data: Value) -> Result<DynamicObject> {
    let api = config_maps_in(client, ns);
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
    let dir = tempfile::tempdir()?;
    let mut dev = WeirDev::start(dir.path(), COMPONENT, Some(WIDENING))?;
    let client = dev.serving(&config_propagation()).await?;
    let (a, b) = ("team-a", "team-b");
    let wants = json!({"example.weir.dev/settings": "wanted"});
    let allowed =
        json!({"example.weir.dev/settings": "wanted", "example.weir.dev/propagate": "true"});
    namespace(&client, "config-source", json!({})).await?;
    namespace(&client, a, allowed.clone()).await?;
    // The hook selects B too, but the policy's entry does not allow it (yet).
    namespace(&client, b, wants.clone()).await?;
    let source = config_maps_in(&client, "config-source");
    let settings: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "config-source"},
        "data": {"mode": "fast"},
    }))?;
    source.create(&PostParams::default(), &settings).await?;

    let parents: Api<DynamicObject> =
        Api::all_with(client.clone(), &config_propagation().api_resource());
    let parent: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.weir.dev/v1alpha1", "kind": "ConfigPropagation",
        "metadata": {"name": "settings"},
        "spec": {
            "source": {"namespace": "config-source", "name": "settings"},
            "namespaceSelector": {"matchLabels": wants},
        },
    }))?;
    parents.create(&PostParams::default(), &parent).await?;

    // A copy into B would leave the entry: the whole answer is refused, nothing is written.
    let refused = eventually("the copy into B is refused", CONVERGE, || async {
        let p = parents.get("settings").await.ok()?;
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
    for ns in [a, b] {
        let copy = config_maps_in(&client, ns).get_opt("settings").await?;
        assert!(copy.is_none(), "a refused answer wrote a copy into {ns}");
    }

    // The operator allows B: both copies appear, owned by the cluster-scoped parent.
    label(&client, b, allowed).await?;
    let copy_a = copied(&client, a, json!({"mode": "fast"})).await?;
    copied(&client, b, json!({"mode": "fast"})).await?;
    let owner = parents.get("settings").await?;
    assert!(
        controlled_by(&copy_a, &owner),
        "the copy is the parent's child"
    );
    // The hook saw both copies among its children, under `namespace/name` (a v1 hook keyed by
    // name alone would find none there).
    let status = eventually(
        "the status lists the copies, each seen",
        CONVERGE,
        || async {
            let p = parents.get("settings").await.ok()?;
            let status = &p.data["status"];
            (status["copies"] == json!([a, b]) && status["present"] == json!([a, b])).then_some(p)
        },
    )
    .await?;
    let reconciled = condition(&status, "Reconciled");
    assert_eq!(reconciled.map(|c| c["status"].clone()), Some(json!("True")));

    // The source, read in another namespace by `namespace/name`, is followed.
    let edit = Patch::Merge(json!({"data": {"mode": "slow"}}));
    source
        .patch("settings", &PatchParams::default(), &edit)
        .await?;
    copied(&client, a, json!({"mode": "slow"})).await?;
    copied(&client, b, json!({"mode": "slow"})).await?;

    // B no longer selected by the hook: its copy is pruned, A's stays.
    label(&client, b, json!({"example.weir.dev/settings": null})).await?;
    let in_b = config_maps_in(&client, b);
    eventually("B's copy is pruned", CONVERGE, || async {
        in_b.get_opt("settings").await.ok()?.is_none().then_some(())
    })
    .await?;
    assert!(
        config_maps_in(&client, a)
            .get_opt("settings")
            .await?
            .is_some()
    );

    // The owner reference from a namespaced copy to the cluster-scoped parent is one Kubernetes
    // honours: deleting the parent collects the copies, and never the source.
    parents.delete("settings", &Default::default()).await?;
    let in_a = config_maps_in(&client, a);
    eventually("A's copy goes with its parent", CONVERGE, || async {
        in_a.get_opt("settings").await.ok()?.is_none().then_some(())
    })
    .await?;
    assert!(
        source.get_opt("settings").await?.is_some(),
        "the source is not the parent's"
    );
    dev.check_running()?;
    Ok(())
}

#[tokio::test]
async fn without_the_policy_entry_the_cluster_scoped_plugin_is_refused_with_the_usual_message()
-> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut dev = WeirDev::start(dir.path(), COMPONENT, None)?;
    let client = dev.client().await?;
    let refused = dev
        .logged("refused plugin metacontroller-propagation.wasm")
        .await?;
    assert!(
        refused.contains(
            "plugin config-propagation@0.1.0: parent example.weir.dev/v1alpha1 ConfigPropagation is cluster-scoped; only namespaced parents are served"
        ),
        "{refused}"
    );
    // Refused before anything is written: not even its CRD is installed.
    let crds = Api::<CustomResourceDefinition>::all(client);
    assert!(
        crds.get_opt("configpropagations.example.weir.dev")
            .await?
            .is_none(),
        "a refused plugin's CRD was installed"
    );
    dev.check_running()?;
    Ok(())
}
