//! `/openapi/v3` and `/openapi/v2`: the full schemas of the built-in kinds (for `kubectl explain`
//! and `apply`) and the CRD schemas.
//!
//! v3 is the source; `v2` rewrites the same schemas as one Swagger 2.0 document and `gnostic`
//! encodes that as the protobuf client-go reads.

mod gnostic;
mod v2;

use serde_json::{Map, Value, json};

use crate::kinds::discovery::KUBE_VERSION;
use crate::kinds::resources::{Registry, ResourceType};
use crate::wire::builtin_schema;

fn gv_key(t: &ResourceType) -> String {
    if t.group.is_empty() {
        format!("api/{}", t.version)
    } else {
        format!("apis/{}/{}", t.group, t.version)
    }
}

/// The schema name kube-apiserver would use, e.g. `io.k8s.api.apps.v1.Deployment` or `com.example.v1.Blog`.
fn schema_name(t: &ResourceType) -> String {
    if !t.from_crd
        && let Some(name) = builtin_schema::schemas().definition_name(&t.group, &t.kind)
    {
        return name.to_string();
    }
    if t.from_crd {
        let reversed: Vec<&str> = t.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), t.version, t.kind)
    } else {
        let group = match t.group.as_str() {
            "" => "core",
            "apiextensions.k8s.io" => {
                return format!(
                    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{}",
                    t.version, t.kind
                );
            }
            g => g.split('.').next().unwrap_or(g),
        };
        format!("io.k8s.api.{group}.{}.{}", t.version, t.kind)
    }
}

fn gvk(t: &ResourceType) -> Value {
    json!([{"group": t.group, "version": t.version, "kind": t.kind}])
}

fn param(name: &str, location: &str) -> Value {
    json!({"name": name, "in": location, "schema": {"type": "string", "uniqueItems": true}})
}

fn op(t: &ResourceType, action: &str, with_body: bool) -> Value {
    let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(t))});
    let mut o = json!({
        "operationId": format!("{action}{}", t.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(t)[0],
        "parameters": [param("dryRun", "query"), param("fieldManager", "query"), param("fieldValidation", "query")],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
    });
    if with_body {
        o["requestBody"] = json!({"content": {"*/*": {"schema": reference}}});
    }
    o
}

fn schema_for(t: &ResourceType) -> Value {
    let mut s =
        t.schema.as_deref().cloned().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
    if let Some(m) = s.as_object_mut() {
        m.insert("x-kubernetes-group-version-kind".into(), gvk(t));
        let props = m.entry("properties").or_insert_with(|| json!({}));
        if let Some(p) = props.as_object_mut() {
            p.entry("apiVersion").or_insert(json!({"type": "string"}));
            p.entry("kind").or_insert(json!({"type": "string"}));
            p.entry("metadata")
                .or_insert(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        }
    }
    s
}

/// The path of `t`'s collection, as both OpenAPI versions list it.
fn collection_path(t: &ResourceType) -> String {
    if t.namespaced {
        format!("/{}/namespaces/{{namespace}}/{}", gv_key(t), t.plural)
    } else {
        format!("/{}/{}", gv_key(t), t.plural)
    }
}

/// `key`'s document; with `sharded`, each collection's `GET` lists `shardSelector` (how a client
/// learns the server filters by it: `crate::wire::shard_selector`).
fn gv_document(reg: &Registry, key: &str, sharded: bool) -> Option<Value> {
    let types: Vec<&ResourceType> = reg.all().iter().filter(|t| gv_key(t) == key).collect();
    if types.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for t in types {
        let base = collection_path(t);
        let mut list = op(t, "list", false);
        if sharded && let Some(params) = list["parameters"].as_array_mut() {
            params.push(param(crate::wire::shard_selector::PARAM, "query"));
        }
        paths.insert(
            base.clone(),
            json!({"get": list, "post": op(t, "post", true)}),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({"get": op(t, "get", false), "put": op(t, "put", true), "patch": op(t, "patch", true), "delete": op(t, "delete", false)}),
        );
        if t.has_status {
            paths.insert(format!("{base}/{{name}}/status"), json!({"get": op(t, "get", false), "patch": op(t, "patch", true), "put": op(t, "put", true)}));
        }
        let builtin = builtin_schema::schemas();
        match builtin.definition_name(&t.group, &t.kind) {
            Some(name) if !t.from_crd => schemas.extend(builtin.closure(name)),
            _ => _ = schemas.insert(schema_name(t), schema_for(t)),
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// `/openapi/v2` in the form `accept` asks for: gnostic protobuf (what client-go asks for) or
/// JSON. Returns the Content-Type and the body.
pub fn v2_document(reg: &Registry, accept: &str) -> (&'static str, Vec<u8>) {
    let doc = v2::document(reg);
    if accept.contains("protobuf") {
        (gnostic::CONTENT_TYPE, gnostic::encode(&doc))
    } else {
        (
            "application/json",
            serde_json::to_vec(&doc).unwrap_or_default(),
        )
    }
}

/// `/openapi/v3` (empty `rest`) or `/openapi/v3/{api/v1 | apis/group/version}`, listing
/// `shardSelector` when `sharded`.
pub fn document(reg: &Registry, rest: &str, sharded: bool) -> Option<Value> {
    if rest.is_empty() {
        let mut paths = Map::new();
        for t in reg.all() {
            let key = gv_key(t);
            // Built-in schemas never change while the emulator runs: the hash covers the names
            // and the CRD schemas only, so the index does not serialize megabytes per request.
            let hash = format!("{:016X}", fnv(&gv_fingerprint(reg, &key, sharded)));
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
            );
        }
        return Some(json!({"paths": paths}));
    }
    gv_document(reg, rest, sharded)
}

fn gv_fingerprint(reg: &Registry, key: &str, sharded: bool) -> String {
    let types: String = reg
        .all()
        .iter()
        .filter(|t| gv_key(t) == key)
        .map(|t| format!("{}|{}|{:?};", schema_name(t), t.plural, t.schema))
        .collect();
    format!("{types}{sharded}")
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}
