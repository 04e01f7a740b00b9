//! `Table` output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), the form `kubectl get` prints.

use serde_json::{Value, json};

use crate::kinds::resources::{self, ResourceType};
use crate::serve::printers;

/// Whether the Accept header prefers a `meta.k8s.io/v1` Table.
pub fn wanted(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        params.contains(&"as=Table")
            && params.contains(&"v=v1")
            && params.contains(&"g=meta.k8s.io")
    })
}

/// What each row carries besides its cells (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Include {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
}

impl Include {
    /// Parse the `includeObject` query parameter.
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

enum Cell {
    Name,
    Age,
    Path(String),
    Printer(fn(&Value) -> Value),
}

fn columns(rt: &ResourceType) -> Vec<(Value, Cell)> {
    if let Some(cols) = printers::columns(rt) {
        return cols
            .into_iter()
            .map(|c| (c.definition, Cell::Printer(c.cell)))
            .collect();
    }
    let col = |name: &str, ty: &str, format: &str, priority: i64| json!({"name": name, "type": ty, "format": format, "description": "", "priority": priority});
    let mut out = vec![(col("Name", "string", "name", 0), Cell::Name)];
    let mut age_done = false;
    for c in rt.printer_columns.iter() {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let path = c.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("string");
        let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
        if path == ".metadata.creationTimestamp" {
            age_done = true;
            out.push((col(name, "date", "", priority), Cell::Age));
        } else {
            out.push((col(name, ty, "", priority), Cell::Path(path.to_string())));
        }
    }
    if !age_done {
        out.push((col("Age", "string", "", 0), Cell::Age));
    }
    out
}

/// Read a simple JSONPath: `.a.b`, `.a[0].b`, `.a[?(@.type=="Ready")].status`.
fn eval(obj: &Value, path: &str) -> Value {
    let mut cur = obj;
    let path = path.trim_start_matches('{').trim_end_matches('}');
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in path.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '.' if depth == 0 => {
                parts.push(&path[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&path[start..]);
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let (field, index) = match part.split_once('[') {
            Some((f, rest)) => (f, Some(rest.trim_end_matches(']'))),
            None => (part, None),
        };
        if !field.is_empty() {
            let Some(next) = cur.get(field) else {
                return Value::Null;
            };
            cur = next;
        }
        if let Some(index) = index {
            let found = if let Some(filter) =
                index.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')'))
            {
                let (k, v) = filter.split_once("==").unwrap_or((filter, ""));
                let v = v.trim_matches(|c| c == '"' || c == '\'');
                cur.as_array().and_then(|a| {
                    a.iter()
                        .find(|e| e.get(k).and_then(Value::as_str) == Some(v))
                })
            } else {
                index.parse::<usize>().ok().and_then(|i| cur.get(i))
            };
            let Some(next) = found else {
                return Value::Null;
            };
            cur = next;
        }
    }
    cur.clone()
}

fn row(rt: &ResourceType, cols: &[(Value, Cell)], obj: &Value, include: Include) -> Value {
    let cells: Vec<Value> = cols
        .iter()
        .map(|(_, c)| match c {
            Cell::Name => obj
                .pointer("/metadata/name")
                .cloned()
                .unwrap_or(Value::Null),
            Cell::Age => json!(printers::age_of(obj, "/metadata/creationTimestamp")),
            Cell::Path(p) => eval(obj, p),
            Cell::Printer(cell) => cell(obj),
        })
        .collect();
    let mut r = json!({"cells": cells});
    match include {
        Include::None => {}
        Include::Metadata => {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                 "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))});
        }
        Include::Object => r["object"] = resources::serve(rt, obj),
    }
    r
}

/// A Table of `objects` with list metadata `meta`.
pub fn render(rt: &ResourceType, objects: &[&Value], meta: Value, include: Include) -> Value {
    let cols = columns(rt);
    let rows: Vec<Value> = objects.iter().map(|o| row(rt, &cols, o, include)).collect();
    let defs: Vec<Value> = cols.iter().map(|(d, _)| d.clone()).collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": defs, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_filters_pick_a_condition() {
        let obj = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(
            eval(&obj, ".status.conditions[?(@.type==\"Ready\")].status"),
            json!("True")
        );
        assert_eq!(eval(&obj, ".status.conditions[0].type"), json!("A"));
    }
}
