//! ① The informer registry: watch events update the shared cache and become queue keys (For the
//! parent, Owns its children, Watches the related objects parents selected).
//!
//! Each event is told apart as an outside change or the echo of one of Weir's own writes,
//! so the hot-loop guard can forgive the first and count the second.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::Client;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};

use super::ObjectKey;
use super::cache::{CachedObject, Incoming, Packing, Store};
use super::cap::{Cap, refilling};
use super::echoes::Echoes;
use super::queue::{Cause, Queue};
use super::related::KindIndex;
use crate::chain::Chain;
use crate::metrics::Metrics;
use crate::plugin::ResourceKind;

/// Which parent a watched object should enqueue.
#[derive(Clone, Debug)]
pub enum Route {
    /// The object is a parent: enqueue itself.
    Parent,
    /// The object is a child: enqueue its controller if that is of this parent kind.
    Owner(ResourceKind),
    /// The object may be related to parents: enqueue those that selected it in `cluster` (by
    /// name, or by labels it has before or after the change), as the kind's index says.
    Related {
        /// The kind's index.
        index: Arc<KindIndex>,
        /// The member cluster the watched objects are in (contract 0.4.0); `None`: the
        /// host's own.
        cluster: Option<String>,
    },
    /// The object names its parent some other way: enqueue the key the subscriber's function
    /// maps it to (controller-runtime's `EnqueueRequestsFromMapFunc`; a child in a member
    /// cluster names its parent by a mark).
    Mapped(MapToParent),
}

/// The function of a [`Route::Mapped`]: the parent key an object names, if it names one.
#[derive(Clone)]
pub struct MapToParent(pub Arc<MapFn>);

/// What a [`MapToParent`] calls.
pub type MapFn = dyn Fn(&CachedObject) -> Option<ObjectKey> + Send + Sync;

impl std::fmt::Debug for MapToParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MapToParent")
    }
}

impl Route {
    /// The parents a change of `obj` (which was `old` before it) concerns.
    fn keys(&self, obj: &CachedObject, old: Option<&CachedObject>) -> Vec<ObjectKey> {
        match self {
            Route::Parent => vec![obj.key()],
            Route::Owner(parent) => Self::owner(parent, obj).into_iter().collect(),
            Route::Related { index, cluster } => index.parents_in(cluster.as_deref(), old, obj),
            Route::Mapped(map) => (map.0)(obj).into_iter().collect(),
        }
    }

    fn owner(parent: &ResourceKind, obj: &CachedObject) -> Option<ObjectKey> {
        let owner = obj
            .controller()
            .filter(|c| *c.kind == parent.kind && *c.api_version == parent.api_version())?;
        // A cluster-scoped parent's children live in namespaces; the parent in none.
        Some(ObjectKey {
            namespace: obj
                .namespace()
                .filter(|_| parent.namespaced)
                .map(str::to_owned),
            name: owner.name.to_string(),
        })
    }
}

/// Where one watched kind's events go: a route and the queue of one controller.
pub struct Target {
    /// How an object of this kind maps to a parent key.
    pub route: Route,
    /// The controller's queue.
    pub queue: Arc<Queue>,
    /// The controller's own writes, to tell echoes apart.
    pub echoes: Arc<Echoes>,
}

/// One watch and its store, shared by every controller that reads that kind: ten plugins
/// owning ConfigMaps cache each ConfigMap once, not ten times.
pub struct Informer {
    /// The cache of this kind.
    pub store: Arc<Store>,
    targets: Mutex<Vec<(u64, Arc<Target>)>>,
}

