//! ② The work queue: dedupes keys, never runs one key twice at once, backs off and guards hot loops.
//!
//! The seed's "slips of paper": a key is only `namespace/name`; the worker reads everything else
//! from the cache. Backoff state and the hot-loop guard live here rather than in kube-runtime's
//! `Controller` because its `error_policy` gets no attempt count and its zero-delay requeue spins.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use rand::Rng;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The name of one parent: the only thing a queue entry carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A namespaced key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Why a key was added; the hot-loop guard only forgives changes made by someone else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A watch event for a change Weir did not make (a user, another controller, a relist).
    Outside,
    /// The watch echo of one of Weir's own writes.
    Echo,
    /// The periodic resync.
    Resync,
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
    /// Overall rate of retries and immediate requeues, per second.
    pub qps: f64,
    /// Burst allowed above `qps`.
    pub burst: u32,
    /// Consecutive busy reconciles (a write or `Requeue::Now`) without an outside change
    /// after which a key is flagged as a hot loop.
    pub hot_loop_threshold: u32,
    /// First delay imposed on a flagged key; it doubles up to `max_delay`.
    pub hot_loop_delay: Duration,
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
    /// Ask again after this long.
    After(Duration),
    /// A transient failure: retry with per-key exponential backoff.
    Retry,
    /// A permanent failure: wait for a change; the backoff is reset.
    Failed,
}

/// The hot-loop guard's verdict on one reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotLoop {
    /// Consecutive busy reconciles without an outside change.
    pub streak: u32,
    /// Whether the key is over the threshold (and therefore throttled).
    pub flagged: bool,
}

/// The queue shared by the sources and the workers.
pub struct Queue {
    config: QueueConfig,
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    ready: VecDeque<ObjectKey>,
    queued: HashSet<ObjectKey>,
    processing: HashSet<ObjectKey>,
    /// Keys added while processing: they go back to `ready` when the worker finishes.
    /// The flag says whether an outside change was among them (not only Weir's own echoes).
    dirty: HashMap<ObjectKey, bool>,
    delayed: BinaryHeap<Reverse<(Instant, ObjectKey)>>,
    /// Earliest pending delayed time per key, so a later `add_after` never postpones an earlier one.
    scheduled: HashMap<ObjectKey, Instant>,
    failures: HashMap<ObjectKey, u32>,
    streaks: HashMap<ObjectKey, u32>,
    /// Keys that saw an outside change since their last reconcile started.
    outside: HashSet<ObjectKey>,
    tokens: f64,
    refilled: Option<Instant>,
    shut: bool,
}

