//! The plugin sources, started one way: a fixed list of components, a directory (and its
//! `candidates/` folder), the cluster's `Plugin` objects. Each gives the events of the plugins
//! it serves, their catalog, what keeps it running, and where its candidate versions come from.

use kube::Client;
use tokio::sync::mpsc;

use super::admission::{Admission, AdmittingLoader};
use super::candidates::{CANDIDATES_DIR, ServingOf};
use super::{ManagerError, PluginSource};
use crate::fence::Fence;
use crate::hotload::{
    self, Catalog, ClusterLoader, EngineLoader, HotLoader, HotloadMetrics, PluginEvent,
};
use crate::plugin::{Limits, Plugin};

/// The events of a source's plugins as they come, change and go.
pub(super) type Events = mpsc::UnboundedReceiver<PluginEvent<Plugin>>;

/// The running source, kept alive as long as the host (dropping it stops it).
pub(super) enum Running {
    Directory(#[expect(dead_code, reason = "held for its Drop")] HotLoader),
    Cluster(#[expect(dead_code, reason = "held for its Drop")] ClusterLoader),
}

/// Where candidate versions come from: the `candidates/` folder's loader (kept alive with the
/// host; the cluster source has none of its own), their events, and the serving file each is a
/// candidate of.
pub(super) type CandidateSource = (Option<HotLoader>, Events, ServingOf);

/// A started source.
pub(super) struct Started {
    pub(super) events: Events,
    pub(super) catalog: Catalog,
    pub(super) running: Option<Running>,
    pub(super) candidates: Option<CandidateSource>,
}

/// Starts `source`. A fixed list is admitted here, and a refusal stops the host's start; the
/// loaders admit each component as they load it, with `limits` on its calls. The cluster source
/// writes (its `Plugin` statuses) through `client`, built by the leader's `gate`.
pub(super) async fn start(
    source: PluginSource,
    admission: Admission,
    limits: Limits,
    (client, gate): (&Client, &Fence),
    metrics: &HotloadMetrics,
) -> Result<Started, ManagerError> {
    let mut candidates = None;
    let (events, catalog, running) = match source {
        PluginSource::Fixed(plugins) => {
            let (tx, rx) = mpsc::unbounded_channel();
            let catalog = Catalog::default();
            for plugin in plugins {
                admission
                    .admit(plugin.info())
                    .await
                    .map_err(|source| ManagerError::Admission {
                        plugin: plugin.label().to_owned(),
                        source: Box::new(source),
                    })?;
                let event = PluginEvent::Added {
                    file: plugin.label().into(),
                    plugin,
                };
                catalog.apply(&event);
                // The receiver is returned with the events: the send cannot fail.
                let _ = tx.send(event);
            }
            catalog.mark_scanned();
            (rx, catalog, None)
        }
        PluginSource::Directory {
            config: dir,
            engine,
        } => {
            let loader = |admission| AdmittingLoader {
                inner: EngineLoader {
                    engine: engine.clone(),
                    limits,
                },
                admission,
                runtime: tokio::runtime::Handle::current(),
            };
            let candidates_dir = dir.dir.join(CANDIDATES_DIR);
            if candidates_dir.is_dir() {
                let watch = hotload::Config {
                    dir: candidates_dir,
                    only: None,
                    ..dir.clone()
                };
                let (hot, rx) =
                    HotLoader::start(watch, loader(admission.clone()), HotloadMetrics::default())?;
                let plugins_dir = dir.dir.clone();
                let serving_of: ServingOf = Box::new(move |file: &std::path::Path| {
                    plugins_dir.join(file.file_name().unwrap_or_default())
                });
                candidates = Some((Some(hot), rx, serving_of));
            }
            let (hot, rx) = HotLoader::start(dir, loader(admission), metrics.clone())?;
            (rx, hot.catalog(), Some(Running::Directory(hot)))
        }
        PluginSource::Cluster {
            config: cluster,
            engine,
        } => {
            let loader = AdmittingLoader {
                inner: EngineLoader { engine, limits },
                admission,
                runtime: tokio::runtime::Handle::current(),
            };
            let (source, rx, candidate_events) = ClusterLoader::start(
                client.clone(),
                cluster,
                gate.clone(),
                loader,
                metrics.clone(),
            )?;
            // `Plugin/NAME/candidate` is the candidate of `Plugin/NAME`.
            let serving_of: ServingOf = Box::new(|file: &std::path::Path| {
                file.parent()
                    .map(std::path::Path::to_path_buf)
                    .unwrap_or_default()
            });
            candidates = Some((None, candidate_events, serving_of));
            (rx, source.catalog(), Some(Running::Cluster(source)))
        }
    };
    Ok(Started {
        events,
        catalog,
        running,
        candidates,
    })
}
