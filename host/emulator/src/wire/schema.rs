//! Validation and pruning of custom resources against a CRD version's `openAPIV3Schema`.

use serde_json::{Map, Value};

/// What validating one object found.
#[derive(Debug, Default)]
pub struct Report {
    /// `(field path, message)` for each violation, as kube-apiserver words them.
    pub errors: Vec<(String, String)>,
    /// Paths of fields the schema does not know (pruned from the object).
    pub unknown: Vec<String>,
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

fn type_ok(ty: &str, v: &Value, int_or_string: bool) -> bool {
    if int_or_string {
        return v.is_string() || v.is_i64() || v.is_u64();
    }
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// Validate `obj` against `schema`, removing unknown fields; `apiVersion`, `kind` and `metadata`
/// at the root are always allowed.
pub fn validate_and_prune(schema: &Value, obj: &mut Value) -> Report {
    let mut report = Report::default();
    if let (Some(props), Some(map)) = (
        schema.get("properties").and_then(Value::as_object),
        obj.as_object_mut(),
    ) {
        let keys: Vec<String> = map.keys().cloned().collect();
        for k in keys {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props.get(&k) {
                Some(sub) => {
                    if let Some(v) = map.get_mut(&k) {
                        if v.is_null() && !flag(sub, "nullable") {
                            map.remove(&k);
                            continue;
                        }
                        check(sub, v, &k, &mut report, true);
                    }
                }
                None if flag(schema, "x-kubernetes-preserve-unknown-fields") => {}
                None => {
                    report.unknown.push(k.clone());
                    map.remove(&k);
                }
            }
        }
        required(schema, map, "", &mut report);
    }
    report
}

fn required(schema: &Value, map: &Map<String, Value>, path: &str, report: &mut Report) {
    for r in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !map.contains_key(r) {
            let p = if path.is_empty() {
                r.to_string()
            } else {
                format!("{path}.{r}")
            };
            report.errors.push((p, "Required value".into()));
        }
    }
}

/// Validate one value; `prune` is false inside `anyOf`/`oneOf` trials.
fn check(schema: &Value, v: &mut Value, path: &str, report: &mut Report, prune: bool) {
    if v.is_null() && flag(schema, "nullable") {
        return;
    }
    let int_or_string = flag(schema, "x-kubernetes-int-or-string");
    if let Some(ty) = schema.get("type").and_then(Value::as_str)
        && !type_ok(ty, v, int_or_string)
    {
        let shown = match v {
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "boolean",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
            Value::Null => "null",
        };
        report.errors.push((
            path.into(),
            format!("Invalid value: \"{shown}\": {path} in body must be of type {ty}: \"{shown}\""),
        ));
        return;
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(v)
    {
        let list: Vec<String> = options.iter().map(show).collect();
        report.errors.push((
            path.into(),
            format!(
                "Unsupported value: {}: supported values: {}",
                show(v),
                list.join(", ")
            ),
        ));
    }
    bounds(schema, v, path, report);
    for sub in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check(sub, v, path, report, false);
    }
    for (name, need_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(subs) = schema.get(name).and_then(Value::as_array) {
            let passing = subs
                .iter()
                .filter(|s| {
                    let mut trial = Report::default();
                    check(s, &mut v.clone(), path, &mut trial, false);
                    trial.errors.is_empty()
                })
                .count();
            if passing == 0 || (need_one && passing > 1) {
                report.errors.push((
                    path.into(),
                    format!(
                        "Invalid value: {}: {path} in body must match {} schema in {name}",
                        show(v),
                        if need_one {
                            "exactly one"
                        } else {
                            "at least one"
                        }
                    ),
                ));
            }
        }
    }
    match v {
        Value::Object(map) => object(schema, map, path, report, prune),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), report, prune);
                }
            }
        }
        _ => {}
    }
}

