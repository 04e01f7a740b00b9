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

#[derive(Deserialize)]
struct CountedRead {
    #[serde(default)]
    metadata: Option<CountedMeta>,
    #[serde(default)]
    spec: Option<CountedSpec>,
    #[serde(default)]
    status: Option<CountedStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CountedMeta {
    #[serde(default)]
    labels: Option<Value>,
    #[serde(default)]
    owner_references: Option<Value>,
    #[serde(default)]
    deletion_timestamp: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CountedSpec {
    #[serde(default)]
    node_name: Option<Value>,
}

#[derive(Deserialize)]
struct CountedStatus {
    #[serde(default)]
    phase: Option<Value>,
    #[serde(default, rename = "podIP")]
    pod_ip: Option<Value>,
    #[serde(default)]
    conditions: Option<Vec<CountedCondition>>,
}

#[derive(Deserialize)]
struct CountedCondition {
    #[serde(default, rename = "type")]
    kind: Option<Value>,
    #[serde(default)]
    status: Option<Value>,
}

/// The [`Counted`] of a stored Pod; `None` when it does not read that way (then every change
/// of it counts). Ready as [`super::ready`] reads it: Running, with a Ready condition True.
pub(super) fn counted(stored: &Stored) -> Option<Counted> {
    let pod = stored.read::<CountedRead>()?;
    let (labels, owners, deleting) = match pod.metadata {
        Some(m) => (
            m.labels,
            m.owner_references,
            m.deletion_timestamp.is_some_and(|t| !t.is_null()),
        ),
        None => (None, None, false),
    };
    let (phase, ip, conditions) = match pod.status {
        Some(s) => (s.phase, s.pod_ip, s.conditions.unwrap_or_default()),
        None => (None, None, Vec::new()),
    };
    let running = phase.as_ref().and_then(Value::as_str) == Some("Running");
    let ready = running
        && conditions.iter().any(|c| {
            c.kind.as_ref().and_then(Value::as_str) == Some("Ready")
                && c.status.as_ref().and_then(Value::as_str) == Some("True")
        });
    Some(Counted {
        labels,
        owners,
        deleting,
        node: pod.spec.and_then(|s| s.node_name),
        phase: phase.filter(|p| p.as_str() != Some("Pending")),
        ip,
        ready,
    })
}

/// The [`summary`] of the Pod stored at `key`, if any.
pub(super) fn summary_at(store: &Store, key: &ObjKey) -> Option<Value> {
    store.stored(key).map(|s| summary(s))
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
