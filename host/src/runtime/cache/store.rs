//! One watched kind's store: its objects by key, the owner index by controller UID, and (for kinds selected by label) the label index.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use hashbrown::{Equivalent, HashTable};
use kube::api::DynamicObject;
use kube::core::TypeMeta;
use kube::runtime::watcher;
use tokio::sync::watch;

use super::entry::{Entry, KeyRef, Set};
use super::labels::LabelIndex;
use super::object::{CachedObject, Packing};
use crate::metrics::{Metrics, StoreGauges};
use crate::plugin::{LabelSelector, ResourceKind};
use crate::runtime::ObjectKey;
use crate::runtime::cap::Cap;

/// The key of a decoded object.
pub fn key_of(obj: &DynamicObject) -> ObjectKey {
    ObjectKey {
        namespace: obj.metadata.namespace.clone(),
        name: obj.metadata.name.clone().unwrap_or_default(),
    }
}

/// The children of one controller in the owner index; its UID is read from them.
enum Owned {
    /// The common case: one child of this kind.
    One(Entry),
    /// Several (never empty).
    Many(Box<Set>),
}

impl Owned {
    fn uid(&self) -> Option<&str> {
        match self {
            Owned::One(e) => e.0.controller_uid(),
            Owned::Many(set) => set.iter().next().and_then(|e| e.0.controller_uid()),
        }
    }

    fn add(&mut self, entry: Entry) {
        match self {
            Owned::One(first) => {
                let mut set = Set::default();
                set.insert(first.clone());
                set.replace(entry);
                *self = Owned::Many(Box::new(set));
            }
            Owned::Many(set) => {
                set.replace(entry);
            }
        }
    }

    /// Removes the child with `key`; returns whether it was there and whether none is left.
    fn remove(&mut self, key: KeyRef<'_>) -> (bool, bool) {
        match self {
            Owned::One(e) => {
                let found = key.equivalent(e);
                (found, found)
            }
            Owned::Many(set) => (set.remove(&key), set.is_empty()),
        }
    }

    fn entries(&self) -> Vec<Arc<CachedObject>> {
        match self {
            Owned::One(e) => vec![e.0.clone()],
            Owned::Many(set) => set.iter().map(|e| e.0.clone()).collect(),
        }
    }

    /// Heap bytes beside the index's own table.
    fn heap(&self) -> usize {
        match self {
            Owned::One(_) => 0,
            Owned::Many(set) => std::mem::size_of::<Set>() + table_bytes::<Entry>(set.capacity()),
        }
    }
}

/// The objects of one kind as last seen by its watch, indexed by controller UID.
pub struct Store {
    kind: ResourceKind,
    inner: RwLock<Inner>,
    /// Turns true at the first full list, for good (waiters are woken, none polls).
    synced: watch::Sender<bool>,
    /// The API server answered the last list with 404: the kind is not served (yet).
    unserved: AtomicBool,
    /// Where the store's size is published (`/metrics`), if anywhere.
    gauges: Option<StoreGauges>,
    /// How its objects are packed (their types and shared dictionary).
    packing: Arc<Packing>,
    /// The bound its registry puts on the objects of all its stores together, if any.
    cap: Option<Arc<Cap>>,
    /// The cap left objects of this kind out since the last list that fit whole.
    short: AtomicBool,
    /// The full lists received (a relist the cap asked for ends in one more).
    lists: AtomicU64,
}

#[derive(Default)]
struct Inner {
    objects: Set,
    /// The owner index: children by their controller's UID.
    by_owner: HashTable<Owned>,
    hasher: RandomState,
    /// Objects in `by_owner`.
    owned: usize,
    /// Heap bytes of the sets in `by_owner` (kept as they change).
    owner_sets: usize,
    /// Kept once a plugin selects objects of this kind by label.
    labels: Option<LabelIndex>,
    /// During a relist, the objects it has not listed yet: those still here at its end are gone.
    /// A listed object replaces its old version at once, so a relist never holds two copies.
    unlisted: Option<Set>,
    /// The sum of the objects' [`CachedObject::footprint`].
    bytes: usize,
    /// What was last added to the gauges: objects, bytes, owner and label index entries.
    published: [i64; 4],
    /// The cap left an object out since the current list began.
    refused: bool,
}

