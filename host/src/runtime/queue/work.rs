//! The work queue: dedupes keys, never hands out one key twice at once, holds keys added for later.
//!
//! client-go's work queue and delaying queue in one plain struct: no clock, no locking and no
//! waking (the [`Queue`](super::Queue) facade does those), so each rule can be tested alone.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use crate::runtime::ObjectKey;

/// Keys waiting now, keys waiting for a time, and keys being processed.
#[derive(Default)]
pub struct Work {
    ready: VecDeque<ObjectKey>,
    queued: HashSet<ObjectKey>,
    processing: HashSet<ObjectKey>,
    /// Keys added while processing: they go back to `ready` when the worker is done. The count
    /// is of outside changes among those adds (0: only Weir's own echoes or a resync).
    dirty: HashMap<ObjectKey, u32>,
    delayed: BinaryHeap<Reverse<(Instant, ObjectKey)>>,
    /// Earliest pending time per key, so a later `add_after` never postpones an earlier one.
    scheduled: HashMap<ObjectKey, Instant>,
}

impl Work {
    /// Adds a key to run now. Duplicates collapse; a key being processed is marked dirty and
    /// runs again once done. `outside` says whether an outside change caused the add.
    pub fn add(&mut self, key: ObjectKey, outside: bool) {
        if self.processing.contains(&key) {
            *self.dirty.entry(key).or_insert(0) += u32::from(outside);
        } else if self.queued.insert(key.clone()) {
            self.ready.push_back(key);
        }
    }

    /// Adds a key to run `delay` after `now`; an earlier pending time for the same key wins.
    pub fn add_after(&mut self, key: ObjectKey, delay: Duration, now: Instant) {
        if delay.is_zero() {
            self.add(key, false);
            return;
        }
        let at = now + delay;
        if self.scheduled.get(&key).is_some_and(|&t| t <= at) {
            return;
        }
        self.scheduled.insert(key.clone(), at);
        self.delayed.push(Reverse((at, key)));
    }

    /// An outside change added for `key` was Weir's own echo after all: while the key is being
    /// processed, it no longer counts as outside when the key is done.
    pub fn retract_outside(&mut self, key: &ObjectKey) {
        if let Some(n) = self.dirty.get_mut(key) {
            *n = n.saturating_sub(1);
        }
    }

    /// The next key to process at `now` (delayed keys that fell due first join the line),
    /// marked as processing.
    pub fn pop(&mut self, now: Instant) -> Option<ObjectKey> {
        self.promote(now);
        let key = self.ready.pop_front()?;
        self.queued.remove(&key);
        self.processing.insert(key.clone());
        Some(key)
    }

    /// When the earliest delayed key falls due (possibly early: a superseded entry only wakes
    /// a worker for nothing).
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.peek().map(|Reverse((at, _))| *at)
    }

    /// Releases a processed key. `Some(outside changes)` if it was added meanwhile (it is not
    /// re-added: the caller decides when it runs again), `None` if not.
    pub fn done(&mut self, key: &ObjectKey) -> Option<u32> {
        self.processing.remove(key);
        self.dirty.remove(key)
    }

    /// Whether `key` waits for a time.
    pub fn is_scheduled(&self, key: &ObjectKey) -> bool {
        self.scheduled.contains_key(key)
    }

    /// Keys waiting to run now.
    pub fn depth(&self) -> usize {
        self.ready.len()
    }

    /// Moves delayed keys due at `now` to `ready`.
    fn promote(&mut self, now: Instant) {
        while self
            .delayed
            .peek()
            .is_some_and(|Reverse((at, _))| *at <= now)
        {
            let Some(Reverse((at, key))) = self.delayed.pop() else {
                break;
            };
            if self.scheduled.get(&key) == Some(&at) {
                self.scheduled.remove(&key);
                self.add(key, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn duplicate_keys_collapse_into_one_entry() {
        let mut w = Work::default();
        let now = Instant::now();
        for _ in 0..100 {
            w.add(key("a"), true);
        }
        w.add(key("b"), true);
        assert_eq!(w.depth(), 2);
        assert_eq!(w.pop(now), Some(key("a")));
        assert_eq!(w.pop(now), Some(key("b")));
        assert_eq!(w.pop(now), None);
    }

    #[test]
    fn a_key_being_processed_is_not_handed_out_again_until_done() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add(key("a"), true);
        assert_eq!(w.pop(now), Some(key("a")));
        w.add(key("a"), false);
        w.add(key("a"), true);
        assert_eq!(w.pop(now), None, "must not run concurrently");
        assert_eq!(w.done(&key("a")), Some(1), "one outside change meanwhile");
        assert_eq!(w.done(&key("a")), None, "released once");
    }

    #[test]
    fn a_retracted_outside_change_leaves_the_key_dirty_but_not_outside() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add(key("a"), true);
        let _ = w.pop(now);
        w.add(key("a"), true);
        w.retract_outside(&key("a"));
        assert_eq!(w.done(&key("a")), Some(0));
    }

    #[test]
    fn a_delayed_key_falls_due_and_is_handed_out() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add_after(key("a"), 2 * SEC, now);
        assert!(w.is_scheduled(&key("a")));
        assert_eq!(w.pop(now + SEC), None);
        assert_eq!(w.next_due(), Some(now + 2 * SEC));
        assert_eq!(w.pop(now + 2 * SEC), Some(key("a")));
        assert!(!w.is_scheduled(&key("a")));
    }

    #[test]
    fn an_earlier_schedule_is_not_postponed_by_a_later_one() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add_after(key("a"), SEC, now);
        w.add_after(key("a"), 3600 * SEC, now);
        assert_eq!(w.pop(now + SEC), Some(key("a")));
        let _ = w.done(&key("a"));
        assert_eq!(w.pop(now + 7200 * SEC), None, "the later entry was dropped");
    }

    #[test]
    fn a_later_earlier_schedule_brings_the_key_forward() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add_after(key("a"), 3600 * SEC, now);
        w.add_after(key("a"), SEC, now);
        assert_eq!(w.pop(now + SEC), Some(key("a")));
        let _ = w.done(&key("a"));
        assert_eq!(
            w.pop(now + 3600 * SEC),
            None,
            "the superseded entry does not run the key twice"
        );
    }

    #[test]
    fn a_zero_delay_is_an_add_now() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add_after(key("a"), Duration::ZERO, now);
        assert_eq!(w.depth(), 1);
        assert!(!w.is_scheduled(&key("a")));
    }

    #[test]
    fn a_delayed_key_falling_due_while_processing_runs_again_afterwards() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add(key("a"), true);
        w.add_after(key("a"), SEC, now);
        assert_eq!(w.pop(now), Some(key("a")));
        assert_eq!(w.pop(now + SEC), None, "still processing");
        assert_eq!(w.done(&key("a")), Some(0), "marked dirty by the due entry");
    }
}
