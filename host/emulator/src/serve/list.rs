//! Reading a collection: a list, paged with `limit` and continue tokens, and a watch.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::kinds::resources;
use crate::serve::request::{Request, partial, selectors, shard};
use crate::serve::{table, watch};
use crate::state::shared::Shared;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::http_util::{json_response, raw_json_response};
use crate::wire::object;

fn encode_continue(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_continue(token: &str) -> ApiResult<(String, String)> {
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| {
            token
                .get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect();
    let text = bytes
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
    let (ns, name) = text
        .split_once('/')
        .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
    Ok((ns.to_string(), name.to_string()))
}

/// A list of the collection the URL names, with its selectors, `limit` and `continue`.
pub fn list(shared: &Shared, req: &Request) -> ApiResult<Response> {
    let rt = &req.target.rt;
    let (labels, fields) = selectors(req)?;
    let shard = shard(shared, req)?;
    let limit: usize = req.param("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
    let after = req
        .param("continue")
        .filter(|c| !c.is_empty())
        .map(decode_continue)
        .transpose()?;
    let metadata_only = req.metadata_only();
    let (objects, rv) = {
        let store = shared.lock();
        (
            store.list_after(&rt.key(), req.target.ns.as_deref(), after),
            store.current_rv(),
        )
    };
    let mut matching = objects
        .into_iter()
        .filter(|o| o.selected_by(&labels, &fields, &shard));
    let mut selected = Vec::new();
    let mut next = None;
    for o in matching.by_ref() {
        if limit > 0 && selected.len() == limit {
            next = Some(o);
            break;
        }
        selected.push(o);
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(info) = shard.info() {
        meta["shardInfo"] = info;
    }
    if next.is_some() {
        let remaining = 1 + matching.count();
        if let Some(last) = selected.last() {
            let last = last.value();
            meta["continue"] = json!(encode_continue(
                object::namespace(&last),
                object::name(&last)
            ));
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    if let Some(include) = req.table() {
        let parsed: Vec<Value> = selected.iter().map(|o| o.value()).collect();
        let refs: Vec<&Value> = parsed.iter().collect();
        return Ok(json_response(
            StatusCode::OK,
            &table::render(rt, &refs, meta, include),
        ));
    }
    let (api_version, kind) = if metadata_only {
        (
            "meta.k8s.io/v1".to_string(),
            "PartialObjectMetadataList".to_string(),
        )
    } else {
        (rt.api_version(), format!("{}List", rt.kind))
    };
    // The body `json!({"apiVersion", "items", "kind", "metadata"})` would be, in that key
    // order, with each item served as stored copied from its text instead of parsed.
    let mut body =
        Vec::with_capacity(selected.iter().map(|o| o.text_len() + 1).sum::<usize>() + 256);
    body.extend_from_slice(b"{\"apiVersion\":");
    body.extend_from_slice(json!(api_version).to_string().as_bytes());
    body.extend_from_slice(b",\"items\":[");
    for (i, o) in selected.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        if metadata_only {
            body.extend_from_slice(partial(&o.value()).to_string().as_bytes());
        } else if watch::served_as_stored(rt, o) {
            body.extend_from_slice(&o.text());
        } else {
            body.extend_from_slice(resources::serve(rt, &o.value()).to_string().as_bytes());
        }
    }
    body.extend_from_slice(b"],\"kind\":");
    body.extend_from_slice(json!(kind).to_string().as_bytes());
    body.extend_from_slice(b",\"metadata\":");
    body.extend_from_slice(meta.to_string().as_bytes());
    body.push(b'}');
    Ok(raw_json_response(StatusCode::OK, body))
}

/// A watch on the collection the URL names.
pub fn watch_collection(shared: Arc<Shared>, req: &Request) -> ApiResult<Response> {
    let (labels, fields) = selectors(req)?;
    let shard = shard(&shared, req)?;
    let rv = match req.param("resourceVersion").filter(|s| !s.is_empty()) {
        Some(s) => Some(
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {s:?}")))?,
        ),
        None => None,
    };
    let params = watch::WatchParams {
        rt: req.target.rt.clone(),
        ns: req.target.ns.clone(),
        labels,
        fields,
        shard,
        rv,
        bookmarks: req.flag("allowWatchBookmarks"),
        timeout: req
            .param("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .map(Duration::from_secs),
        send_initial: req.flag("sendInitialEvents"),
        metadata_only: req.metadata_only(),
        table: req.table(),
    };
    Ok(watch::start(shared, params))
}
