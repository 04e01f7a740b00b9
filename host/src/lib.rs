//! Weir: a Kubernetes reconcile host whose reconcile logic comes as sandboxed
//! WebAssembly components.

pub mod plugin;
