//! What the simulated controllers read of a Pod they do not write: the few fields they look at, read from its stored text without building the rest.
//!
//! A Pod's text is mostly its spec and its `managedFields`; the ReplicaSet controller counts
//! Pods by phase and readiness, the Endpoints controller lists their addresses, and the kubelet
//! decides whether a Pod has anything left to do. [`summary`] gives them an object holding only
//! those fields, in the places the full object holds them, so the same readers read it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::{ObjKey, Store};
use crate::wire::stored::Stored;

// Each struct is read from the stored text and written back as the summary: a field absent, or
// JSON `null`, is `None` and left out of the summary.

#[derive(Deserialize, Serialize)]
struct PodRead {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<MetaRead>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<SpecRead>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<StatusRead>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct MetaRead {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    creation_timestamp: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deletion_timestamp: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner_references: Option<Value>,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecRead {
    #[serde(skip_serializing_if = "Option::is_none")]
    node_name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    restart_policy: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    containers: Option<Vec<ContainerRead>>,
}

#[derive(Deserialize, Serialize)]
struct ContainerRead {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ports: Option<Value>,
}

#[derive(Deserialize, Serialize)]
struct StatusRead {
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<Value>,
    #[serde(rename = "hostIP", skip_serializing_if = "Option::is_none")]
    host_ip: Option<Value>,
    #[serde(rename = "podIP", skip_serializing_if = "Option::is_none")]
    pod_ip: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conditions: Option<Value>,
}

/// The Pod `stored` as an object holding only `metadata`'s name, namespace, uid, labels,
/// creation and deletion timestamps and owner references, `spec`'s node name, restart policy and
/// its containers' names and ports, and `status`'s phase, host and pod IPs and conditions. A
/// field that is JSON `null` is left out (every reader takes it as missing). A Pod that does not
/// read this way (a field of an unexpected type) is parsed in full.
pub(super) fn summary(stored: &Stored) -> Value {
    stored
        .read::<PodRead>()
        .and_then(|pod| serde_json::to_value(pod).ok())
        .unwrap_or_else(|| stored.value())
}

/// What the Pod's owners and the Services selecting it read of a Pod: its labels, owners and
/// node, whether it is being deleted, whether it has finished or runs, its IP and whether it is
/// Ready. A change that leaves this as it was (the kubelet's Pending status, with its host and
/// container statuses) is nothing to them.
#[derive(Debug, PartialEq)]
pub(super) struct Counted {
    labels: Option<Value>,
    owners: Option<Value>,
    deleting: bool,
    node: Option<Value>,
    /// The phase, `None` while Pending (as when none is written yet).
    phase: Option<Value>,
    ip: Option<Value>,
    ready: bool,
}

/// The [`Counted`] of a stored Pod, read from its [`summary`]; Ready as [`super::ready`] reads it.
pub(super) fn counted(stored: &Stored) -> Counted {
    let pod = summary(stored);
    let at = |path: &str| pod.pointer(path).filter(|v| !v.is_null()).cloned();
    Counted {
        labels: at("/metadata/labels"),
        owners: at("/metadata/ownerReferences"),
        deleting: at("/metadata/deletionTimestamp").is_some(),
        node: at("/spec/nodeName"),
        phase: at("/status/phase").filter(|p| p.as_str() != Some("Pending")),
        ip: at("/status/podIP"),
        ready: super::ready(&pod),
    }
}

/// The [`summary`] of the Pod stored at `key`, if any.
pub(super) fn summary_at(store: &Store, key: &ObjKey) -> Option<Value> {
    store.stored(key).map(|s| summary(s))
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
