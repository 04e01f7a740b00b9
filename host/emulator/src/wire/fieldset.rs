//! Field paths and sets in the `FieldsV1` shape that `managedFields` uses.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// A map key (`f:name`).
    Field(String),
    /// A list element identified by its merge keys (`k:{"name":"app"}`), keys sorted.
    Key(String),
    /// A set-list element identified by its value (`v:"x"`).
    Value(String),
}

impl Step {
    /// Appends this step as a `fieldsV1` key names it (`f:name`, `k:{"name":"app"}`, `v:"x"`).
    pub fn push_key(&self, out: &mut String) {
        let (kind, text) = match self {
            Step::Field(f) => ("f:", f),
            Step::Key(k) => ("k:", k),
            Step::Value(v) => ("v:", v),
        };
        out.push_str(kind);
        out.push_str(text);
    }

    /// This step as a `fieldsV1` key names it.
    pub fn key(&self) -> String {
        let mut out = String::new();
        self.push_key(&mut out);
        out
    }
}

/// A path from the object root.
pub type Path = Vec<Step>;

/// The merge keys of associative lists, by field name, as the built-in types declare them.
pub fn merge_keys(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "hostAliases" => &["name"][..],
        "volumeMounts" | "volumeDevices" => &["mountPath"][..],
        "conditions" => &["type"][..],
        "ownerReferences" => &["uid"][..],
        "ports" => &["containerPort"][..],
        _ => return None,
    })
}

/// Lists of scalars merged as sets.
pub fn is_set_list(field: &str) -> bool {
    matches!(field, "finalizers")
}

/// The merge keys that apply to a list under `field`, for the elements actually present.
/// Service ports are keyed by `port` and `protocol`, container ports by `containerPort` and
/// `protocol` (a missing `protocol` keys as its default, TCP).
pub fn keys_for(field: &str, items: &[Value]) -> Option<Vec<&'static str>> {
    if field == "ports" && !items.is_empty() {
        for key in ["port", "containerPort"] {
            if items.iter().all(|i| i.get(key).is_some()) {
                return Some(vec![key, "protocol"]);
            }
        }
    }
    let keys = merge_keys(field)?;
    let all_keyed = items
        .iter()
        .all(|i| i.is_object() && keys.iter().all(|k| i.get(*k).is_some()));
    if all_keyed { Some(keys.to_vec()) } else { None }
}

/// The identity string of a keyed list element, `{"name":"app"}` with keys in sorted order.
///
/// Written as `serde_json` writes a map of those keys (sorted, each once), without building one:
/// every keyed list item of every write is keyed, in the old object and the new.
pub fn element_key(item: &Value, keys: &[&str]) -> String {
    let mut sorted: Vec<&str> = keys.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let tcp = Value::String("TCP".into());
    let mut out = Vec::with_capacity(32);
    out.push(b'{');
    for k in sorted {
        let value = match item.get(k) {
            Some(v) => v,
            // kube-apiserver defaults `protocol` to TCP before keying, so an apply that omits it
            // names the same element as the stored, defaulted one.
            None if k == "protocol" => &tcp,
            None => continue,
        };
        if out.len() > 1 {
            out.push(b',');
        }
        // Writing JSON into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, value);
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The set of fields present in `obj`: leaves, plus list elements themselves.
pub fn fields_of(obj: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    if let Some(map) = obj.as_object() {
        walk_map(map, &mut Vec::new(), &mut out);
    }
    out
}

/// The paths [`fields_of`] gives under `obj`'s top-level field `field` alone.
pub fn fields_under(obj: &Value, field: &str) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    if let Some(v) = obj.get(field) {
        walk_value(field, v, &mut vec![Step::Field(field.into())], &mut out);
    }
    out
}

fn walk_map(map: &Map<String, Value>, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    for (k, v) in map {
        prefix.push(Step::Field(k.clone()));
        walk_value(k, v, prefix, out);
        prefix.pop();
    }
}

fn walk_value(field: &str, v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() => walk_map(m, prefix, out),
        Value::Array(items) if !items.is_empty() => {
            if let Some(keys) = keys_for(field, items) {
                for item in items {
                    prefix.push(Step::Key(element_key(item, &keys)));
                    out.insert(prefix.clone());
                    if let Some(m) = item.as_object() {
                        walk_map(m, prefix, out);
                    }
                    prefix.pop();
                }
            } else if is_set_list(field) {
                for item in items {
                    prefix.push(Step::Value(item.to_string()));
                    out.insert(prefix.clone());
                    prefix.pop();
                }
            } else {
                out.insert(prefix.clone());
            }
        }
        _ => {
            out.insert(prefix.clone());
        }
    }
}

