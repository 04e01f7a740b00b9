//! The in-memory object store: one global resourceVersion counter and a bounded event history.
//!
//! The indexes kept beside the objects, so that no write scans a kind, are its three modules:
//! `allocations` (the cluster IPs and node ports Services hold), `label_index` (Pods by label,
//! Services by selector) and `terminating` (the namespaces being deleted, and which of them
//! changed since the namespace controller last looked). And `writes`, the changes it took, by
//! resource, for a benchmark to read.

pub mod allocations;
pub mod label_index;
pub mod terminating;
pub mod writes;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast;

use crate::kinds::resources::{Registry, ResKey};
use crate::store::allocations::Allocations;
use crate::store::label_index::LabelIndex;
use crate::store::terminating::Terminating;
use crate::store::writes::{StoredWrites, Writes};
use crate::wire::object;
use crate::wire::stored::Stored;

/// The address of one stored object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjKey {
    /// The resource (group and plural).
    pub res: ResKey,
    /// Namespace, empty for cluster-scoped objects.
    pub ns: String,
    /// Object name.
    pub name: String,
}

/// The kind of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object changed.
    Modified,
    /// The object is gone.
    Deleted,
}

impl EventType {
    /// The `type` string on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, kept in the history and broadcast to open watches.
#[derive(Debug)]
pub struct Event {
    /// The resourceVersion this change produced.
    pub rv: u64,
    /// Which object changed.
    pub key: ObjKey,
    /// What happened.
    pub kind: EventType,
    /// The object after the change (before removal for `Deleted`), shared with the store.
    pub object: Arc<Stored>,
    /// The previous state for `Modified`, so selector watches can turn it into ADDED or
    /// DELETED: the version the store held until this change (shared, not copied; kept as long
    /// as the event stays in the history).
    pub prev: Option<Arc<Stored>>,
}

/// The resourceVersion a watch asked for is no longer in the history.
#[derive(Debug, thiserror::Error)]
#[error("too old resource version: {requested} ({oldest})")]
pub struct Gone {
    /// The version the client asked to resume from.
    pub requested: u64,
    /// The oldest version still resumable.
    pub oldest: u64,
}

/// Events to replay, then a receiver for the rest.
pub type Resume = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

/// All objects plus the indexes and queues that deletion and garbage collection need.
pub struct Store {
    /// Served resource types, built-in and from CRDs.
    pub registry: Registry,
    objects: HashMap<ResKey, BTreeMap<(String, String), Arc<Stored>>>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    history_cap: usize,
    compacted: u64,
    tx: broadcast::Sender<Arc<Event>>,
    /// The uids of the stored objects (owner references are checked against it).
    uids: HashSet<Box<str>>,
    dependents: HashMap<String, BTreeSet<ObjKey>>,
    uid_seq: u64,
    uid_seed: u64,
    /// UIDs of removed objects whose dependents the garbage collector must visit.
    pub removed_uids: Vec<(String, ObjKey, Value)>,
    /// Objects waiting on the `orphan` or `foregroundDeletion` finalizer.
    pub pending_owners: BTreeSet<ObjKey>,
    allocations: Allocations,
    labels: LabelIndex,
    terminating: Terminating,
    writes: Writes,
}

impl Store {
    /// An empty store keeping `history_cap` events for watch resumption.
    pub fn new(history_cap: usize) -> Self {
        let (tx, _) = broadcast::channel(history_cap.max(1024));
        let uid_seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Store {
            registry: Registry::new(),
            objects: HashMap::new(),
            rv: 1,
            history: VecDeque::new(),
            history_cap: history_cap.max(1),
            compacted: 0,
            tx,
            uids: HashSet::new(),
            dependents: HashMap::new(),
            uid_seq: 0,
            uid_seed,
            removed_uids: Vec::new(),
            pending_owners: BTreeSet::new(),
            allocations: Allocations::default(),
            labels: LabelIndex::default(),
            terminating: Terminating::default(),
            writes: Writes::default(),
        }
    }

