//! The work queue: dedupes keys, never hands out one key twice at once, holds keys added for later.
//!
//! client-go's work queue and delaying queue in one plain struct: no clock, no locking and no
//! waking (the [`Queue`](super::Queue) facade does those), so each rule can be tested alone.
//!
//! Keys wait in two lines, as in controller-runtime's priority queue: [`Priority::Normal`] for
//! changes, [`Priority::Low`] for keys that only come from a list (the informer's first list, a
//! relist that found the object unchanged) or the periodic resync. Changes go first, so the
//! follow-up of a reconcile (its children's events) does not wait behind thousands of listed
//! keys. Low keys are not starved: while both lines hold keys, one low key is handed out after
//! every `changes_before_low` changes (0: only when no change waits, controller-runtime's rule).
//! A key waits in one line at a time; added again at a higher priority it moves to the higher
//! line (its old place is left behind as a stale entry, skipped when reached).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use crate::runtime::ObjectKey;

/// Which line a key waits in; changes go first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Listed or resynced: nothing known to have changed.
    Low,
    /// A change, a requeue or a retry.
    Normal,
}

/// What was added for a key while it was being processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirty {
    /// Outside changes among those adds (0: only Weir's own echoes, a list or a resync).
    pub outside: u32,
    /// The highest priority among those adds.
    pub priority: Priority,
}

/// Keys waiting now (in two lines), keys waiting for a time, and keys being processed.
pub struct Work {
    /// Changes handed out in a row while low keys wait, before one low key goes.
    changes_before_low: u32,
    /// Changes handed out since the last low key while low keys waited.
    changes_in_a_row: u32,
    normal: VecDeque<(u64, ObjectKey)>,
    low: VecDeque<(u64, ObjectKey)>,
    /// Each waiting key's line and the sequence number of its live entry there; an entry of a
    /// line that does not match is stale (the key moved up, or was handed out and came back).
    queued: HashMap<ObjectKey, (Priority, u64)>,
    next_seq: u64,
    processing: HashSet<ObjectKey>,
    /// Keys added while processing: they go back to a line when the worker is done.
    dirty: HashMap<ObjectKey, Dirty>,
    delayed: BinaryHeap<Reverse<(Instant, ObjectKey)>>,
    /// Earliest pending time per key (so a later `add_after` never postpones an earlier one) and
    /// the line it joins then.
    scheduled: HashMap<ObjectKey, (Instant, Priority)>,
}

impl Default for Work {
    fn default() -> Self {
        Self::new(super::QueueConfig::default().changes_before_low)
    }
}

impl Work {
    /// An empty queue handing out one low key after every `changes_before_low` changes while
    /// both lines hold keys (0: low keys only when no change waits).
    pub fn new(changes_before_low: u32) -> Self {
        Self {
            changes_before_low,
            changes_in_a_row: 0,
            normal: VecDeque::new(),
            low: VecDeque::new(),
            queued: HashMap::new(),
            next_seq: 0,
            processing: HashSet::new(),
            dirty: HashMap::new(),
            delayed: BinaryHeap::new(),
            scheduled: HashMap::new(),
        }
    }

