//! The engaged member clusters: per cluster its own client and its own runtime instance.
//!
//! Engaging a cluster gives it a [`crate::runtime::Informers`] registry of its own over its own
//! client (a second runtime instance, as the runtime's floor is one instance per cluster
//! connection), subscribed to the kinds the served plugins may place there, on the same packed
//! cache stores as the host's own. Releasing it drops the registry's subscriptions: its watches
//! stop and its stores are freed. [`Engaged`] is the handle every reader shares: the judge
//! ([`Engaged::is_engaged`], [`Engaged::get`]), the controllers (a parent's children in each
//! member, found by the marks the host puts on them; each member's client and echoes, to write
//! them), `/metrics` and `weir dev`'s view.
//!
//! A controller listens to its child kinds in every member ([`Engaged::listen`]): each member,
//! engaged now or later, routes a change of a marked child to the controller's queue, so drift
//! in a member is put back as it is in the host's own cluster. It listens to its related kinds
//! (contract 0.4.0) in the members the policy grants its plugin ([`Engaged::listen_in`]): their
//! objects are read from the member's cache ([`Listening::store`]) and a change there enqueues
//! the parents that selected it, through the kind's related index keyed with the cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use kube::Client;

use super::seen::Labels;
use crate::client::Rotating;

use crate::metrics::Metrics;
use crate::plugin::{LabelSelector, ResourceKind};
use crate::runtime::cache::{CachedObject, Store};
use crate::runtime::echoes::Echoes;
use crate::runtime::{
    Finish, Informers, ObjectKey, Queue, QueueConfig, Route, Scope, Subscription, Target,
};

/// The label a parent's children are found by in a member's cache (the one every child of the
/// host carries; in a member, part of the parent's mark, `crate::answer::ParentMark`).
pub use crate::answer::PARENT_UID_LABEL;

/// An object cached from an engaged member cluster, with the cluster's name.
pub type MemberObject = (String, Arc<CachedObject>);

/// One engaged cluster as listed (`weir dev`, `/metrics`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRow {
    /// The cluster's name (its file's stem).
    pub name: String,
    /// Its API server's URL.
    pub server: String,
    /// The kinds watched there.
    pub kinds: usize,
    /// Objects cached from it, all kinds.
    pub objects: usize,
    /// Bytes those objects take in the cache.
    pub bytes: usize,
}

/// One engaged cluster: its client and its runtime instance.
struct Member {
    server: String,
    /// Its labels (a cluster Secret's), which the policy may grant clusters by.
    labels: Labels,
    /// Its client, whose credentials rotate in place ([`Engaged::rotate`]).
    client: Rotating,
    informers: Arc<Informers>,
    /// The watched kinds; dropping one stops its watch and frees its store.
    subscriptions: HashMap<ResourceKind, Subscription>,
    /// Where the member's events go until a controller reads them (see [`Member::drain`]).
    queue: Arc<Queue>,
    echoes: Arc<Echoes>,
    drain: tokio::task::JoinHandle<()>,
    /// Each listening controller's subscriptions here, by listener.
    heard: HashMap<u64, Heard>,
}

impl Member {
    /// The member's events are heard and let go: a parent reads its children in a member when
    /// it is reconciled (its own events, the resync), not on each member change.
    async fn drain(queue: Arc<Queue>) {
        while let Some(key) = queue.next().await {
            let flight = queue.in_flight(key);
            queue.finish(flight.key(), Finish::Done);
            flight.settled();
        }
    }

    /// Whether it watches each of `kinds` and holds its first list (or does not serve it).
    fn lists(&self, kinds: &[ResourceKind]) -> bool {
        kinds.iter().all(|k| {
            (self.subscriptions.get(k))
                .is_some_and(|s| s.store().is_synced() || s.store().is_unserved())
        })
    }

    fn watch(&mut self, kind: &ResourceKind) {
        if self.subscriptions.contains_key(kind) {
            return;
        }
        let target = Target {
            route: Route::Parent,
            queue: self.queue.clone(),
            echoes: self.echoes.clone(),
        };
        let subscription = self.informers.subscribe(kind, Scope::All, target);
        // A parent's children are found by their mark: answer that from an index.
        subscription.store().index_labels();
        self.subscriptions.insert(kind.clone(), subscription);
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.queue.shutdown();
        self.drain.abort();
    }
}

/// The engaged clusters by name; clones share one table.
#[derive(Clone, Default)]
pub struct Engaged {
    members: Arc<RwLock<BTreeMap<String, Member>>>,
    /// Kubeconfig files refused so far.
    refused: Arc<AtomicUsize>,
    /// Credentials rotated in place so far.
    rotated: Arc<AtomicUsize>,
    /// The controllers listening to their child kinds in every member, by id.
    listeners: Arc<RwLock<BTreeMap<u64, Arc<Listener>>>>,
    next_listener: Arc<AtomicU64>,
    /// A source will engage members and has not scanned yet ([`Engaged::expect_source`]).
    pending: Arc<tokio::sync::watch::Sender<bool>>,
    /// A source engages members ([`Engaged::has_source`]).
    sourced: Arc<AtomicBool>,
}

