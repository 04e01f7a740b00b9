//! The error a reconcile or finalize step returns, and whether retrying can help.

/// A failed reconcile or finalize step.
///
/// The variant tells the host what to do next; the message is shown to users
/// in the parent's `Reconciled` condition and in an Event, so write it for them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Retrying will not help until the parent changes (an invalid spec, ...).
    #[error("{0}")]
    Permanent(String),
    /// Retrying may help (something this plugin waits for is not there yet, ...).
    #[error("{0}")]
    Transient(String),
}

impl Error {
    /// An error the host reports and then waits for the parent to change.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::Permanent(message.into())
    }

    /// An error the host retries with exponential backoff.
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Transient(message.into())
    }

    /// The message shown to users.
    pub fn message(&self) -> &str {
        match self {
            Self::Permanent(message) | Self::Transient(message) => message,
        }
    }

    /// Whether the host should retry without waiting for a change.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }
}

/// The result of a reconcile or finalize step.
pub type Result<T, E = Error> = std::result::Result<T, E>;
