//! The reconcile loop of one plugin: watch → queue → cache → plugin → apply → status.
//!
//! `Controller::reconcile` is the whole data path in one function; each stage lives in
//! its own module:
//! ① [`source`] watch events → keys, ② [`queue`] dedupe, backoff, hot-loop guard,
//! ③ [`cache`] stores and owner index, [`related`] the objects a parent selected to read and
//! the index from them back to the parents, ④ [`invoke`] the plugin call,
//! ⑤ [`crate::answer::judge`] (pure, outside this module) + [`apply`] the judgment and the
//! writes, ⑥ [`status`] status, finalizer, Events.
//! The workers that take keys from the queue, and the resync that refills it, are in `workers`.
//! A candidate version, when one is rolled out, is called beside the serving one (`candidate`).
//! Beside them: [`echoes`] tells the watch echo of the host's own writes from outside changes,
//! [`error`] is how a reconcile fails, and the settle step (`settle`) turns how one ended into
//! its status, Events, hot-loop verdict, metrics, activity and queue decision, in one place.

pub mod activity;
pub mod apply;
mod binding;
pub mod cache;
mod candidate;
pub mod echoes;
pub mod error;
pub mod events;
pub mod failed;
mod finalize;
#[cfg(test)]
mod finalize_tests;
pub mod finalizer;
#[cfg(test)]
mod given_tests;
pub mod invoke;
pub mod queue;
pub mod related;
mod settle;
#[cfg(test)]
mod shadow_tests;
pub mod source;
pub mod status;
mod sweeps;
pub mod upgrade;
mod workers;
#[cfg(test)]
mod workers_tests;

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::DynamicObject;
use tokio::sync::Semaphore;
use tracing::Instrument;

use self::binding::Binding;
use self::cache::CachedObject;
use self::echoes::Echoes;
use self::error::ReconcileError;
use self::invoke::Reconciler;
use self::queue::{Finish, ObjectKey, Queue, QueueConfig};
use self::settle::{Applied, Outcome, Ran};
use self::source::Informers;
use crate::answer::{self, Inputs, Judged, ValidationPolicy, Verdict};
use crate::metrics::Metrics;
use crate::plugin::{PluginInfo, ReconcileResponse, Requeue};

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
    /// The host is sharded (`crate::shard`): children carry their parent's owner label, and a
    /// parent asked to drain is let go instead of reconciled.
    pub sharded: bool,
    /// Sharded server-side (`crate::shard::share`): only parents whose UID hashes into the
    /// served ranges are reconciled, and the ranges hold still while one is.
    pub share: Option<crate::shard::share::Share>,
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
            sharded: false,
            share: None,
        }
    }
}

/// The reconcile loop of one parent kind. The plugin serving it can be swapped in place
/// ([`Controller::swap`]): the queue, the workers and the caches stay.
pub struct Controller {
    /// Who answers the keys: the serving version alone, or a candidate beside it.
    answerer: RwLock<candidate::Answerer>,
    /// The last rollout, as listed.
    rollouts: candidate::Rollouts,
    parts: Parts,
}

/// What a controller keeps across plugin versions.
struct Parts {
    informers: Arc<Informers>,
    permits: Arc<Semaphore>,
    /// How many of `permits` this plugin may hold at once.
    share: usize,
    queue: Arc<Queue>,
    echoes: Arc<Echoes>,
    metrics: Arc<Metrics>,
    client: Client,
    config: ControllerConfig,
}

impl Controller {
    /// A controller for `plugin`, subscribed to its kinds in the host's informer registry (so
    /// their events start arriving); nothing is reconciled until [`Controller::run_workers`].
    /// `permits` are the host's call slots; `share` how many of them this plugin may hold.
    pub fn new(
        client: Client,
        informers: Arc<Informers>,
        plugin: Arc<dyn Reconciler>,
        (permits, share): (Arc<Semaphore>, usize),
        metrics: Arc<Metrics>,
        config: ControllerConfig,
    ) -> Self {
        let parts = Parts {
            share,
            queue: Arc::new(Queue::new(config.queue.clone())),
            echoes: Arc::new(Echoes::default()),
            informers,
            permits,
            metrics,
            client,
            config,
        };
        let serving = Arc::new(parts.bind(plugin));
        Self {
            answerer: RwLock::new(candidate::Answerer::Alone(serving)),
            rollouts: candidate::Rollouts::default(),
            parts,
        }
    }

    /// The version serving the kind.
    fn binding(&self) -> Arc<Binding> {
        self.answerer().serving().clone()
    }

    /// Serves the kind with `plugin` from now on, in place: kinds both versions declare keep
    /// their watches and caches (no re-list), reconciles in flight finish on the old version,
    /// and every parent is enqueued once so the new logic reaches all of them.
    pub fn swap(&self, plugin: Arc<dyn Reconciler>) {
        // Subscribing before the old binding lets go keeps shared kinds' counts above zero; the
        // new parent subscription enqueues every cached parent.
        let binding = Arc::new(self.parts.bind(plugin));
        let old = self
            .answerer
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .replace_serving(binding);
        tracing::info!(from = %old.info().version, to = %self.binding().info().version, kind = %old.info().parent.kind, "plugin swapped in place");
        // The new subscription enqueued the parents before the answerer changed, so a worker may
        // already have reconciled some with the old version: enqueue them all again now.
        self.enqueue_all();
    }

