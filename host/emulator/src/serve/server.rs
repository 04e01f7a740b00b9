//! The HTTP server: the router, the middleware that keeps the request log, and the task serving
//! them (over TLS when the emulator is secure).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;

use crate::serve::access::{self, Denied};
use crate::serve::routes;
use crate::state::auth::{TlsListener, User};
use crate::state::config::RequestRecord;
use crate::state::shared::Shared;
use crate::wire::http_util::{form_pairs, no_delay};
use crate::workload;

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
    let user = resp.extensions().get::<User>().map(|u| u.name.clone());
    let denied = resp.extensions().get::<Denied>().map(|d| d.0.clone());
    tracing::debug!(%method, %path, %query, status = resp.status().as_u16(), user = user.as_deref().unwrap_or(""), "request");
    shared.record(RequestRecord {
        method,
        path,
        query,
        status: resp.status().as_u16(),
        field_manager,
        content_type,
        user_agent,
        user,
        denied,
    });
    resp
}

/// The router: one fallback handler that parses Kubernetes paths itself.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(routes::dispatch)
        .layer(middleware::from_fn_with_state(
            shared.config.faults.clone(),
            crate::state::faults::inject,
        ))
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            access::guard,
        ))
        .layer(middleware::from_fn_with_state(shared.clone(), log_requests))
        .with_state(shared)
}

fn report(served: std::io::Result<()>) {
    if let Err(e) = served {
        tracing::error!(error = %e, "emulator server stopped");
    }
}

/// The server task on one listener and the controllers' tasks beside it (the namespace
/// controller, and the workload simulation if configured); dropping it aborts them all.
pub struct Serving {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    namespaces: tokio::task::JoinHandle<()>,
    workload: Option<tokio::task::JoinHandle<()>>,
}

impl Serving {
    /// Serve `shared` on `listener`, run the namespace controller, and the workload simulation
    /// if configured.
    pub fn start(listener: tokio::net::TcpListener, shared: Arc<Shared>) -> Serving {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(shared.clone());
        let stopped = async {
            let _ = stopped.await;
        };
        let task = match shared.auth.as_ref() {
            None => tokio::spawn(async move {
                use axum::serve::ListenerExt;
                let listener = listener.tap_io(no_delay);
                report(
                    axum::serve(listener, app)
                        .with_graceful_shutdown(stopped)
                        .await,
                )
            }),
            Some(auth) => {
                let tls = TlsListener::new(listener, &auth.certificates);
                tokio::spawn(async move {
                    match tls {
                        Ok(tls) => {
                            report(axum::serve(tls, app).with_graceful_shutdown(stopped).await)
                        }
                        Err(e) => report(Err(e)),
                    }
                })
            }
        };
        let namespaces = tokio::spawn(workload::namespaces::run(shared.clone()));
        let workload = shared
            .config
            .workloads
            .clone()
            .map(|sim| tokio::spawn(workload::run(shared.clone(), sim)));
        Serving {
            stop: Some(stop),
            task,
            namespaces,
            workload,
        }
    }

    /// Stop the controllers' tasks, close the listener at once (new connections are refused), end
    /// every watch (again every 100 ms, for one that opened meanwhile) and wait up to 5 s for the
    /// requests in flight before aborting the server.
    pub async fn stop(&mut self, shared: &Shared) {
        self.namespaces.abort();
        if let Some(w) = self.workload.take() {
            w.abort();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            shared.drop_watches();
            if tokio::time::timeout(Duration::from_millis(100), &mut self.task)
                .await
                .is_ok()
            {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                self.task.abort();
                return;
            }
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.namespaces.abort();
        if let Some(w) = self.workload.take() {
            w.abort();
        }
        self.task.abort();
    }
}
