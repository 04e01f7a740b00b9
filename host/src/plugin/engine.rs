//! Compiles and links plugin components: one wasmtime engine, an epoch ticker, a precompiled cache.

use std::borrow::Cow;
use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use wasmtime::component::{Component, Linker};

use super::apart::Apart;
use super::bindings::{v1, v2, v3, v4};
use super::ledger::Ledger;
use super::precompiled::Precompiled;
use super::store::State;
use super::types::Contract;

/// The newest contract version this host speaks (`wit/0.4.0/reconciler.wit`); it loads every
/// version of [`Contract::ALL`].
pub const CONTRACT_VERSION: (u64, u64, u64) = (0, 4, 0);

/// `weir --version`: this host's version and every contract it loads ([`Contract::ALL`]).
pub const VERSION_LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (weir:reconciler@0.1.0, weir:reconciler@0.2.0, weir:reconciler@0.3.0, weir:reconciler@0.4.0)"
);

/// Bytes of each pooled memory and table kept mapped between instances, by default.
pub const POOL_KEEP_RESIDENT: usize = 4 << 20;

/// Elements of each pooled table: room for interpreter guests (Python, JS).
const POOL_TABLE_ELEMENTS: usize = 200_000;

/// How the shared engine is set up. Changing any field changes the compiled
/// code, so precompiled artifacts are keyed by it (wasmtime hashes its config).
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Where compiled plugins are cached (`DIR/precompiled/`), keyed by the
    /// component's sha256 and the engine configuration, and mapped on load.
    /// `None` compiles on every load: fine for tests, slow for Python/JS
    /// guests (seconds each).
    pub cache_dir: Option<PathBuf>,
    /// Granularity of call deadlines: a call is stopped within one tick of its timeout.
    pub epoch_tick: Duration,
    /// Reserve instance slots up front (wasmtime's pooling allocator) instead of
    /// mapping memory on each instantiation. On by default: it roughly halves
    /// the cost of a fresh instance (`host/benches/README.md`). It reserves
    /// virtual address space (terabytes, not resident memory) and caps
    /// concurrent instances at 1000 per engine.
    pub pooling: bool,
    /// With `pooling`: bytes at the start of each instance slot's memory and table that stay
    /// resident when the instance ends (default [`POOL_KEEP_RESIDENT`], 4 MiB). The pages the
    /// guest wrote there are put back (copied from the component's memory image, or zeroed)
    /// instead of given back to the kernel, so the next instance in the slot takes no page
    /// faults on them; past it, or past the first 32 runs of written pages, memory is given
    /// back. A freed slot keeps at most this much resident per memory; the instance itself is
    /// new either way.
    pub keep_resident: usize,
    /// Compile with wasmtime's baseline compiler (Winch) instead of its optimizing one
    /// (Cranelift): a Python or JavaScript component compiles in a fraction of the time,
    /// into slower code. Nothing else changes: the same limits, epoch deadlines, linker and
    /// contract checks (Winch is a fully supported wasmtime compiler on x86_64). For
    /// development (`weir dev --watch`); off by default. Its artifacts are cached apart.
    pub baseline_compiler: bool,
    /// Compile a component the cache lacks in a short-lived child process running this
    /// program (`weir compile-plugin`), so the compiler's memory peak is not the host's
    /// (`weir run` sets it to its own binary). Needs `cache_dir`; `None` compiles in-process.
    pub compiler: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            epoch_tick: Duration::from_millis(10),
            pooling: true,
            keep_resident: POOL_KEEP_RESIDENT,
            baseline_compiler: false,
            compiler: None,
        }
    }
}

