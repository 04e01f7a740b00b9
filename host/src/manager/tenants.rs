//! The tenant namespaces' own plugins: for each namespace of the policy's `tenants:`, its
//! TenantPlugins' source (started by `sources::tenants`) drives controllers of its own, with an
//! informer registry watching that namespace only and the tenant gate (`crate::tenant`), its
//! own reconcile slots and one flow of the host's request rate, each metered ([`TenantUsage`]).
//!
//! Each namespace's controllers are keyed by kind as the host's are, so two tenants may serve
//! the same kind, each in its own namespace, with different plugins.

use std::collections::BTreeSet;
use std::sync::Arc;

use kube::Client;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::Semaphore;

use super::candidates::Candidates;
use super::controllers::ControllersView;
use super::leases::Leases;
use super::runnables::{Runnables, Stage};
use super::sources::TenantSource;
use super::{Feed, ManagerConfig, drive};
use crate::hotload::{self, Catalog};
use crate::metrics::Metrics;
use crate::rollout::PhaseStore;
use crate::tenant::{TenantUsage, refuse_strays};

/// The tenant namespaces served: what keeps their sources running, and their catalogs and
/// controllers, which the host's readiness reads too.
#[derive(Default)]
pub(super) struct Tenants {
    running: Vec<hotload::Running>,
    served: Served,
}

/// Each tenant namespace, its catalog and its controllers.
pub(super) type Served = Vec<(String, Catalog, ControllersView)>;

impl Tenants {
    /// Each tenant namespace's catalog and controllers, for readiness.
    pub(super) fn served(&self) -> Served {
        self.served.clone()
    }
}

/// Whether every tenant namespace is ready as the host's own plugins are
/// ([`ControllersView::ready`]).
pub(super) fn ready(served: &Served) -> bool {
    served.iter().all(|(_, catalog, view)| view.ready(catalog))
}

/// Adds, for each started tenant source, the runnables that follow it with that namespace's
/// controllers and candidates.
pub(super) fn serve(
    tenants: Vec<TenantSource>,
    runnables: &mut Runnables,
    (client, writes, leases): (&Client, &Client, &Leases),
    config: &ManagerConfig,
    (metrics, usage): (&Arc<Metrics>, &TenantUsage),
) -> Tenants {
    let mut started = Tenants::default();
    let served: BTreeSet<String> = tenants.iter().map(|t| t.namespace.clone()).collect();
    // A host watching every namespace refuses the TenantPlugins of the others in their status.
    if !served.is_empty() && config.controller.namespace.is_none() {
        let clients = (client.clone(), writes.clone());
        let leading = leases.gate.clone();
        runnables.always(Stage::Beside, "TenantPlugins of no tenant", |stop| {
            refuse_strays(clients, served, leading, stop)
        });
    }
    for TenantSource {
        namespace,
        source,
        cap,
    } in tenants
    {
        let Some(tenant) = config.policy.tenants.get(&namespace) else {
            continue;
        };
        let requests = Counter::default();
        let client = TenantUsage::client(client, &namespace, &requests);
        let slots = Arc::new(Semaphore::new(tenant.reconciles()));
        let informers = leases.tenant_informers(&client, &namespace, cap, metrics);
        let cores = leases.tenant_cores(&namespace);
        usage.track(
            &namespace,
            (&slots, tenant.reconciles()),
            &informers,
            (&requests, &cores),
        );
        // Rollout phases by plugin name, kept in the tenant's own namespace: a tenant's plugin
        // named like another's never reads or writes that one's phase.
        let phases = PhaseStore::new(writes.clone(), &namespace, &config.controller.instance);
        let controllers = leases.tenant_controllers(
            (&client, &informers),
            (&namespace, tenant),
            (config, &slots),
            metrics,
            &phases,
        );
        let view = controllers.view();
        // Its TenantPlugins' `spec.candidate`s, rolled out as the host's Plugins' are, their
        // phases and `weir rollout -n NAMESPACE` requests in its namespace.
        let gate = leases.gate.clone();
        let rollout = config.rollout.clone();
        let candidates = Candidates::new(&source.catalog, &view, rollout, phases, gate);
        candidates.start(runnables, source.candidates);
        started
            .served
            .push((namespace.clone(), source.catalog, view));
        let feed = Feed::new(source.events, &config.controller.activity, None);
        tracing::info!(%namespace, kinds = ?tenant.kinds, "serving the namespace's TenantPlugins");
        runnables.always(Stage::Controllers, "a tenant's controllers", |stop| {
            drive(controllers, feed, stop)
        });
        started.running.push(source.running);
    }
    started
}
