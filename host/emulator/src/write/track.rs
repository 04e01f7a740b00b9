//! The `managedFields` of an ordinary write (create, update, patch): the writer owns what it changed; the entries it does not touch stay as stored.
//!
//! What a write stores is what reading every entry into a set, taking the changed fields from
//! the others, adding them to the writer's entry, dropping fields the object no longer has and
//! writing every entry out again would store. But only the entries that this changes are read
//! and written: an entry that holds none of the changed fields, names only fields the object
//! still has and is written as this crate writes entries is kept as its JSON stands, and the
//! writer's own entry, so written, takes the write's time and the changed fields added in place.
//! And the changed fields are found by walking only what differs between the old object and
//! the new.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::wire::changes;
use crate::wire::fields_v1;
use crate::wire::fieldset::{Lookup, Path, Step};
use crate::write::apply::{self, Entry, Scope};

/// Record an ordinary write (create, update, patch): `manager` takes ownership of what changed.
///
/// As in kube-apiserver, `managedFields` the request carries for the main resource replace the
/// stored ones (an empty list resets them; none, or none readable, keeps the stored ones): this
/// is how a client moves fields between its entries (client-go's `csaupgrade`). A subresource
/// write keeps the stored entries.
pub fn track_update(old: Option<&Value>, new: &mut Value, manager: &str, scope: Scope, now: &str) {
    let owned = |p: &[Step]| !apply::ignored(p) && scope.owns(p);
    // A create that says nothing of `managedFields`: one entry, the writer's, owning everything
    // it may own (what the general path below gives, built without a set of paths between).
    if old.is_none()
        && apply::listed(new).is_none()
        && let Some(fields) = changes::created_fields_v1(new, &owned)
    {
        let list = match fields.is_empty() {
            true => Vec::new(),
            false => {
                let api_version = apply::api_version_of(new);
                let entry = Entry::new(manager, "Update", scope.subresource(), &api_version, now);
                vec![entry.written_with(Value::Object(fields))]
            }
        };
        apply::set_list(new, list);
        return;
    }
    let changed = changes::changed_fields(old, new, &owned)
        .unwrap_or_else(|| looked_up_changes(old, new, scope));
    let stored = old.and_then(apply::listed);
    // The entries the write starts from are those it carries when it says which (an empty list
    // resets them, the stored ones carried back are the same either way), else the stored ones.
    let carried = match apply::listed(new) {
        Some(sent) if sent.is_empty() || Some(sent) == stored => true,
        Some(_) if matches!(scope, Scope::Main { .. }) => apply::read_entries(new)
            .iter()
            .any(|e| !e.fields.is_empty()),
        _ => false,
    };
    let slots = {
        let lookup = Lookup::new(new);
        let from = if carried { apply::listed(new) } else { stored };
        owners_after(
            from.map_or(&[][..], Vec::as_slice),
            &lookup,
            &changed,
            manager,
            scope,
            now,
        )
    };
    let mut carried_list = match carried {
        true => apply::listed_mut(new).map(std::mem::take),
        false => None,
    }
    .unwrap_or_default();
    let list = slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Kept(i) if carried => carried_list.get_mut(i).map(std::mem::take),
            Slot::Kept(i) => stored.and_then(|s| s.get(i)).cloned(),
            Slot::Grown(i, fields) => {
                let kept = match carried {
                    true => carried_list.get_mut(i).map(std::mem::take),
                    false => stored.and_then(|s| s.get(i)).cloned(),
                };
                kept.map(|mut e| {
                    e["time"] = Value::String(now.to_string());
                    e["fieldsV1"] = fields;
                    e
                })
            }
            Slot::Read(e) if e.fields.is_empty() => None,
            Slot::Read(e) => Some(apply::written(e)),
        })
        .collect();
    apply::set_list(new, list);
}

/// One entry of the list a write stores.
enum Slot {
    /// The entry at this position of the list the write starts from, as it stands.
    Kept(usize),
    /// The writer's own entry at this position, written as this crate writes entries and naming
    /// only fields the object has: as it stands but for its `time`, which becomes the write's,
    /// and its `fieldsV1`, which becomes this (the changed fields added in place).
    Grown(usize, Value),
    /// An entry read (and changed, or to be written in this crate's form).
    Read(Entry),
}

