//! One instance kept across calls: the faster, weaker alternative to a fresh instance per call.
//!
//! The host does not use this for reconciles (see `sandbox.rs` for why); it
//! exists so the benchmark can measure what reuse would buy, and for callers
//! that run many calls for one trusted input set. A failed call drops the
//! instance, so the next call starts clean; state does carry over between
//! successful calls, and so does memory the guest has grown.

use wasmtime::Store;

use super::call_error::CallError;
use super::guest::Guest;
use super::sandbox::Plugin;
use super::store::State;
use super::types::{ReconcileRequest, ReconcileResponse};

/// An instance of a plugin that stays alive between calls.
pub struct ReusedInstance {
    plugin: Plugin,
    live: Option<(Store<State>, Guest)>,
}

impl ReusedInstance {
    /// Instantiates lazily on the first call.
    pub fn new(plugin: Plugin) -> Self {
        Self { plugin, live: None }
    }

    /// Like [`Plugin::reconcile`], in the kept instance, under the same limits
    /// (the deadline and log budget are re-armed for each call).
    pub fn reconcile(&mut self, req: &ReconcileRequest) -> Result<ReconcileResponse, CallError> {
        let (answer, live) = self
            .plugin
            .run_reused(self.live.take(), async |store, guest| {
                guest.reconcile(store, req).await
            })?;
        self.live = Some(live);
        self.plugin.check_reconcile(answer)
    }
}
