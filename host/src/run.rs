//! `weir run`: connect to a cluster and run the host on a plugins directory, or on the cluster's
//! `Plugin` objects, until SIGTERM.
//!
//! The host itself is [`crate::manager::Manager`], which `weir dev`, the end-to-end suite and
//! the benchmarks start too; this module only reads the command line and the kubeconfig.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::client::ClientLimits;
use crate::leader::LeaderConfig;
use crate::manager::{Manager, ManagerConfig, PluginSource};
use crate::plugin::{Engine, EngineConfig};
use crate::policy::Policy;
use crate::reconcile::ControllerConfig;
use crate::shard::ShardConfig;

/// Why the host could not start or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No client for the cluster.
    #[error(transparent)]
    Connect(#[from] crate::client::ConnectError),
    /// The WebAssembly engine could not start.
    #[error("cannot start the plugin engine for {path}")]
    Load {
        /// The component file.
        path: PathBuf,
        /// The sandbox's error.
        #[source]
        source: crate::plugin::LoadError,
    },
    /// The host could not start.
    #[error(transparent)]
    Manager(#[from] crate::manager::ManagerError),
    /// The `--verification-policy` file could not be read.
    #[error(transparent)]
    Verification(#[from] crate::trust::PolicyError),
    /// The `--policy` file could not be read.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The `--dump-failures` directory could not be created.
    #[error("cannot create {}", path.display())]
    DumpDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Arguments of `weir run`: where the plugins come from, how to reach the cluster, and how the
/// host runs ([`HostArgs`], which an in-process host in the tests parses too).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Where the plugins come from.
    #[command(flatten)]
    pub source: SourceArgs,
    /// Kubeconfig to use instead of KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Requests per second to the API server, all plugins together (kube-controller-manager's
    /// flag); when the limit binds, the plugins take turns. 0 lifts the limit (the server's `429`
    /// pushback still holds the host).
    #[arg(long, value_name = "QPS", default_value_t = ClientLimits::default().qps)]
    pub kube_api_qps: f64,
    /// Requests allowed at once above `--kube-api-qps`.
    #[arg(long, value_name = "N", default_value_t = ClientLimits::default().burst)]
    pub kube_api_burst: u32,
    /// How the host runs.
    #[command(flatten)]
    pub host: HostArgs,
}

/// Where `weir run` takes its plugins from (the flags of [`Origin`]).
#[derive(Clone, Debug, clap::Args)]
pub struct SourceArgs {
    /// Directory of plugin components (`*.wasm`), followed as files come, change and go; one
    /// controller per plugin. `DIR/candidates/NAME.wasm` (when `DIR/candidates/` exists at
    /// start) is rolled out as a new version of `DIR/NAME.wasm`: shadowed, canaried, then
    /// promoted or rolled back (see `--rollout-*` and `weir rollout`).
    #[arg(long, required_unless_present = "plugins_from_cluster")]
    pub plugins: Option<PathBuf>,
    /// Serve the cluster's `Plugin` objects (`weir.dev/v1alpha1`) instead of a directory:
    /// components pulled from OCI registries, pinned by digest, hot-swapped as Plugins change;
    /// a Plugin's `spec.candidate` is rolled out as its new version.
    #[arg(long, conflicts_with = "plugins")]
    pub plugins_from_cluster: bool,
    /// Where components pulled for Plugins are kept by digest, so a restart does not pull
    /// again [default: the --cache-dir, else $XDG_CACHE_HOME/weir].
    #[arg(long, value_name = "DIR")]
    pub component_cache: Option<PathBuf>,
}

/// How the host runs, whatever its plugins' source and its cluster: the flags that make its
/// [`ManagerConfig`].
#[derive(Clone, Debug, clap::Args)]
pub struct HostArgs {
    /// Keys reconciled at once, per plugin.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Keys reconciled at once, all plugins together; when the limit binds, the plugins take
    /// turns [default: 8 per CPU].
    #[arg(long, value_name = "N")]
    pub max_concurrent_reconciles: Option<usize>,
    /// Seconds between periodic resyncs of every parent.
    #[arg(long, default_value_t = 600)]
    pub resync_secs: u64,
    /// Address of the operations server: `/metrics` (Prometheus), `/healthz` (the process
    /// answers), `/readyz` (the plugins are loaded and their caches hold their first list) and
    /// `/plugins` (what is served, with reconcile counts, rollouts and refused candidates, as
    /// JSON; `weir plugins` prints it).
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub listen: SocketAddr,
    /// Compete for a Lease and reconcile only while holding it (for more than one replica).
    #[arg(long)]
    pub leader_elect: bool,
    /// Spread the parents across every replica started with it: each holds a Lease of its own
    /// (`weir-shard-IDENTITY` in --lease-namespace) and reconciles and caches only the parents
    /// labelled `shard.weir.dev/owner=IDENTITY` and their children; the leader (implied) assigns
    /// them on a consistent-hash ring. When the API server serves KEP-5866's `shardSelector`
    /// (alpha), no label is written: each replica watches the parents of its ring ranges with it.
    #[arg(long)]
    pub shard: bool,
    /// Seconds the leader Lease stays valid after its last renewal (kube-controller-manager's
    /// flag; `15` or `15s`, at least 2). The leader renews it a third of that before it runs out
    /// (at 10 s of 15) and stops writing halfway through that third if it could not; a standby
    /// takes over once it runs out.
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = lease_secs)]
    pub leader_elect_lease_duration: u64,
    /// With --shard: seconds this replica's shard Lease stays valid after its last renewal
    /// (`15` or `15s`, at least 2), renewed as the leader Lease is. A killed replica's parents
    /// go to the others once it runs out; its writes stop before that.
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = lease_secs)]
    pub shard_lease_duration: u64,
    /// This replica's identity in the Lease (defaults to the host name); with --leader-elect or
    /// --shard its requests say `User-Agent: weir/VERSION (IDENTITY)`.
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Namespace of the leader Lease and the shard Leases, and (with --leader-elect) of the
    /// rollouts' ConfigMaps `weir-rollout-PLUGIN` (without it: --namespace's, else `default`).
    #[arg(long, default_value = "default")]
    pub lease_namespace: String,
    /// Watch and reconcile only this namespace (default: the whole cluster).
    #[arg(long)]
    pub namespace: Option<String>,
    /// What plugins may declare (YAML; see `weir::policy`); default: the safe built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The signatures `Plugin` components must carry (YAML; see `weir::trust::policy`): public
    /// keys in Kubewarden's `allOf` / `anyOf` shape, checked offline before anything loads;
    /// `level: {cluster: enforce | audit, directory: enforce | audit | trusted}`, a directory's
    /// files signed by `FILE.sig` beside each (`weir sign`). Without it no signature is checked.
    #[arg(long, value_name = "FILE")]
    pub verification_policy: Option<PathBuf>,
    /// Write every failed or refused reconcile into DIR as a `weir test` fixture that fails the same way.
    #[arg(long, value_name = "DIR")]
    pub dump_failures: Option<PathBuf>,
    /// A directory of member clusters' kubeconfigs, one file per cluster named by its stem
    /// (`member-a.yaml` is `member-a`), followed as files come, change and go: each cluster is
    /// engaged with a client and watches of its own, and released (watches stopped, cache
    /// freed) when its file goes. Inline credentials only: a file using `exec`,
    /// `auth-provider` or a local file path is refused, naming the file.
    #[arg(long, value_name = "DIR", conflicts_with = "cluster_secrets")]
    pub clusters: Option<PathBuf>,
    /// Member clusters from Secrets in the host's namespace (--lease-namespace) whose labels
    /// match SELECTOR (`weir.dev/cluster=member`), each holding a kubeconfig under the data key
    /// `kubeconfig`: the cluster is named by the Secret and carries its labels (a policy may
    /// grant clusters by them). Engaged, rotated and released as the Secrets come, change and
    /// go; inline credentials only, as for --clusters.
    #[arg(long, value_name = "SELECTOR")]
    pub cluster_secrets: Option<String>,
    /// How candidate versions are rolled out.
    #[command(flatten)]
    pub rollout: crate::rollout::RolloutFlags,
}

