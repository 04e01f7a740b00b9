//! The hot-loop guard: a key whose reconciles keep writing or requeueing without an outside change is throttled.
//!
//! A *round* is one reconcile of a key, from the queue handing it out to the worker finishing it.
//! Each round is judged once, busy or quiet: by [`Guard::verdict`] if the controller calls it
//! (with what only it knows: did it write?), otherwise at [`Guard::finish`] by the requeue alone.
//! A round that asks to run again soon is busy whatever the controller said, so a plugin that
//! returns `Requeue::After(0)`, or a finalizer that answers "again after 0 ms", is counted like
//! one that returns `Requeue::Now`.
//!
//! Outside changes are not applied when their event arrives: they are counted as *pending* and
//! reset the streak at the next verdict. Until then a change can be withdrawn
//! ([`Guard::retract`]) when it turns out to be the echo of Weir's own write whose watch event
//! beat the write's own return.

use std::collections::HashMap;
use std::time::Duration;

use super::limit::{doubled, jittered};
use crate::runtime::ObjectKey;

/// The hot-loop guard's verdict on one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotLoop {
    /// Consecutive busy reconciles without an outside change.
    pub streak: u32,
    /// Whether the key is over the threshold (and therefore throttled).
    pub flagged: bool,
}

/// Busy streaks and pending outside changes, per key.
pub struct Guard {
    threshold: u32,
    delay: Duration,
    max_delay: Duration,
    jitter: f64,
    keys: HashMap<ObjectKey, Entry>,
}

#[derive(Default)]
struct Entry {
    streak: u32,
    /// Outside changes since the last verdict, less those retracted.
    outside: u32,
    /// How the controller judged the round in progress, if it did.
    round: Option<Round>,
}

enum Round {
    Busy,
    /// Judged quiet; `before` is the streak the round would have continued.
    Quiet {
        before: u32,
    },
}

impl Guard {
    /// Flags a key after `threshold` busy rounds in a row; a flagged key waits `delay`, doubling
    /// per further busy round up to `max_delay`, each with ±`jitter`.
    pub fn new(threshold: u32, delay: Duration, max_delay: Duration, jitter: f64) -> Self {
        Self {
            threshold,
            delay,
            max_delay,
            jitter,
            keys: HashMap::new(),
        }
    }

    /// Someone else changed `key` (or an object it owns): the next verdict starts a new streak.
    pub fn outside(&mut self, key: &ObjectKey) {
        let e = self.keys.entry(key.clone()).or_default();
        e.outside = e.outside.saturating_add(1);
    }

    /// An outside change reported for `key` was the echo of Weir's own write after all.
    pub fn retract(&mut self, key: &ObjectKey) {
        if let Some(e) = self.keys.get_mut(key) {
            e.outside = e.outside.saturating_sub(1);
        }
        self.tidy(key);
    }

    /// Judges the round in progress: `busy` if it wrote or asks to run again soon.
    pub fn verdict(&mut self, key: &ObjectKey, busy: bool) -> HotLoop {
        let e = self.keys.entry(key.clone()).or_default();
        let before = if e.outside > 0 { 0 } else { e.streak };
        e.outside = 0;
        if busy {
            e.streak = before.saturating_add(1);
            e.round = Some(Round::Busy);
        } else {
            e.streak = 0;
            e.round = Some(Round::Quiet { before });
        }
        let verdict = self.state(key);
        self.tidy(key);
        verdict
    }

    /// Ends the round of `key`; `soon` says whether it asks to run again soon (busy in any case).
    pub fn finish(&mut self, key: &ObjectKey, soon: bool) {
        let round = self.keys.get_mut(key).and_then(|e| e.round.take());
        match round {
            Some(Round::Busy) => {}
            Some(Round::Quiet { before }) => {
                if soon {
                    let e = self.keys.entry(key.clone()).or_default();
                    e.streak = before.saturating_add(1);
                }
            }
            None => {
                self.verdict(key, soon);
                if let Some(e) = self.keys.get_mut(key) {
                    e.round = None;
                }
            }
        }
        self.tidy(key);
    }

    /// Drops the judgment of the round in progress of `key` without ending it: its reconcile was
    /// dropped in flight, so the next round is judged on its own (a busy verdict already given
    /// stays in the streak).
    pub fn abandon(&mut self, key: &ObjectKey) {
        if let Some(e) = self.keys.get_mut(key) {
            e.round = None;
        }
        self.tidy(key);
    }

    /// The streak of `key` as it stands.
    pub fn state(&self, key: &ObjectKey) -> HotLoop {
        let streak = self.keys.get(key).map_or(0, |e| e.streak);
        HotLoop {
            streak,
            flagged: streak >= self.threshold,
        }
    }

    /// Whether `key` is flagged and no outside change has come since.
    pub fn throttled(&self, key: &ObjectKey) -> bool {
        self.keys
            .get(key)
            .is_some_and(|e| e.streak >= self.threshold && e.outside == 0)
    }

