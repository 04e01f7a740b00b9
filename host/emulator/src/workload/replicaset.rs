//! The replicaset controller: as many active Pods as `spec.replicas`, and the counts in status.

use serde_json::{Value, json};

use super::{
    active, controlled_as, controller_ref, create, delete, pods, ready, res, write_status_of,
};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kube-controller-manager";

/// A Pod for a workload's `template`, named from `generate_name` (or `name`), owned by `owner`,
/// already bound to the simulated node (the scheduler's work, done at once).
pub(super) fn pod_from_template(
    template: &Value,
    owner_ref: Value,
    generate_name: Option<&str>,
    name: Option<&str>,
) -> Value {
    let mut meta = template
        .get("metadata")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.retain(|k, _| matches!(k.as_str(), "labels" | "annotations" | "finalizers"));
        m.insert("ownerReferences".into(), owner_ref);
        if let Some(g) = generate_name {
            m.insert("generateName".into(), json!(g));
        }
        if let Some(n) = name {
            m.insert("name".into(), json!(n));
        }
    }
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    spec["nodeName"] = json!(super::NODE);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

/// Reconcile one ReplicaSet.
pub(super) fn reconcile(store: &mut Store, key: &ObjKey) {
    let Some(rs) = store.get(key) else { return };
    if object::is_deleting(&rs) {
        return;
    }
    let desired = rs
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0) as usize;
    let pods_res = res("", "pods");
    let mut pods: Vec<_> = controlled_as(store, &rs, &pods_res, pods::summary)
        .into_iter()
        .filter(|(_, p)| active(p))
        .collect();
    let scaled = pods.len() != desired;
    if pods.len() < desired {
        let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let owner = controller_ref(&rs, "apps/v1", "ReplicaSet");
        let prefix = format!("{}-", key.name);
        for _ in pods.len()..desired {
            let body = pod_from_template(&template, owner.clone(), Some(&prefix), None);
            if create(store, &pods_res, &key.ns, body, MANAGER).is_none() {
                break;
            }
        }
    } else if pods.len() > desired {
        // getPodsToDelete: not ready before ready, then the newest first.
        pods.sort_by_key(|(_, p)| {
            (
                ready(p),
                std::cmp::Reverse(
                    p.pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                ),
            )
        });
        for (k, _) in pods.iter().take(pods.len() - desired) {
            delete(store, k);
        }
    }
    // Pods created or deleted: count them again.
    let pods = if scaled {
        controlled_as(store, &rs, &pods_res, pods::summary)
            .into_iter()
            .filter(|(_, p)| active(p))
            .collect()
    } else {
        pods
    };
    let ready_count = pods.iter().filter(|(_, p)| ready(p)).count();
    let mut status = json!({
        "replicas": pods.len(),
        "fullyLabeledReplicas": pods.len(),
        "readyReplicas": ready_count,
        "availableReplicas": ready_count,
        "observedGeneration": object::generation(&rs),
    });
    if let Some(m) = status.as_object_mut() {
        // Zero counts are omitted on the wire, except `replicas`.
        m.retain(|k, v| k == "replicas" || *v != json!(0));
    }
    // Creating and deleting its Pods left the ReplicaSet itself as it was read.
    write_status_of(store, key, &rs, status, MANAGER);
}
