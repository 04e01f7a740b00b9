//! One plugin version bound to the stores of the kinds it declared, and its writers.
//!
//! Its stores ([`Cache`]) are taken from the runtime's shared informers: its parents, its
//! children per kind (Owns, found through the owner index) and its related kinds (Watches).
//! Its children in member clusters are read from, and written to, each member's own runtime
//! instance ([`Members`]).
//!
//! A hot swap replaces the whole binding at once; a reconcile takes the binding once at its
//! start and finishes on it, so it never mixes two versions.

use std::sync::Arc;

use kube::api::DynamicObject;

use super::Parts;
use super::apply::{Applier, ApplyError, Change};
use super::error::ReconcileError;
use super::invoke::{Invoker, Reconciler};
use super::members::{self, Home, Members};
use super::related::{KindIndex, Reach, Related, RelatedKind};
use super::status::ParentWriter;
use crate::answer::{DesiredChild, LiveObjects};
use crate::clusters::{Engaged, MemberObject, RouteIn};
use crate::plugin::{LOCAL_CLUSTER, PluginInfo, ResourceKind};
use crate::runtime::ObjectKey;
use crate::runtime::cache::{CachedObject, Store};
use crate::runtime::{Finish, Route, Scope, Subscription, Target};

/// One plugin version bound to the stores of the kinds it declared.
///
/// A hot swap replaces the whole binding at once; a reconcile takes the binding once at its
/// start and finishes on it, so it never mixes two versions.
pub struct Binding {
    pub(super) invoker: Invoker,
    pub(super) cache: Cache,
    pub(super) applier: Applier,
    /// Its writes to member clusters; `None` on a host that engages none (no `--clusters`),
    /// whose reconciles never enter them.
    members: Option<Members>,
    pub(super) parents: ParentWriter,
    /// The related kinds the plugin reads, their stores and indexes.
    pub(super) related: Related,
    /// The host's Namespaces, when the policy's entry for the plugin selects namespaces by label.
    namespaces: Option<Arc<Store>>,
    /// The member clusters engaged beside the host's own.
    clusters: Engaged,
    /// Held for the subscriptions' sake: dropping the binding unsubscribes its kinds.
    _subscriptions: Vec<Subscription>,
}

impl Binding {
    /// What the plugin declared.
    pub fn info(&self) -> &PluginInfo {
        self.invoker.info()
    }

    /// Whether its stores hold their first full list and the member clusters engaged are the
    /// ones their source found (`/readyz`).
    pub fn is_synced(&self) -> bool {
        self.cache.is_synced() && self.clusters.is_scanned()
    }

    /// Returns once [`Binding::is_synced`] holds: a child placed in a member is then judged
    /// against the members the source found, not refused for naming one about to be engaged.
    pub async fn wait_synced(&self) {
        self.cache.wait_synced().await;
        self.clusters.wait_scanned().await;
    }

    /// The UID of the cached parent `key`, if it is cached.
    pub fn parent_uid(&self, key: &ObjectKey) -> Option<String> {
        self.cache.parents.get(key)?.uid().map(str::to_owned)
    }

    /// The children of `parent` in the engaged member clusters, found by their marks, each
    /// with its cluster's name.
    pub(super) fn elsewhere(&self, parent: &CachedObject) -> Vec<MemberObject> {
        self.members
            .as_ref()
            .map_or_else(Vec::new, |m| m.observed(parent))
    }

