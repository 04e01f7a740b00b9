//! Tests of the stored form: what is read back, and what is read without parsing everything.

use serde_json::json;

use super::*;

fn configmap() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"},
                        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:data": {"f:a": {}}}}]},
           "data": {"a": "1", "b": "two \"quoted\" \u{e9}"}})
}

#[test]
fn an_object_is_kept_as_its_compact_text_and_parses_back_the_same() {
    let obj = configmap();
    let stored = Stored::new(&obj);
    assert_eq!(stored.value(), obj);
    assert_eq!(
        &stored.text()[..],
        serde_json::to_vec(&obj).unwrap().as_slice()
    );
    assert_eq!(stored.text_len(), stored.text().len());
    assert!(matches!(stored.0, Form::Text(_)));
}

#[test]
fn type_labels_and_deletion_are_read_from_the_text() {
    let mut obj = configmap();
    let stored = Stored::new(&obj);
    let head = stored.head();
    assert_eq!(head.api_version.as_deref(), Some("v1"));
    assert_eq!(head.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(
        stored.labels(),
        obj["metadata"]["labels"].as_object().cloned()
    );
    assert!(!stored.is_deleting());
    obj["metadata"]["deletionTimestamp"] = json!("2026-12-02T12:00:00Z");
    obj["metadata"]["labels"] = json!(null);
    let deleting = Stored::new(&obj);
    assert!(deleting.is_deleting());
    assert_eq!(deleting.labels(), None);
    assert_eq!(
        Stored::new(&json!({"data": {}})).labels(),
        None,
        "no metadata"
    );
}

#[test]
fn selectors_select_as_they_do_on_the_parsed_object() {
    let obj = configmap();
    let stored = Stored::new(&obj);
    let none = ShardSelector::default();
    for (labels, fields) in [
        ("app=web", ""),
        ("app=api", ""),
        ("tier in (front,back),!gone", ""),
        ("app=web", "metadata.name=web"),
        ("", "metadata.name!=web"),
        ("", ""),
    ] {
        let l = LabelSelector::parse(labels).unwrap();
        let f = FieldSelector::parse(fields).unwrap();
        assert_eq!(
            stored.selected_by(&l, &f, &none),
            l.matches(&obj) && f.matches(&obj),
            "{labels:?} {fields:?}"
        );
    }
}

#[test]
fn an_object_nested_deeper_than_the_parser_reads_back_is_kept_parsed() {
    let mut deep = json!("leaf");
    for _ in 0..130 {
        deep = json!({"a": deep});
    }
    let text = serde_json::to_vec(&deep).unwrap();
    assert!(
        serde_json::from_slice::<Value>(&text).is_err(),
        "serde_json stops at 128 levels"
    );
    let stored = Stored::new(&deep);
    assert!(matches!(stored.0, Form::Tree(_)));
    assert_eq!(stored.value(), deep);
    assert_eq!(&stored.text()[..], text.as_slice());
}

#[test]
fn labels_and_the_controller_are_read_from_the_text_or_the_tree() {
    let owned = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "labels": {"app": "web"},
                     "ownerReferences": [
                         {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-it", "uid": "u0"},
                         {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1",
                          "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let mut deep = json!("leaf");
    for _ in 0..130 {
        deep = json!({"a": deep});
    }
    let mut kept_parsed = owned.clone();
    kept_parsed["spec"]["deep"] = deep;
    for obj in [owned, kept_parsed] {
        let stored = Stored::new(&obj);
        let meta = stored.meta();
        assert_eq!(meta.labels, Some(json!({"app": "web"})));
        assert_eq!(meta.controller(), Some(("ReplicaSet", "web")));
    }
    let plain = Stored::new(&configmap()).meta();
    assert_eq!(plain.controller(), None, "owned by nothing");
    assert_eq!(
        plain.labels,
        Some(configmap()["metadata"]["labels"].clone())
    );
    let bare = Stored::new(&json!({"data": {}})).meta();
    assert_eq!(
        (bare.labels_map(), bare.controller()),
        (None, None),
        "no metadata"
    );
}

#[test]
fn a_typed_part_is_read_from_either_form_and_another_shape_is_none() {
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Part {
        #[serde(default)]
        spec: Option<Value>,
        kind: String,
    }
    let mut deep = json!("leaf");
    for _ in 0..130 {
        deep = json!({"a": deep});
    }
    let text = json!({"kind": "ReplicaSet", "spec": {"replicas": 2},
                      "metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]}});
    let mut tree = text.clone();
    tree["metadata"]["deep"] = deep;
    for obj in [text, tree] {
        let part = Stored::new(&obj).read::<Part>();
        assert_eq!(
            part,
            Some(Part {
                spec: Some(json!({"replicas": 2})),
                kind: "ReplicaSet".into()
            })
        );
    }
    assert_eq!(
        Stored::new(&json!({"spec": {}})).read::<Part>(),
        None,
        "no kind"
    );
}
