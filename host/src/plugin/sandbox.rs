//! Runs one plugin call in a fresh instance under its limits and types every failure.
//!
//! Each call gets a new `Store` and instance from the `InstancePre` built at
//! load time. Nothing survives a call: a guest that leaked memory, corrupted
//! its heap or hit a limit cannot affect the next reconcile, and calls never
//! wait on each other. That costs one instantiation per call; the benchmark
//! (`host/benches/README.md`) measures it against a reused instance.
//!
//! The deadline covers everything: wasm code is interrupted at the next
//! epoch tick past it, and the call runs as a future under a wall-clock
//! timeout, so a guest waiting in the host (a WASI sleep) is cancelled by
//! dropping it (wasmtime's epochs alone cover wasm code only).

use std::sync::{Arc, Mutex};

use wasmtime::{Store, Trap};

use super::bindings::{RawAnswer, RawError, RawFinalize};
use super::call_error::CallError;
use super::engine::{Engine, LoadError};
use super::guest::{Guest, Pre};
use super::limits::Limits;
use super::log::LogRate;
use super::response::{self, ContractBreach};
use super::selection::Selection;
use super::store::State;
use super::text::truncate_owned;
use super::types::{
    Contract, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
};

/// A loaded plugin: cheap to clone, callable from any thread.
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    pre: Pre,
    info: PluginInfo,
    sha256: String,
    limits: Limits,
    /// `name@version`.
    label: String,
    /// The log-line rate all calls of this plugin share.
    log_rate: Arc<Mutex<LogRate>>,
    /// Counts the plugin in its engine's ledger while it lives (`/metrics`).
    _counted: Arc<()>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("plugin", &self.inner.label)
            .field("sha256", &self.inner.sha256)
            .finish()
    }
}

impl Plugin {
    /// Finishes a load by calling `describe` under the plugin's limits.
    pub(super) fn new(
        engine: Engine,
        pre: Pre,
        (sha256, code_bytes): (String, u64),
        limits: Limits,
        path: String,
    ) -> Result<Plugin, LoadError> {
        let describe_err = |reason: String| LoadError::Describe {
            path: path.clone(),
            reason,
        };
        let log_rate = LogRate::new(limits.log_lines_per_second);
        let call = Call {
            engine: &engine,
            pre: &pre,
            limits: &limits,
            label: &path,
            log_rate: &log_rate,
        };
        let info = call
            .run(async |store, guest| guest.describe(store).await)
            .map_err(|e| describe_err(e.to_string()))?;
        check_info(&info).map_err(describe_err)?;
        let label = info.label();
        let counted = engine.ledger().count(&info.name, &sha256, code_bytes);
        Ok(Plugin {
            inner: Arc::new(Inner {
                _counted: counted,
                engine,
                pre,
                info,
                sha256,
                limits,
                label,
                log_rate,
            }),
        })
    }

    /// What the plugin said about itself at load.
    pub fn info(&self) -> &PluginInfo {
        &self.inner.info
    }

    /// Hex sha256 of the component file, to tell versions apart in logs.
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// `name@version`, as errors and logs name the plugin.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// The contract version the component was built against.
    pub fn contract(&self) -> Contract {
        self.inner.pre.contract()
    }

    /// The related objects the plugin wants to read for `parent` (its JSON). Blocking, like
    /// `reconcile`. A plugin without related kinds selects nothing, without a call. The answer is not checked
    /// against the declaration here: the reconcile loop refuses it on the parent (see
    /// `reconcile::related`).
    pub fn select(&self, parent: &str) -> Result<Vec<Selection>, CallError> {
        // Nothing to select without related kinds (every 0.1.0 plugin, and a 0.2.0 one that
        // declares none): no instance is spent on it, on every reconcile.
        if self.contract() == Contract::V0_1 || self.info().related.is_empty() {
            return Ok(Vec::new());
        }
        self.run(async |store, guest| guest.select(store, parent).await)?
            .map_err(|e| self.plugin_error(e))
    }

    /// Computes the desired children and status of one parent. Blocks the
    /// thread for at most the timeout, whatever the guest does (the guest
    /// runs on this thread, in the caller's span): async callers use
    /// `spawn_blocking` and enter their span there.
    pub fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, CallError> {
        let answer = self.run(async |store, guest| guest.reconcile(store, req).await)?;
        self.check_reconcile(answer)
    }

