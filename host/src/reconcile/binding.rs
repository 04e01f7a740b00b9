//! One plugin version bound to the stores of the kinds it declared, and its writers.
//!
//! A hot swap replaces the whole binding at once; a reconcile takes the binding once at its
//! start and finishes on it, so it never mixes two versions.

use std::sync::Arc;

use kube::api::DynamicObject;

use super::Parts;
use super::apply::Applier;
use super::invoke::{Invoker, Reconciler};
use super::related::{KindIndex, Reach, Related, RelatedKind};
use super::status::ParentWriter;
use super::stores::Cache;
use crate::answer::LiveObjects;
use crate::plugin::{PluginInfo, ResourceKind};
use crate::runtime::ObjectKey;
use crate::runtime::cache::Store;
use crate::runtime::{Route, Scope, Subscription, Target};

/// One plugin version bound to the stores of the kinds it declared.
///
/// A hot swap replaces the whole binding at once; a reconcile takes the binding once at its
/// start and finishes on it, so it never mixes two versions.
pub struct Binding {
    pub(super) invoker: Invoker,
    pub(super) cache: Cache,
    pub(super) applier: Applier,
    pub(super) parents: ParentWriter,
    /// The related kinds the plugin reads, their stores and indexes.
    pub(super) related: Related,
    /// The host's Namespaces, when the policy's entry for the plugin selects namespaces by label.
    namespaces: Option<Arc<Store>>,
    /// Held for the subscriptions' sake: dropping the binding unsubscribes its kinds.
    _subscriptions: Vec<Subscription>,
}

impl Binding {
    /// What the plugin declared.
    pub fn info(&self) -> &PluginInfo {
        self.invoker.info()
    }

    /// The UID of the cached parent `key`, if it is cached.
    pub fn parent_uid(&self, key: &ObjectKey) -> Option<String> {
        self.cache.parents.get(key)?.uid().map(str::to_owned)
    }

    /// What the judge looks names up in: the children's caches, and the Namespaces (their
    /// labels) for the policy's entry.
    pub(super) fn live(&self) -> Live<'_> {
        Live {
            cache: &self.cache,
            namespaces: self.namespaces.as_deref(),
        }
    }
}

/// The live objects an answer is judged against ([`Binding::live`]).
pub(super) struct Live<'a> {
    cache: &'a Cache,
    namespaces: Option<&'a Store>,
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
            let subscription =
                self.informers
                    .subscribe(kind, scope, target(Route::Related(index.clone())));
            related.push(RelatedKind {
                kind: kind.clone(),
                index,
                store: subscription.store().clone(),
            });
            related_subscriptions.push(subscription);
        }
        // The policy's entry for the plugin: Namespaces are watched (to read their labels, never
        // to enqueue anything) only when it selects namespaces by label.
        let grant = self.config.validation.grant(&info.name).cloned();
        let namespaces = grant
            .as_ref()
            .filter(|g| g.namespace_selector.is_some())
            .map(|_| {
                let nobody = Arc::new(KindIndex::default());
                self.informers.subscribe(
                    &namespace_kind(),
                    Scope::All,
                    target(Route::Related(nobody)),
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
        Binding {
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
            _subscriptions: subscriptions,
        }
    }
}
