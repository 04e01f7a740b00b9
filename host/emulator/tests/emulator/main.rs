//! Conformance-style tests of the emulator, driven through kube's client (and kubectl).
#![expect(clippy::unwrap_used, reason = "tests may unwrap")]

/// Runs each named kubectl check (`async fn check(kubectl: &Path)`) once with every kubectl the
/// suite drives: a module named after the check holds one test per binary, `machine` (the
/// machine's own kubectl) and `current` (the current release `setup.sh` installs).
macro_rules! each_kubectl {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            #[tokio::test]
            async fn machine() {
                super::$check(&crate::kubectl_bin::machine_kubectl()).await;
            }

            #[tokio::test]
            async fn current() {
                super::$check(&crate::kubectl_bin::current_kubectl()).await;
            }
        }
    )*};
}

mod apply;
mod builtin;
mod clients;
mod crd;
mod crud;
mod discovery;
mod fidelity;
mod gc;
mod kubeconfig;
mod kubectl;
mod kubectl_bin;
mod kubectl_prune;
mod kubectl_versions;
mod logs;
mod namespaces;
mod protobuf;
mod request_log;
mod restart;
mod runtime;
mod secure;
mod shard_selector;
mod watch;
mod workload;
mod workload_controllers;
mod workload_daemonsets;
mod workload_kubectl;
mod workload_operator;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use weir_emulator::{Emulator, EmulatorConfig};

/// An emulator with default settings and fast bookmarks.
pub async fn emulator() -> Emulator {
    Emulator::start(EmulatorConfig {
        bookmark_interval: Duration::from_millis(100),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

/// A ConfigMap fixture.
pub fn configmap(name: &str) -> ConfigMapBuilder {
    ConfigMapBuilder(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}),
    )
}

/// Chainable ConfigMap fixture.
pub struct ConfigMapBuilder(Value);

impl ConfigMapBuilder {
    /// Add a label.
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0["metadata"]["labels"][k] = json!(v);
        self
    }
    /// Add a data entry.
    pub fn data(mut self, k: &str, v: &str) -> Self {
        self.0["data"][k] = json!(v);
        self
    }
    /// Add a finalizer.
    pub fn finalizer(mut self, f: &str) -> Self {
        let list = self.0["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut list = list;
        list.push(json!(f));
        self.0["metadata"]["finalizers"] = json!(list);
        self
    }
    /// Add an owner reference.
    pub fn owned_by(mut self, owner: &ConfigMap) -> Self {
        let r = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
                       "uid": owner.metadata.uid});
        let mut list = self.0["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        list.push(r);
        self.0["metadata"]["ownerReferences"] = json!(list);
        self
    }
    /// The ConfigMap.
    pub fn build(self) -> ConfigMap {
        serde_json::from_value(self.0).unwrap()
    }
    /// Create it through `api`.
    pub async fn create(self, api: &Api<ConfigMap>) -> ConfigMap {
        api.create(&PostParams::default(), &self.build())
            .await
            .unwrap()
    }
}

/// The Status of a failed kube call.
pub fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Poll `check` until it returns Some, failing after 10 seconds.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Deployment fixture with `replicas` and one container.
pub fn deployment(name: &str, replicas: i32) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}}
    }))
    .unwrap()
}
