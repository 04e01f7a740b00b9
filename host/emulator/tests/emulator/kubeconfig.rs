//! The kubeconfig the emulator writes, as the Python and JavaScript clients read it.

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

use crate::emulator;

#[tokio::test]
async fn the_written_kubeconfig_has_a_user_key_and_skips_tls_verification() {
    let em = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    em.write_kubeconfig(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: Value = serde_saphyr::from_str(&text).unwrap();

    // The Python client: "Invalid kube-config file. Expected key user in users[0]".
    assert!(
        doc["users"][0]["user"].is_object(),
        "users[0] has no `user:` mapping:\n{text}"
    );
    // client-node refuses an http:// server unless the cluster skips TLS verification.
    assert_eq!(
        doc["clusters"][0]["cluster"]["insecure-skip-tls-verify"],
        Value::Bool(true),
        "{text}"
    );
    assert_eq!(
        doc["clusters"][0]["cluster"]["server"],
        Value::String(em.url())
    );

    // And a client built from the file alone still talks to the emulator.
    let kubeconfig = Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    let list = namespaces.list(&Default::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
}
