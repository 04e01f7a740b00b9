//! Safe rollout of a new plugin version: shadow it, canary it, then promote it or roll it back.
//!
//! A *candidate* is another version of a served plugin. While one is present, every reconcile
//! of the kind calls both versions on the same inputs (the parent, its observed children, its
//! related objects) and [`compare`]s their answers after the apply step's normalisation. The
//! [`Phase`] decides whose answer is written; the other one's is only compared:
//!
//! - `Shadow`: the serving version's, for every parent. The candidate writes nothing, and its
//!   failures (trap, timeout, refusal) are counted, never shown on the parent.
//! - `Canary n%`: the candidate's for the parents whose UID hashes into the first n of 100
//!   buckets ([`canary_bucket`]), the serving version's for the rest. The buckets are nested, so
//!   as n grows a parent crosses to the candidate once and never back.
//! - `Promoted`: the candidate replaces the serving version in place.
//! - `RolledBack`: the candidate is dropped, because its rate of bad outcomes (failures,
//!   refusals, requeues the hot-loop guard throttles) over the last [`RolloutConfig::window`]
//!   compared reconciles exceeded the serving version's by [`RolloutConfig::margin`]. The reason
//!   says by how much.
//!
//! The phase moves forward after [`RolloutConfig::shadow_reconciles`] (then
//! [`RolloutConfig::step_reconciles`] per canary step) compared reconciles and at least
//! [`RolloutConfig::min_phase_time`] (`weir run --rollout-steps`, `--rollout-phase-secs`, ...:
//! [`RolloutFlags`]); every move enqueues every parent, so the new split reaches them at once.
//! Each move is an Event and is kept in a ConfigMap ([`store`]) before it is made: a move the
//! leader cannot keep (its lease may have run out) is not made, so the next leader finds kept
//! whatever phase a parent was answered by. An operator may promote, pause, resume or abort it
//! at any time with `weir rollout` ([`steer`]), through that ConfigMap.
//!
//! What survives a restart and a failover: the kept phase, for the candidate's bytes (its
//! sha256), which only the leader writes. When the same bytes are proposed again the rollout
//! resumes there (a `RolledBack` candidate is listed, never called), and a replica that comes to
//! lead takes the kept phase rather than the one it read at its start ([`resume`]). So that no
//! parent's children go back to the serving version and forth again, a controller whose kept
//! phase has the candidate's answers written (`Canary`, `Promoted`) holds its workers until a
//! candidate is proposed or withdrawn, for at most [`RolloutConfig::resume_within`]; if none
//! comes, the serving version reconciles alone, with a warning and a `NotResumed` Event on the
//! ConfigMap. A restart with no such phase starts as fast as before (the phase is read while the
//! caches fill). The counts and diffs start afresh.
//!
//! `Promoted` does not rewrite the serving file: the candidate serves (and `/plugins` lists it
//! as what serves the kind) while its file is in `candidates/`, across restarts too. Replacing
//! the serving file with the candidate, then removing the candidate, ends the rollout. (Removing
//! the candidate alone leaves it serving until the host restarts; then the serving file's
//! version serves, once `resume_within` has passed.)
//!
//! Where candidates come from: with the directory source, `DIR/candidates/FILE.wasm` is the
//! candidate of `DIR/FILE.wasm` (the directory must exist when the host starts); with the
//! cluster source, a `Plugin`'s `spec.candidate`. Any other source calls
//! [`crate::Manager::propose_candidate`] with the serving plugin's catalog file.
//! A candidate that does not load, is not admitted, serves another kind or is another plugin is
//! refused with its reason (listed in `/plugins`); the serving version is untouched.

mod answerer;
#[cfg(test)]
mod answerer_tests;
pub mod compare;
mod progress;
pub mod resume;
pub mod steer;
pub mod store;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use self::answerer::Rollouts;
pub use self::compare::{Diff, DiffKind, Normalised, Outcome, compare};
pub use self::progress::{DiffReport, RolledBack, Rollout, RolloutStatus, canary_bucket};
pub use self::resume::{Resumable, Resume};
pub use self::steer::RolloutArgs;
pub use self::store::{Kept, PhaseStore, Request, StoredPhase};

