//! CustomResourceDefinitions: validation, status, and serving their kinds at once.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::kinds::resources::{ResKey, ResourceType, ScaleSpec};
use crate::store::Store;
use crate::wire::object;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Field errors of a CRD (the checks kube-apiserver makes that clients run into).
pub fn validate(crd: &Value) -> Vec<(String, String)> {
    let mut causes = Vec::new();
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    if group.is_empty() {
        causes.push(("spec.group".into(), "Required value".into()));
    }
    if plural.is_empty() {
        causes.push(("spec.names.plural".into(), "Required value".into()));
    }
    if str_at(crd, "/spec/names/kind").is_empty() {
        causes.push(("spec.names.kind".into(), "Required value".into()));
    }
    let name = object::name(crd);
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push((
            "metadata.name".into(),
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    match str_at(crd, "/spec/scope") {
        "Namespaced" | "Cluster" => {}
        other => causes.push((
            "spec.scope".into(),
            format!(
                "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
            ),
        )),
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push((
            "spec.versions".into(),
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    } else {
        let storage = versions
            .iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .count();
        if storage != 1 {
            causes.push((
                "spec.versions".into(),
                "Invalid value: must have exactly one version marked as storage version".into(),
            ));
        }
    }
    causes
}

/// Fill `status` the way the apiextensions controllers would once names are accepted.
pub fn set_status(crd: &mut Value) {
    let kind = str_at(crd, "/spec/names/kind").to_string();
    let mut names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if names.get("singular").is_none() {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").is_none() {
        names["listKind"] = json!(format!("{kind}List"));
    }
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let since = crd
        .pointer("/metadata/creationTimestamp")
        .cloned()
        .unwrap_or_else(|| json!(object::now_rfc3339()));
    let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": since, "reason": reason, "message": msg});
    object::set_path(
        crd,
        ".status",
        json!({
            "acceptedNames": names,
            "conditions": [
                cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": stored,
        }),
    );
}

/// The served resource types a CRD defines (one per served version).
pub fn types_of(crd: &Value) -> Vec<ResourceType> {
    let group = str_at(crd, "/spec/group").to_string();
    let names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let kind = str_at(&names, "/kind").to_string();
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let singular = match str_at(&names, "/singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| str_at(v, "/name").to_string())
        .unwrap_or_default();
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .map(|v| {
            let scale = v.pointer("/subresources/scale").map(|s| ScaleSpec {
                spec_replicas_path: str_at(s, "/specReplicasPath").to_string(),
                status_replicas_path: str_at(s, "/statusReplicasPath").to_string(),
                label_selector_path: s
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(String::from),
            });
            ResourceType {
                group: group.clone(),
                version: str_at(v, "/name").to_string(),
                kind: kind.clone(),
                plural: str_at(&names, "/plural").to_string(),
                singular: singular.clone(),
                short_names: strings(names.get("shortNames")),
                categories: strings(names.get("categories")),
                namespaced: str_at(crd, "/spec/scope") == "Namespaced",
                has_status: v.pointer("/subresources/status").is_some(),
                scale,
                schema: v.pointer("/schema/openAPIV3Schema").cloned().map(Arc::new),
                printer_columns: v
                    .get("additionalPrinterColumns")
                    .and_then(Value::as_array)
                    .map(|c| c.as_slice().into())
                    .unwrap_or_default(),
                from_crd: true,
                storage_version: storage_version.clone(),
            }
        })
        .collect()
}

fn res_key(crd: &Value) -> ResKey {
    ResKey {
        group: str_at(crd, "/spec/group").to_string(),
        plural: str_at(crd, "/spec/names/plural").to_string(),
    }
}

/// Serve a CRD's kinds from now on (or update them after the CRD changed).
pub fn register(store: &mut Store, crd: &Value) {
    let key = res_key(crd);
    tracing::debug!(group = %key.group, plural = %key.plural, "serving custom resource");
    store.registry.set_crd_types(&key, types_of(crd));
}

/// Stop serving a removed CRD's kinds and remove its objects.
pub fn unregister(store: &mut Store, crd: &Value) {
    let key = res_key(crd);
    for k in store.keys(&key) {
        store.remove(&k);
    }
    store.registry.remove_crd_types(&key);
}
