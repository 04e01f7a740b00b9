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
#[derive(Debug)]
pub struct Rollout {
    config: RolloutConfig,
    /// The serving version, `name@version`, for reasons.
    serving: String,
    state: Mutex<State>,
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
        }
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
        st.phase = phase;
        st.since = Instant::now();
        st.compared_in_phase = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::answer::FailureCause;

    fn config() -> RolloutConfig {
        RolloutConfig {
            shadow_reconciles: 10,
            steps: vec![10, 50],
            step_reconciles: 10,
            min_phase_time: Duration::ZERO,
            window: 50,
            min_samples: 20,
            margin: 0.05,
            first_diffs: 2,
            namespace: None,
            resume_within: Duration::ZERO,
        }
    }

    /// Counts one compared reconcile and makes the move it decides, as the leader does once
    /// the move is kept.
    fn step(r: &Rollout, parent: &str, diffs: Vec<Diff>, o: (Outcome, Outcome)) -> Option<Phase> {
        let next = r.record(parent, diffs, o)?;
        r.set_phase(next.clone());
        Some(next)
    }

    fn rollout() -> Rollout {
        Rollout::new(
            config(),
            "blog@0.1.0".into(),
            ("candidates/blog.wasm".into(), "0.2.0".into(), "abc".into()),
            Phase::Shadow,
        )
    }

    #[test]
    fn a_parent_crosses_to_the_candidate_once_as_the_fraction_grows() {
        let uids: Vec<String> = (0..1000).map(|i| format!("uid-{i}")).collect();
        let share = |p: u8| uids.iter().filter(|u| canary_bucket(u) < p).count();
        assert!(
            (50..150).contains(&share(10)),
            "about a tenth: {}",
            share(10)
        );
        for u in &uids {
            assert_eq!(canary_bucket(u), canary_bucket(u), "stable");
        }
        assert_eq!(share(100), 1000);
    }

    #[test]
    fn a_good_candidate_steps_through_shadow_and_canary_to_promoted() {
        let r = rollout();
        let mut phases = vec![r.phase()];
        for i in 0..40 {
            if let Some(p) = step(&r, &format!("ns/p{i}"), vec![], (Outcome::Ok, Outcome::Ok)) {
                phases.push(p);
            }
        }
        assert_eq!(
            phases,
            [
                Phase::Shadow,
                Phase::Canary { percent: 10 },
                Phase::Canary { percent: 50 },
                Phase::Promoted
            ]
        );
        assert_eq!(r.status().compared, 30, "nothing is counted once promoted");
        assert!(r.candidate_serves("any"));
    }

    #[test]
    fn a_candidate_failing_a_tenth_more_often_is_rolled_back_with_the_reason() {
        let r = Rollout::new(
            RolloutConfig {
                shadow_reconciles: 1000,
                ..config()
            },
            "blog@0.1.0".into(),
            ("c.wasm".into(), "0.2.0".into(), "abc".into()),
            Phase::Shadow,
        );
        let bad = Outcome::Failed(FailureCause::Trap);
        let mut moved = None;
        for i in 0..100 {
            let candidate = if i % 10 == 0 { bad } else { Outcome::Ok };
            if let Some(p) = step(&r, "ns/p", vec![], (Outcome::Ok, candidate)) {
                moved = Some((i, p));
                break;
            }
        }
        let Some((at, Phase::RolledBack { reason })) = moved else {
            panic!("not rolled back: {moved:?}")
        };
        assert!(at >= 19, "judged only after min_samples: {at}");
        assert!(
            reason.starts_with("in Shadow, candidate 0.2.0 failed 2 of its last 20 reconciles (10%: 2 trap), the serving blog@0.1.0 0 (0%); margin 5%"),
            "{reason}"
        );
        assert_eq!(step(&r, "ns/p", vec![], (Outcome::Ok, bad)), None, "once");
    }

    #[test]
    fn a_paused_rollout_does_not_step_forward_until_resumed_but_still_rolls_back() {
        let r = rollout();
        r.set_paused(true);
        for i in 0..40 {
            let moved = step(&r, &format!("ns/p{i}"), vec![], (Outcome::Ok, Outcome::Ok));
            assert_eq!(moved, None);
        }
        assert_eq!(r.phase(), Phase::Shadow);
        r.set_paused(false);
        assert_eq!(
            step(&r, "ns/p", vec![], (Outcome::Ok, Outcome::Ok)),
            Some(Phase::Canary { percent: 10 })
        );
        r.set_paused(true);
        let bad = Outcome::Failed(FailureCause::Trap);
        let moved = (0..20).find_map(|_| step(&r, "ns/p", vec![], (Outcome::Ok, bad)));
        assert!(matches!(moved, Some(Phase::RolledBack { .. })), "{moved:?}");
    }

    #[test]
    fn equal_failure_rates_do_not_roll_back_and_diffs_are_kept_up_to_the_limit() {
        let r = Rollout::new(
            RolloutConfig {
                shadow_reconciles: 1000,
                ..config()
            },
            "blog@0.1.0".into(),
            ("c.wasm".into(), "0.2.0".into(), "abc".into()),
            Phase::Shadow,
        );
        let bad = Outcome::Failed(FailureCause::Error);
        for i in 0..100 {
            let o = if i % 3 == 0 { bad } else { Outcome::Ok };
            let diff = Diff {
                kind: DiffKind::Status,
                detail: format!("{i}"),
            };
            assert_eq!(r.record("ns/p", vec![diff], (o, o)), None);
        }
        let s = r.status();
        assert_eq!((s.compared, s.differed), (100, 100));
        assert_eq!(s.diffs.get(&DiffKind::Status), Some(&100));
        assert_eq!(s.first_diffs.len(), 2);
        assert_eq!(s.candidate_failures.get("error"), Some(&34));
    }

    #[test]
    fn a_decided_move_is_made_only_once_kept_and_one_not_kept_is_decided_again() {
        let r = rollout();
        let ok = (Outcome::Ok, Outcome::Ok);
        let decided = (0..10).find_map(|i| r.record(&format!("ns/p{i}"), vec![], ok));
        assert_eq!(decided, Some(Phase::Canary { percent: 10 }));
        assert_eq!(r.phase(), Phase::Shadow, "not made before it is kept");
        assert!(!r.candidate_serves("any"));
        assert_eq!(r.record("ns/p", vec![], ok), None, "one move at a time");
        r.not_moved();
        assert_eq!(
            r.record("ns/p", vec![], ok),
            Some(Phase::Canary { percent: 10 }),
            "decided again once given up"
        );
        r.set_phase(Phase::Canary { percent: 10 });
        assert_eq!(r.phase(), Phase::Canary { percent: 10 });
    }
}
