//! Weir: a Kubernetes reconcile host whose reconcile logic comes as sandboxed
//! WebAssembly components.

pub mod dev;
pub mod fixtures;
pub mod hotload;
pub mod leader;
pub mod listing;
pub mod metrics;
pub mod plugin;
pub mod rbac;
pub mod reconcile;
pub mod run;
pub mod server;