    /// ⑤ Writes the judged children that differ from the caches and prunes the observed ones
    /// no longer wanted (`observed`: in the parent's cluster; in the members, the marked ones
    /// their caches hold): the same writes for a reconcile's answer and a finalize's.
    pub(super) async fn write_children(
        &self,
        (parent, cached): (&DynamicObject, &CachedObject),
        desired: &[DesiredChild],
        observed: &[Arc<CachedObject>],
    ) -> Result<Vec<Change>, ReconcileError> {
        let info = self.info();
        // A name taken between the cache read and the create is refused like one the cache showed.
        let refused = |e| match e {
            ApplyError::Foreign(refusal) => ReconcileError::refused(info, refusal, None),
            e => ReconcileError::Apply(e),
        };
        let home: Vec<&DesiredChild> = desired.iter().filter(|c| c.cluster.is_none()).collect();
        let mut writes = self.applier.apply(&home).await.map_err(refused)?;
        writes.extend(self.applier.prune(&home, observed, &info.children).await?);
        let Some(members) = &self.members else {
            return Ok(writes);
        };
        let placed = members
            .write(parent, desired, &members.observed(cached))
            .await;
        writes.extend(placed.map_err(|e| match e {
            ReconcileError::Apply(e) => refused(e),
            e => e,
        })?);
        Ok(writes)
    }

    /// A parent being deleted whose plugin's cleanup is done: its children in member clusters
    /// go, then the host's finalizer ([`super::members`]).
    pub(super) async fn release_members(
        &self,
        parent: &DynamicObject,
        cached: &CachedObject,
    ) -> Result<Finish, ReconcileError> {
        match &self.members {
            Some(members) => members.release(parent, cached, &self.parents).await,
            None => members::release_unreached(self.parents.finalizers(), parent).await,
        }
    }

    /// What the judge looks names up in: the children's caches, and the Namespaces (their
    /// labels) for the policy's entry.
    pub(super) fn live(&self) -> Live<'_> {
        Live {
            cache: &self.cache,
            namespaces: self.namespaces.as_deref(),
            clusters: &self.clusters,
        }
    }
}

/// The live objects an answer is judged against ([`Binding::live`]).
pub(super) struct Live<'a> {
    cache: &'a Cache,
    namespaces: Option<&'a Store>,
    clusters: &'a Engaged,
}

impl LiveObjects for Live<'_> {
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        match self.namespaces {
            Some(store) if api_version == "v1" && kind == "Namespace" => {
                store.get(key)?.decode().ok().map(Arc::new)
            }
            _ => LiveObjects::get(self.cache, api_version, kind, key),
        }
    }

    /// The host's own cluster, and the member clusters engaged now.
    fn engaged(&self, cluster: &str) -> bool {
        cluster == LOCAL_CLUSTER || self.clusters.is_engaged(cluster)
    }

    /// The engaged member's labels (its cluster Secret's).
    fn cluster_labels(&self, cluster: &str) -> Option<crate::clusters::Labels> {
        self.clusters.labels(cluster)
    }

    /// The engaged member `cluster`'s cache.
    fn get_elsewhere(
        &self,
        cluster: &str,
        api_version: &str,
        kind: &str,
        key: &ObjectKey,
    ) -> Option<Arc<DynamicObject>> {
        let cached = self.clusters.get(cluster, (api_version, kind), key)?;
        match cached.decode() {
            Ok(live) => Some(Arc::new(live)),
            Err(e) => {
                tracing::warn!(%cluster, child = %key, error = %e, "a member's cached child does not decode");
                None
            }
        }
    }
}

/// `v1` `Namespace`.
fn namespace_kind() -> ResourceKind {
    ResourceKind {
        group: String::new(),
        version: "v1".into(),
        kind: "Namespace".into(),
        plural: "namespaces".into(),
        namespaced: false,
    }
}