    /// A store holding `objects` as they were saved, resuming at resourceVersion `rv` (or the
    /// newest object's, if later) with an empty watch history: resuming a watch from any earlier
    /// version answers 410, as from kube-apiserver after a restart. UIDs, generations and
    /// timestamps are kept as given; nothing is broadcast.
    pub fn restored(
        history_cap: usize,
        rv: u64,
        objects: impl IntoIterator<Item = (ObjKey, Value)>,
    ) -> Self {
        let mut store = Store::new(history_cap);
        store.rv = rv.max(store.rv);
        for (key, obj) in objects {
            store.rv = store
                .rv
                .max(object::resource_version(&obj).parse().unwrap_or(0));
            store.index(&key, &obj, true);
            store
                .objects
                .entry(key.res)
                .or_default()
                .insert((key.ns, key.name), Arc::new(Stored::new(&obj)));
        }
        store.compacted = store.rv;
        store
    }

    /// The latest resourceVersion handed out.
    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    /// A fresh UID in the usual 8-4-4-4-12 hex layout.
    pub fn new_uid(&mut self) -> String {
        self.uid_seq += 1;
        let a = self.uid_seed ^ self.uid_seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let b = self.uid_seq;
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            (a >> 32) as u32,
            (a >> 16) as u16,
            (a & 0xfff) as u16,
            (b >> 48) as u16 & 0xfff,
            b & 0xffff_ffff_ffff
        )
    }

    /// The stored object at `key`, parsed.
    pub fn get(&self, key: &ObjKey) -> Option<Value> {
        self.stored(key).map(|s| s.value())
    }

    /// The stored object at `key` as the store keeps it.
    pub fn stored(&self, key: &ObjKey) -> Option<&Arc<Stored>> {
        self.objects
            .get(&key.res)?
            .get(&(key.ns.clone(), key.name.clone()))
    }

    /// Whether an object is stored at `key`.
    pub fn contains(&self, key: &ObjKey) -> bool {
        self.stored(key).is_some()
    }

    /// Whether an object with this UID is stored.
    pub fn has_uid(&self, uid: &str) -> bool {
        self.uids.contains(uid)
    }