impl std::fmt::Debug for Engaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Engaged {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Member>> {
        self.members.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Member>> {
        self.members.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Always taken after the members' lock, never before it.
    fn listeners(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Arc<Listener>>> {
        self.listeners
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Says a source will engage members: until it has scanned once ([`Engaged::scanned`]),
    /// no member counts as settled (a parent's children there may not be known yet).
    pub fn expect_source(&self) {
        self.sourced.store(true, Ordering::Release);
        self.pending.send_replace(true);
    }

    /// Whether a source engages members at all (`--clusters`): without one no member is ever
    /// engaged, and a controller never enters the member writers.
    pub fn has_source(&self) -> bool {
        self.sourced.load(Ordering::Acquire)
    }

    /// The source has scanned once: the members engaged now are the ones it found.
    pub fn scanned(&self) {
        self.pending.send_replace(false);
    }

    /// Returns once the members engaged are the ones the source found (at once without a
    /// source): a controller starts its workers after this, so that a parent placing children
    /// in members is not refused for naming a cluster the source was about to engage.
    pub async fn wait_scanned(&self) {
        let mut pending = self.pending.subscribe();
        // The sender lives as long as `self`, which outlives this borrow of it.
        let _ = pending.wait_for(|p| !*p).await;
    }

    /// Whether the members engaged are the ones the source found ([`Engaged::wait_scanned`]).
    pub fn is_scanned(&self) -> bool {
        !*self.pending.borrow()
    }

    /// Whether what the members hold of `kinds` is known: the source has scanned, and every
    /// engaged member watches each kind and holds its first list (or does not serve it). Until
    /// then, "no child there" cannot be told from "not listed yet".
    pub fn settled(&self, kinds: &[ResourceKind]) -> bool {
        self.is_scanned() && self.read().values().all(|m| m.lists(kinds))
    }

    /// Whether the engaged member `cluster` watches each of `kinds` and holds its first list
    /// (or does not serve it); `None` when it is not engaged.
    pub fn lists(&self, cluster: &str, kinds: &[ResourceKind]) -> Option<bool> {
        Some(self.read().get(cluster)?.lists(kinds))
    }

    /// The cached object of this kind under `key` in the engaged member `cluster`.
    pub fn get(
        &self,
        cluster: &str,
        (api_version, kind): (&str, &str),
        key: &ObjectKey,
    ) -> Option<Arc<CachedObject>> {
        let members = self.read();
        let member = members.get(cluster)?;
        let (_, subscription) = member
            .subscriptions
            .iter()
            .find(|(k, _)| k.kind == kind && k.api_version() == api_version)?;
        subscription.store().get(key)
    }

    /// What writes to the engaged member `cluster` go through: its own client, and the echoes
    /// its watches tell the host's own writes apart by.
    pub fn writer(&self, cluster: &str) -> Option<(Client, Arc<Echoes>)> {
        let members = self.read();
        let member = members.get(cluster)?;
        Some((member.client.client().clone(), member.echoes.clone()))
    }

    /// Kubeconfig files refused so far.
    pub fn refusals(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }

    /// Counts a refused kubeconfig file.
    pub(super) fn refuse(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Credentials rotated in place so far ([`Engaged::rotate`]).
    pub fn rotations(&self) -> usize {
        self.rotated.load(Ordering::Relaxed)
    }

    /// The API server URL the engaged `cluster` was engaged with.
    pub fn server(&self, cluster: &str) -> Option<String> {
        Some(self.read().get(cluster)?.server.clone())
    }

    /// Whether `cluster` is engaged now.
    pub fn is_engaged(&self, cluster: &str) -> bool {
        self.read().contains_key(cluster)
    }

    /// The engaged clusters' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Each engaged cluster with what its cache holds.
    pub fn rows(&self) -> Vec<ClusterRow> {
        self.read()
            .iter()
            .map(|(name, m)| {
                // The kinds placed there, and the related kinds only a listener hears there.
                let mut stores: Vec<&Arc<Store>> =
                    m.subscriptions.values().map(Subscription::store).collect();
                for heard in m.heard.values() {
                    for store in heard.subscriptions.iter().map(Subscription::store) {
                        if !stores.iter().any(|s| Arc::ptr_eq(s, store)) {
                            stores.push(store);
                        }
                    }
                }
                let (objects, bytes) =
                    (stores.iter()).fold((0, 0), |(o, b), s| (o + s.len(), b + s.bytes()));
                ClusterRow {
                    name: name.clone(),
                    server: m.server.clone(),
                    kinds: stores.len(),
                    objects,
                    bytes,
                }
            })
            .collect()
    }

    /// Whether every engaged cluster's watched kinds hold their first list.
    pub fn is_synced(&self) -> bool {
        self.read().values().all(|m| {
            m.subscriptions
                .values()
                .all(|s| s.store().is_synced() || s.store().is_unserved())
        })
    }

    /// Engages `name` at `server` through `client`, labelled `labels` (replacing an engagement of the same name:
    /// its watches stop first), watching `kinds` in `namespace` (all namespaces: `None`). Must
    /// be called inside the Tokio runtime.
    pub fn engage(
        &self,
        name: &str,
        (server, client): (String, Rotating),
        labels: Labels,
        kinds: &[ResourceKind],
        namespace: Option<String>,
    ) {
        let released = self.write().remove(name);
        drop(released);
        // The member's stores count in a registry of their own: the host's `/metrics` shows
        // them per cluster (`super::gauges`), not merged into its own cluster's kinds.
        let metrics = Arc::new(Metrics::new());
        let informers = Informers::new(client.client().clone(), namespace, metrics);
        let queue = Arc::new(Queue::new(QueueConfig::default()));
        let mut member = Member {
            server,
            labels,
            client,
            informers,
            subscriptions: HashMap::new(),
            queue: queue.clone(),
            echoes: Arc::new(Echoes::default()),
            drain: tokio::spawn(Member::drain(queue)),
            heard: HashMap::new(),
        };
        for kind in kinds {
            member.watch(kind);
        }
        let mut members = self.write();
        for (id, listener) in self.listeners().iter() {
            member.hear(name, *id, listener);
        }
        members.insert(name.to_owned(), member);
    }

    /// Gives the engaged `name` new credentials (`config`, for the same server) in place: its
    /// watches, stores and listeners stay, each later request (a watch resumed from its
    /// resourceVersion, a write) carries them; nothing is listed again. `Ok(false)` when `name`
    /// is not engaged; on an error the credentials in use stay.
    pub fn rotate(&self, name: &str, config: kube::Config) -> Result<bool, kube::Error> {
        let Some(client) = self.read().get(name).map(|m| m.client.clone()) else {
            return Ok(false);
        };
        client.rotate(config)?;
        self.rotated.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Gives the engaged `name` the labels its source has now (a relabelled Secret).
    pub fn relabel(&self, name: &str, labels: Labels) {
        let mut members = self.write();
        if let Some(member) = members.get_mut(name) {
            member.labels = labels;
            // What its new labels grant a listener: heard there now, or no longer.
            for (id, listener) in self.listeners().iter() {
                member.hear_again(name, *id, listener);
            }
        }
    }

    /// The labels of the engaged `cluster` (`None` when it is not engaged).
    pub fn labels(&self, cluster: &str) -> Option<Labels> {
        Some(self.read().get(cluster)?.labels.clone())
    }

    /// Releases `name`: its watches stop and its stores are freed. Whether it was engaged.
    pub fn release(&self, name: &str) -> bool {
        let released = self.write().remove(name);
        released.is_some()
    }

    /// Watches exactly `kinds` in every engaged cluster: the kinds a served plugin no longer
    /// declares stop, new ones start.
    pub fn watch_only(&self, kinds: &[ResourceKind]) {
        let mut members = self.write();
        for member in members.values_mut() {
            member.subscriptions.retain(|k, _| kinds.contains(k));
            for kind in kinds {
                member.watch(kind);
            }
        }
    }

    /// The objects of `kinds` in every engaged cluster marked as children of the parent with
    /// `uid`, in `namespace` (in any namespace when `None`: a cluster-scoped parent's children
    /// live in namespaces), with their cluster's name; by cluster, then as each store sorts.
    pub fn children_of(
        &self,
        uid: &str,
        namespace: Option<&str>,
        kinds: &[ResourceKind],
    ) -> Vec<MemberObject> {
        let selector = LabelSelector {
            match_labels: BTreeMap::from([(PARENT_UID_LABEL.to_owned(), uid.to_owned())]),
            match_expressions: Vec::new(),
        };
        let members = self.read();
        let mut found = Vec::new();
        for (name, member) in members.iter() {
            for kind in kinds {
                let Some(subscription) = member.subscriptions.get(kind) else {
                    continue;
                };
                let store = subscription.store();
                // A cluster-scoped parent's children live in namespaces.
                let objects = match namespace {
                    Some(_) => store.select(namespace, &selector),
                    None => store.select_anywhere(&selector),
                };
                found.extend(objects.into_iter().map(|obj| (name.clone(), obj)));
            }
        }
        found
    }
}

#[path = "listening.rs"]
mod listening;

use self::listening::{Heard, Listener};
pub use self::listening::{Listening, RouteIn};

#[cfg(test)]
#[path = "engaged_tests.rs"]
pub(crate) mod tests;
