//! ② The work queue: dedupes keys, puts changes first, never runs one key twice at once, backs off and guards hot loops.
//!
//! A key is only `namespace/name`; the worker reads everything else from the cache. The
//! [`Queue`] facade combines three mechanisms under one lock, each in its own module as in
//! client-go: `work` (dedupe, one worker per key, "add after"), `limit` (per-key exponential
//! backoff and one token bucket) and `hotloop` (the hot-loop guard). Backoff and the guard live
//! here rather than in kube-runtime's `Controller` because its `error_policy` gets no attempt
//! count and its zero-delay requeue spins.
//!
//! **Every requeue path is throttled.** `Finish::Now` and a *short* `Finish::After(d)` (`d` below
//! [`QueueConfig::min_requeue_after`]) are the same request, "run me again soon": both take a
//! token from the bucket and both make the round busy for the hot-loop guard, whether the round
//! was a reconcile or a finalize and whatever the controller passed to [`Queue::guard`].
//! controller-runtime rate-limits `Requeue: true` but hands `RequeueAfter` straight to `AddAfter`,
//! so a reconciler returning 1 ms spins; we close that gap with a floor of 1 s by default, the
//! hot-loop guard's own first delay: a requeue at least that long already waits as long as a
//! throttled key would, and is left alone (a deliberate poll).
//!
//! **Changes go first.** A key added because something changed (a watch event, a child's event
//! mapped to its parent, a requeue, a retry) waits in the line of changes; a key added by a list
//! ([`Cause::Listed`]: the informer's first list, a relist that found the object unchanged) or
//! by the periodic resync waits behind them, as in controller-runtime's priority queue. Without
//! this, 10,000 listed parents fill one FIFO line and the event that makes a parent Ready (its
//! children's) queues behind all of them: nothing converges before the whole first pass is
//! done. Listed and resynced keys are not starved: while both lines hold keys, one of them is
//! handed out after every [`QueueConfig::changes_before_low`] changes. Dedupe still holds across
//! the lines (a key waits once; a change for a listed key moves it ahead). A parent's create is
//! a change like any other: in a burst of creates, a parent's follow-ups wait behind the parents
//! created after it, which lets the dedupe fold them into one reconcile; putting them first
//! instead made 2,500 Blogs converge later (tests/BENCHMARKS.md, 2026-12-07 20:11 UTC).

mod hotloop;
mod limit;
pub use self::limit::TokenBucket;
mod work;

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use self::hotloop::Guard;
pub use self::hotloop::HotLoop;
use self::limit::Backoff;
use self::work::{Priority, Work};
use crate::runtime::ObjectKey;

/// Why a key was added; the hot-loop guard only forgives changes made by someone else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A watch event for a change Weir did not make (a user, another controller, a relist).
    Outside,
    /// The watch echo of one of Weir's own writes.
    Echo,
    /// The periodic resync.
    Resync,
    /// A list rather than a change: the informer's first list, an object a relist found
    /// unchanged, every cached key handed to a late subscriber. It forgives a hot loop like an
    /// outside change (a relist always did), but waits behind the changes.
    Listed,
}

impl Cause {
    /// Whether the add counts as a change made by someone else (for the hot-loop guard and
    /// for bringing a scheduled retry forward).
    fn outside(self) -> bool {
        matches!(self, Cause::Outside | Cause::Listed)
    }

    /// The line the key waits in: nothing is known to have changed for a list or a resync.
    fn priority(self) -> Priority {
        match self {
            Cause::Outside | Cause::Echo => Priority::Normal,
            Cause::Resync | Cause::Listed => Priority::Low,
        }
    }
}

/// Tuning of the queue; the defaults follow controller-runtime's.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// First retry delay after an error.
    pub base_delay: Duration,
    /// Longest retry delay.
    pub max_delay: Duration,
    /// Relative jitter applied to each retry delay (0.1 = ±10 %).
    pub jitter: f64,
    /// Overall rate of retries and soon requeues, per second.
    pub qps: f64,
    /// Burst allowed above `qps`.
    pub burst: u32,
    /// Consecutive busy reconciles (a write, `Requeue::Now` or a short `Requeue::After`) without
    /// an outside change after which a key is flagged as a hot loop.
    pub hot_loop_threshold: u32,
    /// First delay imposed on a flagged key; it doubles up to `max_delay`.
    pub hot_loop_delay: Duration,
    /// A requeue after less than this is "soon": rate limited and busy, like `Requeue::Now`.
    /// Zero turns the floor off.
    pub min_requeue_after: Duration,
    /// While changes and listed or resynced keys both wait, one of the latter is handed out
    /// after this many changes in a row (so at least 1 in `n + 1` keys handed out then); 0 hands
    /// them out only when no change waits (controller-runtime's rule, which can starve them).
    pub changes_before_low: u32,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            jitter: 0.1,
            qps: 10.0,
            burst: 100,
            hot_loop_threshold: 10,
            hot_loop_delay: Duration::from_secs(1),
            min_requeue_after: Duration::from_secs(1),
            changes_before_low: 9,
        }
    }
}