    /// Adds a key to run now in `priority`'s line. Duplicates collapse (a key already waiting
    /// keeps its place, or moves to the changes' line if this add is a change); a key being
    /// processed is marked dirty and runs again once done. `outside` says whether an outside
    /// change caused the add.
    pub fn add(&mut self, key: ObjectKey, outside: bool, priority: Priority) {
        if self.processing.contains(&key) {
            let dirty = self.dirty.entry(key).or_insert(Dirty {
                outside: 0,
                priority,
            });
            dirty.outside += u32::from(outside);
            dirty.priority = dirty.priority.max(priority);
            return;
        }
        if self
            .queued
            .get(&key)
            .is_some_and(|(waiting, _)| *waiting >= priority)
        {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queued.insert(key.clone(), (priority, seq));
        match priority {
            Priority::Normal => self.normal.push_back((seq, key)),
            Priority::Low => self.low.push_back((seq, key)),
        }
    }

    /// Adds a key to run `delay` after `now`, then in `priority`'s line; an earlier pending time
    /// for the same key wins (at the higher of the two priorities).
    pub fn add_after(&mut self, key: ObjectKey, delay: Duration, now: Instant, priority: Priority) {
        if delay.is_zero() {
            self.add(key, false, priority);
            return;
        }
        let at = now + delay;
        if let Some((t, p)) = self.scheduled.get_mut(&key)
            && *t <= at
        {
            *p = (*p).max(priority);
            return;
        }
        self.scheduled.insert(key.clone(), (at, priority));
        self.delayed.push(Reverse((at, key)));
    }

    /// An outside change added for `key` was Weir's own echo after all: while the key is being
    /// processed, it no longer counts as outside when the key is done.
    pub fn retract_outside(&mut self, key: &ObjectKey) {
        if let Some(d) = self.dirty.get_mut(key) {
            d.outside = d.outside.saturating_sub(1);
        }
    }

    /// The next key to process at `now` (delayed keys that fell due first join their line),
    /// marked as processing: a change, unless low keys have waited through
    /// `changes_before_low` changes in a row.
    pub fn pop(&mut self, now: Instant) -> Option<ObjectKey> {
        self.promote(now);
        let low_waits = self.has_live(Priority::Low);
        let low_turn = low_waits
            && self.changes_before_low > 0
            && self.changes_in_a_row >= self.changes_before_low;
        let (key, from) = if low_turn {
            self.pop_line(Priority::Low)
                .map(|k| (k, Priority::Low))
                .or_else(|| {
                    self.pop_line(Priority::Normal)
                        .map(|k| (k, Priority::Normal))
                })
        } else {
            self.pop_line(Priority::Normal)
                .map(|k| (k, Priority::Normal))
                .or_else(|| self.pop_line(Priority::Low).map(|k| (k, Priority::Low)))
        }?;
        match from {
            Priority::Low => self.changes_in_a_row = 0,
            Priority::Normal if low_waits => self.changes_in_a_row += 1,
            Priority::Normal => self.changes_in_a_row = 0,
        }
        self.processing.insert(key.clone());
        Some(key)
    }

    /// When the earliest delayed key falls due (possibly early: a superseded entry only wakes
    /// a worker for nothing).
    pub fn next_due(&self) -> Option<Instant> {
        self.delayed.peek().map(|Reverse((at, _))| *at)
    }

    /// Releases a processed key. `Some` if it was added meanwhile (it is not re-added: the
    /// caller decides when it runs again), `None` if not.
    pub fn done(&mut self, key: &ObjectKey) -> Option<Dirty> {
        self.processing.remove(key);
        self.dirty.remove(key)
    }

    /// Whether `key` waits for a time.
    pub fn is_scheduled(&self, key: &ObjectKey) -> bool {
        self.scheduled.contains_key(key)
    }

    /// Keys waiting to run now, in both lines.
    pub fn depth(&self) -> usize {
        self.queued.len()
    }

    /// Whether `priority`'s line holds a live entry (dropping the stale ones at its front).
    fn has_live(&mut self, priority: Priority) -> bool {
        let line = match priority {
            Priority::Normal => &mut self.normal,
            Priority::Low => &mut self.low,
        };
        while let Some((seq, key)) = line.front() {
            if self.queued.get(key) == Some(&(priority, *seq)) {
                return true;
            }
            line.pop_front();
        }
        false
    }

    /// Takes the first live key of `priority`'s line off the queue.
    fn pop_line(&mut self, priority: Priority) -> Option<ObjectKey> {
        if !self.has_live(priority) {
            return None;
        }
        let line = match priority {
            Priority::Normal => &mut self.normal,
            Priority::Low => &mut self.low,
        };
        let (_, key) = line.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }

    /// Moves delayed keys due at `now` to their line.
    fn promote(&mut self, now: Instant) {
        while self
            .delayed
            .peek()
            .is_some_and(|Reverse((at, _))| *at <= now)
        {
            let Some(Reverse((at, key))) = self.delayed.pop() else {
                break;
            };
            if let Some(&(t, priority)) = self.scheduled.get(&key)
                && t == at
            {
                self.scheduled.remove(&key);
                self.add(key, false, priority);
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
    const N: Priority = Priority::Normal;
    const L: Priority = Priority::Low;

    fn pops(w: &mut Work, n: usize) -> Vec<String> {
        let now = Instant::now();
        (0..n).filter_map(|_| w.pop(now)).map(|k| k.name).collect()
    }

    #[test]
    fn duplicate_keys_collapse_into_one_entry() {
        let mut w = Work::default();
        let now = Instant::now();
        for _ in 0..100 {
            w.add(key("a"), true, N);
        }
        w.add(key("b"), true, N);
        assert_eq!(w.depth(), 2);
        assert_eq!(w.pop(now), Some(key("a")));
        assert_eq!(w.pop(now), Some(key("b")));
        assert_eq!(w.pop(now), None);
    }

    #[test]
    fn a_key_being_processed_is_not_handed_out_again_until_done() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add(key("a"), true, N);
        assert_eq!(w.pop(now), Some(key("a")));
        w.add(key("a"), false, N);
        w.add(key("a"), true, N);
        assert_eq!(w.pop(now), None, "must not run concurrently");
        assert_eq!(
            w.done(&key("a")).map(|d| d.outside),
            Some(1),
            "one outside change meanwhile"
        );
        assert_eq!(w.done(&key("a")), None, "released once");
    }

    #[test]
    fn a_retracted_outside_change_leaves_the_key_dirty_but_not_outside() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add(key("a"), true, N);
        let _ = w.pop(now);
        w.add(key("a"), true, N);
        w.retract_outside(&key("a"));
        assert_eq!(w.done(&key("a")).map(|d| d.outside), Some(0));
    }

    #[test]
    fn a_delayed_key_falls_due_and_is_handed_out() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add_after(key("a"), 2 * SEC, now, N);
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
        w.add_after(key("a"), SEC, now, N);
        w.add_after(key("a"), 3600 * SEC, now, N);
        assert_eq!(w.pop(now + SEC), Some(key("a")));
        let _ = w.done(&key("a"));
        assert_eq!(w.pop(now + 7200 * SEC), None, "the later entry was dropped");
    }

    #[test]
    fn a_later_earlier_schedule_brings_the_key_forward() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add_after(key("a"), 3600 * SEC, now, N);
        w.add_after(key("a"), SEC, now, N);
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
        w.add_after(key("a"), Duration::ZERO, now, N);
        assert_eq!(w.depth(), 1);
        assert!(!w.is_scheduled(&key("a")));
    }

