//! Reconciler plugins: load a component, check it, and call it under limits.

mod types;

pub use types::{
    ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
    Requeue, ResourceKind,
};
