//! The running controllers, one per served kind, started, restarted and stopped as plugins change.
//!
//! A new version of a plugin gets a fresh controller rather than a pointer swap
//! inside the old one: the old controller stops handing out keys and its
//! in-flight reconciles finish on the old version, then the new controller
//! lists the kind again, so every object is reconciled by the new logic (its
//! desired state may have changed), and any new child kinds it declares get
//! their watches. No key is ever reconciled by both versions at once.
//!
//! Stopping a kind (its file removed) leaves its children as they are.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use kube::Client;
use tokio::sync::{Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::dir::{KindKey, PluginEvent};
use crate::metrics::Metrics;
use crate::plugin::Plugin;
use crate::reconcile::invoke::Reconciler;
use crate::reconcile::{Controller, ControllerConfig};

/// How long a stopping controller may take to finish its in-flight reconciles.
const DRAIN: Duration = Duration::from_secs(30);

/// One kind's controller and its tasks.
struct Running {
    controller: Arc<Controller>,
    sources: JoinSet<()>,
    workers: JoinHandle<()>,
    stop: CancellationToken,
}

/// The controllers by kind; [`FleetView`] reads it from the operations server.
pub(crate) struct Fleet {
    client: Client,
    permits: Arc<Semaphore>,
    metrics: Arc<Metrics>,
    config: ControllerConfig,
    /// `None`: the only replica, always leading.
    leading: Option<watch::Receiver<bool>>,
    running: HashMap<KindKey, Running>,
    view: FleetView,
}

/// The controllers' caches, shared with `/readyz`.
#[derive(Clone, Default)]
pub(crate) struct FleetView {
    controllers: Arc<RwLock<HashMap<KindKey, Arc<Controller>>>>,
}

impl FleetView {
    /// Kinds with a running controller.
    pub(crate) fn len(&self) -> usize {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether every controller's caches hold their first full list.
    pub(crate) fn synced(&self) -> bool {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .all(|c| c.cache().is_synced())
    }

    fn set(&self, kind: KindKey, controller: Option<Arc<Controller>>) {
        let mut map = self
            .controllers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match controller {
            Some(c) => map.insert(kind, c),
            None => map.remove(&kind),
        };
    }
}

impl Fleet {
    pub(crate) fn new(
        client: Client,
        metrics: Arc<Metrics>,
        config: ControllerConfig,
        max_concurrent_calls: usize,
        leading: Option<watch::Receiver<bool>>,
    ) -> Self {
        Self {
            client,
            permits: Arc::new(Semaphore::new(max_concurrent_calls.max(1))),
            metrics,
            config,
            leading,
            running: HashMap::new(),
            view: FleetView::default(),
        }
    }

    pub(crate) fn view(&self) -> FleetView {
        self.view.clone()
    }

    /// Makes the running controllers follow one change of the plugins directory.
    pub(crate) async fn apply(&mut self, event: PluginEvent<Plugin>) {
        match event {
            PluginEvent::Added { plugin, .. } => self.start(plugin),
            PluginEvent::Replaced { new, .. } => {
                self.stop(&KindKey::of(new.info())).await;
                self.start(new);
            }
            PluginEvent::Removed { plugin, .. } => self.stop(&KindKey::of(plugin.info())).await,
            PluginEvent::Refused { .. } => {}
        }
    }

    fn start(&mut self, plugin: Plugin) {
        let kind = KindKey::of(plugin.info());
        let label = plugin.label().to_owned();
        let reconciler: Arc<dyn Reconciler> = Arc::new(plugin);
        let controller = Arc::new(Controller::new(
            self.client.clone(),
            reconciler,
            self.permits.clone(),
            self.metrics.clone(),
            self.config.clone(),
        ));
        let mut sources = JoinSet::new();
        controller.start_sources(&mut sources);
        let stop = CancellationToken::new();
        let workers = tokio::spawn(lead_then_work(
            controller.clone(),
            self.leading.clone(),
            stop.clone(),
        ));
        info!(plugin = %label, %kind, "controller started");
        self.view.set(kind.clone(), Some(controller.clone()));
        self.running.insert(
            kind,
            Running {
                controller,
                sources,
                workers,
                stop,
            },
        );
    }

    /// Stops `kind`'s controller once its in-flight reconciles are done.
    async fn stop(&mut self, kind: &KindKey) {
        let Some(mut running) = self.running.remove(kind) else {
            return;
        };
        self.view.set(kind.clone(), None);
        running.stop.cancel();
        running.controller.shutdown();
        if tokio::time::timeout(DRAIN, &mut running.workers)
            .await
            .is_err()
        {
            warn!(%kind, "in-flight reconciles did not finish in {DRAIN:?}; stopping them");
            running.workers.abort();
        }
        running.sources.abort_all();
        info!(%kind, "controller stopped; its children are left as they are");
    }

    /// Stops every controller (graceful shutdown).
    pub(crate) async fn shutdown(&mut self) {
        let kinds: Vec<KindKey> = self.running.keys().cloned().collect();
        for kind in kinds {
            self.stop(&kind).await;
        }
    }
}

/// Runs the workers while this replica leads; the sources run regardless, so a
/// standby's caches are warm when it takes over.
async fn lead_then_work(
    controller: Arc<Controller>,
    leading: Option<watch::Receiver<bool>>,
    stop: CancellationToken,
) {
    if let Some(mut leading) = leading {
        tokio::select! {
            () = stop.cancelled() => return,
            won = leading.wait_for(|l| *l) => if won.is_err() { return },
        }
    }
    tokio::select! {
        () = stop.cancelled() => {}
        () = wait_synced(&controller) => {}
    }
    if stop.is_cancelled() {
        return;
    }
    controller.run_workers().await;
}

async fn wait_synced(controller: &Controller) {
    while !controller.cache().is_synced() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
