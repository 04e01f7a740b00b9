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

#[test]
fn a_rollout_tells_its_rollback_and_only_that() {
    let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = told.clone();
    let r = rollout().on_rolled_back(Box::new(move |reason| {
        sink.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(reason.to_owned());
    }));
    r.set_phase(Phase::Canary { percent: 10 });
    assert!(
        told.lock().unwrap().is_empty(),
        "a step forward is not told"
    );
    r.set_phase(Phase::RolledBack {
        reason: "aborted by an operator in Canary 10%".into(),
    });
    assert_eq!(
        *told.lock().unwrap(),
        ["aborted by an operator in Canary 10%"]
    );
}
