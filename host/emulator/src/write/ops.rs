//! The write operations with kube-apiserver's rules: create, update, patch, apply, delete.

use serde_json::{Value, json};

use crate::kinds::resources::{ResourceType, serve, served, to_storage};
use crate::store::{ObjKey, Store};
use crate::wire::apierror::{ApiError, ApiResult};
use crate::wire::object;
use crate::write::apply::{self, Scope};
use crate::write::opts::WriteOpts;
use crate::write::track;
use crate::write::{admission, crd, defaults, gc, namespace, patch};

/// What a write produced.
#[derive(Debug)]
pub struct Outcome {
    /// The object as stored (or as it would be, for a dry run).
    pub object: Value,
    /// Whether the write created the object (201 instead of 200).
    pub created: bool,
    /// Texts for `Warning: 299` headers.
    pub warnings: Vec<String>,
}

/// The patch formats kube-apiserver accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 7386 JSON merge patch.
    Merge,
    /// RFC 6902 JSON patch.
    Json,
    /// Kubernetes strategic merge patch.
    Strategic,
    /// Server-side apply.
    Apply,
}

impl PatchType {
    /// The patch type named by a request's Content-Type.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let base = ct.split(';').next().unwrap_or("").trim();
        Some(match base {
            "application/merge-patch+json" => PatchType::Merge,
            "application/json-patch+json" => PatchType::Json,
            "application/strategic-merge-patch+json" => PatchType::Strategic,
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => PatchType::Apply,
            _ => return None,
        })
    }

    /// `body` decoded as this type's document, done before the store is locked so that other
    /// requests go on meanwhile: an apply configuration is YAML (JSON, what most clients send,
    /// is read as JSON first, and only text JSON cannot read goes to the YAML parser), the other
    /// patches JSON. A decoding error is answered where [`patch`] meets it, so a patch of a
    /// missing object still answers 404 first.
    pub fn decode(self, body: &[u8]) -> ApiResult<Value> {
        let what = match self {
            PatchType::Apply => {
                return serde_json::from_slice(body)
                    .or_else(|_| crate::wire::yaml::from_slice(body))
                    .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")));
            }
            PatchType::Merge => "merge patch",
            PatchType::Json => "JSON patch",
            PatchType::Strategic => "strategic merge patch",
        };
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding {what}: {e}")))
    }
}

fn scope_for(rt: &ResourceType, status: bool) -> Scope {
    if status {
        Scope::Status
    } else {
        Scope::Main {
            has_status: rt.has_status,
        }
    }
}

/// Create an object posted to a collection.
pub fn create(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    body: Value,
    opts: &WriteOpts,
) -> ApiResult<Outcome> {
    create_inner(store, rt, ns, body, opts, true)
}

fn create_inner(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    mut body: Value,
    opts: &WriteOpts,
    track: bool,
) -> ApiResult<Outcome> {
    admission::check_type(rt, &body)?;
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the body of a create must be an object",
        ));
    }
    let mut name = object::name(&body).to_string();
    if name.is_empty() {
        let prefix = body
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if prefix.is_empty() {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                "",
                vec![(
                    "metadata.name".into(),
                    "Required value: name or generateName is required".into(),
                )],
            ));
        }
        name = format!("{prefix}{}", admission::random_suffix(store));
    }
    let body_ns = object::namespace(&body).to_string();
    if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if rt.namespaced && !namespace_exists(store, ns) {
        return Err(ApiError::not_found("", "namespaces", ns));
    }
    if rt.namespaced && namespace::is_terminating(store, ns) {
        // The name kube-apiserver's lifecycle admission names: the generateName prefix when the
        // name is still to be generated.
        let asked = match object::name(&body) {
            "" => body
                .pointer("/metadata/generateName")
                .and_then(Value::as_str)
                .unwrap_or(""),
            given => given,
        };
        return Err(namespace::refuse_create(&rt.group, &rt.plural, asked, ns));
    }
    let key = ObjKey {
        res: rt.key(),
        ns: if rt.namespaced {
            ns.to_string()
        } else {
            String::new()
        },
        name: name.clone(),
    };
    if store.contains(&key) {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
    }
    if !object::resource_version(&body).is_empty() {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut warnings = Vec::new();
    let uid = store.new_uid();
    let now = object::now_rfc3339();
    body = served(rt, body);
    if let Some(meta) = object::metadata_mut(&mut body) {
        meta.insert("name".into(), json!(name));
        if rt.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        meta.insert("uid".into(), json!(uid));
        meta.insert("creationTimestamp".into(), json!(now));
        meta.insert("generation".into(), json!(1));
        meta.remove("deletionTimestamp");
    }
    if rt.has_status
        && let Some(m) = body.as_object_mut()
    {
        m.remove("status");
    }
    admission::validate(rt, &mut body, opts, &mut warnings)?;
    if track {
        track::track_update(None, &mut body, &opts.manager, scope_for(rt, false), &now);
    }
    defaults::apply(rt, &mut body, store, None);
    if rt.kind == "CustomResourceDefinition" {
        crd::set_status(&mut body);
    }
    if opts.dry_run {
        return Ok(Outcome {
            object: body,
            created: true,
            warnings,
        });
    }
    if rt.kind == "CustomResourceDefinition" {
        crd::register(store, &body);
    }
    let stored = store.put(&key, to_storage(rt, body));
    gc::collect_if_orphaned(store, &key, &stored);
    gc::settle(store);
    Ok(Outcome {
        object: stored,
        created: true,
        warnings,
    })
}

