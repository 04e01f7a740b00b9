//! The member kubeconfigs followed as a live source: a directory (`--clusters DIR`) or Secrets (`--cluster-secrets SELECTOR`).
//!
//! A `notify` watch on the directory, or a watch of the selected Secrets, wakes the source,
//! and a periodic listing covers what a watch misses (a mounted Secret's `..data` swap, a
//! network filesystem). Each listing's changes ([`super::seen::Seen`]) are applied in order:
//! released clusters first, then relabelled ones, then the engaged ones, each through its own
//! client with its own limits; then every engaged cluster watches exactly the kinds the served
//! plugins may place there. A changed kubeconfig that names the same server rotates the
//! cluster's credentials in place ([`Engaged::rotate`]): the client, its watches and its
//! caches stay, so nothing is listed again. One that names another server engages the cluster
//! anew: a resourceVersion means nothing to another server.

use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use kube::{Api, Client};
use notify::{RecursiveMode, Watcher as _};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::dir::DirState;
use super::engaged::Engaged;
use super::kubeconfig::client_config;
use super::secrets::{SecretsConfig, listed};
use super::seen::{Changes, Seen};
use crate::chain::Chain;
use crate::client::{ClientLimits, Rotating};
use crate::plugin::ResourceKind;

/// Where the member kubeconfigs come from.
#[derive(Clone, Debug)]
pub enum Members {
    /// `--clusters DIR`: one file per cluster ([`super::dir`]).
    Dir(PathBuf),
    /// `--cluster-secrets SELECTOR`: one Secret per cluster ([`super::secrets`]).
    Secrets(SecretsConfig),
}

/// How the member kubeconfigs are followed.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where they come from.
    pub members: Members,
    /// The limits of each member's client (each cluster has a client and a budget of its own).
    pub limits: ClientLimits,
    /// How often the source is listed again even when nothing says it changed.
    pub rescan: Duration,
}

impl Config {
    /// Follows `dir`, each member's client with the default limits, rescanned every 2 s.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::of(Members::Dir(dir.into()))
    }

    /// Follows `members`, each member's client with the default limits, rescanned every 2 s.
    pub fn of(members: Members) -> Self {
        Self {
            members,
            limits: ClientLimits::default(),
            rescan: Duration::from_secs(2),
        }
    }
}

/// Why the member kubeconfigs cannot be followed.
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
    /// The selector is empty: it would take every Secret of the namespace for a cluster.
    #[error(
        "--cluster-secrets: an empty label selector would take every Secret in {0} for a cluster"
    )]
    EmptySelector(String),
}

/// What wakes the source, and what it lists.
enum Feed {
    /// The directory and its `notify` watch.
    Dir {
        state: DirState,
        _watcher: notify::RecommendedWatcher,
    },
    /// The cluster Secrets, watched through the host's client into `store`.
    Secrets {
        store: reflector::Store<Secret>,
        seen: Seen,
        task: tokio::task::JoinHandle<()>,
    },
}

impl Drop for Feed {
    fn drop(&mut self) {
        if let Feed::Secrets { task, .. } = self {
            task.abort();
        }
    }
}

impl Feed {
    /// What changed since the last listing.
    fn list(&mut self) -> Changes {
        match self {
            Feed::Dir { state, .. } => state.scan(),
            Feed::Secrets { store, seen, .. } => seen.diff(listed(store)),
        }
    }

    /// A cluster accepted but not engaged is listed again only once its kubeconfig changes.
    fn not_engaged(&mut self, name: &str) {
        match self {
            Feed::Dir { state, .. } => state.not_engaged(name),
            Feed::Secrets { seen, .. } => seen.not_engaged(name),
        }
    }

    /// Returns once the source holds its first listing (at once for a directory).
    async fn ready(&self) {
        if let Feed::Secrets { store, .. } = self {
            // The writer lives in the watch task, which runs until the source stops.
            let _ = store.wait_until_ready().await;
        }
    }
}

/// The member kubeconfigs, followed: [`Watched::run`] applies what it finds.
pub struct Watched {
    config: Config,
    feed: Feed,
    wake: UnboundedReceiver<()>,
}

impl Watched {
    /// Starts following `config`'s members (nothing is engaged until [`Watched::run`]); the
    /// Secrets are read through `client`. Must be called inside the Tokio runtime.
    pub fn start(config: Config, client: &Client) -> Result<Watched, SourceError> {
        let (tx, wake) = tokio::sync::mpsc::unbounded_channel();
        let feed = match &config.members {
            Members::Dir(dir) => Feed::Dir {
                state: DirState::new(dir.clone()),
                _watcher: watch_dir(dir, tx)?,
            },
            Members::Secrets(secrets) => {
                if secrets.selector.trim().is_empty() {
                    return Err(SourceError::EmptySelector(secrets.namespace.clone()));
                }
                let (store, task) = watch_secrets(client.clone(), secrets, tx);
                Feed::Secrets {
                    store,
                    seen: Seen::default(),
                    task,
                }
            }
        };
        Ok(Watched { config, feed, wake })
    }

