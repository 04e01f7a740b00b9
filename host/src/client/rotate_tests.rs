//! A rotated client: later requests carry the new credentials, an open watch keeps streaming.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig};

use super::*;

/// The emulator's kubeconfig with `token` as its user's credentials, as a client config.
async fn config_with(emulator: &Emulator, token: &str) -> anyhow::Result<Config> {
    let mut kubeconfig = serde_json::to_value(emulator.kubeconfig())?;
    kubeconfig["users"][0]["user"]["token"] = json!(token);
    let kubeconfig: Kubeconfig = serde_json::from_value(kubeconfig)?;
    Ok(Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

fn config_map(name: &str) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({"metadata": {"name": name}}))?)
}

/// Who sent the last request the emulator served on `path`.
fn last_user(emulator: &Emulator, path: &str) -> Option<String> {
    let requests = emulator.requests();
    requests.iter().rev().find(|r| r.path == path)?.user.clone()
}

#[tokio::test]
async fn later_requests_carry_the_rotated_credentials_and_an_open_watch_keeps_streaming()
-> anyhow::Result<()> {
    let emulator = Emulator::start(EmulatorConfig {
        secure: true,
        ..EmulatorConfig::default()
    })
    .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(emulator.client(), "default");
    let account = serde_json::from_value(json!({"metadata": {"name": "next"}}))?;
    accounts.create(&PostParams::default(), &account).await?;
    let Some(admin) = emulator.admin_token() else {
        anyhow::bail!("a secure emulator has an admin token");
    };
    let Some(next) = emulator.service_account_token("default", "next") else {
        anyhow::bail!("the emulator issues a token for default/next");
    };
    let rotating = Rotating::build(
        config_with(&emulator, admin).await?,
        ClientLimits::default(),
    )?;
    let maps: Api<ConfigMap> = Api::namespaced(rotating.client().clone(), "default");
    let path = "/api/v1/namespaces/default/configmaps";
    let listed = maps.list(&ListParams::default()).await?;
    assert_eq!(last_user(&emulator, path).as_deref(), Some("system:admin"));
    let version = listed.metadata.resource_version.unwrap_or_default();
    let mut watch = maps.watch(&WatchParams::default(), &version).await?.boxed();

    rotating.rotate(config_with(&emulator, &next).await?)?;
    let refused = maps.list(&ListParams::default()).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403),
        "default/next may not list ConfigMaps: {refused:?}"
    );
    assert_eq!(
        last_user(&emulator, path).as_deref(),
        Some("system:serviceaccount:default:next"),
        "a request after the rotation carries the new token"
    );
    // The watch opened before the rotation streams on: its connection is the old one.
    Api::<ConfigMap>::namespaced(emulator.client(), "default")
        .create(&PostParams::default(), &config_map("after")?)
        .await?;
    let event = tokio::time::timeout(Duration::from_secs(10), watch.try_next()).await??;
    assert!(
        matches!(&event, Some(WatchEvent::Added(m)) if m.metadata.name.as_deref() == Some("after")),
        "the open watch saw the create: {event:?}"
    );

    let mut bad = config_with(&emulator, admin).await?;
    bad.root_cert = Some(vec![b"not a certificate".to_vec()]);
    assert!(
        rotating.rotate(bad).is_err(),
        "a config without a usable CA is refused"
    );
    let refused = maps.list(&ListParams::default()).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403),
        "the refused rotation left the connection in use: {refused:?}"
    );
    emulator.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_member_answering_503_is_asked_once_and_the_error_comes_back_at_once()
-> anyhow::Result<()> {
    let emulator = Emulator::start(EmulatorConfig::default()).await?;
    let config = Config::new(emulator.url().parse()?);
    let rotating = Rotating::build(config, ClientLimits::default())?;
    emulator.faults().set(vec![weir_emulator::Rule::new(
        &[],
        Some("configmaps"),
        weir_emulator::Fault::Status { code: 503 },
    )]);
    let maps: Api<ConfigMap> = Api::namespaced(rotating.client().clone(), "default");
    let answered =
        tokio::time::timeout(Duration::from_secs(5), maps.list(&ListParams::default())).await?;
    assert!(
        matches!(&answered, Err(kube::Error::Api(s)) if s.code == 503),
        "{answered:?}"
    );
    let asked = emulator
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/default/configmaps")
        .count();
    assert_eq!(asked, 1, "no retry inside the client");
    emulator.shutdown().await;
    Ok(())
}
