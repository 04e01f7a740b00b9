//! Server-side apply: idempotent, conflicts unless forced, dropped fields removed, no panic on anything.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{config, json_with, key_from, object_with, plain_key, scalar};
use crate::wire::fieldset::{Step, from_fields_v1};
use crate::write::apply::{Error, Scope, apply};
use crate::write::track::track_update;

/// Keys server-side apply treats specially (a keyed list, its key, a set list), mixed with plain ones.
fn apply_key() -> impl Strategy<Value = String> + Clone {
    key_from(&["a", "b", "containers", "name", "finalizers", "status"])
}

/// Keeps the first item of each name in every `containers` list: a keyed list holds each key once.
fn distinct_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if let (true, Value::Array(items)) = (k == "containers", &mut *child) {
                    let mut seen = Vec::new();
                    items.retain(|i| match i.get("name") {
                        Some(n) if seen.contains(n) => false,
                        Some(n) => {
                            seen.push(n.clone());
                            true
                        }
                        None => true,
                    });
                }
                distinct_keys(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(distinct_keys),
        _ => {}
    }
}

/// An apply configuration of a made-up kind around `body` (its `spec`, maybe a `status`).
fn configuration(mut body: Value) -> Value {
    distinct_keys(&mut body);
    let mut cfg =
        json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x"}});
    if let (Some(cfg), Value::Object(body)) = (cfg.as_object_mut(), body) {
        cfg.extend(body);
    }
    cfg
}

fn any_configuration() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        key_from(&["spec", "status"]),
        json_with(apply_key(), true),
        0..3,
    )
    .prop_map(|m| configuration(Value::Object(m.into_iter().collect())))
}

/// `spec` as a map of plain leaves, at least two of them.
fn leaves() -> impl Strategy<Value = BTreeMap<String, Value>> {
    prop::collection::btree_map(
        plain_key(),
        scalar().prop_filter("set", |v| !v.is_null()),
        2..4,
    )
}

fn with_spec(spec: &BTreeMap<String, Value>) -> Value {
    configuration(json!({ "spec": spec }))
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        any::<bool>().prop_map(|has_status| Scope::Main { has_status }),
        Just(Scope::Status),
    ]
}

/// The fields each manager's `managedFields` entry owns.
fn owners(obj: &Value) -> Vec<(String, std::collections::BTreeSet<Vec<Step>>)> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let manager = e["manager"].as_str().unwrap_or_default().to_owned();
            (manager, from_fields_v1(&e["fieldsV1"]))
        })
        .collect()
}

fn spec_path(key: &str) -> Vec<Step> {
    vec![Step::Field("spec".into()), Step::Field(key.into())]
}

