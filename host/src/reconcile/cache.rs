//! ③ The cache: one store per watched kind, and the owner index (the seed's Indexer).
//!
//! Reconciles read only from here. kube's `Store` has no secondary index, so finding the
//! children of one parent would scan every cached object; the owner index keeps children by
//! their controller's UID and makes that lookup O(children of that parent).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use kube::api::DynamicObject;
use kube::runtime::watcher;

use super::queue::ObjectKey;
use crate::plugin::ResourceKind;

/// The UID of the object's controller (the owner reference with `controller: true`).
pub fn controller_uid(obj: &DynamicObject) -> Option<&str> {
    obj.metadata
        .owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// The key of a cached object.
pub fn key_of(obj: &DynamicObject) -> ObjectKey {
    ObjectKey {
        namespace: obj.metadata.namespace.clone(),
        name: obj.metadata.name.clone().unwrap_or_default(),
    }
}

/// The objects of one kind as last seen by its watch, indexed by controller UID.
pub struct Store {
    kind: ResourceKind,
    inner: RwLock<Inner>,
    synced: AtomicBool,
    /// The API server answered the last list with 404: the kind is not served (yet).
    unserved: AtomicBool,
}

#[derive(Default)]
struct Inner {
    objects: HashMap<ObjectKey, Arc<DynamicObject>>,
    by_owner: HashMap<String, HashSet<ObjectKey>>,
    /// Objects of a relist in progress; swapped in whole at `InitDone`, as kube's reflector does.
    relist: Option<HashMap<ObjectKey, Arc<DynamicObject>>>,
}

impl Inner {
    fn insert(&mut self, obj: Arc<DynamicObject>) {
        let key = key_of(&obj);
        let new_owner = controller_uid(&obj).map(str::to_owned);
        if let Some(old) = self.objects.insert(key.clone(), obj)
            && let Some(uid) = controller_uid(&old)
            && Some(uid) != new_owner.as_deref()
        {
            self.unindex(uid.to_owned(), &key);
        }
        if let Some(uid) = new_owner {
            self.by_owner.entry(uid).or_default().insert(key);
        }
    }

    fn remove(&mut self, key: &ObjectKey) {
        if let Some(old) = self.objects.remove(key)
            && let Some(uid) = controller_uid(&old)
        {
            self.unindex(uid.to_owned(), key);
        }
    }

    fn unindex(&mut self, uid: String, key: &ObjectKey) {
        if let Some(set) = self.by_owner.get_mut(&uid) {
            set.remove(key);
            if set.is_empty() {
                self.by_owner.remove(&uid);
            }
        }
    }

    fn replace(&mut self, objects: HashMap<ObjectKey, Arc<DynamicObject>>) {
        self.objects.clear();
        self.by_owner.clear();
        for obj in objects.into_values() {
            self.insert(obj);
        }
    }
}

impl Store {
    /// An empty, unsynced store for `kind`.
    pub fn new(kind: ResourceKind) -> Self {
        Self {
            kind,
            inner: RwLock::new(Inner::default()),
            synced: AtomicBool::new(false),
            unserved: AtomicBool::new(false),
        }
    }

    /// The kind this store holds.
    pub fn kind(&self) -> &ResourceKind {
        &self.kind
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one watcher event. Returns the object the event was about, if any.
    pub fn apply(&self, event: watcher::Event<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let mut inner = self.write();
        match event {
            watcher::Event::Apply(obj) => {
                let obj = Arc::new(obj);
                inner.insert(obj.clone());
                Some(obj)
            }
            watcher::Event::Delete(obj) => {
                inner.remove(&key_of(&obj));
                Some(Arc::new(obj))
            }
            watcher::Event::Init => {
                inner.relist = Some(HashMap::new());
                None
            }
            watcher::Event::InitApply(obj) => {
                let obj = Arc::new(obj);
                inner
                    .relist
                    .get_or_insert_with(HashMap::new)
                    .insert(key_of(&obj), obj.clone());
                Some(obj)
            }
            watcher::Event::InitDone => {
                let objects = inner.relist.take().unwrap_or_default();
                inner.replace(objects);
                drop(inner);
                self.unserved.store(false, Ordering::Release);
                self.synced.store(true, Ordering::Release);
                None
            }
        }
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
        self.synced.load(Ordering::Acquire)
    }

    /// The cached object with this key.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        self.read().objects.get(key).cloned()
    }

    /// The objects whose controller has this UID: O(their number).
    pub fn controlled_by(&self, uid: &str) -> Vec<Arc<DynamicObject>> {
        let inner = self.read();
        let Some(keys) = inner.by_owner.get(uid) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|k| inner.objects.get(k).cloned())
            .collect()
    }

    /// Every cached object.
    pub fn objects(&self) -> Vec<Arc<DynamicObject>> {
        self.read().objects.values().cloned().collect()
    }

    /// Every cached key (for the periodic resync).
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read().objects.keys().cloned().collect()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The parent store and one store per child kind of one plugin.
pub struct Cache {
    /// Parents (For).
    pub parents: Arc<Store>,
    /// Children, one store per declared kind (Owns).
    pub children: Vec<Arc<Store>>,
    /// Related objects, one store per declared related kind (Watches): read for the plugin,
    /// never written.
    pub related: Vec<Arc<Store>>,
}

impl Cache {
    /// Empty stores for a parent kind and its child kinds.
    pub fn new(parent: ResourceKind, children: &[ResourceKind]) -> Self {
        Self {
            parents: Arc::new(Store::new(parent)),
            children: children
                .iter()
                .cloned()
                .map(|k| Arc::new(Store::new(k)))
                .collect(),
            related: Vec::new(),
        }
    }

    /// A cache over existing stores (shared with other controllers).
    pub fn from_stores(parents: Arc<Store>, children: Vec<Arc<Store>>) -> Self {
        Self {
            parents,
            children,
            related: Vec::new(),
        }
    }

    /// The same cache, also reading the stores of related kinds (for readiness).
    pub fn with_related(mut self, related: Vec<Arc<Store>>) -> Self {
        self.related = related;
        self
    }

    /// Every child the parent with `uid` controls, across all child kinds.
    pub fn children_of(&self, uid: &str) -> Vec<Arc<DynamicObject>> {
        self.children
            .iter()
            .flat_map(|s| s.controlled_by(uid))
            .collect()
    }

    /// The store of a child kind, by apiVersion and kind.
    pub fn child_store(&self, api_version: &str, kind: &str) -> Option<&Arc<Store>> {
        self.children
            .iter()
            .find(|s| s.kind.kind == kind && s.kind.api_version() == api_version)
    }

    /// Whether every store has received its first full list (`/readyz`).
    pub fn is_synced(&self) -> bool {
        self.parents.is_synced()
            && self.children.iter().all(|s| s.is_synced())
            && self.related.iter().all(|s| s.is_synced())
    }

    /// The kinds among these stores that the API server does not serve.
    pub fn unserved(&self) -> Vec<String> {
        std::iter::once(&self.parents)
            .chain(&self.children)
            .chain(&self.related)
            .filter(|s| s.is_unserved())
            .map(|s| s.kind.kind.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn cm_kind() -> ResourceKind {
        ResourceKind {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
        }
    }

    fn child(name: &str, owner: Option<&str>) -> DynamicObject {
        let mut obj = DynamicObject::new(name, &cm_kind().api_resource()).within("default");
        obj.metadata.owner_references = owner.map(|uid| {
            vec![OwnerReference {
                api_version: "weir.dev/v1alpha1".into(),
                kind: "Blog".into(),
                name: "b".into(),
                uid: uid.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]
        });
        obj
    }

    fn names(objs: Vec<Arc<DynamicObject>>) -> Vec<String> {
        let mut n: Vec<String> = objs
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        n.sort();
        n
    }

    #[test]
    fn children_are_found_by_their_controller_uid() {
        let store = Store::new(cm_kind());
        store.apply(watcher::Event::Apply(child("a1", Some("uid-a"))));
        store.apply(watcher::Event::Apply(child("a2", Some("uid-a"))));
        store.apply(watcher::Event::Apply(child("b1", Some("uid-b"))));
        store.apply(watcher::Event::Apply(child("loose", None)));
        assert_eq!(names(store.controlled_by("uid-a")), vec!["a1", "a2"]);
        assert_eq!(names(store.controlled_by("uid-b")), vec!["b1"]);
        assert!(store.controlled_by("uid-c").is_empty());
    }

    #[test]
    fn a_changed_controller_moves_the_child_in_the_index() {
        let store = Store::new(cm_kind());
        store.apply(watcher::Event::Apply(child("x", Some("uid-a"))));
        store.apply(watcher::Event::Apply(child("x", Some("uid-b"))));
        assert!(store.controlled_by("uid-a").is_empty());
        assert_eq!(names(store.controlled_by("uid-b")), vec!["x"]);
        store.apply(watcher::Event::Apply(child("x", None)));
        assert!(store.controlled_by("uid-b").is_empty());
    }

    #[test]
    fn a_deleted_child_leaves_the_index() {
        let store = Store::new(cm_kind());
        store.apply(watcher::Event::Apply(child("a1", Some("uid-a"))));
        store.apply(watcher::Event::Delete(child("a1", Some("uid-a"))));
        assert!(store.controlled_by("uid-a").is_empty());
        assert!(store.get(&ObjectKey::new("default", "a1")).is_none());
    }

    #[test]
    fn a_relist_replaces_the_contents_only_when_done() {
        let store = Store::new(cm_kind());
        store.apply(watcher::Event::Apply(child("old", Some("uid-a"))));
        store.apply(watcher::Event::Init);
        store.apply(watcher::Event::InitApply(child("new", Some("uid-a"))));
        assert_eq!(
            names(store.controlled_by("uid-a")),
            vec!["old"],
            "old contents served during relist"
        );
        assert!(!store.is_synced());
        store.apply(watcher::Event::InitDone);
        assert!(store.is_synced());
        assert_eq!(names(store.controlled_by("uid-a")), vec!["new"]);
    }

    #[test]
    fn the_index_lookup_does_not_touch_unrelated_objects() {
        // 10,000 parents with three children each: one lookup returns exactly three objects.
        let store = Store::new(cm_kind());
        for p in 0..10_000 {
            for c in 0..3 {
                store.apply(watcher::Event::Apply(child(
                    &format!("p{p}-c{c}"),
                    Some(&format!("uid-{p}")),
                )));
            }
        }
        assert_eq!(store.len(), 30_000);
        assert_eq!(
            names(store.controlled_by("uid-4242")),
            vec!["p4242-c0", "p4242-c1", "p4242-c2"]
        );
    }
}
