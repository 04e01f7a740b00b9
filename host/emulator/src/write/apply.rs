//! Server-side apply, and the `managedFields` entries every write reads and writes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::wire::fieldset::{self, Path, Step};
use crate::wire::object;

/// Which part of an object a write may touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The main endpoint; `status` is excluded when the kind has a status subresource.
    Main {
        /// Whether the kind serves `/status` (so the main endpoint does not own status).
        has_status: bool,
    },
    /// The `/status` subresource.
    Status,
}

impl Scope {
    pub(super) fn subresource(self) -> Option<&'static str> {
        match self {
            Scope::Main { .. } => None,
            Scope::Status => Some("status"),
        }
    }

    pub(super) fn owns(self, path: &[Step]) -> bool {
        let under_status = path.first() == Some(&Step::Field("status".into()));
        match self {
            Scope::Main { has_status } => !(has_status && under_status),
            Scope::Status => under_status,
        }
    }
}

/// Why an apply was refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Other managers own fields the apply would change, and `force` was not set.
    #[error("Apply failed with {} conflict{}: {}", .0.len(), if .0.len() == 1 { "" } else { "s" }, describe(.0))]
    Conflicts(Vec<(String, Path)>),
}

fn describe(conflicts: &[(String, Path)]) -> String {
    conflicts
        .iter()
        .map(|(m, p)| format!("conflict with \"{m}\": {}", fieldset::display(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One `managedFields` entry, read.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    pub(super) time: String,
    subresource: Option<String>,
    pub(super) fields: BTreeSet<Path>,
}

impl Entry {
    pub(super) fn same_owner(&self, manager: &str, operation: &str, sub: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == sub
    }
}

impl Entry {
    /// An entry of `manager`'s `operation` (on subresource `sub`) owning nothing yet, stamped
    /// `now` and `api_version`.
    pub(super) fn new(
        manager: &str,
        operation: &str,
        sub: Option<&str>,
        api_version: &str,
        now: &str,
    ) -> Entry {
        Entry {
            manager: manager.to_string(),
            operation: operation.to_string(),
            api_version: api_version.to_string(),
            time: now.to_string(),
            subresource: sub.map(String::from),
            fields: BTreeSet::new(),
        }
    }

    /// Keeps only the fields still present in `lookup`'s object.
    pub(super) fn prune(&mut self, lookup: &fieldset::Lookup) {
        self.fields.retain(|p| lookup.value_at(p).is_some());
    }
}

/// The entry of `manager`'s `operation` (on subresource `sub`), added empty,
/// stamped `now` and `api_version`, when the manager has none yet.
fn entry_of<'a>(
    entries: &'a mut Vec<Entry>,
    manager: &str,
    operation: &str,
    sub: Option<&str>,
    api_version: &str,
    now: &str,
) -> &'a mut Entry {
    let index = match entries
        .iter()
        .position(|e| e.same_owner(manager, operation, sub))
    {
        Some(index) => index,
        None => {
            entries.push(Entry::new(manager, operation, sub, api_version, now));
            entries.len() - 1
        }
    };
    &mut entries[index]
}

pub(super) fn api_version_of(obj: &Value) -> String {
    obj.get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The `managedFields` list of `obj`, if it has one.
pub(super) fn listed(obj: &Value) -> Option<&Vec<Value>> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
}

/// The `managedFields` list of `obj`, to change in place.
pub(super) fn listed_mut(obj: &mut Value) -> Option<&mut Vec<Value>> {
    obj.pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut)
}

/// Every entry of `obj`'s `managedFields`, read.
pub(super) fn read_entries(obj: &Value) -> Vec<Entry> {
    listed(obj).into_iter().flatten().map(read_entry).collect()
}

/// One entry of a `managedFields` list, read.
pub(super) fn read_entry(e: &Value) -> Entry {
    let text = |key: &str| e.get(key).and_then(Value::as_str).map(String::from);
    Entry {
        manager: text("manager").unwrap_or_default(),
        operation: text("operation").unwrap_or_else(|| "Update".to_string()),
        api_version: text("apiVersion").unwrap_or_default(),
        time: text("time").unwrap_or_default(),
        subresource: text("subresource"),
        fields: e
            .get("fieldsV1")
            .map(fieldset::from_fields_v1)
            .unwrap_or_default(),
    }
}

