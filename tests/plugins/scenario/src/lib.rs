//! A plugin steered by its parent's spec, for the host scenarios the Blog plugin cannot produce.
//!
//! The parent kind is `Scenario` (`test.weir.dev/v1`); its spec says what to answer:
//!
//! | `spec` field              | what `reconcile` does                                               |
//! |---------------------------|---------------------------------------------------------------------|
//! | `configMaps: [names]`     | one ConfigMap per name (drop a name → the host must prune it)       |
//! | `namespace: ns`           | puts the ConfigMaps in `ns` (another namespace → refused)           |
//! | `data: {key: value}`      | adds these keys to every ConfigMap's data (drop a key → it must go) |
//! | `secret: name`            | also asks for a Secret, a kind it did not declare (→ refused)        |
//! | `fail: transient\|permanent` | fails with that kind and `spec.message`                          |
//! | `churn: true`             | a ConfigMap whose data counts the observed writes: never settles    |
//! | `requeueNow: true`        | asks to run again at once on every call                             |
//! | `finalizeAfterMs: n`      | `finalize` answers `againAfter(n)` until `spec.release` is true     |
//! | `echo: true`              | puts the children's JSON, exactly as given (sorted), in `status.given` |
//!
//! Status: `{configMaps: <observed count>, conditions: [Ready]}`, Ready once every
//! desired ConfigMap is observed.
//!
//! Built with the `canary-fail` feature (`scenario-canary-fail.wasm`), it fails (permanent) for
//! every parent whose name ends in `0`: a candidate version worse on a tenth of its inputs.
//!
//! Built against `weir:reconciler@0.1.0`; with the `contract-0-2` feature
//! (`scenario-0.2.0.wasm`) against 0.2.0, declaring no related kinds: the same answers from a
//! component of the next released contract, whose `finalize` must keep working as it did.

#![cfg(target_arch = "wasm32")] // a component only: natively the crate is empty
#![expect(missing_docs, reason = "wit-bindgen generated code has no docs")]

#[cfg(not(feature = "contract-0-2"))]
wit_bindgen::generate!({
    path: "../../../wit",
    world: "reconciler",
});

#[cfg(feature = "contract-0-2")]
wit_bindgen::generate!({
    path: "../../../wit/0.2.0",
    world: "reconciler",
});

use serde_json::{Value, json};
use weir::reconciler::types::{ErrorKind, Requeue, ResourceKind};

struct Scenario;

export!(Scenario);

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "scenarios.test.weir.dev"},
  "spec": {
    "group": "test.weir.dev",
    "scope": "Namespaced",
    "names": {"kind": "Scenario", "plural": "scenarios", "singular": "scenario", "listKind": "ScenarioList"},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }}}
    }]
  }
}"#;

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

fn error(kind: ErrorKind, message: impl Into<String>) -> ReconcileError {
    ReconcileError {
        kind,
        message: message.into(),
    }
}

fn parse(text: &str) -> Result<Value, ReconcileError> {
    serde_json::from_str(text)
        .map_err(|e| error(ErrorKind::Permanent, format!("parent is not JSON: {e}")))
}

fn config_map(name: &str, namespace: Option<&str>, data: Value) -> String {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}).to_string()
}

impl Guest for Scenario {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "scenario".into(),
            version: "0.1.0".into(),
            parent: kind("test.weir.dev", "v1", "Scenario", "scenarios"),
            children: vec![kind("", "v1", "ConfigMap", "configmaps")],
            #[cfg(feature = "contract-0-2")]
            related: vec![],
            finalizer: Some("test.weir.dev/cleanup".into()),
            crd: Some(CRD.into()),
        }
    }

    #[cfg(feature = "contract-0-2")]
    fn select_related(_parent: String) -> Result<Vec<Selection>, ReconcileError> {
        Ok(Vec::new())
    }

    fn reconcile(request: ReconcileRequest) -> Result<ReconcileResponse, ReconcileError> {
        let parent = parse(&request.parent)?;
        let spec = &parent["spec"];
        let name = parent["metadata"]["name"].as_str().unwrap_or_default();
        if cfg!(feature = "canary-fail") && name.ends_with('0') {
            return Err(error(
                ErrorKind::Permanent,
                format!("canary-fail: failing for {name}"),
            ));
        }
        match spec["fail"].as_str() {
            Some("transient") => {
                return Err(error(
                    ErrorKind::Transient,
                    spec["message"].as_str().unwrap_or("failing on purpose"),
                ));
            }
            Some("permanent") => {
                return Err(error(
                    ErrorKind::Permanent,
                    spec["message"].as_str().unwrap_or("failing on purpose"),
                ));
            }
            _ => {}
        }
        let observed: Vec<Value> = request
            .children
            .iter()
            .filter_map(|c| serde_json::from_str(c).ok())
            .collect();
        let namespace = spec["namespace"].as_str();
        let names: Vec<&str> = spec["configMaps"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut data = json!({"owner": parent["metadata"]["name"]});
        if let (Some(extra), Some(into)) = (spec["data"].as_object(), data.as_object_mut()) {
            into.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let mut children: Vec<String> = names
            .iter()
            .map(|n| config_map(n, namespace, data.clone()))
            .collect();
        if spec["churn"].as_bool() == Some(true) {
            let seen = observed
                .iter()
                .find(|c| c["metadata"]["name"] == "churn")
                .and_then(|c| c["data"]["n"].as_str())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            children.push(config_map(
                "churn",
                None,
                json!({"n": (seen + 1).to_string()}),
            ));
        }
        if let Some(secret) = spec["secret"].as_str() {
            children.push(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret}})
                    .to_string(),
            );
        }
        let present = names
            .iter()
            .filter(|n| observed.iter().any(|c| c["metadata"]["name"] == **n))
            .count();
        let ready = present == names.len();
        let mut status = json!({
            "configMaps": present,
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }, "reason": if ready { "AllPresent" } else { "Creating" }}],
        });
        if spec["echo"].as_bool() == Some(true) {
            let mut given = request.children.clone();
            given.sort();
            status["given"] = json!(given);
        }
        let requeue = if spec["requeueNow"].as_bool() == Some(true) {
            Requeue::Now
        } else {
            Requeue::Done
        };
        Ok(ReconcileResponse {
            children,
            status: Some(status.to_string()),
            requeue,
        })
    }

    fn finalize(request: FinalizeRequest) -> Result<FinalizeResponse, ReconcileError> {
        let parent = parse(&request.parent)?;
        let spec = &parent["spec"];
        match spec["finalizeAfterMs"].as_u64() {
            Some(ms) if spec["release"].as_bool() != Some(true) => {
                Ok(FinalizeResponse::AgainAfter(ms))
            }
            _ => Ok(FinalizeResponse::Complete),
        }
    }
}