    /// The plugin serving the kind now.
    pub fn info(&self) -> PluginInfo {
        self.binding().info().clone()
    }

    /// Whether every store this controller reads holds its first full list (`/readyz`).
    pub fn is_synced(&self) -> bool {
        self.binding().cache.is_synced()
    }

    /// Returns once every store this controller reads holds its first full list (awaited, not
    /// polled; a swap meanwhile waits for the new version's stores).
    pub async fn wait_synced(&self) {
        loop {
            let binding = self.binding();
            binding.cache.wait_synced().await;
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

    /// One reconcile of one key in its own span, settled in it (`Parts::settle`).
    async fn reconcile(&self, b: &Binding, shadow: Option<&candidate::Shadow>, key: &ObjectKey) {
        let started = Instant::now();
        let info = b.info();
        let attempt = self.parts.queue.failures(key) + 1;
        let span = tracing::info_span!("reconcile", plugin = %info.name, version = %info.version, kind = %info.parent.kind, key = %key, attempt);
        async move {
            let serving = match &self.parts.config.share {
                Some(share) => Some(share.serving().await),
                None => None,
            };
            let outcome = self.outcome(b, shadow, key, serving.as_deref()).await;
            self.parts.settle(b, key, outcome, started).await;
        }
        .instrument(span)
        .await
    }

    /// How the reconcile of `key` ends, before it is reported.
    async fn outcome(
        &self,
        b: &Binding,
        shadow: Option<&candidate::Shadow>,
        key: &ObjectKey,
        served: Option<&crate::shard::share::Ranges>,
    ) -> Outcome {
        // ③ Read the parent from the cache, never the API. Deleted (or, sharded server-side,
        // no longer this replica's) means done.
        let mine = |c: &CachedObject| {
            served.is_none_or(|r| {
                c.uid()
                    .is_some_and(|u| crate::shard::share::Share::covers(r, u))
            })
        };
        let Some(cached) = b.cache.parents.get(key).filter(|c| mine(c)) else {
            b.related.forget(key);
            return Outcome::Gone;
        };
        // Sharded: the coordinator moves the parent to another replica once this one lets go.
        if self.parts.config.sharded && crate::shard::is_draining(&cached) {
            return self.let_go(b, key, &cached).await;
        }
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
            .reconcile_parent(b, shadow, key, (parent.clone(), cached.clone()), &mut given)
            .await;
        Outcome::Ran {
            parent,
            cached,
            given,
            result,
        }
    }

    /// Lets go of a parent the coordinator is moving to another replica: nothing of it is
    /// reconciled here any more (a reconcile of it in flight finished before this one started).
    async fn let_go(&self, b: &Binding, key: &ObjectKey, cached: &CachedObject) -> Outcome {
        b.related.forget(key);
        match crate::shard::acknowledge_drain(&self.parts.client, &b.info().parent, cached).await {
            Ok(()) => {
                tracing::info!("drained: handed over to another replica");
                Outcome::Gone
            }
            // Changed since it was cached: the event of that change brings the key back.
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Outcome::Gone,
            Err(e) => {
                tracing::warn!(error = %crate::chain::Chain(&e), "acknowledging the drain failed");
                Outcome::NotLetGo
            }
        }
    }

    /// The happy path, top to bottom: read, ask, judge, write the children. What the plugin is
    /// given is kept in `given`, for the error policy to hand on; what the parent shows is the
    /// settle step's.
    async fn reconcile_parent(
        &self,
        b: &Binding,
        shadow: Option<&candidate::Shadow>,
        key: &ObjectKey,
        (parent, cached): (Arc<DynamicObject>, Arc<CachedObject>),
        given: &mut failed::Given,
    ) -> Result<Ran, ReconcileError> {
        let info = b.info();
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

        // ④ Ask the plugin for the desired children and status (and a candidate beside it), and
        // ⑤ judge the whole answer. A refused answer goes with the error, untouched.
        let now = answer::now();
        let Judged {
            children: mut desired,
            status,
            requeue,
        } = self
            .judged_answer(
                b,
                shadow,
                (key, &parent, &cached),
                (&given.observed, &given.related),
                &now,
            )
            .await
            .map_err(ReconcileError::Plugin)?
            .map_err(|refused| ReconcileError::refused_answer(info, *refused))?;
        // ⑤ Apply what differs and prune what is gone.
        let writes = self
            .write_children(b, &cached, &mut desired, &children)
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

    /// ⑤ Applies the judged children that differ from the cache and prunes the `observed` ones
    /// no longer wanted (the same writes for a reconcile's answer and a finalize's).
    async fn write_children(
        &self,
        b: &Binding,
        cached: &CachedObject,
        desired: &mut [answer::DesiredChild],
        observed: &[Arc<CachedObject>],
    ) -> Result<Vec<apply::Change>, ReconcileError> {
        let info = b.info();
        if self.parts.config.sharded {
            crate::shard::follow_parent(desired, cached);
        }
        // A name taken between the cache read and the create is refused like one the cache showed.
        let mut writes = b.applier.apply(desired).await.map_err(|e| match e {
            apply::ApplyError::Foreign(refusal) => ReconcileError::refused(info, refusal, None),
            e => ReconcileError::Apply(e),
        })?;
        writes.extend(b.applier.prune(desired, observed, &info.children).await?);
        Ok(writes)
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
    ) -> Result<Vec<Arc<CachedObject>>, ReconcileError> {
        if b.related.is_empty() {
            return Ok(Vec::new());
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
