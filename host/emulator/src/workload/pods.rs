//! What the simulated controllers read of a Pod they do not write: the few fields they look at, read from its stored text without building the rest.
//!
//! A Pod's text is mostly its spec and its `managedFields`; the ReplicaSet controller counts
//! Pods by phase and readiness, the Endpoints controller lists their addresses, and the kubelet
//! decides whether a Pod has anything left to do. [`summary`] gives them an object holding only
//! those fields, in the places the full object holds them, so the same readers read it.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::store::{ObjKey, Store};
use crate::wire::stored::Stored;

#[derive(Deserialize)]
struct PodRead {
    #[serde(default)]
    metadata: Option<MetaRead>,
    #[serde(default)]
    spec: Option<SpecRead>,
    #[serde(default)]
    status: Option<StatusRead>,
}

#[derive(Deserialize)]
struct MetaRead {
    name: Option<Value>,
    namespace: Option<Value>,
    uid: Option<Value>,
    labels: Option<Value>,
    #[serde(rename = "creationTimestamp")]
    creation_timestamp: Option<Value>,
    #[serde(rename = "deletionTimestamp")]
    deletion_timestamp: Option<Value>,
    #[serde(rename = "ownerReferences")]
    owner_references: Option<Value>,
}

#[derive(Deserialize)]
struct SpecRead {
    #[serde(rename = "nodeName")]
    node_name: Option<Value>,
    #[serde(rename = "restartPolicy")]
    restart_policy: Option<Value>,
    containers: Option<Vec<ContainerRead>>,
}

#[derive(Deserialize)]
struct ContainerRead {
    name: Option<Value>,
    ports: Option<Value>,
}

#[derive(Deserialize)]
struct StatusRead {
    phase: Option<Value>,
    #[serde(rename = "hostIP")]
    host_ip: Option<Value>,
    #[serde(rename = "podIP")]
    pod_ip: Option<Value>,
    conditions: Option<Value>,
}

/// Inserts `value` at `key` when present.
fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.into(), v);
    }
}

/// The Pod `stored` as an object holding only `metadata`'s name, namespace, uid, labels,
/// creation and deletion timestamps and owner references, `spec`'s node name, restart policy and
/// its containers' names and ports, and `status`'s phase, host and pod IPs and conditions. A
/// field that is JSON `null` is left out (every reader takes it as missing). A Pod that does not
/// read this way (a field of an unexpected type) is parsed in full.
pub(super) fn summary(stored: &Stored) -> Value {
    let Some(pod) = stored.read::<PodRead>() else {
        return stored.value();
    };
    let mut out = Map::new();
    if let Some(m) = pod.metadata {
        let mut meta = Map::new();
        put(&mut meta, "name", m.name);
        put(&mut meta, "namespace", m.namespace);
        put(&mut meta, "uid", m.uid);
        put(&mut meta, "labels", m.labels);
        put(&mut meta, "creationTimestamp", m.creation_timestamp);
        put(&mut meta, "deletionTimestamp", m.deletion_timestamp);
        put(&mut meta, "ownerReferences", m.owner_references);
        out.insert("metadata".into(), Value::Object(meta));
    }
    if let Some(s) = pod.spec {
        let mut spec = Map::new();
        put(&mut spec, "nodeName", s.node_name);
        put(&mut spec, "restartPolicy", s.restart_policy);
        let containers = s.containers.map(|cs| {
            cs.into_iter()
                .map(|c| {
                    let mut container = Map::new();
                    put(&mut container, "name", c.name);
                    put(&mut container, "ports", c.ports);
                    Value::Object(container)
                })
                .collect()
        });
        put(&mut spec, "containers", containers);
        out.insert("spec".into(), Value::Object(spec));
    }
    if let Some(s) = pod.status {
        let mut status = Map::new();
        put(&mut status, "phase", s.phase);
        put(&mut status, "hostIP", s.host_ip);
        put(&mut status, "podIP", s.pod_ip);
        put(&mut status, "conditions", s.conditions);
        out.insert("status".into(), Value::Object(status));
    }
    Value::Object(out)
}

/// The [`summary`] of the Pod stored at `key`, if any.
pub(super) fn summary_at(store: &Store, key: &ObjKey) -> Option<Value> {
    store.stored(key).map(|s| summary(s))
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