    /// The delay imposed on `key` while throttled: `delay · 2^(streak - threshold)`, capped, jittered.
    pub fn delay(&self, key: &ObjectKey) -> Duration {
        let over = self.state(key).streak.saturating_sub(self.threshold);
        jittered(doubled(self.delay, over, self.max_delay), self.jitter)
    }

    fn tidy(&mut self, key: &ObjectKey) {
        if self
            .keys
            .get(key)
            .is_some_and(|e| e.streak == 0 && e.outside == 0 && e.round.is_none())
        {
            self.keys.remove(key);
        }
    }

    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    fn guard(threshold: u32) -> Guard {
        Guard::new(
            threshold,
            Duration::from_secs(1),
            Duration::from_secs(1000),
            0.0,
        )
    }

    #[test]
    fn busy_reconciles_without_outside_change_are_flagged_as_a_hot_loop() {
        let mut g = guard(3);
        let k = key("a");
        let verdicts: Vec<bool> = (0..4).map(|_| g.verdict(&k, true).flagged).collect();
        assert_eq!(verdicts, vec![false, false, true, true]);
        assert!(g.throttled(&k));
        assert!(
            !g.verdict(&k, false).flagged,
            "a quiet reconcile clears the streak"
        );
        assert_eq!(g.verdict(&k, true).streak, 1);
    }

    #[test]
    fn an_outside_change_forgives_the_streak_at_the_next_verdict() {
        let mut g = guard(2);
        let k = key("a");
        g.verdict(&k, true);
        g.verdict(&k, true);
        g.outside(&k);
        assert!(!g.throttled(&k), "an outside change runs at once");
        assert_eq!(g.state(&k).streak, 2, "not yet judged");
        assert_eq!(g.verdict(&k, true).streak, 1, "a new streak");
        assert_eq!(g.verdict(&k, true).streak, 2, "the change counts once");
    }

    #[test]
    fn a_retracted_outside_change_does_not_forgive_the_streak() {
        let mut g = guard(2);
        let k = key("a");
        g.verdict(&k, true);
        g.verdict(&k, true);
        g.outside(&k);
        g.retract(&k);
        assert!(g.throttled(&k));
        assert_eq!(g.verdict(&k, true).streak, 3);
    }

    #[test]
    fn a_round_that_requeues_soon_is_busy_even_when_judged_quiet() {
        let mut g = guard(3);
        let k = key("a");
        for _ in 0..3 {
            assert_eq!(g.verdict(&k, false).streak, 0);
            g.finish(&k, true);
        }
        assert_eq!(g.state(&k).streak, 3);
        assert!(g.throttled(&k));
    }

    #[test]
    fn after_an_abandoned_round_the_next_is_judged_on_its_own() {
        let mut g = guard(3);
        let k = key("a");
        assert_eq!(g.verdict(&k, true).streak, 1);
        // The reconcile was dropped before it finished; the next one is not judged and is quiet.
        g.abandon(&k);
        g.finish(&k, false);
        assert_eq!(
            g.state(&k).streak,
            0,
            "not the abandoned round's busy verdict"
        );
    }

    #[test]
    fn an_unjudged_round_is_judged_by_its_requeue() {
        let mut g = guard(3);
        let k = key("a");
        let streaks: Vec<u32> = (0..4)
            .map(|_| {
                g.finish(&k, true);
                g.state(&k).streak
            })
            .collect();
        assert_eq!(
            streaks,
            vec![1, 2, 3, 4],
            "finalize answering again after 0 ms"
        );
        g.finish(&k, false);
        assert_eq!(g.state(&k).streak, 0, "a round that waits is quiet");
    }

    #[test]
    fn a_busy_round_is_counted_once() {
        let mut g = guard(3);
        let k = key("a");
        g.verdict(&k, true);
        g.finish(&k, true);
        assert_eq!(g.state(&k).streak, 1);
    }

    #[test]
    fn the_throttle_doubles_per_busy_round_beyond_the_threshold_up_to_the_maximum() {
        let mut g = Guard::new(2, Duration::from_secs(1), Duration::from_secs(5), 0.0);
        let k = key("a");
        let secs: Vec<u64> = (0..6)
            .map(|_| {
                g.verdict(&k, true);
                g.delay(&k).as_secs()
            })
            .collect();
        assert_eq!(secs, vec![1, 1, 2, 4, 5, 5]);
    }

    #[test]
    fn a_quiet_key_is_not_remembered() {
        let mut g = guard(2);
        let k = key("a");
        g.verdict(&k, true);
        g.outside(&k);
        g.finish(&k, false);
        assert_eq!(g.tracked(), 1, "streak kept until the next round is judged");
        g.verdict(&k, false);
        g.finish(&k, false);
        assert_eq!(g.tracked(), 0);
    }
}