fn object(
    schema: &Value,
    map: &mut Map<String, Value>,
    path: &str,
    report: &mut Report,
    prune: bool,
) {
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields")
        || flag(schema, "x-kubernetes-embedded-resource");
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        let child_path = format!("{path}.{k}");
        let sub = props
            .and_then(|p| p.get(&k))
            .or(additional.filter(|a| a.is_object()));
        match sub {
            Some(sub) => {
                if let Some(v) = map.get_mut(&k) {
                    if v.is_null() && !flag(sub, "nullable") && prune {
                        map.remove(&k);
                        continue;
                    }
                    check(sub, v, &child_path, report, prune);
                }
            }
            None if preserve || additional == Some(&Value::Bool(true)) => {}
            None if props.is_none() && additional.is_none() && schema.get("type").is_none() => {}
            None => {
                report.unknown.push(child_path);
                if prune {
                    map.remove(&k);
                }
            }
        }
    }
    required(schema, map, path, report);
}

fn bounds(schema: &Value, v: &Value, path: &str, report: &mut Report) {
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    if let Some(x) = v.as_f64() {
        let excl_min = flag(schema, "exclusiveMinimum");
        let excl_max = flag(schema, "exclusiveMaximum");
        if let Some(min) = num("minimum")
            && (x < min || (excl_min && x == min))
        {
            let rel = if excl_min {
                "greater than"
            } else {
                "greater than or equal to"
            };
            report.errors.push((
                path.into(),
                format!("Invalid value: {v}: {path} in body should be {rel} {min}"),
            ));
        }
        if let Some(max) = num("maximum")
            && (x > max || (excl_max && x == max))
        {
            let rel = if excl_max {
                "less than"
            } else {
                "less than or equal to"
            };
            report.errors.push((
                path.into(),
                format!("Invalid value: {v}: {path} in body should be {rel} {max}"),
            ));
        }
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as f64;
        if let Some(min) = num("minLength").filter(|m| len < *m) {
            report.errors.push((
                path.into(),
                format!(
                    "Invalid value: \"{s}\": {path} in body should be at least {min} chars long"
                ),
            ));
        }
        if let Some(max) = num("maxLength").filter(|m| len > *m) {
            report.errors.push((
                path.into(),
                format!("Too long: may not be more than {max} bytes"),
            ));
        }
        if let Some(p) = schema.get("pattern").and_then(Value::as_str)
            && let Ok(re) = regex::Regex::new(p)
            && !re.is_match(s)
        {
            report.errors.push((
                path.into(),
                format!("Invalid value: \"{s}\": {path} in body should match '{p}'"),
            ));
        }
    }
    if let Some(items) = v.as_array() {
        let len = items.len() as f64;
        if let Some(min) = num("minItems").filter(|m| len < *m) {
            report.errors.push((
                path.into(),
                format!("Invalid value: {len}: {path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = num("maxItems").filter(|m| len > *m) {
            report.errors.push((
                path.into(),
                format!("Too many: {len}: must have at most {max} items"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}})
    }

    #[test]
    fn violations_are_reported_with_field_paths() {
        let mut obj = json!({"spec": {"size": "big", "mode": "c"}});
        let report = validate_and_prune(&schema(), &mut obj);
        let fields: Vec<&str> = report.errors.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, vec!["spec.mode", "spec.size"]);
        assert!(
            report.errors[1].1.contains("must be of type integer"),
            "{:?}",
            report.errors
        );
    }

    #[test]
    fn unknown_fields_are_pruned_except_where_preserved() {
        let mut obj = json!({"metadata": {"name": "x"}, "spec": {"size": 3, "extra": 1, "free": {"any": 1}}, "junk": true});
        let report = validate_and_prune(&schema(), &mut obj);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(
            report.unknown,
            vec!["junk".to_string(), "spec.extra".to_string()]
        );
        assert_eq!(
            obj,
            json!({"metadata": {"name": "x"}, "spec": {"size": 3, "free": {"any": 1}}})
        );
    }
}
