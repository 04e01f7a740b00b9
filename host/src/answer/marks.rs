//! How a child in another cluster than its parent's names that parent: marks instead of an owner reference.
//!
//! An owner reference cannot cross clusters (the API server of a member knows nothing of the
//! hub's objects, and its garbage collector would delete a child whose owner it cannot find).
//! So a child the host places in a member cluster carries, instead, the label the host already
//! puts on every child, [`PARENT_UID_LABEL`] (what a member's cache finds a parent's children
//! by), and annotations naming the rest of what an owner reference would: the parent's cluster
//! ([`PARENT_CLUSTER_ANNOTATION`]), its apiVersion and kind ([`PARENT_API_VERSION_ANNOTATION`],
//! [`PARENT_KIND_ANNOTATION`]) and its `namespace/name` ([`PARENT_NAME_ANNOTATION`]). A change
//! of a marked child is routed back to its parent by them ([`ParentMark::of`]).
//!
//! Who controls an object depends on where it is (`super::Ownership`, the judge's rule): in
//! the parent's cluster, the controller's owner reference; in a member, the mark's UID.

use std::collections::BTreeSet;

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::runtime::ObjectKey;

/// Label on every child naming the UID of the parent that controls it.
pub const PARENT_UID_LABEL: &str = "weir.dev/parent-uid";

/// Annotation on a child in a member cluster naming the cluster its parent lives in.
pub const PARENT_CLUSTER_ANNOTATION: &str = "weir.dev/parent-cluster";
/// Annotation on a child in a member cluster naming its parent's apiVersion.
pub const PARENT_API_VERSION_ANNOTATION: &str = "weir.dev/parent-api-version";
/// Annotation on a child in a member cluster naming its parent's kind.
pub const PARENT_KIND_ANNOTATION: &str = "weir.dev/parent-kind";
/// Annotation on a child in a member cluster naming its parent's `namespace/name` (`name` for
/// a cluster-scoped parent).
pub const PARENT_NAME_ANNOTATION: &str = "weir.dev/parent-name";

/// The annotation on a parent listing the member clusters it may have children in,
/// comma-separated: the parent's side of the marks (written by `crate::reconcile::placed`).
pub const MEMBER_CLUSTERS_ANNOTATION: &str = "weir.dev/member-clusters";

