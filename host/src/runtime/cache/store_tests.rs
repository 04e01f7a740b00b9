use super::*;
use crate::metrics::Metrics;
use crate::plugin::LabelSelector;
use crate::plugin::{LabelRequirement, SelectorOperator};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::runtime::watcher;

fn cm_kind() -> ResourceKind {
    ResourceKind {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

fn child(name: &str, owner: Option<&str>) -> CachedObject {
    CachedObject::from_object(&decoded_child(name, owner)).unwrap_or_else(|e| panic!("{e}"))
}

fn decoded_child(name: &str, owner: Option<&str>) -> DynamicObject {
    let mut obj = DynamicObject::new(name, &cm_kind().api_resource()).within("default");
    obj.metadata.owner_references = owner.map(|uid| {
        vec![OwnerReference {
            api_version: "weir.dev/v1alpha1".into(),
            kind: "Blog".into(),
            name: "b".into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    });
    obj
}

fn names(objs: Vec<Arc<CachedObject>>) -> Vec<String> {
    let mut n: Vec<String> = objs.iter().map(|o| o.name().to_owned()).collect();
    n.sort();
    n
}

#[test]
fn children_are_found_by_their_controller_uid() {
    let store = Store::new(cm_kind());
    store.apply(watcher::Event::Apply(child("a1", Some("uid-a"))));
    store.apply(watcher::Event::Apply(child("a2", Some("uid-a"))));
    store.apply(watcher::Event::Apply(child("b1", Some("uid-b"))));
    store.apply(watcher::Event::Apply(child("loose", None)));
    assert_eq!(names(store.controlled_by("uid-a")), vec!["a1", "a2"]);
    assert_eq!(names(store.controlled_by("uid-b")), vec!["b1"]);
    assert!(store.controlled_by("uid-c").is_empty());
}

#[test]
fn a_changed_controller_moves_the_child_in_the_index() {
    let store = Store::new(cm_kind());
    store.apply(watcher::Event::Apply(child("x", Some("uid-a"))));
    store.apply(watcher::Event::Apply(child("x", Some("uid-b"))));
    assert!(store.controlled_by("uid-a").is_empty());
    assert_eq!(names(store.controlled_by("uid-b")), vec!["x"]);
    store.apply(watcher::Event::Apply(child("x", None)));
    assert!(store.controlled_by("uid-b").is_empty());
}

#[test]
fn a_deleted_child_leaves_the_index() {
    let store = Store::new(cm_kind());
    store.apply(watcher::Event::Apply(child("a1", Some("uid-a"))));
    store.apply(watcher::Event::Delete(child("a1", Some("uid-a"))));
    assert!(store.controlled_by("uid-a").is_empty());
    assert!(store.get(&ObjectKey::new("default", "a1")).is_none());
}

#[test]
fn a_relist_drops_what_it_did_not_list_only_when_done() {
    let store = Store::new(cm_kind());
    store.apply(watcher::Event::Apply(child("old", Some("uid-a"))));
    store.apply(watcher::Event::Apply(child("kept", Some("uid-a"))));
    store.apply(watcher::Event::Init);
    store.apply(watcher::Event::InitApply(child("new", Some("uid-a"))));
    store.apply(watcher::Event::InitApply(child("kept", Some("uid-b"))));
    assert_eq!(
        names(store.controlled_by("uid-a")),
        vec!["new", "old"],
        "what the relist has not listed yet is served until it is done"
    );
    assert_eq!(names(store.controlled_by("uid-b")), vec!["kept"]);
    assert!(!store.is_synced());
    store.apply(watcher::Event::InitDone);
    assert!(store.is_synced());
    assert_eq!(names(store.controlled_by("uid-a")), vec!["new"]);
    assert_eq!(store.len(), 2);
}

#[test]
fn a_relist_replaces_each_object_as_it_comes_rather_than_holding_a_second_copy() {
    let store = Store::new(cm_kind());
    let first = child("a", Some("uid-a"));
    store.apply(watcher::Event::Apply(first));
    let old = store.get(&ObjectKey::new("default", "a"));
    let old = old.unwrap_or_else(|| panic!("cached"));
    store.apply(watcher::Event::Init);
    store.apply(watcher::Event::InitApply(child("a", Some("uid-a"))));
    assert_eq!(
        Arc::strong_count(&old),
        1,
        "the old version is let go as soon as the relist lists its successor"
    );
    store.apply(watcher::Event::InitDone);
    assert_eq!(store.len(), 1);
}

#[test]
fn the_index_lookup_does_not_touch_unrelated_objects() {
    // 10,000 parents with three children each: one lookup returns exactly three objects.
    let store = Store::new(cm_kind());
    for p in 0..10_000 {
        for c in 0..3 {
            store.apply(watcher::Event::Apply(child(
                &format!("p{p}-c{c}"),
                Some(&format!("uid-{p}")),
            )));
        }
    }
    assert_eq!(store.len(), 30_000);
    assert_eq!(
        names(store.controlled_by("uid-4242")),
        vec!["p4242-c0", "p4242-c1", "p4242-c2"]
    );
}

fn labelled(ns: &str, name: &str, labels: &[(&str, &str)]) -> CachedObject {
    let mut obj = DynamicObject::new(name, &cm_kind().api_resource()).within(ns);
    obj.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
}

fn selector(
    pairs: &[(&str, &str)],
    expressions: &[(&str, SelectorOperator, &[&str])],
) -> LabelSelector {
    LabelSelector {
        match_labels: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        match_expressions: expressions
            .iter()
            .map(|(key, operator, values)| LabelRequirement {
                key: (*key).to_owned(),
                operator: *operator,
                values: values.iter().map(|v| (*v).to_owned()).collect(),
            })
            .collect(),
    }
}

#[test]
fn a_label_selection_from_the_index_is_what_a_pass_over_the_kind_finds() {
    let (indexed, scanned) = (Store::new(cm_kind()), Store::new(cm_kind()));
    indexed.index_labels();
    for store in [&indexed, &scanned] {
        store.apply(watcher::Event::Apply(labelled(
            "a",
            "p1",
            &[("blog", "b1"), ("tier", "web")],
        )));
        store.apply(watcher::Event::Apply(labelled(
            "a",
            "p2",
            &[("blog", "b1")],
        )));
        store.apply(watcher::Event::Apply(labelled(
            "a",
            "p3",
            &[("blog", "b2"), ("tier", "db")],
        )));
        store.apply(watcher::Event::Apply(labelled(
            "b",
            "p4",
            &[("blog", "b1")],
        )));
        store.apply(watcher::Event::Apply(labelled("a", "bare", &[])));
        // A relabelled object leaves its old entries.
        store.apply(watcher::Event::Apply(labelled(
            "a",
            "p2",
            &[("blog", "b2")],
        )));
    }
    let cases = [
        (selector(&[("blog", "b1")], &[]), vec!["p1"]),
        (selector(&[("blog", "b2")], &[]), vec!["p2", "p3"]),
        (selector(&[("blog", "b2"), ("tier", "db")], &[]), vec!["p3"]),
        (
            selector(&[], &[("tier", SelectorOperator::Exists, &[])]),
            vec!["p1", "p3"],
        ),
        (
            selector(&[], &[("blog", SelectorOperator::In, &["b1", "b2", "b1"])]),
            vec!["p1", "p2", "p3"],
        ),
        (
            selector(&[], &[("tier", SelectorOperator::DoesNotExist, &[])]),
            vec!["bare", "p2"],
        ),
        (selector(&[], &[]), vec!["bare", "p1", "p2", "p3"]),
        (selector(&[("blog", "none")], &[]), vec![]),
    ];
    for (selector, want) in cases {
        for store in [&indexed, &scanned] {
            let found: Vec<String> = store
                .select(Some("a"), &selector)
                .iter()
                .map(|o| o.name().to_owned())
                .collect();
            assert_eq!(found, want, "{selector:?}");
        }
    }
    indexed.apply(watcher::Event::Delete(labelled("a", "p1", &[])));
    assert!(
        indexed
            .select(Some("a"), &selector(&[("blog", "b1")], &[]))
            .is_empty()
    );
}

#[test]
fn a_selection_anywhere_finds_the_labelled_objects_of_every_namespace() {
    let (indexed, scanned) = (Store::new(cm_kind()), Store::new(cm_kind()));
    indexed.index_labels();
    for store in [&indexed, &scanned] {
        store.apply(watcher::Event::Apply(labelled(
            "b",
            "p1",
            &[("blog", "b1")],
        )));
        store.apply(watcher::Event::Apply(labelled(
            "a",
            "p2",
            &[("blog", "b1")],
        )));
        store.apply(watcher::Event::Apply(labelled(
            "a",
            "p3",
            &[("blog", "b2")],
        )));
        let found: Vec<String> = store
            .select_anywhere(&selector(&[("blog", "b1")], &[]))
            .iter()
            .map(|o| o.key().to_string())
            .collect();
        assert_eq!(found, ["a/p2", "b/p1"]);
        assert!(
            store
                .select(None, &selector(&[("blog", "b1")], &[]))
                .is_empty()
        );
    }
}

#[test]
fn the_bytes_come_back_to_nothing_when_the_objects_go() {
    let store = Store::new(cm_kind());
    store.apply(watcher::Event::Apply(child("a", Some("uid-a"))));
    let one = store.bytes();
    assert!(one > 0);
    store.apply(watcher::Event::Apply(child("a", Some("uid-b"))));
    store.apply(watcher::Event::Apply(child("b", Some("uid-b"))));
    store.apply(watcher::Event::Delete(child("a", None)));
    store.apply(watcher::Event::Delete(child("b", None)));
    let inner = store.read();
    assert_eq!((inner.bytes, inner.owned, inner.owner_sets), (0, 0, 0));
}

#[test]
fn the_gauges_show_a_stores_size_until_it_is_dropped() {
    let metrics = Metrics::new();
    let store = Store::counted(cm_kind(), &metrics);
    store.apply(watcher::Event::Apply(child("a", Some("uid-a"))));
    store.apply(watcher::Event::Apply(child("b", Some("uid-a"))));
    let text = metrics.encode();
    assert!(
        text.contains(r#"weir_cached_objects{group="",kind="ConfigMap"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            r#"weir_cached_bytes{{group="",kind="ConfigMap"}} {}"#,
            store.bytes()
        )),
        "{text}"
    );
    assert!(
        text.contains(r#"weir_index_entries{group="",kind="ConfigMap",index="owner"} 2"#),
        "{text}"
    );
    drop(store);
    let text = metrics.encode();
    assert!(
        text.contains(r#"weir_cached_objects{group="",kind="ConfigMap"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"weir_cached_bytes{group="",kind="ConfigMap"} 0"#),
        "{text}"
    );
}
