//! `weir dev`: the whole loop on a laptop, no cluster: the emulator, the host and a live view.
//!
//! One process runs the embedded API server (Deployments turn ready after a
//! short delay, as KWOK fakes kubelets), writes a kubeconfig for `kubectl`,
//! runs the host (`crate::manager::Manager`) on `--plugins DIR` (installing each plugin's CRD
//! as it loads), optionally applies example objects, and shows what happens:
//! a live view on a terminal (plugins with their counters, parents, and a feed
//! of what the host did), plain lines otherwise. Rebuilding a plugin into DIR
//! is picked up live; `--watch PROJECT` rebuilds a plugin project on each save,
//! runs its fixtures and swaps the new component in only if they pass. `--clusters N` runs N
//! member clusters beside it (a `weir_emulator::Fleet`), engaged by the host as
//! `weir run --clusters DIR` engages them, and the live view lists them.

mod examples;
mod model;
mod screen;
mod view;
mod watch;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use weir_emulator::{Emulator, EmulatorConfig, Fleet, WorkloadSimulation};

use crate::hotload;
use crate::manager::{Manager, ManagerConfig, ManagerError, PluginSource};
use crate::plugin::{Engine, EngineConfig, LoadError};
use crate::policy::Policy;
use crate::reconcile::ControllerConfig;

pub use examples::{ApplyError, apply_dir};