impl Queue {
    /// An empty queue.
    pub fn new(config: QueueConfig) -> Self {
        let tokens = f64::from(config.burst);
        Self {
            config,
            state: Mutex::new(State {
                tokens,
                ..State::default()
            }),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a panicking worker; the state itself stays consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a key now; duplicates collapse and a key being processed runs again afterwards.
    /// A key flagged as a hot loop is only delayed further unless the change came from outside.
    pub fn add(&self, key: ObjectKey, cause: Cause) {
        let mut st = self.lock();
        if cause == Cause::Outside {
            st.outside.insert(key.clone());
            st.streaks.remove(&key);
        }
        let backing_off =
            st.failures.get(&key).is_some_and(|n| *n > 0) && st.scheduled.contains_key(&key);
        if cause != Cause::Outside && backing_off {
            // The retry is already scheduled; only an outside change brings it forward.
            return;
        }
        let streak = st.streaks.get(&key).copied().unwrap_or(0);
        if streak >= self.config.hot_loop_threshold {
            let delay = self.hot_loop_delay(streak);
            self.schedule(&mut st, key, delay);
        } else {
            Self::push_ready(&mut st, key, cause == Cause::Outside);
        }
        drop(st);
        self.wake.notify_one();
    }

    /// Adds a key after `delay` (an earlier pending time for the same key wins).
    pub fn add_after(&self, key: ObjectKey, delay: Duration) {
        let mut st = self.lock();
        self.schedule(&mut st, key, delay);
        drop(st);
        self.wake.notify_one();
    }

    fn schedule(&self, st: &mut State, key: ObjectKey, delay: Duration) {
        if delay.is_zero() {
            Self::push_ready(st, key, false);
            return;
        }
        let at = Instant::now() + delay;
        if st.scheduled.get(&key).is_some_and(|&t| t <= at) {
            return;
        }
        st.scheduled.insert(key.clone(), at);
        st.delayed.push(Reverse((at, key)));
    }

    fn push_ready(st: &mut State, key: ObjectKey, outside: bool) {
        if st.processing.contains(&key) {
            *st.dirty.entry(key).or_insert(false) |= outside;
        } else if st.queued.insert(key.clone()) {
            st.ready.push_back(key);
        }
    }

    /// Moves due delayed keys to `ready`; returns when the next one falls due.
    fn promote(st: &mut State, now: Instant) -> Option<Instant> {
        while let Some(Reverse((at, _))) = st.delayed.peek() {
            if *at > now {
                return Some(*at);
            }
            let Some(Reverse((at, key))) = st.delayed.pop() else {
                break;
            };
            if st.scheduled.get(&key) == Some(&at) {
                st.scheduled.remove(&key);
                Self::push_ready(st, key, false);
            }
        }
        None
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
                let due = Self::promote(&mut st, Instant::now());
                if let Some(key) = st.ready.pop_front() {
                    st.queued.remove(&key);
                    st.processing.insert(key.clone());
                    st.outside.remove(&key);
                    if !st.ready.is_empty() {
                        self.wake.notify_one();
                    }
                    return Some(key);
                }
                due
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

    /// Records whether a reconcile was busy (wrote or asked to run again at once) and
    /// returns the hot-loop verdict. Call once per reconcile, before its status write.
    pub fn guard(&self, key: &ObjectKey, busy: bool) -> HotLoop {
        let mut st = self.lock();
        let streak = if !busy || st.outside.contains(key) {
            st.streaks.remove(key);
            0
        } else {
            let s = st.streaks.entry(key.clone()).or_insert(0);
            *s += 1;
            *s
        };
        HotLoop {
            streak,
            flagged: streak >= self.config.hot_loop_threshold,
        }
    }

    /// Releases a key after its reconcile and schedules it again as `finish` says.
    /// Returns the delay chosen, if any (for logs and metrics).
    pub fn finish(&self, key: &ObjectKey, finish: Finish) -> Option<Duration> {
        let mut st = self.lock();
        st.processing.remove(key);
        let streak = st.streaks.get(key).copied().unwrap_or(0);
        let throttled = streak >= self.config.hot_loop_threshold;
        let delay = match finish {
            Finish::Done | Finish::Failed => {
                st.failures.remove(key);
                None
            }
            Finish::After(d) => {
                st.failures.remove(key);
                Some(if throttled {
                    d.max(self.hot_loop_delay(streak))
                } else {
                    d
                })
            }
            Finish::Now => {
                st.failures.remove(key);
                let limit = self.take_token(&mut st);
                Some(if throttled {
                    self.hot_loop_delay(streak).max(limit)
                } else {
                    limit
                })
            }
            Finish::Retry => {
                let n = st.failures.entry(key.clone()).or_insert(0);
                *n += 1;
                let backoff = self.backoff(*n);
                let limit = self.take_token(&mut st);
                Some(backoff.max(limit))
            }
        };
        // A failed reconcile is retried on its backoff schedule: the echo of its own status
        // write must not bring the retry forward; an outside change still does.
        let failed = matches!(finish, Finish::Retry | Finish::Failed);
        match st.dirty.remove(key) {
            Some(outside) if failed && !outside => {}
            Some(_) if throttled => {
                let d = self.hot_loop_delay(streak);
                self.schedule(&mut st, key.clone(), d);
            }
            Some(outside) => Self::push_ready(&mut st, key.clone(), outside),
            None => {}
        }
        if let Some(d) = delay {
            self.schedule(&mut st, key.clone(), d);
        }
        drop(st);
        self.wake.notify_one();
        delay
    }

    /// Failures in a row for `key` (0 after a success).
    pub fn failures(&self, key: &ObjectKey) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Keys waiting to run now (the queue-depth metric).
    pub fn depth(&self) -> usize {
        self.lock().ready.len()
    }

    /// Stops handing out keys; in-flight reconciles finish normally.
    pub fn shutdown(&self) {
        self.lock().shut = true;
        self.wake.notify_waiters();
    }

    /// `base · 2^(n-1)`, capped, with ±jitter.
    fn backoff(&self, n: u32) -> Duration {
        let exp = self
            .config
            .base_delay
            .saturating_mul(2u32.saturating_pow(n.saturating_sub(1).min(40)));
        self.jittered(exp.min(self.config.max_delay))
    }

    fn hot_loop_delay(&self, streak: u32) -> Duration {
        let over = streak
            .saturating_sub(self.config.hot_loop_threshold)
            .min(40);
        let d = self
            .config
            .hot_loop_delay
            .saturating_mul(2u32.saturating_pow(over));
        self.jittered(d.min(self.config.max_delay))
    }

    fn jittered(&self, d: Duration) -> Duration {
        let j = self.config.jitter.clamp(0.0, 0.5);
        if j == 0.0 {
            return d;
        }
        d.mul_f64(rand::rng().random_range(1.0 - j..=1.0 + j))
    }

    /// Token bucket over all retries and immediate requeues: the delay until a token is free.
    fn take_token(&self, st: &mut State) -> Duration {
        let now = Instant::now();
        let elapsed = st
            .refilled
            .map_or(0.0, |t| now.duration_since(t).as_secs_f64());
        st.refilled = Some(now);
        st.tokens = (st.tokens + elapsed * self.config.qps).min(f64::from(self.config.burst));
        st.tokens -= 1.0;
        if st.tokens >= 0.0 || self.config.qps <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-st.tokens / self.config.qps)
        }
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