impl Parts {
    /// Subscribes `plugin`'s kinds and builds its writers.
    pub(super) fn bind(&self, plugin: Arc<dyn Reconciler>) -> Binding {
        let info = plugin.info().clone();
        let target = |route| Target {
            route,
            queue: self.queue.clone(),
            echoes: self.echoes.clone(),
        };
        let parent = self
            .informers
            .subscribe(&info.parent, Scope::Mine, target(Route::Parent));
        let children: Vec<Subscription> = info
            .children
            .iter()
            .map(|kind| {
                self.informers.subscribe(
                    kind,
                    Scope::Mine,
                    target(Route::Owner(info.parent.clone())),
                )
            })
            .collect();
        // The policy's entry for the plugin: the namespaces and member clusters it reads in.
        let grant = self.config.validation.grant(&info.name).cloned();
        let mut related = Vec::new();
        let mut related_subscriptions = Vec::new();
        for kind in &info.related {
            let index = Arc::new(KindIndex::counting(
                self.metrics.related_enqueues(&info.name),
                self.metrics
                    .index_entries(&kind.group, &kind.kind, "related"),
            ));
            // A kind the plugin also owns: its related objects are the ones no parent owns (a
            // narrowed registry caches only this host's parents' children; a whole one serves
            // this from the children's informer).
            let scope = if info.children.contains(kind) {
                Scope::Unowned
            } else {
                Scope::All
            };
            let home = Route::Related {
                index: index.clone(),
                cluster: None,
            };
            let subscription = self.informers.subscribe(kind, scope, target(home));
            let members = (self.config.clusters.has_source()).then(|| {
                let route = related_in_members(grant.clone(), index.clone());
                let parents = parent.store().clone();
                (self.config.clusters).listen_in(
                    std::slice::from_ref(kind),
                    (route, self.queue.clone()),
                    parents,
                )
            });
            related.push(RelatedKind {
                kind: kind.clone(),
                index,
                store: subscription.store().clone(),
                members,
            });
            related_subscriptions.push(subscription);
        }
        // Namespaces are watched (to read their labels, never to enqueue anything) only when the
        // entry selects namespaces by label.
        let namespaces = grant
            .as_ref()
            .filter(|g| g.namespace_selector.is_some())
            .map(|_| {
                let nobody = Arc::new(KindIndex::default());
                self.informers.subscribe(
                    &namespace_kind(),
                    Scope::All,
                    target(Route::Related {
                        index: nobody,
                        cluster: None,
                    }),
                )
            });
        let reach = Reach {
            grant,
            namespaces: namespaces.as_ref().map(|s| s.store().clone()),
        };
        let related = Related::new(related).reaching(reach);
        let cache = Cache::from_stores(
            parent.store().clone(),
            children.iter().map(|s| s.store().clone()).collect(),
        )
        // Ready once the Namespaces are listed too: a label the judge has not seen yet would
        // refuse a child the entry allows.
        .with_related(
            related
                .stores()
                .cloned()
                .chain(namespaces.as_ref().map(|s| s.store().clone()))
                .collect(),
        );
        let namespace_store = namespaces.as_ref().map(|s| s.store().clone());
        let mut subscriptions = children;
        subscriptions.extend(namespaces);
        subscriptions.extend(related_subscriptions);
        subscriptions.push(parent);
        // The plugin's writes are its own flow of the host's client: they take turns with the
        // other plugins' when the host's rate limit binds.
        let client = crate::client::for_plugin(&self.client, &info.name);
        let home = Home {
            client: client.clone(),
            queue: self.queue.clone(),
            parents: cache.parents.clone(),
            echoes: self.echoes.clone(),
            metrics: self.metrics.clone(),
            fence: self.config.fence.clone(),
        };
        Binding {
            members: (self.config.clusters.has_source())
                .then(|| Members::new(&info, self.config.clusters.clone(), home)),
            applier: Applier::new(
                client.clone(),
                &info.name,
                self.metrics.clone(),
                self.echoes.clone(),
            ),
            parents: ParentWriter::new(
                client,
                info.parent.clone(),
                &info.name,
                &self.config.instance,
                self.metrics.clone(),
                self.echoes.clone(),
            ),
            invoker: Invoker::with_slots(plugin, &self.slots, self.metrics.clone()),
            cache,
            related,
            namespaces: namespace_store,
            clusters: self.config.clusters.clone(),
            _subscriptions: subscriptions,
        }
    }
}

