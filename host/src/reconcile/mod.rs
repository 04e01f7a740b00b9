//! The reconcile loop of one plugin: watch → queue → cache → plugin → apply → status.
//!
//! `Controller::reconcile` is the whole data path in one function; each stage lives in
//! its own module:
//! ① [`source`] watch events → keys, ② [`queue`] dedupe, backoff, hot-loop guard,
//! ③ [`cache`] stores and owner index, ④ [`invoke`] the plugin call,
//! ⑤ [`validate`] + [`apply`] checks and writes, ⑥ [`status`] status, finalizer, Events.

pub mod apply;
pub mod cache;
pub mod invoke;
pub mod queue;
pub mod source;
pub mod status;
pub mod validate;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::DynamicObject;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument;

use self::apply::Applier;
use self::cache::Cache;
use self::invoke::{Invoker, PluginError, Reconciler};
use self::queue::{Finish, ObjectKey, Queue, QueueConfig};
use self::source::{Echoes, Informers, Route, Target};
use self::status::{ParentWriter, Reconciled};
use crate::chain::Chain;
use crate::metrics::Metrics;
use crate::plugin::{ErrorKind, FinalizeResponse, Requeue};

/// Tuning of a controller.
#[derive(Clone, Debug)]
pub struct ControllerConfig {
    /// Keys reconciled at once.
    pub workers: usize,
    /// Every parent is reconciled at least this often.
    pub resync: Duration,
    /// Backoff, rate limit and hot-loop guard.
    pub queue: QueueConfig,
    /// Names this host in Events (`reportingInstance`).
    pub instance: String,
    /// Watch and reconcile only this namespace; `None` watches the whole cluster.
    pub namespace: Option<String>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            workers: 4,
            resync: Duration::from_secs(600),
            queue: QueueConfig::default(),
            instance: "weir".into(),
            namespace: None,
        }
    }
}

/// How one reconcile ended, for the queue and the metrics.
struct Outcome {
    finish: Finish,
    result: &'static str,
}

impl Outcome {
    fn new(finish: Finish, result: &'static str) -> Self {
        Self { finish, result }
    }
}

/// Everything one plugin's reconcile loop needs.
pub struct Controller {
    invoker: Invoker,
    parent_informer: Arc<source::Informer>,
    child_informers: Vec<Arc<source::Informer>>,
    cache: Arc<Cache>,
    queue: Arc<Queue>,
    applier: Applier,
    parents: ParentWriter,
    echoes: Arc<Echoes>,
    metrics: Arc<Metrics>,
    client: Client,
    config: ControllerConfig,
}

impl Controller {
    /// A controller for `plugin` with watches of its own; nothing runs until
    /// [`Controller::start_sources`] and [`Controller::run_workers`].
    pub fn new(
        client: Client,
        plugin: Arc<dyn Reconciler>,
        permits: Arc<Semaphore>,
        metrics: Arc<Metrics>,
        config: ControllerConfig,
    ) -> Self {
        Self::with_informers(
            client,
            plugin,
            permits,
            metrics,
            config,
            &Informers::default(),
        )
    }

    /// A controller whose child watches and stores are shared through `informers` with the
    /// other controllers of the same host (all must start their sources in one task set).
    pub fn with_informers(
        client: Client,
        plugin: Arc<dyn Reconciler>,
        permits: Arc<Semaphore>,
        metrics: Arc<Metrics>,
        config: ControllerConfig,
        informers: &Informers,
    ) -> Self {
        let info = plugin.info().clone();
        let echoes = Arc::new(Echoes::default());
        // The parent kind is this plugin's alone; child kinds are shared.
        let parent_informer = Arc::new(source::Informer::new(info.parent.clone()));
        let child_informers: Vec<_> = info.children.iter().map(|k| informers.get(k)).collect();
        let cache = Cache::from_stores(
            parent_informer.store.clone(),
            child_informers.iter().map(|i| i.store.clone()).collect(),
        );
        Self {
            parent_informer,
            child_informers,
            cache: Arc::new(cache),
            queue: Arc::new(Queue::new(config.queue.clone())),
            applier: Applier::new(client.clone(), &info.name, metrics.clone(), echoes.clone()),
            parents: ParentWriter::new(
                client.clone(),
                info.parent.clone(),
                &info.name,
                &config.instance,
                metrics.clone(),
                echoes.clone(),
            ),
            invoker: Invoker::new(plugin, permits, metrics.clone()),
            echoes,
            metrics,
            client,
            config,
        }
    }

