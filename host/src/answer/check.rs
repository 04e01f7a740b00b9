//! The checks of a plugin's answer and the stamping of what passes: nothing is written unless the whole answer passes.
//!
//! A plugin is untrusted: it may only create the kinds it declared, only in its parent's
//! namespace (a cluster-scoped parent: only in the namespaces the policy's entry for the plugin
//! allows, [`super::Grant`]), and never take over an object someone else controls. The host, not the plugin,
//! stamps ownership, so every child it writes is garbage-collected with its parent.
//!
//! [`check`] only borrows the answer, so a refused one goes back as the plugin gave it (no copy
//! on the way), and [`Accepted::stamp`] takes the children once all of them passed; the judge
//! ([`super::judge`]) runs the two.

use std::collections::HashSet;
use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::live::LiveObjects;
use super::marks::{PARENT_UID_LABEL, ParentMark};
use super::policy::ValidationPolicy;
use super::refusal::Refusal;
use crate::plugin::{PluginInfo, ResourceKind};
use crate::runtime::ObjectKey;

/// Annotation holding a hash of the plugin's manifest, so a field the plugin stops
/// setting is noticed (and removed by server-side apply) even though the live object still has it.
pub const MANIFEST_HASH_ANNOTATION: &str = "weir.dev/manifest-hash";
/// Most children one parent may have.
pub const MAX_CHILDREN: usize = 256;
/// Largest serialised child (etcd stores at most 1.5 MiB per object).
pub const MAX_CHILD_BYTES: usize = 1 << 20;
/// Largest serialised desired status: it shares the parent's 1.5 MiB with the spec and metadata.
pub const MAX_STATUS_BYTES: usize = 1 << 20;
/// The Secret type the API server fills with a token of the ServiceAccount the Secret names.
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";

