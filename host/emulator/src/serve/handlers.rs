//! Resource requests: get, list, watch, create, update, patch, delete, and the subresources:
//! `/status`, `/scale`, a Namespace's `/finalize` and a Pod's `/log`.
//!
//! [`handle`] dispatches one request by method and URL; lists and watches are served in `list`,
//! deletes in `delete`, `/scale` in `scale`, Pods' logs in `logs`.

use std::sync::Arc;

use axum::response::Response;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::kinds::resources::{self, ResourceType};
use crate::serve::delete::{delete, delete_collection};
use crate::serve::list::{list, watch_collection};
use crate::serve::request::{Request, partial};
use crate::serve::{logs, scale, table};
use crate::state::shared::Shared;
use crate::store::ObjKey;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::http_util::json_response;
use crate::wire::object;
use crate::write::ops::{self, Outcome, PatchType};
use crate::write::{admission, namespace};

fn outcome_response(rt: &ResourceType, out: Outcome, metadata_only: bool) -> Response {
    let code = if out.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = if metadata_only {
        partial(&out.object)
    } else {
        resources::serve(rt, &out.object)
    };
    let mut resp = json_response(code, &body);
    for w in out.warnings {
        if let Ok(v) = http::HeaderValue::from_str(&format!(
            "299 - \"{}\"",
            w.replace('\\', "\\\\").replace('"', "\\\"")
        )) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

/// Serve one resource request.
pub async fn handle(shared: Arc<Shared>, req: Request) -> ApiResult<Response> {
    let rt = req.target.rt.clone();
    let sub = req.target.sub.clone();
    match (&req.method, req.key(), sub.as_deref()) {
        (&Method::GET, None, None) if req.flag("watch") => watch_collection(shared, &req),
        (&Method::GET, None, None) => list(&shared, &req),
        (&Method::POST, None, None) => {
            let ns = req.target.ns.clone().unwrap_or_default();
            // The body is decoded before the store is locked: other requests go on meanwhile.
            let body = req.json_body()?;
            let opts = req.write_opts();
            let out = ops::create(&mut shared.lock(), &rt, &ns, body, &opts)?;
            Ok(outcome_response(&rt, out, req.metadata_only()))
        }
        (&Method::DELETE, None, None) => delete_collection(&shared, &req),
        (_, Some(key), Some("scale")) if rt.scale.is_some() => scale::handle(
            &shared,
            &req.method,
            &rt,
            &key,
            &req.headers,
            &req.body,
            req.write_opts(),
        ),
        (&Method::GET, Some(key), None | Some("status")) => {
            let obj = shared
                .lock()
                .get(&key)
                .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
            let body = match req.table() {
                Some(include) if req.target.sub.is_none() => table::render(
                    &rt,
                    &[&obj],
                    json!({"resourceVersion": object::resource_version(&obj)}),
                    include,
                ),
                _ if req.metadata_only() => partial(&obj),
                _ => resources::serve(&rt, &obj),
            };
            Ok(json_response(StatusCode::OK, &body))
        }
        (&Method::PUT, Some(key), s @ (None | Some("status"))) => {
            let status = check_status(&rt, s)?;
            let body = req.json_body()?;
            let opts = req.write_opts();
            let out = ops::update(&mut shared.lock(), &rt, &key, body, status, &opts)?;
            Ok(outcome_response(&rt, out, req.metadata_only()))
        }
        (&Method::PATCH, Some(key), s @ (None | Some("status"))) => {
            let status = check_status(&rt, s)?;
            let ct = req.header(http::header::CONTENT_TYPE);
            let ptype =
                PatchType::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media(ct))?;
            let mut opts = req.write_opts();
            if ptype == PatchType::Apply && req.param("fieldManager").is_none() {
                return Err(ApiError::bad_request(
                    "PATCH, application/apply-patch+yaml requests require fieldManager to be set",
                ));
            }
            if ptype != PatchType::Apply {
                opts.force = false;
            }
            let decoded = ptype.decode(&req.body);
            let out = ops::patch(&mut shared.lock(), &rt, &key, ptype, decoded, status, &opts)?;
            Ok(outcome_response(&rt, out, req.metadata_only()))
        }
        (&Method::DELETE, Some(key), None) => delete(&shared, &req, &key),
        (&Method::PUT, Some(key), Some("finalize"))
            if rt.group.is_empty() && rt.plural == "namespaces" =>
        {
            finalize(&shared, &req, &key)
        }
        (&Method::GET, Some(key), Some("log")) if rt.group.is_empty() && rt.plural == "pods" => {
            logs::serve(shared, &req, &key)
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// `PUT namespaces/{name}/finalize`: only the body's `spec.finalizers` is taken (a deleted
/// Namespace left without finalizers goes), after the usual `resourceVersion` check.
fn finalize(shared: &Shared, req: &Request, key: &ObjKey) -> ApiResult<Response> {
    let rt = &req.target.rt;
    let body = req.json_body()?;
    admission::check_type(rt, &body)?;
    let finalizers: Vec<String> = body
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(String::from))
        .collect();
    let mut store = shared.lock();
    let old = store
        .get(key)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
    ApiError::check_resource_version(
        &rt.group,
        &rt.plural,
        &key.name,
        object::resource_version(&body),
        object::resource_version(&old),
    )?;
    let manager = req.write_opts().manager;
    let out = namespace::finalize(&mut store, key, &old, finalizers, &manager);
    Ok(json_response(StatusCode::OK, &resources::serve(rt, &out)))
}

fn check_status(rt: &ResourceType, sub: Option<&str>) -> ApiResult<bool> {
    match sub {
        Some("status") if rt.has_status => Ok(true),
        Some(_) => Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )),
        None => Ok(false),
    }
}
