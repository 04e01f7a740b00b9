//! The record of a parent's member clusters and the rule of its deletion, without a cluster.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde_json::{Value, json};

use super::*;

fn set(clusters: &[&str]) -> BTreeSet<String> {
    clusters.iter().map(|c| (*c).to_owned()).collect()
}

/// `a` and `b` are engaged and listed, `c` is listing, anything else is not engaged.
fn fleet(cluster: &str) -> Seen {
    match cluster {
        "a" | "b" => Seen::Listed,
        "c" => Seen::Listing,
        _ => Seen::Released,
    }
}

fn parent(annotation: Option<&str>) -> DynamicObject {
    let mut parent: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "weir.dev/v1alpha1", "kind": "Spread",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1"}}))
    .unwrap_or_else(|e| panic!("{e}"));
    if let Some(value) = annotation {
        let annotations = BTreeMap::from([(MEMBER_CLUSTERS_ANNOTATION.to_owned(), value.into())]);
        parent.metadata.annotations = Some(annotations);
    }
    parent
}

#[test]
fn the_record_is_read_from_a_comma_separated_annotation() {
    assert_eq!(crate::answer::recorded_clusters(&parent(None)), set(&[]));
    assert_eq!(
        crate::answer::recorded_clusters(&parent(Some(""))),
        set(&[])
    );
    assert_eq!(
        crate::answer::recorded_clusters(&parent(Some("b, a,,"))),
        set(&["a", "b"])
    );
}

#[test]
fn a_cluster_is_recorded_once_a_child_is_placed_or_seen_there() {
    let record = to_record(&set(&[]), ["a"], ["b"], fleet);
    assert_eq!(record, set(&["a", "b"]));
}

#[test]
fn a_child_placed_in_a_cluster_that_is_not_engaged_records_nothing() {
    assert_eq!(to_record(&set(&[]), ["gone"], [], fleet), set(&[]));
}

#[test]
fn a_cluster_leaves_the_record_only_once_its_listed_cache_shows_no_child() {
    // `a`: listed and empty; `c`: still listing; `gone`: not engaged, its children unseen.
    let record = to_record(&set(&["a", "c", "gone"]), [], [], fleet);
    assert_eq!(record, set(&["c", "gone"]));
    // A child still seen in `a` (a prune not yet shown by its cache) keeps it.
    let record = to_record(&set(&["a"]), [], ["a"], fleet);
    assert_eq!(record, set(&["a"]));
}

#[test]
fn the_record_is_patched_only_where_it_differs_and_never_over_others_annotations() {
    let ours = |v: &str| BTreeMap::from([(MEMBER_CLUSTERS_ANNOTATION.to_owned(), v.to_owned())]);
    assert!(record_ops(Some(&ours("a,b")), &set(&["a", "b"])).is_empty());
    assert!(record_ops(None, &set(&[])).is_empty());
    let path = "/metadata/annotations/weir.dev~1member-clusters";
    assert_eq!(
        record_ops(Some(&ours("a")), &set(&["a", "b"])),
        [json!({"op": "add", "path": path, "value": "a,b"})]
    );
    assert_eq!(
        record_ops(Some(&ours("a")), &set(&[])),
        [json!({"op": "remove", "path": path})]
    );
    let others = BTreeMap::from([("team".to_owned(), "x".to_owned())]);
    assert!(record_ops(Some(&others), &set(&[])).is_empty());
    // No annotations at all: the map is added only if there still is none.
    assert_eq!(
        record_ops(None, &set(&["a"])),
        [
            json!({"op": "test", "path": "/metadata/annotations", "value": null}),
            json!({"op": "add", "path": "/metadata/annotations",
                   "value": {MEMBER_CLUSTERS_ANNOTATION: "a"}}),
        ]
    );
}

#[test]
fn a_recorded_cluster_not_engaged_not_listed_or_failing_holds_the_deletion_up() {
    let failing = BTreeMap::from([("b".to_owned(), "503 Service Unavailable".to_owned())]);
    let held = holdups(&set(&["a", "b", "c", "gone"]), failing, fleet);
    assert_eq!(
        held,
        [
            Holdup {
                cluster: "b".into(),
                why: Why::Failing("503 Service Unavailable".into()),
            },
            Holdup {
                cluster: "c".into(),
                why: Why::Unlisted,
            },
            Holdup {
                cluster: "gone".into(),
                why: Why::Released,
            },
        ]
    );
    assert!(holdups(&set(&["a", "b"]), BTreeMap::new(), fleet).is_empty());
    assert!(
        holdups(&set(&["a"]), BTreeMap::new(), fleet).is_empty(),
        "a member the parent did not record holds nothing up, listed or not"
    );
}

fn condition(status: &Value) -> &Value {
    let conditions = status["conditions"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    conditions
        .iter()
        .find(|c| c["type"] == MEMBER_CHILDREN_CONDITION)
        .unwrap_or_else(|| panic!("no {MEMBER_CHILDREN_CONDITION} in {status}"))
}

#[test]
fn a_parent_never_held_up_shows_nothing() {
    let live = json!({"ready": "3/3", "conditions": [{"type": "Reconciled", "status": "True"}]});
    assert_eq!(held_status(Some(&live), &[], Some(2), "t1"), None);
}

#[test]
fn the_condition_names_each_cluster_and_why_and_keeps_the_rest_of_the_status() {
    let live = json!({"ready": "3/3", "conditions": [{"type": "Reconciled", "status": "True"}]});
    let held = [
        Holdup {
            cluster: "b".into(),
            why: Why::Failing("pruning Deployment shop/web: 503".into()),
        },
        Holdup {
            cluster: "gone".into(),
            why: Why::Released,
        },
    ];
    let status = held_status(Some(&live), &held, Some(2), "t1").unwrap_or_default();
    assert_eq!(status["ready"], "3/3");
    assert_eq!(status["conditions"][0]["type"], "Reconciled");
    let c = condition(&status);
    assert_eq!(
        (&c["status"], &c["reason"], &c["lastTransitionTime"]),
        (&json!("False"), &json!("MemberUnreachable"), &json!("t1"))
    );
    assert_eq!(c["observedGeneration"], 2);
    let message = c["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"member cluster "b": pruning Deployment shop/web: 503"#),
        "{message}"
    );
    assert!(
        message.contains(r#"member cluster "gone" is not engaged"#),
        "{message}"
    );
    let released = held_status(Some(&live), &held[1..], Some(2), "t1").unwrap_or_default();
    assert_eq!(condition(&released)["reason"], "MemberNotEngaged");
}

#[test]
fn the_same_holdup_again_reads_the_same_and_a_cleared_one_says_the_children_go() {
    let held = [Holdup {
        cluster: "gone".into(),
        why: Why::Released,
    }];
    let first = held_status(None, &held, Some(2), "t1").unwrap_or_default();
    let again = held_status(Some(&first), &held, Some(2), "t2").unwrap_or_default();
    assert_eq!(first, again, "nothing to write on the next pass");
    let cleared = held_status(Some(&first), &[], Some(2), "t3").unwrap_or_default();
    let c = condition(&cleared);
    assert_eq!(
        (&c["reason"], &c["lastTransitionTime"]),
        (&json!("Deleting"), &json!("t1"))
    );
    assert_eq!(
        cleared["conditions"].as_array().map(Vec::len),
        Some(1),
        "replaced, not added"
    );
}