/// Where a candidate stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name")]
pub enum Phase {
    /// Both versions run; the serving one's answers are written.
    Shadow,
    /// The candidate's answers are written for this share of the parents.
    Canary {
        /// Percent of parents, 1 to 99.
        percent: u8,
    },
    /// The candidate serves every parent.
    Promoted,
    /// The candidate was dropped.
    RolledBack {
        /// Why, with the rates compared.
        reason: String,
    },
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::Shadow => f.write_str("Shadow"),
            Phase::Canary { percent } => write!(f, "Canary {percent}%"),
            Phase::Promoted => f.write_str("Promoted"),
            Phase::RolledBack { reason } => write!(f, "RolledBack: {reason}"),
        }
    }
}

impl Phase {
    /// Whether the candidate's answers are written for some parents in this phase.
    pub fn candidate_applies(&self) -> bool {
        matches!(self, Phase::Canary { .. } | Phase::Promoted)
    }

    /// How far along a rollout is: a leader's phase only moves to a higher one (`Shadow`, the
    /// canary steps by percent, `Promoted`, `RolledBack` last).
    pub fn order(&self) -> u8 {
        match self {
            Phase::Shadow => 0,
            Phase::Canary { percent } => *percent,
            Phase::Promoted => 100,
            Phase::RolledBack { .. } => 101,
        }
    }

    /// The Event reason of a move into this phase.
    pub fn reason(&self) -> &'static str {
        match self {
            Phase::Shadow => "Shadow",
            Phase::Canary { .. } => "Canary",
            Phase::Promoted => "Promoted",
            Phase::RolledBack { .. } => "RolledBack",
        }
    }
}

/// How candidates are rolled out.
#[derive(Clone, Debug)]
pub struct RolloutConfig {
    /// Compared reconciles in `Shadow` before the first canary step (0 starts at the first step).
    pub shadow_reconciles: u64,
    /// The canary steps, percent of parents, increasing; after the last comes `Promoted`.
    pub steps: Vec<u8>,
    /// Compared reconciles per canary step before the next.
    pub step_reconciles: u64,
    /// Least time in each phase before the next.
    pub min_phase_time: Duration,
    /// Compared reconciles (per version) whose outcomes the rollback rule looks at.
    pub window: usize,
    /// Compared reconciles needed before the rollback rule judges.
    pub min_samples: usize,
    /// How much higher (0.05 = 5 points) the candidate's bad-outcome rate may be.
    pub margin: f64,
    /// Differing reconciles kept in full for `weir plugins`.
    pub first_diffs: usize,
    /// Namespace of the ConfigMaps keeping the phase; `None`: the leader lease's namespace, else
    /// the watched namespace, else `default`.
    pub namespace: Option<String>,
    /// After a restart, how long a controller whose kept phase has a candidate's answers written
    /// waits for that candidate before the serving version reconciles alone.
    pub resume_within: Duration,
}

impl Default for RolloutConfig {
    fn default() -> Self {
        Self {
            shadow_reconciles: 100,
            steps: vec![10, 50],
            step_reconciles: 100,
            min_phase_time: Duration::from_secs(300),
            window: 200,
            min_samples: 20,
            margin: 0.05,
            first_diffs: 5,
            namespace: None,
            resume_within: Duration::from_secs(30),
        }
    }
}