    /// The stores this controller reads from (for `/readyz`).
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// Starts the watches and the resync; they run until `tasks` is dropped or aborted.
    pub fn start_sources(self: &Arc<Self>, tasks: &mut JoinSet<()>) {
        let info = self.invoker.info();
        let ns = &self.config.namespace;
        let target = |route| Target {
            route,
            queue: self.queue.clone(),
            echoes: self.echoes.clone(),
        };
        if self.parent_informer.subscribe(target(Route::Parent)) {
            tasks.spawn(source::watch(
                self.client.clone(),
                ns.clone(),
                self.parent_informer.clone(),
            ));
        }
        for informer in &self.child_informers {
            if informer.subscribe(target(Route::Owner(info.parent.clone()))) {
                tasks.spawn(source::watch(
                    self.client.clone(),
                    ns.clone(),
                    informer.clone(),
                ));
            }
        }
        tasks.spawn(source::resync(
            self.cache.parents.clone(),
            self.queue.clone(),
            self.config.resync,
        ));
    }

    /// Runs `workers` workers until [`Controller::shutdown`]; in-flight reconciles finish.
    pub async fn run_workers(self: Arc<Self>) {
        while !self.cache.is_synced() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut workers = JoinSet::new();
        for _ in 0..self.config.workers.max(1) {
            let this = self.clone();
            workers.spawn(async move {
                while let Some(key) = this.queue.next().await {
                    this.metrics
                        .queue_depth(&this.invoker.info().name, this.queue.depth());
                    let started = Instant::now();
                    let outcome = this.reconcile(&key).await;
                    this.metrics.reconciled(
                        &this.invoker.info().name,
                        outcome.result,
                        started.elapsed(),
                    );
                    if outcome.finish == Finish::Retry {
                        this.metrics.backed_off(&this.invoker.info().name);
                    }
                    this.queue.finish(&key, outcome.finish);
                }
            });
        }
        while workers.join_next().await.is_some() {}
    }

    /// Stops handing out keys; `run_workers` returns once in-flight reconciles are done.
    pub fn shutdown(&self) {
        self.queue.shutdown();
    }

    /// One reconcile of one key: the seed's loop, top to bottom.
    async fn reconcile(&self, key: &ObjectKey) -> Outcome {
        let info = self.invoker.info();
        let attempt = self.queue.failures(key) + 1;
        let span = tracing::info_span!("reconcile", plugin = %info.name, version = %info.version, kind = %info.parent.kind, key = %key, attempt);
        async move {
            // ③ Read the parent and the children it controls from the cache, never the API.
            let Some(parent) = self.cache.parents.get(key) else {
                return Outcome::new(Finish::Done, "gone");
            };
            let uid = parent.metadata.uid.clone().unwrap_or_default();
            let children = self.cache.children_of(&uid);

            // Deletion: finalize, then let the API server's GC remove the children.
            if parent.metadata.deletion_timestamp.is_some() {
                return self.finalize(&parent, &children).await;
            }
            let parent = match self.ensure_finalizer(parent).await {
                Ok(parent) => parent,
                Err(outcome) => return outcome,
            };

            // ④ Ask the plugin for the desired children and status.
            let answer = match self.invoker.reconcile(&parent, &children).await {
                Ok(answer) => answer,
                Err(e) => return self.failed(key, &parent, e).await,
            };

            // ⑤ Validate the whole answer, then apply what differs and prune what is gone.
            let policy = validate::ValidationPolicy::default();
            let desired = match validate::validate(info, &parent, &answer, &self.cache, &policy) {
                Ok(desired) => desired,
                Err(refusal) => {
                    let e = PluginError::refused(validate::refusal_message(info, &refusal));
                    return self.failed(key, &parent, e).await;
                }
            };
            let writes = match self.applier.apply(&desired).await {
                Ok(applied) => match self
                    .applier
                    .prune(&desired, &children, &info.children)
                    .await
                {
                    Ok(pruned) => applied.into_iter().chain(pruned).collect::<Vec<_>>(),
                    Err(e) => return self.write_failed(key, &parent, &e, e.is_permanent()).await,
                },
                Err(e) => return self.write_failed(key, &parent, &e, e.is_permanent()).await,
            };
            if !writes.is_empty() {
                // One Event per reconcile that changed children, not one per child: Events are writes too.
                let note: Vec<String> = writes.iter().map(ToString::to_string).collect();
                self.parents
                    .event(&parent, false, "Applied", "Reconcile", note.join(", "))
                    .await;
            }

            // ② The hot-loop guard counts reconciles that write or ask to run again at once.
            let reconciled = Reconciled::ok();
            let mut status = status::desired_status(
                parent.data.get("status"),
                answer.status,
                parent.metadata.generation,
                &reconciled,
                &status::now(),
            );
            let mut status_diff = status::merge_diff(parent.data.get("status"), &status);
            let busy =
                !writes.is_empty() || status_diff.is_some() || answer.requeue == Requeue::Now;
            let verdict = self.queue.guard(key, busy);
            if verdict.flagged {
                // A stable message, so a throttled loop does not also rewrite its status each time.
                let message =
                    "reconciles keep writing or requeueing without an outside change; throttled"
                        .to_owned();
                tracing::warn!(streak = verdict.streak, "hot loop");
                self.metrics.hot_loop(&info.name);
                let hot = Reconciled::failed("HotLoop", message.clone());
                status = status::desired_status(
                    parent.data.get("status"),
                    Some(status.clone()),
                    parent.metadata.generation,
                    &hot,
                    &status::now(),
                );
                status_diff = status::merge_diff(parent.data.get("status"), &status);
                if verdict.streak == self.config.queue.hot_loop_threshold {
                    let note =
                        format!("{message} ({} consecutive busy reconciles)", verdict.streak);
                    self.parents
                        .event(&parent, true, "HotLoop", "Reconcile", note)
                        .await;
                }
            }

            // ⑥ Show the outcome on the parent.
            if let Err(e) = self.parents.patch_status_diff(&parent, status_diff).await {
                tracing::warn!(error = %Chain(&e), "status patch failed");
                return Outcome::new(Finish::Retry, "error");
            }
            let finish = match answer.requeue {
                Requeue::Done => Finish::Done,
                Requeue::Now => Finish::Now,
                Requeue::After(d) => Finish::After(d),
            };
            Outcome::new(finish, "success")
        }
        .instrument(span)
        .await
    }