/// The entries after `manager` took `changed` (in `lookup`'s object) from those of `list`.
fn owners_after(
    list: &[Value],
    lookup: &Lookup,
    changed: &BTreeSet<Path>,
    manager: &str,
    scope: Scope,
    now: &str,
) -> Vec<Slot> {
    let sub = scope.subresource();
    let mine = list.iter().position(|e| owned_by(e, manager, sub));
    let mut slots: Vec<Slot> = list
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let Some(fields) = written_and_present(e, lookup) else {
                return Slot::Read(apply::read_entry(e));
            };
            if !changed.iter().any(|p| fields_v1::holds(fields, p)) {
                Slot::Kept(i)
            } else if Some(i) == mine {
                Slot::Grown(i, Value::Null)
            } else {
                Slot::Read(apply::read_entry(e))
            }
        })
        .collect();
    if !changed.is_empty() {
        for slot in &mut slots {
            if let Slot::Read(e) = slot {
                e.fields.retain(|p| !changed.contains(p));
            }
        }
        let mut entry = match mine.map(|at| std::mem::replace(&mut slots[at], Slot::Kept(at))) {
            // Its fields are all present: they stay, and so do the changed ones the object has
            // (the others a prune would drop).
            Some(Slot::Kept(at) | Slot::Grown(at, _)) => {
                let present = changed.iter().filter(|p| lookup.value_at(p).is_some());
                let fields = fields_v1::with_paths(&list[at]["fieldsV1"], present);
                slots[at] = Slot::Grown(at, fields);
                None
            }
            Some(Slot::Read(e)) => Some(e),
            None => {
                let api_version = apply::api_version_of(lookup.object());
                Some(Entry::new(manager, "Update", sub, &api_version, now))
            }
        };
        if let Some(mut entry) = entry.take() {
            entry.fields.extend(changed.iter().cloned());
            entry.time = now.to_string();
            match mine {
                Some(at) => slots[at] = Slot::Read(entry),
                None => slots.push(Slot::Read(entry)),
            }
        }
    }
    for slot in &mut slots {
        if let Slot::Read(e) = slot {
            e.prune(lookup);
        }
    }
    slots
}

/// Whether the stored entry `e` is `manager`'s `Update` on subresource `sub`, read as
/// [`apply::read_entry`] reads its owner (a missing operation is an `Update`).
fn owned_by(e: &Value, manager: &str, sub: Option<&str>) -> bool {
    let text = |k: &str| e.get(k).and_then(Value::as_str);
    text("manager").unwrap_or("") == manager
        && text("operation").unwrap_or("Update") == "Update"
        && text("subresource") == sub
}

/// The `fieldsV1` of the stored entry `e` when the entry is written as this crate writes
/// entries and names only fields `lookup`'s object has.
fn written_and_present<'v>(e: &'v Value, lookup: &Lookup) -> Option<&'v Value> {
    let m = e.as_object()?;
    let text = |k: &str| m.get(k).is_some_and(Value::is_string);
    let sub = m.get("subresource");
    let shaped = m.len() == 6 + usize::from(sub.is_some())
        && ["manager", "operation", "apiVersion", "time"]
            .iter()
            .all(|k| text(k))
        && sub.is_none_or(Value::is_string)
        && m.get("fieldsType").and_then(Value::as_str) == Some("FieldsV1");
    let fields = m.get("fieldsV1").filter(|_| shaped)?;
    fields_v1::is_written_and_present(fields, lookup).then_some(fields)
}

/// What changed, each owned field of `new` looked up in both objects: for a write whose keyed
/// lists hold a key twice, where [`changes::changed_fields`] does not answer.
fn looked_up_changes(old: Option<&Value>, new: &Value, scope: Scope) -> BTreeSet<Path> {
    let (was, is) = (old.map(Lookup::new), Lookup::new(new));
    apply::owned_fields(new, scope)
        .into_iter()
        .filter(|p| {
            let before = was.as_ref().and_then(|o| o.value_at(p));
            match p.last() {
                // A list item is owned by whoever added it, not by whoever changed a field in it.
                Some(Step::Key(_) | Step::Value(_)) => before.is_none(),
                _ => before != is.value_at(p),
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "track_tests.rs"]
pub(crate) mod tests;
