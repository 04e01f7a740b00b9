//! The operations endpoint: `/metrics` (Prometheus), `/healthz` (alive) and `/readyz` (caches synced).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// The server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding the listen address failed.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Whether the host is ready to serve (every cache has its first full list).
pub type Readiness = Arc<dyn Fn() -> bool + Send + Sync>;

#[derive(Clone)]
struct Ops {
    metrics: Arc<Metrics>,
    ready: Readiness,
}

async fn metrics_handler(State(ops): State<Ops>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], ops.metrics.encode())
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(ops): State<Ops>) -> (StatusCode, &'static str) {
    if (ops.ready)() { (StatusCode::OK, "ok") } else { (StatusCode::SERVICE_UNAVAILABLE, "caches not synced") }
}

/// Binds `addr` and serves until `stop` is cancelled. Returns the bound address (port 0 picks one).
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>, ready: Readiness, stop: CancellationToken) -> Result<SocketAddr, ServerError> {
    serve_with(addr, metrics, ready, stop, Router::new()).await
}

/// [`serve`] plus the routes of `extra` (hot-loading adds `/plugins`).
pub async fn serve_with(addr: SocketAddr, metrics: Arc<Metrics>, ready: Readiness, stop: CancellationToken, extra: Router) -> Result<SocketAddr, ServerError> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServerError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(|source| ServerError::Bind { addr, source })?;
    let app = Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(Ops { metrics, ready })
        .merge(extra);
    tokio::spawn(async move {
        let served = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "operations server stopped");
        }
    });
    Ok(bound)
}