/// Live objects with `managedFields` of every shape, well-formed or not.
fn any_live() -> impl Strategy<Value = Value> {
    let fields_key = key_from(&[
        "f:spec",
        "f:a",
        "f:containers",
        "k:{\"name\":\"a\"}",
        "k:notjson",
        "v:\"x\"",
        "v:",
        ".",
        "f",
    ]);
    let entry = (
        key_from(&["a", "b", ""]),
        key_from(&["Apply", "Update"]),
        prop::option::of(key_from(&["status"])),
        json_with(fields_key, true),
    )
        .prop_map(|(manager, operation, sub, fields)| {
            let mut e = json!({"manager": manager, "operation": operation, "fieldsV1": fields});
            if let Some(sub) = sub {
                e["subresource"] = json!(sub);
            }
            e
        });
    (
        prop::collection::vec(prop_oneof![4 => entry, 1 => scalar()], 0..3),
        json_with(apply_key(), true),
    )
        .prop_map(|(managed, spec)| {
            let mut live = Map::new();
            live.insert(
                "metadata".into(),
                json!({"name": "x", "managedFields": managed}),
            );
            live.insert("spec".into(), spec);
            Value::Object(live)
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn applying_the_same_configuration_again_changes_nothing(
        other in any_configuration(),
        cfg in any_configuration(),
        scope in scope(),
    ) {
        let live = apply(None, &other, "b", false, scope, "T0");
        prop_assert!(live.is_ok(), "{live:?}");
        let first = apply(live.ok().as_ref(), &cfg, "a", true, scope, "T1");
        prop_assert!(first.is_ok(), "{first:?}");
        let first = first.unwrap_or_default();
        let second = apply(Some(&first), &cfg, "a", false, scope, "T2");
        prop_assert!(second.is_ok(), "re-applying after a forced apply: {second:?}");
        prop_assert_eq!(second.unwrap_or_default(), first);
    }

    #[test]
    fn a_field_another_manager_owns_conflicts_unless_forced(
        spec in leaves(),
        pick in any::<prop::sample::Index>(),
        value in scalar().prop_filter("set", |v| !v.is_null()),
    ) {
        let live = apply(None, &with_spec(&spec), "b", false, Scope::Main { has_status: true }, "T0");
        prop_assert!(live.is_ok(), "{live:?}");
        let live = live.unwrap_or_default();
        let (key, old) = pick.get(&spec.iter().collect::<Vec<_>>()).to_owned();
        let mine = with_spec(&BTreeMap::from([(key.clone(), value.clone())]));
        let scope = Scope::Main { has_status: true };
        match apply(Some(&live), &mine, "a", false, scope, "T1") {
            Err(Error::Conflicts(conflicts)) => {
                prop_assert!(value != *old, "an equal value is shared, not a conflict");
                prop_assert_eq!(conflicts, vec![("b".to_owned(), spec_path(key))]);
            }
            Ok(shared) => {
                prop_assert_eq!(&value, old, "a changed value must conflict");
                for (manager, fields) in owners(&shared) {
                    prop_assert!(fields.contains(&spec_path(key)), "{manager} co-owns {key}");
                }
            }
        }
        let forced = apply(Some(&live), &mine, "a", true, scope, "T1");
        prop_assert!(forced.is_ok(), "{forced:?}");
        let forced = forced.unwrap_or_default();
        prop_assert_eq!(&forced["spec"][key.as_str()], &value);
        for (manager, fields) in owners(&forced) {
            let owns = fields.contains(&spec_path(key));
            prop_assert_eq!(owns, manager == "a" || value == *old, "{} owning {}", manager, key);
        }
    }

    #[test]
    fn a_field_the_applier_drops_goes_unless_another_manager_owns_it(
        spec in leaves(),
        pick in any::<prop::sample::Index>(),
        shared in any::<bool>(),
    ) {
        let scope = Scope::Main { has_status: false };
        let mut live = apply(None, &with_spec(&spec), "a", false, scope, "T0");
        let (key, value) = pick.get(&spec.iter().collect::<Vec<_>>()).to_owned();
        let (key, value) = (key.clone(), value.clone());
        if shared {
            let same = with_spec(&BTreeMap::from([(key.clone(), value.clone())]));
            live = live.and_then(|l| apply(Some(&l), &same, "b", false, scope, "T1"));
        }
        prop_assert!(live.is_ok(), "{live:?}");
        let mut rest = spec.clone();
        rest.remove(&key);
        let out = apply(live.ok().as_ref(), &with_spec(&rest), "a", false, scope, "T2");
        prop_assert!(out.is_ok(), "{out:?}");
        let out = out.unwrap_or_default();
        prop_assert_eq!(out["spec"].get(&key).is_some(), shared, "{}", out);
        for (k, v) in &rest {
            prop_assert_eq!(&out["spec"][k.as_str()], v);
        }
    }

    #[test]
    fn apply_and_update_tracking_never_panic_on_any_object(
        live in prop::option::of(any_live()),
        cfg in prop_oneof![any_configuration(), object_with(apply_key(), true)],
        manager in key_from(&["a", "b", ""]),
        force in any::<bool>(),
        scope in scope(),
    ) {
        let _ = apply(live.as_ref(), &cfg, &manager, force, scope, "T");
        let mut new = cfg.clone();
        track_update(live.as_ref(), &mut new, &manager, scope, "T");
    }
}
