//! ④ The plugin call: off the async executor, under a semaphore, inside the reconcile's span.
//!
//! Plugin calls block for up to their timeout; running them on the executor's threads would
//! stall every watch and worker, so they go to `spawn_blocking` with a bounded number in flight.

use std::sync::Arc;
use std::time::Instant;

use kube::api::DynamicObject;
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::metrics::Metrics;
use crate::plugin::{
    ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
};

/// A plugin failure as the reconcile loop sees it: retry or report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PluginError {
    /// Whether retrying can help.
    pub kind: ErrorKind,
    /// What went wrong, naming the plugin.
    pub message: String,
    /// Whether the plugin answered but the answer broke the contract (refused, nothing written).
    pub refused: bool,
}

impl PluginError {
    /// A failure the plugin (or the call) reported.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            refused: false,
        }
    }

    /// An answer the host refused: permanent, nothing written.
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Permanent,
            message: message.into(),
            refused: true,
        }
    }
}

fn from_call(e: crate::plugin::CallError) -> PluginError {
    match e {
        crate::plugin::CallError::InvalidResponse { .. }
        | crate::plugin::CallError::ResponseTooLarge { .. } => PluginError::refused(e.to_string()),
        e => PluginError::new(e.kind(), e.to_string()),
    }
}

/// What the host needs from a reconcile step: the sandboxed plugin, or a native stand-in in tests.
pub trait Reconciler: Send + Sync + 'static {
    /// What the plugin declared at load.
    fn info(&self) -> &PluginInfo;
    /// One reconcile. Blocking.
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError>;
    /// One cleanup step. Blocking.
    fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, PluginError>;
}

impl Reconciler for crate::plugin::Plugin {
    fn info(&self) -> &PluginInfo {
        crate::plugin::Plugin::info(self)
    }

    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        crate::plugin::Plugin::reconcile(self, req).map_err(from_call)
    }

    fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        crate::plugin::Plugin::finalize(self, req).map_err(from_call)
    }
}

/// Calls one plugin with bounded concurrency.
pub struct Invoker {
    plugin: Arc<dyn Reconciler>,
    permits: Arc<Semaphore>,
    metrics: Arc<Metrics>,
}

fn to_json(obj: &DynamicObject) -> String {
    // A DynamicObject is a JSON value already: serialising it cannot fail.
    serde_json::to_string(obj).unwrap_or_default()
}

impl Invoker {
    /// An invoker sharing `permits` with the host's other plugins.
    pub fn new(
        plugin: Arc<dyn Reconciler>,
        permits: Arc<Semaphore>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            plugin,
            permits,
            metrics,
        }
    }

    /// What the plugin declared.
    pub fn info(&self) -> &PluginInfo {
        self.plugin.info()
    }

    /// Runs a blocking plugin call on the blocking pool, in the caller's span.
    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Reconciler) -> Result<R, PluginError> + Send + 'static,
    ) -> Result<R, PluginError> {
        let name = self.plugin.info().name.clone();
        let _permit = self.permits.clone().acquire_owned().await.map_err(|_| {
            PluginError::new(
                ErrorKind::Transient,
                format!("plugin {name}: host is shutting down"),
            )
        })?;
        let plugin = self.plugin.clone();
        let span = tracing::Span::current();
        let started = Instant::now();
        let joined = tokio::task::spawn_blocking(move || span.in_scope(|| f(plugin.as_ref())))
            .instrument(tracing::Span::current())
            .await;
        self.metrics.plugin_called(&name, started.elapsed());
        joined.unwrap_or_else(|e| {
            Err(PluginError::new(
                ErrorKind::Transient,
                format!("plugin {name}: call aborted: {e}"),
            ))
        })
    }

    /// The plugin's answer for `parent` with its observed `children`.
    pub async fn reconcile(
        &self,
        parent: &DynamicObject,
        children: &[Arc<DynamicObject>],
    ) -> Result<ReconcileResponse, PluginError> {
        let req = ReconcileRequest {
            parent: to_json(parent),
            children: children.iter().map(|c| to_json(c)).collect(),
        };
        self.call(move |p| p.reconcile(&req)).await
    }

    /// One cleanup step for `parent`, which is being deleted.
    pub async fn finalize(
        &self,
        parent: &DynamicObject,
        children: &[Arc<DynamicObject>],
        finalizer: &str,
    ) -> Result<FinalizeResponse, PluginError> {
        let req = FinalizeRequest {
            parent: to_json(parent),
            children: children.iter().map(|c| to_json(c)).collect(),
            finalizer: finalizer.to_owned(),
        };
        self.call(move |p| p.finalize(&req)).await
    }
}
