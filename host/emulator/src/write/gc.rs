//! Deletion with finalizers and propagation policies, and owner-reference garbage collection.

use serde_json::{Value, json};

use crate::store::terminating::is_namespace;
use crate::store::{ObjKey, Store};
use crate::wire::object;

/// `propagationPolicy` of a delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Remove the owner now; the collector removes dependents afterwards (the default).
    Background,
    /// Keep the owner (finalizer `foregroundDeletion`) until its dependents are gone.
    Foreground,
    /// Strip the owner reference from dependents (finalizer `orphan`), then remove the owner.
    Orphan,
}

impl Propagation {
    /// Parse the wire value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            "Orphan" => Some(Propagation::Orphan),
            _ => None,
        }
    }
}

const FOREGROUND: &str = "foregroundDeletion";
const ORPHAN: &str = "orphan";

/// Whether a stored object waits for the collector to orphan or delete its dependents (it is
/// being deleted and holds the `orphan` or `foregroundDeletion` finalizer): the objects
/// [`Store::pending_owners`] must list again after the store is loaded from a state file.
pub fn waits_on_dependents(obj: &Value) -> bool {
    object::is_deleting(obj)
        && object::finalizers(obj)
            .iter()
            .any(|f| f == ORPHAN || f == FOREGROUND)
}

/// Start deleting `key`: returns the object's last state and whether it is gone already.
pub fn delete(store: &mut Store, key: &ObjKey, policy: Propagation) -> Option<(Value, bool)> {
    let current = store.get(key)?;
    if object::is_deleting(&current) {
        return Some((current, false));
    }
    let mut fins = object::finalizers(&current);
    let extra = match policy {
        Propagation::Background => None,
        Propagation::Foreground => Some(FOREGROUND),
        Propagation::Orphan => Some(ORPHAN),
    };
    if let Some(f) = extra
        && !fins.iter().any(|x| x == f)
        && !store.dependents_of(object::uid(&current)).is_empty()
    {
        fins.push(f.to_string());
    }
    let namespace_waits = is_namespace(key) && !spec_finalizers(&current).is_empty();
    if fins.is_empty() && !namespace_waits {
        let last = store.remove(key)?;
        return Some((last, true));
    }
    let mut obj = current;
    object::set_finalizers(&mut obj, &fins);
    if namespace_waits {
        object::set_path(&mut obj, ".status.phase", json!("Terminating"));
    }
    let generation = object::generation(&obj) + 1;
    if let Some(meta) = object::metadata_mut(&mut obj) {
        meta.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
        // kube-apiserver's namespace storage sets the timestamp alone.
        if !is_namespace(key) {
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        meta.insert("generation".into(), json!(generation));
    }
    if extra.is_some() {
        store.pending_owners.insert(key.clone());
    }
    let stored = store.put(key, obj);
    Some((stored, false))
}

/// The collector's rule for a dependent none of whose owners exists: it is deleted. Called on
/// every create and update, so a dependent a controller writes from a stale cache just after its
/// owner went (an owner reference to a uid no longer served) is collected as kube-controller-
/// manager's garbage collector would, not kept forever.
pub fn collect_if_orphaned(store: &mut Store, key: &ObjKey, obj: &Value) {
    let owners = object::owner_uids(obj);
    if owners.is_empty() || owners.iter().any(|u| store.has_uid(u)) {
        return;
    }
    delete(store, key, Propagation::Background);
}

/// A Namespace's `spec.finalizers` (the `kubernetes` one is the namespace controller's).
pub fn spec_finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(String::from))
        .collect()
}

/// Whether an object being deleted may go now: no finalizers left, and for a Namespace no
/// `spec.finalizers` either.
pub fn may_remove(key: &ObjKey, obj: &Value) -> bool {
    object::finalizers(obj).is_empty() && (!is_namespace(key) || spec_finalizers(obj).is_empty())
}

/// Drop the owner reference to `owner_uid` from a dependent.
fn strip_owner(store: &mut Store, dep: &ObjKey, owner_uid: &str) {
    let Some(mut obj) = store.get(dep) else {
        return;
    };
    if let Some(refs) = obj
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
        if refs.is_empty()
            && let Some(meta) = object::metadata_mut(&mut obj)
        {
            meta.remove("ownerReferences");
        }
    }
    store.put(dep, obj);
}

/// Set an object's finalizers, removing it when none remain and it is being deleted.
fn finish(store: &mut Store, key: &ObjKey, drop: &str) {
    let Some(o) = store.get(key) else { return };
    let fins: Vec<String> = object::finalizers(&o)
        .into_iter()
        .filter(|f| f != drop)
        .collect();
    store.pending_owners.remove(key);
    if fins.is_empty() && object::is_deleting(&o) {
        store.remove(key);
    } else {
        let mut obj = o;
        object::set_finalizers(&mut obj, &fins);
        store.put(key, obj);
    }
}

/// Run the collector until nothing more changes: dependents of removed owners, orphaning,
/// foreground waits, and the contents of removed CRDs and namespaces (a Terminating namespace's
/// contents are the namespace controller's, `write::namespace`).
pub fn settle(store: &mut Store) {
    loop {
        let mut progressed = false;
        while let Some((uid, key, last)) = store.removed_uids.pop() {
            progressed = true;
            if key.res.plural == "customresourcedefinitions"
                && key.res.group == "apiextensions.k8s.io"
            {
                crate::write::crd::unregister(store, &last);
            }
            if key.res.plural == "namespaces" && key.res.group.is_empty() {
                for res in store.resources() {
                    for k in store.keys(&res).into_iter().filter(|k| k.ns == key.name) {
                        store.remove(&k);
                    }
                }
            }
            for dep in store.dependents_of(&uid) {
                let Some(d) = store.get(&dep) else { continue };
                let other_owner_alive = object::owner_uids(&d)
                    .iter()
                    .any(|u| *u != uid && store.has_uid(u));
                if other_owner_alive {
                    strip_owner(store, &dep, &uid);
                } else {
                    delete(store, &dep, Propagation::Background);
                }
            }
        }
        let pending: Vec<ObjKey> = store.pending_owners.iter().cloned().collect();
        for key in pending {
            let Some(o) = store.get(&key) else {
                store.pending_owners.remove(&key);
                continue;
            };
            let fins = object::finalizers(&o);
            let uid = object::uid(&o).to_string();
            if fins.iter().any(|f| f == ORPHAN) {
                for dep in store.dependents_of(&uid) {
                    strip_owner(store, &dep, &uid);
                }
                finish(store, &key, ORPHAN);
                progressed = true;
            } else if fins.iter().any(|f| f == FOREGROUND) {
                for dep in store.dependents_of(&uid) {
                    if store.get(&dep).is_some_and(|d| !object::is_deleting(&d)) {
                        delete(store, &dep, Propagation::Background);
                        progressed = true;
                    }
                }
                if store.dependents_of(&uid).is_empty() {
                    finish(store, &key, FOREGROUND);
                    progressed = true;
                }
            } else {
                store.pending_owners.remove(&key);
            }
        }
        if !progressed {
            break;
        }
    }
}
