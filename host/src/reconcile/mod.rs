//! The controller of one parent kind, thin: source → queue → cache → ask → judge → write → settle.
//!
//! `Controller::reconcile` is the whole data path in one function, on the runtime floor
//! ([`crate::runtime`]: informers, the packed cache, the work queue, echoes) that every
//! controller of a host shares: ① its [`binding`] subscribes the plugin's kinds in the informer
//! registry, whose events become keys; ② the workers (`workers`) take keys from the queue, and
//! the resync refills it; ③ the parent and its children are read from the cache ([`related`]:
//! the objects a parent selected to read); ④ [`invoke`] asks the plugin; ⑤ [`crate::answer::judge`]
//! (pure, outside this module) judges the answer and [`apply`] writes what differs; ⑥ the settle
//! step (`settle`) turns how the reconcile ended into its [`status`], Events, hot-loop verdict,
//! metrics, activity and queue decision, in one place. A parent being deleted is finalized
//! (`deleting`) and its [`finalizer`] released. [`error`] is how a reconcile fails.
//!
//! Two seams let capabilities sit beside the controller instead of inside it: the [`gate`]
//! (which parents this host reconciles, what their children carry: `crate::shard` plugs in
//! there) and the [`answerer`] (which version answers a parent, and one asked beside it:
//! `crate::rollout` plugs in there). The controller never knows which is plugged in.

pub mod activity;
pub mod answerer;
pub mod apply;
pub mod binding;
mod deleting;
#[cfg(test)]
mod deleting_tests;
pub mod error;
pub mod events;
pub mod failed;
pub mod finalizer;
pub mod gate;
#[cfg(test)]
mod given_tests;
pub mod invoke;
pub mod members;
pub mod placed;
pub mod related;
mod settle;
pub mod status;
pub mod upgrade;
mod workers;
#[cfg(test)]
mod workers_tests;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::DynamicObject;
use tokio::sync::Semaphore;
use tracing::Instrument;

use self::answerer::{Alone, Route, Seat};
use self::binding::Binding;
use self::error::ReconcileError;
use self::gate::{Admission, Gate, Pass};
use self::invoke::{CallSlots, Reconciler};
use self::settle::{Applied, Outcome, Ran};
use crate::answer::{self, Inputs, Judged, PluginError, ValidationPolicy, Verdict};
use crate::fence::Fence;
use crate::metrics::Metrics;
use crate::plugin::{PluginInfo, ReconcileResponse, Requeue};
use crate::runtime::cache::CachedObject;
use crate::runtime::echoes::Echoes;
use crate::runtime::{Finish, Informers, ObjectKey, Queue, QueueConfig};

/// Tuning of a controller.
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// Keys reconciled at once.
    pub workers: usize,
    /// Reconciles in flight at once across every controller given the same semaphore: the
    /// manager gives all of its controllers one (`ManagerConfig::max_concurrent_reconciles`),
    /// so that what reconciles in flight hold (their inputs, answers and pending writes) is
    /// bounded by the host, not multiplied by its plugins. The default has no bound of its own.
    pub reconcile_slots: Arc<Semaphore>,
    /// Every parent is reconciled at least this often.
    pub resync: Duration,
    /// Backoff, rate limit and hot-loop guard.
    pub queue: QueueConfig,
    /// Names this host in Events (`reportingInstance`).
    pub instance: String,
    /// Watch and reconcile only this namespace; `None` watches the whole cluster.
    pub namespace: Option<String>,
    /// What the judge of an answer allows beyond the defaults (the manager sets it from the
    /// host's policy).
    pub validation: ValidationPolicy,
    /// Where the controller reports what it did (the manager's one feed; `weir dev` watches it).
    pub activity: activity::ActivityFeed,
    /// Who keeps failed and refused reconciles with their inputs (`--dump-failures`).
    pub failures: Option<Arc<dyn failed::FailureSink>>,
    /// Which parents this host reconciles, and what their children carry ([`gate::Whole`]:
    /// every parent, nothing).
    pub gate: Arc<dyn Gate>,
    /// The member clusters the host has engaged beside its own (`crate::clusters`; none by
    /// default): the judge accepts a child's cluster among them, and a parent's children there
    /// reach a 0.4.0 plugin with their cluster.
    pub clusters: crate::clusters::Engaged,
    /// The write-time leadership gate ([`crate::fence`]): every write the controller sends, in
    /// the host's cluster and in members, goes through it, so none leaves once this replica's
    /// lease could have run out. Always open by default (the only replica).
    pub fence: Fence,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            workers: 4,
            reconcile_slots: Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)),
            resync: Duration::from_secs(600),
            queue: QueueConfig::default(),
            instance: "weir".into(),
            namespace: None,
            validation: ValidationPolicy::default(),
            activity: activity::ActivityFeed::default(),
            failures: None,
            gate: Arc::new(gate::Whole),
            clusters: crate::clusters::Engaged::default(),
            fence: Fence::always(),
        }
    }
}

