//! The rollout as an answerer beside the controller: a candidate asked beside the serving
//! version, which parents it answers, and the moves of its phase.
//!
//! A controller's [`Rollouts`] puts a [`Canary`] in the controller's seat while a candidate is
//! beside the serving version (`crate::reconcile::answerer`). For each key it routes to the
//! version whose answer is applied (the rollout decides: see the module above for the phases)
//! and has the other one asked on the same inputs, its answer only compared. Nothing of the
//! compared-only version is written, and its failures never reach the parent: they are counted.
//! A move of the phase is kept in the phase store before it is made; a promotion or a rollback
//! puts a version alone back in the seat.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;

use super::{
    Normalised, Phase, PhaseStore, Request, Resumable, Rollout, RolloutStatus, StoredPhase, compare,
};
use crate::answer::{PluginError, Verdict};
use crate::reconcile::Controller;
use crate::reconcile::answerer::{Alone, Answerer, Beside, Route, Seat};
use crate::reconcile::binding::Binding;
use crate::reconcile::invoke::Reconciler;
use crate::runtime::ObjectKey;

/// A proposed candidate: its binding (subscriptions, writers) and its rollout.
struct Candidate {
    binding: Arc<Binding>,
    rollout: Arc<Rollout>,
    store: Option<PhaseStore>,
    /// Held while a move is kept and made: an operator's and the rollout's own never interleave.
    moving: tokio::sync::Mutex<()>,
    /// The controller's seat, where a promotion or a rollback puts a version alone.
    seat: Seat,
}

/// The serving version, and a candidate whose rollout routes some parents to it (or only
/// compares its answers).
struct Canary {
    serving: Arc<Binding>,
    candidate: Arc<Candidate>,
}

impl Answerer for Canary {
    fn serving(&self) -> &Arc<Binding> {
        &self.serving
    }

    fn with_serving(&self, serving: Arc<Binding>) -> Arc<dyn Answerer> {
        Arc::new(Canary {
            serving,
            candidate: self.candidate.clone(),
        })
    }

    fn route(&self, key: &ObjectKey) -> Route {
        let uid = self.serving.parent_uid(key).unwrap_or_default();
        let candidate = self.candidate.clone();
        if candidate.rollout.candidate_serves(&uid) {
            Route {
                applied: candidate.binding.clone(),
                beside: Some(Box::new(Shadow {
                    other: self.serving.clone(),
                    candidate_applies: true,
                    candidate,
                })),
            }
        } else {
            Route {
                applied: self.serving.clone(),
                beside: Some(Box::new(Shadow {
                    other: candidate.binding.clone(),
                    candidate_applies: false,
                    candidate,
                })),
            }
        }
    }
}

/// For one reconcile: the version not applied, asked on the same inputs.
struct Shadow {
    other: Arc<Binding>,
    /// Whether the applied version is the candidate (a canary parent).
    candidate_applies: bool,
    candidate: Arc<Candidate>,
}

impl Beside for Shadow {
    fn binding(&self) -> &Arc<Binding> {
        &self.other
    }

    fn compared<'a>(
        &'a self,
        key: &'a ObjectKey,
        applied: &'a Result<Verdict, PluginError>,
        beside: &'a Result<Verdict, PluginError>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (serving, candidate) = if self.candidate_applies {
                (Normalised::of(beside), Normalised::of(applied))
            } else {
                (Normalised::of(applied), Normalised::of(beside))
            };
            let diffs = compare(&serving, &candidate);
            let seat = &self.candidate.seat;
            let soon = |requeue| seat.requeues_soon(requeue);
            let outcomes = (serving.outcome(soon), candidate.outcome(soon));
            let kinds: Vec<&str> = diffs.iter().map(|d| d.kind.as_str()).collect();
            let plugin = &self.candidate.binding.info().name;
            seat.metrics().compared(plugin, &kinds, outcomes.1.label());
            if !diffs.is_empty() {
                tracing::debug!(diffs = ?diffs, "the candidate answered differently");
            }
            let moved = self
                .candidate
                .rollout
                .record(&key.to_string(), diffs, outcomes);
            if let Some(phase) = moved {
                self.candidate.moved(phase).await;
            }
        })
    }
}