    #[test]
    fn a_delayed_key_falling_due_while_processing_runs_again_afterwards() {
        let mut w = Work::default();
        let now = Instant::now();
        w.add(key("a"), true, N);
        w.add_after(key("a"), SEC, now, N);
        assert_eq!(w.pop(now), Some(key("a")));
        assert_eq!(w.pop(now + SEC), None, "still processing");
        assert_eq!(
            w.done(&key("a")).map(|d| d.outside),
            Some(0),
            "marked dirty by the due entry"
        );
    }

    #[test]
    fn a_change_is_handed_out_before_keys_that_were_only_listed() {
        let mut w = Work::new(0);
        for name in ["l1", "l2", "l3"] {
            w.add(key(name), true, L);
        }
        w.add(key("c"), true, N);
        assert_eq!(w.depth(), 4);
        assert_eq!(pops(&mut w, 5), ["c", "l1", "l2", "l3"]);
    }

    #[test]
    fn a_listed_key_added_again_as_a_change_moves_ahead_once() {
        let mut w = Work::new(0);
        for name in ["l1", "l2", "l3"] {
            w.add(key(name), true, L);
        }
        w.add(key("l3"), true, N);
        assert_eq!(w.depth(), 3, "still one entry per key");
        assert_eq!(
            pops(&mut w, 5),
            ["l3", "l1", "l2"],
            "its old place is skipped"
        );
    }

