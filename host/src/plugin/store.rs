//! Per-call guest state: WASI with nothing granted, the memory limiter, and the `log` import.

use std::sync::{Arc, Mutex};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::{v1, v2, v3, v4};
use super::limits::Limits;
use super::log::{CallLog, Level, LogRate};

/// How much of a guest's stdout or stderr one call may write before writes
/// fail; what fits is re-emitted through the call's log budget after the call.
const CAPTURE_BYTES: usize = 256 * 1024;

/// The data of one `Store`: everything a guest can reach.
pub(super) struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limiter: MemoryLimiter,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    /// Bytes of stdout and stderr already re-emitted (a reused store keeps its pipes).
    emitted: (usize, usize),
    /// The log budget of the current call.
    log: CallLog,
}

impl State {
    /// WASI p2 with no preopens, environment, arguments or sockets (the
    /// builder's defaults), so that Python/JS guests link but reach nothing.
    pub(super) fn new(plugin: &str, limits: &Limits, log_rate: Arc<Mutex<LogRate>>) -> Self {
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
            limiter: MemoryLimiter::new(limits.memory),
            stdout,
            stderr,
            emitted: (0, 0),
            log: CallLog::new(plugin, limits, log_rate),
        }
    }

    /// Ends a call's logging: re-emits what the guest wrote since the last
    /// flush to stdout (info) and stderr (warn), one event per line, under
    /// the call's log budget, then reports dropped lines once.
    pub(super) fn flush_output(&mut self) {
        let stdout = self.stdout.contents();
        let stderr = self.stderr.contents();
        let new = |all: &[u8], seen: usize| {
            String::from_utf8_lossy(all.get(seen..).unwrap_or_default()).into_owned()
        };
        for (text, level, stream) in [
            (new(&stdout, self.emitted.0), Level::Info, "stdout"),
            (new(&stderr, self.emitted.1), Level::Warn, "stderr"),
        ] {
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                self.log.line(level, stream, line);
            }
        }
        self.emitted = (stdout.len(), stderr.len());
        self.log.finish();
    }
}

impl State {
    /// The last lines the guest wrote to stderr (where a Rust guest's panic
    /// message goes before it aborts), to explain a trap.
    pub(super) fn stderr_tail(&self) -> Option<String> {
        const MAX_LINES: usize = 3;
        let all = self.stderr.contents();
        let text = String::from_utf8_lossy(&all);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
            .collect();
        let tail = lines[lines.len().saturating_sub(MAX_LINES)..].join(" / ");
        (!tail.is_empty()).then(|| tail.chars().take(500).collect())
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl v1::weir::reconciler::types::Host for State {}
impl v2::weir::reconciler::types::Host for State {}
impl v3::weir::reconciler::types::Host for State {}
impl v4::weir::reconciler::types::Host for State {}

/// The guest runs on the caller's thread, so the caller's span (the reconcile span) is current
/// in the `log` import and the event lands inside it.
impl v1::ReconcilerImports for State {
    fn log(&mut self, level: v1::LogLevel, message: String) {
        self.log.line(level.into(), "log", &message);
    }
}

impl v2::ReconcilerImports for State {
    fn log(&mut self, level: v2::LogLevel, message: String) {
        self.log.line(level.into(), "log", &message);
    }
}

impl v3::ReconcilerImports for State {
    fn log(&mut self, level: v3::LogLevel, message: String) {
        self.log.line(level.into(), "log", &message);
    }
}

impl v4::ReconcilerImports for State {
    fn log(&mut self, level: v4::LogLevel, message: String) {
        self.log.line(level.into(), "log", &message);
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
        Self {
            limit,
            used: 0,
            refused: None,
        }
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