impl Inner {
    fn insert(&mut self, obj: Arc<CachedObject>) {
        if let Some(old) = self.objects.replace(Entry(obj.clone())) {
            self.unindex(&old.0);
        }
        self.bytes += obj.footprint();
        if let Some(uid) = obj.controller_uid() {
            let hash = self.hasher.hash_one(uid);
            let hasher = &self.hasher;
            match self.by_owner.find_mut(hash, |g| g.uid() == Some(uid)) {
                Some(group) => {
                    let before = group.heap();
                    group.add(Entry(obj.clone()));
                    self.owner_sets = self.owner_sets + group.heap() - before;
                }
                None => {
                    let rehash = |g: &Owned| hasher.hash_one(g.uid().unwrap_or_default());
                    self.by_owner
                        .insert_unique(hash, Owned::One(Entry(obj.clone())), rehash);
                }
            }
            self.owned += 1;
        }
        if let Some(labels) = &mut self.labels {
            labels.insert(&obj);
        }
    }

    /// Removes the object with `key`; returns whether it was held.
    fn remove(&mut self, key: &ObjectKey) -> bool {
        let Some(old) = self.objects.take(&KeyRef::from_key(key)) else {
            return false;
        };
        self.unindex(&old.0);
        true
    }

    /// Takes `old` (no longer in `objects`) out of the indexes and the byte count.
    fn unindex(&mut self, old: &CachedObject) {
        self.bytes -= old.footprint();
        if let Some(uid) = old.controller_uid() {
            let hash = self.hasher.hash_one(uid);
            if let Ok(mut group) = self.by_owner.find_entry(hash, |g| g.uid() == Some(uid)) {
                let before = group.get().heap();
                let (found, empty) = group.get_mut().remove(KeyRef::of(old));
                let after = if empty {
                    group.remove();
                    0
                } else {
                    group.get().heap()
                };
                self.owner_sets = self.owner_sets + after - before;
                if found {
                    self.owned -= 1;
                }
            }
        }
        if let Some(labels) = &mut self.labels {
            labels.remove(old);
        }
    }

    /// The objects' bytes and the tables of the set and the owner index that hold them.
    fn bytes(&self) -> usize {
        self.bytes
            + table_bytes::<Entry>(self.objects.capacity())
            + table_bytes::<Owned>(self.by_owner.capacity())
            + self.owner_sets
    }

    /// Objects, bytes (with `shared`, the packing's dictionary), owner and label index entries.
    fn sizes(&self, shared: usize) -> [i64; 4] {
        let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        [
            n(self.objects.len()),
            n(self.bytes() + shared),
            n(self.owned),
            n(self.labels.as_ref().map_or(0, LabelIndex::entries)),
        ]
    }
}

impl Store {
    /// An empty, unsynced store for `kind`.
    pub fn new(kind: ResourceKind) -> Self {
        let packing = Arc::new(Packing::learning(TypeMeta {
            api_version: kind.api_version(),
            kind: kind.kind.clone(),
        }));
        Self {
            kind,
            inner: RwLock::new(Inner::default()),
            synced: watch::Sender::new(false),
            unserved: AtomicBool::new(false),
            gauges: None,
            packing,
            cap: None,
            short: AtomicBool::new(false),
            lists: AtomicU64::new(0),
        }
    }

    /// An empty, unsynced store for `kind` whose size shows in `metrics`.
    pub fn counted(kind: ResourceKind, metrics: &Metrics) -> Self {
        let mut store = Self::new(kind);
        store.gauges = Some(metrics.store_gauges(&store.kind.group, &store.kind.kind));
        store
    }

    /// The kind this store holds.
    pub fn kind(&self) -> &ResourceKind {
        &self.kind
    }

