//! ⑥ The settle step: how one reconcile ended becomes, in one place, the hot-loop verdict, the
//! parent's status and Events, the metrics, the activity feed and the queue's decision.
//!
//! The happy path (`Controller::reconcile_parent`) only reads, asks, judges and writes the
//! children; it ends in an [`Outcome`]. [`Parts::settle`], on what a controller keeps across
//! plugin versions (queue, metrics, activity feed), is the one function that reports it: controller-runtime maps a result to queue calls in one place, and
//! kube-runtime splits `reconcile` from `error_policy` the same way.

use std::sync::Arc;
use std::time::Instant;

use kube::api::DynamicObject;
use serde_json::Value;

use super::apply::Change;
use super::error::{ErrorAction, ReconcileError, ResultLabel};
use super::failed;
use super::{Binding, Parts};
use crate::answer::{self, DesiredChild, Reconciled};
use crate::chain::Chain;
use crate::plugin::PluginInfo;
use crate::runtime::cache::CachedObject;
use crate::runtime::{Finish, ObjectKey};

/// How one reconcile of one key ended: the one value the settle step acts on.
pub(super) enum Outcome {
    /// The parent is gone from the cache: deleted means done.
    Gone,
    /// The cached parent does not decode.
    Undecodable,
    /// The gate hands the parent to another host, and letting go of it failed (tried again).
    NotLetGo,
    /// The parent was reconciled, or failed to be.
    Ran {
        /// The parent as read from the cache, parsed.
        parent: Arc<DynamicObject>,
        /// The parent as cached.
        cached: Arc<CachedObject>,
        /// What the plugin was given, for a failure's dump.
        given: failed::Given,
        /// How it went.
        result: Result<Ran, ReconcileError>,
    },
}

/// A reconcile that went through.
pub(super) enum Ran {
    /// The parent is being deleted: its cleanup ran (or had nothing to do).
    Finalized(Finish),
    /// The answer was judged and its children written.
    Applied(Applied),
}

/// What an applied answer did, and what the parent should show.
pub(super) struct Applied {
    /// The parent as the plugin was given it (with a finalizer the host just added).
    pub parent: Arc<DynamicObject>,
    /// The children written (created, updated, pruned).
    pub writes: Vec<Change>,
    /// The children the answer wants.
    pub desired: Vec<DesiredChild>,
    /// The status the judge merged.
    pub status: Value,
    /// When the plugin asked to run again.
    pub finish: Finish,
    /// The time a changing condition is stamped with (the judge's).
    pub now: String,
    /// The finalizer to remove once the status is shown: a cleanup step that said it is done.
    pub release: Option<String>,
}

impl Parts {
    /// Reports `outcome` of the reconcile of `key` (started at `started`): the parent's status
    /// and Events, the hot-loop guard, the metrics and the activity feed; then hands the key
    /// back to the queue with its decision.
    pub(super) async fn settle(
        &self,
        b: &Binding,
        key: &ObjectKey,
        outcome: Outcome,
        started: Instant,
    ) {
        let (finish, label) = match outcome {
            Outcome::Gone => (Finish::Done, ResultLabel::Gone),
            Outcome::Undecodable => (Finish::Done, ResultLabel::Error),
            Outcome::NotLetGo => (Finish::Retry, ResultLabel::Error),
            Outcome::Ran {
                parent,
                cached,
                given,
                result,
            } => {
                let shown = match result {
                    Ok(Ran::Applied(applied)) => self.show(b, key, applied).await,
                    Ok(Ran::Finalized(finish)) => Ok(finish),
                    Err(e) => Err(e),
                };
                match shown {
                    Ok(finish) => (finish, ResultLabel::Success),
                    Err(e) => {
                        self.error_policy(b, key, (&parent, &cached), &given, &e)
                            .await
                    }
                }
            }
        };
        let name = &b.info().name;
        let metrics = &self.metrics;
        metrics.reconciled(name, label.as_str(), started.elapsed());
        self.config.activity.reconciled(b.info(), key, label);
        if finish == Finish::Retry {
            metrics.backed_off(name);
        }
        let delay = self.queue.finish(key, finish);
        tracing::debug!(
            result = label.as_str(),
            ?finish,
            ?delay,
            "reconcile settled"
        );
    }

