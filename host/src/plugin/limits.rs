//! The limits every plugin call runs under.

use std::time::Duration;

/// Per-plugin limits; each call gets all of them afresh (the log rate is
/// per plugin, shared by its calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget of one call, instantiation included (default 1 s).
    /// It covers everything: wasm code is interrupted at the next epoch tick,
    /// and a guest blocked in the host (a WASI sleep or poll) is cancelled at
    /// the same instant. Either way the call ends in `CallError::Timeout`.
    pub timeout: Duration,
    /// Total linear memory of the guest in bytes (default 64 MiB).
    pub memory: usize,
    /// Total bytes of JSON one response may carry (default 4 MiB): more than
    /// Kubernetes stores for a handful of objects, far below the memory cap.
    /// The host also copies at most about this much out of the guest in one
    /// answer or import call (wasmtime's hostcall fuel, see
    /// [`Limits::host_copy_bytes`]), so a larger answer is refused before
    /// the host allocates it.
    pub max_response_bytes: usize,
    /// Bytes of a plugin's error message kept (default 4 KiB): it ends up in a
    /// condition message (32 768 bytes in Kubernetes) and an Event note
    /// (1 024), and a reason rarely needs more than a paragraph.
    pub max_error_bytes: usize,
    /// Bytes of one `log` line kept (default 1 KiB): a log line is a sentence,
    /// not a payload.
    pub max_log_line_bytes: usize,
    /// Bytes of log (the `log` import, stdout and stderr together) one call
    /// may emit (default 16 KiB): sixteen full lines, plenty to explain a
    /// reconcile, and a bound on what a thousand reconciles cost the log.
    pub max_log_bytes_per_call: usize,
    /// Log lines per second a plugin may emit across all its calls (default
    /// 100, with a burst of as many): enough for a busy controller, not
    /// enough to drown the host's own lines. Lines over any log limit are
    /// dropped and counted; the count is reported once at the end of the call.
    pub log_lines_per_second: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(1),
            memory: 64 << 20,
            max_response_bytes: 4 << 20,
            max_error_bytes: 4 << 10,
            max_log_line_bytes: 1 << 10,
            max_log_bytes_per_call: 16 << 10,
            log_lines_per_second: 100,
        }
    }
}

impl Limits {
    /// Bytes the host copies out of the guest in one lift (the answer of a
    /// call, or the arguments of one import call) before it refuses: the
    /// response cap, plus half again for the bookkeeping wasmtime counts per
    /// string of a list (24 bytes; the smallest valid child is about 50 bytes
    /// of JSON), plus 64 KiB for the rest of the answer.
    pub fn host_copy_bytes(&self) -> usize {
        self.max_response_bytes
            .saturating_add(self.max_response_bytes / 2)
            .saturating_add(64 << 10)
    }
}