/// An entry as `managedFields` lists it.
pub(super) fn written(e: Entry) -> Value {
    let fields = fieldset::to_fields_v1(&e.fields);
    e.written_with(fields)
}

impl Entry {
    /// This entry as `managedFields` lists it, owning what `fields_v1` names (its own `fields`
    /// are not read).
    pub(super) fn written_with(self, fields_v1: Value) -> Value {
        let mut v = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1,
        });
        if let Some(s) = self.subresource {
            v["subresource"] = Value::String(s);
        }
        v
    }
}

/// Sets `obj`'s `managedFields` to `list`, or removes them when it is empty.
pub(super) fn set_list(obj: &mut Value, list: Vec<Value>) {
    if let Some(meta) = object::metadata_mut(obj) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

fn write_entries(obj: &mut Value, entries: Vec<Entry>) {
    let list = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(written)
        .collect();
    set_list(obj, list);
}

/// Whether a path is one no manager owns (and so are the paths under it).
pub(super) fn ignored(path: &[Step]) -> bool {
    match path {
        [Step::Field(f), ..] if f == "apiVersion" || f == "kind" => true,
        [Step::Field(m), Step::Field(f), ..] if m == "metadata" => matches!(
            f.as_str(),
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "managedFields"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds"
                | "selfLink"
        ),
        _ => false,
    }
}

/// The fields of `obj` a manager writing through `scope` can own.
pub(super) fn owned_fields(obj: &Value, scope: Scope) -> BTreeSet<Path> {
    let fields = match scope {
        // `/status` owns only what is under `status`: the rest is not walked.
        Scope::Status => fieldset::fields_under(obj, "status"),
        Scope::Main { .. } => fieldset::fields_of(obj),
    };
    fields
        .into_iter()
        .filter(|p| !ignored(p) && scope.owns(p))
        .collect()
}

/// Keep only entries' fields that still exist in `obj`.
fn prune(entries: &mut [Entry], obj: &Value) {
    let lookup = fieldset::Lookup::new(obj);
    for e in entries.iter_mut() {
        e.prune(&lookup);
    }
}

/// Merge an applied configuration into the live object: maps recursively, keyed lists by key.
fn merge_into(live: &mut Value, cfg: &Value, field: &str) {
    match (live, cfg) {
        (Value::Object(l), Value::Object(c)) => {
            for (k, cv) in c {
                match l.get_mut(k) {
                    Some(lv) => merge_into(lv, cv, k),
                    None => {
                        l.insert(k.clone(), cv.clone());
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(c)) if fieldset::keys_for(field, c).is_some() => {
            let keys = fieldset::keys_for(field, c).unwrap_or_default();
            for item in c {
                let id = fieldset::element_key(item, &keys);
                match l
                    .iter_mut()
                    .find(|x| x.is_object() && fieldset::element_key(x, &keys) == id)
                {
                    Some(existing) => merge_into(existing, item, ""),
                    None => l.push(item.clone()),
                }
            }
        }
        (Value::Array(l), Value::Array(c)) if fieldset::is_set_list(field) => {
            for item in c {
                if !l.contains(item) {
                    l.push(item.clone());
                }
            }
        }
        (live, cfg) => *live = cfg.clone(),
    }
}

/// Remove what an applier stopped applying (`previous` is what it applied last time), as
/// structured-merge-diff prunes: a field goes unless some manager in `managed` (the others, and
/// the applier's new configuration) owns it or a field under it; a keyed or set list item goes
/// whole, with its unowned and defaulted fields, unless a manager owns the item itself (an applier
/// that names it does; an update only by having created it). In an item that stays, the fields
/// only the applier owned go one by one, and its key fields stay.
fn remove_dropped(obj: &mut Value, previous: &BTreeSet<Path>, managed: &BTreeSet<Path>) {
    let owned = |r: &[Step]| match r.last() {
        Some(Step::Field(_)) => managed
            .range(r.to_vec()..)
            .next()
            .is_some_and(|q| q.starts_with(r)),
        _ => managed.contains(r),
    };
    let applied_before = |r: &[Step]| (1..=r.len()).any(|n| previous.contains(&r[..n]));
    let lookup = fieldset::Lookup::new(obj);
    let mut targets: BTreeSet<Path> = BTreeSet::new();
    for p in previous {
        // The outermost of: an item on the way to `p`, or `p` itself, that goes.
        let target = (1..=p.len())
            .map(|n| &p[..n])
            .filter(|r| {
                r.len() == p.len() || matches!(r.last(), Some(Step::Key(_) | Step::Value(_)))
            })
            .find(|r| applied_before(r) && !owned(r) && lookup.value_at(r).is_some());
        if let Some(target) = target.filter(|t| !is_key_field(t)) {
            targets.insert(target.to_vec());
        }
    }
    drop(lookup);
    let outermost: Vec<Path> = targets
        .iter()
        .filter(|t| !(1..t.len()).any(|n| targets.contains(&t[..n])))
        .cloned()
        .collect();
    for t in outermost.iter().rev() {
        fieldset::remove_at(obj, t);
    }
}

/// Whether `path` is a key field of the list item it is in (`…[name=x].name`).
fn is_key_field(path: &[Step]) -> bool {
    match path {
        [.., Step::Key(key), Step::Field(f)] => {
            serde_json::from_str::<serde_json::Map<String, Value>>(key)
                .is_ok_and(|k| k.contains_key(f))
        }
        _ => false,
    }
}

/// kube-apiserver lets `kubectl apply --server-side` take over fields that client-side apply
/// set (the documented upgrade path): conflicts with `kubectl-client-side-apply` on fields named
/// in the `last-applied-configuration` annotation are not conflicts.
fn forgive_client_side_apply(live: &Value, conflicts: &mut Vec<(String, Path)>) {
    let last = live
        .pointer("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok());
    let Some(last) = last else { return };
    let last_fields = fieldset::fields_of(&last);
    conflicts.retain(|(manager, path)| {
        !(manager == "kubectl-client-side-apply" || manager == "before-first-apply")
            || !last_fields.contains(path)
    });
}

/// Server-side apply of `cfg` by `manager` onto `live` (or onto an empty object when creating).
pub fn apply(
    live: Option<&Value>,
    cfg: &Value,
    manager: &str,
    force: bool,
    scope: Scope,
    now: &str,
) -> Result<Value, Error> {
    let mut obj = live.cloned().unwrap_or_else(|| json!({"metadata": {}}));
    let mut entries = read_entries(&obj);
    let sub = scope.subresource();
    let applied = owned_fields(cfg, scope);

    let mut conflicts = Vec::new();
    let (live_at, cfg_at) = (fieldset::Lookup::new(&obj), fieldset::Lookup::new(cfg));
    for e in entries
        .iter()
        .filter(|e| !e.same_owner(manager, "Apply", sub))
    {
        for p in applied.intersection(&e.fields) {
            let (old, new) = (live_at.value_at(p), cfg_at.value_at(p));
            let leaf = !matches!(p.last(), Some(Step::Key(_) | Step::Value(_)));
            if leaf && old.is_some() && old != new {
                conflicts.push((e.manager.clone(), p.clone()));
            }
        }
    }
    drop((live_at, cfg_at));
    forgive_client_side_apply(&obj, &mut conflicts);
    if !conflicts.is_empty() {
        if !force {
            return Err(Error::Conflicts(conflicts));
        }
        for e in entries
            .iter_mut()
            .filter(|e| !e.same_owner(manager, "Apply", sub))
        {
            for (_, p) in &conflicts {
                e.fields.remove(p);
            }
        }
    }

    let previous = entries
        .iter()
        .find(|e| e.same_owner(manager, "Apply", sub))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut cfg_scoped = cfg.clone();
    if let (Scope::Main { has_status: true }, Some(m)) = (scope, cfg_scoped.as_object_mut()) {
        m.remove("status");
    }
    merge_into(&mut obj, &cfg_scoped, "");

    let managed: BTreeSet<Path> = entries
        .iter()
        .filter(|e| !e.same_owner(manager, "Apply", sub))
        .flat_map(|e| e.fields.iter().cloned())
        .chain(applied.iter().cloned())
        .collect();
    remove_dropped(&mut obj, &previous, &managed);

    let api_version = api_version_of(cfg);
    let entry = entry_of(&mut entries, manager, "Apply", sub, &api_version, now);
    if entry.fields != applied {
        entry.time = now.to_string();
    }
    entry.fields = applied;
    entry.api_version = api_version;
    prune(&mut entries, &obj);
    write_entries(&mut obj, entries);
    Ok(obj)
}