    /// Shows an applied answer: what was written (activity, one Event), the hot-loop guard's
    /// verdict, and the status on the parent.
    async fn show(
        &self,
        b: &Binding,
        key: &ObjectKey,
        applied: Applied,
    ) -> Result<Finish, ReconcileError> {
        let info = b.info();
        let Applied {
            parent,
            writes,
            desired,
            status,
            finish,
            now,
            release,
        } = applied;
        self.config.activity.wrote(info, key, &writes, &desired);
        if !writes.is_empty() {
            // One Event per reconcile that changed children, not one per child: Events are writes too.
            let note: Vec<String> = writes.iter().map(ToString::to_string).collect();
            b.parents
                .event(&parent, false, "Applied", "Reconcile", note.join(", "))
                .await;
        }

        // ② The hot-loop guard counts reconciles that write or ask to run again at once.
        let written = b.parents.status_as_written(&parent);
        let live = written.as_ref().or(parent.data.get("status"));
        let mut status = status;
        let mut status_diff = answer::merge_diff(live, &status);
        // A requeue sooner than the floor counts like `Now`: every fast path is throttled.
        let busy = !writes.is_empty() || status_diff.is_some() || self.queue.requeues_soon(finish);
        let verdict = self.queue.guard(key, busy);
        if verdict.flagged {
            // A stable message, so a throttled loop does not also rewrite its status each time.
            let message =
                "reconciles keep writing or requeueing without an outside change; throttled";
            tracing::warn!(streak = verdict.streak, "hot loop");
            self.metrics.hot_loop(&info.name);
            status = answer::desired_status(
                live,
                Some(status),
                parent.metadata.generation,
                &Reconciled::failed("HotLoop", message),
                &now,
            );
            status_diff = answer::merge_diff(live, &status);
            if verdict.streak == self.config.queue.hot_loop_threshold {
                self.config.activity.hot_loop(info, key);
                let note = format!("{message} ({} consecutive busy reconciles)", verdict.streak);
                b.parents
                    .event(&parent, true, "HotLoop", "Reconcile", note)
                    .await;
            }
        }

        // ⑥ Show the outcome on the parent, then let a cleaned-up parent go.
        b.parents.patch_status_diff(&parent, status_diff).await?;
        if let Some(finalizer) = release {
            b.parents.finalizers().remove(&parent, &finalizer).await?;
        }
        Ok(finish)
    }

    /// The one place an error becomes a condition, an Event, a metric label and a queue decision.
    async fn error_policy(
        &self,
        b: &Binding,
        key: &ObjectKey,
        (parent, cached): (&DynamicObject, &CachedObject),
        given: &failed::Given,
        error: &ReconcileError,
    ) -> (Finish, ResultLabel) {
        let action = ErrorAction::of(error);
        let message = Chain(error).to_string();
        // Debug-formatted: the message may carry a plugin's own text, whose newlines must not
        // start a line that looks like the host's.
        tracing::warn!(error = ?message, reason = action.reason, "reconcile failed");
        let activity = &self.config.activity;
        activity.failed(b.info(), key, &action, &message);
        if let Some(sink) = &self.config.failures {
            hand_on(b.info(), sink.as_ref(), cached, given, error);
        }
        // A failure is neither busy nor an outside change for the hot-loop guard.
        self.queue.guard(key, false);
        b.parents
            .event(parent, true, action.reason, "Reconcile", message.clone())
            .await;
        if action.report {
            let status = answer::desired_status(
                parent.data.get("status"),
                None,
                parent.metadata.generation,
                &Reconciled::failed(action.reason, message),
                &answer::now(),
            );
            if let Err(se) = b.parents.patch_status(parent, &status).await {
                tracing::warn!(error = %Chain(&se), "status patch failed");
            }
        }
        (action.finish, action.label)
    }
}

/// Hands a failed plugin call or a refused answer to `sink` with what the plugin was given and,
/// for a refusal, the answer it gave: the plugin is not asked again.
fn hand_on(
    info: &PluginInfo,
    sink: &dyn failed::FailureSink,
    cached: &CachedObject,
    given: &failed::Given,
    error: &ReconcileError,
) {
    // A fixture replays a reconcile: a failed cleanup step's inputs would replay as something else.
    if cached.is_deleting() {
        return;
    }
    let failed = match error {
        ReconcileError::Plugin(e) => failed::Failed::Error {
            kind: e.kind,
            message: e.message.clone(),
        },
        ReconcileError::Refused {
            message, answer, ..
        } => failed::Failed::Refused {
            answer: answer.as_deref().cloned(),
            message: message.clone(),
        },
        _ => return,
    };
    sink.failed(&failed::FailedReconcile {
        info,
        parent: given.parent.as_deref().unwrap_or(cached),
        observed: &given.observed,
        related: &given.related.home,
        failed,
    });
}