/// Why a component could not be loaded; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The engine could not be configured (bad cache dir, no ticker thread).
    #[error("cannot set up the WebAssembly engine: {reason}")]
    Engine {
        /// What went wrong.
        reason: String,
    },
    /// The file could not be read.
    #[error("cannot read plugin {path}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a WebAssembly component (a core module, or not wasm at all).
    #[error("plugin {path} is not a WebAssembly component ({found})")]
    NotAComponent {
        /// The file.
        path: String,
        /// What the bytes look like instead.
        found: &'static str,
    },
    /// wasmtime refused to compile the component.
    #[error("cannot compile plugin {path}")]
    Compile {
        /// The file.
        path: String,
        /// wasmtime's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The component targets another world or a version of the contract this host does not speak.
    #[error("plugin {path} does not implement weir:reconciler@{host}: {reason}", host = contract_versions())]
    WrongContract {
        /// The file.
        path: String,
        /// What does not match.
        reason: String,
    },
    /// `describe` failed or returned something unusable.
    #[error("plugin {path}: describe() failed: {reason}")]
    Describe {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

fn contract_versions() -> String {
    let versions: Vec<&str> = Contract::ALL.iter().map(|c| c.version()).collect();
    versions.join(" or ")
}

/// The shared WebAssembly engine: cheap to clone, safe to share between threads.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    engine: wasmtime::Engine,
    /// One linker per contract version: each links its own `log` import and `types` instance.
    linkers: [(Contract, Linker<State>); Contract::ALL.len()],
    /// Compiled artifacts on disk, when a cache directory is configured.
    precompiled: Option<Precompiled>,
    /// The component compiled last and its sha256: a check of a new build (`weir dev --watch`)
    /// and the host's load of the same bytes just after share one compile, with or without
    /// a cache directory.
    last_compiled: Mutex<Option<(String, Component)>>,
    tick: Duration,
    stop_ticker: Arc<AtomicBool>,
    /// Drives the timers of calls (their deadlines, a guest's WASI sleeps).
    timers: &'static tokio::runtime::Runtime,
    /// Held while a component compiles: one compile at a time, so that several plugins loading
    /// at once (a host starting with an empty cache) do not add their compilers' peaks up.
    compiling: Mutex<()>,
    /// Where components the cache lacks are compiled, when not in this process.
    apart: Option<Apart>,
    /// Components compiled by a child process so far.
    compiled_apart: std::sync::atomic::AtomicU64,
    /// The plugins loaded and the code each keeps (`/metrics`).
    ledger: Ledger,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("epoch_tick", &self.inner.tick)
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl Engine {
    /// Builds the engine, links WASI p2 (nothing granted) and the `log` import,
    /// and starts the thread that advances the epoch every `epoch_tick`.
    pub fn new(config: EngineConfig) -> Result<Engine, LoadError> {
        let engine_err = |reason: String| LoadError::Engine { reason };
        let mut wasm = wasmtime::Config::new();
        // Guests (Rust, componentize-py, StarlingMonkey) use linear memory
        // only; without the GC proposals no collector has to be linked.
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .gc_support(false);
        if config.baseline_compiler {
            wasm.strategy(wasmtime::Strategy::Winch);
        }
        if config.pooling {
            let mut pool = wasmtime::PoolingAllocationConfig::new();
            // Reset memory by memset instead of unmapping it, so the next
            // instance in the slot takes no page faults (wasmtime's advice
            // for many short-lived instances).
            pool.linear_memory_keep_resident(config.keep_resident)
                .table_keep_resident(config.keep_resident)
                .pagemap_scan(wasmtime::Enabled::Auto)
                // CPython's function table alone exceeds the default 20 000.
                .table_elements(POOL_TABLE_ELEMENTS)
                // A freed slot is reused (least recently used first) before a fresh one is
                // touched, even if it last held another plugin: the slots that ever keep memory
                // resident are as many as the calls that ran at once, not a warm slot per
                // plugin (wasmtime keeps up to 100 by default).
                .max_unused_warm_slots(0);
            wasm.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = wasmtime::Engine::new(&wasm).map_err(|e| engine_err(format!("{e:#}")))?;
        let apart =
            config
                .compiler
                .clone()
                .zip(config.cache_dir.clone())
                .map(|(program, cache_dir)| Apart {
                    program,
                    cache_dir,
                    pooling: config.pooling,
                    baseline_compiler: config.baseline_compiler,
                });
        let precompiled = config
            .cache_dir
            .as_deref()
            .map(|dir| Precompiled::open(dir, &engine))
            .transpose()
            .map_err(engine_err)?;

        // Async WASI: a guest waiting in the host (a sleep, a poll) is a
        // pending future the call's deadline can cancel, where the sync
        // linker would block the thread past it.
        let linker = |contract: Contract| -> Result<Linker<State>, LoadError> {
            let mut linker = Linker::new(&engine);
            wasmtime_wasi::p2::add_to_linker_async(&mut linker)
                .map_err(|e| engine_err(format!("linking WASI: {e:#}")))?;
            let linked =
                match contract {
                    Contract::V0_1 => v1::Reconciler::add_to_linker::<
                        _,
                        wasmtime::component::HasSelf<_>,
                    >(&mut linker, |s| s),
                    Contract::V0_2 => v2::Reconciler::add_to_linker::<
                        _,
                        wasmtime::component::HasSelf<_>,
                    >(&mut linker, |s| s),
                    Contract::V0_3 => v3::Reconciler::add_to_linker::<
                        _,
                        wasmtime::component::HasSelf<_>,
                    >(&mut linker, |s| s),
                    Contract::V0_4 => v4::Reconciler::add_to_linker::<
                        _,
                        wasmtime::component::HasSelf<_>,
                    >(&mut linker, |s| s),
                };
            linked
                .map_err(|e| engine_err(format!("linking the log import of {contract}: {e:#}")))?;
            Ok(linker)
        };
        let linkers = [
            (Contract::V0_1, linker(Contract::V0_1)?),
            (Contract::V0_2, linker(Contract::V0_2)?),
            (Contract::V0_3, linker(Contract::V0_3)?),
            (Contract::V0_4, linker(Contract::V0_4)?),
        ];

        let timers = timer_runtime().map_err(engine_err)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        let tick = config.epoch_tick.max(Duration::from_millis(1));
        {
            let (engine, stop) = (engine.clone(), stop_ticker.clone());
            std::thread::Builder::new()
                .name("weir-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| engine_err(format!("starting the epoch thread: {e}")))?;
        }
        Ok(Engine {
            inner: Arc::new(Inner {
                engine,
                linkers,
                precompiled,
                last_compiled: Mutex::new(None),
                tick,
                stop_ticker,
                timers,
                compiling: Mutex::new(()),
                apart,
                compiled_apart: std::sync::atomic::AtomicU64::new(0),
                ledger: Ledger::default(),
            }),
        })
    }

    /// Compiles `bytes` (whose sha256 is `sha256`) into the precompiled cache, for a host
    /// that compiles apart (`weir compile-plugin`); a component already there is left as is.
    pub fn precompile(&self, sha256: &str, bytes: &[u8]) -> Result<(), LoadError> {
        if self.inner.precompiled.is_none() {
            return Err(LoadError::Engine {
                reason: "no precompiled cache to compile into (set a cache directory)".into(),
            });
        }
        self.component(sha256, sha256, || Ok(Cow::Borrowed(bytes)))
            .map(|_| ())
    }

    /// How many components a child process compiled for this engine (see
    /// [`EngineConfig::compiler`]).
    pub fn compiled_apart(&self) -> u64 {
        self.inner.compiled_apart.load(Ordering::Relaxed)
    }

    /// The compiled component: the one compiled last if it has this sha256, else mapped from
    /// the precompiled cache, or compiled from `bytes()` one at a time, stored there and mapped
    /// back from it, so that its code is a shared, reclaimable file mapping rather than the
    /// compiler's private copy.
    pub(super) fn component<'b>(
        &self,
        path: &str,
        sha256: &str,
        bytes: impl FnOnce() -> Result<Cow<'b, [u8]>, LoadError>,
    ) -> Result<Component, LoadError> {
        let engine = &self.inner.engine;
        let last = || {
            self.inner
                .last_compiled
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some((_, component)) = last().as_ref().filter(|(sha, _)| sha == sha256) {
            return Ok(component.clone());
        }
        let cache = self.inner.precompiled.as_ref();
        if let Some(component) = cache.and_then(|c| c.lookup(engine, sha256)) {
            return Ok(component);
        }
        let _one_at_a_time = self
            .inner
            .compiling
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Another load of the same component may have compiled it while this one waited.
        if let Some(component) = cache.and_then(|c| c.lookup(engine, sha256)) {
            return Ok(component);
        }
        let bytes = bytes()?;
        if let (Some(apart), Some(cache)) = (&self.inner.apart, cache) {
            match apart.compile(sha256, &bytes) {
                Ok(()) => {
                    if let Some(component) = cache.lookup(engine, sha256) {
                        self.inner.compiled_apart.fetch_add(1, Ordering::Relaxed);
                        *last() = Some((sha256.to_owned(), component.clone()));
                        return Ok(component);
                    }
                    tracing::warn!(
                        plugin = path,
                        "the compiling child stored nothing usable; compiling here"
                    );
                }
                Err(why) => {
                    tracing::warn!(plugin = path, %why, "compiling in a child process failed; compiling here");
                }
            }
        }
        let component = Component::from_binary(engine, &bytes).map_err(|e| LoadError::Compile {
            path: path.to_owned(),
            source: e.into(),
        })?;
        let component = match cache {
            Some(cache) => {
                cache.store(sha256, &component);
                cache.lookup(engine, sha256).unwrap_or(component)
            }
            None => component,
        };
        *last() = Some((sha256.to_owned(), component.clone()));
        Ok(component)
    }

    /// The linker for components built against `contract`.
    pub(super) fn linker(&self, contract: Contract) -> Option<&Linker<State>> {
        self.inner
            .linkers
            .iter()
            .find_map(|(c, l)| (*c == contract).then_some(l))
    }

    pub(super) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.engine
    }

    pub(super) fn ledger(&self) -> &Ledger {
        &self.inner.ledger
    }

    /// Compiled code bytes of the loaded plugins, per plugin name.
    pub fn code_bytes(&self) -> std::collections::BTreeMap<String, u64> {
        self.inner.ledger.code_bytes()
    }

    /// Bytes the instance pool keeps resident in slots no call is using (0 without pooling).
    pub fn pool_resident_bytes(&self) -> u64 {
        self.inner
            .engine
            .pooling_allocator_metrics()
            .map_or(0, |m| {
                let stacks = m.unused_stack_bytes_resident().unwrap_or(0);
                (m.unused_memory_bytes_resident() + m.unused_table_bytes_resident() + stacks) as u64
            })
    }

    /// Runs a call's future on the current thread until it ends or `timeout`
    /// passes (then it is dropped, cancelling the guest wherever it is), with
    /// the sandbox's timer runtime entered so that the deadline and the
    /// guest's WASI timers fire. Works from any thread, inside a Tokio runtime or
    /// not (the timer runtime has a thread of its own); it blocks the thread
    /// like the sync calls did, and async callers use `spawn_blocking`.
    pub(super) fn block_with_deadline<F: Future>(
        &self,
        timeout: Duration,
        future: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        let _timers = self.inner.timers.enter();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut future = pin!(future);
        // Most calls never wait in the host: their first poll runs the guest to its answer (wasm
        // code is stopped by the epoch deadline), so the timer is set only for a call that is
        // still pending after it, at the same deadline.
        if let Poll::Ready(out) = future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            return Ok(out);
        }
        // Built inside the runtime context: the timeout's timer needs it. Its first poll polls
        // the call again, with a waker that wakes this thread.
        let mut timed = pin!(tokio::time::timeout_at(deadline, future));
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(out) = timed.as_mut().poll(&mut cx) {
                return out;
            }
            std::thread::park();
        }
    }

    /// Epoch ticks that make up `timeout`, rounded up so a call gets at least
    /// `timeout` minus one tick.
    pub(super) fn ticks(&self, timeout: Duration) -> u64 {
        let tick = self.inner.tick.as_nanos().max(1);
        (timeout.as_nanos().div_ceil(tick)).max(1) as u64
    }
}

/// Wakes the thread blocked in [`Engine::block_with_deadline`] (a spurious wake-up only
/// polls once more).
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// One small runtime for the timers of all engines, created on first use and
/// never dropped (dropping a runtime inside another one's task panics).
fn timer_runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static TIMERS: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    TIMERS
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("weir-plugin-timers")
                .enable_all()
                .build()
                .map_err(|e| format!("starting the plugin timer runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}