impl Informer {
    /// An informer (not yet watching) for `kind`, its store's size shown in `metrics`, its
    /// objects counted against `cap` if given.
    pub fn new(kind: ResourceKind, metrics: &Metrics, cap: Option<Arc<Cap>>) -> Self {
        Self {
            store: Arc::new(Store::counted(kind, metrics).capped(cap)),
            targets: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<Target>)>> {
        self.targets.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn targets(&self) -> Vec<Arc<Target>> {
        self.lock().iter().map(|(_, t)| t.clone()).collect()
    }
}

/// Whether a subscriber's informer shows only the part of the kind this host reconciles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Parents and children: the part of the kind this host reconciles (all of it unless the
    /// registry was given a [`Narrowing`]).
    Mine,
    /// Related objects: every object of the kind, narrowed or not.
    All,
    /// Related objects of a kind the plugin also owns: under [`Narrowing::Labels`], the objects
    /// matching its `unowned` selector (every owned child is cached by its owner's host, in its
    /// [`Scope::Mine`]); otherwise every object.
    Unowned,
}

/// How the registry narrows [`Scope::Mine`] watches to the part of each kind this host
/// reconciles, when several hosts split the parents between them (the manager chooses it; the
/// registry does not know why).
#[derive(Clone)]
pub enum Narrowing {
    /// Parents and children by the label selector `mine`; [`Scope::Unowned`] by `unowned`.
    Labels {
        /// The selector of this host's parents and children.
        mine: String,
        /// The selector of objects no parent of any host owns.
        unowned: String,
    },
    /// Parents through `client`, which narrows every list and watch itself, listed again each
    /// time `changes` ticks (the relist drops the parents no longer selected); children whole.
    Client {
        /// The narrowing client.
        client: Client,
        /// Ticks whenever the narrowing changes.
        changes: tokio::sync::watch::Receiver<u64>,
    },
}

impl std::fmt::Debug for Narrowing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Labels { mine, unowned } => f
                .debug_struct("Labels")
                .field("mine", mine)
                .field("unowned", unowned)
                .finish(),
            Self::Client { .. } => f.write_str("Client"),
        }
    }
}

/// The key of a parent watch narrowed by its client.
const NARROWED: &str = "narrowed by the client";

/// The host's informer registry: one watch and one store per kind (in the host's namespace
/// scope), shared by every controller that reads the kind, reference-counted by
/// [`Subscription`]s. Narrowed by labels, it keeps three per kind at most: this host's part, the
/// objects no parent owns, and the whole kind.
///
/// The watch tasks belong to the registry, not to a subscriber: the first subscription of a
/// kind starts its watch, the last one to be dropped stops it and frees the store, so a
/// controller that stops (a plugin removed or swapped) never interrupts another's events.
pub struct Informers {
    client: Client,
    namespace: Option<String>,
    metrics: Arc<Metrics>,
    /// How [`Scope::Mine`] watches are narrowed; `None`: the whole kind.
    narrowing: Option<Narrowing>,
    /// The bound on the objects all its stores hold together; `None`: no bound, nothing counted.
    cap: Option<Arc<Cap>>,
    /// By kind and the label selector its watch uses.
    by_kind: Mutex<HashMap<InformerKey, Shared>>,
    next_id: AtomicU64,
}

/// A kind and the label selector its watch lists and watches with (or [`NARROWED`]).
type InformerKey = (ResourceKind, Option<String>);

/// One kind's informer and the task that feeds it.
struct Shared {
    informer: Arc<Informer>,
    watch: tokio::task::JoinHandle<()>,
}

impl Informers {
    /// An empty registry whose watches use `client`, in `namespace` or cluster-wide, and whose
    /// stores show their size in `metrics`.
    pub fn new(client: Client, namespace: Option<String>, metrics: Arc<Metrics>) -> Arc<Self> {
        Self::narrowed(client, namespace, metrics, None)
    }

    /// [`Informers::new`] whose [`Scope::Mine`] watches are narrowed as `narrowing` says.
    pub fn narrowed(
        client: Client,
        namespace: Option<String>,
        metrics: Arc<Metrics>,
        narrowing: Option<Narrowing>,
    ) -> Arc<Self> {
        Self::capped(client, namespace, metrics, narrowing, None)
    }

