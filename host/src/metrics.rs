//! Prometheus metrics of the host, all in one place.
//!
//! API writes are counted per verb here (not only in the emulator's request log) so that
//! "zero writes on resync" can be asserted against a real cluster too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels carrying the plugin name only.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    /// Plugin name.
    pub plugin: String,
}

/// Labels of the reconcile counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// Plugin name.
    pub plugin: String,
    /// `success`, `error`, `refused`, `gone`.
    pub result: String,
}

/// Labels of the API write counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// Plugin name.
    pub plugin: String,
    /// `apply`, `patch`, `delete`, `create`.
    pub verb: String,
    /// Plural resource name, e.g. `deployments`, `blogs/status`, `events`.
    pub resource: String,
}

/// Labels of the rollout counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RolloutLabels {
    /// Plugin name.
    pub plugin: String,
    /// The kind of difference (`children`, `status`, `requeue`, `error`) or the candidate's
    /// failure (`error`, `trap`, `timeout`, `memory`, `refused`, `hot-loop`).
    pub kind: String,
}

/// Labels of the cache gauges: the kind a store holds.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// API group (empty for the core group).
    pub group: String,
    /// Kind.
    pub kind: String,
}

/// Labels of the index gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IndexLabels {
    /// API group of the indexed kind (empty for the core group).
    pub group: String,
    /// The indexed kind.
    pub kind: String,
    /// `owner`, `labels` (the stores') or `related` (the plugins' related-object indexes).
    pub index: String,
}

/// The gauges one store adds its size to (several stores of a kind may overlap for a moment).
#[derive(Clone, Debug)]
pub struct StoreGauges {
    objects: Gauge,
    bytes: Gauge,
    owner: Gauge,
    labels: Gauge,
}

impl StoreGauges {
    /// Adds `now - before` (objects, bytes, owner and label index entries).
    pub fn add(&self, now: [i64; 4], before: [i64; 4]) {
        let gauges = [&self.objects, &self.bytes, &self.owner, &self.labels];
        for ((gauge, now), before) in gauges.into_iter().zip(now).zip(before) {
            gauge.inc_by(now - before);
        }
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 2.0, 20))
}