    /// Keys of objects that name `uid` among their owners.
    pub fn dependents_of(&self, uid: &str) -> Vec<ObjKey> {
        self.dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Objects of a resource, sorted by namespace then name, optionally in one namespace.
    pub fn list(&self, res: &ResKey, ns: Option<&str>) -> Vec<Arc<Stored>> {
        let Some(map) = self.objects.get(res) else {
            return Vec::new();
        };
        match ns {
            Some(ns) => map
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, v)| v.clone())
                .collect(),
            None => map.values().cloned().collect(),
        }
    }

    /// Objects of a resource after `(ns, name)` in key order, optionally in one namespace.
    pub fn list_after(
        &self,
        res: &ResKey,
        ns: Option<&str>,
        after: Option<(String, String)>,
    ) -> Vec<Arc<Stored>> {
        let Some(after) = after else {
            return self.list(res, ns);
        };
        let Some(map) = self.objects.get(res) else {
            return Vec::new();
        };
        map.range((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .filter(|((n, _), _)| ns.is_none_or(|ns| ns == n))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Keys of every object of a resource.
    pub fn keys(&self, res: &ResKey) -> Vec<ObjKey> {
        self.objects
            .get(res)
            .map(|m| {
                m.keys()
                    .map(|(ns, name)| ObjKey {
                        res: res.clone(),
                        ns: ns.clone(),
                        name: name.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every resource with stored objects.
    pub fn resources(&self) -> Vec<ResKey> {
        self.objects.keys().cloned().collect()
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.objects.values().map(BTreeMap::len).sum()
    }

    fn emit(
        &mut self,
        key: ObjKey,
        kind: EventType,
        object: Arc<Stored>,
        prev: Option<Arc<Stored>>,
    ) {
        self.terminating.touched(&key);
        self.writes.count(&key.res, kind);
        let ev = Arc::new(Event {
            rv: self.rv,
            key,
            kind,
            object,
            prev,
        });
        if self.history.len() >= self.history_cap
            && let Some(old) = self.history.pop_front()
        {
            self.compacted = old.rv;
        }
        self.history.push_back(ev.clone());
        // No receivers is normal when nobody watches.
        let _ = self.tx.send(ev);
    }

    fn index(&mut self, key: &ObjKey, obj: &Value, add: bool) {
        let uid = object::uid(obj);
        for owner in object::owner_uids(obj) {
            let set = self.dependents.entry(owner.clone()).or_default();
            if add {
                set.insert(key.clone());
            } else {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
        if add {
            self.uids.insert(uid.into());
        } else {
            self.uids.remove(uid);
        }
        if key.res.group.is_empty() {
            match key.res.plural.as_str() {
                "services" => {
                    self.allocations.track(obj, add);
                    self.labels.track_service(&key.ns, &key.name, obj, add);
                }
                "pods" => self.labels.track_pod(&key.ns, &key.name, obj, add),
                "namespaces" => self.terminating.track(key, obj, add),
                _ => {}
            }
        }
    }

    /// The cluster IPs and node ports the stored Services hold.
    pub fn allocations(&self) -> &Allocations {
        &self.allocations
    }

    /// Pods by label and Services by selector.
    pub fn labels(&self) -> &LabelIndex {
        &self.labels
    }

    /// The changes stored since the store began, by resource and kind of change.
    pub fn writes(&self) -> Vec<StoredWrites> {
        self.writes.counts()
    }

    /// The namespaces being terminated, for the namespace controller.
    pub fn terminating(&mut self) -> &mut Terminating {
        &mut self.terminating
    }

    /// Store `obj` at `key` with the next resourceVersion and broadcast ADDED or MODIFIED;
    /// returns the object as stored.
    pub fn put(&mut self, key: &ObjKey, obj: Value) -> Value {
        self.put_inner(key, obj, None)
    }

    /// [`Store::put`] over `old`, the object stored at `key` now as its caller read it under the
    /// same lock: its index entries are taken from `old` instead of parsing it again.
    pub fn put_over(&mut self, key: &ObjKey, obj: Value, old: &Value) -> Value {
        self.put_inner(key, obj, Some(old))
    }

    fn put_inner(&mut self, key: &ObjKey, mut obj: Value, old: Option<&Value>) -> Value {
        self.rv += 1;
        if let Some(meta) = object::metadata_mut(&mut obj) {
            meta.insert("resourceVersion".into(), Value::String(self.rv.to_string()));
        }
        let stored = Arc::new(Stored::new(&obj));
        let slot = (key.ns.clone(), key.name.clone());
        let previous = self
            .objects
            .entry(key.res.clone())
            .or_default()
            .insert(slot, stored.clone());
        match (&previous, old) {
            (Some(_), Some(old)) => self.index(key, old, false),
            (Some(prev), None) => self.index(key, &prev.value(), false),
            (None, _) => {}
        }
        self.index(key, &obj, true);
        let kind = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(key.clone(), kind, stored, previous);
        obj
    }

    /// Remove the object at `key`, broadcast DELETED and queue it for garbage collection;
    /// returns its last state (with the deletion's resourceVersion).
    pub fn remove(&mut self, key: &ObjKey) -> Option<Value> {
        let map = self.objects.get_mut(&key.res)?;
        let old = map.remove(&(key.ns.clone(), key.name.clone()))?;
        if map.is_empty() {
            self.objects.remove(&key.res);
        }
        let mut last = old.value();
        self.index(key, &last, false);
        self.pending_owners.remove(key);
        self.rv += 1;
        if let Some(meta) = object::metadata_mut(&mut last) {
            meta.insert("resourceVersion".into(), Value::String(self.rv.to_string()));
        }
        let stored = Arc::new(Stored::new(&last));
        self.emit(key.clone(), EventType::Deleted, stored, None);
        self.removed_uids
            .push((object::uid(&last).to_string(), key.clone(), last.clone()));
        Some(last)
    }

    /// Events after `rv` still in the history, plus a receiver for later ones, taken atomically.
    pub fn watch_from(&self, rv: u64) -> Result<Resume, Gone> {
        if rv < self.compacted {
            return Err(Gone {
                requested: rv,
                oldest: self.compacted,
            });
        }
        let replay = self.history.iter().filter(|e| e.rv > rv).cloned().collect();
        Ok((replay, self.tx.subscribe()))
    }

    /// A receiver for events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Forget the event history so every older resourceVersion answers 410 Gone.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }
}
