//! The one host: everything a Weir process runs, whoever starts it.
//!
//! `weir run`, `weir dev`, the end-to-end suite and the benchmarks all start a [`Manager`].
//! It owns, for the whole process: the informer registry (one watch and one store per kind,
//! shared by every plugin), the plugin-call semaphore, the metrics, leader election, the
//! operations server (`/metrics`, `/healthz`, `/readyz`, `/plugins`) and one [`PluginSource`]
//! (a fixed list of components, a hot-loaded directory, or the cluster's `Plugin` objects), all
//! seen as one [`crate::hotload::Source`] (started by `sources`). Its event loop turns the
//! source's [`PluginEvent`]s into controllers: started, swapped in place, stopped. Candidate
//! versions (`crate::rollout`) come from the source (`DIR/candidates/`, a `Plugin`'s
//! `spec.candidate`) or [`Manager::propose_candidate`]; operators steer them with `weir
//! rollout` (`requests`). Sharded, each replica also holds a Lease of its own and the leader
//! assigns the parents (`shards`, `crate::shard`). With the cluster source, each tenant
//! namespace of the policy has its TenantPlugins' source and controllers of its own (`tenants`,
//! `crate::tenant`). Given a directory of member clusters
//! ([`ManagerConfig::clusters`]), one more runnable engages and releases them
//! (`crate::clusters`), each a runtime instance of its own.

mod admission;
mod candidates;
mod config;
mod controllers;
mod leases;
mod members;
mod ops;
mod requests;
mod runnables;
mod shards;
mod sources;
mod tenants;

use std::net::SocketAddr;
use std::sync::Arc;

use kube::Client;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use self::admission::{Admission, AdmissionError, AdmittingLoader};
use self::candidates::Candidates;
use self::config::rollout_namespace;
pub use self::config::{DEFAULT_RECONCILES_PER_CPU, ManagerConfig, ManagerError, PluginSource};
use self::controllers::{Controllers, ControllersView};
use self::leases::Leases;
use self::ops::Listing;
use self::runnables::{Runnables, Stage};
use crate::hotload::{self, Catalog, HotloadMetrics, PluginEvent, install_crd};
use crate::metrics::Metrics;
use crate::plugin::Plugin;
pub use crate::reconcile::activity::{Activity, ActivityFeed, Write};
use crate::rollout::{CandidateRefusal, PhaseStore, RolloutStatus};
use crate::runtime::Informers;
use crate::shard::metrics::ShardMetrics;

/// A running host.
pub struct Manager {
    catalog: Catalog,
    activity: ActivityFeed,
    metrics: Arc<Metrics>,
    hotload_metrics: HotloadMetrics,
    informers: Arc<Informers>,
    view: ControllersView,
    /// Stops the host gracefully (the runnables' stages in reverse, then the Leases).
    stop: CancellationToken,
    /// Runs until stopped, then stops the runnables and lets go of the Leases.
    main: tokio::task::JoinHandle<Option<&'static str>>,
    /// Every runnable, for a hard stop.
    aborts: Vec<tokio::task::AbortHandle>,
    addr: Option<SocketAddr>,
    candidates: Candidates,
    /// The member clusters engaged beside the host's own.
    clusters: crate::clusters::Engaged,
    /// Keeps the plugin source running (dropping it stops it).
    _source: hotload::Running,
    /// The tenant namespaces served (dropping them stops their sources).
    tenants: tenants::Tenants,
}

