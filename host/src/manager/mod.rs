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
//! assigns the parents (`shards`, `crate::shard`).

mod admission;
mod candidates;
mod controllers;
mod leases;
mod ops;
mod requests;
mod shards;
mod sources;

use std::net::SocketAddr;
use std::sync::Arc;

use kube::Client;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use self::admission::{Admission, AdmissionError, AdmittingLoader};
use self::candidates::Candidates;
use self::controllers::{Controllers, ControllersView};
use self::leases::Leases;
use crate::hotload::{self, Catalog, HotloadMetrics, PluginEvent, Source, install_crd};
use crate::leader::{LeaderConfig, LeaderError};
use crate::metrics::Metrics;
use crate::plugin::{Engine, Limits, Plugin};
use crate::policy::Policy;
use crate::reconcile::ControllerConfig;
pub use crate::reconcile::activity::{Activity, ActivityFeed, Write};
use crate::rollout::{CandidateRefusal, PhaseStore, RolloutConfig, RolloutStatus};
use crate::runtime::Informers;
use crate::server::ServerError;
use crate::shard::ShardConfig;
use crate::shard::metrics::ShardMetrics;

/// Why the host could not start.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The plugins directory could not be watched.
    #[error(transparent)]
    Hotload(#[from] hotload::Error),
    /// The operations server could not bind its address.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// Leader election could not start, or this replica's shard Lease could not be held.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The identity cannot name a shard member.
    #[error(transparent)]
    Shard(#[from] crate::shard::IdentityError),
    /// A plugin of the fixed list was not admitted.
    #[error("plugin {plugin} is not admitted")]
    Admission {
        /// `name@version`.
        plugin: String,
        /// Why (boxed: a refusal is large, and rare).
        #[source]
        source: Box<AdmissionError>,
    },
}

/// Where the host's plugins come from.
pub enum PluginSource {
    /// These components, loaded already, for the host's whole life.
    Fixed(Vec<Plugin>),
    /// Every `*.wasm` component of a directory, followed as files come, change and go.
    Directory {
        /// The directory and how it is watched.
        config: hotload::Config,
        /// The engine that compiles the files (its compile cache makes reloads cheap).
        engine: Engine,
    },
    /// Every `Plugin` object of the cluster, its component pulled by digest, stored on local
    /// disk and followed as Plugins come, change and go (`weir run --plugins-from-cluster`).
    Cluster {
        /// Where components are stored, and how failures are retried.
        config: hotload::ClusterConfig,
        /// The engine that compiles the components.
        engine: Engine,
    },
}

/// Reconciles in flight per CPU, by default. A reconcile spends most of its time waiting for
/// the API server, so more of them than CPUs keep the CPUs busy; but each holds its inputs, its
/// answer and its writes meanwhile, and with a bound per plugin only (`--workers`) fifty plugins
/// held 400 at once: 0.5 MiB of the host's memory per plugin (`tests/BENCHMARKS.md`). Eight per
/// CPU still outrun the API client's default limit: at five requests a reconcile taking 20 ms
/// each, 16 in flight ask 800 a second, where the client allows 500.
pub const DEFAULT_RECONCILES_PER_CPU: usize = 8;

/// Everything the host runs with.
#[derive(Clone, Debug)]
pub struct ManagerConfig {
    /// Per-controller tuning (workers, resync, backoff, hot-loop guard, namespace).
    pub controller: ControllerConfig,
    /// Plugin calls in flight at once, across all plugins; one plugin may hold half of them.
    pub max_concurrent_calls: usize,
    /// Reconciles in flight at once, across all plugins (each plugin also at most its
    /// `controller.workers`); a plugin waiting for one holds none, and they are handed out in
    /// the order asked for.
    pub max_concurrent_reconciles: usize,
    /// Limits of every plugin call (for plugins the directory source loads).
    pub limits: Limits,
    /// Lease-based leader election; `None` runs as the only replica.
    pub leader: Option<LeaderConfig>,
    /// Spread the parents across the replicas (`crate::shard`), the leader assigning them;
    /// `None`: the leader (or the only replica) reconciles every parent.
    pub shard: Option<ShardConfig>,
    /// Where to serve `/metrics`, `/healthz`, `/readyz`, `/plugins`; `None` serves nothing.
    pub listen: Option<SocketAddr>,
    /// Install each plugin's CRD before starting its controller (`weir dev`; in a cluster
    /// CRDs are deployed, and the host has no right to write them).
    pub install_crds: bool,
    /// What plugins may declare (parents, children, Secret types).
    pub policy: Arc<Policy>,
    /// How candidate versions are shadowed, canaried, promoted or rolled back.
    pub rollout: RolloutConfig,
    /// The signatures the cluster source's components must carry (`crate::trust`); `None`
    /// checks none.
    pub verification: Option<Arc<crate::trust::Policy>>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            controller: ControllerConfig::default(),
            max_concurrent_calls: cpus * 2,
            max_concurrent_reconciles: DEFAULT_RECONCILES_PER_CPU * cpus,
            limits: Limits::default(),
            leader: None,
            shard: None,
            listen: None,
            install_crds: false,
            policy: Arc::new(Policy::default()),
            rollout: RolloutConfig::default(),
            verification: None,
        }
    }
}

