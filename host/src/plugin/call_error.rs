//! Why a plugin call gave no usable answer: one error type, each variant naming the plugin.

use std::time::Duration;

use super::types::ErrorKind;

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
    #[error(
        "plugin {plugin} answered {}{size} bytes, more than the {limit}-byte limit",
        if *exact { "" } else { "over " }
    )]
    ResponseTooLarge {
        /// `name@version`.
        plugin: String,
        /// Bytes of JSON in the answer, or, when `exact` is false, the
        /// bytes the host copied before it stopped copying.
        size: usize,
        /// The limit.
        limit: usize,
        /// Whether `size` is the whole answer (false: the answer was so large
        /// the host refused to copy it out of the guest).
        exact: bool,
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
