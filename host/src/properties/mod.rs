//! Property tests of the code that takes a plugin's or a user's arbitrary input (answer validation, status merge, fixture files), against simple models.
//!
//! Each property runs [`CASES`] generated cases from a fixed seed, so CI runs the same cases
//! every time and a failure reproduces with the same command; `PROPTEST_RNG_SEED=<n>` explores
//! other cases. No regression files are written: a failure prints its shrunk input, which
//! becomes a named unit test beside the fix.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Map, Value};

mod fixtures;
mod status;
mod validate;

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

/// One of `names`, as an owned string.
fn one_of(names: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop::sample::select(names).prop_map(String::from)
}

/// Scalars, with few distinct values so that generated documents collide.
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
) -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 32, 4, move |inner| {
        prop_oneof![
            prop::collection::btree_map(keys.clone(), inner.clone(), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
            prop::collection::vec(inner, 0..4).prop_map(Value::Array),
        ]
    })
}
