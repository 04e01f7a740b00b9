//! The generated bindings of every contract version (`wit/README.md`), kept private to the sandbox.
//!
//! Everything outside `plugin` sees the plain types of `types.rs` and `selection.rs`; each
//! version's conversions live here, so a new WIT version touches this file and the call sites of
//! its new exports, nothing else. [`RawAnswer`] and [`RawFinalize`] are a reconcile and a
//! finalize answer of any version before the sandbox checks them.

use std::time::Duration;

use super::placement::Clusters;
use super::selection::{LabelRequirement, LabelSelector, Selection, Selector, SelectorOperator};
use super::types;

/// `weir:reconciler@0.1.0` (`wit/reconciler.wit`).
pub(super) mod v1 {
    // Exports are called asynchronously so that a call can be cancelled while
    // the guest waits in the host (a WASI sleep); the `log` import stays sync.
    wasmtime::component::bindgen!({
        path: "../wit/reconciler.wit",
        world: "reconciler",
        exports: { default: async },
    });
}

/// `weir:reconciler@0.2.0` (`wit/0.2.0/reconciler.wit`).
pub(super) mod v2 {
    wasmtime::component::bindgen!({
        path: "../wit/0.2.0",
        world: "reconciler",
        exports: { default: async },
    });
}

/// `weir:reconciler@0.3.0` (`wit/0.3.0/reconciler.wit`).
pub(super) mod v3 {
    wasmtime::component::bindgen!({
        path: "../wit/0.3.0",
        world: "reconciler",
        exports: { default: async },
    });
}

/// `weir:reconciler@0.4.0` (`wit/0.4.0/reconciler.wit`).
pub(super) mod v4 {
    wasmtime::component::bindgen!({
        path: "../wit/0.4.0",
        world: "reconciler",
        exports: { default: async },
    });
}

/// A reconcile answer of any version, as the guest returned it.
pub(super) struct RawAnswer {
    pub children: Vec<String>,
    /// The cluster each child names (0.4.0); empty for an older answer.
    pub clusters: Vec<Option<String>>,
    pub status: Option<String>,
    pub requeue: types::Requeue,
}

/// A finalize answer of any version, as the guest returned it: a 0.1.0 or 0.2.0 answer
/// carries no children and no status.
pub(super) struct RawFinalize {
    pub children: Option<Vec<String>>,
    /// The cluster each child names (0.4.0); empty for an older answer.
    pub clusters: Vec<Option<String>>,
    pub status: Option<String>,
    pub finalized: bool,
    pub requeue: types::Requeue,
}

/// A plugin's own error of any version.
pub(super) struct RawError {
    pub kind: types::ErrorKind,
    pub message: String,
}

macro_rules! shared_conversions {
    ($v:ident) => {
        impl From<$v::weir::reconciler::types::ResourceKind> for types::ResourceKind {
            fn from(k: $v::weir::reconciler::types::ResourceKind) -> Self {
                Self {
                    group: k.group,
                    version: k.version,
                    kind: k.kind,
                    plural: k.plural,
                    namespaced: k.namespaced,
                }
            }
        }

        impl From<$v::ReconcileError> for RawError {
            fn from(e: $v::ReconcileError) -> Self {
                use $v::weir::reconciler::types::ErrorKind;
                Self {
                    kind: match e.kind {
                        ErrorKind::Transient => types::ErrorKind::Transient,
                        ErrorKind::Permanent => types::ErrorKind::Permanent,
                    },
                    message: e.message,
                }
            }
        }

        impl From<$v::weir::reconciler::types::Requeue> for types::Requeue {
            fn from(r: $v::weir::reconciler::types::Requeue) -> Self {
                use $v::weir::reconciler::types::Requeue;
                match r {
                    Requeue::Done => Self::Done,
                    Requeue::Now => Self::Now,
                    Requeue::After(ms) => Self::After(Duration::from_millis(ms)),
                }
            }
        }

        impl From<$v::LogLevel> for super::log::Level {
            fn from(level: $v::LogLevel) -> Self {
                match level {
                    $v::LogLevel::Trace => Self::Trace,
                    $v::LogLevel::Debug => Self::Debug,
                    $v::LogLevel::Info => Self::Info,
                    $v::LogLevel::Warn => Self::Warn,
                    $v::LogLevel::Error => Self::Error,
                }
            }
        }
    };
}