/// Whether a namespace object exists.
pub fn namespace_exists(store: &Store, ns: &str) -> bool {
    store.contains(&namespace::key(ns))
}

/// Replace an object (PUT), on the main endpoint or `/status`.
pub fn update(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    body: Value,
    status: bool,
    opts: &WriteOpts,
) -> ApiResult<Outcome> {
    admission::check_type(rt, &body)?;
    let old = store
        .get(key)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, &key.name))?;
    update_read(store, rt, key, &old, body, status, opts)
}

/// [`update`] of `old`, the object stored at `key` as its caller read it under the same lock,
/// so that it is not parsed again (the workload simulation reads what it writes); `body`'s
/// type is not checked.
pub fn update_read(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    old: &Value,
    body: Value,
    status: bool,
    opts: &WriteOpts,
) -> ApiResult<Outcome> {
    let name = object::name(&body);
    if !name.is_empty() && name != key.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            key.name
        )));
    }
    ApiError::check_resource_version(
        &rt.group,
        &rt.plural,
        &key.name,
        object::resource_version(&body),
        object::resource_version(old),
    )?;
    commit(store, rt, key, old, body, status, opts, true)
}

/// An update of `/status` to `status` over `old`, the object stored at `key` as its caller read
/// it under the same lock: what [`update_read`] of `old` with its status replaced by `status`
/// stores, without the caller copying the whole object to say so.
pub fn update_status_read(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    old: &Value,
    status: Value,
    opts: &WriteOpts,
) -> ApiResult<Outcome> {
    // Name and resourceVersion are `old`'s own: [`update_read`]'s checks of them pass.
    commit(
        store,
        rt,
        key,
        old,
        json!({ "status": status }),
        true,
        opts,
        true,
    )
}

