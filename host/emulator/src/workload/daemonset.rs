//! The daemonset controller: one Pod on each simulated node (there is one), replaced when the
//! template changes (`RollingUpdate` with maxUnavailable 1: the old Pod goes, then the new one
//! comes), and the counts in status.

use serde_json::{Value, json};

use super::{active, controlled, controller_ref, create, delete, ready, res, write_status};
use crate::store::{ObjKey, Store};
use crate::wire::object;

const MANAGER: &str = "kube-controller-manager";
/// The label a DaemonSet's Pods carry with the template generation they were made from.
const TEMPLATE_GENERATION: &str = "pod-template-generation";
/// The simulated cluster's node count.
const NODES: usize = 1;

/// Whether `pod` was made from the DaemonSet's current template.
fn updated(pod: &Value, generation: &str) -> bool {
    pod.pointer("/metadata/labels")
        .and_then(|l| l.get(TEMPLATE_GENERATION))
        .and_then(Value::as_str)
        == Some(generation)
}

/// Reconcile one DaemonSet.
pub(super) fn reconcile(store: &mut Store, key: &ObjKey) {
    let Some(ds) = store.get(key) else { return };
    if object::is_deleting(&ds) {
        return;
    }
    let generation = object::generation(&ds).to_string();
    let pods_res = res("", "pods");
    let active_pods = |store: &Store| -> Vec<_> {
        controlled(store, &ds, &pods_res)
            .into_iter()
            .filter(|(_, p)| active(p))
            .collect()
    };
    // Outdated Pods go first, then any beyond one per node.
    let (current, outdated): (Vec<_>, Vec<_>) = active_pods(store)
        .into_iter()
        .partition(|(_, p)| updated(p, &generation));
    for (k, _) in outdated.iter().chain(current.iter().skip(NODES)) {
        delete(store, k);
    }
    if active_pods(store).is_empty() {
        let mut template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
        template["metadata"]["labels"][TEMPLATE_GENERATION] = json!(generation);
        let owner = controller_ref(&ds, "apps/v1", "DaemonSet");
        let prefix = format!("{}-", key.name);
        let body = super::replicaset::pod_from_template(&template, owner, Some(&prefix), None);
        create(store, &pods_res, &key.ns, body, MANAGER);
    }
    let Some(ds) = store.get(key) else { return };
    let pods: Vec<_> = controlled(store, &ds, &pods_res)
        .into_iter()
        .filter(|(_, p)| active(p))
        .collect();
    let scheduled = pods.len().min(NODES);
    let ready_count = pods.iter().filter(|(_, p)| ready(p)).count();
    let updated_count = pods.iter().filter(|(_, p)| updated(p, &generation)).count();
    let mut status = json!({
        "currentNumberScheduled": scheduled,
        "desiredNumberScheduled": NODES,
        "numberMisscheduled": 0,
        "numberReady": ready_count,
        "updatedNumberScheduled": updated_count,
        "numberAvailable": ready_count,
        "numberUnavailable": NODES.saturating_sub(ready_count),
        "observedGeneration": object::generation(&ds),
    });
    if let Some(m) = status.as_object_mut() {
        // As on the wire: the four required counts always, the optional ones when not zero.
        m.retain(|k, v| {
            matches!(
                k.as_str(),
                "currentNumberScheduled"
                    | "desiredNumberScheduled"
                    | "numberMisscheduled"
                    | "numberReady"
            ) || *v != json!(0)
        });
    }
    write_status(store, key, status, MANAGER);
}
