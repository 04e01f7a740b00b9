//! Resource requests: get, list, watch, create, update, patch, delete, and the `/status` and `/scale` subresources.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use crate::kinds::resources::{self, ResourceType};
use crate::serve::{scale, table, watch};
use crate::state::shared::Shared;
use crate::store::ObjKey;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::http_util::{is_true, json_response, raw_json_response};
use crate::wire::object;
use crate::wire::selector::{FieldSelector, LabelSelector};
use crate::wire::shard_selector::{self, ShardSelector};
use crate::write::gc::{self, Propagation};
use crate::write::ops::{self, Outcome, PatchType};
use crate::write::opts::{Validation, WriteOpts};

/// A parsed resource URL.
pub struct Target {
    /// The served resource type.
    pub rt: ResourceType,
    /// Namespace from the URL, if any.
    pub ns: Option<String>,
    /// Object name, if the URL names one.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`), if any.
    pub sub: Option<String>,
}

/// One parsed resource request.
pub struct Request {
    /// HTTP method.
    pub method: Method,
    /// What the URL names.
    pub target: Target,
    /// Decoded query parameters.
    pub query: Vec<(String, String)>,
    /// Request headers.
    pub headers: HeaderMap,
    /// Raw body.
    pub body: Bytes,
}

impl Request {
    fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        self.param(name).is_some_and(is_true)
    }

    fn header(&self, name: http::header::HeaderName) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    fn metadata_only(&self) -> bool {
        self.header(http::header::ACCEPT)
            .contains("as=PartialObjectMetadata")
    }

    fn table(&self) -> Option<table::Include> {
        table::wanted(self.header(http::header::ACCEPT))
            .then(|| table::Include::parse(self.param("includeObject")))
    }

    fn write_opts(&self) -> WriteOpts {
        let agent = self.header(http::header::USER_AGENT);
        let default_manager = agent
            .split('/')
            .next()
            .filter(|s| !s.is_empty())
            .unwrap_or("unknown")
            .to_string();
        WriteOpts {
            manager: self
                .param("fieldManager")
                .map(String::from)
                .unwrap_or(default_manager),
            validation: match self.param("fieldValidation") {
                Some("Strict") => Validation::Strict,
                Some("Ignore") => Validation::Ignore,
                _ => Validation::Warn,
            },
            dry_run: self.param("dryRun") == Some("All"),
            force: self.flag("force"),
        }
    }

    fn key(&self) -> Option<ObjKey> {
        let name = self.target.name.clone()?;
        Some(ObjKey {
            res: self.target.rt.key(),
            ns: self.target.ns.clone().unwrap_or_default(),
            name,
        })
    }

    fn json_body(&self) -> ApiResult<Value> {
        let ct = self.header(http::header::CONTENT_TYPE);
        if ct.contains("protobuf") {
            // kubectl's generators (`create namespace`, `create configmap`, ...) send protobuf.
            return crate::wire::protobuf::decode(&self.body)
                .map_err(|e| ApiError::new(415, "UnsupportedMediaType", e.to_string()));
        }
        if ct.contains("cbor") {
            return Err(ApiError::unsupported_media(ct));
        }
        serde_json::from_slice(&self.body)
            .or_else(|_| crate::wire::yaml::from_slice(&self.body))
            .map_err(|e| {
                ApiError::bad_request(format!("the request body could not be decoded: {e}"))
            })
    }
}

fn selectors(req: &Request) -> ApiResult<(LabelSelector, FieldSelector)> {
    let labels = LabelSelector::parse(req.param("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
    let fields = FieldSelector::parse(req.param("fieldSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
    // A custom resource supports only these two field labels (plus the CRD's
    // `selectableFields`, not read here); kube-apiserver refuses any other with 400.
    if req.target.rt.from_crd
        && let Some(f) = fields
            .fields()
            .find(|f| !matches!(*f, "metadata.name" | "metadata.namespace"))
    {
        return Err(ApiError::bad_request(format!(
            "field label not supported: {f}"
        )));
    }
    Ok((labels, fields))
}

/// The request's `shardSelector` when the emulator serves it (empty otherwise: an unknown
/// parameter is ignored, as by a server without the feature).
fn shard(shared: &Shared, req: &Request) -> ApiResult<ShardSelector> {
    match req.param(shard_selector::PARAM) {
        Some(text) if shared.config.sharded_list_watch => {
            ShardSelector::parse(text).map_err(|e| ApiError::bad_request(e.to_string()))
        }
        _ => Ok(ShardSelector::default()),
    }
}

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

fn partial(obj: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))})
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
            let out = ops::create(
                &mut shared.lock(),
                &rt,
                &ns,
                req.json_body()?,
                &req.write_opts(),
            )?;
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
            let out = ops::update(
                &mut shared.lock(),
                &rt,
                &key,
                req.json_body()?,
                status,
                &req.write_opts(),
            )?;
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
            let out = ops::patch(
                &mut shared.lock(),
                &rt,
                &key,
                ptype,
                &req.body,
                status,
                &opts,
            )?;
            Ok(outcome_response(&rt, out, req.metadata_only()))
        }
        (&Method::DELETE, Some(key), None) => delete(&shared, &req, &key),
        _ => Err(ApiError::method_not_allowed()),
    }
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

