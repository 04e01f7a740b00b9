//! The tenant namespaces' own plugins: for each namespace of the policy's `tenants:`, its
//! TenantPlugins' source (started by `sources::tenants`) drives controllers of its own, with an
//! informer registry watching that namespace only and the tenant gate (`crate::tenant`).
//!
//! Each namespace's controllers are keyed by kind as the host's are, so two tenants may serve
//! the same kind, each in its own namespace, with different plugins.

use std::sync::Arc;

use kube::Client;

use super::leases::Leases;
use super::runnables::{Runnables, Stage};
use super::{Feed, ManagerConfig, drive};
use crate::hotload::{self, Source};
use crate::metrics::Metrics;
use crate::plugin::Plugin;
use crate::rollout::PhaseStore;

/// Adds, for each started tenant source, the runnable that follows it with that namespace's
/// controllers; returns what keeps the sources running. A TenantPlugin's `spec.candidate` is
/// not rolled out yet: its candidate events are dropped.
pub(super) fn serve(
    tenants: Vec<(String, Source<Plugin>)>,
    runnables: &mut Runnables,
    (client, leases, store): (&Client, &Leases, &PhaseStore),
    config: &ManagerConfig,
    metrics: &Arc<Metrics>,
) -> Vec<hotload::Running> {
    let mut running = Vec::new();
    for (namespace, source) in tenants {
        let Some(tenant) = config.policy.tenants.get(&namespace) else {
            continue;
        };
        let informers = leases.tenant_informers(client, &namespace, metrics);
        let controllers = leases.tenant_controllers(
            (client, &informers),
            (&namespace, tenant),
            config,
            metrics,
            store,
        );
        let feed = Feed::new(source.events, &config.controller.activity, None);
        tracing::info!(%namespace, kinds = ?tenant.kinds, "serving the namespace's TenantPlugins");
        runnables.always(Stage::Controllers, "a tenant's controllers", |stop| {
            drive(controllers, feed, stop)
        });
        running.push(source.running);
    }
    running
}
