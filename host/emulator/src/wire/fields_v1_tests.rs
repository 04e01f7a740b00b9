use std::collections::BTreeSet;

use serde_json::json;

use super::*;
use crate::wire::fieldset::{from_fields_v1, to_fields_v1};

fn f(name: &str) -> Step {
    Step::Field(name.into())
}

/// What writing the set again gives, against adding the paths in place.
fn both(written: &Value, added: &[Path]) -> Value {
    let mut set: BTreeSet<Path> = from_fields_v1(written);
    set.extend(added.iter().cloned());
    let rewritten = to_fields_v1(&set);
    let grown = with_paths(written, added);
    assert_eq!(
        grown, rewritten,
        "added in place, against the set written again"
    );
    grown
}

#[test]
fn paths_added_in_place_are_what_writing_the_set_again_gives() {
    let written = to_fields_v1(&BTreeSet::from([
        vec![f("status"), f("phase")],
        vec![f("status"), f("conditions")],
        vec![
            f("status"),
            f("conditions"),
            Step::Key(r#"{"type":"Ready"}"#.into()),
            f("status"),
        ],
    ]));
    // A new field beside others, a new branch, a path already held, and a leaf that gains a
    // child (so it says it is a path itself with `.`).
    let grown = both(
        &written,
        &[
            vec![f("status"), f("podIP")],
            vec![
                f("status"),
                f("containerStatuses"),
                Step::Key(r#"{"name":"app"}"#.into()),
            ],
            vec![f("status"), f("phase")],
            vec![f("status"), f("phase"), f("odd")],
        ],
    );
    assert_eq!(grown["f:status"]["f:phase"], json!({".": {}, "f:odd": {}}));
    // A path whose node has children is marked as a path itself.
    both(
        &written,
        &[
            vec![f("status"), f("conditions"), f("x")],
            vec![f("status")],
        ],
    );
    // Nothing added: the same text.
    assert_eq!(both(&written, &[]), written);
}
