//! Recognises the watch echo of the host's own writes, whether the event or the write's return comes first.
//!
//! The hot-loop guard forgives outside changes and counts Weir's own, so each watch event must
//! be told apart. Writers record what they wrote ([`Echoes::wrote`], [`Echoes::deleted`]): the
//! kind, the object and the resourceVersion the API server returned. The watch handler hands
//! each event to [`Echoes::enqueue`], which enqueues the parent as [`Cause::Echo`] if the event
//! carries a recorded write, and as [`Cause::Outside`] otherwise.
//!
//! The watch event often beats the API call's return. Such an event is enqueued as outside (it
//! might be: the parent must run) and remembered; when the write then returns with that
//! resourceVersion, the event is reclassified and its outside change withdrawn with
//! [`Queue::retract_outside`]. That is enough because the queue does not reset the hot-loop
//! streak when an outside change is added but when the key is next judged, and a reconcile
//! awaits its writes: a write's early echo is always retracted before the streak is judged.
//! The classification and the enqueue happen under one lock, so a write returning in between
//! cannot retract an outside change that is not there yet.
//!
//! A reconcile can also run before the cache shows Weir's last write to an object (another
//! object's event woke it): the cache then still holds the version that write was made against.
//! For exactly that cached version, the writer asks what it wrote instead of writing the same
//! thing again (or creating a child it created a moment ago): a child's writer asks whether it
//! applied this very manifest ([`Echoes::applied`], [`Echoes::applied_unseen`]: only the
//! manifest's digest is kept), the status writer gets its last status back
//! ([`Echoes::wrote_over`], [`Echoes::unseen`]: the status is the base of the next one).
//!
//! Memory stays bounded: one slot per object, found by a 16-byte digest of its kind and key, with
//! at most a few entries and one last write (a child's as a 32-byte digest, a status packed as
//! the cache packs an object: a copy of every child a converging host writes would cost as much
//! as the cache itself), writes forgotten
//! after [`WRITE_TTL`], unmatched events after [`EVENT_TTL`], and everything about an object once
//! its deletion is seen. What expired is swept on the next write, event or lookup (every
//! reconcile looks one up), and the map shrinks once the host has converged.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use kube::api::DynamicObject;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::ObjectKey;
use super::cache::{CachedObject, key_of};
use super::queue::{Cause, Queue};
use super::sweeps::Sweeps;

/// How long a write waits for its echo; a later echo counts as an outside change.
pub const WRITE_TTL: Duration = Duration::from_secs(60);
/// How long an event that matched no write waits for a write returning with its resourceVersion.
pub const EVENT_TTL: Duration = Duration::from_secs(10);
/// Writes, and unmatched events, remembered per object (the oldest go first).
const PER_OBJECT: usize = 8;
/// Expired entries are swept at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// One change to an object, as written by Weir or seen in a watch event.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Change {
    /// An apply or patch that produced this resourceVersion.
    Version(String),
    /// A delete.
    Deleted,
}

/// A watch event that matched no write: the outside change it caused, so it can be withdrawn.
struct Seen {
    change: Change,
    at: Instant,
    queue: Weak<Queue>,
    parent: ObjectKey,
}

/// Weir's last write to an object whose echo has not come yet.
struct Last {
    /// The resourceVersion the writer read before writing (`None`: the object was created).
    against: Option<Box<str>>,
    written: Kept,
    at: Instant,
    /// When the first event after the write came (its echo, or a later change): from then on
    /// only a reconcile that read the cache before it can still use the write.
    echoed: Option<Instant>,
}

/// What a [`Last`] keeps of the write.
enum Kept {
    /// The object as written, without its managedFields (nothing compares them), packed:
    /// it is parsed again only in the rare reconcile that reads a cache behind its write.
    /// Boxed: most writes are a child's, which keep only a digest, and a [`Last`] is kept per
    /// object written.
    Object(Box<CachedObject>),
    /// The SHA-256 of the manifest applied: all a child's writer compares.
    Manifest([u8; 32]),
}