/// The rollout settings of `weir run`'s command line (the rest keep [`RolloutConfig`]'s defaults).
#[derive(Clone, Debug, clap::Args)]
pub struct RolloutFlags {
    /// Canary steps of a candidate, percent of parents (1 to 99), increasing; after the last
    /// comes Promoted.
    #[arg(
        long = "rollout-steps",
        value_delimiter = ',',
        default_value = "10,50",
        value_name = "PERCENT,..."
    )]
    pub steps: Vec<u8>,
    /// Least time in each phase (shadow, each canary step) before the next.
    #[arg(
        long = "rollout-phase-secs",
        default_value_t = 300,
        value_name = "SECS"
    )]
    pub phase_secs: u64,
    /// Compared reconciles in shadow before the first canary step (0: start at the first step).
    #[arg(
        long = "rollout-shadow-reconciles",
        default_value_t = 100,
        value_name = "N"
    )]
    pub shadow_reconciles: u64,
    /// Compared reconciles in each canary step before the next.
    #[arg(
        long = "rollout-step-reconciles",
        default_value_t = 100,
        value_name = "N"
    )]
    pub step_reconciles: u64,
}

impl RolloutFlags {
    /// The configuration these flags describe.
    pub fn config(&self) -> RolloutConfig {
        RolloutConfig {
            shadow_reconciles: self.shadow_reconciles,
            steps: self.steps.clone(),
            step_reconciles: self.step_reconciles,
            min_phase_time: Duration::from_secs(self.phase_secs),
            ..RolloutConfig::default()
        }
    }
}

impl RolloutConfig {
    /// The first phase of a new candidate.
    pub fn first(&self) -> Phase {
        if self.shadow_reconciles == 0 {
            self.after(None)
        } else {
            Phase::Shadow
        }
    }

    /// The phase after `Shadow` (`None`) or after the canary step of `percent`.
    pub fn after(&self, percent: Option<u8>) -> Phase {
        self.steps
            .iter()
            .copied()
            .find(|s| percent.is_none_or(|p| *s > p) && *s > 0 && *s < 100)
            .map_or(Phase::Promoted, |percent| Phase::Canary { percent })
    }
}

/// Why a candidate is not rolled out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CandidateRefusal {
    /// No served plugin comes from the file the candidate is for.
    #[error("no plugin is served from {0}")]
    NoServing(String),
    /// The candidate serves another parent kind than the serving version.
    #[error("claims {claimed}, but {file} serves {serving}")]
    OtherKind {
        /// The candidate's parent kind.
        claimed: String,
        /// The serving file.
        file: String,
        /// The serving version's parent kind.
        serving: String,
    },
    /// The candidate is another plugin (its writes would be another field manager's).
    #[error(
        "is plugin {claimed}, but {serving} serves the kind: a candidate is a version of the serving plugin"
    )]
    OtherPlugin {
        /// The candidate's name.
        claimed: String,
        /// The serving plugin's name.
        serving: String,
    },
    /// The file could not be loaded or was not admitted.
    #[error("{0}")]
    Load(String),
    /// This candidate was rolled back before (kept across restarts); replace it to try again.
    #[error("was rolled back: {0}")]
    RolledBack(String),
}

impl CandidateRefusal {
    /// The refusal's CamelCase reason, for a condition.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NoServing(_) => "NotServed",
            Self::OtherKind { .. } => "OtherKind",
            Self::OtherPlugin { .. } => "OtherPlugin",
            Self::Load(_) => "NotLoaded",
            Self::RolledBack(_) => "RolledBack",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_lead_from_shadow_through_each_canary_to_promoted() {
        let c = RolloutConfig::default();
        assert_eq!(c.first(), Phase::Shadow);
        assert_eq!(c.after(None), Phase::Canary { percent: 10 });
        assert_eq!(c.after(Some(10)), Phase::Canary { percent: 50 });
        assert_eq!(c.after(Some(50)), Phase::Promoted);
        let skip = RolloutConfig {
            shadow_reconciles: 0,
            steps: vec![],
            ..c
        };
        assert_eq!(skip.first(), Phase::Promoted);
    }

    #[test]
    fn a_phase_reads_back_as_it_was_written() {
        for phase in [
            Phase::Shadow,
            Phase::Canary { percent: 10 },
            Phase::Promoted,
            Phase::RolledBack { reason: "x".into() },
        ] {
            let text = serde_json::to_string(&phase).unwrap_or_default();
            assert_eq!(serde_json::from_str::<Phase>(&text).ok(), Some(phase));
        }
    }
}
