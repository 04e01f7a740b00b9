//! Strategic merge patch: no panic on anything, merge patch on plain maps, keyed lists merged by name.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{config, json_with, key_from, merge_patch_model, object_with, plain_key};
use crate::write::patch::strategic_merge;

/// Keys strategic merge treats specially, mixed with plain ones.
fn patch_key() -> impl Strategy<Value = String> + Clone {
    key_from(&[
        "a",
        "name",
        "containers",
        "ports",
        "containerPort",
        "finalizers",
        "$patch",
        "$setElementOrder/containers",
        "$deleteFromPrimitiveList/finalizers",
        "$retainKeys",
    ])
}

/// The keys of documents: the special ones without the directives.
fn doc_key() -> impl Strategy<Value = String> + Clone {
    key_from(&[
        "a",
        "name",
        "containers",
        "ports",
        "containerPort",
        "finalizers",
    ])
}

/// Directive values, so that `$patch` meets `replace` and `delete`.
fn with_directives() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => json_with(patch_key(), true),
        1 => prop::sample::select(&["replace", "delete", "merge"][..]).prop_map(Value::from),
    ]
}

fn has_directive(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.starts_with('$') || has_directive(v)),
        Value::Array(a) => a.iter().any(has_directive),
        _ => false,
    }
}

/// Container-like items with distinct names from a small pool and plain fields, as a keyed
/// list holds them.
fn named_items() -> impl Strategy<Value = Vec<Value>> {
    let names = key_from(&["app", "side", "init"]);
    prop::collection::btree_map(names, object_with(plain_key(), false), 0..3).prop_map(|items| {
        items
            .into_iter()
            .map(|(name, mut item)| {
                item["name"] = json!(name);
                item
            })
            .collect()
    })
}

fn name_of(item: &Value) -> Option<&Value> {
    item.get("name")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn strategic_merge_never_panics_and_leaves_no_directive_behind(
        doc in object_with(doc_key(), true),
        patch in prop::collection::btree_map(patch_key(), with_directives(), 0..4),
    ) {
        let mut merged = doc.clone();
        let patch = Value::Object(patch.into_iter().collect());
        strategic_merge(&mut merged, &patch);
        prop_assert!(!has_directive(&merged), "{merged}");
    }

    #[test]
    fn on_maps_without_lists_strategic_merge_is_a_json_merge_patch(
        doc in object_with(plain_key(), false),
        patch in object_with(plain_key(), false),
    ) {
        let mut merged = doc.clone();
        strategic_merge(&mut merged, &patch);
        prop_assert_eq!(merged, merge_patch_model(&doc, &patch));
    }

    #[test]
    fn keyed_list_items_merge_by_name_and_new_ones_are_appended(
        doc in named_items(),
        patch in named_items(),
    ) {
        let mut merged = json!({"spec": {"containers": doc.clone()}});
        strategic_merge(&mut merged, &json!({"spec": {"containers": patch.clone()}}));
        let mut expected: Vec<Value> = doc
            .iter()
            .map(|d| match patch.iter().find(|p| name_of(p) == name_of(d)) {
                Some(p) => merge_patch_model(d, p),
                None => d.clone(),
            })
            .collect();
        for p in patch.iter().filter(|p| !doc.iter().any(|d| name_of(d) == name_of(p))) {
            expected.push(merge_patch_model(&Value::Null, p));
        }
        prop_assert_eq!(&merged["spec"]["containers"], &Value::Array(expected));
    }
}