/// What a worker tells the queue when it finishes a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// Converged or gone: wait for the next event or resync.
    Done,
    /// Ask again soon (`Requeue::Now`); rate limited and hot-loop guarded.
    Now,
    /// Ask again after this long; below `min_requeue_after` it is treated like `Now`.
    After(Duration),
    /// A transient failure: retry with per-key exponential backoff.
    Retry,
    /// A permanent failure: wait for a change; the backoff is reset.
    Failed,
}

/// The queue shared by the sources and the workers.
pub struct Queue {
    config: QueueConfig,
    state: Mutex<State>,
    wake: Notify,
}

struct State {
    work: Work,
    backoff: Backoff,
    bucket: TokenBucket,
    guard: Guard,
    shut: bool,
}

impl Queue {
    /// An empty queue.
    pub fn new(config: QueueConfig) -> Self {
        let c = &config;
        let state = State {
            work: Work::new(c.changes_before_low),
            backoff: Backoff::new(c.base_delay, c.max_delay, c.jitter),
            bucket: TokenBucket::new(c.qps, c.burst),
            guard: Guard::new(
                c.hot_loop_threshold,
                c.hot_loop_delay,
                c.max_delay,
                c.jitter,
            ),
            shut: false,
        };
        Self {
            config,
            state: Mutex::new(state),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a panicking worker; the state itself stays consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a key now, behind the changes if it was only listed or resynced; duplicates
    /// collapse and a key being processed runs again afterwards. Unless the change came from
    /// outside, a key flagged as a hot loop only runs after its throttle delay, and a key
    /// backing off after a failure waits for its retry.
    pub fn add(&self, key: ObjectKey, cause: Cause) {
        let now = Instant::now();
        let mut st = self.lock();
        let outside = cause.outside();
        if outside {
            st.guard.outside(&key);
        } else if st.backoff.failures(&key) > 0 && st.work.is_scheduled(&key) {
            // The retry is already scheduled; only an outside change brings it forward.
            return;
        }
        if st.guard.throttled(&key) {
            let delay = st.guard.delay(&key);
            st.work.add_after(key, delay, now, cause.priority());
        } else {
            st.work.add(key, outside, cause.priority());
        }
        drop(st);
        self.wake.notify_one();
    }

    /// Adds a key after `delay` (an earlier pending time for the same key wins), then with
    /// the changes.
    pub fn add_after(&self, key: ObjectKey, delay: Duration) {
        let now = Instant::now();
        self.lock()
            .work
            .add_after(key, delay, now, Priority::Normal);
        self.wake.notify_one();
    }

    /// An outside change added for `key` was the watch echo of Weir's own write after all (its
    /// event arrived before the write returned): it neither resets the hot-loop streak nor
    /// counts as outside when the key finishes.
    pub fn retract_outside(&self, key: &ObjectKey) {
        let mut st = self.lock();
        st.guard.retract(key);
        st.work.retract_outside(key);
    }

    /// The next key to reconcile, marked as processing; `None` once shut down.
    pub async fn next(&self) -> Option<ObjectKey> {
        loop {
            let notified = self.wake.notified();
            let due = {
                let mut st = self.lock();
                if st.shut {
                    return None;
                }
                if let Some(key) = st.work.pop(Instant::now()) {
                    if st.work.depth() > 0 {
                        self.wake.notify_one();
                    }
                    return Some(key);
                }
                st.work.next_due()
            };
            match due {
                Some(at) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Watches over `key`, just handed out by [`Queue::next`], until its reconcile settles
    /// ([`InFlight::settled`], after [`Queue::finish`]). Dropped before that, the reconcile was
    /// dropped in flight (its workers abandoned when the lease was lost): the key is released
    /// and queued to run again, since nothing it began is known to be done. Otherwise it would
    /// stay "processing" and never be handed out again, whatever events came for it.
    pub fn in_flight(&self, key: ObjectKey) -> InFlight<'_> {
        InFlight {
            queue: self,
            key,
            settled: false,
        }
    }

    /// Releases `key`, whose reconcile was dropped before it settled, and queues it to run again
    /// now; the hot-loop guard forgets the round's judgment (see [`Queue::in_flight`]).
    fn abandon(&self, key: &ObjectKey) {
        let mut st = self.lock();
        st.guard.abandon(key);
        st.work.done(key);
        st.work.add(key.clone(), false, Priority::Normal);
        drop(st);
        self.wake.notify_one();
    }

    /// Judges the reconcile in progress as busy (it wrote, or asks to run again soon: see
    /// [`Queue::requeues_soon`]) or quiet, and returns the hot-loop verdict. Call at most once
    /// per reconcile, before its status write. A reconcile that is not judged here (a finalize,
    /// an early exit) is judged by [`Queue::finish`] from its requeue alone.
    pub fn guard(&self, key: &ObjectKey, busy: bool) -> HotLoop {
        self.lock().guard.verdict(key, busy)
    }

    /// Whether `finish` asks to run again soon (`Now`, or `After` below `min_requeue_after`):
    /// such a reconcile is busy. Passing it in [`Queue::guard`]'s `busy` makes the verdict
    /// shown on the status count it; the queue counts it at [`Queue::finish`] in any case.
    pub fn requeues_soon(&self, finish: Finish) -> bool {
        match finish {
            Finish::Now => true,
            Finish::After(d) => d < self.config.min_requeue_after,
            Finish::Done | Finish::Retry | Finish::Failed => false,
        }
    }

    /// The hot-loop state of `key` as it stands (after [`Queue::finish`], it includes that round).
    pub fn hot_loop(&self, key: &ObjectKey) -> HotLoop {
        self.lock().guard.state(key)
    }

    /// Releases a key after its reconcile and schedules it again as `finish` says.
    /// Returns the delay chosen, if any (for logs and metrics).
    pub fn finish(&self, key: &ObjectKey, finish: Finish) -> Option<Duration> {
        let now = Instant::now();
        let soon = self.requeues_soon(finish);
        let mut st = self.lock();
        st.guard.finish(key, soon);
        let dirty = st.work.done(key);
        let throttled = st.guard.throttled(key);
        let delay = match finish {
            Finish::Done | Finish::Failed => {
                st.backoff.forget(key);
                None
            }
            Finish::Retry => {
                let backoff = st.backoff.failed(key);
                Some(backoff.max(st.bucket.take(now)))
            }
            Finish::Now | Finish::After(_) => {
                st.backoff.forget(key);
                let asked = match finish {
                    Finish::After(d) => d,
                    _ => Duration::ZERO,
                };
                let limit = if soon {
                    st.bucket.take(now)
                } else {
                    Duration::ZERO
                };
                let hot = if throttled {
                    st.guard.delay(key)
                } else {
                    Duration::ZERO
                };
                Some(asked.max(limit).max(hot))
            }
        };
        // A failed reconcile is retried on its backoff schedule: the echo of its own status
        // write must not bring the retry forward; an outside change still does.
        let failed = matches!(finish, Finish::Retry | Finish::Failed);
        match dirty {
            Some(d) if d.outside == 0 && failed => {}
            Some(d) if throttled => {
                let delay = st.guard.delay(key);
                st.work.add_after(key.clone(), delay, now, d.priority);
            }
            // What came meanwhile keeps its line: a resync alone stays behind the changes.
            Some(d) => st.work.add(key.clone(), d.outside > 0, d.priority),
            None => {}
        }
        if let Some(d) = delay {
            // A requeue or a retry the reconcile asked for: with the changes.
            st.work.add_after(key.clone(), d, now, Priority::Normal);
        }
        drop(st);
        self.wake.notify_one();
        delay
    }

    /// Failures in a row for `key` (0 after a success).
    pub fn failures(&self, key: &ObjectKey) -> u32 {
        self.lock().backoff.failures(key)
    }

    /// Keys waiting to run now, changes and listed alike (the queue-depth metric).
    pub fn depth(&self) -> usize {
        self.lock().work.depth()
    }

    /// Stops handing out keys; in-flight reconciles finish normally.
    pub fn shutdown(&self) {
        self.lock().shut = true;
        self.wake.notify_waiters();
    }

    /// Hands out keys again after [`Queue::shutdown`]; the keys added meanwhile are kept.
    pub fn resume(&self) {
        self.lock().shut = false;
        self.wake.notify_waiters();
    }
}

/// A key between [`Queue::next`] and its settled reconcile (see [`Queue::in_flight`]).
pub struct InFlight<'q> {
    queue: &'q Queue,
    key: ObjectKey,
    settled: bool,
}

impl InFlight<'_> {
    /// The key.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The reconcile settled: [`Queue::finish`] has released the key.
    pub fn settled(mut self) {
        self.settled = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.queue.abandon(&self.key);
        }
    }
}

#[cfg(test)]
mod tests;