impl Manager {
    /// Starts the host, in order: its metrics, leadership (and, sharded, this replica's shard
    /// Lease), the plugin source, the informers, the controllers, the tasks beside them (the
    /// shard coordinator, the candidates, the operations server) and the loop that turns the
    /// source's events into controllers. The source's plugins get controllers watching at once
    /// and reconciling once this replica leads.
    pub async fn start(
        client: Client,
        source: PluginSource,
        config: ManagerConfig,
    ) -> Result<Manager, ManagerError> {
        let members = members::watch(&config, &client)?;
        let meters = Meters::new(&config, &source);
        let leases = Leases::join(&client, &config, meters.shard.clone()).await?;
        let writes = leases.gate.client(&client);
        let namespace = config.controller.namespace.clone();
        let admission = Admission::new(client.clone(), config.policy.clone(), namespace);
        let hotload = &meters.hotload;
        let gate = &leases.gate;
        let tenants = sources::tenants(&source, &admission, &config, &writes, gate, hotload)?;
        let source = sources::start(source, admission, &config, &writes, gate, hotload).await?;
        let catalog = source.catalog;
        let informers = leases.informers(&client, &config, &meters.host);
        let phases = rollout_namespace(&config);
        let store = PhaseStore::new(writes.clone(), &phases, &config.controller.instance);
        let controllers = leases.controllers(&client, &informers, &config, &meters.host, &store);
        let view = controllers.view();
        let rollout = config.rollout.clone();
        let candidates = Candidates::new(&catalog, &view, rollout, store, leases.gate.clone());
        let mut runnables = Runnables::default();
        let tenants = tenants::serve(
            tenants,
            &mut runnables,
            (&client, &writes, &leases),
            &config,
            (&meters.host, &meters.tenants),
        );
        let listing = Listing::new(&catalog, &view, &candidates, &meters.host, &leases, &config)
            .with_tenants(tenants.served());
        let addr = ops::serve(config.listen, listing, &mut runnables).await?;
        let feed = Feed::of_host(source.events, &config, &writes);
        let activity = feed.activity.clone();
        runnables.always(Stage::Controllers, "controllers", |stop| {
            drive(controllers, feed, stop)
        });
        members::serve(members, &mut runnables, &catalog, &config);
        leases.placement(&mut runnables, &client, &writes, &config, &view);
        candidates.start(&mut runnables, source.candidates);
        let (main, aborts, stop) = supervise(runnables, leases);
        Ok(Manager {
            catalog,
            activity,
            metrics: meters.host,
            hotload_metrics: meters.hotload,
            informers,
            view,
            stop,
            main,
            aborts,
            addr,
            candidates,
            clusters: config.controller.clusters.clone(),
            _source: source.running,
            tenants,
        })
    }

    /// The member clusters engaged now (none unless [`ManagerConfig::clusters`] names a
    /// directory).
    pub fn clusters(&self) -> crate::clusters::Engaged {
        self.clusters.clone()
    }

    /// The plugins served right now.
    pub fn catalog(&self) -> Catalog {
        self.catalog.clone()
    }

    /// What the host does from now on: writes, drift put back, failures, refusals, swaps.
    pub fn activity(&self) -> tokio::sync::broadcast::Receiver<Activity> {
        self.activity.subscribe()
    }

    /// The host's metrics (API writes, reconciles, ...).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// Refusals and changes counted by the directory source.
    pub fn hotload_metrics(&self) -> &HotloadMetrics {
        &self.hotload_metrics
    }

    /// The kinds the host watches right now, each with its number of subscribed controllers.
    pub fn watched(&self) -> Vec<(crate::plugin::ResourceKind, usize)> {
        self.informers.watched()
    }

    /// Rolls `candidate` out as a new version of the plugin served from `serving` (a catalog
    /// row's `file`): shadowed, canaried, then promoted or rolled back (`crate::rollout`). A
    /// phase kept for the same bytes (before a restart) is resumed; while one has the candidate's
    /// answers written, the kind's workers wait for this call, up to
    /// [`RolloutConfig::resume_within`]. The serving version is untouched by a refusal.
    pub async fn propose_candidate(
        &self,
        serving: &std::path::Path,
        candidate: Plugin,
    ) -> Result<(), CandidateRefusal> {
        let file = candidate.label().into();
        self.candidates.propose(serving, file, candidate).await
    }

    /// Drops the candidate of the plugin served from `serving`.
    pub fn withdraw_candidate(&self, serving: &std::path::Path) {
        self.candidates.withdraw(serving);
    }

    /// Per served kind (`Kind.group`) with a candidate now or before: its rollout.
    pub fn rollouts(&self) -> std::collections::HashMap<String, RolloutStatus> {
        self.view.rollout_statuses()
    }

