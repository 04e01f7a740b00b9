//! Binds the typed API to the contract's WIT world inside the component (wasm32 only).

use std::marker::PhantomData;

use crate::{Finalize, Kind, Reconciler, Requeue, log::Level, wire};

wit_bindgen::generate!({
    path: "../wit",
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
            finalizer: info.finalizer,
            crd: info.crd,
        }
    }

    fn reconcile(request: ReconcileRequest) -> Result<ReconcileResponse, ReconcileError> {
        let response = wire::reconcile::<R>(&request.parent, request.children).map_err(error)?;
        Ok(ReconcileResponse {
            children: response.children,
            status: response.status,
            requeue: match response.requeue {
                Requeue::Done => wit::Requeue::Done,
                Requeue::Now => wit::Requeue::Now,
                Requeue::After(delay) => wit::Requeue::After(millis(delay)),
            },
        })
    }

    fn finalize(request: FinalizeRequest) -> Result<FinalizeResponse, ReconcileError> {
        match wire::finalize::<R>(&request.parent, request.children).map_err(error)? {
            Finalize::Complete => Ok(FinalizeResponse::Complete),
            Finalize::AgainAfter(delay) => Ok(FinalizeResponse::AgainAfter(millis(delay))),
        }
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