    /// How the objects of this store are packed: what a watch of its kind caches them with.
    pub fn packing(&self) -> &Arc<Packing> {
        &self.packing
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds what changed since the last call to the gauges (several stores of one kind may
    /// live at once for a moment, during a swap: each adds its own share).
    fn publish(&self, inner: &mut Inner) {
        let Some(gauges) = &self.gauges else { return };
        let now = inner.sizes(self.packing.dictionary_bytes());
        gauges.add(now, inner.published);
        inner.published = now;
    }

    /// Applies one watcher event. Returns the object the event was about, if any.
    pub fn apply(&self, event: watcher::Event<CachedObject>) -> Option<Arc<CachedObject>> {
        let mut inner = self.write();
        let touched = match event {
            // An object the cap leaves out is not cached, and concerns nobody.
            watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)
                if !self.admits(&mut inner, &obj) =>
            {
                None
            }
            watcher::Event::Apply(obj) => {
                let obj = Arc::new(obj);
                inner.insert(obj.clone());
                Some(obj)
            }
            watcher::Event::Delete(obj) => {
                if inner.remove(&obj.key()) {
                    self.release(1);
                }
                Some(Arc::new(obj))
            }
            watcher::Event::Init => {
                inner.unlisted = Some(inner.objects.clone());
                inner.refused = false;
                None
            }
            watcher::Event::InitApply(obj) => {
                let obj = Arc::new(obj);
                if let Some(unlisted) = &mut inner.unlisted {
                    unlisted.remove(&KeyRef::of(&obj));
                }
                inner.insert(obj.clone());
                Some(obj)
            }
            watcher::Event::InitDone => {
                let mut gone = 0;
                for old in inner.unlisted.take().unwrap_or_default() {
                    gone += usize::from(inner.remove(&old.0.key()));
                }
                self.publish(&mut inner);
                let short = inner.refused;
                drop(inner);
                self.release(gone);
                self.listed(short);
                self.unserved.store(false, Ordering::Release);
                self.synced.send_replace(true);
                return None;
            }
        };
        self.publish(&mut inner);
        touched
    }

    /// Keeps a label index from now on, so [`Store::select`] reads only candidates.
    pub fn index_labels(&self) {
        let mut inner = self.write();
        if inner.labels.is_none() {
            let index = LabelIndex::of(inner.objects.iter().map(|e| &e.0));
            inner.labels = Some(index);
            self.publish(&mut inner);
        }
    }

    /// The objects in `namespace` that `selector` selects, sorted by name: from the label
    /// index when the store keeps one, by a pass over the kind otherwise.
    pub fn select(
        &self,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Vec<Arc<CachedObject>> {
        let inner = self.read();
        if let Some(labels) = &inner.labels {
            return labels.select(namespace, selector);
        }
        let mut found: Vec<Arc<CachedObject>> = inner
            .objects
            .iter()
            .filter(|e| e.0.namespace() == namespace && selector.matches_with(|k| e.0.label(k)))
            .map(|e| e.0.clone())
            .collect();
        found.sort_by(|a, b| a.name().cmp(b.name()));
        found
    }

    /// The objects in any namespace that `selector` selects (the children of a cluster-scoped
    /// parent, which live in namespaces), by namespace, then by name.
    pub fn select_anywhere(&self, selector: &LabelSelector) -> Vec<Arc<CachedObject>> {
        let inner = self.read();
        if let Some(labels) = &inner.labels {
            return labels.select_anywhere(selector);
        }
        let mut found: Vec<Arc<CachedObject>> = inner
            .objects
            .iter()
            .filter(|e| selector.matches_with(|k| e.0.label(k)))
            .map(|e| e.0.clone())
            .collect();
        found.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        found
    }

    /// Records whether the API server serves this kind (its list answered 404, or a list came).
    pub fn set_unserved(&self, unserved: bool) {
        self.unserved.store(unserved, Ordering::Release);
    }

    /// Whether the last list of this kind failed because the API server does not serve it.
    pub fn is_unserved(&self) -> bool {
        self.unserved.load(Ordering::Acquire)
    }

    /// Whether the first full list has been received.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Returns once the first full list has been received (at once if it has).
    pub async fn wait_synced(&self) {
        let mut synced = self.synced.subscribe();
        // The sender lives as long as the store, which outlives this borrow of it.
        let _ = synced.wait_for(|s| *s).await;
    }

    /// The cached object with this key.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<CachedObject>> {
        self.read()
            .objects
            .get(&KeyRef::from_key(key))
            .map(|e| e.0.clone())
    }

    /// The objects whose controller has this UID: O(their number).
    pub fn controlled_by(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        let inner = self.read();
        let hash = inner.hasher.hash_one(uid);
        inner
            .by_owner
            .find(hash, |g| g.uid() == Some(uid))
            .map(Owned::entries)
            .unwrap_or_default()
    }

    /// Every cached object.
    pub fn objects(&self) -> Vec<Arc<CachedObject>> {
        self.read().objects.iter().map(|e| e.0.clone()).collect()
    }

    /// Every cached key (for the periodic resync).
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().objects.iter().map(|e| e.0.key()).collect()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The heap bytes the store holds: its objects ([`CachedObject::footprint`]), the
    /// dictionary they are packed against, the table that holds them and the owner index (the
    /// label index's size is its entries' gauge).
    pub fn bytes(&self) -> usize {
        self.read().bytes() + self.packing.dictionary_bytes()
    }
}

/// The heap bytes of a hash table of `T` with this capacity (hashbrown's layout: a power of
/// two of buckets, from 4, with one control byte each and a group's worth more).
fn table_bytes<T>(capacity: usize) -> usize {
    const GROUP: usize = 16;
    let buckets = match capacity {
        0 => return 0,
        c if c < 7 => c + 1,
        c => c / 7 * 8,
    };
    buckets * (std::mem::size_of::<T>() + 1) + GROUP
}

impl Drop for Store {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(gauges) = &self.gauges {
            gauges.add([0; 4], inner.published);
        }
        let held = inner.objects.len();
        self.leave_cap(held);
    }
}

#[path = "store_cap.rs"]
mod capped;

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
