//! What an update changed, as the paths of `managedFields`: found by walking only the parts of the new object that differ from the old one.

use std::collections::{BTreeSet, HashMap};

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