    /// [`Informers::narrowed`] whose stores hold at most `cap`'s objects together
    /// ([`crate::runtime::cap`]); `None` leaves them unbounded.
    pub fn capped(
        client: Client,
        namespace: Option<String>,
        metrics: Arc<Metrics>,
        narrowing: Option<Narrowing>,
        cap: Option<Arc<Cap>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            namespace,
            metrics,
            narrowing,
            cap,
            by_kind: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        })
    }

    /// The bound on what its stores hold together, if it has one.
    pub fn cap(&self) -> Option<&Arc<Cap>> {
        self.cap.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<InformerKey, Shared>> {
        self.by_kind.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Routes `kind`'s events to `target` until the returned handle is dropped, starting the
    /// kind's watch if nobody watched it. Must be called inside the Tokio runtime.
    ///
    /// A parent target that joins an informer which has already listed its kind gets every
    /// cached key at once, as a list ([`Cause::Listed`]): the watch will not list it again for
    /// this subscriber.
    pub fn subscribe(
        self: &Arc<Self>,
        kind: &ResourceKind,
        scope: Scope,
        target: Target,
    ) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let target = Arc::new(target);
        let selector = match (scope, &self.narrowing) {
            (Scope::All, _) | (_, None) => None,
            (Scope::Mine, Some(Narrowing::Labels { mine, .. })) => Some(mine.clone()),
            (Scope::Unowned, Some(Narrowing::Labels { unowned, .. })) => Some(unowned.clone()),
            (Scope::Unowned, Some(Narrowing::Client { .. })) => None,
            (Scope::Mine, Some(Narrowing::Client { .. })) => {
                matches!(target.route, Route::Parent).then(|| NARROWED.to_owned())
            }
        };
        let key = (kind.clone(), selector);
        let informer = {
            let mut by_kind = self.lock();
            let shared = by_kind.entry(key.clone()).or_insert_with(|| {
                let cap = self.cap.clone();
                let informer = Arc::new(Informer::new(kind.clone(), &self.metrics, cap));
                let watch = self.spawn_watch(&informer, key.1.clone());
                Shared { informer, watch }
            });
            shared.informer.lock().push((id, target.clone()));
            shared.informer.clone()
        };
        if let Route::Related { .. } = target.route {
            // Parents select objects of this kind by label: answer that from an index.
            informer.store.index_labels();
        }
        if informer.store.is_synced() {
            for obj in informer.store.objects() {
                for key in target.route.keys(&obj, None) {
                    target.queue.add(key, Cause::Listed);
                }
            }
        }
        Subscription {
            registry: self.clone(),
            key,
            id,
            store: informer.store.clone(),
        }
    }

    /// Starts the task that feeds `informer` (listing and watching with `selector`), refilled
    /// when the registry has a cap.
    fn spawn_watch(
        &self,
        informer: &Arc<Informer>,
        selector: Option<String>,
    ) -> tokio::task::JoinHandle<()> {
        let namespace = self.namespace.clone();
        let informer = informer.clone();
        let narrowed = match (&self.narrowing, &selector) {
            (Some(Narrowing::Client { client, changes }), Some(_)) => {
                Some((client.clone(), changes.clone()))
            }
            _ => None,
        };
        let client = self.client.clone();
        let store = informer.store.clone();
        let run = move || {
            let (namespace, informer) = (namespace.clone(), informer.clone());
            let (client, selector, narrowed) = (client.clone(), selector.clone(), narrowed.clone());
            async move {
                match narrowed {
                    Some(narrowed) => reselecting(narrowed, namespace, informer).await,
                    None => watch(client, (namespace, selector), informer).await,
                }
            }
        };
        match &self.cap {
            Some(cap) => tokio::spawn(refilling(run, store, cap.clone())),
            None => tokio::spawn(run()),
        }
    }

    fn unsubscribe(&self, key: &InformerKey, id: u64) {
        let mut by_kind = self.lock();
        let Some(shared) = by_kind.get(key) else {
            return;
        };
        let last = {
            let mut targets = shared.informer.lock();
            targets.retain(|(t, _)| *t != id);
            targets.is_empty()
        };
        if last && let Some(shared) = by_kind.remove(key) {
            shared.watch.abort();
            tracing::debug!(kind = %key.0.kind, "last subscriber gone: watch stopped");
        }
    }

    /// The objects the registry's stores hold right now, all kinds together.
    pub fn cached(&self) -> usize {
        self.lock()
            .values()
            .map(|shared| shared.informer.store.len())
            .sum()
    }

    /// The kinds watched right now, with their number of subscribers.
    pub fn watched(&self) -> Vec<(ResourceKind, usize)> {
        self.lock()
            .iter()
            .map(|((k, _), s)| (k.clone(), s.informer.lock().len()))
            .collect()
    }
}

/// A controller's interest in one kind; dropping it unsubscribes (see [`Informers`]).
pub struct Subscription {
    registry: Arc<Informers>,
    key: InformerKey,
    id: u64,
    store: Arc<Store>,
}

impl Subscription {
    /// The shared store of the kind.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.registry.unsubscribe(&self.key, self.id);
    }
}