shared_conversions!(v1);
shared_conversions!(v2);
shared_conversions!(v3);
shared_conversions!(v4);

/// The 0.1.0 to 0.3.0 reconcile answer: its children stay in the parent's cluster.
macro_rules! local_answer {
    ($v:ident) => {
        impl From<$v::ReconcileResponse> for RawAnswer {
            fn from(r: $v::ReconcileResponse) -> Self {
                Self {
                    children: r.children,
                    clusters: Vec::new(),
                    status: r.status,
                    requeue: r.requeue.into(),
                }
            }
        }
    };
}

local_answer!(v1);
local_answer!(v2);
local_answer!(v3);

/// The 0.1.0 and 0.2.0 cleanup outcome: done, or ask again later; nothing to apply.
macro_rules! outcome_only_finalize {
    ($v:ident) => {
        impl From<$v::FinalizeResponse> for RawFinalize {
            fn from(r: $v::FinalizeResponse) -> Self {
                let (finalized, requeue) = match r {
                    $v::FinalizeResponse::Complete => (true, types::Requeue::Done),
                    $v::FinalizeResponse::AgainAfter(ms) => {
                        (false, types::Requeue::After(Duration::from_millis(ms)))
                    }
                };
                Self {
                    children: None,
                    clusters: Vec::new(),
                    status: None,
                    finalized,
                    requeue,
                }
            }
        }
    };
}

outcome_only_finalize!(v1);
outcome_only_finalize!(v2);

impl From<v3::FinalizeResponse> for RawFinalize {
    fn from(r: v3::FinalizeResponse) -> Self {
        Self {
            children: r.children,
            clusters: Vec::new(),
            status: r.status,
            finalized: r.finalized,
            requeue: r.requeue.into(),
        }
    }
}

impl From<types::ReconcileRequest> for v1::ReconcileRequest {
    /// A 0.1.0 plugin declares no related kinds, so it is never given any; and, as every plugin
    /// older than 0.4.0, only the children in its parent's cluster.
    fn from(r: types::ReconcileRequest) -> Self {
        Self {
            children: r.clusters.in_parent_cluster(r.children, Clusters::child),
            parent: r.parent,
        }
    }
}

impl From<types::FinalizeRequest> for v1::FinalizeRequest {
    fn from(r: types::FinalizeRequest) -> Self {
        Self {
            children: r.clusters.in_parent_cluster(r.children, Clusters::child),
            parent: r.parent,
            finalizer: r.finalizer,
        }
    }
}

impl From<v1::PluginInfo> for types::PluginInfo {
    fn from(i: v1::PluginInfo) -> Self {
        Self {
            name: i.name,
            version: i.version,
            parent: i.parent.into(),
            children: i.children.into_iter().map(Into::into).collect(),
            related: Vec::new(),
            finalizer: i.finalizer,
            crd: i.crd,
        }
    }
}

/// Requests with related objects, in the parent's cluster only, alike in 0.2.0 and 0.3.0.
macro_rules! local_requests {
    ($v:ident) => {
        impl From<types::ReconcileRequest> for $v::ReconcileRequest {
            fn from(r: types::ReconcileRequest) -> Self {
                Self {
                    children: r.clusters.in_parent_cluster(r.children, Clusters::child),
                    related: r.clusters.in_parent_cluster(r.related, Clusters::related),
                    parent: r.parent,
                }
            }
        }

        impl From<types::FinalizeRequest> for $v::FinalizeRequest {
            fn from(r: types::FinalizeRequest) -> Self {
                Self {
                    children: r.clusters.in_parent_cluster(r.children, Clusters::child),
                    related: r.clusters.in_parent_cluster(r.related, Clusters::related),
                    parent: r.parent,
                    finalizer: r.finalizer,
                }
            }
        }
    };
}

local_requests!(v2);
local_requests!(v3);

