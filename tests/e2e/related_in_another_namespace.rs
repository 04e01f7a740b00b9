//! A namespaced parent whose v2 hook reads a related object in another namespace, keyed
//! `namespace/name` (`plugins/metacontroller-secret-import-js`, async JavaScript hooks through
//! the Metacontroller adapter), served by `weir dev --policy FILE`: a SecretImport in `team`
//! copies the Secret `shared/registry` beside itself. The policy's entry allows the read
//! (`namespaces`) and, separately, the Secret's data (`secretData`); without the entry the read
//! is refused with the message it always was, and nothing is written. A v2 hook keys a Secret of
//! the parent's own namespace `namespace/name` too (`team/local`, where a v1 hook would see
//! `local`): pointed at one, the hook finds it there. `weir dev` brings its own emulator: with
//! `KUBECONFIG` set these still run there.

use std::collections::BTreeMap;

use anyhow::Result;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use weir::plugin::ResourceKind;
use weir_e2e::weir_dev::WeirDev;
use weir_e2e::{CONVERGE, condition, eventually};

const COMPONENT: &str = "metacontroller-secret-import-js.wasm";

fn secret_import() -> ResourceKind {
    ResourceKind {
        group: "example.weir.dev".into(),
        version: "v1alpha1".into(),
        kind: "SecretImport".into(),
        plural: "secretimports".into(),
        namespaced: true,
    }
}

/// `weir dev` serving the plugin under `policy`, with the namespaces `team` and `shared`, the
/// Secret `shared/registry` and, in `team`, the SecretImport `registry` of it.
async fn imported(dir: &std::path::Path, policy: Option<&str>) -> Result<(WeirDev, Client)> {
    let mut dev = WeirDev::start(dir, COMPONENT, policy)?;
    let client = dev.serving(&secret_import()).await?;
    for name in ["team", "shared"] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
    }
    let source = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("registry".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "password".to_owned(),
            ByteString(b"s3cret".to_vec()),
        )])),
        ..Default::default()
    };
    Api::<Secret>::namespaced(client.clone(), "shared")
        .create(&PostParams::default(), &source)
        .await?;
    let import: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.weir.dev/v1alpha1", "kind": "SecretImport",
        "metadata": {"name": "registry", "namespace": "team"},
        "spec": {"from": {"namespace": "shared", "name": "registry"}},
    }))?;
    imports(&client)
        .create(&PostParams::default(), &import)
        .await?;
    Ok((dev, client))
}

fn imports(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "team", &secret_import().api_resource())
}

