//! Namespace deletion as kube-apiserver and kube-controller-manager's namespace controller do it.
//!
//! A deleted Namespace is `Terminating` (`write::gc`); while it is, the lifecycle admission
//! refuses new content ([`refuse_create`], kube-apiserver's `NamespaceLifecycle`), and the
//! controller ([`terminate`], `pkg/controller/namespace/deletion`) deletes what it holds kind by
//! kind, Pods first and the rest only once no Pod remains, writes the conditions that say what
//! remains and on which finalizers, and once nothing does drops its `kubernetes` finalizer
//! through `/finalize` ([`finalize`]); with no finalizer left the Namespace is gone.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kinds::resources::ResKey;
use crate::store::{ObjKey, Store};
use crate::wire::apierror::ApiError;
use crate::wire::object;
use crate::write::apply::Scope;
use crate::write::gc::{self, Propagation};
use crate::write::track;

/// The finalizer kube-apiserver puts in every Namespace's `spec.finalizers`, the controller's.
pub const FINALIZER: &str = "kubernetes";

/// The field manager of the controller's writes (kube-controller-manager's user agent).
const MANAGER: &str = "kube-controller-manager";

/// The key of the Namespace `name`.
pub fn key(name: &str) -> ObjKey {
    ObjKey {
        res: ResKey {
            group: String::new(),
            plural: "namespaces".into(),
        },
        ns: String::new(),
        name: name.to_string(),
    }
}

/// Whether the Namespace `ns` is `Terminating` (the phase the lifecycle admission reads).
pub fn is_terminating(store: &Store, ns: &str) -> bool {
    store
        .get(&key(ns))
        .is_some_and(|n| n.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating"))
}

/// The lifecycle admission's 403 for a create of `resource` in `group` named `name` (its
/// `generateName` when it has no name yet) in the terminating namespace `ns`.
pub fn refuse_create(group: &str, resource: &str, name: &str, ns: &str) -> ApiError {
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let why =
        format!("unable to create new content in namespace {ns} because it is being terminated");
    let message = if name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} \"{name}\" is forbidden: {why}")
    };
    ApiError::new(403, "Forbidden", message).with_details(json!({
        "name": name, "group": group, "kind": resource,
        "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"),
                    "field": "metadata.namespace"}],
    }))
}

/// Set the Namespace `old` (stored at `key`)'s `spec.finalizers`, as the `/finalize`
/// subresource does; a deleted Namespace left with no finalizer of either kind is removed.
/// Returns the Namespace as stored, or its last state.
pub fn finalize(
    store: &mut Store,
    key: &ObjKey,
    old: &Value,
    finalizers: Vec<String>,
    manager: &str,
) -> Value {
    let mut new = old.clone();
    object::set_path(&mut new, ".spec.finalizers", json!(finalizers));
    if new == *old {
        return new;
    }
    let now = object::now_rfc3339();
    track::track_update(
        Some(old),
        &mut new,
        manager,
        Scope::Main { has_status: true },
        &now,
    );
    if object::is_deleting(&new) && gc::may_remove(key, &new) {
        // Answered as updated, with the resourceVersion of its removal.
        if let Some(last) = store.remove(key) {
            let rv = object::resource_version(&last).to_string();
            object::set_path(&mut new, ".metadata.resourceVersion", json!(rv));
        }
        gc::settle(store);
        return new;
    }
    store.put_over(key, new, old)
}

/// What remains in a namespace: objects per resource, and per finalizer the objects it holds.
#[derive(Debug, Default, PartialEq, Eq)]
struct Remaining {
    resources: BTreeMap<String, usize>,
    finalizers: BTreeMap<String, usize>,
}

impl Remaining {
    fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }
}

/// Delete every object of `res` in `ns` not already being deleted (the controller's
/// `deletecollection`, Background propagation), then count what remains of it into `left`.
fn delete_all(store: &mut Store, res: &ResKey, ns: &str, left: &mut Remaining) {
    for obj in store.list(res, Some(ns)) {
        if obj.is_deleting() {
            continue;
        }
        let k = ObjKey {
            res: res.clone(),
            ns: ns.to_string(),
            name: object::name(&obj.value()).to_string(),
        };
        gc::delete(store, &k, Propagation::Background);
    }
    gc::settle(store);
    let remaining = store.list(res, Some(ns));
    if remaining.is_empty() {
        return;
    }
    // `configmaps.` for the core group, as the controller prints `resource.group`.
    left.resources
        .insert(format!("{}.{}", res.plural, res.group), remaining.len());
    for obj in remaining {
        for f in object::finalizers(&obj.value()) {
            *left.finalizers.entry(f).or_default() += 1;
        }
    }
}

