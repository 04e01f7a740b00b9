//! Defaulting of the served built-in kinds, as kube-apiserver does it before storing an object.
//!
//! Each kind's rules live in their own module and name the upstream function they follow
//! (`SetDefaults_Deployment` in `pkg/apis/apps/v1/defaults.go`, ...). Besides defaulting proper,
//! a few fields appear on every object a real server returns only because Go serializes a
//! non-pointer struct as `{}` (`resources: {}`, `status: {}`); they are written too, so a stored
//! object compares equal to a cluster's.

mod deployment;
mod pod;
mod secret;
mod service;
mod workloads;

use serde_json::{Map, Value, json};

use crate::kinds::resources::ResourceType;
use crate::store::Store;

/// Fill in what kube-apiserver fills in for `rt`'s kind.
/// `old` is the stored object on an update (a Service keeps its allocated IPs and ports).
pub fn apply(rt: &ResourceType, obj: &mut Value, store: &Store, old: Option<&Value>) {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "Deployment") => deployment::deployment(obj),
        ("apps", "ReplicaSet") => deployment::replica_set(obj),
        ("apps", "StatefulSet") => workloads::stateful_set(obj),
        ("apps", "DaemonSet") => workloads::daemon_set(obj),
        ("batch", "Job") => workloads::job(obj),
        ("batch", "CronJob") => workloads::cron_job(obj),
        ("", "Pod") => pod::pod(obj, old.is_none()),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(obj, old.is_none()),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(obj),
        ("", "Endpoints") | ("discovery.k8s.io", "EndpointSlice") => port_protocols(obj),
        ("", "Secret") => secret::secret(obj),
        ("", "Service") => service::service(obj, store, old),
        ("", "Namespace") => namespace(obj, old),
        ("scheduling.k8s.io", "PriorityClass") => priority_class(obj),
        _ => {}
    }
}

/// `SetDefaults_Namespace` (`pkg/apis/core/v1/defaults.go`): the `kubernetes.io/metadata.name`
/// label; `SetDefaults_NamespaceStatus`: phase `Active`; the namespace REST strategy's
/// `PrepareForCreate` adds the `kubernetes` finalizer that namespace deletion waits on, and its
/// `PrepareForUpdate` keeps `spec.finalizers` as stored (only `/finalize` changes them).
fn namespace(obj: &mut Value, old: Option<&Value>) {
    let name = crate::wire::object::name(obj).to_string();
    if let Some(meta) = crate::wire::object::metadata_mut(obj) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
    if let Some(m) = obj.as_object_mut() {
        let spec = object_at(m, "spec");
        match old.map(|o| o.pointer("/spec/finalizers")) {
            None if !spec.contains_key("finalizers") => {
                spec.insert("finalizers".into(), json!(["kubernetes"]));
            }
            None => {}
            Some(Some(kept)) => {
                spec.insert("finalizers".into(), kept.clone());
            }
            Some(None) => {
                spec.remove("finalizers");
            }
        }
        let status = object_at(m, "status");
        set_if_empty(status, "phase", json!("Active"));
    }
}

/// `SetDefaults_PriorityClass` (`pkg/apis/scheduling/v1/defaults.go`): preemptionPolicy
/// `PreemptLowerPriority`.
fn priority_class(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        set_if_empty(m, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// `SetDefaults_PersistentVolumeClaimSpec`: volumeMode `Filesystem`; on create the status is
/// phase `Pending` (no provisioner binds it).
fn persistent_volume_claim(obj: &mut Value, creating: bool) {
    let Some(m) = obj.as_object_mut() else { return };
    set_if_empty(object_at(m, "spec"), "volumeMode", json!("Filesystem"));
    if creating {
        m.insert("status".into(), json!({"phase": "Pending"}));
    }
}

/// `SetDefaults_Subject` (`pkg/apis/rbac/v1/defaults.go`): a `User` or `Group` subject's
/// apiGroup is `rbac.authorization.k8s.io`, a `ServiceAccount`'s is `""`.
fn role_binding(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    for subject in each_object(m, "subjects") {
        let group = match subject.get("kind").and_then(Value::as_str) {
            Some("User" | "Group") => "rbac.authorization.k8s.io",
            _ => "",
        };
        if !subject.contains_key("apiGroup") {
            subject.insert("apiGroup".into(), json!(group));
        }
    }
}

/// `SetDefaults_EndpointPort` (core/v1 and discovery/v1): protocol `TCP`.
fn port_protocols(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    for p in each_object(m, "ports") {
        set_if_empty(p, "protocol", json!("TCP"));
    }
    for subset in each_object(m, "subsets") {
        for p in each_object(subset, "ports") {
            set_if_empty(p, "protocol", json!("TCP"));
        }
    }
}

/// The object at `key`, created empty when missing or not an object.
pub(crate) fn object_at<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let slot = m.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Value::Object(o) => o,
        _ => unreachable!("the slot was just made an object"),
    }
}

/// Set `key` when it is missing, `null` or `""` (Go's zero value for strings and nil pointers).
pub(crate) fn set_if_empty(m: &mut Map<String, Value>, key: &str, v: Value) {
    let empty = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if empty {
        m.insert(key.into(), v);
    }
}

/// Each object in the array at `key`.
pub(crate) fn each_object<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}