    /// A failed plugin call or a refused answer: record it on the parent and retry or wait.
    async fn failed(&self, key: &ObjectKey, parent: &DynamicObject, e: PluginError) -> Outcome {
        let (reason, finish, result) = match e.kind {
            _ if e.refused => ("Refused", Finish::Failed, "refused"),
            ErrorKind::Transient => ("TransientError", Finish::Retry, "error"),
            ErrorKind::Permanent => ("PermanentError", Finish::Failed, "error"),
        };
        tracing::warn!(error = %e.message, %reason, "reconcile failed");
        self.queue.guard(key, false);
        self.parents
            .event(parent, true, reason, "Reconcile", e.message.clone())
            .await;
        let status = status::desired_status(
            parent.data.get("status"),
            None,
            parent.metadata.generation,
            &Reconciled::failed(reason, e.message),
            &status::now(),
        );
        if let Err(se) = self.parents.patch_status(parent, &status).await {
            tracing::warn!(error = %Chain(&se), "status patch failed");
        }
        Outcome::new(finish, result)
    }

    async fn write_failed(
        &self,
        key: &ObjectKey,
        parent: &DynamicObject,
        e: &(dyn std::error::Error + Send + Sync + 'static),
        permanent: bool,
    ) -> Outcome {
        let message = Chain(e).to_string();
        let kind = if permanent {
            ErrorKind::Permanent
        } else {
            ErrorKind::Transient
        };
        self.failed(key, parent, PluginError::new(kind, message))
            .await
    }

    /// Adds the plugin's finalizer to a live parent that lacks it, and carries on with the
    /// parent as written (so a new parent costs one reconcile, not two).
    async fn ensure_finalizer(
        &self,
        parent: Arc<DynamicObject>,
    ) -> Result<Arc<DynamicObject>, Outcome> {
        let Some(finalizer) = self.invoker.info().finalizer.as_ref() else {
            return Ok(parent);
        };
        let mut finalizers = parent.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.contains(finalizer) {
            return Ok(parent);
        }
        finalizers.push(finalizer.clone());
        match self.parents.set_finalizers(&parent, finalizers).await {
            Ok(written) => Ok(Arc::new(written)),
            Err(e) => {
                tracing::warn!(error = %Chain(&e), "adding the finalizer failed");
                Err(Outcome::new(Finish::Retry, "error"))
            }
        }
    }

    /// The parent is being deleted: run the plugin's cleanup, then release the finalizer.
    async fn finalize(&self, parent: &DynamicObject, children: &[Arc<DynamicObject>]) -> Outcome {
        let Some(finalizer) = self.invoker.info().finalizer.clone() else {
            return Outcome::new(Finish::Done, "success");
        };
        let finalizers = parent.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.contains(&finalizer) {
            return Outcome::new(Finish::Done, "success");
        }
        match self.invoker.finalize(parent, children, &finalizer).await {
            Ok(FinalizeResponse::AgainAfter(d)) => Outcome::new(Finish::After(d), "success"),
            Ok(FinalizeResponse::Complete) => {
                let rest = finalizers.into_iter().filter(|f| *f != finalizer).collect();
                match self.parents.set_finalizers(parent, rest).await {
                    Ok(_) => Outcome::new(Finish::Done, "success"),
                    Err(e) => {
                        tracing::warn!(error = %Chain(&e), "removing the finalizer failed");
                        Outcome::new(Finish::Retry, "error")
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e.message, "finalize failed");
                self.parents
                    .event(parent, true, "FinalizeFailed", "Finalize", e.message)
                    .await;
                Outcome::new(
                    if e.kind == ErrorKind::Transient {
                        Finish::Retry
                    } else {
                        Finish::Failed
                    },
                    "error",
                )
            }
        }
    }
}