/// The namespace controller's conditions, in its order: `(type, reason if True, reason if
/// False, message if False)`.
const CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
];

/// The conditions saying what remains, each keeping its `lastTransitionTime` unless its status
/// changes.
fn conditions(old: Option<&Value>, left: &Remaining) -> Value {
    let now = object::now_rfc3339();
    let listed = |m: &BTreeMap<String, usize>, form: &dyn Fn(&String, &usize) -> String| {
        m.iter()
            .map(|(k, n)| form(k, n))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let conditions: Vec<Value> = CONDITIONS
        .iter()
        .map(|(kind, ok_reason, ok_message)| {
            let failing = match *kind {
                "NamespaceContentRemaining" if !left.resources.is_empty() => Some((
                    "SomeResourcesRemain",
                    format!(
                        "Some resources are remaining: {}",
                        listed(&left.resources, &|r, n| format!(
                            "{r} has {n} resource instances"
                        ))
                    ),
                )),
                "NamespaceFinalizersRemaining" if !left.finalizers.is_empty() => Some((
                    "SomeFinalizersRemain",
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        listed(&left.finalizers, &|f, n| format!(
                            "{f} in {n} resource instances"
                        ))
                    ),
                )),
                _ => None,
            };
            let (status, reason, message) = match failing {
                Some((reason, message)) => ("True", reason.to_string(), message),
                None => ("False", ok_reason.to_string(), ok_message.to_string()),
            };
            let previous = old
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c["type"] == *kind));
            let since = previous
                .filter(|p| p["status"] == status)
                .and_then(|p| p.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            json!({"type": kind, "status": status, "lastTransitionTime": since,
                   "reason": reason, "message": message})
        })
        .collect();
    json!(conditions)
}

/// Write the conditions for `left` onto the Namespace at `key`, unless it has them already.
fn report(store: &mut Store, key: &ObjKey, left: &Remaining) {
    let Some(ns) = store.get(key) else { return };
    let old = ns.pointer("/status/conditions");
    let new_conditions = conditions(old, left);
    if old == Some(&new_conditions) {
        return;
    }
    let mut new = ns.clone();
    object::set_path(&mut new, ".status.conditions", new_conditions);
    let now = object::now_rfc3339();
    track::track_update(Some(&ns), &mut new, MANAGER, Scope::Status, &now);
    store.put_over(key, new, &ns);
}

/// One pass of the namespace controller over the namespace `name`: nothing unless it is being
/// deleted and still holds a `spec.finalizers` entry. Its Pods are deleted first; while any
/// remains (held by a finalizer) nothing else is. Then every other kind's objects are deleted,
/// the conditions say what remains, and once nothing does the `kubernetes` finalizer is dropped.
pub fn terminate(store: &mut Store, name: &str) {
    let key = key(name);
    let Some(ns) = store.get(&key) else { return };
    if !object::is_deleting(&ns) || gc::spec_finalizers(&ns).is_empty() {
        return;
    }
    if ns.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating") {
        let mut new = ns.clone();
        object::set_path(&mut new, ".status.phase", json!("Terminating"));
        store.put_over(&key, new, &ns);
    }
    let pods = ResKey {
        group: String::new(),
        plural: "pods".into(),
    };
    let mut left = Remaining::default();
    delete_all(store, &pods, name, &mut left);
    if left.is_empty() {
        let mut others: Vec<ResKey> = store
            .resources()
            .into_iter()
            .filter(|r| *r != pods && !store.list(r, Some(name)).is_empty())
            .collect();
        others.sort();
        for res in others {
            delete_all(store, &res, name, &mut left);
        }
    }
    report(store, &key, &left);
    if !left.is_empty() {
        return;
    }
    let Some(ns) = store.get(&key) else { return };
    let rest: Vec<String> = gc::spec_finalizers(&ns)
        .into_iter()
        .filter(|f| f != FINALIZER)
        .collect();
    finalize(store, &key, &ns, rest, MANAGER);
}