fn find_in_list(items: &[Value], step: &Step) -> Option<usize> {
    match step {
        Step::Key(key) => {
            let wanted: Map<String, Value> = serde_json::from_str(key).ok()?;
            let keys: Vec<&str> = wanted.keys().map(String::as_str).collect();
            let canonical = Value::Object(wanted.clone()).to_string();
            items
                .iter()
                .position(|i| i.is_object() && element_key(i, &keys) == canonical)
        }
        Step::Value(v) => {
            let wanted: Value = serde_json::from_str(v).ok()?;
            items.iter().position(|i| *i == wanted)
        }
        Step::Field(_) => None,
    }
}

/// The value at `path`, if present (one lookup; for many in one object, a [`Lookup`]).
pub fn value_at<'a>(obj: &'a Value, path: &[Step]) -> Option<&'a Value> {
    Lookup::new(obj).value_at(path)
}

/// Looks up many paths in one object, indexing each keyed list by element key the first time a
/// path crosses it. Tracking a write asks for every element of every list, once in the old
/// object and once in the new: a scan per lookup made that quadratic (a status of 2,000
/// conditions held the emulator's lock, and with it every request, for most of a minute).
pub struct Lookup<'a> {
    obj: &'a Value,
    /// Per list (its address) and key fields (joined): each element key's first position.
    lists: RefCell<HashMap<(usize, String), HashMap<String, usize>>>,
    /// Per list (its address): the answer for each key step already asked (the paths of one
    /// item's fields all cross it by the same step).
    found: RefCell<HashMap<usize, HashMap<String, Option<usize>>>>,
}

impl<'a> Lookup<'a> {
    /// Lookups in `obj`, which stays borrowed (so no list moves) while they are made.
    pub fn new(obj: &'a Value) -> Self {
        Self {
            obj,
            lists: RefCell::default(),
            found: RefCell::default(),
        }
    }

    /// The value at `path`, if present: what a scan of each list would find.
    pub fn value_at(&self, path: &[Step]) -> Option<&'a Value> {
        path.iter()
            .try_fold(self.obj, |cur, step| self.child(cur, step))
    }

    /// The value one `step` below `cur` (a value inside this lookup's object), if present.
    pub fn child(&self, cur: &'a Value, step: &Step) -> Option<&'a Value> {
        match (step, cur) {
            (Step::Field(f), Value::Object(m)) => m.get(f),
            (Step::Key(key), Value::Array(items)) => self.keyed(items, key),
            (_, Value::Array(items)) => items.get(find_in_list(items, step)?),
            _ => None,
        }
    }

    /// The object looked into.
    pub fn object(&self) -> &'a Value {
        self.obj
    }

    /// The first element of `items` (a list inside this lookup's object) whose key is `key`.
    pub fn keyed(&self, items: &'a [Value], key: &str) -> Option<&'a Value> {
        items.get(self.position(items, key)?)
    }

    /// The position of the first element of `items` whose key is `key`, as
    /// [`find_in_list`] finds it, from the list's index (built on first use).
    fn position(&self, items: &'a [Value], key: &str) -> Option<usize> {
        let list = items.as_ptr() as usize;
        if let Some(known) = self.found.borrow().get(&list).and_then(|m| m.get(key)) {
            return *known;
        }
        let answer = self.first_with_key(items, key);
        self.found
            .borrow_mut()
            .entry(list)
            .or_default()
            .insert(key.to_string(), answer);
        answer
    }

    fn first_with_key(&self, items: &'a [Value], key: &str) -> Option<usize> {
        let wanted: Map<String, Value> = serde_json::from_str(key).ok()?;
        let keys: Vec<&str> = wanted.keys().map(String::as_str).collect();
        let canonical = Value::Object(wanted.clone()).to_string();
        let mut lists = self.lists.borrow_mut();
        let index = lists
            .entry((items.as_ptr() as usize, keys.join("\n")))
            .or_insert_with(|| {
                let mut index = HashMap::new();
                for (i, item) in items.iter().enumerate().filter(|(_, i)| i.is_object()) {
                    index.entry(element_key(item, &keys)).or_insert(i);
                }
                index
            });
        index.get(&canonical).copied()
    }
}