/// Why `weir dev` stopped.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// The emulator could not start or write its kubeconfig.
    #[error("the Kubernetes API emulator failed")]
    Emulator(#[from] weir_emulator::Error),
    /// The kubeconfig's directory could not be created.
    #[error("cannot create {}", path.display())]
    KubeconfigDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The WebAssembly engine could not start.
    #[error(transparent)]
    Engine(#[from] LoadError),
    /// The host could not start.
    #[error(transparent)]
    Host(#[from] ManagerError),
    /// The `--policy` file could not be read.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    /// The example objects could not be applied.
    #[error(transparent)]
    Apply(#[from] Box<ApplyError>),
    /// `--plugin` files must be files in one directory (it is the one watched).
    #[error("--plugin files must all be in one directory: {0:?}")]
    PluginFiles(Vec<PathBuf>),
    /// The `--dump-failures` directory could not be created.
    #[error("cannot create {}", path.display())]
    DumpDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The `--watch` project cannot be watched.
    #[error(transparent)]
    Watch(#[from] watch::WatchError),
    /// The plugins were not ready in time to apply the examples.
    #[error("plugins in {} not loaded after {secs} s; not applying the examples", dir.display())]
    NotReady {
        /// The plugins directory.
        dir: PathBuf,
        /// How long we waited.
        secs: u64,
    },
}

/// Arguments of `weir dev`.
#[derive(Debug, Args)]
pub struct DevArgs {
    /// Directory of plugin components (`*.wasm`), watched for changes.
    #[arg(long, default_value = "target/plugins")]
    pub plugins: PathBuf,
    /// Serve only these component files (repeatable; all in one directory, which is watched
    /// instead of `--plugins`), e.g. `--plugin target/plugins/blog.wasm`.
    #[arg(long = "plugin", value_name = "FILE")]
    pub plugin_files: Vec<PathBuf>,
    /// Where to write the kubeconfig for `kubectl`.
    #[arg(long, default_value = ".weir/kubeconfig")]
    pub kubeconfig: PathBuf,
    /// Apply the manifests in this directory once the plugins are loaded (e.g. `deploy/examples/`).
    #[arg(long)]
    pub apply: Option<PathBuf>,
    /// Port of the API emulator on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address of `/metrics`, `/healthz`, `/readyz` and `/plugins`.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Milliseconds after which a simulated Deployment reports its replicas ready.
    #[arg(long, default_value_t = 500)]
    pub ready_after_ms: u64,
    /// Plain log lines even on a terminal.
    #[arg(long)]
    pub plain: bool,
    /// What plugins may declare (YAML; see `weir::policy`); default: the safe built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// A plugin project (as `weir new` makes it: `build.sh`, `fixtures/`): rebuilt on every
    /// save, its fixtures run, and the component served only when they pass. Its components
    /// are served from `PROJECT/.weir/plugins` (instead of `--plugins`), compiled with
    /// wasmtime's baseline compiler (Winch: seconds less per save, the same sandbox).
    #[arg(long, value_name = "PROJECT", conflicts_with = "plugin_files")]
    pub watch: Option<PathBuf>,
    /// Write every failed or refused reconcile into DIR as a `weir test` fixture that fails the same way.
    #[arg(long, value_name = "DIR")]
    pub dump_failures: Option<PathBuf>,
    /// Also emulate N member clusters (`member-1` ... `member-N`, each its own API server in
    /// this process), their kubeconfigs written to `clusters/` beside `--kubeconfig`, engaged
    /// by the host as `weir run --clusters` engages them and shown in the live view. Without
    /// `--policy`, every plugin may place children in them (`plugins: {"*": {clusters: ["*"]}}`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub clusters: usize,
}

impl DevArgs {
    /// Runs until SIGTERM or Ctrl-C (blocking: it owns its async runtime).
    pub fn execute(&self, engine: EngineConfig) -> Result<(), DevError> {
        let runtime = tokio::runtime::Runtime::new().map_err(DevError::Runtime)?;
        runtime.block_on(self.run(engine))
    }

    async fn run(&self, engine: EngineConfig) -> Result<(), DevError> {
        let workloads = Some(WorkloadSimulation {
            ready_after: Duration::from_millis(self.ready_after_ms),
        });
        let emulator = Emulator::start(EmulatorConfig {
            workloads: workloads.clone(),
            port: self.port,
            // Nothing in `weir dev` reads the request log: keep none rather than grow it.
            request_log: 0,
            ..EmulatorConfig::default()
        })
        .await?;
        if let Some(dir) = self
            .kubeconfig
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir).map_err(|source| DevError::KubeconfigDir {
                path: dir.to_owned(),
                source,
            })?;
        }
        emulator.write_kubeconfig(&self.kubeconfig)?;
        let kubectl = format!("kubectl --kubeconfig {}", self.kubeconfig.display());
        println!("weir dev: Kubernetes API emulator at {}", emulator.url());
        println!("weir dev: use it with   {kubectl}");
        let fleet = self.fleet(workloads).await?;

        // A watched project's builds compile with the baseline compiler, seconds faster per save
        // for a Python or JavaScript component; `weir test` and `weir run` use the optimizing one.
        // Each save's component is compiled once, for its fixtures, and the hot loader's load of
        // the copy reuses it (the engine keeps the last compile), so no artifact of 50 MB is
        // written to the precompiled cache per save.
        let engine = Engine::new(match self.watch {
            Some(_) => EngineConfig {
                baseline_compiler: true,
                cache_dir: None,
                ..engine
            },
            None => engine,
        })?;
        let mut policy = Policy::load_or_default(self.policy.as_deref())?;
        if self.policy.is_none() && self.clusters > 0 {
            // The developer's own emulated fleet: every plugin may place children in it.
            let every = crate::policy::Grant {
                clusters: vec![crate::answer::ANY_CLUSTER.to_owned()],
                ..crate::policy::Grant::default()
            };
            policy
                .plugins
                .insert(crate::policy::EVERY_PLUGIN.to_owned(), every);
        }
        let policy = std::sync::Arc::new(policy);
        let (notes, notes_rx) = tokio::sync::mpsc::unbounded_channel();
        let watched = match &self.watch {
            Some(project) => Some(watch::Project::open(project)?),
            None => None,
        };
        let failures = match &self.dump_failures {
            Some(dir) => {
                Some(
                    crate::record::Dumps::new(dir).map_err(|source| DevError::DumpDir {
                        path: dir.clone(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        let config = ManagerConfig {
            controller: ControllerConfig {
                instance: "weir-dev".into(),
                failures: failures.map(|d| std::sync::Arc::new(d) as _),
                ..ControllerConfig::default()
            },
            listen: Some(self.listen),
            install_crds: true,
            policy: policy.clone(),
            clusters: fleet
                .as_ref()
                .map(|(_, dir)| crate::clusters::Config::new(dir)),
            ..ManagerConfig::default()
        };
        let source = PluginSource::Directory {
            config: match &watched {
                Some(project) => hotload::Config::new(project.served_dir()),
                None => self.watched()?,
            },
            engine: engine.clone(),
        };
        let host = Manager::start(emulator.client(), source, config).await?;
        if let Some(addr) = host.addr() {
            let from = match (&watched, self.plugin_files.is_empty()) {
                (Some(project), _) => format!(
                    "{} (built from {})",
                    project.served_dir().display(),
                    project.dir().display()
                ),
                (None, true) => self.plugins.display().to_string(),
                (None, false) => format!("{:?}", self.plugin_files),
            };
            println!("weir dev: plugins from {from} (listed at http://{addr}/plugins)");
        }
        let hint = tokio::spawn(hint(host.catalog(), kubectl.clone(), notes.clone()));
        let live = !self.plain && std::io::stdout().is_terminal();
        let inputs = view::Inputs {
            client: emulator.client(),
            catalog: host.catalog(),
            metrics: host.metrics().clone(),
            activity: host.activity(),
            notes: notes_rx,
            kubectl,
            clusters: fleet.is_some().then(|| {
                let own = format!("cluster local (the host's own) at {}", emulator.url());
                (host.clusters(), own)
            }),
        };
        let stop_view = tokio_util::sync::CancellationToken::new();
        let view = tokio::spawn(view::show(inputs, live, stop_view.clone()));
        let rebuilds = watched.map(|project| {
            let checks = watch::Checks {
                engine,
                limits: crate::plugin::Limits::default(),
                validation: policy.validation(),
            };
            tokio::spawn(project.run(checks, notes.clone()))
        });

        let applied = async {
            if let Some(dir) = &self.apply {
                wait_ready(&host, &self.plugins, self.watch.is_some()).await?;
                for line in apply_dir(&emulator.client(), dir).await.map_err(Box::new)? {
                    // The view prints it (or shows it in its feed).
                    let _ = notes.send(line);
                }
            }
            Ok::<(), DevError>(())
        };
        let outcome = tokio::select! {
            () = crate::run::shutdown_signal() => Ok(()),
            r = async { applied.await?; crate::run::shutdown_signal().await; Ok(()) } => r,
        };
        if let Some(task) = rebuilds {
            task.abort();
        }
        hint.abort();
        stop_view.cancel();
        // The view restores the terminal before anything else is printed.
        let _ = view.await;
        println!("weir dev: stopping");
        host.shutdown().await;
        if let Some((fleet, _)) = fleet {
            fleet.shutdown().await;
        }
        emulator.shutdown().await;
        outcome
    }

    /// With `--clusters N`: the member clusters, started, and the directory their kubeconfigs
    /// are written to (`clusters/` beside `--kubeconfig`; a previous run's `member-*.yaml` there
    /// are replaced or removed, so no stale member is engaged).
    async fn fleet(
        &self,
        workloads: Option<WorkloadSimulation>,
    ) -> Result<Option<(Fleet, PathBuf)>, DevError> {
        if self.clusters == 0 {
            return Ok(None);
        }
        let names: Vec<String> = (1..=self.clusters).map(|i| format!("member-{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let config = EmulatorConfig {
            workloads,
            request_log: 0,
            ..EmulatorConfig::default()
        };
        let fleet = Fleet::start(&names, &config).await?;
        let dir = self
            .kubeconfig
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join("clusters");
        let unusable = |source| DevError::KubeconfigDir {
            path: dir.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(unusable)?;
        for entry in std::fs::read_dir(&dir).map_err(unusable)? {
            let path = entry.map_err(unusable)?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("member-") && name.ends_with(".yaml") {
                std::fs::remove_file(&path).map_err(unusable)?;
            }
        }
        fleet.write_kubeconfigs(&dir)?;
        for (name, member) in fleet.members() {
            println!(
                "weir dev: member cluster {name} at {} (kubectl --kubeconfig {})",
                member.url(),
                Fleet::kubeconfig_path(&dir, name).display()
            );
        }
        Ok(Some((fleet, dir)))
    }
}

impl DevArgs {
    /// The directory to watch, and the file names to serve from it if `--plugin` was given.
    fn watched(&self) -> Result<hotload::Config, DevError> {
        let Some(first) = self.plugin_files.first() else {
            return Ok(hotload::Config::new(&self.plugins));
        };
        let dir = first
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let mut names = std::collections::BTreeSet::new();
        for file in &self.plugin_files {
            let same_dir = file
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."))
                == dir;
            match file.file_name() {
                Some(name) if same_dir => names.insert(name.to_owned()),
                _ => return Err(DevError::PluginFiles(self.plugin_files.clone())),
            };
        }
        Ok(hotload::Config {
            only: Some(names),
            ..hotload::Config::new(dir)
        })
    }
}

/// Once the first plugins serve, says how to see their parents and children with kubectl
/// (`kubectl --kubeconfig .weir/kubeconfig get blogs,configmaps,deployments,services`).
async fn hint(
    catalog: crate::hotload::Catalog,
    kubectl: String,
    notes: tokio::sync::mpsc::UnboundedSender<String>,
) {
    loop {
        let rows = catalog.rows();
        if !rows.is_empty() && catalog.loading().is_none() {
            let _ = notes.send(format!("try   {kubectl} get {}", plurals(&rows)));
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The plurals of the served kinds, parents first, then their children, each once.
fn plurals(rows: &[crate::hotload::CatalogRow]) -> String {
    let mut names: Vec<&str> = rows.iter().map(|r| r.info.parent.plural.as_str()).collect();
    for row in rows {
        names.extend(row.info.children.iter().map(|c| c.plural.as_str()));
    }
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|n| seen.insert(*n));
    names.join(",")
}

/// Waits until the plugins present at start are loaded and their kinds are served (with
/// `--watch`, until the project's first build is served: a first build may take minutes).
async fn wait_ready(host: &Manager, dir: &std::path::Path, built: bool) -> Result<(), DevError> {
    let secs: u64 = if built { 900 } else { 120 };
    for _ in 0..secs * 20 {
        let served = !built || !host.catalog().is_empty();
        if served && host.is_ready() && host.catalog().loading().is_none() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(DevError::NotReady {
        dir: dir.to_owned(),
        secs,
    })
}
