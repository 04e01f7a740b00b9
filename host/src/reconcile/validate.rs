//! ⑤a Validation of the plugin's answer: nothing is written unless every desired child passes.
//!
//! A plugin is untrusted: it may only create the kinds it declared, only in its parent's
//! namespace, and never take over an object someone else controls. The host, not the plugin,
//! stamps ownership, so every child it writes is garbage-collected with its parent.

use std::collections::HashSet;
use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::cache::{Cache, controller_uid};
use super::queue::ObjectKey;
use crate::plugin::{PluginInfo, ResourceKind};

/// Label on every child naming the UID of the parent that controls it.
pub const PARENT_UID_LABEL: &str = "weir.dev/parent-uid";
/// Annotation holding a hash of the plugin's manifest, so a field the plugin stops
/// setting is noticed (and removed by server-side apply) even though the live object still has it.
pub const MANIFEST_HASH_ANNOTATION: &str = "weir.dev/manifest-hash";
/// Most children one parent may have.
pub const MAX_CHILDREN: usize = 256;
/// Largest serialised child (etcd stores at most 1.5 MiB per object).
pub const MAX_CHILD_BYTES: usize = 1 << 20;

/// Why the plugin's answer was refused. Permanent: retrying the same answer cannot help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A child is not a JSON object or lacks `apiVersion`, `kind` or `metadata.name`.
    #[error("child #{index} is missing {field}")]
    Malformed {
        /// Position in the plugin's answer.
        index: usize,
        /// The missing or mistyped field.
        field: &'static str,
    },
    /// A child's kind is not one the plugin declared.
    #[error("child {kind} {name:?} is of a kind the plugin did not declare ({api_version})")]
    UndeclaredKind {
        /// apiVersion of the child.
        api_version: String,
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
    },
    /// A child would land in another namespace than its parent's, or the parent has none.
    #[error(
        "child {kind} {name:?} asks for namespace {wanted:?}; children live in the parent's namespace {parent:?}"
    )]
    Namespace {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
        /// The namespace the plugin asked for.
        wanted: String,
        /// The parent's namespace (empty for a cluster-scoped parent).
        parent: String,
    },
    /// A child's name is not a valid Kubernetes object name.
    #[error("child {kind} has an invalid name {name:?}")]
    InvalidName {
        /// Kind of the child.
        kind: String,
        /// The name.
        name: String,
    },
    /// Two children share kind and name.
    #[error("child {kind} {name:?} appears twice")]
    Duplicate {
        /// Kind of the child.
        kind: String,
        /// Name of the child.
        name: String,
    },
    /// The answer has too many children or a child too large.
    #[error("{what} exceeds the limit of {limit}")]
    TooLarge {
        /// What is too large.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// An object with that name exists and this parent does not control it.
    #[error("{kind} {namespace}/{name} exists and is {owner}; Weir does not adopt or overwrite it")]
    Foreign {
        /// Kind of the object.
        kind: String,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// `not owned by any controller` or `controlled by <uid>`.
        owner: String,
    },
}

/// One child that passed validation, ready to apply.
#[derive(Debug, Clone)]
pub struct DesiredChild {
    /// The declared kind it is of.
    pub kind: ResourceKind,
    /// Its key (always in the parent's namespace).
    pub key: ObjectKey,
    /// The manifest to apply, with the host's namespace, owner reference, label and hash.
    pub manifest: Value,
    /// The live object, if the cache has one.
    pub live: Option<Arc<DynamicObject>>,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

/// DNS-1123 subdomain: what the API server requires of most object names.
pub fn is_valid_name(name: &str) -> bool {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    !name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)
}