impl Candidate {
    /// Whether this candidate is the one in its controller's seat now.
    fn in_place(self: &Arc<Self>) -> bool {
        live(&self.seat).is_some_and(|live| Arc::ptr_eq(&live, self))
    }

    /// Carries out a move of the phase: kept and announced first, then made and reaching every
    /// parent; given up when it cannot be kept (this replica may no longer lead: the next leader
    /// must find kept whatever phase a parent was answered by). Whether made.
    async fn moved(self: &Arc<Self>, phase: Phase) -> bool {
        let _one_at_a_time = self.moving.lock().await;
        let info = self.binding.info();
        let current = self.rollout.phase();
        if !self.in_place()
            || current.order() >= phase.order()
            || !self.keep(phase.clone(), None).await
        {
            self.rollout.not_moved();
            return false;
        }
        tracing::info!(kind = %info.parent.kind, candidate = %info.version, %phase, "rollout moved");
        self.shift(&phase)
    }

    /// Makes the rollout and the seat follow a move to `phase` and enqueues every parent;
    /// `false` when the candidate is no longer in place (withdrawn meanwhile): only its moves count.
    fn shift(self: &Arc<Self>, phase: &Phase) -> bool {
        let mut shifted = false;
        self.seat.replace(|answerer| {
            let canary = as_canary(answerer).filter(|c| Arc::ptr_eq(&c.candidate, self))?;
            shifted = true;
            self.rollout.set_phase(phase.clone());
            match phase {
                Phase::Promoted => Some(Arc::new(Alone(self.binding.clone()))),
                Phase::RolledBack { .. } => Some(Arc::new(Alone(canary.serving.clone()))),
                Phase::Shadow | Phase::Canary { .. } => None,
            }
        });
        if !shifted {
            self.rollout.not_moved();
            return false;
        }
        self.seat.enqueue_all();
        true
    }

