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
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        ops.metrics.encode(),
    )
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(ops): State<Ops>) -> (StatusCode, &'static str) {
    if (ops.ready)() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}

/// Binds `addr` and serves until `stop` is cancelled. Returns the bound address (port 0 picks one).
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Readiness,
    stop: CancellationToken,
) -> Result<SocketAddr, ServerError> {
    let bound = Bound::bind(addr, metrics, ready, Router::new()).await?;
    let at = bound.addr;
    tokio::spawn(bound.serve(stop));
    Ok(at)
}

/// The operations server, its address bound, not serving yet.
pub struct Bound {
    listener: tokio::net::TcpListener,
    app: Router,
    /// The bound address (port 0 picks one).
    pub addr: SocketAddr,
}

impl Bound {
    /// Binds `addr` for `/metrics`, `/healthz`, `/readyz` and the routes of `extra`.
    pub async fn bind(
        addr: SocketAddr,
        metrics: Arc<Metrics>,
        ready: Readiness,
        extra: Router,
    ) -> Result<Self, ServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let app = Router::new()
            .route("/metrics", get(metrics_handler))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(Ops { metrics, ready })
            .merge(extra);
        Ok(Self {
            listener,
            app,
            addr: bound,
        })
    }

    /// Serves until `stop`; requests in flight then are answered.
    pub async fn serve(self, stop: CancellationToken) {
        let served = axum::serve(self.listener, self.app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "operations server stopped");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn readyz_follows_the_caches_and_metrics_are_served() {
        let synced = Arc::new(AtomicBool::new(false));
        let ready: Readiness = {
            let synced = synced.clone();
            Arc::new(move || synced.load(Ordering::Relaxed))
        };
        let metrics = Arc::new(Metrics::new());
        metrics.wrote("blog", "apply", "configmaps");
        let stop = CancellationToken::new();
        let addr = serve("127.0.0.1:0".parse().unwrap(), metrics, ready, stop.clone())
            .await
            .unwrap();
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.0 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.0 503"));
        synced.store(true, Ordering::Relaxed);
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.0 200"));
        assert!(get(addr, "/metrics").await.contains(
            r#"weir_api_writes_total{plugin="blog",verb="apply",resource="configmaps"} 1"#
        ));
        stop.cancel();
    }
}