/// The reconcile loop of one parent kind. The plugin serving it can be swapped in place
/// ([`Controller::swap`]): the queue, the workers and the caches stay.
pub struct Controller {
    /// Who answers the keys: the serving version alone, or an answerer plugged in beside the
    /// controller ([`answerer`]).
    seat: Seat,
    parts: Parts,
}

/// What a controller keeps across plugin versions.
struct Parts {
    informers: Arc<Informers>,
    /// The host's plugin-call slots, and how many this plugin may hold.
    slots: CallSlots,
    queue: Arc<Queue>,
    echoes: Arc<Echoes>,
    metrics: Arc<Metrics>,
    client: Client,
    config: ControllerConfig,
}

impl Controller {
    /// A controller for `plugin`, subscribed to its kinds in the host's informer registry (so
    /// their events start arriving); nothing is reconciled until [`Controller::run_workers`].
    /// `slots` are the host's plugin-call slots. Its writes go through `client` fenced by
    /// [`ControllerConfig::fence`].
    pub fn new(
        client: Client,
        informers: Arc<Informers>,
        plugin: Arc<dyn Reconciler>,
        slots: CallSlots,
        metrics: Arc<Metrics>,
        config: ControllerConfig,
    ) -> Self {
        let parts = Parts {
            queue: Arc::new(Queue::new(config.queue.clone())),
            echoes: Arc::new(Echoes::default()),
            informers,
            slots,
            metrics,
            client: config.fence.client(&client),
            config,
        };
        let serving = Arc::new(parts.bind(plugin));
        let seat = Seat::new(
            Arc::new(Alone(serving)),
            parts.queue.clone(),
            parts.metrics.clone(),
        );
        Self { seat, parts }
    }

    /// The version serving the kind.
    fn binding(&self) -> Arc<Binding> {
        self.seat.get().serving().clone()
    }

    /// The controller's answerer, for a capability that plugs its own in ([`answerer`]).
    pub fn seat(&self) -> Seat {
        self.seat.clone()
    }

    /// `plugin` bound to the stores of the kinds it declared (subscribed now: their events
    /// start arriving) and to the controller's writers, for an answerer to route parents to.
    pub fn bind(&self, plugin: Arc<dyn Reconciler>) -> Arc<Binding> {
        Arc::new(self.parts.bind(plugin))
    }

    /// Serves the kind with `plugin` from now on, in place: kinds both versions declare keep
    /// their watches and caches (no re-list), reconciles in flight finish on the old version,
    /// and every parent is enqueued once so the new logic reaches all of them.
    pub fn swap(&self, plugin: Arc<dyn Reconciler>) {
        // Subscribing before the old binding lets go keeps shared kinds' counts above zero; the
        // new parent subscription enqueues every cached parent.
        let binding = self.bind(plugin);
        let Some(old) = self.seat.replace(|a| Some(a.with_serving(binding))) else {
            return;
        };
        let old = old.serving().info();
        tracing::info!(from = %old.version, to = %self.binding().info().version, kind = %old.parent.kind, "plugin swapped in place");
        // The new subscription enqueued the parents before the answerer changed, so a worker may
        // already have reconciled some with the old version: enqueue them all again now.
        self.seat.enqueue_all();
    }

    /// The plugin serving the kind now.
    pub fn info(&self) -> PluginInfo {
        self.binding().info().clone()
    }

    /// Whether every store this controller reads holds its first full list (`/readyz`).
    pub fn is_synced(&self) -> bool {
        self.binding().is_synced()
    }

    /// Returns once every store this controller reads holds its first full list (awaited, not
    /// polled; a swap meanwhile waits for the new version's stores).
    pub async fn wait_synced(&self) {
        loop {
            let binding = self.binding();
            binding.wait_synced().await;
            if Arc::ptr_eq(&binding, &self.binding()) {
                return;
            }
        }
    }

    /// Kinds this controller declared that the API server does not serve: the plugin is not
    /// ready, but it does not hold back the host's readiness.
    pub fn unserved(&self) -> Vec<String> {
        self.binding().cache.unserved()
    }

    /// The versions that answer `key` now: the one applied, and one asked beside it.
    fn route(&self, key: &ObjectKey) -> Route {
        self.seat.get().route(key)
    }

