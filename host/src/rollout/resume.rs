//! Where a controller's rollout resumes when its replica comes to lead: the kept phase, read then.
//!
//! Each time a replica comes to lead (the only replica: once, at start), each controller asks
//! [`Resume::take_over`] before its first reconcile. A candidate in place takes the phase kept
//! for its bytes (a standby's rollout is as it read it at its proposal; the leader may have moved
//! it on since). Without one, when the kept phase has another version's answers written
//! (`Canary`, `Promoted`: a restart in the middle of a rollout), the workers wait for the
//! candidate, which comes back later than the serving version (its own loader, its own compile),
//! for at most [`super::RolloutConfig::resume_within`]; if none comes, the serving version
//! reconciles alone and a `NotResumed` Event says so. Only a leader saves a phase.

use std::future::Future;
use std::time::Duration;

use super::{PhaseStore, StoredPhase};
use crate::chain::Chain;

/// What the resume step asks of a controller (`crate::reconcile::Controller`).
pub trait Resumable {
    /// The name of the plugin serving the kind.
    fn plugin(&self) -> String;
    /// Moves the candidate in place on to `kept` when that is its bytes' phase and further
    /// along; whether a candidate is in place.
    fn follow_kept(&self, kept: Option<&StoredPhase>) -> impl Future<Output = bool> + Send;
    /// Waits, for at most `within`, until a candidate has been proposed or withdrawn since the
    /// controller started; whether one has.
    fn proposed_within(&self, within: Duration) -> impl Future<Output = bool> + Send;
}

/// The resume step of every controller of the host.
#[derive(Clone)]
pub struct Resume {
    store: PhaseStore,
    within: Duration,
}

impl Resume {
    /// Reads kept phases from `store`, and waits at most `within` for a kept candidate.
    pub fn new(store: PhaseStore, within: Duration) -> Self {
        Self { store, within }
    }

    /// Returns once `controller` (started serving the bytes `serving_sha`), whose replica has
    /// just come to lead, may reconcile (see the module's documentation).
    pub async fn take_over(&self, controller: &impl Resumable, serving_sha: &str) {
        let plugin = controller.plugin();
        let kept = match self.store.load(&plugin).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(plugin = %plugin, error = %Chain(&e), "the kept rollout phase is unknown: reconciling with the serving version");
                None
            }
        };
        if controller.follow_kept(kept.as_ref()).await {
            return;
        }
        let Some(kept) = kept.filter(|k| k.phase.candidate_applies() && k.sha256 != serving_sha)
        else {
            return;
        };
        tracing::info!(plugin = %plugin, candidate = %kept.version, phase = %kept.phase, "holding the workers until the kept candidate is proposed again");
        if controller.proposed_within(self.within).await {
            // Proposed meanwhile: its phase was read at its proposal, after this one.
            return;
        }
        tracing::warn!(plugin = %plugin, candidate = %kept.version, phase = %kept.phase, waited = ?self.within, "the kept candidate was not proposed again: the serving version reconciles alone");
        self.store.not_resumed(&plugin, &kept, self.within).await;
    }
}
