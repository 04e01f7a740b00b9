//! ④b A candidate version beside the serving one: which answers a parent, the second call, the phase's moves.
//!
//! A controller holds one [`Answerer`], swapped whole: the serving version alone, or with a
//! candidate beside it. While a candidate is beside it, [`Answerer::route`] picks for each key
//! the version whose answer is applied (its rollout decides: see `crate::rollout` for the
//! phases) and the other one, which is called on the same inputs and whose answer is only
//! compared. Nothing of the compared-only version is written, and its failures never reach the
//! parent: they are counted.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use kube::api::DynamicObject;
use tokio::sync::watch;

use super::cache::CachedObject;
use super::invoke::{PluginError, Reconciler};
use super::queue::{Cause, ObjectKey};
use super::{Binding, Controller};
use crate::answer::Verdict;
use crate::rollout::{
    Normalised, Phase, PhaseStore, Request, Resumable, Rollout, RolloutStatus, StoredPhase, compare,
};

/// A proposed candidate: its binding (subscriptions, writers) and its rollout.
pub(super) struct Candidate {
    binding: Arc<Binding>,
    rollout: Arc<Rollout>,
    store: Option<PhaseStore>,
    /// Held while a move is kept and made: an operator's and the rollout's own never interleave.
    moving: tokio::sync::Mutex<()>,
}

/// Who answers a controller's keys, swapped whole: a hot swap replaces the serving version, a
/// proposal puts a candidate beside it, a promotion makes the candidate serve alone.
#[derive(Clone)]
pub(super) enum Answerer {
    /// One version answers every parent.
    Alone(Arc<Binding>),
    /// The serving version, and a candidate whose rollout routes some parents to it (or only
    /// compares its answers).
    Beside {
        /// The version serving.
        serving: Arc<Binding>,
        /// The candidate being rolled out.
        candidate: Arc<Candidate>,
    },
}

impl Answerer {
    /// The version serving the kind (the candidate's answers may be applied to some parents).
    pub(super) fn serving(&self) -> &Arc<Binding> {
        match self {
            Answerer::Alone(serving) | Answerer::Beside { serving, .. } => serving,
        }
    }

    /// Serves with `binding` from now on, a candidate staying beside it; the version replaced.
    pub(super) fn replace_serving(&mut self, binding: Arc<Binding>) -> Arc<Binding> {
        match self {
            Answerer::Alone(serving) | Answerer::Beside { serving, .. } => {
                std::mem::replace(serving, binding)
            }
        }
    }

    fn candidate(&self) -> Option<&Arc<Candidate>> {
        match self {
            Answerer::Alone(_) => None,
            Answerer::Beside { candidate, .. } => Some(candidate),
        }
    }

    /// The binding whose answer is applied to the parent of `uid`, and the version compared
    /// beside it.
    pub(super) fn route(&self, uid: &str) -> (Arc<Binding>, Option<Shadow>) {
        let (serving, candidate) = match self {
            Answerer::Alone(serving) => return (serving.clone(), None),
            Answerer::Beside { serving, candidate } => (serving.clone(), candidate.clone()),
        };
        if candidate.rollout.candidate_serves(uid) {
            let applied = candidate.binding.clone();
            let shadow = Shadow {
                other: serving,
                candidate_applies: true,
                candidate,
            };
            (applied, Some(shadow))
        } else {
            let shadow = Shadow {
                other: candidate.binding.clone(),
                candidate_applies: false,
                candidate,
            };
            (serving, Some(shadow))
        }
    }
}

/// A controller's rollouts as listed, and whether one was proposed since it started.
#[derive(Default)]
pub(super) struct Rollouts {
    /// The last rollout, kept for the listing once it is promoted or rolled back.
    last: RwLock<Option<Arc<Rollout>>>,
    /// Turns true at the first proposal or withdrawal.
    proposed: watch::Sender<bool>,
}