impl HostArgs {
    /// The host configuration these arguments describe (reads the `--policy` file).
    pub fn manager_config(&self) -> Result<ManagerConfig, RunError> {
        let policy = Policy::load_or_default(self.policy.as_deref())?;
        let verification = match &self.verification_policy {
            Some(path) => Some(Arc::new(crate::trust::Policy::load(path)?)),
            None => None,
        };
        let identity = self.identity.clone().unwrap_or_else(default_identity);
        // Sharded replicas elect a leader too: it is the one that assigns parents.
        let leader = (self.leader_elect || self.shard).then(|| LeaderConfig {
            namespace: self.lease_namespace.clone(),
            duration_secs: self.leader_elect_lease_duration,
            grace_secs: crate::leader::lease_grace(self.leader_elect_lease_duration),
            ..LeaderConfig::new(identity.clone())
        });
        let shard = self.shard.then(|| {
            ShardConfig::new(identity.clone(), self.lease_namespace.clone())
                .with_lease_duration(self.shard_lease_duration)
        });
        let failures = match &self.dump_failures {
            Some(dir) => {
                Some(
                    crate::record::Dumps::new(dir).map_err(|source| RunError::DumpDir {
                        path: dir.clone(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        let defaults = ManagerConfig::default();
        Ok(ManagerConfig {
            max_concurrent_reconciles: self
                .max_concurrent_reconciles
                .unwrap_or(defaults.max_concurrent_reconciles),
            controller: ControllerConfig {
                workers: self.workers,
                resync: std::time::Duration::from_secs(self.resync_secs),
                instance: identity,
                namespace: self.namespace.clone(),
                failures: failures.map(|d| Arc::new(d) as _),
                ..ControllerConfig::default()
            },
            leader,
            shard,
            listen: Some(self.listen),
            policy: Arc::new(policy),
            rollout: self.rollout.config(),
            verification,
            clusters: self.members().map(crate::clusters::Config::of),
            ..defaults
        })
    }
}

impl HostArgs {
    /// Where the member clusters come from (`--clusters` or `--cluster-secrets`), if anywhere.
    fn members(&self) -> Option<crate::clusters::Members> {
        use crate::clusters::{Members, SecretsConfig};
        if let Some(selector) = &self.cluster_secrets {
            return Some(Members::Secrets(SecretsConfig {
                namespace: self.lease_namespace.clone(),
                selector: selector.clone(),
            }));
        }
        self.clusters.clone().map(Members::Dir)
    }
}

impl RunArgs {
    /// The API client's rate limit (`--kube-api-qps`, `--kube-api-burst`).
    pub fn client_limits(&self) -> ClientLimits {
        ClientLimits {
            qps: self.kube_api_qps.max(0.0),
            burst: self.kube_api_burst,
        }
    }

    /// Where the host's plugins come from.
    pub fn origin(&self, engine: &EngineConfig) -> Origin {
        let source = &self.source;
        match &source.plugins {
            Some(dir) if !source.plugins_from_cluster => Origin::Directory(dir.clone()),
            _ => Origin::Cluster(
                source
                    .component_cache
                    .clone()
                    .or_else(|| engine.cache_dir.clone())
                    .unwrap_or_else(|| std::env::temp_dir().join("weir")),
            ),
        }
    }

    /// Runs the host until SIGTERM or Ctrl-C (blocking: it owns its async runtime).
    pub fn execute(&self, engine: EngineConfig) -> Result<(), RunError> {
        let runtime = tokio::runtime::Runtime::new().map_err(RunError::Runtime)?;
        runtime.block_on(run(
            &self.origin(&engine),
            self.kubeconfig.as_deref(),
            self.client_limits(),
            engine,
            self.host.manager_config()?,
        ))
    }
}

/// A Lease duration flag: whole seconds, `15` or `15s`, at least 2 (so that it is renewed a
/// whole second or more before it runs out, and at least a second after it was last renewed).
fn lease_secs(text: &str) -> Result<u64, String> {
    let digits = text.strip_suffix('s').unwrap_or(text);
    let secs: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of seconds (`15` or `15s`)"))?;
    if secs < 2 {
        return Err(format!(
            "a Lease of {secs} s cannot be renewed before it runs out: give at least 2"
        ));
    }
    Ok(secs)
}

fn default_identity() -> String {
    std::env::var("HOSTNAME").unwrap_or_else(|_| format!("weir-{}", std::process::id()))
}

/// Where `weir run` takes its plugins from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `--plugins DIR`: the components in a directory.
    Directory(PathBuf),
    /// `--plugins-from-cluster`: the cluster's Plugin objects, components stored in this directory.
    Cluster(PathBuf),
}

impl Origin {
    /// The host's plugin source for this origin, its components loaded by `engine`.
    pub fn source(&self, engine: Engine) -> PluginSource {
        match self {
            Origin::Directory(dir) => PluginSource::Directory {
                config: crate::hotload::Config::new(dir),
                engine,
            },
            Origin::Cluster(store) => PluginSource::Cluster {
                config: crate::hotload::ClusterConfig::new(store),
                engine,
            },
        }
    }
}

/// Connects (rate-limited by `limits`), serves the plugins of `origin` (following it as they
/// change) until SIGTERM or Ctrl-C.
pub async fn run(
    origin: &Origin,
    kubeconfig: Option<&Path>,
    limits: ClientLimits,
    engine: EngineConfig,
    config: ManagerConfig,
) -> Result<(), RunError> {
    // Replicas (elected, sharded) say who they are, so the API server's audit (and a test) can
    // tell them apart.
    let agent = config
        .leader
        .as_ref()
        .map(|l| format!("{} ({})", crate::client::USER_AGENT, l.identity));
    let client = crate::client::connect(kubeconfig, limits, agent.as_deref()).await?;
    tracing::info!(%limits, "API client limit (shared fairly between plugins)");
    let (Origin::Directory(dir) | Origin::Cluster(dir)) = origin;
    let engine = Engine::new(engine).map_err(|source| RunError::Load {
        path: dir.clone(),
        source,
    })?;
    let mut host = Manager::start(client, origin.source(engine), config).await?;
    if let Some(addr) = host.addr() {
        tracing::info!(%addr, plugins = ?origin, "serving /metrics, /healthz, /readyz, /plugins; following the plugins");
    }
    tokio::select! {
        () = shutdown_signal() => {}
        stopped = host.wait() => return Ok(stopped?),
    }
    host.shutdown().await;
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            () = term => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
