//! Strategic merge patch for the built-in kinds (lists merged by their keys, `$patch` directives).

use serde_json::{Map, Value};

use crate::wire::fieldset;

/// Apply a strategic merge patch to `doc` in place.
pub fn strategic_merge(doc: &mut Value, patch: &Value) {
    merge_value(doc, patch, "");
}

fn merge_value(doc: &mut Value, patch: &Value, field: &str) {
    match (doc, patch) {
        (Value::Object(d), Value::Object(p)) => merge_map(d, p),
        (Value::Array(d), Value::Array(p)) => merge_list(d, p, field),
        (doc, patch) => *doc = strip_directives(patch),
    }
}

/// Copy a patch value for insertion, without any `$`-directives left in it.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

fn merge_map(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *doc = strip_directives(&Value::Object(patch.clone()))
                .as_object()
                .cloned()
                .unwrap_or_default();
            return;
        }
        Some("delete") => {
            doc.clear();
            return;
        }
        _ => {}
    }
    for (k, pv) in patch {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) = (doc.get_mut(field), pv.as_array()) {
                list.retain(|x| !remove.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        if pv.is_null() {
            doc.remove(k);
            continue;
        }
        match doc.get_mut(k) {
            Some(dv) => merge_value(dv, pv, k),
            None => {
                let mut fresh = if pv.is_object() {
                    Value::Object(Map::new())
                } else {
                    Value::Array(Vec::new())
                };
                if pv.is_object() || pv.is_array() {
                    merge_value(&mut fresh, pv, k);
                } else {
                    fresh = pv.clone();
                }
                doc.insert(k.clone(), fresh);
            }
        }
    }
    for (k, order) in patch {
        if let Some(field) = k.strip_prefix("$setElementOrder/")
            && let (Some(Value::Array(list)), Some(order)) = (doc.get_mut(field), order.as_array())
        {
            reorder(list, order, field);
        }
    }
}

fn merge_list(doc: &mut Vec<Value>, patch: &[Value], field: &str) {
    if patch
        .iter()
        .any(|p| p.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *doc = patch
            .iter()
            .filter(|p| p.get("$patch").is_none())
            .map(strip_directives)
            .collect();
        return;
    }
    let keys = fieldset::keys_for(
        field,
        &patch
            .iter()
            .filter(|p| p.get("$patch").is_none())
            .cloned()
            .collect::<Vec<_>>(),
    )
    .or_else(|| fieldset::merge_keys(field).map(|k| k.to_vec()));
    match keys {
        Some(keys) if patch.iter().all(Value::is_object) => {
            let key = keys.first().copied().unwrap_or("name");
            for p in patch {
                let id = p.get(key);
                let pos = doc.iter().position(|d| d.get(key) == id && id.is_some());
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    if let Some(i) = pos {
                        doc.remove(i);
                    }
                    continue;
                }
                match pos {
                    Some(i) => merge_value(&mut doc[i], p, ""),
                    None => doc.push(strip_directives(p)),
                }
            }
        }
        _ if fieldset::is_set_list(field) => {
            for p in patch.iter().map(strip_directives) {
                if !doc.contains(&p) {
                    doc.push(p);
                }
            }
        }
        _ => *doc = patch.iter().map(strip_directives).collect(),
    }
}

/// Order a merged list as `$setElementOrder` says; elements it does not name keep their place at the end.
fn reorder(list: &mut Vec<Value>, order: &[Value], field: &str) {
    let key = fieldset::merge_keys(field).and_then(|k| k.first().copied());
    let id = |v: &Value| -> Value {
        match key {
            Some(k) if v.is_object() => v.get(k).cloned().unwrap_or(Value::Null),
            _ => v.clone(),
        }
    };
    let mut rest = std::mem::take(list);
    for o in order {
        let want = id(o);
        if let Some(i) = rest.iter().position(|v| id(v) == want) {
            list.push(rest.remove(i));
        }
    }
    list.append(&mut rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_merge_by_name_and_nulls_delete() {
        let mut doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"containers": [
            {"name": "app", "image": "v1", "env": [{"name": "X", "value": "1"}]},
            {"name": "side", "image": "s"}]}});
        let patch = json!({"metadata": {"labels": {"b": null}}, "spec": {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "v2", "env": [{"name": "Y", "value": "2"}]}]}});
        strategic_merge(&mut doc, &patch);
        assert_eq!(
            doc,
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [
            {"name": "side", "image": "s"},
            {"name": "app", "image": "v2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}})
        );
    }

    #[test]
    fn patch_delete_directive_removes_a_keyed_element() {
        let mut doc = json!({"spec": {"ports": [{"containerPort": 80}, {"containerPort": 443}]}});
        strategic_merge(
            &mut doc,
            &json!({"spec": {"ports": [{"containerPort": 80, "$patch": "delete"}]}}),
        );
        assert_eq!(doc, json!({"spec": {"ports": [{"containerPort": 443}]}}));
    }
}
