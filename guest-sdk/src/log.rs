//! Logging from a plugin: the host turns each line into a `tracing` event in the reconcile's span.

/// How important a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Useful when debugging the plugin.
    Debug,
    /// Something worth knowing happened.
    Info,
    /// Something unexpected, but the reconcile goes on.
    Warn,
    /// The reconcile is failing.
    Error,
}

/// Writes one log line at `level`.
///
/// Inside the component this calls the host; natively (unit tests) it writes
/// to stderr, which the test harness captures per test.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::__private::emit(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{level:?}] {message}");
}

/// Writes one line at [`Level::Trace`].
pub fn trace(message: &str) {
    log(Level::Trace, message);
}

/// Writes one line at [`Level::Debug`].
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Writes one line at [`Level::Info`].
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Writes one line at [`Level::Warn`].
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Writes one line at [`Level::Error`].
pub fn error(message: &str) {
    log(Level::Error, message);
}