/// A running host.
pub struct Manager {
    catalog: Catalog,
    activity: ActivityFeed,
    metrics: Arc<Metrics>,
    hotload_metrics: HotloadMetrics,
    informers: Arc<Informers>,
    view: ControllersView,
    stop: CancellationToken,
    main: tokio::task::JoinHandle<()>,
    addr: Option<SocketAddr>,
    candidates: Candidates,
    /// Keeps the plugin source running (dropping it stops it).
    _source: hotload::Running,
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
        let meters = Meters::new(&config, &source);
        let metrics = meters.host.clone();
        let leases = Leases::join(&client, &config, meters.shard).await?;
        let leader_client = leases.gate.client(&client);
        let namespace = config.controller.namespace.clone();
        let admission = Admission::new(client.clone(), config.policy.clone(), namespace);
        let writers = (&leader_client, &leases.gate);
        let mut source = source;
        if let PluginSource::Cluster {
            config: cluster, ..
        } = &mut source
            && cluster.verification.is_none()
        {
            cluster.verification.clone_from(&config.verification);
        }
        let source = sources::start(source, admission, config.limits, writers, &meters.hotload);
        let Source {
            events,
            catalog,
            candidates: proposals,
            running,
        } = source.await?;
        let informers = leases.informers(&client, &config, &metrics);
        let phases = rollout_namespace(&config);
        let store = PhaseStore::new(leader_client.clone(), &phases, &config.controller.instance);
        let controllers = leases.controllers(&client, &informers, &config, &metrics, &store);
        let view = controllers.view();
        let stop = CancellationToken::new();
        leases.start_sharding(&client, &leader_client, &config, &view, &stop);
        let catalogued = (catalog.clone(), view.clone());
        let candidates = Candidates::new(
            catalogued,
            config.rollout.clone(),
            (store, leases.gate.clone()),
        );
        candidates.start(proposals, &stop);
        let served = (view.clone(), candidates.refused.clone());
        let shown = (metrics.clone(), leases.listed(), config.policy.clone());
        let addr = match config.listen {
            Some(at) => Some(ops::serve(at, catalog.clone(), served, shown, stop.clone()).await?),
            None => None,
        };
        let installer = config.install_crds.then_some(leader_client);
        let activity = config.controller.activity.clone();
        let feed = (events, activity.clone());
        let main = tokio::spawn(drive(controllers, feed, leases, installer, stop.clone()));
        Ok(Manager {
            catalog,
            activity,
            metrics,
            hotload_metrics: meters.hotload,
            informers,
            view,
            stop,
            main,
            addr,
            candidates,
            _source: running,
        })
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
        ops::ready(&self.catalog, &self.view)
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
        self.stop.cancel();
        self.view.abort_all();
    }

    /// Waits until the host's main task ends (after [`Manager::shutdown`] began, or a panic); a
    /// lost lease does not end it.
    pub async fn wait(&mut self) {
        let _ = (&mut self.main).await;
    }
}

/// The host's metrics, and the families of hot-loading and (sharded) sharding registered in them.
struct Meters {
    host: Arc<Metrics>,
    hotload: HotloadMetrics,
    shard: ShardMetrics,
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
        Self {
            host: Arc::new(metrics),
            hotload,
            shard,
        }
    }
}

/// Where rollout phases are kept: the configured namespace, else the leader lease's, else the
/// watched one, else `default`.
fn rollout_namespace(config: &ManagerConfig) -> String {
    config
        .rollout
        .namespace
        .clone()
        .or_else(|| config.leader.as_ref().map(|l| l.namespace.clone()))
        .or_else(|| config.controller.namespace.clone())
        .unwrap_or_else(|| "default".into())
}

/// Applies plugin events to the controllers until stopped. A lost lease does not stop the host:
/// the controllers step down and stand again (see `controllers`).
async fn drive(
    mut controllers: Controllers,
    (mut events, activity): (mpsc::UnboundedReceiver<PluginEvent<Plugin>>, ActivityFeed),
    leases: Leases,
    installer: Option<Client>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            event = events.recv() => match event {
                Some(event) => {
                    if let Some(client) = &installer {
                        install(client, &event).await;
                    }
                    activity.plugin_event(&event);
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
    drop(controllers);
    leases.release().await;
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
