//! Failed reconciles handed, with their inputs, to whoever keeps them (`weir run --dump-failures` writes fixtures).
//!
//! A reconcile that the plugin failed (its own error, a trap, a timeout) or whose answer the
//! host refused is a bug report waiting to be written: the parent and the children the plugin
//! saw reproduce it offline. [`ControllerConfig::failures`](super::ControllerConfig) takes a
//! [`FailureSink`]; the controller calls it from its error policy. Failures of the API (a
//! write, a status patch) are not the plugin's and are not handed on.

use std::sync::Arc;

use kube::api::DynamicObject;

use crate::plugin::{ErrorKind, PluginInfo, ReconcileResponse};

/// How a reconcile failed.
#[derive(Clone, Debug)]
pub enum Failed {
    /// The plugin call failed.
    Error {
        /// Whether retrying can help.
        kind: ErrorKind,
        /// The message, as in the parent's condition.
        message: String,
    },
    /// The plugin answered and the host refused the answer.
    Refused {
        /// The answer, as the plugin gave it.
        answer: ReconcileResponse,
        /// The refusal, as in the parent's condition.
        message: String,
    },
}

/// One failed reconcile with what the plugin was given.
#[derive(Debug)]
pub struct FailedReconcile<'a> {
    /// The plugin.
    pub info: &'a PluginInfo,
    /// The parent, as cached.
    pub parent: &'a DynamicObject,
    /// The children the plugin saw (Secrets redacted).
    pub observed: &'a [Arc<DynamicObject>],
    /// How it failed.
    pub failed: Failed,
}

/// Keeps failed reconciles. Called on a worker: it should be quick (a small file write).
pub trait FailureSink: Send + Sync + std::fmt::Debug {
    /// One failed reconcile.
    fn failed(&self, reconcile: &FailedReconcile<'_>);
}