/// One child that passed validation, ready to apply.
#[derive(Debug, Clone)]
pub struct DesiredChild {
    /// The declared kind it is of.
    pub kind: ResourceKind,
    /// Its key (in the parent's namespace, or one the policy granted a cluster-scoped parent).
    pub key: ObjectKey,
    /// The manifest to apply, with the host's namespace, owner reference, label and hash.
    pub manifest: Value,
    /// The live object, if the cache has one.
    pub live: Option<Arc<DynamicObject>>,
    /// The member cluster it is placed in, marked with its parent ([`ParentMark`]) instead of
    /// owned; `None`: the parent's own cluster.
    pub cluster: Option<String>,
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

/// An answer that passed every check, its children not yet stamped: [`Accepted::stamp`] turns
/// them into what the host applies.
#[derive(Debug)]
pub struct Accepted {
    uid: String,
    owner: Value,
    /// What a child in a member cluster carries instead of `owner` (only made for an answer
    /// that places a child in one).
    mark: Option<ParentMark>,
    /// Per child, in the answer's order: its declared kind, key, live copy and member cluster.
    children: Vec<AcceptedChild>,
}

/// One accepted child: its declared kind, key, live copy, and the member cluster it is placed in.
type AcceptedChild = (
    ResourceKind,
    ObjectKey,
    Option<Arc<DynamicObject>>,
    Option<String>,
);

impl Accepted {
    /// Stamps the host-owned fields on `desired`, the children [`check`] accepted (moved, not
    /// copied: the answer is only given up once the whole of it passed).
    pub(super) fn stamp(self, desired: Vec<Value>) -> Vec<DesiredChild> {
        debug_assert_eq!(desired.len(), self.children.len(), "the children checked");
        desired
            .into_iter()
            .zip(self.children)
            .map(|(mut manifest, (kind, key, live, cluster))| {
                let namespace = key.namespace.as_deref().unwrap_or_default();
                stamp(&mut manifest, namespace, &self.owner, &self.uid);
                if let (Some(_), Some(mark)) = (&cluster, &self.mark) {
                    mark.stamp(&mut manifest);
                }
                DesiredChild {
                    kind,
                    key,
                    manifest,
                    live,
                    cluster,
                }
            })
            .collect()
    }
}

/// Checks the plugin's whole answer (desired children and status) against its declaration,
/// `policy` and the `live` objects, on a borrowed answer: on refusal the caller still holds the
/// answer exactly as the plugin gave it (a `--dump-failures` fixture keeps it). The size of a
/// stamped child is bounded from its own size; only a child that might cross
/// [`MAX_CHILD_BYTES`] once stamped is stamped on a copy to measure it.
pub(super) fn check(
    info: &PluginInfo,
    parent: &DynamicObject,
    (desired, status): (&[Value], Option<&Value>),
    clusters: &[Option<String>],
    live: &dyn LiveObjects,
    policy: &ValidationPolicy,
) -> Result<Accepted, Refusal> {
    if desired.len() > MAX_CHILDREN {
        return Err(Refusal::TooLarge {
            what: format!("{} children", desired.len()),
            limit: MAX_CHILDREN,
        });
    }
    if let Some(status) = status {
        let size = json_len(status);
        if size > MAX_STATUS_BYTES {
            return Err(Refusal::StatusTooLarge {
                size,
                limit: MAX_STATUS_BYTES,
            });
        }
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
    let parent_cluster = live.parent_cluster();
    let mark = clusters
        .iter()
        .any(|c| c.as_deref().is_some_and(|c| c != parent_cluster))
        .then(|| {
            let kind = (&*info.parent.api_version(), info.parent.kind.as_str());
            ParentMark::new(parent_cluster, kind, parent)
        });
    let grant = policy.grant(&info.name);
    let mut seen = HashSet::new();
    let mut children = Vec::with_capacity(desired.len());
    for (index, child) in desired.iter().enumerate() {
        let api_version = str_at(child, &["apiVersion"]).ok_or(Refusal::Malformed {
            index,
            field: "apiVersion",
        })?;
        let kind_name = str_at(child, &["kind"]).ok_or(Refusal::Malformed {
            index,
            field: "kind",
        })?;
        let name = str_at(child, &["metadata", "name"]).ok_or(Refusal::Malformed {
            index,
            field: "metadata.name",
        })?;
        for (key, field) in [
            ("labels", "metadata.labels"),
            ("annotations", "metadata.annotations"),
        ] {
            if child["metadata"]
                .get(key)
                .is_some_and(|m| !m.is_null() && !m.is_object())
            {
                return Err(Refusal::Malformed { index, field });
            }
        }
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
        let wanted_ns = str_at(child, &["metadata", "namespace"])
            .unwrap_or(&parent_ns)
            .to_owned();
        // A cluster-scoped parent's children go where the policy's entry lets them (its owner
        // reference is valid from any namespace); a namespaced parent's stay beside it (an
        // owner reference cannot cross namespaces).
        if let Some(grant) = grant.filter(|_| parent_ns.is_empty()) {
            if wanted_ns.is_empty() || !grant.allows_namespace(&wanted_ns, live) {
                return Err(Refusal::NamespaceNotGranted {
                    kind: kind_name,
                    name,
                    wanted: wanted_ns,
                });
            }
        } else if parent_ns.is_empty() || wanted_ns != parent_ns {
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
        // The same kind and name in two clusters are two children (contract 0.4.0).
        let cluster = clusters
            .get(index)
            .and_then(Option::as_deref)
            .unwrap_or(parent_cluster);
        if !seen.insert((cluster, kind_name.clone(), wanted_ns.clone(), name.clone())) {
            return Err(Refusal::Duplicate {
                kind: kind_name,
                name,
            });
        }
        check_content(child, &kind_name, &name, policy)?;
        let key = ObjectKey::new(wanted_ns.clone(), name.clone());
        // Who controls a live object depends on the cluster it is in (`super::marks`).
        let ownership = Ownership::of_cluster(cluster, parent_cluster);
        let live = live.get_in(cluster, &api_version, &kind_name, &key);
        if let Some(live) = &live {
            let controller = ownership.controller(live);
            if controller != Some(parent_uid.as_str()) {
                let mut owner = ownership.owner(controller);
                if ownership == Ownership::Mark {
                    owner.push_str(&format!(" in member cluster {cluster:?}"));
                }
                return Err(Refusal::Foreign {
                    kind: kind_name,
                    namespace: wanted_ns,
                    name,
                    owner,
                });
            }
        }
        let marked = mark.as_ref().filter(|_| ownership == Ownership::Mark);
        let growth = stamp_growth(&owner, &wanted_ns, &parent_uid) + marked.map_or(0, mark_growth);
        if json_len(child).saturating_add(growth) > MAX_CHILD_BYTES {
            let mut stamped = child.clone();
            stamp(&mut stamped, &wanted_ns, &owner, &parent_uid);
            if let Some(mark) = marked {
                mark.stamp(&mut stamped);
            }
            let size = json_len(&stamped);
            if size > MAX_CHILD_BYTES {
                return Err(Refusal::TooLarge {
                    what: format!("{kind_name} {name:?} ({size} bytes)"),
                    limit: MAX_CHILD_BYTES,
                });
            }
        }
        let member = (ownership == Ownership::Mark).then(|| cluster.to_owned());
        children.push((kind.clone(), key, live, member));
    }
    Ok(Accepted {
        uid: parent_uid,
        owner,
        mark,
        children,
    })
}

/// The UID of `obj`'s controller (the owner reference with `controller: true`), if any.
pub fn controller_uid(obj: &DynamicObject) -> Option<&str> {
    obj.metadata
        .owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// How the cluster an object is in says who controls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// The parent's own cluster: the controller's owner reference.
    Reference,
    /// A member cluster: the parent's UID in the mark ([`PARENT_UID_LABEL`]).
    Mark,
}

impl Ownership {
    /// The rule of a child placed in `cluster` when its parent lives in `parent_cluster`.
    pub fn of_cluster(cluster: &str, parent_cluster: &str) -> Self {
        if cluster == parent_cluster {
            Ownership::Reference
        } else {
            Ownership::Mark
        }
    }

    /// The UID of the parent controlling the live `obj`, if any.
    pub fn controller(self, obj: &DynamicObject) -> Option<&str> {
        match self {
            Ownership::Reference => controller_uid(obj),
            Ownership::Mark => obj
                .metadata
                .labels
                .as_ref()?
                .get(PARENT_UID_LABEL)
                .map(String::as_str),
        }
    }

    /// Who controls an object whose controller is `controller`, as a refusal says it.
    pub fn owner(self, controller: Option<&str>) -> String {
        match (self, controller) {
            (Ownership::Reference, None) => "not owned by any controller".to_owned(),
            (Ownership::Reference, Some(uid)) => format!("controlled by {uid}"),
            (Ownership::Mark, None) => "not marked by any parent".to_owned(),
            (Ownership::Mark, Some(uid)) => format!("marked by the parent {uid}"),
        }
    }

    /// The UID of the parent a stamped manifest names as its controller.
    pub fn stamped(self, manifest: &Value) -> Option<&str> {
        let pointer = match self {
            Ownership::Reference => "/metadata/ownerReferences/0/uid",
            Ownership::Mark => "/metadata/labels/weir.dev~1parent-uid",
        };
        manifest.pointer(pointer).and_then(Value::as_str)
    }
}

/// At most how many bytes [`stamp`] adds to a child's compact JSON: it only removes fields,
/// except the namespace, the owner reference, the parent-UID label and the hash annotation (with
/// the `labels` and `annotations` objects around them), whose keys and punctuation fit in 256.
fn stamp_growth(owner: &Value, namespace: &str, uid: &str) -> usize {
    json_len(owner) + json_len(&json!(namespace)) + json_len(&json!(uid)) + 256
}

/// At most how many bytes a member cluster's mark adds beside [`stamp_growth`]: its four
/// annotations' values, with their keys and punctuation in 256.
fn mark_growth(mark: &ParentMark) -> usize {
    let name = mark.key.namespace.as_deref().unwrap_or_default().len() + mark.key.name.len();
    mark.cluster.len() + mark.api_version.len() + mark.kind.len() + name + 256
}

/// The answer-side rules on a child's content: no finalizers, no self-filling credentials.
fn check_content(
    child: &Value,
    kind: &str,
    name: &str,
    policy: &ValidationPolicy,
) -> Result<(), Refusal> {
    let finalizers = child.get("metadata").and_then(|m| m.get("finalizers"));
    let harmless = |f: &Value| f.is_null() || f.as_array().is_some_and(Vec::is_empty);
    if let Some(finalizers) = finalizers.filter(|f| !harmless(f)) {
        return Err(Refusal::Finalizers {
            kind: kind.to_owned(),
            name: name.to_owned(),
            finalizers: finalizers.to_string(),
        });
    }
    // Only the core Secret: the kind is declared, so apiVersion `v1` is the API server's own.
    if kind == "Secret" && str_at(child, &["apiVersion"]) == Some("v1") {
        let secret_type = str_at(child, &["type"]).unwrap_or("Opaque");
        if !policy.allows_secret_type(secret_type) {
            return Err(Refusal::SecretType {
                name: name.to_owned(),
                secret_type: secret_type.to_owned(),
            });
        }
    }
    Ok(())
}

/// Bytes of `value` serialised as compact JSON, counted without building the text.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
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
    // A plugin may serialise absent labels or annotations as `null`: they start empty then.
    for (field, key, value) in [
        ("labels", PARENT_UID_LABEL, parent_uid),
        ("annotations", MANIFEST_HASH_ANNOTATION, hash.as_str()),
    ] {
        let map = meta.entry(field).or_insert_with(|| json!({}));
        if map.is_null() {
            *map = json!({});
        }
        if let Some(map) = map.as_object_mut() {
            map.insert(key.into(), json!(value));
        }
    }
}

fn child_bytes(obj: &serde_json::Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(obj).unwrap_or_default()
}

#[cfg(test)]
#[path = "grant_tests.rs"]
mod grant_tests;
#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