    /// One cleanup step of a parent being deleted. Blocking, like `reconcile`; the answer's
    /// children and status (contract 0.3.0) are checked like a reconcile answer's.
    pub fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, CallError> {
        let answer = self.run(async |store, guest| guest.finalize(store, req).await)?;
        let raw: RawFinalize = answer.map_err(|e| self.plugin_error(e))?;
        response::check_finalize(raw, &self.inner.info, self.inner.limits.max_response_bytes)
            .map_err(|breach| self.breach(breach))
    }

    /// Validates a raw reconcile answer (shared with [`super::ReusedInstance`]).
    pub(super) fn check_reconcile(
        &self,
        answer: Result<RawAnswer, RawError>,
    ) -> Result<ReconcileResponse, CallError> {
        let raw = answer.map_err(|e| self.plugin_error(e))?;
        response::check(raw, &self.inner.info, self.inner.limits.max_response_bytes)
            .map_err(|breach| self.breach(breach))
    }

    /// An answer that breaks the contract, as a call error naming the plugin.
    fn breach(&self, breach: ContractBreach) -> CallError {
        let plugin = self.inner.label.clone();
        let limit = self.inner.limits.max_response_bytes;
        match breach {
            ContractBreach::TooLarge(size) => CallError::ResponseTooLarge {
                plugin,
                size,
                limit,
                exact: true,
            },
            ContractBreach::Invalid(reason) => CallError::InvalidResponse {
                plugin,
                reason: truncate_owned(reason, self.inner.limits.max_error_bytes),
            },
        }
    }

    /// The plugin's own error, its message cut to the error cap.
    fn plugin_error(&self, e: RawError) -> CallError {
        CallError::Plugin {
            plugin: self.inner.label.clone(),
            kind: e.kind,
            message: truncate_owned(e.message, self.inner.limits.max_error_bytes),
        }
    }

    pub(super) fn call(&self) -> Call<'_> {
        let inner = &*self.inner;
        Call {
            engine: &inner.engine,
            pre: &inner.pre,
            limits: &inner.limits,
            label: &inner.label,
            log_rate: &inner.log_rate,
        }
    }

    fn run<R>(
        &self,
        call: impl AsyncFnOnce(&mut Store<State>, &Guest) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        self.call().run(call)
    }

    /// Runs `call` on a kept store (for [`super::ReusedInstance`]): re-arms
    /// its deadline and budgets, instantiates if `guest` is `None`, and
    /// types the failure like a fresh call's. On failure the instance must
    /// be dropped (a cancelled call leaves it unusable).
    pub(super) fn run_reused<R>(
        &self,
        live: Option<(Store<State>, Guest)>,
        call: impl AsyncFnOnce(&mut Store<State>, &Guest) -> wasmtime::Result<R>,
    ) -> Result<(R, (Store<State>, Guest)), CallError> {
        let c = self.call();
        let (mut store, guest) = match live {
            Some((mut store, guest)) => {
                store.data_mut().limiter.refused = None;
                store.set_epoch_deadline(c.engine.ticks(c.limits.timeout));
                (store, Some(guest))
            }
            None => (c.new_store(), None),
        };
        let outcome = c.engine.block_with_deadline(c.limits.timeout, async {
            let guest = match guest {
                Some(guest) => guest,
                None => {
                    (c.pre.instantiate(&mut store).await).map_err(|e| (e, Stage::Instantiate))?
                }
            };
            let answer = call(&mut store, &guest)
                .await
                .map_err(|e| (e, Stage::Call))?;
            Ok::<_, (wasmtime::Error, Stage)>((answer, guest))
        });
        store.data_mut().flush_output();
        let (answer, guest) = c.outcome(outcome, &store)?;
        Ok((answer, (store, guest)))
    }
}

/// What one call needs of its plugin (borrowed, so `describe` can run
/// before the plugin exists).
pub(super) struct Call<'a> {
    engine: &'a Engine,
    pre: &'a Pre,
    limits: &'a Limits,
    label: &'a str,
    log_rate: &'a Arc<Mutex<LogRate>>,
}

/// Sees the stages of a fresh-instance call as they end: nothing for the host's calls (`()`),
/// the clock for the benchmarks' per-stage table (`phases.rs`).
pub(super) trait Marks {
    /// The store is built; the call has not started.
    fn stored(&mut self, _store: &mut Store<State>) {}
    /// The instance exists.
    fn instantiated(&mut self) {}
    /// The export returned and its answer is lifted.
    fn called(&mut self) {}
}

impl Marks for () {}