/// The SHA-256 of `manifest` as serialised.
fn digest(manifest: &Value) -> [u8; 32] {
    let mut hasher = Sha256::new();
    // Writing into a hasher cannot fail, and a Value always serialises.
    let _ = serde_json::to_writer(&mut hasher, manifest);
    hasher.finalize().into()
}

/// Pushes `entry` onto `deque`, the first one into room for one: most objects have a single
/// write or event in flight (a deque's first push would make room for four).
fn push<T>(deque: &mut VecDeque<T>, entry: T) {
    if deque.capacity() == 0 {
        deque.reserve_exact(1);
    }
    deque.push_back(entry);
}

/// An object's slot in the map: the first 16 bytes of the SHA-256 of its kind, namespace and
/// name. A converging host writes every object it owns within seconds, so the map holds a slot
/// for each: keyed by the strings themselves, each slot would be twice as large and carry three
/// allocations more.
type Id = [u8; 16];

fn id(kind: &str, key: &ObjectKey) -> Id {
    let mut hasher = Sha256::new();
    for part in [
        kind,
        key.namespace.as_deref().unwrap_or_default(),
        &key.name,
    ] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let mut id = [0; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

/// What is remembered of one object.
#[derive(Default)]
struct Trail {
    wrote: VecDeque<(Change, Instant)>,
    seen: VecDeque<Seen>,
    /// Boxed: most trails have none, and every slot of the map is as large as a trail.
    last: Option<Box<Last>>,
}

impl Trail {
    fn is_empty(&self) -> bool {
        self.wrote.is_empty() && self.seen.is_empty() && self.last.is_none()
    }
}

#[derive(Default)]
struct State {
    objects: HashMap<Id, Trail>,
    swept: Sweeps,
}

impl State {
    /// The last write to the object of `kind` with `key` if it was made against `cached`.
    fn last(&self, kind: &str, key: &ObjectKey, cached: Option<&str>) -> Option<&Last> {
        let last = self.objects.get(&id(kind, key))?.last.as_deref()?;
        (last.against.as_deref() == cached).then_some(last)
    }

    /// Drops expired entries, at most once per [`SWEEP_EVERY`].
    fn sweep(&mut self, now: Instant) {
        if !self.swept.due(now.into_std(), SWEEP_EVERY) {
            return;
        }
        self.objects.retain(|_, trail| {
            trail
                .wrote
                .retain(|(_, at)| now.saturating_duration_since(*at) < WRITE_TTL);
            trail
                .seen
                .retain(|s| now.saturating_duration_since(s.at) < EVENT_TTL);
            if trail.last.as_ref().is_some_and(|l| {
                now.saturating_duration_since(l.at) >= WRITE_TTL
                    || l.echoed
                        .is_some_and(|e| now.saturating_duration_since(e) >= EVENT_TTL)
            }) {
                trail.last = None;
            }
            !trail.is_empty()
        });
        // A converging host fills the map; a converged one needs a fraction of it.
        if self.objects.capacity() > 4 * self.objects.len().max(64) {
            self.objects.shrink_to_fit();
        }
    }
}

/// Weir's own recent writes and the unmatched events that may yet turn out to be their echoes,
/// by kind and object key. One per controller, shared by its writers and its watch targets.
#[derive(Default)]
pub struct Echoes {
    state: Mutex<State>,
}

impl Echoes {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a panicking writer; the maps themselves stay consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Weir wrote `obj` (of `kind`), which now has the returned resourceVersion.
    pub fn wrote(&self, kind: &str, obj: &DynamicObject) {
        if let Some(rv) = obj.metadata.resource_version.clone() {
            self.record(kind, &key_of(obj), Change::Version(rv), Instant::now());
        }
    }

    /// [`Echoes::wrote`], and `obj` is kept as Weir's last write to it (for [`WRITE_TTL`], or
    /// until the object's deletion is seen): `against` is the resourceVersion the writer read
    /// (its cached copy), `None` for a create.
    pub fn wrote_over(&self, kind: &str, against: Option<&str>, obj: &DynamicObject) {
        let mut written = obj.clone();
        written.metadata.managed_fields = None;
        let kept = match CachedObject::from_object(&written) {
            Ok(written) => Some(Kept::Object(Box::new(written))),
            Err(error) => {
                // Not kept: a reconcile behind the cache writes the same thing once more.
                let key = key_of(obj);
                tracing::debug!(%kind, object = %key, %error, "the host's last write could not be kept");
                None
            }
        };
        self.keep(kind, against, obj, kept);
    }

    /// [`Echoes::wrote`] for `obj`, which `manifest` was just applied as (or created from):
    /// the manifest's digest is kept as Weir's last write, as [`Echoes::wrote_over`] keeps an
    /// object, for [`Echoes::applied_unseen`].
    pub fn applied(
        &self,
        kind: &str,
        against: Option<&str>,
        obj: &DynamicObject,
        manifest: &Value,
    ) {
        self.keep(kind, against, obj, Some(Kept::Manifest(digest(manifest))));
    }

    fn keep(&self, kind: &str, against: Option<&str>, obj: &DynamicObject, kept: Option<Kept>) {
        let Some(rv) = obj.metadata.resource_version.clone() else {
            return;
        };
        let now = Instant::now();
        let key = key_of(obj);
        self.record(kind, &key, Change::Version(rv), now);
        // Kept past its echo too: a reconcile may still hold the cached object from before it.
        let mut st = self.lock();
        st.objects.entry(id(kind, &key)).or_default().last = kept.map(|written| {
            Box::new(Last {
                against: against.map(Box::from),
                written,
                at: now,
                echoed: None,
            })
        });
    }

    /// Weir's last write to the object of `kind` with `key` when the cache still shows the
    /// version that write was made against (`cached`, the cached resourceVersion; `None` when
    /// the cache holds no such object): what the object is now, as far as Weir knows. A later
    /// change by anyone else brings its own event, and a reconcile on the cache that shows it.
    pub fn unseen(
        &self,
        kind: &str,
        key: &ObjectKey,
        cached: Option<&str>,
    ) -> Option<DynamicObject> {
        self.unseen_at(kind, key, cached, Instant::now())
    }

    fn unseen_at(
        &self,
        kind: &str,
        key: &ObjectKey,
        cached: Option<&str>,
        now: Instant,
    ) -> Option<DynamicObject> {
        let packed = {
            let mut st = self.lock();
            // Asked on every reconcile: a quiet host forgets here what expired.
            st.sweep(now);
            let last = st.last(kind, key, cached)?;
            let Kept::Object(written) = &last.written else {
                return None;
            };
            written.json()
        };
        // Packed from an object that serialised: parsing it back only fails on a host bug, and
        // then the writer just writes again.
        serde_json::from_str(&packed).ok()
    }

    /// Whether Weir's last write to the object of `kind` with `key` applied exactly `manifest`
    /// while the cache still shows the version that write was made against (`cached`, as for
    /// [`Echoes::unseen`]): the write need not be made again.
    pub fn applied_unseen(
        &self,
        kind: &str,
        key: &ObjectKey,
        cached: Option<&str>,
        manifest: &Value,
    ) -> bool {
        let kept = {
            let mut st = self.lock();
            st.sweep(Instant::now());
            match st.last(kind, key, cached).map(|l| &l.written) {
                Some(Kept::Manifest(kept)) => *kept,
                _ => return false,
            }
        };
        kept == digest(manifest)
    }

    /// Weir deleted (or is deleting) the object of `kind` with `key`.
    pub fn deleted(&self, kind: &str, key: &ObjectKey) {
        self.record(kind, key, Change::Deleted, Instant::now());
    }

    /// Enqueues `parent` in `queue` for a watch event on `obj` (of `kind`; `deleted` for a
    /// delete event), as the echo of Weir's own write or as an outside change. Returns the cause.
    pub fn enqueue(
        &self,
        queue: &Arc<Queue>,
        parent: ObjectKey,
        kind: &str,
        obj: &CachedObject,
        deleted: bool,
    ) -> Cause {
        self.observe(queue, parent, kind, obj, deleted, Instant::now())
    }

    fn record(&self, kind: &str, key: &ObjectKey, change: Change, now: Instant) {
        let mut st = self.lock();
        st.sweep(now);
        let id = id(kind, key);
        let trail = st.objects.entry(id).or_default();
        if let Some(i) = trail.seen.iter().position(|s| s.change == change) {
            // The echo came first and was enqueued as outside: withdraw that.
            if let Some(seen) = trail.seen.remove(i)
                && let Some(queue) = seen.queue.upgrade()
            {
                queue.retract_outside(&seen.parent);
            }
            if change == Change::Deleted || trail.is_empty() {
                st.objects.remove(&id);
            }
            return;
        }
        if change == Change::Deleted {
            trail.last = None;
        }
        push(&mut trail.wrote, (change, now));
        if trail.wrote.len() > PER_OBJECT {
            trail.wrote.pop_front();
        }
    }

    fn observe(
        &self,
        queue: &Arc<Queue>,
        parent: ObjectKey,
        kind: &str,
        obj: &CachedObject,
        deleted: bool,
        now: Instant,
    ) -> Cause {
        let change = if deleted {
            Some(Change::Deleted)
        } else {
            obj.resource_version()
                .map(|rv| Change::Version(rv.to_owned()))
        };
        let mut st = self.lock();
        st.sweep(now);
        let id = id(kind, &obj.key());
        let trail = st.objects.entry(id).or_default();
        let written = change
            .as_ref()
            .and_then(|c| trail.wrote.iter().position(|(w, _)| w == c));
        // The last write stays a little after its echo comes (a reconcile may still hold the
        // cached object from before it, and `unseen` answers only for that version anyway).
        if let Some(last) = trail.last.as_mut().filter(|l| l.echoed.is_none()) {
            last.echoed = Some(now);
        }
        let cause = if let Some(i) = written {
            // Consumed by its echo, with any older write whose echo will not come now.
            trail.wrote.drain(..=i);
            Cause::Echo
        } else {
            if let Some(change) = change {
                push(
                    &mut trail.seen,
                    Seen {
                        change,
                        at: now,
                        queue: Arc::downgrade(queue),
                        parent: parent.clone(),
                    },
                );
                if trail.seen.len() > PER_OBJECT {
                    trail.seen.pop_front();
                }
            }
            Cause::Outside
        };
        if deleted {
            // The object is gone: none of its versions will echo any more. Only an unmatched
            // delete is kept, for Weir's own delete call returning late.
            trail.wrote.clear();
            trail.last = None;
            trail.seen.retain(|s| s.change == Change::Deleted);
        }
        if trail.is_empty() {
            st.objects.remove(&id);
        }
        // Under the lock: a write returning now retracts after this add, never before it.
        queue.add(parent, cause);
        cause
    }

    /// Heap bytes of the last writes kept.
    #[cfg(test)]
    fn kept_bytes(&self) -> usize {
        self.lock()
            .objects
            .values()
            .filter_map(|t| t.last.as_ref())
            .map(|l| match &l.written {
                Kept::Object(written) => written.footprint(),
                Kept::Manifest(digest) => digest.len(),
            })
            .sum()
    }

    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.lock().objects.capacity()
    }

    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.lock()
            .objects
            .values()
            .map(|t| t.wrote.len() + t.seen.len())
            .sum()
    }
}

#[cfg(test)]
#[path = "echoes_tests.rs"]
mod tests;