    /// One reconcile of one key in its own span, settled in it (`Parts::settle`).
    async fn reconcile(&self, route: &Route, key: &ObjectKey) {
        let b = &route.applied;
        let started = Instant::now();
        let info = b.info();
        let attempt = self.parts.queue.failures(key) + 1;
        let span = tracing::info_span!("reconcile", plugin = %info.name, version = %info.version, kind = %info.parent.kind, key = %key, attempt);
        async move {
            let pass = self.parts.config.gate.enter().await;
            let outcome = self.outcome(route, key, &*pass).await;
            self.parts.settle(b, key, outcome, started).await;
        }
        .instrument(span)
        .await
    }

    /// How the reconcile of `key` ends, before it is reported.
    async fn outcome(&self, route: &Route, key: &ObjectKey, pass: &dyn Pass) -> Outcome {
        let b = &route.applied;
        // ③ Read the parent from the cache, never the API. Deleted (or another host's) means done.
        let admitted = b.cache.parents.get(key).map(|c| {
            let admission = pass.admits(&c);
            (c, admission)
        });
        let cached = match admitted {
            Some((cached, Admission::Mine)) => cached,
            // Being handed to another host, which gets it once this one lets go.
            Some((cached, Admission::LetGo)) => return self.let_go(b, key, &cached).await,
            Some((_, Admission::NotMine)) | None => {
                b.related.forget(key);
                return Outcome::Gone;
            }
        };
        // Its status and finalizers are read and written: the parent is parsed.
        let parent = match cached.decode() {
            Ok(parent) => Arc::new(parent),
            Err(e) => {
                tracing::warn!(error = %e, "the cached parent does not decode");
                return Outcome::Undecodable;
            }
        };
        let mut given = failed::Given::default();
        let result = self
            .reconcile_parent(route, key, (parent.clone(), cached.clone()), &mut given)
            .await;
        Outcome::Ran {
            parent,
            cached,
            given,
            result,
        }
    }

    /// Lets go of a parent the gate hands to another host: nothing of it is reconciled here any
    /// more (a reconcile of it in flight finished before this one started).
    async fn let_go(&self, b: &Binding, key: &ObjectKey, cached: &CachedObject) -> Outcome {
        b.related.forget(key);
        let gate = &self.parts.config.gate;
        match gate
            .let_go(&self.parts.client, &b.info().parent, cached)
            .await
        {
            Ok(()) => {
                tracing::info!("let go: handed over to another host");
                Outcome::Gone
            }
            // Changed since it was cached: the event of that change brings the key back.
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Outcome::Gone,
            Err(e) => {
                tracing::warn!(error = %crate::chain::Chain(&e), "letting go of the parent failed");
                Outcome::NotLetGo
            }
        }
    }

    /// The happy path, top to bottom: read, ask, judge, write the children. What the plugin is
    /// given is kept in `given`, for the error policy to hand on; what the parent shows is the
    /// settle step's.
    async fn reconcile_parent(
        &self,
        route: &Route,
        key: &ObjectKey,
        (parent, cached): (Arc<DynamicObject>, Arc<CachedObject>),
        given: &mut failed::Given,
    ) -> Result<Ran, ReconcileError> {
        let b = &route.applied;
        let info = b.info();
        // A kind the tenant's cache cap left partly out is not read: the plugin would decide on
        // (and the host prune by) what it could not see.
        if let Some(short) = b.cache.short() {
            return Err(short.into());
        }
        let children = b.cache.children_of(cached.uid().unwrap_or_default());
        // The plugin sees its Secrets without their data (a content hash instead).
        given.observed = children
            .iter()
            .filter_map(invoke::cached_for_plugin)
            .collect();
        // Watches: what the parent reads beyond its children, selected afresh each time.
        given.related = self.select_related(b, key, &cached).await?;
        let (observed, related) = (&given.observed, &given.related);

        // Deletion: finalize (its answer may act, as a reconcile's does), then let the API
        // server's GC remove the children.
        if cached.is_deleting() {
            return self
                .finalize(b, (parent, &cached), (&children, observed, related))
                .await;
        }
        let (parent, cached) = self.ensure_finalizer(b, parent, cached).await?;
        given.parent = Some(cached.clone());

        // ④ Ask the plugin for the desired children and status (and a version beside it), and
        // ⑤ judge the whole answer. A refused answer goes with the error, untouched.
        let now = answer::now();
        let Judged {
            children: mut desired,
            status,
            requeue,
        } = self
            .judged_answer(
                route,
                (key, &parent, &cached),
                (&given.observed, &given.related),
                &now,
            )
            .await
            .map_err(ReconcileError::Plugin)?
            .map_err(|refused| ReconcileError::refused_answer(info, *refused))?;
        // ⑤ Apply what differs and prune what is gone.
        self.parts.config.gate.stamp(&mut desired, &cached);
        let writes = b
            .write_children((&parent, &cached), &desired, &children)
            .await?;
        Ok(Ran::Applied(Applied {
            parent,
            writes,
            desired,
            status,
            finish: finish_of(requeue),
            now,
            release: None,
        }))
    }