    /// Engages and releases the source's clusters into `engaged` until `stop`, each watching
    /// the kinds `kinds` names at the time (in `namespace`, or all namespaces); releases them
    /// all when stopped.
    pub async fn run(
        mut self,
        engaged: Engaged,
        kinds: impl Fn() -> Vec<ResourceKind>,
        namespace: Option<String>,
        stop: CancellationToken,
    ) {
        tokio::select! {
            () = stop.cancelled() => return,
            () = self.feed.ready() => {}
        }
        let mut tick = tokio::time::interval(self.config.rescan);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tick.tick() => {}
                Some(()) = self.wake.recv() => {
                    // A burst of events (a copy, a rename) makes one listing.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    while self.wake.try_recv().is_ok() {}
                }
            }
            let wanted = kinds();
            let limits = self.config.limits;
            let changes = self.feed.list();
            apply(
                changes,
                &mut self.feed,
                &engaged,
                limits,
                (&wanted, &namespace),
            )
            .await;
            engaged.watch_only(&wanted);
            engaged.scanned();
        }
        for name in engaged.names() {
            engaged.release(&name);
        }
    }
}

/// A `notify` watch on `dir` that wakes the source through `tx`.
fn watch_dir(
    dir: &std::path::Path,
    tx: UnboundedSender<()>,
) -> Result<notify::RecommendedWatcher, SourceError> {
    if !dir.is_dir() {
        return Err(SourceError::NotADirectory(dir.to_owned()));
    }
    let watch_err = |source| SourceError::Watch {
        dir: dir.to_owned(),
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
        .watch(dir, RecursiveMode::NonRecursive)
        .map_err(watch_err)?;
    Ok(watcher)
}

/// One watch of the Secrets `config` selects, reflected into a store; each change wakes the
/// source through `tx`. A failing watch is retried with backoff and logged: until the first
/// list, the source engages nothing and no member counts as settled.
fn watch_secrets(
    client: Client,
    config: &SecretsConfig,
    tx: UnboundedSender<()>,
) -> (reflector::Store<Secret>, tokio::task::JoinHandle<()>) {
    let api: Api<Secret> = Api::namespaced(client, &config.namespace);
    let (store, writer) = reflector::store();
    let watch = watcher(api, watcher::Config::default().labels(&config.selector));
    let stream = reflector(writer, watch).default_backoff();
    let (namespace, selector) = (config.namespace.clone(), config.selector.clone());
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => {
                    let _ = tx.send(());
                }
                Err(e) => tracing::warn!(
                    %namespace, %selector, error = %Chain(&e),
                    "cannot watch the cluster Secrets; retrying"
                ),
            }
        }
    });
    (store, task)
}

/// One listing's changes, applied: each cluster engaged with a client limited by `limits`.
async fn apply(
    changes: Changes,
    feed: &mut Feed,
    engaged: &Engaged,
    limits: ClientLimits,
    (kinds, namespace): (&[ResourceKind], &Option<String>),
) {
    for e in &changes.refused {
        engaged.refuse();
        tracing::error!(error = %Chain(e), "member cluster kubeconfig refused");
    }
    for name in changes.release {
        if engaged.release(&name) {
            tracing::info!(cluster = %name, "member cluster released: its watches stopped, its cache freed");
        }
    }
    for (name, labels) in changes.relabel {
        engaged.relabel(&name, labels);
        tracing::info!(cluster = %name, "member cluster relabelled");
    }
    for found in changes.engage {
        let (name, origin) = (found.name, found.origin);
        let config = match client_config(&origin, found.kubeconfig).await {
            Ok(config) => config,
            Err(e) => {
                engaged.refuse();
                feed.not_engaged(&name);
                tracing::error!(cluster = %name, error = %Chain(&e), "member cluster not engaged");
                continue;
            }
        };
        let server = config.cluster_url.to_string();
        if engaged.server(&name).as_deref() == Some(server.as_str()) {
            rotate(engaged, &name, config);
            engaged.relabel(&name, found.labels);
            continue;
        }
        match Rotating::build(config, limits) {
            Ok(client) => {
                engaged.engage(
                    &name,
                    (server.clone(), client),
                    found.labels,
                    kinds,
                    namespace.clone(),
                );
                tracing::info!(cluster = %name, %server, %origin, kinds = kinds.len(), "member cluster engaged");
            }
            Err(e) => {
                engaged.refuse();
                feed.not_engaged(&name);
                tracing::error!(cluster = %name, %origin, error = %Chain(&e), "member cluster not engaged: no client");
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
