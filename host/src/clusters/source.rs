//! `weir run --clusters DIR`: the directory of member kubeconfigs followed as a live source.
//!
//! A `notify` watch on the directory wakes the source, and a periodic scan covers what the
//! watch misses (a mounted Secret's `..data` swap, a network filesystem). Each scan's changes
//! ([`super::dir::DirState::scan`]) are applied in order: released clusters first, then the
//! engaged ones, each through its own client with its own limits; then every engaged cluster
//! watches exactly the kinds the served plugins may place there. A changed file that names the
//! same server rotates the cluster's credentials in place ([`Engaged::rotate`]): the client,
//! its watches and its caches stay, so nothing is listed again. One that names another server
//! engages the cluster anew: a resourceVersion means nothing to another server.

use std::path::PathBuf;
use std::time::Duration;

use notify::{RecursiveMode, Watcher as _};
use tokio_util::sync::CancellationToken;

use super::dir::DirState;
use super::engaged::Engaged;
use super::kubeconfig::client_config;
use crate::chain::Chain;
use crate::client::{ClientLimits, Rotating};
use crate::plugin::ResourceKind;

/// How the directory of member kubeconfigs is followed.
#[derive(Clone, Debug)]
pub struct Config {
    /// The directory: one kubeconfig per member cluster, named by the file's stem.
    pub dir: PathBuf,
    /// The limits of each member's client (each cluster has a client and a budget of its own).
    pub limits: ClientLimits,
    /// How often the directory is scanned even when the watch says nothing.
    pub rescan: Duration,
}

impl Config {
    /// Follows `dir`, each member's client with the default limits, rescanned every 2 s.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            limits: ClientLimits::default(),
            rescan: Duration::from_secs(2),
        }
    }
}

/// Why the directory cannot be followed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// It is not a directory.
    #[error("--clusters {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The watch could not be set up.
    #[error("cannot watch {}", dir.display())]
    Watch {
        /// The directory.
        dir: PathBuf,
        /// The watcher's error.
        #[source]
        source: notify::Error,
    },
}

/// The directory, watched: [`Watched::run`] applies what it finds.
pub struct Watched {
    config: Config,
    _watcher: notify::RecommendedWatcher,
    wake: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl Watched {
    /// Starts watching `config.dir` (nothing is read until [`Watched::run`]).
    pub fn start(config: Config) -> Result<Watched, SourceError> {
        if !config.dir.is_dir() {
            return Err(SourceError::NotADirectory(config.dir));
        }
        let (tx, wake) = tokio::sync::mpsc::unbounded_channel();
        let watch_err = |source| SourceError::Watch {
            dir: config.dir.clone(),
            source,
        };
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Err(e) = event {
                tracing::warn!(error = %e, "clusters directory watch error; the periodic scan covers it");
            }
            // A closed channel: the source is stopping.
            let _ = tx.send(());
        })
        .map_err(watch_err)?;
        watcher
            .watch(&config.dir, RecursiveMode::NonRecursive)
            .map_err(watch_err)?;
        Ok(Watched {
            config,
            _watcher: watcher,
            wake,
        })
    }

    /// Engages and releases the directory's clusters into `engaged` until `stop`, each watching
    /// the kinds `kinds` names at the time (in `namespace`, or all namespaces); releases them
    /// all when stopped.
    pub async fn run(
        mut self,
        engaged: Engaged,
        kinds: impl Fn() -> Vec<ResourceKind>,
        namespace: Option<String>,
        stop: CancellationToken,
    ) {
        let mut state = DirState::new(self.config.dir.clone());
        let mut tick = tokio::time::interval(self.config.rescan);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tick.tick() => {}
                Some(()) = self.wake.recv() => {
                    // A burst of events (a copy, a rename) makes one scan.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    while self.wake.try_recv().is_ok() {}
                }
            }
            let wanted = kinds();
            let limits = self.config.limits;
            apply(&mut state, &engaged, limits, (&wanted, &namespace)).await;
            engaged.watch_only(&wanted);
            engaged.scanned();
        }
        for name in engaged.names() {
            engaged.release(&name);
        }
    }
}

/// One scan's changes, applied: each cluster engaged with a client limited by `limits`.
async fn apply(
    state: &mut DirState,
    engaged: &Engaged,
    limits: ClientLimits,
    (kinds, namespace): (&[ResourceKind], &Option<String>),
) {
    let changes = state.scan();
    for e in &changes.refused {
        engaged.refuse();
        tracing::error!(error = %Chain(e), "member cluster kubeconfig refused");
    }
    for name in changes.release {
        if engaged.release(&name) {
            tracing::info!(cluster = %name, "member cluster released: its watches stopped, its cache freed");
        }
    }
    for (name, path, kubeconfig) in changes.engage {
        let config = match client_config(&path, kubeconfig).await {
            Ok(config) => config,
            Err(e) => {
                engaged.refuse();
                state.not_engaged(&name);
                tracing::error!(cluster = %name, error = %Chain(&e), "member cluster not engaged");
                continue;
            }
        };
        let server = config.cluster_url.to_string();
        if engaged.server(&name).as_deref() == Some(server.as_str()) {
            rotate(engaged, &name, config);
            continue;
        }
        match Rotating::build(config, limits) {
            Ok(client) => {
                engaged.engage(&name, (server.clone(), client), kinds, namespace.clone());
                tracing::info!(cluster = %name, %server, kinds = kinds.len(), "member cluster engaged");
            }
            Err(e) => {
                engaged.refuse();
                state.not_engaged(&name);
                tracing::error!(cluster = %name, file = %path.display(), error = %Chain(&e), "member cluster not engaged: no client");
            }
        }
    }
}

/// The engaged `name`'s kubeconfig changed but names the same server: its credentials are
/// rotated in place (its watches resume from their resourceVersion; nothing is listed again).
/// New credentials that do not make a client are refused, and the ones in use stay.
fn rotate(engaged: &Engaged, name: &str, config: kube::Config) {
    match engaged.rotate(name, config) {
        Ok(_) => tracing::info!(
            cluster = %name,
            "member cluster credentials rotated in place: its watches resume where they were"
        ),
        Err(e) => {
            engaged.refuse();
            tracing::error!(
                cluster = %name,
                error = %Chain(&e),
                "member cluster credentials refused: the ones in use stay"
            );
        }
    }
}
