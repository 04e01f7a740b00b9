//! The four ways of running the Blog reconcile that the benchmarks compare, built once.
//!
//! Every variant starts from the same cached objects (`serde_json::Value`s,
//! as the host holds them) and ends with the desired children and status as
//! `Value`s, so each pays for its own encoding and decoding.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin, ReconcileRequest, ReusedInstance};
use weir_guest_sdk::{Child, testing};
use weir_plugin_blog::BlogReconciler;

/// The fixture used as input: a Blog at steady state with its three children
/// observed (the common case: a resync or a status change).
pub const FIXTURE: &str = "plugins/blog/fixtures/07-deployment-ready.yaml";

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The input objects, as the host's cache holds them.
pub struct Input {
    pub parent: Value,
    pub observed: Vec<Value>,
}

impl Input {
    pub fn load() -> anyhow::Result<Input> {
        let path = workspace().join(FIXTURE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let fixture = weir::offline::parse(&text)?;
        Ok(Input {
            parent: fixture.parent,
            observed: fixture.observed,
        })
    }

    /// Bytes of JSON in one request, for the table's caption.
    pub fn json_bytes(&self) -> usize {
        self.parent.to_string().len()
            + self
                .observed
                .iter()
                .map(|o| o.to_string().len())
                .sum::<usize>()
    }

    pub fn request(&self) -> ReconcileRequest {
        ReconcileRequest {
            clusters: Default::default(),
            parent: self.parent.to_string(),
            children: self.observed.iter().map(Value::to_string).collect(),
            related: Vec::new(),
        }
    }
}

/// The answer every variant produces: desired children and status.
pub type Answer = (Vec<Value>, Option<Value>);

/// (a) The Blog logic as a native Rust function, through the same JSON
/// conversion the component uses (the guest SDK's native entry point).
pub fn native(input: &Input) -> anyhow::Result<Answer> {
    native_of(&input.parent, input.observed.clone())
}

fn native_of(parent: &Value, observed: Vec<Value>) -> anyhow::Result<Answer> {
    let observed = observed.into_iter().map(Child::json).collect();
    let out = testing::reconcile::<BlogReconciler>(parent, observed)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok((out.children.into_iter().collect(), out.status))
}

/// The Blog component, loaded from `target/plugins/blog.wasm`.
pub fn blog_plugin(pooling: bool) -> anyhow::Result<Plugin> {
    let path = workspace().join("target/plugins/blog.wasm");
    anyhow::ensure!(
        path.exists(),
        "{} is missing: run plugins/build.sh first",
        path.display()
    );
    let engine = Engine::new(EngineConfig {
        pooling,
        ..EngineConfig::default()
    })?;
    Ok(engine.load_file(&path, Limits::default())?)
}

/// (b) A fresh instance per call, as the host runs reconciles.
pub fn wasm_fresh(plugin: &Plugin, input: &Input) -> anyhow::Result<Answer> {
    let answer = plugin.reconcile(&input.request())?;
    Ok((answer.children, answer.status))
}

/// (c) One instance reused across calls.
pub fn wasm_reused(instance: &mut ReusedInstance, input: &Input) -> anyhow::Result<Answer> {
    let answer = instance.reconcile(&input.request())?;
    Ok((answer.children, answer.status))
}

/// (d) The native logic behind a keep-alive HTTP endpoint on loopback: a
/// Metacontroller-style webhook at its best (no TLS, no network, one
/// connection held open).
pub struct Webhook {
    runtime: tokio::runtime::Runtime,
    sender: SendRequest<Full<Bytes>>,
}

async fn serve_reconcile(
    body: Bytes,
) -> Result<axum::Json<Value>, (axum::http::StatusCode, String)> {
    let bad = |e: String| (axum::http::StatusCode::BAD_REQUEST, e);
    let request: Value = serde_json::from_slice(&body).map_err(|e| bad(e.to_string()))?;
    let observed = request["children"].as_array().cloned().unwrap_or_default();
    let (children, status) =
        native_of(&request["parent"], observed).map_err(|e| bad(e.to_string()))?;
    Ok(axum::Json(json!({"children": children, "status": status})))
}

impl Webhook {
    /// Starts the server on 127.0.0.1 and opens one HTTP/1.1 connection to it.
    pub fn start() -> anyhow::Result<Webhook> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let sender = runtime.block_on(async {
            let listener =
                tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
            let addr = listener.local_addr()?;
            let app = Router::new().route("/reconcile", post(serve_reconcile));
            tokio::spawn(async move { axum::serve(listener, app).await });
            let stream = tokio::net::TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let (sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(connection);
            anyhow::Ok(sender)
        })?;
        Ok(Webhook { runtime, sender })
    }

    /// One reconcile over the kept connection.
    pub fn call(&mut self, input: &Input) -> anyhow::Result<Answer> {
        let body = json!({"parent": input.parent, "children": input.observed}).to_string();
        let request = hyper::Request::post("/reconcile")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))?;
        let sender = &mut self.sender;
        let bytes = self.runtime.block_on(async move {
            sender.ready().await?;
            let response = sender.send_request(request).await?;
            anyhow::ensure!(
                response.status().is_success(),
                "webhook answered {}",
                response.status()
            );
            anyhow::Ok(response.into_body().collect().await?.to_bytes())
        })?;
        let mut answer: Value = serde_json::from_slice(&bytes)?;
        let children = answer["children"].as_array().cloned().unwrap_or_default();
        Ok((
            children,
            answer
                .get_mut("status")
                .map(Value::take)
                .filter(|s| !s.is_null()),
        ))
    }
}

/// Checks that all variants agree before timing them, so the benchmark
/// compares equal work.
pub fn check_agree(answers: &[(&str, Answer)]) -> anyhow::Result<()> {
    let (first_name, first) = &answers[0];
    for (name, answer) in &answers[1..] {
        anyhow::ensure!(answer == first, "{name} disagrees with {first_name}");
    }
    Ok(())
}
