//! The member writers' pure parts: the route of a member's child to its parent, the finalizer held.

use serde_json::json;

use super::*;
use crate::plugin::test_info::namespaced;

fn cached(manifest: serde_json::Value) -> CachedObject {
    let obj: DynamicObject = serde_json::from_value(manifest).unwrap_or_else(|e| panic!("{e}"));
    CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
}

fn marked_by(cluster: &str, kind: &str) -> CachedObject {
    let parent = json!({"apiVersion": "weir.dev/v1alpha1", "kind": kind,
                        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"}});
    let parent: DynamicObject = serde_json::from_value(parent).unwrap_or_else(|e| panic!("{e}"));
    let mark = ParentMark::new(cluster, (&spreads().api_version(), kind), &parent);
    let mut child = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web", "namespace": "shop"}});
    mark.stamp(&mut child);
    cached(child)
}

fn spreads() -> ResourceKind {
    namespaced("weir.dev", "Spread", "spreads")
}

#[test]
fn a_marked_child_in_a_member_enqueues_its_parent_of_this_kind_only() {
    let MapToParent(map) = parent_of(&spreads());
    assert_eq!(
        map(&marked_by(LOCAL_CLUSTER, "Spread")),
        Some(ObjectKey::new("shop", "web"))
    );
    assert_eq!(
        map(&marked_by(LOCAL_CLUSTER, "Other")),
        None,
        "another kind's"
    );
    assert_eq!(map(&marked_by("hub-2", "Spread")), None, "another hub's");
    let unmarked = cached(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": "web", "namespace": "shop"}}));
    assert_eq!(map(&unmarked), None);
}

#[test]
fn only_a_parent_holding_the_hosts_finalizer_is_held() {
    let mut parent = DynamicObject::new("web", &spreads().api_resource());
    assert!(!holds(&parent));
    parent.metadata.finalizers = Some(vec!["other".into(), MEMBERS_FINALIZER.into()]);
    assert!(holds(&parent));
}