/// Every metric the host exports.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    reconcile_seconds: Family<PluginLabels, Histogram, fn() -> Histogram>,
    plugin_call_seconds: Family<PluginLabels, Histogram, fn() -> Histogram>,
    queue_depth: Family<PluginLabels, Gauge>,
    writes: Family<WriteLabels, Counter>,
    backoffs: Family<PluginLabels, Counter>,
    hot_loops: Family<PluginLabels, Counter>,
    related_enqueues: Family<PluginLabels, Counter>,
    shadow_compared: Family<PluginLabels, Counter>,
    shadow_diffs: Family<RolloutLabels, Counter>,
    candidate_failures: Family<RolloutLabels, Counter>,
    cached_objects: Family<KindLabels, Gauge>,
    cached_bytes: Family<KindLabels, Gauge>,
    index_entries: Family<IndexLabels, Gauge>,
    writes_total: AtomicU64,
    reconciles_total: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("weir");
        let reconciles = Family::default();
        let reconcile_seconds =
            Family::new_with_constructor(duration_histogram as fn() -> Histogram);
        let plugin_call_seconds =
            Family::new_with_constructor(duration_histogram as fn() -> Histogram);
        let queue_depth = Family::default();
        let writes = Family::default();
        let backoffs = Family::default();
        let hot_loops = Family::default();
        let related_enqueues = Family::default();
        let shadow_compared = Family::default();
        let shadow_diffs = Family::default();
        let candidate_failures = Family::default();
        let (cached_objects, cached_bytes, index_entries) = Self::cache_gauges(&mut registry);
        registry.register(
            "rollout_compared",
            "Reconciles whose serving and candidate answers were compared",
            shadow_compared.clone(),
        );
        registry.register(
            "rollout_diffs",
            "Compared reconciles whose answers differed, by kind of difference",
            shadow_diffs.clone(),
        );
        registry.register(
            "rollout_candidate_failures",
            "Candidate calls that failed, were refused or asked to run again at once",
            candidate_failures.clone(),
        );
        registry.register(
            "reconciles",
            "Reconciles by plugin and result",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time of one reconcile",
            reconcile_seconds.clone(),
        );
        registry.register(
            "plugin_call_duration_seconds",
            "Time of one plugin call",
            plugin_call_seconds.clone(),
        );
        registry.register(
            "queue_depth",
            "Keys waiting to be reconciled",
            queue_depth.clone(),
        );
        registry.register(
            "api_writes",
            "API writes by verb and resource",
            writes.clone(),
        );
        registry.register(
            "backoffs",
            "Reconciles retried with backoff",
            backoffs.clone(),
        );
        registry.register(
            "hot_loops",
            "Reconciles flagged as a hot loop",
            hot_loops.clone(),
        );
        registry.register(
            "related_enqueues",
            "Parents enqueued because an object they selected to read changed",
            related_enqueues.clone(),
        );
        Self {
            registry,
            reconciles,
            reconcile_seconds,
            plugin_call_seconds,
            queue_depth,
            writes,
            backoffs,
            hot_loops,
            related_enqueues,
            shadow_compared,
            shadow_diffs,
            candidate_failures,
            cached_objects,
            cached_bytes,
            index_entries,
            writes_total: AtomicU64::new(0),
            reconciles_total: AtomicU64::new(0),
        }
    }

    /// The cache's gauges: objects and bytes per kind, index entries per kind and index.
    fn cache_gauges(
        registry: &mut Registry,
    ) -> (
        Family<KindLabels, Gauge>,
        Family<KindLabels, Gauge>,
        Family<IndexLabels, Gauge>,
    ) {
        let (objects, bytes, entries) = Default::default();
        registry.register(
            "cached_objects",
            "Objects in the host's cache, by kind",
            Family::clone(&objects),
        );
        registry.register(
            "cached_bytes",
            "Heap bytes of the host's cache, by kind: its objects (JSON and header) and the tables holding them",
            Family::clone(&bytes),
        );
        registry.register(
            "index_entries",
            "Entries of the cache's indexes, by kind and index",
            Family::clone(&entries),
        );
        (objects, bytes, entries)
    }

    /// The gauges the store of `group`/`kind` adds its size to.
    pub fn store_gauges(&self, group: &str, kind: &str) -> StoreGauges {
        let labels = KindLabels {
            group: group.into(),
            kind: kind.into(),
        };
        StoreGauges {
            objects: self.cached_objects.get_or_create(&labels).clone(),
            bytes: self.cached_bytes.get_or_create(&labels).clone(),
            owner: self.index_entries(group, kind, "owner"),
            labels: self.index_entries(group, kind, "labels"),
        }
    }

    /// The gauge of `index`'s entries for `group`/`kind` (shared by all who add to it).
    pub fn index_entries(&self, group: &str, kind: &str, index: &str) -> Gauge {
        self.index_entries
            .get_or_create(&IndexLabels {
                group: group.into(),
                kind: kind.into(),
                index: index.into(),
            })
            .clone()
    }

    fn plugin(plugin: &str) -> PluginLabels {
        PluginLabels {
            plugin: plugin.to_owned(),
        }
    }

    /// The counter of parents of `plugin` enqueued by changes of related objects (the related
    /// index increments it for every parent it maps a change to).
    pub fn related_enqueues(&self, plugin: &str) -> Counter {
        self.related_enqueues
            .get_or_create(&Self::plugin(plugin))
            .clone()
    }

    /// One reconcile finished with `result` after `took`.
    pub fn reconciled(&self, plugin: &str, result: &str, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabels {
                plugin: plugin.into(),
                result: result.into(),
            })
            .inc();
        self.reconcile_seconds
            .get_or_create(&Self::plugin(plugin))
            .observe(took.as_secs_f64());
        self.reconciles_total.fetch_add(1, Ordering::Relaxed);
    }

    /// One plugin call took `took`.
    pub fn plugin_called(&self, plugin: &str, took: Duration) {
        self.plugin_call_seconds
            .get_or_create(&Self::plugin(plugin))
            .observe(took.as_secs_f64());
    }

    /// The queue of `plugin` holds `depth` ready keys.
    pub fn queue_depth(&self, plugin: &str, depth: usize) {
        self.queue_depth
            .get_or_create(&Self::plugin(plugin))
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// One API write was sent.
    pub fn wrote(&self, plugin: &str, verb: &str, resource: &str) {
        let labels = WriteLabels {
            plugin: plugin.into(),
            verb: verb.into(),
            resource: resource.into(),
        };
        self.writes.get_or_create(&labels).inc();
        self.writes_total.fetch_add(1, Ordering::Relaxed);
    }

    /// A reconcile was scheduled for retry with backoff.
    pub fn backed_off(&self, plugin: &str) {
        self.backoffs.get_or_create(&Self::plugin(plugin)).inc();
    }

    /// A key was flagged as a hot loop.
    pub fn hot_loop(&self, plugin: &str) {
        self.hot_loops.get_or_create(&Self::plugin(plugin)).inc();
    }

    /// One reconcile ran both versions of `plugin`; its answers differed in `diffs` (kinds)
    /// and the candidate fared `candidate` (a failure label, if it failed).
    pub fn compared(&self, plugin: &str, diffs: &[&str], candidate: Option<&str>) {
        self.shadow_compared
            .get_or_create(&Self::plugin(plugin))
            .inc();
        let labels = |kind: &str| RolloutLabels {
            plugin: plugin.into(),
            kind: kind.into(),
        };
        for kind in diffs {
            self.shadow_diffs.get_or_create(&labels(kind)).inc();
        }
        if let Some(kind) = candidate {
            self.candidate_failures.get_or_create(&labels(kind)).inc();
        }
    }

    /// Compared reconciles of `plugin` whose answers differed in `kind`.
    pub fn diffs_of(&self, plugin: &str, kind: &str) -> u64 {
        self.shadow_diffs
            .get_or_create(&RolloutLabels {
                plugin: plugin.into(),
                kind: kind.into(),
            })
            .get()
    }

    /// Reconciles of `plugin` whose two versions' answers were compared.
    pub fn compared_of(&self, plugin: &str) -> u64 {
        self.shadow_compared
            .get_or_create(&Self::plugin(plugin))
            .get()
    }

    /// The registry, so a subsystem that keeps its own metrics (hot-loading) adds them before serving.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// Adds a collector whose gauges are read at each scrape (what the engine's plugins keep in
    /// memory: `crate::plugin::MemoryGauges`).
    pub fn collect(&mut self, collector: Box<dyn prometheus_client::collector::Collector>) {
        self.registry.register_collector(collector);
    }

    /// Reconciles of `plugin` that ended with `result` (`success`, `error`, `refused`, `gone`).
    pub fn reconciles_of(&self, plugin: &str, result: &str) -> u64 {
        self.reconciles
            .get_or_create(&ResultLabels {
                plugin: plugin.into(),
                result: result.into(),
            })
            .get()
    }

    /// Keys of `plugin` flagged as hot loops so far.
    pub fn hot_loops_of(&self, plugin: &str) -> u64 {
        self.hot_loops.get_or_create(&Self::plugin(plugin)).get()
    }

    /// All API writes this host sent so far (every plugin, verb and resource).
    pub fn writes_total(&self) -> u64 {
        self.writes_total.load(Ordering::Relaxed)
    }

    /// All reconciles this host finished so far.
    pub fn reconciles_total(&self) -> u64 {
        self.reconciles_total.load(Ordering::Relaxed)
    }

    /// The text exposition format served on `/metrics`.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_counted_per_verb_and_exported() {
        let m = Metrics::new();
        m.wrote("blog", "apply", "deployments");
        m.wrote("blog", "apply", "deployments");
        m.wrote("blog", "delete", "services");
        assert_eq!(m.writes_total(), 3);
        let text = m.encode();
        assert!(
            text.contains(
                r#"weir_api_writes_total{plugin="blog",verb="apply",resource="deployments"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"weir_api_writes_total{plugin="blog",verb="delete",resource="services"} 1"#
        ));
    }
}
