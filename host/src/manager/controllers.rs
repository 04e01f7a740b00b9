//! The running controllers, one per served parent kind: started, swapped in place, stopped.
//!
//! A new version of a plugin is swapped *inside* its running controller: the queue, the workers
//! and the caches stay (no re-list), reconciles in flight finish on the old version, and every
//! parent of the kind is enqueued once so the new logic reaches all of them. Kinds only the old
//! version declared are unsubscribed; kinds only the new one declares get their watches.
//!
//! A controller's workers run while this replica leads (its [`Fence`] is open): each time it
//! comes to lead, a controller first reads its rollout's kept phase and, after a restart in the
//! middle of a rollout, waits for the kept candidate to be back (`crate::rollout::resume`);
//! its caches fill meanwhile, leading or not.
//!
//! Stopping a kind (its plugin removed) leaves its children as they are.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::fence::Fence;
use crate::hotload::{Catalog, KindKey, PluginEvent};
use crate::metrics::Metrics;
use crate::plugin::Plugin;
use crate::reconcile::invoke::{CallSlots, Reconciler};
use crate::reconcile::{Controller, ControllerConfig};
use crate::rollout::{Resume, Rollouts};
use crate::runtime::Informers;

/// How long a stopping controller may take to finish its in-flight reconciles.
const DRAIN: Duration = Duration::from_secs(30);

/// One kind's controller and its tasks.
struct RunningController {
    controller: Arc<Controller>,
    /// Its candidates' rollouts.
    rollouts: Arc<Rollouts>,
    workers: JoinHandle<()>,
    resync: JoinHandle<()>,
    stop: CancellationToken,
}

/// The controllers by kind.
pub(super) struct Controllers {
    client: Client,
    informers: Arc<Informers>,
    /// The host's plugin-call slots.
    slots: CallSlots,
    metrics: Arc<Metrics>,
    config: ControllerConfig,
    /// Whether this replica leads (always, for the only replica), and how long stepped-down
    /// workers may finish before their reconciles are abandoned.
    gate: (Fence, Duration),
    running: HashMap<KindKey, RunningController>,
    view: ControllersView,
    /// What a new controller waits for when its kept rollout phase names a candidate.
    resume: Resume,
}

/// A running controller as the view holds it: with its rollouts and the handles that stop its
/// tasks at once.
struct Handles {
    controller: Arc<Controller>,
    rollouts: Arc<Rollouts>,
    tasks: Vec<tokio::task::AbortHandle>,
}

/// The controllers as the operations server and [`super::Manager`] see them.
#[derive(Clone)]
pub(super) struct ControllersView {
    controllers: Arc<RwLock<HashMap<KindKey, Handles>>>,
    /// Told each time a controller starts or stops.
    changes: Arc<watch::Sender<()>>,
}

impl Default for ControllersView {
    fn default() -> Self {
        Self {
            controllers: Arc::default(),
            changes: Arc::new(watch::channel(()).0),
        }
    }
}

impl ControllersView {
    /// Ready to serve `catalog`: its source was read once, every kind it serves has a
    /// controller, and their caches hold their first full list.
    pub(super) fn ready(&self, catalog: &Catalog) -> bool {
        catalog.scanned() && self.len() == catalog.len() && self.synced()
    }

    /// Hears of each controller started or stopped from now on.
    pub(super) fn changes(&self) -> watch::Receiver<()> {
        self.changes.subscribe()
    }

    /// Kinds with a running controller.
    pub(super) fn len(&self) -> usize {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether every controller's caches hold their first full list. A controller whose
    /// kinds the API server does not serve fails its own readiness (`/plugins`), not the host's.
    pub(super) fn synced(&self) -> bool {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .all(|h| h.controller.is_synced() || !h.controller.unserved().is_empty())
    }

    /// Per served kind (`Kind.group`): whether its caches are synced, and the declared kinds
    /// the API server does not serve.
    pub(super) fn states(&self) -> HashMap<String, (bool, Vec<String>)> {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, h)| {
                let c = &h.controller;
                (k.to_string(), (c.is_synced(), c.unserved()))
            })
            .collect()
    }

    /// The rollouts of a served kind's (`Kind.group`) controller.
    pub(super) fn rollouts(&self, kind: &str) -> Option<Arc<Rollouts>> {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(k, _)| k.to_string() == kind)
            .map(|(_, h)| h.rollouts.clone())
    }

    /// Per served kind (`Kind.group`) with a candidate now or before: its rollout.
    pub(super) fn rollout_statuses(&self) -> HashMap<String, crate::rollout::RolloutStatus> {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(|(k, h)| Some((k.to_string(), h.rollouts.status()?)))
            .collect()
    }

    /// The parent kinds with a running controller (what the shard coordinator places).
    pub(super) fn parent_kinds(&self) -> Vec<crate::plugin::ResourceKind> {
        self.controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|h| h.controller.info().parent)
            .collect()
    }

    /// Stops every task at once (a hard kill).
    pub(super) fn abort_all(&self) {
        for h in self
            .controllers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            h.tasks.iter().for_each(tokio::task::AbortHandle::abort);
        }
    }

    fn set(&self, kind: KindKey, running: Option<&RunningController>) {
        let mut map = self
            .controllers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match running {
            Some(r) => map.insert(
                kind,
                Handles {
                    controller: r.controller.clone(),
                    rollouts: r.rollouts.clone(),
                    tasks: vec![r.workers.abort_handle(), r.resync.abort_handle()],
                },
            ),
            None => map.remove(&kind),
        };
        drop(map);
        self.changes.send_replace(());
    }
}

