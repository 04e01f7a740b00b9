//! The limits every plugin call runs under.

use std::time::Duration;

/// Per-plugin limits; each call gets all of them afresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget of one call, instantiation included (default 1 s).
    /// Enforced by epoch interruption, so within one engine tick.
    pub timeout: Duration,
    /// Total linear memory of the guest in bytes (default 64 MiB).
    pub memory: usize,
    /// Total bytes of JSON one response may carry (default 4 MiB): more than
    /// Kubernetes stores for a handful of objects, far below the memory cap.
    pub max_response_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(1),
            memory: 64 << 20,
            max_response_bytes: 4 << 20,
        }
    }
}