/// Apply a patch of any type, its body decoded by [`PatchType::decode`]; server-side apply may
/// create the object.
pub fn patch(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    ptype: PatchType,
    decoded: ApiResult<Value>,
    status: bool,
    opts: &WriteOpts,
) -> ApiResult<Outcome> {
    let old = store.get(key);
    let now = object::now_rfc3339();
    if ptype == PatchType::Apply {
        let mut cfg = decoded?;
        // kube-apiserver takes the name from the URL when the apply configuration omits it
        // (kube-lease-manager applies Leases that way).
        if object::name(&cfg).is_empty()
            && let Some(meta) = object::metadata_mut(&mut cfg)
        {
            meta.insert("name".into(), json!(key.name));
        }
        admission::check_type(rt, &cfg)?;
        if cfg.get("apiVersion").is_none() || cfg.get("kind").is_none() {
            return Err(ApiError::bad_request(
                "apiVersion and kind must be set in an apply configuration",
            ));
        }
        let cfg_name = object::name(&cfg);
        if cfg_name != key.name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({cfg_name}) does not match the name on the URL ({})",
                key.name
            )));
        }
        let scope = scope_for(rt, status);
        let old_served = old.as_ref().map(|o| serve(rt, o));
        let applied = apply::apply(old_served.as_ref(), &cfg, &opts.manager, opts.force, scope, &now).map_err(|e| {
            let causes: Vec<Value> = match &e {
                apply::Error::Conflicts(c) => c
                    .iter()
                    .map(|(m, p)| json!({"type": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": crate::wire::fieldset::display(p)}))
                    .collect(),
            };
            ApiError::new(409, "Conflict", e.to_string()).with_details(json!({"name": key.name, "group": rt.group, "kind": rt.plural, "causes": causes}))
        })?;
        return match old {
            None if status => Err(ApiError::not_found(&rt.group, &rt.plural, &key.name)),
            None => create_inner(store, rt, &key.ns, applied, opts, false),
            Some(old) => commit(store, rt, key, &old, applied, status, opts, false),
        };
    }
    let Some(old) = old else {
        return Err(ApiError::not_found(&rt.group, &rt.plural, &key.name));
    };
    let mut doc = serve(rt, &old);
    match ptype {
        PatchType::Merge => {
            json_patch::merge(&mut doc, &decoded?);
        }
        PatchType::Json => {
            let ops = decoded?;
            let p: json_patch::Patch =
                serde_json::from_value(admission::tolerate_null_tests(&doc, ops)).map_err(|e| {
                    ApiError::bad_request(format!("error decoding JSON patch: {e}"))
                })?;
            json_patch::patch(&mut doc, &p).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
        }
        PatchType::Strategic => {
            let p = decoded?;
            if rt.from_crd {
                return Err(ApiError::unsupported_media(
                    "application/strategic-merge-patch+json (not supported for custom resources)",
                ));
            }
            patch::strategic_merge(&mut doc, &p);
        }
        PatchType::Apply => {}
    }
    ApiError::check_resource_version(
        &rt.group,
        &rt.plural,
        &key.name,
        object::resource_version(&doc),
        object::resource_version(&old),
    )?;
    commit(store, rt, key, &old, doc, status, opts, true)
}

/// Turn a requested new state into the stored one: scope to main/status, keep immutable metadata,
/// bump generation, track managers, and finish a deletion whose finalizers are gone.
#[expect(clippy::too_many_arguments, reason = "the full context of one write")]
fn commit(
    store: &mut Store,
    rt: &ResourceType,
    key: &ObjKey,
    old: &Value,
    requested: Value,
    status: bool,
    opts: &WriteOpts,
    track: bool,
) -> ApiResult<Outcome> {
    let now = object::now_rfc3339();
    let mut new = if status {
        let mut n = old.clone();
        match requested.get("status") {
            Some(s) => object::set_path(&mut n, ".status", s.clone()),
            None => {
                if let Some(m) = n.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        if !track
            && let Some(mf) = requested.pointer("/metadata/managedFields")
            && let Some(meta) = object::metadata_mut(&mut n)
        {
            meta.insert("managedFields".into(), mf.clone());
        }
        n
    } else {
        let mut n = served(rt, requested);
        if rt.has_status {
            match old.get("status") {
                Some(s) => object::set_path(&mut n, ".status", s.clone()),
                None => {
                    if let Some(m) = n.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        n
    };
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
    ] {
        let value = old.pointer(&format!("/metadata/{field}")).cloned();
        if let Some(meta) = object::metadata_mut(&mut new) {
            match value {
                Some(v) => meta.insert(field.into(), v),
                None => meta.remove(field),
            };
        }
    }
    let mut warnings = Vec::new();
    admission::validate(rt, &mut new, opts, &mut warnings)?;
    if track {
        track::track_update(
            Some(old),
            &mut new,
            &opts.manager,
            scope_for(rt, status),
            &now,
        );
    }
    defaults::apply(rt, &mut new, store, Some(old));
    let mut new = to_storage(rt, new);
    let spec_changed = !object::same_spec(old, &new, rt.has_status);
    if spec_changed && let Some(meta) = object::metadata_mut(&mut new) {
        meta.insert("generation".into(), json!(object::generation(old) + 1));
    }
    if rt.kind == "CustomResourceDefinition" {
        crd::set_status(&mut new);
    }
    if new == *old {
        return Ok(Outcome {
            object: new,
            created: false,
            warnings,
        });
    }
    if opts.dry_run {
        return Ok(Outcome {
            object: new,
            created: false,
            warnings,
        });
    }
    if object::is_deleting(&new) && gc::may_remove(key, &new) {
        store.pending_owners.remove(key);
        let last = store.remove(key).unwrap_or(new);
        gc::settle(store);
        return Ok(Outcome {
            object: last,
            created: false,
            warnings,
        });
    }
    if rt.kind == "CustomResourceDefinition" {
        crd::register(store, &new);
    }
    let stored = store.put_over(key, new, old);
    gc::collect_if_orphaned(store, key, &stored);
    gc::settle(store);
    Ok(Outcome {
        object: stored,
        created: false,
        warnings,
    })
}
