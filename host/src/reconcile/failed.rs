//! Failed reconciles handed, with their inputs, to whoever keeps them (`weir run --dump-failures` writes fixtures).
//!
//! A reconcile that the plugin failed (its own error, a trap, a timeout) or whose answer the
//! host refused is a bug report waiting to be written: the parent, the children and the related
//! objects the plugin saw, and the answer it gave, reproduce it offline. The plugin is not asked
//! again: what is handed on is what the reconcile had. [`ControllerConfig::failures`](super::ControllerConfig) takes a
//! [`FailureSink`]; the controller calls it from its error policy. Failures of the API (a
//! write, a status patch) are not the plugin's and are not handed on.

use std::sync::Arc;

use crate::plugin::{ErrorKind, PluginInfo, ReconcileResponse};
use crate::runtime::cache::CachedObject;

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
    /// The host refused the plugin's answer, or its selection of related objects.
    Refused {
        /// The answer, as the plugin gave it; `None` when there was none to refuse (a refused
        /// selection) or it was no longer the plugin's (refused while being written).
        answer: Option<ReconcileResponse>,
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
    pub parent: &'a CachedObject,
    /// The children the plugin saw (Secrets redacted).
    pub observed: &'a [Arc<CachedObject>],
    /// The related objects the plugin saw in its parent's cluster (Secrets redacted); none when
    /// its selection failed.
    pub related: &'a [Arc<CachedObject>],
    /// How it failed.
    pub failed: Failed,
}

/// Keeps failed reconciles. Called on a worker: it should be quick (a small file write).
pub trait FailureSink: Send + Sync + std::fmt::Debug {
    /// One failed reconcile.
    fn failed(&self, reconcile: &FailedReconcile<'_>);
}

/// What one reconcile gave the plugin, kept for the error policy; filled as the reconcile goes.
#[derive(Debug, Default)]
pub struct Given {
    /// The parent the plugin was called with (after the host added its finalizer); `None`
    /// before the call.
    pub parent: Option<Arc<CachedObject>>,
    /// The children, Secrets redacted.
    pub observed: Vec<Arc<CachedObject>>,
    /// The selected related objects, Secrets redacted.
    pub related: super::related::Found,
}
