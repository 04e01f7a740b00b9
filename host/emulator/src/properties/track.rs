//! An ordinary write's `managedFields`: keeping untouched entries as stored stores what reading and writing every entry again stores.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{config, json_with, key_from, merge_patch_model, scalar};
use crate::write::apply::Scope;
use crate::write::track::tests::track_update_rebuilding_everything;
use crate::write::track::track_update;

/// Keys with a meaning to the bookkeeping (keyed and set lists, their keys) and plain ones.
fn track_key() -> impl Strategy<Value = String> + Clone {
    key_from(&[
        "a",
        "b",
        "containers",
        "conditions",
        "name",
        "type",
        "finalizers",
        "ports",
    ])
}

/// Items of the lists the bookkeeping keys, drawn from few names so that keys repeat.
fn keyed_lists() -> impl Strategy<Value = Value> {
    let name = key_from(&["x", "y", "z"]);
    let containers = prop::collection::vec(
        (name.clone(), scalar()).prop_map(|(n, image)| json!({"name": n, "image": image})),
        0..3,
    );
    let conditions = prop::collection::vec(
        (name.clone(), scalar()).prop_map(|(t, status)| json!({"type": t, "status": status})),
        0..3,
    );
    let ports = prop::collection::vec(
        (0..3i64, prop::option::of(key_from(&["TCP", "UDP"]))).prop_map(|(port, protocol)| {
            let mut p = json!({"containerPort": port});
            if let Some(protocol) = protocol {
                p["protocol"] = json!(protocol);
            }
            p
        }),
        0..3,
    );
    let finalizers = prop::collection::vec(name, 0..3);
    (
        containers,
        conditions,
        ports,
        finalizers,
        json_with(track_key(), true),
    )
        .prop_map(|(containers, conditions, ports, finalizers, other)| {
            json!({"containers": containers, "conditions": conditions, "ports": ports,
                   "finalizers": finalizers, "other": other})
        })
}

/// An object of a made-up kind with a `spec` and a `status`, some of their fields dropped.
fn any_object() -> impl Strategy<Value = Value> {
    (
        keyed_lists(),
        keyed_lists(),
        prop::collection::vec(any::<bool>(), 10),
    )
        .prop_map(|(spec, status, keep)| {
            let thin = |v: Value, keep: &[bool]| -> Value {
                let Value::Object(m) = v else { return v };
                let kept: Map<String, Value> = m
                    .into_iter()
                    .zip(keep)
                    .filter(|(_, k)| **k)
                    .map(|(kv, _)| kv)
                    .collect();
                Value::Object(kept)
            };
            json!({
                "apiVersion": "example.com/v1", "kind": "Thing",
                "metadata": {"name": "t", "labels": {"app": "t"}},
                "spec": thin(spec, &keep[..5]),
                "status": thin(status, &keep[5..]),
            })
        })
}

/// A merge patch that changes a few fields of [`any_object`]'s shape, or removes them.
fn any_patch() -> impl Strategy<Value = Value> {
    (
        prop::option::of(keyed_lists()),
        prop::option::of(keyed_lists()),
        prop::option::of(key_from(&[
            "containers",
            "conditions",
            "ports",
            "finalizers",
            "other",
        ])),
    )
        .prop_map(|(spec, status, dropped)| {
            let mut patch = json!({});
            if let Some(spec) = spec {
                patch["spec"] = spec;
            }
            if let Some(status) = status {
                patch["status"] = status;
            }
            if let Some(field) = dropped {
                patch["status"][field] = Value::Null;
            }
            patch
        })
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        any::<bool>().prop_map(|has_status| Scope::Main { has_status }),
        Just(Scope::Status),
    ]
}

/// An entry not written as the bookkeeping writes them (as a client may send one).
fn hand_written_entry() -> impl Strategy<Value = Value> {
    let step = key_from(&[
        "f:spec",
        "f:status",
        "f:containers",
        "k:{\"name\":\"x\"}",
        "k:{\"name\": \"x\"}",
        "v:\"x\"",
        "f:image",
        ".",
        "f",
    ]);
    (key_from(&["a", "b", "hand"]), json_with(step, false)).prop_map(|(manager, fields)| {
        json!({"manager": manager, "operation": "Update", "apiVersion": "v1", "time": "T",
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    })
}

/// What the next write's body carries as `managedFields`.
#[derive(Clone, Debug)]
enum Carried {
    Nothing,
    Stored,
    Empty,
    Other(Vec<Value>),
}

fn carried() -> impl Strategy<Value = Carried> {
    prop_oneof![
        1 => Just(Carried::Nothing),
        3 => Just(Carried::Stored),
        1 => Just(Carried::Empty),
        1 => prop::collection::vec(hand_written_entry(), 1..3).prop_map(Carried::Other),
    ]
}

/// `body` carrying `what` from `live`.
fn carrying(mut body: Value, live: Option<&Value>, what: &Carried) -> Value {
    let list = match what {
        Carried::Nothing => return body,
        Carried::Stored => live
            .and_then(|l| l.pointer("/metadata/managedFields"))
            .cloned()
            .unwrap_or(Value::Null),
        Carried::Empty => json!([]),
        Carried::Other(list) => Value::Array(list.clone()),
    };
    if !list.is_null() {
        body["metadata"]["managedFields"] = list;
    }
    body
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn keeping_untouched_entries_stores_what_rebuilding_every_entry_stores(
        first in any_object(),
        writes in prop::collection::vec(
            (any_patch(), key_from(&["a", "b", "kubelet"]), scope(), carried()),
            1..4,
        ),
        hand in prop::collection::vec(hand_written_entry(), 0..2),
    ) {
        // Stored entries as writes leave them, and some written by hand beside them.
        let mut live = first.clone();
        track_update_rebuilding_everything(None, &mut live, "creator", Scope::Main { has_status: true }, "T0");
        if !hand.is_empty() && let Some(list) = live["metadata"]["managedFields"].as_array_mut() {
            list.extend(hand);
        }
        for (i, (patch, manager, scope, what)) in writes.iter().enumerate() {
            let mut body = merge_patch_model(&live, patch);
            if let Some(m) = body["metadata"].as_object_mut() {
                m.remove("managedFields");
            }
            let body = carrying(body, Some(&live), what);
            let now = format!("T{}", i + 1);
            let (mut kept, mut rebuilt) = (body.clone(), body);
            track_update(Some(&live), &mut kept, manager, *scope, &now);
            track_update_rebuilding_everything(Some(&live), &mut rebuilt, manager, *scope, &now);
            prop_assert_eq!(&kept, &rebuilt, "write {} by {} ({:?}, {:?})", i, manager, scope, what);
            live = kept;
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_create_stores_what_rebuilding_every_entry_stores(
        obj in any_object(),
        scope in scope(),
    ) {
        // A create's one walk (no managedFields sent), against the reference.
        let mut body = obj;
        if let Some(m) = body["metadata"].as_object_mut() {
            m.remove("managedFields");
        }
        let (mut created, mut rebuilt) = (body.clone(), body);
        track_update(None, &mut created, "creator", scope, "T0");
        track_update_rebuilding_everything(None, &mut rebuilt, "creator", scope, "T0");
        prop_assert_eq!(&created, &rebuilt);
    }
}
