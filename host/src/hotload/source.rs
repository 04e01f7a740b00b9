//! A plugin source as the host sees it, whichever it is: a fixed list of components, a
//! directory (and its `candidates/` folder), the cluster's `Plugin` objects, one tenant
//! namespace's `TenantPlugin` objects.
//!
//! Each gives the events of the plugins it serves as they come, change and go, their catalog,
//! and where its candidate versions come from, each named by a file whose serving file the
//! source knows. Which entry of a source serves a kind is its [`Arbiter`](super::arbiter)'s
//! call; the host follows the events and never asks which source it runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::dir::{Loaded, PluginEvent};
use super::{
    Catalog, ClusterConfig, ClusterLoader, Config, HotLoader, HotloadMetrics, Loader, Result,
};
use crate::fence::Fence;
use crate::runtime::Cap;

/// The subdirectory of a plugins directory holding candidates: `DIR/candidates/FILE.wasm` is
/// the candidate of `DIR/FILE.wasm`.
pub const CANDIDATES_DIR: &str = "candidates";

/// The events of a source's plugins, or of its candidates.
pub type Events<P> = UnboundedReceiver<PluginEvent<P>>;

/// The serving file a candidate's file is the candidate of.
pub type ServingOf = Box<dyn Fn(&Path) -> PathBuf + Send>;

/// A started source.
pub struct Source<P> {
    /// What it serves, as it comes, changes and goes.
    pub events: Events<P>,
    /// What it serves now.
    pub catalog: Catalog,
    /// Its candidate versions, if it has a place for them.
    pub candidates: Option<CandidateEvents<P>>,
    /// Keeps it running: dropping this stops the source.
    pub running: Running,
}

/// Where a source's candidate versions come from.
pub struct CandidateEvents<P> {
    /// Candidates proposed, replaced, withdrawn or refused.
    pub events: Events<P>,
    /// The serving file of each candidate's file.
    pub serving_of: ServingOf,
    /// Where the refusals of a candidate made after its load go back to, when the source shows
    /// them (the cluster's: on the Plugin's status); `None`: the listing only.
    pub refused_after_load: Option<UnboundedSender<RefusedAfterLoad>>,
}

/// A candidate refused after its load (it serves another kind, it is another plugin, the rollout
/// rolled it back), for its source to show as it shows a refusal before the load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedAfterLoad {
    /// The candidate's file (`Plugin/NAME/candidate`).
    pub file: PathBuf,
    /// The sha256 of its component: a refusal of a candidate since replaced is ignored.
    pub sha256: String,
    /// CamelCase reason (`OtherKind`, `RolledBack`, ...).
    pub reason: &'static str,
    /// Why, for people.
    pub message: String,
}

/// Keeps a source's loaders running; dropping it stops them.
pub struct Running(#[expect(dead_code, reason = "held for its Drop")] Loaders);

#[expect(dead_code, reason = "the loaders are held for their Drop")]
enum Loaders {
    None,
    Directory(HotLoader, Option<HotLoader>),
    Cluster(ClusterLoader),
}

impl<P: Loaded> Source<P> {
    /// These plugins, loaded (and admitted) already, served for the host's whole life; each is
    /// named by its `name@version`.
    pub fn fixed(plugins: Vec<P>) -> Self {
        let (tx, events) = unbounded_channel();
        let catalog = Catalog::default();
        for plugin in plugins {
            let event = PluginEvent::Added {
                file: plugin.info().label().into(),
                plugin,
            };
            catalog.apply(&event);
            // The receiver is returned with the events: the send cannot fail.
            let _ = tx.send(event);
        }
        catalog.mark_scanned();
        Self {
            events,
            catalog,
            candidates: None,
            running: Running(Loaders::None),
        }
    }

    /// Every `*.wasm` file of `config.dir`, and the files of its [`CANDIDATES_DIR`] (if there
    /// is one) as candidates, each followed by a hot loader of its own with `loader`.
    pub fn directory<L>(config: Config, loader: L, metrics: HotloadMetrics) -> Result<Self>
    where
        L: Loader<Plugin = P> + Clone,
    {
        let candidates_dir = config.dir.join(CANDIDATES_DIR);
        let candidates = if candidates_dir.is_dir() {
            let watch = Config {
                dir: candidates_dir,
                only: None,
                ..config.clone()
            };
            let (hot, events) = HotLoader::start(watch, loader.clone(), HotloadMetrics::default())?;
            let plugins_dir = config.dir.clone();
            let serving_of: ServingOf =
                Box::new(move |file| plugins_dir.join(file.file_name().unwrap_or_default()));
            let candidates = CandidateEvents {
                events,
                serving_of,
                refused_after_load: None,
            };
            Some((hot, candidates))
        } else {
            None
        };
        let (hot, events) = HotLoader::start(config, loader, metrics)?;
        let (candidates_loader, candidates) = candidates.unzip();
        Ok(Self {
            catalog: hot.catalog(),
            events,
            candidates,
            running: Running(Loaders::Directory(hot, candidates_loader)),
        })
    }

    /// Every `Plugin` object of the cluster, each one's `spec.candidate` as its candidate
    /// (see [`ClusterLoader`]); only a leader by `leading` writes their status, with `client`.
    pub fn cluster<L>(
        client: kube::Client,
        config: ClusterConfig,
        leading: Fence,
        loader: L,
        metrics: HotloadMetrics,
    ) -> Result<Self>
    where
        L: Loader<Plugin = P> + Sync,
    {
        let started = ClusterLoader::start(client, config, leading, loader, metrics)?;
        Ok(Self::following(started))
    }

    /// The `TenantPlugin` objects of `namespace` (see [`ClusterLoader::start_tenant`]), each
    /// one's `spec.candidate` as its candidate; `loader` admits them as that namespace's, and
    /// their status follows `cap`, the cap on the tenant's cache, if it has one.
    pub fn tenant<L>(
        client: kube::Client,
        namespace: &str,
        cap: Option<Arc<Cap>>,
        config: ClusterConfig,
        leading: Fence,
        loader: L,
        metrics: HotloadMetrics,
    ) -> Result<Self>
    where
        L: Loader<Plugin = P> + Sync,
    {
        let started =
            ClusterLoader::start_tenant(client, namespace, cap, config, leading, loader, metrics)?;
        Ok(Self::following(started))
    }

    /// A started cluster loader as a source.
    fn following((loader, events, candidates): super::cluster::Started<P>) -> Self {
        let (candidates, refused_after_load) = candidates;
        Self {
            catalog: loader.catalog(),
            events,
            candidates: Some(CandidateEvents {
                events: candidates,
                serving_of: Box::new(ClusterLoader::serving_of),
                refused_after_load: Some(refused_after_load),
            }),
            running: Running(Loaders::Cluster(loader)),
        }
    }
}
