//! The gate in front of every request when the emulator is secure: authentication (401),
//! RBAC authorization (403), and the owner-reference check of kube-apiserver's
//! `OwnerReferencesPermissionEnforcement` admission plugin (setting `blockOwnerDeletion`
//! needs `update` on the owner's `finalizers`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::kinds::resources::ResKey;
use crate::state::auth::User;
use crate::state::auth::rbac::{self, Attributes, ResourceAttributes};
use crate::state::shared::Shared;
use crate::store::ObjKey;
use crate::wire::apierror::ApiError;

/// The message of a 401 or 403 answer, for the request log.
#[derive(Clone, Debug)]
pub struct Denied(pub String);

/// The largest body the owner-reference check reads (kube-apiserver's limit is 3 MiB).
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Authenticate, authorize and admit `req`; the [`User`] is put in the request's extensions
/// (and the response's, for the request log). Without `secure`, every caller is the admin.
pub async fn guard(State(shared): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    let Some(auth) = &shared.auth else {
        req.extensions_mut().insert(User::admin());
        return with_user(next.run(req).await, User::admin());
    };
    let user = match bearer(req.headers()) {
        None => User::anonymous(),
        Some(token) => match auth.authenticate(token, &shared.lock()) {
            Some(user) => user,
            None => return unauthorized(),
        },
    };
    let attrs = Attributes::of_request(
        req.method(),
        req.uri().path(),
        req.uri().query().unwrap_or(""),
    );
    let decision = rbac::authorize(&shared.lock(), &user, &attrs);
    if !decision.allowed {
        tracing::debug!(user = %user.name, denial = %attrs.denial(&user.name), "forbidden");
        return with_user(forbidden(&attrs, attrs.denial(&user.name)), user);
    }
    if let Some(r) = attrs.resource.as_ref().filter(|r| {
        matches!(attrs.verb.as_str(), "create" | "update" | "patch") && r.subresource.is_empty()
    }) {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
            Ok(b) => b,
            Err(e) => {
                return ApiError::bad_request(format!("reading the body: {e}")).into_response();
            }
        };
        if let Some(denial) = owner_references_denied(&shared, &user, r, &bytes) {
            return with_user(forbidden(&attrs, denial), user);
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    req.extensions_mut().insert(user.clone());
    with_user(next.run(req).await, user)
}

fn with_user(mut resp: Response, user: User) -> Response {
    resp.extensions_mut().insert(user);
    resp
}

fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn unauthorized() -> Response {
    let err = ApiError::new(401, "Unauthorized", "Unauthorized");
    let mut resp = err.clone().into_response();
    resp.extensions_mut().insert(Denied(err.message));
    resp
}

/// kube-apiserver's 403: `RESOURCE[.GROUP] ["NAME" ]is forbidden: WHY`, or `forbidden: WHY` for
/// a non-resource path.
fn forbidden(attrs: &Attributes, why: String) -> Response {
    let err = match &attrs.resource {
        None => ApiError::new(403, "Forbidden", format!("forbidden: {why}")),
        Some(r) => {
            let qualified = if r.group.is_empty() {
                r.resource.clone()
            } else {
                format!("{}.{}", r.resource, r.group)
            };
            let message = if r.name.is_empty() {
                format!("{qualified} is forbidden: {why}")
            } else {
                format!("{qualified} {:?} is forbidden: {why}", r.name)
            };
            let mut details = json!({"kind": r.resource});
            if !r.group.is_empty() {
                details["group"] = json!(r.group);
            }
            if !r.name.is_empty() {
                details["name"] = json!(r.name);
            }
            ApiError::new(403, "Forbidden", message).with_details(details)
        }
    };
    let message = err.message.clone();
    let mut resp = err.into_response();
    resp.extensions_mut().insert(Denied(message));
    resp
}

/// Why the owner references of a write are refused: a reference newly setting
/// `blockOwnerDeletion` to an owner whose `finalizers` the user may not update.
fn owner_references_denied(
    shared: &Shared,
    user: &User,
    target: &ResourceAttributes,
    body: &[u8],
) -> Option<String> {
    let object: Value = serde_json::from_slice(body).ok()?;
    let refs = object["metadata"]["ownerReferences"].as_array()?;
    let name = if target.name.is_empty() {
        object["metadata"]["name"].as_str().unwrap_or_default()
    } else {
        &target.name
    };
    let store = shared.lock();
    let stored = store.get(&ObjKey {
        res: ResKey {
            group: target.group.clone(),
            plural: target.resource.clone(),
        },
        ns: target.namespace.clone(),
        name: name.to_string(),
    });
    let already_blocking = |uid: &str| {
        stored.as_ref().is_some_and(|s| {
            s["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|old| {
                    old.iter()
                        .any(|o| o["uid"] == uid && o["blockOwnerDeletion"] == true)
                })
        })
    };
    for owner in refs.iter().filter(|o| o["blockOwnerDeletion"] == true) {
        if already_blocking(owner["uid"].as_str().unwrap_or_default()) {
            continue;
        }
        let api_version = owner["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let kind = owner["kind"].as_str().unwrap_or_default();
        let Some(owner_type) = store
            .registry
            .all()
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
        else {
            continue;
        };
        let attrs = Attributes {
            verb: "update".into(),
            path: String::new(),
            resource: Some(ResourceAttributes {
                namespace: target.namespace.clone(),
                group: group.into(),
                resource: owner_type.plural.clone(),
                subresource: "finalizers".into(),
                name: owner["name"].as_str().unwrap_or_default().into(),
            }),
        };
        if !rbac::authorize(&store, user, &attrs).allowed {
            return Some(format!(
                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {}",
                attrs.denial(&user.name)
            ));
        }
    }
    None
}
