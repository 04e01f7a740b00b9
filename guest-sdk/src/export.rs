//! Binds the typed API to the contract's WIT world inside the component (wasm32 only).
//!
//! The SDK builds `weir:reconciler@0.4.0` components (`wit/0.4.0`); a plugin
//! that declares no related kinds selects nothing, one whose cleanup step only
//! completes or waits applies nothing while it is deleted, and one that names
//! no cluster keeps its children in the parent's, as before.

use std::marker::PhantomData;

use crate::{Finalize, Kind, Reconciler, Requeue, log::Level, wire};

wit_bindgen::generate!({
    path: "../wit/0.4.0",
    world: "reconciler",
    export_macro_name: "__export_reconciler",
    pub_export_macro: true,
});

use weir::reconciler::types as wit;

/// The component's exports for the plugin `R`: the type the export macro names.
pub struct Adapter<R>(PhantomData<R>);

impl<R: Reconciler> Guest for Adapter<R> {
    fn describe() -> PluginInfo {
        let info = wire::describe::<R>();
        PluginInfo {
            name: info.name,
            version: info.version,
            parent: kind(info.parent),
            children: info.children.into_iter().map(kind).collect(),
            related: info.related.into_iter().map(kind).collect(),
            finalizer: info.finalizer,
            crd: info.crd,
        }
    }

    /// The contract's `select-related` export: [`Reconciler::select`].
    fn select_related(parent: String) -> Result<Vec<wit::Selection>, ReconcileError> {
        let selections = wire::select::<R>(&parent).map_err(error)?;
        selections.into_iter().map(selection).collect()
    }

    fn reconcile(request: ReconcileRequest) -> Result<ReconcileResponse, ReconcileError> {
        let request = wire::Request {
            parent: &request.parent,
            cluster: request.cluster,
            children: placed(request.children),
            related: placed(request.related),
        };
        let response = wire::reconcile::<R>(request).map_err(error)?;
        Ok(ReconcileResponse {
            children: desired(response.children, response.clusters),
            status: response.status,
            requeue: requeue(response.requeue),
        })
    }

    fn finalize(request: FinalizeRequest) -> Result<FinalizeResponse, ReconcileError> {
        let request = wire::Request {
            parent: &request.parent,
            cluster: request.cluster,
            children: placed(request.children),
            related: placed(request.related),
        };
        let step = wire::finalize::<R>(request).map_err(error)?;
        let nothing = |finalized, requeue| FinalizeResponse {
            children: None,
            status: None,
            finalized,
            requeue,
        };
        Ok(match step {
            Finalize::Complete => nothing(true, wit::Requeue::Done),
            Finalize::AgainAfter(delay) => nothing(false, wit::Requeue::After(millis(delay))),
            Finalize::Apply { outcome, finalized } => {
                let response = wire::encode(outcome).map_err(error)?;
                FinalizeResponse {
                    children: Some(desired(response.children, response.clusters)),
                    status: response.status,
                    finalized,
                    requeue: requeue(response.requeue),
                }
            }
        })
    }
}

/// Observed objects as `(cluster, JSON)` pairs.
fn placed(objects: Vec<wit::Observed>) -> Vec<(String, String)> {
    objects.into_iter().map(|o| (o.cluster, o.object)).collect()
}

/// Desired children with the cluster each names (`clusters` in the same order).
fn desired(children: Vec<String>, clusters: Vec<Option<String>>) -> Vec<wit::Desired> {
    let clusters = clusters.into_iter().chain(std::iter::repeat(None));
    children
        .into_iter()
        .zip(clusters)
        .map(|(object, cluster)| wit::Desired { cluster, object })
        .collect()
}

fn requeue(requeue: Requeue) -> wit::Requeue {
    match requeue {
        Requeue::Done => wit::Requeue::Done,
        Requeue::Now => wit::Requeue::Now,
        Requeue::After(delay) => wit::Requeue::After(millis(delay)),
    }
}

pub(crate) fn emit(level: Level, message: &str) {
    let level = match level {
        Level::Trace => LogLevel::Trace,
        Level::Debug => LogLevel::Debug,
        Level::Info => LogLevel::Info,
        Level::Warn => LogLevel::Warn,
        Level::Error => LogLevel::Error,
    };
    self::log(level, message);
}

fn kind(kind: Kind) -> wit::ResourceKind {
    wit::ResourceKind {
        group: kind.group,
        version: kind.version,
        kind: kind.kind,
        plural: kind.plural,
        namespaced: kind.namespaced,
    }
}

/// A selection in the contract's types; an operator Kubernetes does not know is the plugin's
/// permanent error.
fn selection(s: crate::Selection) -> Result<wit::Selection, ReconcileError> {
    let selector = match s.selector {
        crate::Selector::Name(name) => wit::Selector::Name(name),
        crate::Selector::Labels(l) => {
            let mut expressions = Vec::new();
            for r in l.match_expressions.unwrap_or_default() {
                let operator = match r.operator.as_str() {
                    "In" => wit::SelectorOperator::In,
                    "NotIn" => wit::SelectorOperator::NotIn,
                    "Exists" => wit::SelectorOperator::Exists,
                    "DoesNotExist" => wit::SelectorOperator::DoesNotExist,
                    other => {
                        return Err(error(crate::Error::permanent(format!(
                            "label selector operator {other:?} is not In, NotIn, Exists or DoesNotExist"
                        ))));
                    }
                };
                expressions.push(wit::LabelRequirement {
                    key: r.key,
                    operator,
                    values: r.values.unwrap_or_default(),
                });
            }
            wit::Selector::Labels(wit::LabelSelector {
                match_labels: l.match_labels.unwrap_or_default().into_iter().collect(),
                match_expressions: expressions,
            })
        }
    };
    Ok(wit::Selection {
        api_version: s.api_version,
        kind: s.kind,
        namespace: s.namespace,
        cluster: s.cluster,
        selector,
    })
}

fn error(error: crate::Error) -> ReconcileError {
    let kind = if error.is_transient() {
        wit::ErrorKind::Transient
    } else {
        wit::ErrorKind::Permanent
    };
    ReconcileError {
        kind,
        message: error.message().to_owned(),
    }
}

fn millis(delay: std::time::Duration) -> u64 {
    u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)
}
