//! How a plugin call can fail, as the judge, the error policy and the rollout's count see it.

use crate::plugin::ErrorKind;

/// A plugin failure as the reconcile loop sees it: retry or report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PluginError {
    /// Whether retrying can help.
    pub kind: ErrorKind,
    /// What went wrong, naming the plugin.
    pub message: String,
    /// Whether the plugin answered but the answer broke the contract (refused, nothing written).
    pub refused: bool,
    /// What failed, for counting a candidate version's failures by cause (`crate::rollout`).
    pub cause: FailureCause,
}

/// What made a plugin call fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureCause {
    /// The plugin reported an error of its own (or the host could not make the call).
    Error,
    /// The guest trapped.
    Trap,
    /// The call ran past its deadline.
    Timeout,
    /// The guest ran out of memory.
    Memory,
    /// The answer broke the contract or the host's rules: refused, nothing written.
    Refused,
}

impl FailureCause {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Trap => "trap",
            Self::Timeout => "timeout",
            Self::Memory => "memory",
            Self::Refused => "refused",
        }
    }
}

impl PluginError {
    /// A failure the plugin (or the call) reported.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            refused: false,
            cause: FailureCause::Error,
        }
    }

    /// An answer the host refused: permanent, nothing written.
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Permanent,
            message: message.into(),
            refused: true,
            cause: FailureCause::Refused,
        }
    }
}
