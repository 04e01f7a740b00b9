//! Runs one plugin call in a fresh instance under its limits and types every failure.
//!
//! Each call gets a new `Store` and instance from the `InstancePre` built at
//! load time. Nothing survives a call: a guest that leaked memory, corrupted
//! its heap or hit a limit cannot affect the next reconcile, and calls never
//! wait on each other. That costs one instantiation per call; the benchmark
//! (`host/benches/README.md`) measures it against a reused instance.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::{Store, Trap};

use super::bindings::{self, Reconciler, ReconcilerPre};
use super::engine::{Engine, LoadError};
use super::limits::Limits;
use super::response::{self, Refusal};
use super::store::State;
use super::types::{
    ErrorKind, FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
};

/// Why a call did not produce a usable answer. Each variant names the plugin
/// as `name@version`.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The plugin ran and reported an error of its own.
    #[error("plugin {plugin}: {message}")]
    Plugin {
        /// `name@version`.
        plugin: String,
        /// Whether the plugin thinks retrying helps.
        kind: ErrorKind,
        /// The plugin's message.
        message: String,
    },
    /// The guest trapped (a panic, `unreachable`, an out-of-bounds access...).
    #[error("plugin {plugin} trapped: {message}")]
    Trap {
        /// `name@version`.
        plugin: String,
        /// The trap and the guest backtrace, as wasmtime reports them.
        message: String,
    },
    /// The call ran past its deadline and was interrupted.
    #[error("plugin {plugin} did not answer within {timeout:?}")]
    Timeout {
        /// `name@version`.
        plugin: String,
        /// The limit it ran into.
        timeout: Duration,
    },
    /// The guest asked for more linear memory than its limit and then failed.
    #[error("plugin {plugin} ran out of memory: asked for {requested} bytes, limit {limit}")]
    OutOfMemory {
        /// `name@version`.
        plugin: String,
        /// Total bytes the refused growth would have reached.
        requested: usize,
        /// The limit.
        limit: usize,
    },
    /// The answer carries more JSON than the response cap.
    #[error("plugin {plugin} answered {size} bytes, more than the {limit}-byte limit")]
    ResponseTooLarge {
        /// `name@version`.
        plugin: String,
        /// Bytes of JSON in the answer.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The answer breaks the contract (not JSON, not an object, an undeclared kind...).
    #[error("plugin {plugin} gave an invalid answer: {reason}")]
    InvalidResponse {
        /// `name@version`.
        plugin: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No instance could be created (the host is out of resources).
    #[error("plugin {plugin} could not be instantiated: {reason}")]
    Instantiate {
        /// `name@version`.
        plugin: String,
        /// wasmtime's reason.
        reason: String,
    },
}

impl CallError {
    /// Whether retrying can help. The plugin's own errors say so themselves.
    /// Guests are deterministic, so a trap, a memory overrun or a bad answer
    /// will repeat for the same parent: permanent (reported on status; the
    /// parent or the plugin must change). A timeout or a failed
    /// instantiation can come from load on the host: transient.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::Plugin { kind, .. } => *kind,
            CallError::Timeout { .. } | CallError::Instantiate { .. } => ErrorKind::Transient,
            CallError::Trap { .. }
            | CallError::OutOfMemory { .. }
            | CallError::ResponseTooLarge { .. }
            | CallError::InvalidResponse { .. } => ErrorKind::Permanent,
        }
    }
}