/// Remove the value at `path`; maps left empty by the removal are removed too.
pub fn remove_at(obj: &mut Value, path: &[Step]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    let Some(parent) = value_at_mut(obj, parent_path) else {
        return;
    };
    match (last, parent) {
        (Step::Field(f), Value::Object(m)) => {
            m.remove(f);
        }
        (step, Value::Array(items)) => {
            if let Some(i) = find_in_list(items, step) {
                items.remove(i);
            }
        }
        _ => return,
    }
    let now_empty = match value_at(obj, parent_path) {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    if now_empty && parent_path.len() > 1 {
        remove_at(obj, parent_path);
    }
}

/// Mutable access to the value at `path`.
pub fn value_at_mut<'a>(obj: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut cur = obj;
    for step in path {
        cur = match (step, cur) {
            (Step::Field(f), Value::Object(m)) => m.get_mut(f)?,
            (_, Value::Array(items)) => {
                let i = find_in_list(items, step)?;
                &mut items[i]
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// Render a set as a `fieldsV1` object.
///
/// The set is sorted, so a path comes after every path that is a prefix of it: a node that
/// stood as a leaf of the set when a later path goes through it is a path of the set with
/// children, and says so with `"."` (as [`crate::wire::fields_v1::with_paths`] does in place).
pub fn to_fields_v1(set: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    let mut key = String::new();
    for path in set {
        let mut cur = &mut root;
        for step in path {
            key.clear();
            step.push_key(&mut key);
            if !cur.contains_key(key.as_str()) {
                cur.insert(key.clone(), Value::Object(Map::new()));
            } else if let Some(Value::Object(node)) = cur.get_mut(key.as_str())
                && node.is_empty()
            {
                // A leaf of the set that this path goes through.
                node.insert(".".into(), Value::Object(Map::new()));
            }
            match cur.get_mut(key.as_str()) {
                Some(Value::Object(next)) => cur = next,
                _ => break,
            }
        }
    }
    Value::Object(root)
}

fn parse_step(key: &str) -> Option<Step> {
    let (kind, rest) = key.split_at_checked(2)?;
    match kind {
        "f:" => Some(Step::Field(rest.into())),
        "k:" => Some(Step::Key(canonical(rest))),
        "v:" => Some(Step::Value(canonical(rest))),
        _ => None,
    }
}

fn canonical(json: &str) -> String {
    serde_json::from_str::<Value>(json)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| json.to_string())
}

/// Parse a `fieldsV1` object back into a set.
pub fn from_fields_v1(v: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    if let Some(m) = v.as_object() {
        parse_node(m, &mut Vec::new(), &mut out);
    }
    out
}

fn parse_node(node: &Map<String, Value>, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    for (key, child) in node {
        if key == "." {
            out.insert(prefix.clone());
            continue;
        }
        let Some(step) = parse_step(key) else {
            continue;
        };
        prefix.push(step);
        match child.as_object() {
            Some(m) if !m.is_empty() => parse_node(m, prefix, out),
            _ => {
                out.insert(prefix.clone());
            }
        }
        prefix.pop();
    }
}

/// `.spec.replicas` style rendering for conflict messages.
pub fn display(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            Step::Key(k) => s.push_str(&format!(
                "[{}]",
                k.trim_matches(|c| c == '{' || c == '}')
                    .replace("\":", "=")
                    .replace('"', "")
            )),
            Step::Value(v) => s.push_str(&format!("[={v}]")),
        }
    }
    s
}

#[cfg(test)]
#[path = "fieldset_tests.rs"]
mod tests;