    /// The applied version's answer for `parent`, judged; with a version beside it, that one is
    /// asked on the same inputs at the same time, its answer judged the same way, and both
    /// judgments handed to it ([`answerer::Beside::compared`]). Each answer is judged once.
    async fn judged_answer(
        &self,
        route: &Route,
        (key, parent, cached): (&ObjectKey, &DynamicObject, &CachedObject),
        (observed, related): (&[Arc<CachedObject>], &related::Found),
        now: &str,
    ) -> Result<Verdict, PluginError> {
        let b = &route.applied;
        let elsewhere = b.elsewhere(cached);
        let observed = (observed, elsewhere.as_slice());
        let Some(beside) = &route.beside else {
            let answer = b
                .invoker
                .reconcile_placed(cached, observed, related)
                .await?;
            return Ok(self.judge(b, parent, answer, now));
        };
        let other = beside.binding();
        let (applied, asked) = tokio::join!(
            b.invoker.reconcile_placed(cached, observed, related),
            other.invoker.reconcile_placed(cached, observed, related),
        );
        let applied = applied.map(|answer| self.judge(b, parent, answer, now));
        let asked = asked.map(|answer| self.judge(other, parent, answer, now));
        beside.compared(key, &applied, &asked).await;
        applied
    }

    /// Judges `answer`, `b`'s for `parent`, against `b`'s cache and the host's policy
    /// ([`answer::judge`], the one judgment of an answer).
    fn judge(
        &self,
        b: &Binding,
        parent: &DynamicObject,
        answer: ReconcileResponse,
        now: &str,
    ) -> Verdict {
        let inputs = Inputs {
            info: b.info(),
            parent,
            live: &b.live(),
            policy: &self.parts.config.validation,
            now,
        };
        answer::judge(inputs, answer)
    }

    /// Asks the plugin what `parent` reads, refuses a selection beyond its declaration, records
    /// the selection in the related index (so a change of a selected object enqueues the parent)
    /// and returns the selected objects the caches hold. Nothing for a plugin without related kinds.
    async fn select_related(
        &self,
        b: &Binding,
        key: &ObjectKey,
        parent: &CachedObject,
    ) -> Result<related::Found, ReconcileError> {
        if b.related.is_empty() {
            return Ok(related::Found::default());
        }
        let info = b.info();
        let selections = b
            .invoker
            .select(parent)
            .await
            .map_err(ReconcileError::Plugin)?;
        b.related
            .select(info, key, &selections)
            .map_err(|refusal| ReconcileError::refused(info, refusal, None))
    }

    /// Adds the plugin's finalizer to a live parent that lacks it, and carries on with the
    /// parent as written (so a new parent costs one reconcile, not two).
    async fn ensure_finalizer(
        &self,
        b: &Binding,
        parent: Arc<DynamicObject>,
        cached: Arc<CachedObject>,
    ) -> Result<(Arc<DynamicObject>, Arc<CachedObject>), ReconcileError> {
        let Some(finalizer) = b.info().finalizer.as_ref() else {
            return Ok((parent, cached));
        };
        let finalizers = b.parents.finalizers();
        let present = parent.metadata.finalizers.as_deref().unwrap_or_default();
        if present.contains(finalizer) {
            finalizers.seen(parent.metadata.uid.as_deref().unwrap_or_default());
            return Ok((parent, cached));
        }
        // `None`: the host added it moments ago and the cache has not caught up.
        let Some(written) = finalizers.add(&parent, finalizer).await? else {
            return Ok((parent, cached));
        };
        // The plugin is given the parent as written, in the cache's form.
        let cached = match CachedObject::from_object(&written) {
            Ok(written) => Arc::new(written),
            Err(e) => {
                tracing::warn!(error = %e, "the written parent does not encode; the cached one is given");
                cached
            }
        };
        Ok((Arc::new(written), cached))
    }
}

/// The queue decision a plugin's requeue asks for.
fn finish_of(requeue: Requeue) -> Finish {
    match requeue {
        Requeue::Done => Finish::Done,
        Requeue::Now => Finish::Now,
        Requeue::After(d) => Finish::After(d),
    }
}
