//! The hot loader's Prometheus metrics.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a refusal.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

/// Labels of a change in what is served.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChangeLabels {
    change: String,
}

/// Counters the hot loader keeps; clones share the same values.
#[derive(Clone, Debug)]
pub struct HotloadMetrics {
    refusals: Family<ReasonLabels, Counter>,
    changes: Family<ChangeLabels, Counter>,
    compile_seconds: Histogram,
    served: Gauge,
}

impl Default for HotloadMetrics {
    fn default() -> Self {
        Self {
            refusals: Family::default(),
            changes: Family::default(),
            // 10 ms .. ~40 s: a cached Rust plugin loads in milliseconds, a Python one compiles for ~8 s.
            compile_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 13)),
            served: Gauge::default(),
        }
    }
}

impl HotloadMetrics {
    /// Adds these metrics to `registry` (the host's, whose `weir_` prefix they take).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "plugin_refusals",
            "Plugin files refused (invalid, or claiming a kind another file serves)",
            self.refusals.clone(),
        );
        registry.register(
            "plugin_changes",
            "Plugins added, replaced and removed by hot-loading",
            self.changes.clone(),
        );
        registry.register(
            "plugin_load_seconds",
            "Time to load (compile or fetch precompiled) and validate one plugin file",
            self.compile_seconds.clone(),
        );
        registry.register(
            "plugins_served",
            "Parent kinds served by a plugin",
            self.served.clone(),
        );
    }

    pub(crate) fn refused(&self, reason: &str) {
        self.refusals
            .get_or_create(&ReasonLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    pub(crate) fn changed(&self, change: &str, served: usize) {
        self.changes
            .get_or_create(&ChangeLabels {
                change: change.to_owned(),
            })
            .inc();
        self.served.set(i64::try_from(served).unwrap_or(i64::MAX));
    }

    pub(crate) fn loaded_in(&self, seconds: f64) {
        self.compile_seconds.observe(seconds);
    }

    /// How many files were refused for `reason` (`invalid` or `conflict`).
    pub fn refusals(&self, reason: &str) -> u64 {
        self.refusals
            .get_or_create(&ReasonLabels {
                reason: reason.to_owned(),
            })
            .get()
    }
}
