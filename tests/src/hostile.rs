//! The hostile plugin's attacks as a host meets them: which run, what they aim at, how they start.
//!
//! One list for the end-to-end test (`tests/e2e/hostile.rs`, which judges every attack) and for
//! `weir-bench hostile` (which measures the shipped `weir run` binary while they all run). The
//! attacks themselves are in `tests/plugins/hostile`.

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use weir::plugin::ResourceKind;

use crate::eventually;

/// The variants `plugins/build.sh` builds (`target/plugins/hostile-<variant>.wasm`): their
/// attack is what they declare.
pub const VARIANTS: &[&str] = &[
    "parent-secret",
    "claims",
    "wildcard",
    "crd-other",
    "unserved",
];

/// Attacks run on several parents at once: guests that never answer, to starve the call slots.
pub const STUCK: &[(&str, usize)] = &[("sleep", 4), ("spin", 2)];

/// The `Attack` parents' attacks, one parent each (after the stuck ones).
pub const ATTACKS: &[&str] = &[
    "token-secret",
    "read-secret",
    "user-secret",
    "huge-error",
    "log-flood",
    "log-forge",
    "stdio",
    "requeue-zero",
    "requeue-now",
    "finalize-zero",
    "churn",
    "huge-status",
    "huge-answer",
    "conditions-flood",
    "child-finalizers",
    "forge-owner",
    "elsewhere",
    "adopt",
    "duplicate",
    "invalid-name",
    "many",
    "invalid-json",
    "memory",
    "trap",
    "env",
    "fs",
    "net",
];

/// The line the `log-forge` attack logs after a newline, shaped like one of the host's own.
pub const FORGED_LINE: &str = "2025-01-01T00:00:00.000000Z  INFO weir::reconcile::apply: applied child kind=Secret name=admin-token";

/// The user's password, as the user's Secret holds it (base64 of `hunter2`).
pub const USER_PASSWORD_B64: &str = "aHVudGVyMg==";

/// The hostile plugin's parent kind.
pub fn attack_kind() -> ResourceKind {
    ResourceKind {
        group: "test.weir.dev".into(),
        version: "v1".into(),
        kind: "Attack".into(),
        plural: "attacks".into(),
        namespaced: true,
    }
}

/// The components of a plugins directory under attack: the Blog, the hostile plugin and its
/// variants (file names in `target/plugins`).
pub fn plugin_files() -> Vec<String> {
    let mut files = vec!["blog.wasm".to_owned(), "hostile.wasm".to_owned()];
    files.extend(VARIANTS.iter().map(|v| format!("hostile-{v}.wasm")));
    files
}

/// Creates the user's objects the attacks aim at in `namespace` (a Secret, a ConfigMap) and
/// another namespace; returns that namespace's name.
pub async fn user_objects(client: &Client, namespace: &str) -> Result<String> {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "user-credentials"},
        "data": {"password": USER_PASSWORD_B64},
    }))?;
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    let foreign: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "foreign"}, "data": {"mine": "yes"}}))?;
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &foreign)
        .await?;
    let other = format!("{namespace}-other");
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": other}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(other)
}

/// `host:port` of an API server URL (the `net` attack's target: something surely listening).
pub fn host_port(url: &str) -> String {
    url.split("://")
        .last()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned()
}

/// Where an attack aims (`spec.target`): the user's objects, the other namespace, the API server.
fn target(attack: &str, other: &str, api_server: &str) -> String {
    match attack {
        "user-secret" => "user-credentials".to_owned(),
        "elsewhere" => other.to_owned(),
        "adopt" => "foreign".to_owned(),
        "net" => api_server.to_owned(),
        _ => String::new(),
    }
}

fn parent(name: &str, spec: Value) -> Result<DynamicObject> {
    let kind = attack_kind();
    Ok(serde_json::from_value(json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind,
        "metadata": {"name": name},
        "spec": spec,
    }))?)
}

/// Starts every attack in `namespace`: `finalize-zero` first (deleted once the host holds its
/// finalizer, before the stuck guests hold the call slots), then the stuck guests, then the
/// rest. Returns each parent's name and attack.
pub async fn launch(
    client: &Client,
    namespace: &str,
    other: &str,
    api_server: &str,
    budget: Duration,
) -> Result<Vec<(String, &'static str)>> {
    let parents: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &attack_kind().api_resource());
    let pp = PostParams::default();
    parents
        .create(
            &pp,
            &parent("finalize-zero", json!({"attack": "finalize-zero"}))?,
        )
        .await
        .context("creating finalize-zero")?;
    eventually("finalize-zero holds the finalizer", budget, || async {
        let p = parents.get("finalize-zero").await.ok()?;
        (!p.metadata.finalizers.unwrap_or_default().is_empty()).then_some(())
    })
    .await?;
    parents
        .delete("finalize-zero", &DeleteParams::default())
        .await?;
    let mut attacks = Vec::new();
    for (attack, copies) in STUCK {
        for i in 0..*copies {
            attacks.push((format!("{attack}-{i}"), *attack));
        }
    }
    attacks.extend(ATTACKS.iter().map(|a| ((*a).to_owned(), *a)));
    for (name, attack) in attacks.iter().filter(|(n, _)| n != "finalize-zero") {
        let spec = json!({"attack": attack, "target": target(attack, other, api_server)});
        parents
            .create(&pp, &parent(name, spec)?)
            .await
            .with_context(|| format!("creating {name}"))?;
    }
    Ok(attacks)
}