/// Checks the plugin's desired children against its declaration and the cache, and stamps
/// the host-owned fields. Either every child passes or nothing is returned.
pub fn validate(
    info: &PluginInfo,
    parent: &DynamicObject,
    desired: Vec<Value>,
    cache: &Cache,
) -> Result<Vec<DesiredChild>, Refusal> {
    if desired.len() > MAX_CHILDREN {
        return Err(Refusal::TooLarge {
            what: format!("{} children", desired.len()),
            limit: MAX_CHILDREN,
        });
    }
    let parent_ns = parent.metadata.namespace.clone().unwrap_or_default();
    let parent_uid = parent.metadata.uid.clone().unwrap_or_default();
    let parent_name = parent.metadata.name.clone().unwrap_or_default();
    let owner = json!({
        "apiVersion": info.parent.api_version(),
        "kind": info.parent.kind,
        "name": parent_name,
        "uid": parent_uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(desired.len());
    for (index, mut child) in desired.into_iter().enumerate() {
        let api_version = str_at(&child, &["apiVersion"]).ok_or(Refusal::Malformed {
            index,
            field: "apiVersion",
        })?;
        let kind_name = str_at(&child, &["kind"]).ok_or(Refusal::Malformed {
            index,
            field: "kind",
        })?;
        let name = str_at(&child, &["metadata", "name"]).ok_or(Refusal::Malformed {
            index,
            field: "metadata.name",
        })?;
        let (api_version, kind_name, name) = (
            api_version.to_owned(),
            kind_name.to_owned(),
            name.to_owned(),
        );
        let Some(kind) = info
            .children
            .iter()
            .find(|k| k.kind == kind_name && k.api_version() == api_version && k.namespaced)
        else {
            return Err(Refusal::UndeclaredKind {
                api_version,
                kind: kind_name,
                name,
            });
        };
        let wanted_ns = str_at(&child, &["metadata", "namespace"])
            .unwrap_or(&parent_ns)
            .to_owned();
        if parent_ns.is_empty() || wanted_ns != parent_ns {
            return Err(Refusal::Namespace {
                kind: kind_name,
                name,
                wanted: wanted_ns,
                parent: parent_ns,
            });
        }
        if !is_valid_name(&name) {
            return Err(Refusal::InvalidName {
                kind: kind_name,
                name,
            });
        }
        if !seen.insert((kind_name.clone(), name.clone())) {
            return Err(Refusal::Duplicate {
                kind: kind_name,
                name,
            });
        }
        let key = ObjectKey::new(parent_ns.clone(), name.clone());
        let live = cache
            .child_store(&api_version, &kind_name)
            .and_then(|s| s.get(&key));
        if let Some(live) = &live {
            let controller = controller_uid(live);
            if controller != Some(parent_uid.as_str()) {
                let owner = controller.map_or("not owned by any controller".to_owned(), |u| {
                    format!("controlled by {u}")
                });
                return Err(Refusal::Foreign {
                    kind: kind_name,
                    namespace: parent_ns,
                    name,
                    owner,
                });
            }
        }
        stamp(&mut child, &parent_ns, &owner, &parent_uid);
        let size = serde_json::to_vec(&child).map_or(usize::MAX, |b| b.len());
        if size > MAX_CHILD_BYTES {
            return Err(Refusal::TooLarge {
                what: format!("{kind_name} {name:?} ({size} bytes)"),
                limit: MAX_CHILD_BYTES,
            });
        }
        out.push(DesiredChild {
            kind: kind.clone(),
            key,
            manifest: child,
            live,
        });
    }
    Ok(out)
}

/// Sets the host-owned fields and drops the server-owned ones a plugin may have copied.
fn stamp(child: &mut Value, namespace: &str, owner: &Value, parent_uid: &str) {
    let Some(obj) = child.as_object_mut() else {
        return;
    };
    obj.remove("status");
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    for server_owned in [
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "deletionTimestamp",
        "selfLink",
    ] {
        meta.remove(server_owned);
    }
    meta.remove("ownerReferences");
    if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        ann.remove(MANIFEST_HASH_ANNOTATION);
    }
    let hash = hex::encode(&Sha256::digest(child_bytes(obj))[..8]);
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.insert("namespace".into(), json!(namespace));
    meta.insert("ownerReferences".into(), json!([owner]));
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(PARENT_UID_LABEL.into(), json!(parent_uid));
    }
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(ann) = ann.as_object_mut() {
        ann.insert(MANIFEST_HASH_ANNOTATION.into(), json!(hash));
    }
}

fn child_bytes(obj: &serde_json::Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(obj).unwrap_or_default()
}

/// Whether `live` already holds every field of `desired`: then applying it would change nothing.
/// Objects compare key by key (extra live keys, e.g. defaults, are fine); lists element by element.
pub fn holds(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d.iter().all(|(k, dv)| match l.get(k) {
            Some(lv) => holds(lv, dv),
            None => dv.is_null(),
        }),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| holds(lv, dv))
        }
        (Value::Number(l), Value::Number(d)) => l.as_f64() == d.as_f64(),
        (l, d) => l == d,
    }
}

/// [`holds`] for a cached child: compares everything but `apiVersion`/`kind`, which list
/// responses may omit. Runs for every child on every reconcile, so it reads the body in place
/// and serialises only the (small) metadata, not a deep copy of the whole live object.
pub fn live_holds(live: &DynamicObject, desired: &Value) -> bool {
    let Some(d) = desired.as_object() else {
        return false;
    };
    // A body-less object (`data: null`) serialises to its metadata alone.
    let body = live.data.as_object();
    d.iter()
        .filter(|(k, _)| *k != "apiVersion" && *k != "kind")
        .all(|(k, dv)| {
            if k == "metadata" {
                return serde_json::to_value(&live.metadata).is_ok_and(|lv| holds(&lv, dv));
            }
            match body.and_then(|b| b.get(k)) {
                Some(lv) => holds(lv, dv),
                None => dv.is_null(),
            }
        })
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
