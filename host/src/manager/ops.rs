//! The operations server of the host: readiness from the plugin source and the caches, and
//! `/plugins` (what is served, with its reconcile counts and, when sharded, its shard) beside
//! `/metrics` and `/healthz`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use super::candidates::Candidates;
use super::config::ManagerConfig;
use super::controllers::ControllersView;
use super::leases::Leases;
use super::runnables::{Runnables, Stage};
use crate::hotload::{Catalog, CatalogRow};
use crate::listing::Listed;
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::reconcile::error::ResultLabel;
use crate::rollout::{Phase, RolloutStatus};
use crate::server::{self, Bound, ServerError};
use crate::shard::metrics::ShardMetrics;

/// This replica's member name and the coordinator's view, when sharded.
pub(super) type Sharding = Option<(String, ShardMetrics)>;

/// What `/plugins` lists: the catalog, the controllers, the refused candidates, the metrics,
/// this replica's shard and the admission policy.
#[derive(Clone)]
pub(super) struct Listing {
    catalog: Catalog,
    view: ControllersView,
    refused: Refused,
    metrics: Arc<Metrics>,
    shard: Sharding,
    /// The admission policy: what its entry for a plugin widens is listed with the plugin.
    policy: Arc<Policy>,
    /// The tenant namespaces' catalogs and controllers: ready only once theirs are too.
    tenants: super::tenants::Served,
}

impl Listing {
    /// What `/plugins` lists of this host.
    pub(super) fn new(
        catalog: &Catalog,
        view: &ControllersView,
        candidates: &Candidates,
        metrics: &Arc<Metrics>,
        leases: &Leases,
        config: &ManagerConfig,
    ) -> Self {
        Self {
            catalog: catalog.clone(),
            view: view.clone(),
            refused: candidates.refused.clone(),
            metrics: metrics.clone(),
            shard: leases.listed(),
            policy: config.policy.clone(),
            tenants: Vec::new(),
        }
    }

    /// Readiness waits for these tenant namespaces too.
    pub(super) fn with_tenants(self, tenants: super::tenants::Served) -> Self {
        Self { tenants, ..self }
    }
}

/// Binds `listen` and adds the runnable serving `/metrics`, `/healthz`, `/readyz` and
/// `/plugins` on it; returns the bound address (none, and nothing served, without `listen`).
pub(super) async fn serve(
    listen: Option<SocketAddr>,
    listing: Listing,
    runnables: &mut Runnables,
) -> Result<Option<SocketAddr>, ServerError> {
    let Some(listen) = listen else {
        return Ok(None);
    };
    let readiness: server::Readiness = {
        let (catalog, view) = (listing.catalog.clone(), listing.view.clone());
        let tenants = listing.tenants.clone();
        Arc::new(move || view.ready(&catalog) && super::tenants::ready(&tenants))
    };
    let metrics = listing.metrics.clone();
    let extra = Router::new()
        .route("/plugins", get(plugins))
        .with_state(listing);
    let bound = Bound::bind(listen, metrics, readiness, extra).await?;
    let addr = bound.addr;
    runnables.always(Stage::Serving, "operations server", |stop| {
        bound.serve(stop)
    });
    Ok(Some(addr))
}

/// Why the candidate of a serving file was refused, by serving file.
pub(super) type Refused = Arc<std::sync::RwLock<BTreeMap<std::path::PathBuf, String>>>;

/// The host's own plugins, then each tenant namespace's (their `file` says
/// `TenantPlugin/NAMESPACE/NAME`; what they have widened is their namespace's Secret data, if any).
async fn plugins(State(listing): State<Listing>) -> axum::Json<Vec<Listed>> {
    let states = listing.view.states();
    let mut rollouts = listing.view.rollout_statuses();
    let refused = listing
        .refused
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let mut listed: Vec<Listed> = listing
        .catalog
        .rows()
        .into_iter()
        .map(|row| {
            let state = states.get(&row.kind).cloned().unwrap_or_default();
            let rollout = rollouts.remove(&row.kind);
            let widened = listing
                .policy
                .grant_for(&row.name)
                .map(crate::policy::Grant::lines)
                .unwrap_or_default();
            let candidate_refused = refused.get(&row.file).cloned();
            let row = serving(row, rollout.as_ref());
            let mut listed = listed_row(&listing, row, state, widened);
            (listed.rollout, listed.candidate_refused) = (rollout, candidate_refused);
            listed
        })
        .collect();
    for (namespace, catalog, view) in &listing.tenants {
        let states = view.states();
        let mut rollouts = view.rollout_statuses();
        let widened = listing
            .policy
            .tenants
            .get(namespace)
            .map(|t| t.validation(&listing.policy))
            .and_then(|v| v.every_plugin)
            .map(|g| g.lines())
            .unwrap_or_default();
        for row in catalog.rows() {
            let state = states.get(&row.kind).cloned().unwrap_or_default();
            let rollout = rollouts.remove(&row.kind);
            let row = serving(row, rollout.as_ref());
            let mut tenant = listed_row(&listing, row, state, widened.clone());
            tenant.rollout = rollout;
            listed.push(tenant);
        }
    }
    axum::Json(listed)
}

/// One served plugin as `/plugins` lists it, with no rollout.
fn listed_row(
    listing: &Listing,
    row: CatalogRow,
    (synced, unserved): (bool, Vec<String>),
    widened: Vec<String>,
) -> Listed {
    let reconciles = ResultLabel::ALL
        .into_iter()
        .map(|r| {
            let count = listing.metrics.reconciles_of(&row.name, r.as_str());
            (r.as_str().to_owned(), count)
        })
        .collect();
    let shard = listing
        .shard
        .as_ref()
        .map(|(member, m)| m.status(member, &row.kind));
    Listed {
        name: row.name,
        version: row.version,
        kind: row.kind,
        file: row.file,
        sha256: row.sha256,
        loaded_at: row.loaded_at,
        synced,
        unserved,
        reconciles,
        rollout: None,
        candidate_refused: None,
        shard,
        widened,
    }
}

/// The row of what serves the kind: the source's file, or once its candidate is promoted, the
/// candidate's version, bytes and file (the serving file is not rewritten by a promotion).
fn serving(row: CatalogRow, rollout: Option<&RolloutStatus>) -> CatalogRow {
    match rollout {
        Some(r) if r.phase == Phase::Promoted => CatalogRow {
            version: r.version.clone(),
            file: r.file.clone(),
            sha256: r.sha256.clone(),
            loaded_at: r.phase_since.clone(),
            ..row
        },
        _ => row,
    }
}