impl Rollouts {
    fn set_last(&self, rollout: Option<Arc<Rollout>>) {
        *self.last.write().unwrap_or_else(PoisonError::into_inner) = rollout;
        self.proposed.send_replace(true);
    }
}

/// For one reconcile: the version not applied, called on the same inputs.
pub(super) struct Shadow {
    other: Arc<Binding>,
    /// Whether the applied version is the candidate (a canary parent).
    candidate_applies: bool,
    candidate: Arc<Candidate>,
}

impl Controller {
    /// Who answers the keys now.
    pub(super) fn answerer(&self) -> Answerer {
        self.answerer
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn answerer_mut(&self) -> std::sync::RwLockWriteGuard<'_, Answerer> {
        self.answerer
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The candidate being rolled out, if any.
    fn live(&self) -> Option<Arc<Candidate>> {
        self.answerer().candidate().cloned()
    }

    /// Rolls `plugin` out beside the serving version, starting at `rollout`'s phase; `store`
    /// keeps each move. A candidate already `RolledBack` is only listed; one already `Promoted`
    /// serves at once. Every parent is reconciled again (after the answerer changed, when the
    /// candidate's answers are written: the subscription's enqueue may have been served by the
    /// serving version, as in [`Controller::swap`]).
    pub fn propose(
        &self,
        plugin: Arc<dyn Reconciler>,
        rollout: Arc<Rollout>,
        store: Option<PhaseStore>,
    ) {
        let phase = rollout.phase();
        tracing::info!(kind = %self.info().parent.kind, candidate = %plugin.info().version, %phase, "candidate proposed");
        // Subscribing the candidate's parent kind enqueues every cached parent.
        let binding =
            (!matches!(phase, Phase::RolledBack { .. })).then(|| Arc::new(self.parts.bind(plugin)));
        {
            let mut answerer = self.answerer_mut();
            let serving = answerer.serving().clone();
            *answerer = match binding {
                Some(binding) if phase == Phase::Promoted => Answerer::Alone(binding),
                Some(binding) => Answerer::Beside {
                    serving,
                    candidate: Arc::new(Candidate {
                        binding,
                        rollout: rollout.clone(),
                        store,
                        moving: tokio::sync::Mutex::new(()),
                    }),
                },
                None => Answerer::Alone(serving),
            };
        }
        self.rollouts.set_last(Some(rollout));
        if phase.candidate_applies() {
            self.enqueue_all();
        }
    }

    /// Drops the candidate (its file went away): the serving version answers alone again.
    pub fn withdraw(&self) {
        {
            let mut answerer = self.answerer_mut();
            *answerer = Answerer::Alone(answerer.serving().clone());
        }
        self.rollouts.set_last(None);
        self.enqueue_all();
    }

    /// Waits, for at most `within`, until a candidate has been proposed to this controller or
    /// withdrawn from it since it started (at once if one has); whether one has. A new
    /// controller whose kept phase names a candidate holds its workers on this.
    async fn proposed_since_start(&self, within: Duration) -> bool {
        let mut proposed = self.rollouts.proposed.subscribe();
        tokio::time::timeout(within, proposed.wait_for(|p| *p))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The current or last rollout of this kind, as listed.
    pub fn rollout(&self) -> Option<RolloutStatus> {
        let last = self
            .rollouts
            .last
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        last.as_ref().map(|r| r.status())
    }

    /// The sha256 of the candidate being rolled out, if any.
    pub fn candidate_sha256(&self) -> Option<String> {
        self.live().map(|c| c.rollout.sha256())
    }

    /// Enqueues every cached parent (each version move, and a swap, must reach all of them).
    pub(super) fn enqueue_all(&self) {
        for key in self.binding().cache.parents.keys() {
            self.parts.queue.add(key, Cause::Outside);
        }
    }

    /// The binding whose answer is applied to `key`, and the version compared beside it.
    pub(super) fn route(&self, key: &ObjectKey) -> (Arc<Binding>, Option<Shadow>) {
        let answerer = self.answerer();
        let uid = match &answerer {
            Answerer::Alone(_) => String::new(),
            Answerer::Beside { serving, .. } => serving
                .cache
                .parents
                .get(key)
                .and_then(|p| p.uid().map(str::to_owned))
                .unwrap_or_default(),
        };
        answerer.route(&uid)
    }

    /// The applied version's answer for `parent`, judged; with a `shadow`, the other version is
    /// called on the same inputs at the same time, its answer judged the same way, and the two
    /// judgments are compared and counted. Each answer is judged once.
    pub(super) async fn judged_answer(
        &self,
        b: &Binding,
        shadow: Option<&Shadow>,
        (key, parent, cached): (&ObjectKey, &DynamicObject, &CachedObject),
        (observed, related): (&[Arc<CachedObject>], &[Arc<CachedObject>]),
        now: &str,
    ) -> Result<Verdict, PluginError> {
        let Some(shadow) = shadow else {
            let answer = b.invoker.reconcile(cached, observed, related).await?;
            return Ok(self.judge(b, parent, answer, now));
        };
        let (applied, other) = tokio::join!(
            b.invoker.reconcile(cached, observed, related),
            shadow.other.invoker.reconcile(cached, observed, related),
        );
        let applied = applied.map(|answer| self.judge(b, parent, answer, now));
        let other = other.map(|answer| self.judge(&shadow.other, parent, answer, now));
        let (serving, candidate) = if shadow.candidate_applies {
            (Normalised::of(&other), Normalised::of(&applied))
        } else {
            (Normalised::of(&applied), Normalised::of(&other))
        };
        let diffs = compare(&serving, &candidate);
        let soon = |requeue| self.parts.queue.requeues_soon(super::finish_of(requeue));
        let outcomes = (serving.outcome(soon), candidate.outcome(soon));
        let kinds: Vec<&str> = diffs.iter().map(|d| d.kind.as_str()).collect();
        self.parts
            .metrics
            .compared(&b.info().name, &kinds, outcomes.1.label());
        if !diffs.is_empty() {
            tracing::debug!(diffs = ?diffs, "the candidate answered differently");
        }
        let moved = shadow
            .candidate
            .rollout
            .record(&key.to_string(), diffs, outcomes);
        if let Some(phase) = moved {
            self.moved(&shadow.candidate, phase).await;
        }
        applied
    }

    /// Carries out a move of the candidate's phase: kept and announced first, then made and
    /// reaching every parent; given up when it cannot be kept (this replica may no longer lead:
    /// the next leader must find kept whatever phase a parent was answered by). Whether made.
    async fn moved(&self, candidate: &Arc<Candidate>, phase: Phase) -> bool {
        let _one_at_a_time = candidate.moving.lock().await;
        let info = candidate.binding.info();
        let current = candidate.rollout.phase();
        let live = self
            .live()
            .is_some_and(|live| Arc::ptr_eq(&live, candidate));
        if !live
            || current.order() >= phase.order()
            || !self.keep(candidate, phase.clone(), None).await
        {
            candidate.rollout.not_moved();
            return false;
        }
        tracing::info!(kind = %info.parent.kind, candidate = %info.version, %phase, "rollout moved");
        self.shift(candidate, &phase)
    }

    /// Makes the rollout and the answerer follow a move of `candidate` to `phase` and enqueues
    /// every parent; `false` when the candidate is no longer in place (withdrawn meanwhile):
    /// only its moves count.
    fn shift(&self, candidate: &Arc<Candidate>, phase: &Phase) -> bool {
        {
            let mut answerer = self.answerer_mut();
            if !answerer
                .candidate()
                .is_some_and(|live| Arc::ptr_eq(live, candidate))
            {
                candidate.rollout.not_moved();
                return false;
            }
            candidate.rollout.set_phase(phase.clone());
            match phase {
                Phase::Promoted => *answerer = Answerer::Alone(candidate.binding.clone()),
                Phase::RolledBack { .. } => {
                    *answerer = Answerer::Alone(answerer.serving().clone());
                }
                Phase::Shadow | Phase::Canary { .. } => {}
            }
        }
        self.enqueue_all();
        true
    }

    /// Takes `kept`, the phase kept for this kind's rollout, as this replica comes to lead: a
    /// candidate in place of the same bytes moves on to it when it is further along (its phase
    /// was read at its proposal; the last leader may have moved it since, and a leader's phase
    /// only moves on), at once and without keeping it again. Whether a candidate is in place.
    async fn take_kept(&self, kept: Option<&StoredPhase>) -> bool {
        let Some(live) = self.live() else {
            return false;
        };
        let rollout = &live.rollout;
        let Some(kept) = kept.filter(|k| k.sha256 == rollout.sha256()) else {
            return true;
        };
        rollout.set_paused(kept.paused);
        let now = rollout.phase();
        if kept.phase.order() > now.order() {
            let info = live.binding.info();
            tracing::info!(kind = %info.parent.kind, candidate = %info.version, from = %now, to = %kept.phase, "taking the kept rollout phase");
            let _one_at_a_time = live.moving.lock().await;
            self.shift(&live, &kept.phase);
        }
        true
    }

    /// Keeps `phase` of `candidate` (with whether it is paused), announced with `reason` or
    /// the phase's own; whether it is kept (or there is nowhere to keep it).
    async fn keep(&self, candidate: &Candidate, phase: Phase, reason: Option<&str>) -> bool {
        let Some(store) = &candidate.store else {
            return true;
        };
        let info = candidate.binding.info();
        let stored = StoredPhase {
            sha256: candidate.rollout.sha256(),
            version: info.version.clone(),
            paused: candidate.rollout.paused(),
            phase,
        };
        let reason = reason.unwrap_or_else(|| stored.phase.reason());
        match store.keep(&info.name, &stored, reason).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %crate::chain::Chain(&e), "the rollout phase was not kept: not moved");
                false
            }
        }
    }

    /// Carries out an operator's `request` on the candidate in place (see
    /// `crate::rollout::steer`): promoted or aborted at once (every parent reconciled again,
    /// each crossing once), paused or resumed. Says why not when no candidate is in place.
    pub async fn steer(&self, request: Request) -> Result<Phase, String> {
        let live = self
            .live()
            .ok_or_else(|| "no candidate is being rolled out".to_owned())?;
        let rollout = &live.rollout;
        let now = rollout.phase();
        tracing::info!(kind = %self.info().parent.kind, candidate = %live.binding.info().version, phase = %now, request = request.as_str(), "an operator steers the rollout");
        match request {
            Request::Promote | Request::Abort => {
                let phase = match request {
                    Request::Promote => Phase::Promoted,
                    _ => Phase::RolledBack {
                        reason: format!("aborted by an operator in {now}"),
                    },
                };
                if self.moved(&live, phase.clone()).await {
                    Ok(phase)
                } else {
                    Err(format!(
                        "{phase} could not be kept; the rollout stays in {now}"
                    ))
                }
            }
            Request::Pause | Request::Resume => {
                let paused = request == Request::Pause;
                rollout.set_paused(paused);
                let reason = if paused { "Paused" } else { "Resumed" };
                let _kept = self.keep(&live, now.clone(), Some(reason)).await;
                Ok(now)
            }
        }
    }
}

impl Resumable for Controller {
    fn plugin(&self) -> String {
        self.info().name
    }

    async fn follow_kept(&self, kept: Option<&StoredPhase>) -> bool {
        self.take_kept(kept).await
    }

    async fn proposed_within(&self, within: Duration) -> bool {
        self.proposed_since_start(within).await
    }
}
