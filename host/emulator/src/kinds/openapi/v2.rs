//! `/openapi/v2`: the same schemas as `/openapi/v3`, rewritten as one Swagger 2.0 document.
//!
//! kubectl before 1.29 reads it for `apply` (strategic merge metadata, the `fieldValidation`
//! check) and `explain`. OpenAPI 3.0 schemas become Swagger 2.0 schemas the way
//! kube-apiserver publishes CRD schemas in v2: `$ref`s point at `#/definitions/`, a single-`$ref`
//! `allOf` becomes the `$ref`, and what 2.0 cannot say (`nullable`, `oneOf`, `anyOf`, `not`) is
//! left out. A `$ref` keeps only its description beside it, since kube-openapi's parser refuses
//! a type or properties next to a reference.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::{schema_for, schema_name};
use crate::kinds::discovery::KUBE_VERSION;
use crate::kinds::resources::{Registry, ResourceType};
use crate::wire::builtin_schema;

const V3_REF: &str = "#/components/schemas/";
const V2_REF: &str = "#/definitions/";

/// Keywords of OpenAPI 3.0 schemas that Swagger 2.0 has no place for.
const DROPPED: &[&str] = &[
    "nullable",
    "oneOf",
    "anyOf",
    "not",
    "deprecated",
    "writeOnly",
    "const",
    "examples",
    "$schema",
    "$defs",
    "definitions",
    "discriminator",
];

/// One schema of `/openapi/v3`, as Swagger 2.0 writes it.
pub fn schema(v3: &Value) -> Value {
    let Some(o) = v3.as_object() else {
        // A boolean schema: `true` accepts anything.
        return json!({});
    };
    let mut out = Map::new();
    for (k, v) in o {
        match k.as_str() {
            k if DROPPED.contains(&k) => {}
            "$ref" => {
                let target = v.as_str().unwrap_or("");
                let target = target.strip_prefix(V3_REF).unwrap_or(target);
                out.insert("$ref".into(), json!(format!("{V2_REF}{target}")));
            }
            "allOf" => match v.as_array().map(Vec::as_slice) {
                Some([only]) if only.get("$ref").is_some() => {
                    out.extend(schema(only).as_object().cloned().unwrap_or_default());
                }
                Some(all) => _ = out.insert(k.clone(), all.iter().map(schema).collect()),
                None => {}
            },
            "properties" => {
                let props: Map<String, Value> = v
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| (name.clone(), schema(s)))
                    .collect();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" => _ = out.insert(k.clone(), schema(v)),
            "additionalProperties" if v.is_object() => _ = out.insert(k.clone(), schema(v)),
            "type" => {
                // 3.1-style `["string", "null"]`: the non-null member.
                let ty = match v {
                    Value::Array(types) => types.iter().find(|t| *t != "null").cloned(),
                    other => Some(other.clone()),
                };
                if let Some(ty) = ty {
                    out.insert(k.clone(), ty);
                }
            }
            _ => _ = out.insert(k.clone(), v.clone()),
        }
    }
    if out.contains_key("$ref") {
        out.retain(|k, _| k == "$ref" || k == "description");
    }
    Value::Object(out)
}

/// The built-in kinds' definitions in 2.0 form, converted once.
fn builtin_definitions() -> &'static Map<String, Value> {
    static DEFINITIONS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        builtin_schema::schemas()
            .definitions
            .iter()
            .map(|(name, def)| (name.clone(), schema(def)))
            .collect()
    })
}

fn operation(t: &ResourceType, action: &str, with_body: bool) -> Value {
    let reference = json!({"$ref": format!("{V2_REF}{}", schema_name(t))});
    let query =
        |name: &str| json!({"name": name, "in": "query", "type": "string", "uniqueItems": true});
    let mut parameters = vec![
        query("dryRun"),
        query("fieldManager"),
        query("fieldValidation"),
    ];
    if with_body {
        parameters
            .push(json!({"name": "body", "in": "body", "required": true, "schema": reference}));
    }
    json!({
        "operationId": format!("{action}{}", t.kind),
        "consumes": ["*/*"],
        "produces": ["application/json"],
        "schemes": ["https"],
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "schema": reference}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
    })
}

/// The whole `/openapi/v2` document: every served kind's definitions and its basic paths.
pub fn document(reg: &Registry) -> Value {
    let mut definitions = builtin_definitions().clone();
    let mut paths = Map::new();
    for t in reg.all() {
        if t.from_crd
            || builtin_schema::schemas()
                .for_kind(&t.group, &t.kind)
                .is_none()
        {
            definitions.insert(schema_name(t), schema(&schema_for(t)));
        }
        let base = super::collection_path(t);
        paths.insert(
            base.clone(),
            json!({"get": operation(t, "list", false), "post": operation(t, "post", true)}),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": operation(t, "get", false),
                "put": operation(t, "put", true),
                "patch": operation(t, "patch", true),
                "delete": operation(t, "delete", false),
            }),
        );
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "definitions": definitions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_in_all_of_becomes_a_definitions_reference_with_its_description() {
        let v3 = json!({"description": "meta", "allOf": [{"$ref": "#/components/schemas/io.k8s.X"}], "nullable": true});
        assert_eq!(
            schema(&v3),
            json!({"description": "meta", "$ref": "#/definitions/io.k8s.X"})
        );
    }

    #[test]
    fn what_swagger_2_cannot_say_is_left_out_at_every_depth() {
        let v3 = json!({"type": "object", "properties": {
            "a": {"type": ["integer", "null"], "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "b": {"type": "array", "items": {"oneOf": [], "type": "string"}},
            "c": {"type": "object", "additionalProperties": {"type": "string", "nullable": true}, "x-kubernetes-map-type": "atomic"},
        }});
        assert_eq!(
            schema(&v3),
            json!({"type": "object", "properties": {
                "a": {"type": "integer"},
                "b": {"type": "array", "items": {"type": "string"}},
                "c": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "atomic"},
            }})
        );
    }

    #[test]
    fn every_reference_of_the_document_names_one_of_its_definitions() {
        let doc = document(&Registry::new());
        let definitions = doc["definitions"].as_object().unwrap();
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(refs.len() > 100, "only {} references", refs.len());
        for r in refs {
            let name = r
                .strip_prefix(V2_REF)
                .unwrap_or_else(|| panic!("{r} is not a v2 reference"));
            assert!(definitions.contains_key(name), "{r} names no definition");
        }
        assert!(
            doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
                .is_object()
        );
    }

    fn collect_refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => collect_refs(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
            _ => {}
        }
    }
}