    #[test]
    fn a_change_queued_again_by_a_resync_keeps_its_place_among_changes() {
        let mut w = Work::new(0);
        w.add(key("c1"), true, N);
        w.add(key("c2"), true, N);
        w.add(key("c1"), false, L);
        w.add(key("l"), false, L);
        assert_eq!(pops(&mut w, 5), ["c1", "c2", "l"]);
    }

    #[test]
    fn a_key_handed_out_and_listed_again_waits_at_the_back_of_the_low_line() {
        let mut w = Work::new(0);
        w.add(key("a"), true, L);
        w.add(key("b"), true, L);
        w.add(key("a"), true, N);
        assert_eq!(pops(&mut w, 1), ["a"]);
        assert!(w.done(&key("a")).is_none());
        // The stale low entry of "a" sits before "b": it must not count for the new add.
        w.add(key("a"), false, L);
        assert_eq!(pops(&mut w, 5), ["b", "a"]);
    }

    #[test]
    fn low_keys_get_one_turn_after_every_n_changes_while_changes_keep_coming() {
        let mut w = Work::new(2);
        for name in ["l1", "l2"] {
            w.add(key(name), false, L);
        }
        for name in ["c1", "c2", "c3", "c4", "c5"] {
            w.add(key(name), true, N);
        }
        assert_eq!(pops(&mut w, 8), ["c1", "c2", "l1", "c3", "c4", "l2", "c5"]);
    }

    #[test]
    fn changes_handed_out_while_no_low_key_waits_do_not_earn_low_keys_a_turn() {
        let mut w = Work::new(2);
        for name in ["c1", "c2", "c3"] {
            w.add(key(name), true, N);
        }
        assert_eq!(pops(&mut w, 2), ["c1", "c2"]);
        w.add(key("l"), false, L);
        w.add(key("c4"), true, N);
        assert_eq!(pops(&mut w, 5), ["c3", "c4", "l"]);
    }

    #[test]
    fn a_key_processed_while_a_change_and_a_resync_came_runs_again_as_a_change() {
        let mut w = Work::new(0);
        w.add(key("a"), true, L);
        assert_eq!(pops(&mut w, 1), ["a"]);
        w.add(key("a"), false, L);
        assert_eq!(
            w.done(&key("a")),
            Some(Dirty {
                outside: 0,
                priority: L
            })
        );
        w.add(key("b"), true, L);
        assert_eq!(pops(&mut w, 1), ["b"]);
        w.add(key("b"), false, L);
        w.add(key("b"), false, N);
        assert_eq!(w.done(&key("b")).map(|d| d.priority), Some(N));
    }

    #[test]
    fn a_delayed_key_joins_the_line_it_was_scheduled_for() {
        let mut w = Work::new(0);
        let now = Instant::now();
        w.add(key("l"), false, L);
        w.add_after(key("d"), SEC, now, N);
        w.add_after(key("e"), SEC, now, L);
        assert_eq!(
            w.pop(now + SEC),
            Some(key("d")),
            "the due change goes first"
        );
        assert_eq!(w.pop(now + SEC), Some(key("l")));
        assert_eq!(w.pop(now + SEC), Some(key("e")));
    }

    #[test]
    fn an_earlier_schedule_kept_takes_the_higher_priority_of_a_later_one() {
        let mut w = Work::new(0);
        let now = Instant::now();
        w.add(key("l"), false, L);
        w.add_after(key("d"), SEC, now, L);
        w.add_after(key("d"), 60 * SEC, now, N);
        assert_eq!(w.pop(now + SEC), Some(key("d")));
    }
}