fn list(shared: &Shared, req: &Request) -> ApiResult<Response> {
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

fn watch_collection(shared: Arc<Shared>, req: &Request) -> ApiResult<Response> {
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

/// What a DELETE asks for, from its `DeleteOptions` body and query.
struct DeleteOptions {
    /// `propagationPolicy` (or `orphanDependents`), Background by default.
    policy: Propagation,
    /// `preconditions` (uid, resourceVersion), or null.
    preconditions: Value,
    /// `dryRun: [All]` in the body or `dryRun=All` in the query (kubectl sends the body):
    /// answer as if deleted, delete nothing.
    dry_run: bool,
}

fn delete_options(req: &Request) -> ApiResult<DeleteOptions> {
    let body: Value = if req.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        req.json_body()?
    };
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(req.param("propagationPolicy"))
        .map(|p| {
            Propagation::parse(p)
                .ok_or_else(|| ApiError::bad_request(format!("invalid propagationPolicy {p:?}")))
        })
        .transpose()?
        .or_else(|| {
            (body.get("orphanDependents").and_then(Value::as_bool) == Some(true))
                .then_some(Propagation::Orphan)
        })
        .unwrap_or(Propagation::Background);
    let dry_run = req.param("dryRun") == Some("All")
        || body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        policy,
        preconditions: body.get("preconditions").cloned().unwrap_or(Value::Null),
        dry_run,
    })
}

fn delete(shared: &Shared, req: &Request, key: &ObjKey) -> ApiResult<Response> {
    let rt = &req.target.rt;
    let DeleteOptions {
        policy,
        preconditions: pre,
        dry_run,
    } = delete_options(req)?;
    let mut store = shared.lock();
    let current = store
        .get(key)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
    for (field, actual) in [
        ("uid", object::uid(&current)),
        ("resourceVersion", object::resource_version(&current)),
    ] {
        if let Some(want) = pre.get(field).and_then(Value::as_str)
            && want != actual
        {
            let label = if field == "uid" {
                "UID"
            } else {
                "ResourceVersion"
            };
            return Err(ApiError::conflict(
                &rt.group,
                &rt.plural,
                &key.name,
                &format!(
                    "Precondition failed: {label} in precondition: {want}, {label} in object meta: {actual}"
                ),
            ));
        }
    }
    if dry_run {
        return Ok(json_response(
            StatusCode::OK,
            &resources::serve(rt, &current),
        ));
    }
    let (obj, removed) = gc::delete(&mut store, key, policy)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
    gc::settle(&mut store);
    if removed {
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                            "details": {"name": key.name, "group": rt.group, "kind": rt.plural, "uid": object::uid(&obj)}});
        return Ok(json_response(StatusCode::OK, &status));
    }
    Ok(json_response(StatusCode::OK, &resources::serve(rt, &obj)))
}

fn delete_collection(shared: &Shared, req: &Request) -> ApiResult<Response> {
    let rt = &req.target.rt;
    let (labels, fields) = selectors(req)?;
    let opts = delete_options(req)?;
    let mut store = shared.lock();
    let victims: Vec<Value> = store
        .list(&rt.key(), req.target.ns.as_deref())
        .into_iter()
        .filter(|o| o.selected_by(&labels, &fields, &ShardSelector::default()))
        .map(|o| o.value())
        .collect();
    let mut items = Vec::new();
    for o in victims {
        if opts.dry_run {
            items.push(resources::serve(rt, &o));
            continue;
        }
        let key = ObjKey {
            res: rt.key(),
            ns: object::namespace(&o).to_string(),
            name: object::name(&o).to_string(),
        };
        if let Some((last, _)) = gc::delete(&mut store, &key, opts.policy) {
            items.push(resources::serve(rt, &last));
        }
    }
    gc::settle(&mut store);
    let rv = store.current_rv().to_string();
    Ok(json_response(
        StatusCode::OK,
        &json!({"apiVersion": rt.api_version(), "kind": format!("{}List", rt.kind), "metadata": {"resourceVersion": rv}, "items": items}),
    ))
}
