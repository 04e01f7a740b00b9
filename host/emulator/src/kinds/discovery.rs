//! Discovery documents: `/version`, `/api`, `/apis` and the per-group-version resource lists.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::kinds::resources::{Registry, ResourceType};

/// The Kubernetes version reported by `/version`; kubectl's dispatcher picks its binary by the minor.
pub const KUBE_VERSION: &str = "v1.33.0";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": KUBE_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`.
pub fn core_versions(addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}],
    })
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

/// The reviews `serve::reviews` answers, as (group, plural, kind): created (never stored) at
/// `/apis/{group}/v1/{plural}`, cluster-scoped.
const REVIEWS: [(&str, &str, &str); 3] = [
    (
        "authentication.k8s.io",
        "selfsubjectreviews",
        "SelfSubjectReview",
    ),
    (
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
    ),
    (
        "authorization.k8s.io",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
    ),
];

/// Served groups with their versions: the registry's, then the reviews' (at v1).
fn groups(reg: &Registry) -> Vec<(String, Vec<String>)> {
    let mut out = reg.groups();
    for (group, _, _) in REVIEWS {
        if !out.iter().any(|(g, _)| g == group) {
            out.push((group.to_string(), vec!["v1".to_string()]));
        }
    }
    out
}

/// `/apis`.
pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = groups(reg).iter().map(|(g, vs)| group_doc(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if the group is served.
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let (g, vs) = groups(reg).into_iter().find(|(g, _)| g == name)?;
    let mut doc = group_doc(&g, &vs);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of a resource: all eight, but namespaces are not deleted as a collection.
fn verbs(t: &ResourceType) -> Vec<&'static str> {
    let collection = !(t.group.is_empty() && t.plural == "namespaces");
    ALL_VERBS
        .into_iter()
        .filter(|v| collection || *v != "deletecollection")
        .collect()
}

/// kube-apiserver's `storageVersionHash`: the first 8 bytes of the SHA-256 of the stored
/// `group/version/kind`, in base64. events.k8s.io Events are stored as core Events.
fn storage_version_hash(t: &ResourceType) -> String {
    let gvk = if t.is_events_v1() {
        "/v1/Event".to_string()
    } else {
        format!("{}/{}/{}", t.group, t.storage_version, t.kind)
    };
    let digest = Sha256::digest(gvk.as_bytes());
    STANDARD.encode(&digest[..8])
}

fn resource_entries(t: &ResourceType, tokens: bool) -> Vec<Value> {
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": verbs(t),
        "storageVersionHash": storage_version_hash(t),
    });
    // Empty lists are left out, as Go's `omitempty` leaves them out.
    if !t.short_names.is_empty() {
        main["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    let sub = |name: &str, verbs: &[&str]| {
        json!({"name": format!("{}/{name}", t.plural), "singularName": "",
               "namespaced": t.namespaced, "kind": t.kind, "verbs": verbs})
    };
    let mut out = vec![main];
    if t.has_status {
        out.push(sub("status", &["get", "patch", "update"]));
    }
    if t.scale.is_some() {
        let mut scale = sub("scale", &["get", "patch", "update"]);
        scale["group"] = json!("autoscaling");
        scale["version"] = json!("v1");
        scale["kind"] = json!("Scale");
        out.push(scale);
    }
    if tokens && t.group.is_empty() && t.plural == "serviceaccounts" {
        let mut token = sub("token", &["create"]);
        token["group"] = json!("authentication.k8s.io");
        token["version"] = json!("v1");
        token["kind"] = json!("TokenRequest");
        out.push(token);
    }
    // A Pod's `/log` and a Namespace's `/finalize` (`serve::handlers`).
    let special = match (t.group.as_str(), t.plural.as_str()) {
        ("", "pods") => Some(("log", "get")),
        ("", "namespaces") => Some(("finalize", "update")),
        _ => None,
    };
    if let Some((sub, verb)) = special {
        out.push(json!({"name": format!("{}/{sub}", t.plural), "singularName": "", "namespaced": t.namespaced,
                        "kind": t.kind, "verbs": [verb]}));
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}`, if served, its resources sorted by name as
/// kube-apiserver sorts them. `tokens`: whether ServiceAccount tokens are issued (a secure
/// emulator), which lists `serviceaccounts/token`.
pub fn resource_list(reg: &Registry, group: &str, version: &str, tokens: bool) -> Option<Value> {
    let reviews = REVIEWS
        .iter()
        .filter(|(g, _, _)| *g == group && version == "v1")
        .map(|(_, plural, kind)| {
            json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": false,
                   "kind": kind, "verbs": ["create"]})
        });
    let mut resources: Vec<Value> = reg
        .all()
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .flat_map(|t| resource_entries(t, tokens))
        .chain(reviews)
        .collect();
    if resources.is_empty() {
        return None;
    }
    resources.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let mut doc =
        json!({"kind": "APIResourceList", "groupVersion": version, "resources": resources});
    // The core group's list has no apiVersion on a real server; every other group's has.
    if !group.is_empty() {
        doc["groupVersion"] = json!(format!("{group}/{version}"));
        doc["apiVersion"] = json!("v1");
    }
    Some(doc)
}
