//! URL routing: discovery, OpenAPI and resource paths parsed the way kube-apiserver lays them out.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode, Uri};

use crate::kinds::{discovery, openapi};
use crate::serve::handlers;
use crate::serve::request::{Request, Target};
use crate::serve::reviews;
use crate::state::auth::User;
use crate::state::shared::Shared;
use crate::wire::apierror::ApiError;
use crate::wire::http_util::{form_pairs, json_response};

fn not_found() -> Response {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .into_response()
}

fn parse_target(shared: &Shared, segs: &[&str]) -> Option<Target> {
    let (group, version, rest) = match segs {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return None,
    };
    let store = shared.lock();
    let reg = &store.registry;
    let namespaced = rest.len() >= 3
        && rest[0] == "namespaces"
        && reg
            .find(group, version, rest[2])
            .is_some_and(|t| t.namespaced);
    let (ns, tail) = if namespaced {
        (Some(rest[1].to_string()), &rest[2..])
    } else {
        (None, rest)
    };
    let (plural, name, sub) = match tail {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    let rt = reg.find(group, version, plural)?.clone();
    if (name.is_some() && rt.namespaced && ns.is_none()) || (!rt.namespaced && ns.is_some()) {
        return None;
    }
    Some(Target { rt, ns, name, sub })
}

/// The single handler behind the router.
pub async fn dispatch(
    State(shared): State<Arc<Shared>>,
    Extension(user): Extension<User>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().trim_end_matches('/');
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let get = method == Method::GET;
    match segs.as_slice() {
        ["version"] if get => return json_response(StatusCode::OK, &discovery::version()),
        ["healthz" | "readyz" | "livez", ..] if get => {
            return (StatusCode::OK, "ok").into_response();
        }
        ["api"] if get => {
            return json_response(StatusCode::OK, &discovery::core_versions(&shared.address()));
        }
        ["apis"] if get => {
            return json_response(
                StatusCode::OK,
                &discovery::group_list(&shared.lock().registry),
            );
        }
        ["apis", g] if get => {
            return match discovery::group(&shared.lock().registry, g) {
                Some(doc) => json_response(StatusCode::OK, &doc),
                None => not_found(),
            };
        }
        ["api", v] if get => return resource_list(&shared, "", v),
        ["apis", g, v] if get => return resource_list(&shared, g, v),
        [
            "apis",
            g @ ("authorization.k8s.io" | "authentication.k8s.io"),
            "v1",
            plural,
        ] if method == Method::POST => {
            return match reviews::answer(&shared, &user, g, plural, &body) {
                Some(review) => json_response(StatusCode::CREATED, &review),
                None => not_found(),
            };
        }
        [
            "api",
            "v1",
            "namespaces",
            ns,
            "serviceaccounts",
            name,
            "token",
        ] if method == Method::POST => {
            return token_request(&shared, ns, name, &body);
        }
        ["openapi", "v2"] if get => {
            let accept = headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let registry = shared.lock().registry.clone();
            let (content_type, body) = openapi::v2_document(&registry, accept);
            return ([(http::header::CONTENT_TYPE, content_type)], body).into_response();
        }
        ["openapi", "v3", rest @ ..] if get => {
            let sharded = shared.config.sharded_list_watch;
            return match openapi::document(&shared.lock().registry, &rest.join("/"), sharded) {
                Some(doc) => json_response(StatusCode::OK, &doc),
                None => not_found(),
            };
        }
        _ => {}
    }
    let Some(target) = parse_target(&shared, &segs) else {
        return not_found();
    };
    let query = uri.query().unwrap_or("").to_string();
    let req = Request {
        method,
        target,
        query: form_pairs(&query),
        headers,
        body,
    };
    match handlers::handle(shared, req).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// The TokenRequest API: a ServiceAccount token for a secure emulator (404 without one: there
/// are no tokens to check).
fn token_request(shared: &Shared, ns: &str, name: &str, body: &[u8]) -> Response {
    let Some(auth) = &shared.auth else {
        return not_found();
    };
    match auth.token_request(&shared.lock(), ns, name, body) {
        Some(review) => json_response(StatusCode::CREATED, &review),
        None => ApiError::not_found("", "serviceaccounts", name).into_response(),
    }
}

fn resource_list(shared: &Shared, group: &str, version: &str) -> Response {
    let tokens = shared.auth.is_some();
    match discovery::resource_list(&shared.lock().registry, group, version, tokens) {
        Some(doc) => json_response(StatusCode::OK, &doc),
        None => not_found(),
    }
}