    /// Keeps `phase` (with whether it is paused), announced with `reason` or the phase's own;
    /// whether it is kept (or there is nowhere to keep it).
    async fn keep(&self, phase: Phase, reason: Option<&str>) -> bool {
        let Some(store) = &self.store else {
            return true;
        };
        let info = self.binding.info();
        let stored = StoredPhase {
            sha256: self.rollout.sha256(),
            version: info.version.clone(),
            paused: self.rollout.paused(),
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
}

/// The seat's answerer as a rollout's, if it is one.
fn as_canary(answerer: &Arc<dyn Answerer>) -> Option<&Canary> {
    (answerer.as_ref() as &dyn std::any::Any).downcast_ref::<Canary>()
}

/// The candidate in `seat` now, if a rollout's answerer is there.
fn live(seat: &Seat) -> Option<Arc<Candidate>> {
    as_canary(&seat.get()).map(|c| c.candidate.clone())
}

/// One controller's rollouts: the candidate in its seat, the last rollout as listed, and
/// whether one was proposed since the controller started.
pub struct Rollouts {
    controller: Arc<Controller>,
    /// The last rollout, kept for the listing once it is promoted or rolled back.
    last: RwLock<Option<Arc<Rollout>>>,
    /// Turns true at the first proposal or withdrawal.
    proposed: watch::Sender<bool>,
}

impl Rollouts {
    /// No rollout yet for `controller`.
    pub fn new(controller: Arc<Controller>) -> Self {
        Self {
            controller,
            last: RwLock::new(None),
            proposed: watch::Sender::new(false),
        }
    }

    fn set_last(&self, rollout: Option<Arc<Rollout>>) {
        *self.last.write().unwrap_or_else(PoisonError::into_inner) = rollout;
        self.proposed.send_replace(true);
    }

    /// The candidate being rolled out, if any.
    fn live(&self) -> Option<Arc<Candidate>> {
        live(&self.controller.seat())
    }

    /// Rolls `plugin` out beside the serving version, starting at `rollout`'s phase; `store`
    /// keeps each move. A candidate already `RolledBack` is only listed; one already `Promoted`
    /// serves at once. Every parent is reconciled again (after the seat changed, when the
    /// candidate's answers are written: the subscription's enqueue may have been served by the
    /// serving version, as in a hot swap).
    pub fn propose(
        &self,
        plugin: Arc<dyn Reconciler>,
        rollout: Arc<Rollout>,
        store: Option<PhaseStore>,
    ) {
        let phase = rollout.phase();
        let seat = self.controller.seat();
        tracing::info!(kind = %self.controller.info().parent.kind, candidate = %plugin.info().version, %phase, "candidate proposed");
        // Subscribing the candidate's parent kind enqueues every cached parent.
        let binding =
            (!matches!(phase, Phase::RolledBack { .. })).then(|| self.controller.bind(plugin));
        seat.replace(|answerer| {
            let serving = answerer.serving().clone();
            Some(match binding {
                Some(binding) if phase == Phase::Promoted => Arc::new(Alone(binding)),
                Some(binding) => Arc::new(Canary {
                    serving,
                    candidate: Arc::new(Candidate {
                        binding,
                        rollout: rollout.clone(),
                        store,
                        moving: tokio::sync::Mutex::new(()),
                        seat: seat.clone(),
                    }),
                }),
                None => Arc::new(Alone(serving)),
            })
        });
        self.set_last(Some(rollout));
        if phase.candidate_applies() {
            seat.enqueue_all();
        }
    }

    /// Drops the candidate (its file went away): the serving version answers alone again.
    pub fn withdraw(&self) {
        let seat = self.controller.seat();
        seat.replace(|answerer| Some(Arc::new(Alone(answerer.serving().clone()))));
        self.set_last(None);
        seat.enqueue_all();
    }

    /// The current or last rollout of this kind, as listed.
    pub fn status(&self) -> Option<RolloutStatus> {
        let last = self.last.read().unwrap_or_else(PoisonError::into_inner);
        last.as_ref().map(|r| r.status())
    }

    /// The sha256 of the candidate being rolled out, if any.
    pub fn candidate_sha256(&self) -> Option<String> {
        self.live().map(|c| c.rollout.sha256())
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
            live.shift(&kept.phase);
        }
        true
    }

    /// Carries out an operator's `request` on the candidate in place (see
    /// [`super::steer`]): promoted or aborted at once (every parent reconciled again, each
    /// crossing once), paused or resumed. Says why not when no candidate is in place.
    pub async fn steer(&self, request: Request) -> Result<Phase, String> {
        let live = self
            .live()
            .ok_or_else(|| "no candidate is being rolled out".to_owned())?;
        let rollout = &live.rollout;
        let now = rollout.phase();
        tracing::info!(kind = %self.controller.info().parent.kind, candidate = %live.binding.info().version, phase = %now, request = request.as_str(), "an operator steers the rollout");
        match request {
            Request::Promote | Request::Abort => {
                let phase = match request {
                    Request::Promote => Phase::Promoted,
                    _ => Phase::RolledBack {
                        reason: format!("aborted by an operator in {now}"),
                    },
                };
                if live.moved(phase.clone()).await {
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
                let _kept = live.keep(now.clone(), Some(reason)).await;
                Ok(now)
            }
        }
    }
}

impl Resumable for Rollouts {
    fn plugin(&self) -> String {
        self.controller.info().name
    }

    async fn follow_kept(&self, kept: Option<&StoredPhase>) -> bool {
        self.take_kept(kept).await
    }

    async fn proposed_within(&self, within: Duration) -> bool {
        let mut proposed = self.proposed.subscribe();
        tokio::time::timeout(within, proposed.wait_for(|p| *p))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}
