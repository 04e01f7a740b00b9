//! The `/scale` subresource: an `autoscaling/v1` Scale view of a replica count.

use axum::body::Bytes;
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use crate::kinds::resources::{ResourceType, ScaleSpec};
use crate::state::shared::Shared;
use crate::store::ObjKey;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::http_util::json_response;
use crate::wire::object;
use crate::write::ops::{self, PatchType};
use crate::write::opts::WriteOpts;
use crate::write::patch;

fn selector_string(obj: &Value, spec: &ScaleSpec) -> String {
    if let Some(s) = spec
        .label_selector_path
        .as_deref()
        .and_then(|p| object::get_path(obj, p))
        .and_then(Value::as_str)
    {
        return s.to_string();
    }
    obj.pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// The Scale object for `obj`.
pub fn scale_of(obj: &Value, spec: &ScaleSpec) -> Value {
    let replicas = object::get_path(obj, &spec.spec_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let observed = object::get_path(obj, &spec.status_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut m = json!({});
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            m[field] = v.clone();
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": m,
        "spec": {"replicas": replicas},
        "status": {"replicas": observed, "selector": selector_string(obj, spec)},
    })
}

/// GET, PUT or PATCH `/scale`.
pub fn handle(
    shared: &Shared,
    method: &Method,
    rt: &ResourceType,
    key: &ObjKey,
    headers: &HeaderMap,
    body: &Bytes,
    opts: WriteOpts,
) -> ApiResult<Response> {
    let Some(spec) = &rt.scale else {
        return Err(ApiError::method_not_allowed());
    };
    let mut store = shared.lock();
    let current = store
        .get(key)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
    let scale = scale_of(&current, spec);
    let wanted = match *method {
        Method::GET => return Ok(json_response(StatusCode::OK, &scale)),
        Method::PUT => serde_json::from_slice::<Value>(body)
            .map_err(|e| ApiError::bad_request(format!("invalid Scale: {e}")))?,
        Method::PATCH => {
            let ct = headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let mut doc = scale.clone();
            let p: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid patch: {e}")))?;
            match PatchType::from_content_type(ct) {
                Some(PatchType::Merge) => json_patch::merge(&mut doc, &p),
                Some(PatchType::Strategic) => patch::strategic_merge(&mut doc, &p),
                Some(PatchType::Json) => {
                    let ops: json_patch::Patch = serde_json::from_value(p)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?;
                    json_patch::patch(&mut doc, &ops)
                        .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
                }
                _ => return Err(ApiError::unsupported_media(ct)),
            }
            doc
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    ApiError::check_resource_version(
        &rt.group,
        &rt.plural,
        &key.name,
        object::resource_version(&wanted),
        object::resource_version(&current),
    )?;
    let replicas = wanted
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                &key.name,
                vec![("spec.replicas".into(), "Required value".into())],
            )
        })?;
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            &key.name,
            vec![(
                "spec.replicas".into(),
                format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            )],
        ));
    }
    let mut updated = current.clone();
    object::set_path(&mut updated, &spec.spec_replicas_path, json!(replicas));
    let out = ops::update(&mut store, rt, key, updated, false, &opts)?;
    Ok(json_response(StatusCode::OK, &scale_of(&out.object, spec)))
}
