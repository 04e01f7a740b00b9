//! `weir run`: connect to a cluster, load the plugins, and run one controller per plugin.
//!
//! [`Host`] is the same thing as a library, so the end-to-end tests run the production code
//! path in-process (and can start two of them, or kill one mid-way).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kube::Client;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::leader::{LeaderConfig, LeaderError, Leadership};
use crate::metrics::Metrics;
use crate::plugin::{Engine, EngineConfig, Limits};
use crate::reconcile::invoke::Reconciler;
use crate::reconcile::{Controller, ControllerConfig};
use crate::server::{self, ServerError};

/// Why the host could not start or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No cluster is configured (no `--kubeconfig`, `KUBECONFIG`, `~/.kube/config` or in-cluster config).
    /// (One line on purpose: the inference details are logged at debug level.)
    #[error(
        "no Kubernetes cluster configured (use --kubeconfig PATH, or `weir dev` for the embedded emulator)"
    )]
    NoCluster,
    /// The kubeconfig file could not be read or used.
    #[error("cannot use kubeconfig {path}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The client could not be built from the configuration.
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    /// The plugin directory could not be read.
    #[error("cannot read the plugin directory {path}")]
    PluginDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A plugin failed to load.
    #[error("cannot load plugin {path}")]
    Load {
        /// The component file.
        path: PathBuf,
        /// The sandbox's error.
        #[source]
        source: crate::plugin::LoadError,
    },
    /// The plugin directory holds no `.wasm` component.
    #[error("no plugin (*.wasm) in {0}")]
    NoPlugins(PathBuf),
    /// The operations server failed.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// Leader election failed.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The plugins directory could not be watched, or the hot-loading host could not start.
    #[error(transparent)]
    Hotload(#[from] crate::hotload::Error),
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
}

/// Everything the host runs with.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// Per-controller tuning (workers, resync, backoff, hot-loop guard).
    pub controller: ControllerConfig,
    /// Plugin calls in flight at once, across all plugins.
    pub max_concurrent_calls: usize,
    /// Lease-based leader election; `None` runs as the only replica.
    pub leader: Option<LeaderConfig>,
    /// Where to serve `/metrics`, `/healthz`, `/readyz`; `None` serves nothing.
    pub listen: Option<SocketAddr>,
}

impl Default for HostConfig {
    fn default() -> Self {
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            controller: ControllerConfig::default(),
            max_concurrent_calls: workers * 2,
            leader: None,
            listen: None,
        }
    }
}

/// A running host: one controller per plugin, sharing a metrics registry and a call semaphore.
pub struct Host {
    metrics: Arc<Metrics>,
    controllers: Vec<Arc<Controller>>,
    stop: CancellationToken,
    main: tokio::task::JoinHandle<()>,
    addr: Option<SocketAddr>,
}

impl Host {
    /// Starts watching at once and reconciling once leader (or at once without election).
    pub async fn start(
        client: Client,
        plugins: Vec<Arc<dyn Reconciler>>,
        config: HostConfig,
    ) -> Result<Host, RunError> {
        let metrics = Arc::new(Metrics::new());
        let permits = Arc::new(Semaphore::new(config.max_concurrent_calls.max(1)));
        let informers = crate::reconcile::source::Informers::default();
        let controllers: Vec<Arc<Controller>> = plugins
            .into_iter()
            .map(|p| {
                let c = Controller::with_informers(
                    client.clone(),
                    p,
                    permits.clone(),
                    metrics.clone(),
                    config.controller.clone(),
                    &informers,
                );
                Arc::new(c)
            })
            .collect();
        let stop = CancellationToken::new();
        let addr = match config.listen {
            Some(listen) => {
                let caches: Vec<_> = controllers.iter().map(|c| c.cache().clone()).collect();
                let ready: server::Readiness =
                    Arc::new(move || caches.iter().all(|c| c.is_synced()));
                Some(server::serve(listen, metrics.clone(), ready, stop.clone()).await?)
            }
            None => None,
        };
        let leadership = match &config.leader {
            Some(lc) => Some(Leadership::start(client.clone(), lc).await?),
            None => None,
        };
        let main = tokio::spawn(supervise(controllers.clone(), leadership, stop.clone()));
        Ok(Host {
            metrics,
            controllers,
            stop,
            main,
            addr,
        })
    }

    /// The host's metrics (API writes, reconciles, ...).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The bound address of the operations server, if any.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Whether every cache has its first full list.
    pub fn is_ready(&self) -> bool {
        self.controllers.iter().all(|c| c.cache().is_synced())
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
    }

    /// Waits until the host stops by itself (it lost its leadership) or `stop` is cancelled.
    pub async fn wait(&mut self) {
        let _ = (&mut self.main).await;
    }
}