/// Related kinds and selections, alike in 0.2.0, 0.3.0 and 0.4.0 (0.4.0's selection also names
/// a cluster: `selection_cluster!`).
macro_rules! related_conversions {
    ($v:ident) => {
        impl From<$v::PluginInfo> for types::PluginInfo {
            fn from(i: $v::PluginInfo) -> Self {
                Self {
                    name: i.name,
                    version: i.version,
                    parent: i.parent.into(),
                    children: i.children.into_iter().map(Into::into).collect(),
                    related: i.related.into_iter().map(Into::into).collect(),
                    finalizer: i.finalizer,
                    crd: i.crd,
                }
            }
        }

        impl From<$v::Selection> for Selection {
            fn from(s: $v::Selection) -> Self {
                use $v::weir::reconciler::types as wit;
                let selector = match s.selector {
                    wit::Selector::Name(name) => Selector::Name(name),
                    wit::Selector::Labels(l) => Selector::Labels(LabelSelector {
                        match_labels: l.match_labels.into_iter().collect(),
                        match_expressions: l
                            .match_expressions
                            .into_iter()
                            .map(|r| LabelRequirement {
                                key: r.key,
                                operator: match r.operator {
                                    wit::SelectorOperator::In => SelectorOperator::In,
                                    wit::SelectorOperator::NotIn => SelectorOperator::NotIn,
                                    wit::SelectorOperator::Exists => SelectorOperator::Exists,
                                    wit::SelectorOperator::DoesNotExist => {
                                        SelectorOperator::DoesNotExist
                                    }
                                },
                                values: r.values,
                            })
                            .collect(),
                    }),
                };
                Self {
                    cluster: selection_cluster!($v, s),
                    api_version: s.api_version,
                    kind: s.kind,
                    namespace: s.namespace,
                    selector,
                }
            }
        }
    };
}

/// The cluster a selection names: 0.4.0's field, none before.
macro_rules! selection_cluster {
    (v4, $s:ident) => {
        $s.cluster
    };
    ($v:ident, $s:ident) => {
        None
    };
}

related_conversions!(v2);
related_conversions!(v3);
related_conversions!(v4);

/// Each object with its cluster (0.4.0): `cluster_of` names the cluster of object `i`.
fn observed(
    clusters: &Clusters,
    objects: Vec<String>,
    cluster_of: impl Fn(&Clusters, usize) -> &str,
) -> Vec<v4::weir::reconciler::types::Observed> {
    objects
        .into_iter()
        .enumerate()
        .map(|(i, object)| v4::weir::reconciler::types::Observed {
            cluster: cluster_of(clusters, i).to_owned(),
            object,
        })
        .collect()
}

/// The children and the cluster each names, apart (0.4.0).
fn desired(
    children: Vec<v4::weir::reconciler::types::Desired>,
) -> (Vec<String>, Vec<Option<String>>) {
    children.into_iter().map(|d| (d.object, d.cluster)).unzip()
}

impl From<types::ReconcileRequest> for v4::ReconcileRequest {
    fn from(r: types::ReconcileRequest) -> Self {
        Self {
            cluster: r.clusters.parent().to_owned(),
            children: observed(&r.clusters, r.children, Clusters::child),
            related: observed(&r.clusters, r.related, Clusters::related),
            parent: r.parent,
        }
    }
}

impl From<types::FinalizeRequest> for v4::FinalizeRequest {
    fn from(r: types::FinalizeRequest) -> Self {
        Self {
            cluster: r.clusters.parent().to_owned(),
            children: observed(&r.clusters, r.children, Clusters::child),
            related: observed(&r.clusters, r.related, Clusters::related),
            parent: r.parent,
            finalizer: r.finalizer,
        }
    }
}

impl From<v4::ReconcileResponse> for RawAnswer {
    fn from(r: v4::ReconcileResponse) -> Self {
        let (children, clusters) = desired(r.children);
        Self {
            children,
            clusters,
            status: r.status,
            requeue: r.requeue.into(),
        }
    }
}

impl From<v4::FinalizeResponse> for RawFinalize {
    fn from(r: v4::FinalizeResponse) -> Self {
        let (children, clusters) = match r.children.map(desired) {
            Some((children, clusters)) => (Some(children), clusters),
            None => (None, Vec::new()),
        };
        Self {
            children,
            clusters,
            status: r.status,
            finalized: r.finalized,
            requeue: r.requeue.into(),
        }
    }
}
