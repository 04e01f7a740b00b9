//! What the host runs with ([`ManagerConfig`]), where its plugins come from ([`PluginSource`]),
//! and why it could not start ([`ManagerError`]).

use std::net::SocketAddr;
use std::sync::Arc;

use super::admission::AdmissionError;
use crate::hotload;
use crate::leader::{LeaderConfig, LeaderError};
use crate::plugin::{Engine, Limits, Plugin};
use crate::policy::Policy;
use crate::reconcile::ControllerConfig;
use crate::rollout::RolloutConfig;
use crate::server::ServerError;
use crate::shard::ShardConfig;

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
    /// One of the host's tasks ended before the host was asked to stop.
    #[error("{runnable} ended before the host was asked to stop")]
    Ended {
        /// Which task.
        runnable: &'static str,
    },
    /// The directory of member clusters cannot be followed.
    #[error(transparent)]
    Clusters(#[from] crate::clusters::SourceError),
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
    /// The signatures the cluster source's components and the directory source's files must
    /// carry (`crate::trust`), each source at its level; `None` checks none.
    pub verification: Option<Arc<crate::trust::Policy>>,
    /// Member clusters engaged from a directory of kubeconfigs or from cluster Secrets
    /// (`crate::clusters`); `None`:
    /// the host's own cluster alone.
    pub clusters: Option<crate::clusters::Config>,
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
            clusters: None,
        }
    }
}

/// Where rollout phases are kept: the configured namespace, else the leader lease's, else the
/// watched one, else `default`.
pub(super) fn rollout_namespace(config: &ManagerConfig) -> String {
    config
        .rollout
        .namespace
        .clone()
        .or_else(|| config.leader.as_ref().map(|l| l.namespace.clone()))
        .or_else(|| config.controller.namespace.clone())
        .unwrap_or_else(|| "default".into())
}
