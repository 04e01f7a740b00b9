//! One candidate's rollout: its phase, what the comparisons counted, and when to step or roll back.
//!
//! [`Rollout::record`] takes each compared reconcile and decides, under one lock, whether the
//! phase moves: back to the serving version when the candidate's bad-outcome rate over the
//! window exceeds the serving version's by the margin, forward when the phase has seen enough
//! reconciles (and time). A transition is returned once, to the one caller that made it.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::compare::{Diff, DiffKind, Outcome};
use super::{Phase, RolloutConfig};
use crate::answer::now;

/// Which of 100 buckets a parent falls in: a hash of its UID, so it never changes, and a parent
/// in the first n buckets is in the first m for every m > n (it crosses over once).
pub fn canary_bucket(uid: &str) -> u8 {
    let digest = Sha256::digest(uid.as_bytes());
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    // Always below 100: fits in a u8.
    (u64::from_be_bytes(head) % 100) as u8
}

/// One reconcile whose two answers differed, reported in full.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiffReport {
    /// The parent, `namespace/name`.
    pub parent: String,
    /// The phase it was seen in.
    pub phase: String,
    /// Every difference.
    pub diffs: Vec<Diff>,
}

impl RolloutStatus {
    /// One cell: `Canary 10% 0.2.0: 120 compared, 120 differ, 3 failed`.
    pub fn cell(&self) -> String {
        let failed: u64 = self.candidate_failures.values().sum();
        let phase = match &self.phase {
            Phase::RolledBack { .. } => "RolledBack".to_owned(),
            p => p.to_string(),
        };
        format!(
            "{phase} {}: {} compared, {} differ, {failed} failed",
            self.version, self.compared, self.differed
        )
    }
}

/// What a rollout shows in `/plugins` and `weir plugins` (part of [`crate::listing::Listed`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The candidate's component file.
    #[serde(default)]
    pub file: PathBuf,
    /// The candidate's version.
    pub version: String,
    /// Hex sha256 of the candidate.
    #[serde(default)]
    pub sha256: String,
    /// Where it stands.
    pub phase: Phase,
    /// An operator paused it: the phase does not step forward by itself.
    #[serde(default)]
    pub paused: bool,
    /// When it got there in this process (RFC 3339): for `Promoted`, when the candidate began
    /// serving every parent.
    #[serde(default)]
    pub phase_since: String,
    /// Reconciles whose two answers were compared.
    #[serde(default)]
    pub compared: u64,
    /// Reconciles whose answers differed.
    #[serde(default)]
    pub differed: u64,
    /// Differences by kind (a reconcile may count under several).
    #[serde(default)]
    pub diffs: BTreeMap<DiffKind, u64>,
    /// The candidate's bad outcomes by cause (`trap`, `timeout`, `refused`, `hot-loop`...).
    #[serde(default)]
    pub candidate_failures: BTreeMap<Cow<'static, str>, u64>,
    /// The serving version's, over the same reconciles.
    #[serde(default)]
    pub serving_failures: BTreeMap<Cow<'static, str>, u64>,
    /// The first differing reconciles, in full.
    #[serde(default)]
    pub first_diffs: Vec<DiffReport>,
}

/// The last outcomes of one version: whether each was bad.
#[derive(Debug, Default)]
struct Window {
    bad: VecDeque<bool>,
}

impl Window {
    fn push(&mut self, bad: bool, size: usize) {
        self.bad.push_back(bad);
        while self.bad.len() > size.max(1) {
            self.bad.pop_front();
        }
    }
    fn count(&self) -> usize {
        self.bad.iter().filter(|b| **b).count()
    }
    fn rate(&self) -> f64 {
        if self.bad.is_empty() {
            0.0
        } else {
            self.count() as f64 / self.bad.len() as f64
        }
    }
}

#[derive(Debug)]
struct State {
    phase: Phase,
    since: Instant,
    compared_in_phase: u64,
    serving: Window,
    candidate: Window,
    status: RolloutStatus,
    /// A move was decided and is not kept yet: no other is decided meanwhile.
    moving: bool,
}

/// One candidate's rollout, shared by the workers of its kind.
pub struct Rollout {
    config: RolloutConfig,
    /// The serving version, `name@version`, for reasons.
    serving: String,
    state: Mutex<State>,
    /// Told the reason when the rollout is rolled back (the candidate's source puts it on the
    /// candidate's status).
    rolled_back: Option<RolledBack>,
}

/// What a [`Rollout`] tells of its rollback.
pub type RolledBack = Box<dyn Fn(&str) + Send + Sync>;

