//! The HTTP server: the router and the middleware that keeps the request log.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;

use crate::config::RequestRecord;
use crate::http_util::form_pairs;
use crate::routes;
use crate::shared::Shared;

async fn log_requests(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let content_type = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let user_agent = req
        .headers()
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let field_manager = form_pairs(&query)
        .into_iter()
        .find(|(k, _)| k == "fieldManager")
        .map(|(_, v)| v);
    let resp = next.run(req).await;
    tracing::debug!(%method, %path, %query, status = resp.status().as_u16(), "request");
    shared.record(RequestRecord {
        method,
        path,
        query,
        status: resp.status().as_u16(),
        field_manager,
        content_type,
        user_agent,
    });
    resp
}

/// The router: one fallback handler that parses Kubernetes paths itself.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(routes::dispatch)
        .layer(middleware::from_fn_with_state(
            shared.config.faults.clone(),
            crate::faults::inject,
        ))
        .layer(middleware::from_fn_with_state(shared.clone(), log_requests))
        .with_state(shared)
}
