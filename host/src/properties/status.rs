//! The parent's desired status: one condition per type with the host's fields, stable when nothing changed, and `merge_diff` a true merge patch.

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{config, json_with, one_of, scalar};
use crate::answer::{Reconciled, desired_status, merge_diff};

/// A condition, sometimes without its type or status, sometimes with a huge message.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => one_of(&["", "ok", "Failed"]),
        1 => (1000..1100usize).prop_map(|n| "r".repeat(n)),
        1 => Just("m".repeat(40_000)),
    ]
}

fn condition() -> impl Strategy<Value = Value> {
    (
        prop::option::weighted(0.9, one_of(&["Ready", "Available", "Reconciled"])),
        prop::option::weighted(0.9, one_of(&["True", "False", "Unknown"])),
        prop::option::of(text()),
        prop::option::of(text()),
        prop::option::of(0..3i64),
        prop::option::of(one_of(&["T0"])),
    )
        .prop_map(|(ty, status, reason, message, generation, time)| {
            let mut c = Map::new();
            for (field, value) in [
                ("type", ty.map(Value::from)),
                ("status", status.map(Value::from)),
                ("reason", reason.map(Value::from)),
                ("message", message.map(Value::from)),
                ("observedGeneration", generation.map(Value::from)),
                ("lastTransitionTime", time.map(Value::from)),
            ] {
                if let Some(v) = value {
                    c.insert(field.into(), v);
                }
            }
            Value::Object(c)
        })
}

/// A status as a plugin writes it or the parent shows it: usually an object with conditions.
fn status() -> impl Strategy<Value = Value> {
    let conditions = prop_oneof![
        4 => prop::collection::vec(prop_oneof![9 => condition(), 1 => scalar()], 0..4)
            .prop_map(Value::Array),
        1 => scalar(),
    ];
    prop_oneof![
        6 => (
            prop::option::of(conditions),
            prop::option::of(0..3i64),
            prop::option::of(scalar()),
        )
            .prop_map(|(conditions, generation, ready)| {
                let mut s = json!({});
                if let Some(c) = conditions {
                    s["conditions"] = c;
                }
                if let Some(g) = generation {
                    s["observedGeneration"] = json!(g);
                }
                if let Some(r) = ready {
                    s["readyReplicas"] = r;
                }
                s
            }),
        1 => scalar(),
    ]
}

fn reconciled() -> impl Strategy<Value = Reconciled> {
    (
        any::<bool>(),
        one_of(&["Reconciled", "Refused"]),
        one_of(&["", "boom"]),
    )
        .prop_map(|(ok, reason, message)| Reconciled {
            ok,
            reason,
            message,
        })
}

/// `v` with every `null` turned into `false`: a merge patch cannot ask for a null value.
fn without_nulls(v: Value) -> Value {
    match v {
        Value::Null => Value::Bool(false),
        Value::Array(a) => Value::Array(a.into_iter().map(without_nulls).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, without_nulls(v))).collect())
        }
        other => other,
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_desired_status_has_one_condition_per_type_and_the_hosts_fields(
        live in prop::option::of(status()),
        plugin in prop::option::of(status()),
        generation in prop::option::of(0..3i64),
        reconciled in reconciled(),
    ) {
        let s = desired_status(live.as_ref(), plugin.clone(), generation, &reconciled, "T1");
        let conditions = s["conditions"].as_array().cloned().unwrap_or_default();
        let mut types = HashSet::new();
        for c in &conditions {
            let ty = c["type"].as_str();
            prop_assert!(ty.is_some_and(|t| types.insert(t.to_owned())), "{} in {}", c, s);
            prop_assert!(c["lastTransitionTime"].is_string());
            prop_assert!(c["message"].as_str().is_none_or(|m| m.len() <= 32_768));
            prop_assert!(c["reason"].as_str().is_none_or(|r| r.len() <= 1_024));
            if let Some(g) = generation {
                prop_assert!(c["observedGeneration"].is_i64());
                if ty == Some("Reconciled") {
                    prop_assert_eq!(&c["observedGeneration"], &json!(g));
                }
            }
        }
        let host = conditions.iter().find(|c| c["type"] == "Reconciled");
        prop_assert_eq!(
            host.map(|c| (c["status"].clone(), c["reason"].clone())),
            Some((json!(if reconciled.ok { "True" } else { "False" }), json!(reconciled.reason)))
        );
        match (&plugin, generation) {
            (Some(_), Some(g)) => {
                prop_assert_eq!(&s["observedGeneration"], &json!(g));
            }
            (None, _) => {
                let kept = live.as_ref().and_then(|l| l.get("observedGeneration"));
                prop_assert_eq!(s.get("observedGeneration"), kept);
            }
            (Some(_), None) => {}
        }
        if let Some(Value::Object(p)) = &plugin {
            let host_owned = |k: &str| k == "conditions" || (k == "observedGeneration" && generation.is_some());
            for (k, v) in p.iter().filter(|(k, _)| !host_owned(k)) {
                prop_assert_eq!(&s[k.as_str()], v, "the plugin's {} is kept", k);
            }
        }
    }

    #[test]
    fn reconciling_again_to_the_same_answer_writes_nothing(
        live in prop::option::of(status()),
        plugin in prop::option::of(status()),
        generation in prop::option::of(0..3i64),
        reconciled in reconciled(),
    ) {
        let first = desired_status(live.as_ref(), plugin.clone(), generation, &reconciled, "T1");
        let second = desired_status(Some(&first), plugin, generation, &reconciled, "T2");
        prop_assert_eq!(merge_diff(Some(&first), &second), None, "{} then {}", first, second);
    }

    #[test]
    fn merge_diff_is_a_merge_patch_from_the_live_status_to_the_desired_one(
        live in prop::option::of(json_with(one_of(&["a", "b", "c"])).prop_map(without_nulls)),
        desired in json_with(one_of(&["a", "b", "c"])).prop_map(without_nulls),
    ) {
        let diff = merge_diff(live.as_ref(), &desired);
        prop_assert_eq!(diff.is_none(), live.as_ref() == Some(&desired));
        let mut patched = live.clone().unwrap_or(Value::Null);
        if let Some(diff) = &diff {
            json_patch::merge(&mut patched, diff);
        }
        prop_assert_eq!(patched, desired);
    }
}
