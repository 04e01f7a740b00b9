//! Property tests of the code that takes arbitrary input (patches, apply configurations, selectors), against simple models.
//!
//! Each property runs [`CASES`] generated cases from a fixed seed, so CI runs the same cases
//! every time and a failure reproduces with the same command; `PROPTEST_RNG_SEED=<n>` explores
//! other cases. No regression files are written: a failure prints its shrunk input, which
//! becomes a named unit test beside the fix.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Map, Value};

mod apply;
mod patch;
mod selector;
mod track;

/// Cases per property: enough to reach the corner cases of small generated inputs, a fraction
/// of a second each.
const CASES: u32 = 256;

/// The runner's settings for every property of the crate.
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        rng_seed: match default.rng_seed {
            RngSeed::Random => RngSeed::Fixed(0x5ee_d0f_3e1e),
            chosen => chosen,
        },
        ..default
    }
}

/// Scalars, with few distinct values so that documents and patches collide.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0..4i64).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::String),
    ]
}

/// JSON nested a few levels deep with object keys drawn from `keys`.
fn json_with(
    keys: impl Strategy<Value = String> + Clone + 'static,
    arrays: bool,
) -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 32, 4, move |inner| {
        let object = prop::collection::btree_map(keys.clone(), inner.clone(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()));
        if arrays {
            prop_oneof![
                object,
                prop::collection::vec(inner, 0..4).prop_map(Value::Array)
            ]
            .boxed()
        } else {
            object.boxed()
        }
    })
}

/// A JSON object (the top of every Kubernetes document) whose values are [`json_with`].
fn object_with(
    keys: impl Strategy<Value = String> + Clone + 'static,
    arrays: bool,
) -> impl Strategy<Value = Value> {
    prop::collection::btree_map(keys.clone(), json_with(keys, arrays), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
}

/// Object keys drawn from `names`.
fn key_from(names: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop::sample::select(names).prop_map(String::from)
}

/// Plain keys with no meaning to strategic merge or server-side apply.
fn plain_key() -> impl Strategy<Value = String> + Clone {
    key_from(&["a", "b", "c", "d"])
}

/// RFC 7386 JSON merge patch, written straight from the RFC's pseudo-code.
fn merge_patch_model(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(t) => t.clone(),
        _ => Map::new(),
    };
    for (k, v) in patch {
        if v.is_null() {
            out.remove(k);
        } else {
            let merged = merge_patch_model(out.get(k).unwrap_or(&Value::Null), v);
            out.insert(k.clone(), merged);
        }
    }
    Value::Object(out)
}
