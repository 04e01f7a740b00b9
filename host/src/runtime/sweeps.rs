//! Expired entries swept from a table a hot path writes, at most once per period instead of on every write.

use std::time::{Duration, Instant};

/// When a table was last swept.
#[derive(Debug, Default)]
pub(crate) struct Sweeps {
    last: Option<Instant>,
}

impl Sweeps {
    /// Whether a sweep is due at `now`: never swept, or `every` has passed since the last sweep.
    /// A due sweep counts as done at `now`.
    pub(crate) fn due(&mut self, now: Instant, every: Duration) -> bool {
        if self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < every)
        {
            return false;
        }
        self.last = Some(now);
        true
    }
}
