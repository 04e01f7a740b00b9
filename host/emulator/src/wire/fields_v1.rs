//! A `fieldsV1` read where it is stored, without building its set: whether it is written as this crate writes a set, names only fields an object has, and holds a path; and paths added to it in place.
//!
//! A write that leaves a `managedFields` entry as it is keeps the entry's JSON as stored instead
//! of reading it into a set and writing the set out again. These checks tell, from the stored
//! JSON alone, that reading and writing it again would give it back unchanged.

use serde_json::{Map, Value};

use crate::wire::fieldset::{Lookup, Path, Step};

/// Whether `fields_v1` is exactly what [`crate::wire::fieldset::to_fields_v1`] writes for the
/// set [`crate::wire::fieldset::from_fields_v1`] reads from it, that set is not empty, and every
/// path in it is present in `lookup`'s object (as [`Lookup::value_at`] finds it).
pub fn is_written_and_present(fields_v1: &Value, lookup: &Lookup) -> bool {
    match fields_v1.as_object() {
        Some(root) if !root.is_empty() && !root.contains_key(".") => {
            node(root, lookup.object(), lookup)
        }
        _ => false,
    }
}

/// One node's children: each an object, `.` (empty) only beside other children, every other
/// key a step written in its canonical form and present below `at`.
fn node<'a>(map: &Map<String, Value>, at: &'a Value, lookup: &Lookup<'a>) -> bool {
    map.iter().all(|(key, child)| {
        let Some(child) = child.as_object() else {
            return false;
        };
        if key == "." {
            return child.is_empty() && map.len() > 1;
        }
        step(key, at, lookup).is_some_and(|next| node(child, next, lookup))
    })
}

/// The value below `at` that the written step `key` names; `None` when absent, or when the step
/// is not written as [`crate::wire::fieldset::to_fields_v1`] writes it.
fn step<'a>(key: &str, at: &'a Value, lookup: &Lookup<'a>) -> Option<&'a Value> {
    let (kind, rest) = key.split_at_checked(2)?;
    match (kind, at) {
        ("f:", Value::Object(m)) => m.get(rest),
        ("k:", Value::Array(items)) if canonical(rest) => lookup.keyed(items, rest),
        ("v:", Value::Array(_)) if canonical(rest) => lookup.child(at, &Step::Value(rest.into())),
        _ => None,
    }
}

/// Whether the text of a key or value step reads back as itself (JSON as `serde_json` writes
/// it, or text that is not JSON, which is kept as it is).
fn canonical(text: &str) -> bool {
    serde_json::from_str::<Value>(text).map_or(true, |v| {
        serde_json::to_string(&v).is_ok_and(|written| written == text)
    })
}

/// Whether the set `fields_v1` names holds `path` (`fields_v1` written as
/// [`is_written_and_present`] checks).
pub fn holds(fields_v1: &Value, path: &[Step]) -> bool {
    let mut key = String::new();
    let mut node = fields_v1;
    for step in path {
        key.clear();
        step.push_key(&mut key);
        match node.get(&key) {
            Some(next) => node = next,
            None => return false,
        }
    }
    !path.is_empty()
        && node
            .as_object()
            .is_some_and(|m| m.is_empty() || m.contains_key("."))
}

/// `fields_v1` (written as [`is_written_and_present`] checks) with `paths` added: what
/// [`crate::wire::fieldset::to_fields_v1`] writes for the set it names and `paths`, made by
/// adding each path's nodes instead of reading the set and writing it out again.
pub fn with_paths<'p>(fields_v1: &Value, paths: impl IntoIterator<Item = &'p Path>) -> Value {
    let mut root = fields_v1.clone();
    for path in paths {
        let mut node = &mut root;
        // Whether `node` stood in the set as a leaf before this path (not the root, not a node
        // this path made).
        let mut was_leaf = false;
        for (depth, step) in path.iter().enumerate() {
            let Some(map) = node.as_object_mut() else {
                break;
            };
            let key = step.key();
            // A leaf is a path of the set: given a child, it says so with `.`.
            if was_leaf && map.is_empty() {
                map.insert(".".into(), Value::Object(Map::new()));
            }
            was_leaf = map
                .get(&key)
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty);
            node = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
            // The path itself is now in the set: its node, if it has children, says so with `.`.
            if depth + 1 == path.len()
                && let Some(last) = node.as_object_mut()
                && !last.is_empty()
                && !last.contains_key(".")
            {
                last.insert(".".into(), Value::Object(Map::new()));
            }
        }
    }
    root
}

#[cfg(test)]
#[path = "fields_v1_tests.rs"]
mod tests;