impl Call<'_> {
    fn new_store(&self) -> Store<State> {
        let state = State::new(self.label, self.limits, self.log_rate.clone());
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(self.engine.ticks(self.limits.timeout));
        store.epoch_deadline_trap();
        // Bounds what the host copies out of the guest per lift, so an
        // oversized answer is refused before the host allocates it.
        store.set_hostcall_fuel(self.limits.host_copy_bytes());
        store
    }

    /// One call in a fresh store: instantiate, call, forward the guest's
    /// output to `tracing`, and type the failure if there is one.
    fn run<R>(
        &self,
        call: impl AsyncFnOnce(&mut Store<State>, &Guest) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        self.run_marked(&mut (), call)
    }

    /// [`Call::run`], telling `marks` where it is.
    pub(super) fn run_marked<R>(
        &self,
        marks: &mut impl Marks,
        call: impl AsyncFnOnce(&mut Store<State>, &Guest) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let mut store = self.new_store();
        marks.stored(&mut store);
        let outcome = self.engine.block_with_deadline(self.limits.timeout, async {
            let guest =
                (self.pre.instantiate(&mut store).await).map_err(|e| (e, Stage::Instantiate))?;
            marks.instantiated();
            let answer = call(&mut store, &guest).await.map_err(|e| (e, Stage::Call));
            marks.called();
            answer
        });
        store.data_mut().flush_output();
        self.outcome(outcome, &store)
    }

    /// Types the end of a call: past the deadline (the future was dropped
    /// wherever the guest was), failed, or answered.
    fn outcome<R>(
        &self,
        outcome: Result<Result<R, (wasmtime::Error, Stage)>, tokio::time::error::Elapsed>,
        store: &Store<State>,
    ) -> Result<R, CallError> {
        match outcome {
            Err(_elapsed) => Err(CallError::Timeout {
                plugin: self.label.to_string(),
                timeout: self.limits.timeout,
            }),
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err((e, stage))) => Err(classify(e, store.data(), self.limits, self.label, stage)),
        }
    }
}

/// Which stage failed decides what an unexplained error means: while
/// instantiating, the host ran out of something; while calling, the guest trapped.
#[derive(Clone, Copy)]
enum Stage {
    Instantiate,
    Call,
}

fn classify(
    e: wasmtime::Error,
    state: &State,
    limits: &Limits,
    label: &str,
    stage: Stage,
) -> CallError {
    let plugin = label.to_string();
    let trap = e.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::Interrupt) {
        return CallError::Timeout {
            plugin,
            timeout: limits.timeout,
        };
    }
    // Hostcall fuel ran out while lifting the answer (no guest frames on
    // the error: the guest had returned). wasmtime's error type is private,
    // so it is recognised by its text (the version is pinned).
    if let (Stage::Call, None, true) = (
        stage,
        e.downcast_ref::<wasmtime::WasmBacktrace>(),
        format!("{e:#}").contains("fuel allocated for hostcalls has been exhausted"),
    ) {
        return CallError::ResponseTooLarge {
            plugin,
            size: limits.host_copy_bytes(),
            limit: limits.max_response_bytes,
            exact: false,
        };
    }
    if let Some(requested) = state.limiter.refused {
        return CallError::OutOfMemory {
            plugin,
            requested,
            limit: limits.memory,
        };
    }
    if let (None, Stage::Instantiate) = (trap, stage) {
        return CallError::Instantiate {
            plugin,
            reason: format!("{e:#}"),
        };
    }
    // The guest backtrace is for the developer, not for a status condition.
    tracing::debug!(plugin = %label, error = ?e, "plugin trapped");
    let mut message = trap.map_or_else(|| format!("{e:#}"), |t| t.to_string());
    if let Some(stderr) = state.stderr_tail() {
        message = format!("{message} (stderr: {stderr})");
    }
    CallError::Trap {
        plugin,
        message: truncate_owned(message, limits.max_error_bytes),
    }
}

/// `describe` must name the plugin and its kinds; children must be namespaced
/// because they always land in the parent's namespace.
fn check_info(info: &PluginInfo) -> Result<(), String> {
    if info.name.is_empty() || info.version.is_empty() {
        return Err("plugin name and version must not be empty".into());
    }
    for kind in std::iter::once(&info.parent).chain(&info.children) {
        if kind.version.is_empty() || kind.kind.is_empty() || kind.plural.is_empty() {
            return Err(format!(
                "resource kind {kind:?} needs version, kind and plural"
            ));
        }
    }
    for kind in &info.related {
        if kind.version.is_empty() || kind.kind.is_empty() || kind.plural.is_empty() {
            return Err(format!(
                "related kind {kind:?} needs version, kind and plural"
            ));
        }
    }
    if let Some(child) = info.children.iter().find(|k| !k.namespaced) {
        return Err(format!(
            "child kind {} is cluster-scoped; children must be namespaced",
            child.kind
        ));
    }
    Ok(())
}