impl Controllers {
    pub(super) fn new(
        client: Client,
        informers: Arc<Informers>,
        slots: CallSlots,
        metrics: Arc<Metrics>,
        config: ControllerConfig,
        gate: (Fence, Duration),
        resume: Resume,
    ) -> Self {
        Self {
            client,
            informers,
            slots,
            metrics,
            config,
            gate,
            running: HashMap::new(),
            view: ControllersView::default(),
            resume,
        }
    }

    pub(super) fn view(&self) -> ControllersView {
        self.view.clone()
    }

    /// Makes the running controllers follow one change of the plugin source.
    pub(super) async fn apply(&mut self, event: PluginEvent<Plugin>) {
        match event {
            PluginEvent::Added { plugin, .. } => self.start(plugin),
            PluginEvent::Replaced { new, .. } => {
                let kind = KindKey::of(new.info());
                match self.running.get(&kind) {
                    Some(running) => running.controller.swap(Arc::new(new)),
                    None => self.start(new),
                }
            }
            PluginEvent::Removed { plugin, .. } => self.stop(&KindKey::of(plugin.info())).await,
            PluginEvent::Refused { .. } => {}
        }
    }

    fn start(&mut self, plugin: Plugin) {
        let kind = KindKey::of(plugin.info());
        let label = plugin.label().to_owned();
        let sha = plugin.sha256().to_owned();
        let reconciler: Arc<dyn Reconciler> = Arc::new(plugin);
        let controller = Arc::new(Controller::new(
            self.client.clone(),
            self.informers.clone(),
            reconciler,
            self.slots.clone(),
            self.metrics.clone(),
            self.config.clone(),
        ));
        let rollouts = Arc::new(Rollouts::new(controller.clone()));
        let stop = CancellationToken::new();
        let workers = tokio::spawn(lead_then_work(
            (controller.clone(), rollouts.clone()),
            (self.resume.clone(), sha),
            self.gate.clone(),
            stop.clone(),
        ));
        let resync = tokio::spawn(controller.clone().resync());
        info!(plugin = %label, %kind, "controller started");
        let running = RunningController {
            controller,
            rollouts,
            workers,
            resync,
            stop,
        };
        self.view.set(kind.clone(), Some(&running));
        self.running.insert(kind, running);
    }

    /// Stops `kind`'s controller once its in-flight reconciles are done.
    async fn stop(&mut self, kind: &KindKey) {
        let Some(mut running) = self.running.remove(kind) else {
            return;
        };
        self.view.set(kind.clone(), None);
        running.stop.cancel();
        running.controller.shutdown();
        running.resync.abort();
        if tokio::time::timeout(DRAIN, &mut running.workers)
            .await
            .is_err()
        {
            warn!(%kind, "in-flight reconciles did not finish in {DRAIN:?}; stopping them");
            running.workers.abort();
        }
        // Dropping the last handle on the controller unsubscribes its kinds.
        info!(%kind, "controller stopped; its children are left as they are");
    }

    /// Stops every controller (graceful shutdown).
    pub(super) async fn shutdown(&mut self) {
        let kinds: Vec<KindKey> = self.running.keys().cloned().collect();
        for kind in kinds {
            self.stop(&kind).await;
        }
    }
}

/// Runs the workers while this replica leads; the watches run regardless, so a standby's
/// caches are warm when it takes over. Each time it comes to lead, the rollout's kept phase is
/// read ([`Resume::take_over`]) before the first reconcile. A lost lease stops the workers
/// (in-flight reconciles get `abandon` to finish, then are dropped) and the controller stands
/// again. The only replica's gate never shuts: its workers end through `Controller::shutdown`
/// (dropping `run_workers` would abort reconciles in flight).
async fn lead_then_work(
    (controller, rollouts): (Arc<Controller>, Arc<Rollouts>),
    (resume, serving_sha): (Resume, String),
    (gate, abandon): (Fence, Duration),
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = gate.opened() => {}
        }
        // The kept phase and the first list at once: without a kept candidate, no later than
        // the caches.
        tokio::select! {
            () = stop.cancelled() => return,
            ((), ()) = async {
                tokio::join!(resume.take_over(rollouts.as_ref(), &serving_sha), controller.wait_synced())
            } => {}
        }
        if stop.is_cancelled() {
            return;
        }
        controller.resume();
        info!(kind = %controller.info().parent.kind, "leading: workers started");
        let workers = controller.clone().run_workers();
        tokio::pin!(workers);
        tokio::select! {
            () = &mut workers => return,
            () = gate.shut() => {
                controller.shutdown();
                if tokio::time::timeout(abandon, &mut workers).await.is_err() {
                    warn!(kind = %controller.info().parent.kind, "in-flight reconciles abandoned: the lease is lost");
                }
                info!(kind = %controller.info().parent.kind, "stepped down: workers stopped, caches kept; standing again");
            }
        }
    }
}
