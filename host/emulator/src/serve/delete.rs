//! Deletes of one object or a collection, with what their `DeleteOptions` ask for: propagation
//! policy, preconditions, dry run.

use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::kinds::resources;
use crate::serve::request::{Request, selectors};
use crate::state::shared::Shared;
use crate::store::ObjKey;
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::http_util::json_response;
use crate::wire::object;
use crate::wire::shard_selector::ShardSelector;
use crate::write::gc::{self, Propagation};

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

/// Delete the object at `key`, after its `DeleteOptions.preconditions`.
pub fn delete(shared: &Shared, req: &Request, key: &ObjKey) -> ApiResult<Response> {
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

/// Delete every object of the collection the URL names that its selectors match.
pub fn delete_collection(shared: &Shared, req: &Request) -> ApiResult<Response> {
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