/// A loaded plugin: cheap to clone, callable from any thread.
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    pre: ReconcilerPre<State>,
    info: PluginInfo,
    sha256: String,
    limits: Limits,
    /// `name@version`.
    label: String,
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
        pre: ReconcilerPre<State>,
        sha256: String,
        limits: Limits,
        path: String,
    ) -> Result<Plugin, LoadError> {
        let describe_err = |reason: String| LoadError::Describe {
            path: path.clone(),
            reason,
        };
        let raw = run(&engine, &pre, &limits, &path, |store, guest| {
            guest.call_describe(store)
        })
        .map_err(|e| describe_err(e.to_string()))?;
        let info: PluginInfo = raw.into();
        check_info(&info).map_err(describe_err)?;
        let label = format!("{}@{}", info.name, info.version);
        Ok(Plugin {
            inner: Arc::new(Inner {
                engine,
                pre,
                info,
                sha256,
                limits,
                label,
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

    /// Computes the desired children and status of one parent. Blocks for up to
    /// the timeout: async callers use `spawn_blocking` and enter their span there.
    pub fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, CallError> {
        let request = bindings::ReconcileRequest::from(req.clone());
        let answer = self.run(|store, guest| guest.call_reconcile(store, &request))?;
        self.check_reconcile(answer)
    }

    /// One cleanup step of a parent being deleted. Blocking, like `reconcile`.
    pub fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, CallError> {
        let request = bindings::FinalizeRequest::from(req.clone());
        match self.run(|store, guest| guest.call_finalize(store, &request))? {
            Ok(answer) => Ok(answer.into()),
            Err(e) => Err(self.plugin_error(e)),
        }
    }

    /// Validates a raw reconcile answer (shared with [`super::ReusedInstance`]).
    pub(super) fn check_reconcile(
        &self,
        answer: Result<bindings::ReconcileResponse, bindings::ReconcileError>,
    ) -> Result<ReconcileResponse, CallError> {
        let plugin = self.inner.label.clone();
        let raw = answer.map_err(|e| self.plugin_error(e))?;
        let limit = self.inner.limits.max_response_bytes;
        response::check(raw, &self.inner.info, limit).map_err(|refusal| match refusal {
            Refusal::TooLarge(size) => CallError::ResponseTooLarge {
                plugin,
                size,
                limit,
            },
            Refusal::Invalid(reason) => CallError::InvalidResponse { plugin, reason },
        })
    }

    fn plugin_error(&self, e: bindings::ReconcileError) -> CallError {
        CallError::Plugin {
            plugin: self.inner.label.clone(),
            kind: e.kind.into(),
            message: e.message,
        }
    }

    fn run<R>(
        &self,
        call: impl FnOnce(&mut Store<State>, &Reconciler) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let inner = &*self.inner;
        run(&inner.engine, &inner.pre, &inner.limits, &inner.label, call)
    }

    /// A new store with this plugin's limits armed, for [`super::ReusedInstance`].
    pub(super) fn instantiate(&self) -> Result<(Store<State>, Reconciler), CallError> {
        let inner = &*self.inner;
        let mut store = new_store(&inner.engine, &inner.limits, &inner.label);
        match inner.pre.instantiate(&mut store) {
            Ok(guest) => Ok((store, guest)),
            Err(e) => Err(classify(
                e,
                store.data(),
                &inner.limits,
                &inner.label,
                Stage::Instantiate,
            )),
        }
    }

    /// Re-arms the deadline of a reused store before its next call, and
    /// forgets a refused grow the guest survived, so it cannot colour the
    /// classification of a later failure.
    pub(super) fn arm(&self, store: &mut Store<State>) {
        store.data_mut().limiter.refused = None;
        store.set_epoch_deadline(self.inner.engine.ticks(self.inner.limits.timeout));
    }

    /// Maps a failed call of a reused instance like a fresh one's.
    pub(super) fn classify(&self, e: wasmtime::Error, state: &State) -> CallError {
        classify(e, state, &self.inner.limits, &self.inner.label, Stage::Call)
    }
}

fn new_store(engine: &Engine, limits: &Limits, label: &str) -> Store<State> {
    let mut store = Store::new(engine.wasmtime(), State::new(label, limits.memory));
    store.limiter(|state| &mut state.limiter);
    store.set_epoch_deadline(engine.ticks(limits.timeout));
    store.epoch_deadline_trap();
    store
}

/// One call in a fresh store: instantiate, call, forward the guest's output
/// to `tracing`, and type the failure if there is one.
fn run<R>(
    engine: &Engine,
    pre: &ReconcilerPre<State>,
    limits: &Limits,
    label: &str,
    call: impl FnOnce(&mut Store<State>, &Reconciler) -> wasmtime::Result<R>,
) -> Result<R, CallError> {
    let mut store = new_store(engine, limits, label);
    let result = match pre.instantiate(&mut store) {
        Ok(guest) => call(&mut store, &guest).map_err(|e| (e, Stage::Call)),
        Err(e) => Err((e, Stage::Instantiate)),
    };
    store.data_mut().flush_output();
    result.map_err(|(e, stage)| classify(e, store.data(), limits, label, stage))
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
    CallError::Trap { plugin, message }
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
    if let Some(child) = info.children.iter().find(|k| !k.namespaced) {
        return Err(format!(
            "child kind {} is cluster-scoped; children must be namespaced",
            child.kind
        ));
    }
    Ok(())
}