    /// Why the candidate of a serving file was refused, by serving file.
    pub fn refused_candidates(&self) -> std::collections::BTreeMap<std::path::PathBuf, String> {
        self.candidates
            .refused
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The bound address of the operations server, if any.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Whether the source was read once and every served kind's caches hold their first list.
    pub fn is_ready(&self) -> bool {
        self.view.ready(&self.catalog) && tenants::ready(&self.tenants.served())
    }

    /// Graceful stop (SIGTERM): no new reconciles, in-flight ones finish, the lease is released.
    pub async fn shutdown(self) {
        self.stop.cancel();
        if let Err(e) = self.main.await {
            tracing::warn!(error = %e, "host task failed");
        }
    }

    /// Hard stop, as if the process were killed: nothing finishes, the lease is not released.
    pub fn kill(self) {
        self.main.abort();
        for task in &self.aborts {
            task.abort();
        }
        self.stop.cancel();
        self.view.abort_all();
    }

    /// Waits until the host has stopped: after [`Manager::shutdown`] began (`Ok`), or once one
    /// of its runnables ended on its own (failed or panicked) and the others were stopped (an
    /// error naming it); a lost lease does not end it.
    pub async fn wait(&mut self) -> Result<(), ManagerError> {
        match (&mut self.main).await {
            Ok(None) => Ok(()),
            Ok(Some(runnable)) => Err(ManagerError::Ended { runnable }),
            Err(e) => Err(ManagerError::Ended {
                runnable: if e.is_panic() {
                    "the host (panicked)"
                } else {
                    "the host"
                },
            }),
        }
    }
}

/// The host's metrics, and the families of hot-loading and (sharded) sharding registered in them.
struct Meters {
    host: Arc<Metrics>,
    hotload: HotloadMetrics,
    shard: ShardMetrics,
    /// What each tenant namespace uses (filled as the tenants start).
    tenants: crate::tenant::TenantUsage,
}

impl Meters {
    fn new(config: &ManagerConfig, source: &PluginSource) -> Self {
        let mut metrics = Metrics::new();
        let hotload = HotloadMetrics::default();
        hotload.register(metrics.registry_mut());
        let shard = ShardMetrics::default();
        if config.shard.is_some() {
            shard.register(metrics.registry_mut());
        }
        if let PluginSource::Directory { engine, .. } | PluginSource::Cluster { engine, .. } =
            source
        {
            metrics.collect(Box::new(crate::plugin::MemoryGauges::new(engine)));
        }
        let tenants = crate::tenant::TenantUsage::default();
        if !config.policy.tenants.is_empty() {
            metrics.collect(Box::new(tenants.clone()));
        }
        if config.clusters.is_some() {
            let gauges = crate::clusters::ClusterGauges::new(&config.controller.clusters);
            metrics.collect(Box::new(gauges));
        }
        Self {
            host: Arc::new(metrics),
            hotload,
            shard,
            tenants,
        }
    }
}

/// Starts the runnables, and the task that runs them until its token is cancelled (or until one
/// ends on its own, whose name it returns), stops them stage by stage in reverse, then lets go
/// of the Leases: the shard Lease first, then the leader's. Returns that task, each runnable's
/// handle for a hard stop, and the token.
fn supervise(
    runnables: Runnables,
    leases: Leases,
) -> (
    tokio::task::JoinHandle<Option<&'static str>>,
    Vec<tokio::task::AbortHandle>,
    CancellationToken,
) {
    let running = runnables.start();
    let aborts = running.aborts();
    let stop = CancellationToken::new();
    let until = stop.clone();
    let main = tokio::spawn(async move {
        let ended = running.run_until(until).await;
        leases.release().await;
        ended
    });
    (main, aborts, stop)
}

/// What the controllers follow: the source's plugin events, told to the activity feed, each
/// plugin's CRD installed first when `installer` is given (`weir dev`).
struct Feed {
    events: mpsc::UnboundedReceiver<PluginEvent<Plugin>>,
    activity: ActivityFeed,
    installer: Option<Client>,
}

impl Feed {
    fn new(
        events: mpsc::UnboundedReceiver<PluginEvent<Plugin>>,
        activity: &ActivityFeed,
        installer: Option<Client>,
    ) -> Self {
        Self {
            events,
            activity: activity.clone(),
            installer,
        }
    }

    /// The host's source's `events`, told to the configured activity feed; with
    /// `install_crds`, each plugin's CRD installed through `writes` first.
    fn of_host(
        events: mpsc::UnboundedReceiver<PluginEvent<Plugin>>,
        config: &ManagerConfig,
        writes: &Client,
    ) -> Self {
        let installer = config.install_crds.then(|| writes.clone());
        Self::new(events, &config.controller.activity, installer)
    }
}

/// Applies plugin events to the controllers until stopped, then lets in-flight reconciles
/// finish. A lost lease does not stop the host: the controllers step down and stand again (see
/// `controllers`).
async fn drive(mut controllers: Controllers, mut feed: Feed, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            event = feed.events.recv() => match event {
                Some(event) => {
                    if let Some(client) = &feed.installer {
                        install(client, &event).await;
                    }
                    feed.activity.plugin_event(&event);
                    controllers.apply(event).await;
                }
                // The fixed source has sent everything: keep serving.
                None => {
                    stop.cancelled().await;
                    break;
                }
            },
        }
    }
    tracing::info!("shutting down: finishing in-flight reconciles");
    controllers.shutdown().await;
}

/// `weir dev`: installs the CRD of a plugin about to be served.
async fn install(client: &Client, event: &PluginEvent<Plugin>) {
    let (PluginEvent::Added { plugin, .. } | PluginEvent::Replaced { new: plugin, .. }) = event
    else {
        return;
    };
    match install_crd(client, plugin.info()).await {
        Ok(true) => {
            tracing::info!(plugin = %plugin.label(), kind = %plugin.info().parent.kind, "CRD installed");
        }
        Ok(false) => {}
        Err(e) => tracing::warn!(
            plugin = %plugin.label(),
            error = %crate::chain::Chain(&e),
            "the controller starts anyway; its watch retries until the kind is served"
        ),
    }
}
