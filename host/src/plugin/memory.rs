//! What loaded plugins keep in memory, for `/metrics`: compiled code per plugin, idle instance slots.
//!
//! Each loaded plugin is counted in its engine's ledger (`ledger.rs`) while any handle to it lives; the
//! gauges are read at each scrape, so they need no updating on load, swap or unload.
//! - `weir_plugin_code_bytes{plugin}`: the compiled code of the plugin's live versions. Code
//!   loaded from the precompiled cache is a mapping of the artifact file: shared with the page
//!   cache and reclaimable, not private memory.
//! - `weir_plugin_pool_resident_bytes`: what the instance pool keeps resident in slots no call
//!   is using (the memory, tables and stacks it zeroes in place for the next instance rather
//!   than give back). The pool reuses the least recently used slot before a fresh one, so this
//!   stays within the host's peak of concurrent calls, whatever the number of plugins.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;

use super::engine::Engine;
use crate::metrics::PluginLabels;

/// The gauges of [`Engine`]'s plugins, registered with
/// [`crate::metrics::Metrics::collect`].
#[derive(Debug)]
pub struct MemoryGauges {
    engine: Engine,
}

impl MemoryGauges {
    /// Gauges reading `engine` at each scrape.
    pub fn new(engine: &Engine) -> Self {
        Self {
            engine: engine.clone(),
        }
    }
}

impl Collector for MemoryGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let code = self.engine.code_bytes();
        let mut family = encoder.encode_descriptor(
            "plugin_code_bytes",
            "Compiled code of the plugin's loaded versions (mapped from the precompiled cache when there is one)",
            None,
            ConstGauge::new(0_i64).metric_type(),
        )?;
        for (plugin, bytes) in code {
            let labels = PluginLabels { plugin };
            ConstGauge::new(i64::try_from(bytes).unwrap_or(i64::MAX))
                .encode(family.encode_family(&labels)?)?;
        }
        let pool =
            ConstGauge::new(i64::try_from(self.engine.pool_resident_bytes()).unwrap_or(i64::MAX));
        pool.encode(encoder.encode_descriptor(
            "plugin_pool_resident_bytes",
            "Memory the instance pool keeps resident in slots no plugin call is using",
            None,
            pool.metric_type(),
        )?)
    }
}
