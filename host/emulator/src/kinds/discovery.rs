//! Discovery documents: `/version`, `/api`, `/apis` and the per-group-version resource lists.

use serde_json::{Value, json};

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

/// `/apis`.
pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if the group is served.
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let (g, vs) = reg.groups().into_iter().find(|(g, _)| g == name)?;
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

fn resource_entries(t: &ResourceType) -> Vec<Value> {
    let mut out = vec![json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": ALL_VERBS,
        "shortNames": t.short_names,
        "categories": t.categories,
        "storageVersionHash": "",
    })];
    if t.has_status {
        out.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced,
                        "kind": t.kind, "verbs": ["get", "patch", "update"]}));
    }
    if t.scale.is_some() {
        out.push(json!({"name": format!("{}/scale", t.plural), "singularName": "", "namespaced": t.namespaced,
                        "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
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

/// `/api/v1` or `/apis/{group}/{version}`, if served.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    if !reg.serves_group_version(group, version) {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = reg
        .all()
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .flat_map(resource_entries)
        .collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}