/// Watches one kind for ever: each event updates the informer's store and enqueues the parent
/// it concerns in every subscribed controller, in `namespace` (all: `None`) and, when given,
/// only objects matching the label selector `labels`. Watch errors (a dropped stream, a 410
/// Gone) are retried with backoff by kube's watcher, which relists and resumes.
pub async fn watch(
    client: Client,
    (namespace, labels): (Option<String>, Option<String>),
    informer: Arc<Informer>,
) {
    let store = informer.store.clone();
    let kind = store.kind().clone();
    // A cluster-scoped kind (a related Namespace) is watched cluster-wide whatever the host's scope.
    let api: Api<Incoming> = match &namespace {
        Some(ns) if kind.namespaced => Api::namespaced_with(client, ns, &kind.api_resource()),
        _ => Api::all_with(client, &kind.api_resource()),
    };
    let packing = store.packing().clone();
    let config = match &labels {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    let mut events = watcher(api, config).default_backoff().boxed();
    // Keys seen during a (re)list wait until the store holds the whole new list, so a worker
    // never reconciles them against the contents from before the relist.
    // Each waits as a list (behind the changes) if it comes from the first list or a relist found
    // its object unchanged, and as a change otherwise.
    let mut relisted: Vec<(Arc<Target>, ObjectKey, Cause)> = Vec::new();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                let unserved = matches!(&e, watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.code == 404);
                store.set_unserved(unserved);
                tracing::warn!(kind = %kind.kind, unserved, error = %Chain(&e), "watch failed; retrying");
                continue;
            }
        };
        let deleted = matches!(event, watcher::Event::Delete(_));
        let init_done = matches!(event, watcher::Event::InitDone);
        // Read once into the compact form (managedFields already left out by the decoding).
        let event = compact(event, &packing);
        let initial = matches!(event, watcher::Event::InitApply(_));
        let first_list = !store.is_synced();
        // The object as cached before this event: a label selector that matched it then must
        // hear that it no longer does.
        let old = match &event {
            watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o) => {
                store.get(&o.key())
            }
            watcher::Event::Init | watcher::Event::InitDone => None,
        };
        let obj = store.apply(event);
        if init_done {
            for (target, key, cause) in relisted.drain(..) {
                target.queue.add(key, cause);
            }
        }
        let Some(obj) = obj else { continue };
        let cause = list_cause(first_list, old.as_deref(), &obj);
        for target in informer.targets() {
            for key in target.route.keys(&obj, old.as_deref()) {
                if initial {
                    relisted.push((target.clone(), key, cause));
                } else if let Route::Related { .. } = target.route {
                    // Never the echo of the controller's own write: it does not write related objects.
                    target.queue.add(key, Cause::Outside);
                } else {
                    target
                        .echoes
                        .enqueue(&target.queue, key, &kind.kind, &obj, deleted);
                }
            }
        }
    }
}

/// How a key from a (re)list is queued: as a list ([`Cause::Listed`], behind the changes) if it
/// comes from the informer's first list or its object is the version the cache already held,
/// as a change otherwise (created, changed or deleted while the watch was down).
fn list_cause(first_list: bool, old: Option<&CachedObject>, obj: &CachedObject) -> Cause {
    let unchanged = old.is_some_and(|old| {
        old.resource_version().is_some() && old.resource_version() == obj.resource_version()
    });
    if first_list || unchanged {
        Cause::Listed
    } else {
        Cause::Outside
    }
}

/// Watches one parent kind through a narrowing client for ever, listing again each time the
/// narrowing changes (the relist drops the parents no longer selected).
async fn reselecting(
    (client, mut changes): (Client, tokio::sync::watch::Receiver<u64>),
    namespace: Option<String>,
    informer: Arc<Informer>,
) {
    loop {
        changes.mark_unchanged();
        tokio::select! {
            () = watch(client.clone(), (namespace.clone(), None), informer.clone()) => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}

/// The event with its object in the cache's form, packed as `packing` packs its kind.
fn compact(
    event: watcher::Event<Incoming>,
    packing: &Arc<Packing>,
) -> watcher::Event<CachedObject> {
    let cached = |o| CachedObject::new(o, packing);
    match event {
        watcher::Event::Apply(o) => watcher::Event::Apply(cached(o)),
        watcher::Event::Delete(o) => watcher::Event::Delete(cached(o)),
        watcher::Event::InitApply(o) => watcher::Event::InitApply(cached(o)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

#[cfg(test)]
#[path = "informers_tests.rs"]
mod tests;
