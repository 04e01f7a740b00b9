//! Guest log lines: capped per line, per call and per second, escaped, and emitted as a field.
//!
//! A guest's text never becomes the message of a host log line: it is the
//! `text` field of a `plugin log` event, printed quoted with newlines and
//! control characters escaped, so it cannot forge a line that looks like the
//! host's own. Lines over a limit are dropped and counted; the count is
//! reported once, when the call ends.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::limits::Limits;
use super::text::truncate;

/// Severity of a guest line (the `log` import's levels; stdout is info, stderr warn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// A token bucket of log lines, shared by all calls of one plugin.
#[derive(Debug)]
pub(super) struct LogRate {
    per_second: f64,
    tokens: f64,
    last: Instant,
}

impl LogRate {
    /// A full bucket: one second's worth of lines may come at once.
    pub(super) fn new(per_second: u32) -> Arc<Mutex<LogRate>> {
        Arc::new(Mutex::new(LogRate {
            per_second: f64::from(per_second),
            tokens: f64::from(per_second),
            last: Instant::now(),
        }))
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + refill).min(self.per_second);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The log budget of one call.
pub(super) struct CallLog {
    /// `name@version`, attached to every event.
    plugin: String,
    max_line: usize,
    max_bytes: usize,
    rate: Arc<Mutex<LogRate>>,
    /// Bytes emitted in this call.
    bytes: usize,
    /// Lines dropped in this call, not yet reported.
    dropped: usize,
}

impl CallLog {
    pub(super) fn new(plugin: &str, limits: &Limits, rate: Arc<Mutex<LogRate>>) -> Self {
        Self {
            plugin: plugin.to_string(),
            max_line: limits.max_log_line_bytes,
            max_bytes: limits.max_log_bytes_per_call,
            rate,
            bytes: 0,
            dropped: 0,
        }
    }

    /// Emits one guest line (`stream` is `log`, `stdout` or `stderr`) if the
    /// budget allows, in the current span.
    pub(super) fn line(&mut self, level: Level, stream: &'static str, text: &str) {
        let text = truncate(text, self.max_line);
        let fits = self.bytes.saturating_add(text.len()) <= self.max_bytes;
        // A poisoned bucket only means another call panicked mid-update.
        let allowed = fits
            && self
                .rate
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
        if !allowed {
            self.dropped += 1;
            return;
        }
        self.bytes += text.len();
        // `?` prints the text quoted, with newlines and control characters escaped.
        let (plugin, text) = (self.plugin.as_str(), text.as_ref());
        match level {
            Level::Trace => tracing::trace!(plugin, stream, text = ?text, "plugin log"),
            Level::Debug => tracing::debug!(plugin, stream, text = ?text, "plugin log"),
            Level::Info => tracing::info!(plugin, stream, text = ?text, "plugin log"),
            Level::Warn => tracing::warn!(plugin, stream, text = ?text, "plugin log"),
            Level::Error => tracing::error!(plugin, stream, text = ?text, "plugin log"),
        }
    }

    /// Reports the lines dropped since the last report, once, and starts a
    /// new call's budget.
    pub(super) fn finish(&mut self) {
        if self.dropped > 0 {
            let dropped = self.dropped;
            tracing::warn!(plugin = %self.plugin, dropped, "{dropped} log lines dropped");
        }
        self.dropped = 0;
        self.bytes = 0;
    }
}
