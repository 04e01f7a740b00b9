//! The generated bindings of `wit/reconciler.wit`, kept private to the sandbox.
//!
//! Everything outside `plugin` sees the plain types of `types.rs`; converting
//! here means a change of the WIT touches this file and nothing else.

use std::time::Duration;

// Exports are called asynchronously so that a call can be cancelled while
// the guest waits in the host (a WASI sleep); the `log` import stays sync.
wasmtime::component::bindgen!({
    path: "../wit",
    world: "reconciler",
    exports: { default: async },
});

use super::types;

impl From<types::ReconcileRequest> for ReconcileRequest {
    fn from(r: types::ReconcileRequest) -> Self {
        Self {
            parent: r.parent,
            children: r.children,
        }
    }
}

impl From<types::FinalizeRequest> for FinalizeRequest {
    fn from(r: types::FinalizeRequest) -> Self {
        Self {
            parent: r.parent,
            children: r.children,
            finalizer: r.finalizer,
        }
    }
}

impl From<weir::reconciler::types::ResourceKind> for types::ResourceKind {
    fn from(k: weir::reconciler::types::ResourceKind) -> Self {
        Self {
            group: k.group,
            version: k.version,
            kind: k.kind,
            plural: k.plural,
            namespaced: k.namespaced,
        }
    }
}

impl From<PluginInfo> for types::PluginInfo {
    fn from(i: PluginInfo) -> Self {
        Self {
            name: i.name,
            version: i.version,
            parent: i.parent.into(),
            children: i.children.into_iter().map(Into::into).collect(),
            finalizer: i.finalizer,
            crd: i.crd,
        }
    }
}

impl From<weir::reconciler::types::ErrorKind> for types::ErrorKind {
    fn from(k: weir::reconciler::types::ErrorKind) -> Self {
        match k {
            weir::reconciler::types::ErrorKind::Transient => Self::Transient,
            weir::reconciler::types::ErrorKind::Permanent => Self::Permanent,
        }
    }
}

impl From<weir::reconciler::types::Requeue> for types::Requeue {
    fn from(r: weir::reconciler::types::Requeue) -> Self {
        match r {
            weir::reconciler::types::Requeue::Done => Self::Done,
            weir::reconciler::types::Requeue::Now => Self::Now,
            weir::reconciler::types::Requeue::After(ms) => Self::After(Duration::from_millis(ms)),
        }
    }
}

impl From<FinalizeResponse> for types::FinalizeResponse {
    fn from(r: FinalizeResponse) -> Self {
        match r {
            FinalizeResponse::Complete => Self::Complete,
            FinalizeResponse::AgainAfter(ms) => Self::AgainAfter(Duration::from_millis(ms)),
        }
    }
}