/// The SecretImport's status, once it satisfies `done`.
async fn status_when(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Result<Value> {
    let api = imports(client);
    eventually(what, CONVERGE, || async {
        let import = api.get("registry").await.ok()?;
        let status = import.data.get("status")?.clone();
        done(&status).then_some(status)
    })
    .await
}

/// The copy `team/registry`'s data, once it exists and `done` holds of it.
async fn copy_when(
    client: &Client,
    what: &str,
    done: impl Fn(&BTreeMap<String, ByteString>) -> bool,
) -> Result<BTreeMap<String, ByteString>> {
    let api = Api::<Secret>::namespaced(client.clone(), "team");
    eventually(what, CONVERGE, || async {
        let data = api
            .get_opt("registry")
            .await
            .ok()??
            .data
            .unwrap_or_default();
        done(&data).then_some(data)
    })
    .await
}

fn password(data: &BTreeMap<String, ByteString>) -> Option<&[u8]> {
    data.get("password").map(|b| b.0.as_slice())
}

#[tokio::test]
async fn a_v2_hook_reads_a_secret_in_another_namespace_by_namespace_and_name_with_its_data_as_the_policy_allows()
-> Result<()> {
    let dir = tempfile::tempdir()?;
    let policy = "plugins:\n  secret-import:\n    namespaces: [shared]\n    secretData: true\n";
    let (mut dev, client) = imported(dir.path(), Some(policy)).await?;

    let status = status_when(&client, "the import names its source", |s| {
        s["source"] == "shared/registry"
    })
    .await?;
    assert_eq!(status["keys"], json!(["password"]), "{status}");
    let copy = copy_when(&client, "the copy holds the password", |d| {
        password(d) == Some(b"s3cret")
    })
    .await?;
    assert_eq!(copy.len(), 1, "only the source's data: {copy:?}");
    let import = imports(&client).get("registry").await?;
    let reconciled = condition(&import, "Reconciled");
    assert_eq!(reconciled.map(|c| c["status"].clone()), Some(json!("True")));

    // The source, read in another namespace, is followed.
    let rotate = Patch::Merge(json!({"data": {"password": "cm90YXRlZA=="}}));
    Api::<Secret>::namespaced(client.clone(), "shared")
        .patch("registry", &PatchParams::default(), &rotate)
        .await?;
    copy_when(&client, "the copy follows the rotated password", |d| {
        password(d) == Some(b"rotated")
    })
    .await?;

    // A source in the parent's own namespace: a v2 hook finds it under `team/local` as well.
    let local: Secret = serde_json::from_value(json!({
        "metadata": {"name": "local"},
        "data": {"password": "bG9jYWw="},
    }))?;
    Api::<Secret>::namespaced(client.clone(), "team")
        .create(&PostParams::default(), &local)
        .await?;
    let repoint = Patch::Merge(json!({"spec": {"from": {"namespace": "team", "name": "local"}}}));
    imports(&client)
        .patch("registry", &PatchParams::default(), &repoint)
        .await?;
    status_when(&client, "the import names its local source", |s| {
        s["source"] == "team/local"
    })
    .await?;
    copy_when(&client, "the copy holds the local password", |d| {
        password(d) == Some(b"local")
    })
    .await?;
    dev.check_running()?;
    Ok(())
}

#[tokio::test]
async fn an_entry_without_secret_data_lets_the_hook_read_the_secret_without_its_data() -> Result<()>
{
    let dir = tempfile::tempdir()?;
    let policy = "plugins:\n  secret-import:\n    namespaces: [shared]\n";
    let (mut dev, client) = imported(dir.path(), Some(policy)).await?;

    // The hook found the source under `shared/registry`, and saw no data in it.
    let status = status_when(&client, "the import names its source", |s| {
        s["source"] == "shared/registry"
    })
    .await?;
    assert_eq!(status["keys"], json!([]), "{status}");
    let copy = copy_when(&client, "the copy is written", |_| true).await?;
    assert!(copy.is_empty(), "the hook saw the Secret's data: {copy:?}");
    dev.check_running()?;
    Ok(())
}

#[tokio::test]
async fn without_the_policy_entry_the_read_in_another_namespace_is_refused_with_the_usual_message()
-> Result<()> {
    let dir = tempfile::tempdir()?;
    let (mut dev, client) = imported(dir.path(), None).await?;

    let api = imports(&client);
    let refused = eventually("the read in shared is refused", CONVERGE, || async {
        let import = api.get("registry").await.ok()?;
        let c = condition(&import, "Reconciled")?;
        (c["status"] == "False").then_some(c["message"].as_str()?.to_owned())
    })
    .await?;
    assert!(
        refused.contains(
            r#"selection #0 reads Secret in namespace "shared"; related objects are read in the parent's namespace "team" only"#
        ),
        "{refused}"
    );
    let copy = Api::<Secret>::namespaced(client, "team")
        .get_opt("registry")
        .await?;
    assert!(copy.is_none(), "a refused selection wrote a copy");
    assert!(
        api.get("registry")
            .await?
            .data
            .get("status")
            .is_none_or(|s| s.get("source").is_none()),
        "the hook never ran"
    );
    dev.check_running()?;
    Ok(())
}
