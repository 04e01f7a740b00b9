//! Small accessors for objects held as JSON values.

use serde_json::{Map, Value};

/// `metadata.name`, or empty.
pub fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.namespace`, or empty.
pub fn namespace(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.uid`, or empty.
pub fn uid(obj: &Value) -> &str {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.resourceVersion`, or empty.
pub fn resource_version(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.generation`, or 0.
pub fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// UIDs named in `metadata.ownerReferences`.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The `metadata` map, created if missing; `None` only when `obj` is not a JSON object.
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let root = obj.as_object_mut()?;
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// Replace `metadata.finalizers`, dropping the key when empty.
pub fn set_finalizers(obj: &mut Value, list: &[String]) {
    let Some(meta) = metadata_mut(obj) else {
        return;
    };
    if list.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(list.to_vec()));
    }
}

/// Whether `a` and `b` are equal outside `metadata`, `apiVersion`, `kind` and (optionally)
/// `status`: whether a write changed the part that bumps `generation`. Compared in place, without
/// copying either object.
pub fn same_spec(a: &Value, b: &Value, without_status: bool) -> bool {
    let skipped = |k: &str| {
        matches!(k, "metadata" | "apiVersion" | "kind") || (without_status && k == "status")
    };
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let kept = |m: &'_ Map<String, Value>| m.keys().filter(|k| !skipped(k)).count();
            kept(a) == kept(b)
                && a.iter()
                    .filter(|(k, _)| !skipped(k))
                    .all(|(k, v)| b.get(k) == Some(v))
        }
        _ => a == b,
    }
}

/// Current time as RFC 3339 with second precision, the way Kubernetes writes timestamps.
///
/// A write asks for it several times (its `managedFields` entry, conditions, timestamps): the
/// text is formatted once per second per thread and copied after that.
pub fn now_rfc3339() -> String {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
    }
    let now = k8s_openapi::jiff::Timestamp::now();
    let second = now.as_second();
    LAST.with_borrow_mut(|(at, text)| {
        if *at != second {
            *text = format!("{}", now.strftime("%Y-%m-%dT%H:%M:%SZ"));
            *at = second;
        }
        text.clone()
    })
}

/// Read a value at a simple JSON path like `.spec.replicas`.
pub fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let pointer: String = path
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{s}"))
        .collect();
    obj.pointer(&pointer)
}

/// Write a value at a simple JSON path like `.spec.replicas`, creating maps on the way.
pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let mut cur = obj;
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), value);
            return;
        }
        cur = map
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}
