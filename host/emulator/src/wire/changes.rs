//! What an update changed, as the paths of `managedFields`: found by walking only the parts of the new object that differ from the old one.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

#[cfg(doc)]
use crate::wire::fieldset::fields_of;
use crate::wire::fieldset::{Path, Step, element_key, is_set_list, keys_for};

/// What an update changed: the paths of [`fields_of`]`(new)` that `owned` admits whose value
/// differs from the one at the same path in `old` (a list item counts only when `old` lacks it:
/// it is owned by whoever added it), found by walking only the parts of `new` that differ from
/// `old`. `owned` must refuse every path under a path it refuses. `None` when a keyed list that
/// differs holds two items of one key: a lookup finds the first of them for both, which this
/// walk does not follow (the caller then looks every path up).
pub fn changed_fields(
    old: Option<&Value>,
    new: &Value,
    owned: &dyn Fn(&[Step]) -> bool,
) -> Option<BTreeSet<Path>> {
    let mut out = BTreeSet::new();
    if let Some(map) = new.as_object() {
        let mut walk = Changes {
            owned,
            out: &mut out,
        };
        walk.map(map, old, &mut Vec::new())?;
    }
    Some(out)
}

/// The `fieldsV1` that [`crate::wire::fieldset::to_fields_v1`] writes for
/// [`changed_fields`]`(None, new, owned)`: what a create changed (everything `owned` admits),
/// built in one walk of `new`, without the set of paths in between (a create's are all its
/// fields, and a Pod's or a Deployment's are many). `None` where [`changed_fields`] answers
/// `None`.
pub fn created_fields_v1(
    new: &Value,
    owned: &dyn Fn(&[Step]) -> bool,
) -> Option<Map<String, Value>> {
    let mut root = Map::new();
    if let Some(map) = new.as_object() {
        Created { owned }.map(map, &mut Vec::new(), &mut root)?;
    }
    Some(root)
}

/// The walk of [`created_fields_v1`]: each node written where [`changed_fields`] would find a
/// path at or below it.
struct Created<'w> {
    owned: &'w dyn Fn(&[Step]) -> bool,
}

impl Created<'_> {
    fn map(
        &self,
        map: &Map<String, Value>,
        prefix: &mut Path,
        out: &mut Map<String, Value>,
    ) -> Option<()> {
        for (k, v) in map {
            prefix.push(Step::Field(k.clone()));
            if (self.owned)(prefix) {
                self.value(k, v, prefix, out)?;
            }
            prefix.pop();
        }
        Some(())
    }

    /// Writes the node of `new`, the value of `field` at `prefix`, into `out` (its parent's).
    fn value(
        &self,
        field: &str,
        new: &Value,
        prefix: &mut Path,
        out: &mut Map<String, Value>,
    ) -> Option<()> {
        let key = format!("f:{field}");
        let mut node = Map::new();
        match new {
            Value::Object(m) if !m.is_empty() => self.map(m, prefix, &mut node)?,
            Value::Array(items) if !items.is_empty() => {
                if let Some(keys) = keys_for(field, items) {
                    self.keyed(items, &keys, prefix, &mut node)?;
                } else if is_set_list(field) {
                    for item in items {
                        prefix.push(Step::Value(item.to_string()));
                        if (self.owned)(prefix)
                            && let Some(step) = prefix.last()
                        {
                            node.insert(step.key(), Value::Object(Map::new()));
                        }
                        prefix.pop();
                    }
                } else {
                    // A list that is neither keyed nor a set is one field.
                    out.insert(key, Value::Object(node));
                    return Some(());
                }
            }
            _ => {
                out.insert(key, Value::Object(node));
                return Some(());
            }
        }
        // A map or list is no field of its own: written only when it holds one.
        if !node.is_empty() {
            out.insert(key, Value::Object(node));
        }
        Some(())
    }

    /// Each item of a keyed list: a field of its own (so with `.` beside the fields in it).
    fn keyed(
        &self,
        items: &[Value],
        keys: &[&str],
        prefix: &mut Path,
        out: &mut Map<String, Value>,
    ) -> Option<()> {
        let mut seen = HashSet::new();
        for item in items {
            let id = element_key(item, keys);
            if !seen.insert(id.clone()) {
                return None;
            }
            prefix.push(Step::Key(id));
            if (self.owned)(prefix)
                && let Some(step) = prefix.last()
            {
                let key = step.key();
                let mut node = Map::new();
                if let Some(m) = item.as_object() {
                    self.map(m, prefix, &mut node)?;
                }
                if !node.is_empty() {
                    node.insert(".".into(), Value::Object(Map::new()));
                }
                out.insert(key, Value::Object(node));
            }
            prefix.pop();
        }
        Some(())
    }
}

/// The walk of [`changed_fields`].
struct Changes<'w> {
    owned: &'w dyn Fn(&[Step]) -> bool,
    out: &'w mut BTreeSet<Path>,
}

impl Changes<'_> {
    fn map(
        &mut self,
        new: &Map<String, Value>,
        old: Option<&Value>,
        prefix: &mut Path,
    ) -> Option<()> {
        let old = old.and_then(Value::as_object);
        for (k, v) in new {
            prefix.push(Step::Field(k.clone()));
            if (self.owned)(prefix) {
                self.value(k, v, old.and_then(|m| m.get(k)), prefix)?;
            }
            prefix.pop();
        }
        Some(())
    }

    fn value(
        &mut self,
        field: &str,
        new: &Value,
        old: Option<&Value>,
        prefix: &mut Path,
    ) -> Option<()> {
        if old == Some(new) {
            return Some(());
        }
        match new {
            Value::Object(m) if !m.is_empty() => return self.map(m, old, prefix),
            Value::Array(items) if !items.is_empty() => {
                let before = old
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if let Some(keys) = keys_for(field, items) {
                    return self.keyed(items, before, &keys, prefix);
                }
                if is_set_list(field) {
                    for item in items {
                        let text = item.to_string();
                        // As a lookup finds a set item: by the value its text reads back as.
                        let wanted: Option<Value> = serde_json::from_str(&text).ok();
                        let added = !wanted.is_some_and(|w| before.contains(&w));
                        prefix.push(Step::Value(text));
                        if added && (self.owned)(prefix) {
                            self.out.insert(prefix.clone());
                        }
                        prefix.pop();
                    }
                    return Some(());
                }
            }
            _ => {}
        }
        self.out.insert(prefix.clone());
        Some(())
    }

    fn keyed(
        &mut self,
        items: &[Value],
        before: &[Value],
        keys: &[&str],
        prefix: &mut Path,
    ) -> Option<()> {
        let mut first: HashMap<String, &Value> = HashMap::new();
        for item in before.iter().filter(|i| i.is_object()) {
            first.entry(element_key(item, keys)).or_insert(item);
        }
        let mut seen = BTreeSet::new();
        for item in items {
            let id = element_key(item, keys);
            if !seen.insert(id.clone()) {
                return None;
            }
            let old = first.get(&id).copied();
            prefix.push(Step::Key(id));
            if (self.owned)(prefix) {
                if old.is_none() {
                    self.out.insert(prefix.clone());
                }
                if let Some(m) = item.as_object() {
                    self.map(m, old, prefix)?;
                }
            }
            prefix.pop();
        }
        Some(())
    }
}

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