/// The route of a related kind's events in each member `grant` grants the plugin: the parents
/// that selected the object there, from `index` keyed with the member's name (contract 0.4.0).
/// A member it does not grant is not heard at all.
fn related_in_members(grant: Option<crate::answer::Grant>, index: Arc<KindIndex>) -> RouteIn {
    Arc::new(move |cluster: &str, labels: &crate::clusters::Labels| {
        let granted = (grant.as_ref()).is_some_and(|g| g.allows_cluster(cluster, Some(labels)));
        granted.then(|| Route::Related {
            index: index.clone(),
            cluster: Some(cluster.to_owned()),
        })
    })
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
    #[cfg(test)]
    pub fn new(
        parent: crate::plugin::ResourceKind,
        children: &[crate::plugin::ResourceKind],
    ) -> Self {
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
    pub fn children_of(&self, uid: &str) -> Vec<Arc<CachedObject>> {
        self.children
            .iter()
            .flat_map(|s| s.controlled_by(uid))
            .collect()
    }

    /// The store of a child kind, by apiVersion and kind.
    pub fn child_store(&self, api_version: &str, kind: &str) -> Option<&Arc<Store>> {
        self.children
            .iter()
            .find(|s| s.kind().kind == kind && s.kind().api_version() == api_version)
    }

    /// Returns once every store has received its first full list (at once if they have).
    pub async fn wait_synced(&self) {
        self.parents.wait_synced().await;
        for store in self.children.iter().chain(&self.related) {
            store.wait_synced().await;
        }
    }

    /// Whether every store has received its first full list (`/readyz`).
    pub fn is_synced(&self) -> bool {
        self.parents.is_synced()
            && self.children.iter().all(|s| s.is_synced())
            && self.related.iter().all(|s| s.is_synced())
    }

    /// Why one of these stores does not hold its whole kind (its registry's cap left objects
    /// out), if one does not: nothing is reconciled from them until it does again.
    pub fn short(&self) -> Option<crate::runtime::Short> {
        std::iter::once(&self.parents)
            .chain(&self.children)
            .chain(&self.related)
            .find_map(|s| s.short())
    }

    /// The kinds among these stores that the API server does not serve.
    pub fn unserved(&self) -> Vec<String> {
        std::iter::once(&self.parents)
            .chain(&self.children)
            .chain(&self.related)
            .filter(|s| s.is_unserved())
            .map(|s| s.kind().kind.clone())
            .collect()
    }
}

impl LiveObjects for Cache {
    /// The cached child, parsed: the judge and the apply step look inside it.
    fn get(&self, api_version: &str, kind: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        let cached = self.child_store(api_version, kind)?.get(key)?;
        match cached.decode() {
            Ok(live) => Some(Arc::new(live)),
            Err(e) => {
                tracing::warn!(child = %key, error = %e, "a cached child does not decode");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::watcher;

    use super::*;
    use crate::plugin::test_info::namespaced as kind;

    #[test]
    fn the_stores_are_a_lookup_of_live_objects_by_kind_and_key() {
        let config_maps = kind("", "ConfigMap", "configmaps");
        let deployments = kind("apps", "Deployment", "deployments");
        let c = Cache::new(config_maps.clone(), &[config_maps.clone(), deployments]);
        let page = DynamicObject::new("page", &config_maps.api_resource()).within("default");
        let page = CachedObject::from_object(&page).unwrap_or_else(|e| panic!("{e}"));
        c.children[0].apply(watcher::Event::Apply(page));
        let key = ObjectKey::new("default", "page");
        assert!(LiveObjects::get(&c, "v1", "ConfigMap", &key).is_some());
        assert!(LiveObjects::get(&c, "apps/v1", "Deployment", &key).is_none());
        assert!(
            LiveObjects::get(&c, "v1", "ConfigMap", &ObjectKey::new("other", "page")).is_none()
        );
    }
}
