//! Per-call guest state: WASI with nothing granted, the memory limiter, and the `log` import.

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::{self, LogLevel};

/// How much of a guest's stdout or stderr one call may write before writes
/// fail; what fits is re-emitted as `tracing` events after the call.
const CAPTURE_BYTES: usize = 256 * 1024;

/// The data of one `Store`: everything a guest can reach.
pub(super) struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    /// `name@version`, attached to every event the guest causes.
    plugin: String,
}

impl State {
    /// WASI p2 with no preopens, environment, arguments or sockets (the
    /// builder's defaults), so that Python/JS guests link but reach nothing.
    pub(super) fn new(plugin: &str, memory_limit: usize) -> Self {
        let stdout = MemoryOutputPipe::new(CAPTURE_BYTES);
        let stderr = MemoryOutputPipe::new(CAPTURE_BYTES);
        let wasi = WasiCtxBuilder::new()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(memory_limit),
            stdout,
            stderr,
            plugin: plugin.to_string(),
        }
    }

    /// Re-emits what the guest wrote to stdout (info) and stderr (warn) in the
    /// current span, one event per line.
    pub(super) fn flush_output(&self) {
        for line in String::from_utf8_lossy(&self.stdout.contents()).lines().filter(|l| !l.trim().is_empty()) {
            tracing::info!(plugin = %self.plugin, stream = "stdout", "{line}");
        }
        for line in String::from_utf8_lossy(&self.stderr.contents()).lines().filter(|l| !l.trim().is_empty()) {
            tracing::warn!(plugin = %self.plugin, stream = "stderr", "{line}");
        }
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl bindings::weir::reconciler::types::Host for State {}

impl bindings::ReconcilerImports for State {
    /// The guest runs on the caller's thread, so the caller's span (the
    /// reconcile span) is current here and the event lands inside it.
    fn log(&mut self, level: LogLevel, message: String) {
        let plugin = self.plugin.as_str();
        match level {
            LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            LogLevel::Info => tracing::info!(plugin, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

/// Caps the total linear memory of all a guest's memories and remembers
/// whether it had to refuse, so a trap that follows a refused grow is
/// reported as out-of-memory rather than as a plain trap.
pub(super) struct MemoryLimiter {
    limit: usize,
    used: usize,
    /// The total the guest asked for when it was refused, if it was.
    pub(super) refused: Option<usize>,
}

impl MemoryLimiter {
    fn new(limit: usize) -> Self {
        Self { limit, used: 0, refused: None }
    }
}

/// Table growth is bounded only to keep a runaway guest from exhausting the host.
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.used.saturating_sub(current).saturating_add(desired);
        if total > self.limit {
            self.refused = Some(total);
            return Ok(false);
        }
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}