impl std::fmt::Debug for Rollout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rollout")
            .field("config", &self.config)
            .field("serving", &self.serving)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Rollout {
    /// A rollout of the candidate `file` (`version`, `sha256`) against `serving`, starting at `phase`.
    pub fn new(
        config: RolloutConfig,
        serving: String,
        (file, version, sha256): (PathBuf, String, String),
        phase: Phase,
    ) -> Self {
        let status = RolloutStatus {
            file,
            version,
            sha256,
            phase: phase.clone(),
            paused: false,
            phase_since: now(),
            compared: 0,
            differed: 0,
            diffs: BTreeMap::new(),
            candidate_failures: BTreeMap::new(),
            serving_failures: BTreeMap::new(),
            first_diffs: Vec::new(),
        };
        Self {
            config,
            serving,
            state: Mutex::new(State {
                phase,
                since: Instant::now(),
                compared_in_phase: 0,
                serving: Window::default(),
                candidate: Window::default(),
                status,
                moving: false,
            }),
            rolled_back: None,
        }
    }

    /// This rollout, telling `told` the reason when it is rolled back.
    #[must_use]
    pub fn on_rolled_back(mut self, told: RolledBack) -> Self {
        self.rolled_back = Some(told);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Where the rollout stands.
    pub fn phase(&self) -> Phase {
        self.lock().phase.clone()
    }

    /// What it has seen so far.
    pub fn status(&self) -> RolloutStatus {
        self.lock().status.clone()
    }

    /// The candidate's sha256.
    pub fn sha256(&self) -> String {
        self.lock().status.sha256.clone()
    }

    /// Whether the candidate's answer is the one applied to the parent of `uid` now.
    pub fn candidate_serves(&self, uid: &str) -> bool {
        match self.lock().phase {
            Phase::Shadow | Phase::RolledBack { .. } => false,
            Phase::Canary { percent } => canary_bucket(uid) < percent,
            Phase::Promoted => true,
        }
    }

    /// Counts one compared reconcile of `parent` and returns the phase to move to, if it is
    /// time. The move is not made here: the leader keeps it first, then makes it
    /// ([`Rollout::set_phase`]), or gives it up when it cannot be kept ([`Rollout::not_moved`]),
    /// so no parent is answered by a phase the next leader would not find kept. Meanwhile no
    /// other move is decided.
    pub fn record(
        &self,
        parent: &str,
        diffs: Vec<Diff>,
        (serving, candidate): (Outcome, Outcome),
    ) -> Option<Phase> {
        let config = &self.config;
        let mut st = self.lock();
        if !matches!(st.phase, Phase::Shadow | Phase::Canary { .. }) {
            return None;
        }
        let phase = st.phase.to_string();
        let s = &mut st.status;
        s.compared += 1;
        if !diffs.is_empty() {
            s.differed += 1;
            for d in &diffs {
                *s.diffs.entry(d.kind).or_insert(0) += 1;
            }
            if s.first_diffs.len() < config.first_diffs {
                s.first_diffs.push(DiffReport {
                    parent: parent.to_owned(),
                    phase,
                    diffs,
                });
            }
        }
        let s = &mut st.status;
        if let Some(label) = candidate.label() {
            *s.candidate_failures.entry(label.into()).or_insert(0) += 1;
        }
        if let Some(label) = serving.label() {
            *s.serving_failures.entry(label.into()).or_insert(0) += 1;
        }
        st.serving.push(serving != Outcome::Ok, config.window);
        st.candidate.push(candidate != Outcome::Ok, config.window);
        st.compared_in_phase += 1;

        if st.moving {
            return None;
        }
        let next = self.rollback_reason(&st).map_or_else(
            || self.step(&st),
            |reason| Some(Phase::RolledBack { reason }),
        )?;
        st.moving = true;
        Some(next)
    }

    /// Gives up a move [`Rollout::record`] decided (it could not be kept): a later compared
    /// reconcile decides it again.
    pub fn not_moved(&self) {
        self.lock().moving = false;
    }

    /// Why the candidate must go, if its bad-outcome rate exceeds the serving one's by the margin.
    fn rollback_reason(&self, st: &State) -> Option<String> {
        let n = st.candidate.bad.len();
        if n < self.config.min_samples {
            return None;
        }
        let (c, s) = (st.candidate.rate(), st.serving.rate());
        if c - s <= self.config.margin {
            return None;
        }
        let causes: Vec<String> = st
            .status
            .candidate_failures
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        Some(format!(
            "in {}, candidate {} failed {} of its last {n} reconciles ({:.0}%: {}), the serving {} {} ({:.0}%); margin {:.0}%",
            st.phase,
            st.status.version,
            st.candidate.count(),
            c * 100.0,
            causes.join(", "),
            self.serving,
            st.serving.count(),
            s * 100.0,
            self.config.margin * 100.0
        ))
    }

    /// The next phase, once this one has seen enough reconciles and time.
    fn step(&self, st: &State) -> Option<Phase> {
        let config = &self.config;
        if st.status.paused {
            return None;
        }
        let (needed, after) = match st.phase {
            Phase::Shadow => (config.shadow_reconciles, None),
            Phase::Canary { percent } => (config.step_reconciles, Some(percent)),
            _ => return None,
        };
        if st.compared_in_phase < needed || st.since.elapsed() < config.min_phase_time {
            return None;
        }
        Some(config.after(after))
    }

    /// Whether an operator paused the rollout.
    pub fn paused(&self) -> bool {
        self.lock().status.paused
    }

    /// Pauses (`true`) or resumes the phase's steps forward.
    pub fn set_paused(&self, paused: bool) {
        self.lock().status.paused = paused;
    }

    /// Moves to `phase`: one [`Rollout::record`] decided and that is kept, one read back after a
    /// restart, or one an operator decided.
    pub fn set_phase(&self, phase: Phase) {
        let mut st = self.lock();
        st.moving = false;
        st.status.phase = phase.clone();
        st.status.phase_since = now();
        let phase_told = phase.clone();
        st.phase = phase;
        st.since = Instant::now();
        st.compared_in_phase = 0;
        drop(st);
        if let (Phase::RolledBack { reason }, Some(told)) = (&phase_told, &self.rolled_back) {
            told(reason);
        }
    }
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