/// The member clusters `parent` records it may have children in
/// ([`MEMBER_CLUSTERS_ANNOTATION`]).
pub fn recorded_clusters(parent: &DynamicObject) -> BTreeSet<String> {
    let annotations = parent.metadata.annotations.as_ref();
    let value = annotations.and_then(|a| a.get(MEMBER_CLUSTERS_ANNOTATION));
    value
        .into_iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The parent a child in a member cluster is marked with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentMark {
    /// The cluster the parent lives in.
    pub cluster: String,
    /// The parent's apiVersion.
    pub api_version: String,
    /// The parent's kind.
    pub kind: String,
    /// The parent's namespace and name.
    pub key: ObjectKey,
    /// The parent's UID.
    pub uid: String,
}

impl ParentMark {
    /// The mark of `parent` (of `api_version` and `kind`), which lives in `cluster`.
    pub fn new(cluster: &str, (api_version, kind): (&str, &str), parent: &DynamicObject) -> Self {
        Self {
            cluster: cluster.to_owned(),
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            key: ObjectKey {
                namespace: parent.metadata.namespace.clone(),
                name: parent.metadata.name.clone().unwrap_or_default(),
            },
            uid: parent.metadata.uid.clone().unwrap_or_default(),
        }
    }

    /// Marks `manifest` with this parent in place of an owner reference (any is removed).
    pub fn stamp(&self, manifest: &mut Value) {
        let Some(meta) = manifest.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        meta.remove("ownerReferences");
        let name = self.key.to_string();
        for (field, key, value) in [
            ("labels", PARENT_UID_LABEL, self.uid.as_str()),
            ("annotations", PARENT_CLUSTER_ANNOTATION, &self.cluster),
            (
                "annotations",
                PARENT_API_VERSION_ANNOTATION,
                &self.api_version,
            ),
            ("annotations", PARENT_KIND_ANNOTATION, &self.kind),
            ("annotations", PARENT_NAME_ANNOTATION, &name),
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

    /// The parent `obj` is marked with, if it carries the whole mark.
    pub fn of(obj: &DynamicObject) -> Option<Self> {
        let uid = obj.metadata.labels.as_ref()?.get(PARENT_UID_LABEL)?;
        let annotations = obj.metadata.annotations.as_ref()?;
        let name = annotations.get(PARENT_NAME_ANNOTATION)?;
        let key = match name.split_once('/') {
            Some((namespace, name)) => ObjectKey::new(namespace, name),
            None => ObjectKey {
                namespace: None,
                name: name.clone(),
            },
        };
        Some(Self {
            cluster: annotations.get(PARENT_CLUSTER_ANNOTATION)?.clone(),
            api_version: annotations.get(PARENT_API_VERSION_ANNOTATION)?.clone(),
            kind: annotations.get(PARENT_KIND_ANNOTATION)?.clone(),
            key,
            uid: uid.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::Ownership;

    fn parent() -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "weir.dev/v1alpha1", "kind": "Spread",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn object(manifest: Value) -> DynamicObject {
        serde_json::from_value(manifest).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_marked_child_names_its_parent_and_carries_no_owner_reference() {
        let mark = ParentMark::new("local", ("weir.dev/v1alpha1", "Spread"), &parent());
        let mut child = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": null,
                         "annotations": {"keep": "1"},
                         "ownerReferences": [{"uid": "u-1", "controller": true}]},
        });
        mark.stamp(&mut child);
        assert!(child["metadata"].get("ownerReferences").is_none());
        assert_eq!(child["metadata"]["labels"][PARENT_UID_LABEL], "u-1");
        let annotations = &child["metadata"]["annotations"];
        assert_eq!(annotations["keep"], "1");
        assert_eq!(annotations[PARENT_CLUSTER_ANNOTATION], "local");
        assert_eq!(annotations[PARENT_NAME_ANNOTATION], "shop/web");
        assert_eq!(ParentMark::of(&object(child.clone())), Some(mark));
        assert_eq!(Ownership::Mark.stamped(&child), Some("u-1"));
        assert_eq!(Ownership::Reference.stamped(&child), None);
    }

    #[test]
    fn a_cluster_scoped_parent_is_found_again_by_its_name_alone() {
        let mut parent = parent();
        parent.metadata.namespace = None;
        let mark = ParentMark::new("hub", ("weir.dev/v1", "Site"), &parent);
        let mut child = json!({"metadata": {"name": "c"}});
        mark.stamp(&mut child);
        let found = ParentMark::of(&object(child)).unwrap_or_else(|| panic!("no mark"));
        assert_eq!(found.key.namespace, None);
        assert_eq!(found.key.name, "web");
    }

    #[test]
    fn an_object_with_only_the_label_is_not_marked() {
        let obj = object(json!({"metadata": {"name": "c", "labels": {PARENT_UID_LABEL: "u-1"}}}));
        assert_eq!(ParentMark::of(&obj), None);
        assert_eq!(Ownership::Mark.controller(&obj), Some("u-1"));
    }

    #[test]
    fn ownership_in_the_parents_cluster_is_the_owner_reference_not_the_label() {
        let obj = object(json!({"metadata": {
            "name": "c", "labels": {PARENT_UID_LABEL: "u-1"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "p", "uid": "u-2",
                                 "controller": true}],
        }}));
        assert_eq!(Ownership::of_cluster("hub", "hub"), Ownership::Reference);
        assert_eq!(Ownership::of_cluster("member-a", "hub"), Ownership::Mark);
        assert_eq!(Ownership::Reference.controller(&obj), Some("u-2"));
        assert_eq!(Ownership::Mark.controller(&obj), Some("u-1"));
    }
}