/// Runs sources at once, workers while leading; stops on cancel or a lost lease.
async fn supervise(
    controllers: Vec<Arc<Controller>>,
    mut leadership: Option<Leadership>,
    stop: CancellationToken,
) {
    let mut sources = JoinSet::new();
    for c in &controllers {
        c.start_sources(&mut sources);
    }
    if let Some(l) = leadership.as_mut() {
        tokio::select! {
            () = stop.cancelled() => {
                sources.abort_all();
                if let Some(l) = leadership { l.release().await; }
                return;
            }
            won = l.acquired() => if !won { return },
        }
        tracing::info!("became the leader");
    }
    let mut workers = JoinSet::new();
    for c in &controllers {
        workers.spawn(c.clone().run_workers());
    }
    let lost = async {
        match leadership.as_mut() {
            Some(l) => {
                let _ = l.is_leader.wait_for(|leading| !*leading).await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = stop.cancelled() => tracing::info!("shutting down: finishing in-flight reconciles"),
        () = lost => tracing::error!("lost the leader lease: stopping"),
    }
    for c in &controllers {
        c.shutdown();
    }
    while workers.join_next().await.is_some() {}
    sources.abort_all();
    if let Some(l) = leadership {
        l.release().await;
    }
}

/// A client for `--kubeconfig PATH`, or the usual inference (KUBECONFIG, ~/.kube/config, in-cluster).
pub async fn client(kubeconfig: Option<&Path>) -> Result<Client, RunError> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).map_err(|source| RunError::Kubeconfig {
                path: path.to_owned(),
                source,
            })?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|source| RunError::Kubeconfig {
                    path: path.to_owned(),
                    source,
                })?
        }
        None => Config::infer().await.map_err(|e| {
            tracing::debug!(error = %e, "no cluster found");
            RunError::NoCluster
        })?,
    };
    Client::try_from(config).map_err(RunError::Client)
}

/// Loads every `*.wasm` component in `dir` (sorted by name).
pub fn load_plugins(dir: &Path, engine: &Engine) -> Result<Vec<Arc<dyn Reconciler>>, RunError> {
    let entries = std::fs::read_dir(dir).map_err(|source| RunError::PluginDir {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(RunError::NoPlugins(dir.to_owned()));
    }
    paths
        .into_iter()
        .map(|path| {
            let plugin = engine
                .load_file(&path, Limits::default())
                .map_err(|source| RunError::Load {
                    path: path.clone(),
                    source,
                })?;
            tracing::info!(plugin = %plugin.label(), path = %path.display(), "loaded plugin");
            Ok(Arc::new(plugin) as Arc<dyn Reconciler>)
        })
        .collect()
}

/// Arguments of `weir run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Directory of plugin components (`*.wasm`); one controller per plugin.
    #[arg(long)]
    pub plugins: PathBuf,
    /// Kubeconfig to use instead of KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Keys reconciled at once, per plugin.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Seconds between periodic resyncs of every parent.
    #[arg(long, default_value_t = 600)]
    pub resync_secs: u64,
    /// Address of `/metrics`, `/healthz` and `/readyz`.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub listen: SocketAddr,
    /// Compete for a Lease and reconcile only while holding it (for more than one replica).
    #[arg(long)]
    pub leader_elect: bool,
    /// This replica's identity in the Lease (defaults to the host name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Namespace of the leader Lease.
    #[arg(long, default_value = "default")]
    pub lease_namespace: String,
    /// Watch and reconcile only this namespace (default: the whole cluster).
    #[arg(long)]
    pub namespace: Option<String>,
}

impl RunArgs {
    /// The host configuration these arguments describe.
    pub fn host_config(&self) -> HostConfig {
        let identity = self.identity.clone().unwrap_or_else(default_identity);
        let leader = self.leader_elect.then(|| LeaderConfig {
            namespace: self.lease_namespace.clone(),
            ..LeaderConfig::new(identity.clone())
        });
        HostConfig {
            controller: ControllerConfig {
                workers: self.workers,
                resync: std::time::Duration::from_secs(self.resync_secs),
                instance: identity,
                namespace: self.namespace.clone(),
                ..ControllerConfig::default()
            },
            leader,
            listen: Some(self.listen),
            ..HostConfig::default()
        }
    }

    /// Runs the host until SIGTERM or Ctrl-C (blocking: it owns its async runtime).
    pub fn execute(&self, engine: EngineConfig) -> Result<(), RunError> {
        let runtime = tokio::runtime::Runtime::new().map_err(RunError::Runtime)?;
        runtime.block_on(run(
            &self.plugins,
            self.kubeconfig.as_deref(),
            engine,
            self.host_config(),
        ))
    }
}

fn default_identity() -> String {
    std::env::var("HOSTNAME").unwrap_or_else(|_| format!("weir-{}", std::process::id()))
}

/// Connects, loads the plugins in `dir` and runs until SIGTERM or Ctrl-C.
pub async fn run(
    dir: &Path,
    kubeconfig: Option<&Path>,
    engine: EngineConfig,
    config: HostConfig,
) -> Result<(), RunError> {
    let client = client(kubeconfig).await?;
    let engine = Engine::new(engine).map_err(|source| RunError::Load {
        path: dir.to_owned(),
        source,
    })?;
    // Plugins come and go while the host runs: see `crate::hotload`.
    let hot = crate::hotload::HotHostConfig {
        host: config,
        plugins: crate::hotload::Config::new(dir),
        limits: Limits::default(),
        install_crds: false,
    };
    let mut host = crate::hotload::HotHost::start(client, engine, hot).await?;
    if let Some(addr) = host.addr() {
        tracing::info!(%addr, plugins = %dir.display(), "serving /metrics, /healthz, /readyz, /plugins; watching the plugins directory");
    }
    tokio::select! {
        () = shutdown_signal() => {}
        () = host.wait() => return Ok(()),
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
