//! ① Sources: watch events update the cache and become queue keys (For the parent, Owns its children).
//!
//! Each event is told apart as an outside change or the echo of one of Weir's own writes,
//! so the hot-loop guard can forgive the first and count the second.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::TypeMeta;
use kube::runtime::{WatchStreamExt, watcher};

use super::cache::{Store, key_of};
use super::echoes::Echoes;
use super::queue::{Cause, ObjectKey, Queue};
use crate::chain::Chain;
use crate::plugin::ResourceKind;

/// Which parent a watched object should enqueue.
#[derive(Clone, Debug)]
pub enum Route {
    /// The object is a parent: enqueue itself.
    Parent,
    /// The object is a child: enqueue its controller if that is of this parent kind.
    Owner(ResourceKind),
}

impl Route {
    fn key(&self, obj: &DynamicObject) -> Option<ObjectKey> {
        match self {
            Route::Parent => Some(key_of(obj)),
            Route::Owner(parent) => {
                let api_version = parent.api_version();
                let owner = obj.metadata.owner_references.as_deref()?.iter().find(|r| {
                    r.controller == Some(true)
                        && r.kind == parent.kind
                        && r.api_version == api_version
                })?;
                Some(ObjectKey {
                    namespace: obj.metadata.namespace.clone(),
                    name: owner.name.clone(),
                })
            }
        }
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
    targets: Mutex<Vec<Arc<Target>>>,
}

impl Informer {
    /// An informer (not yet watching) for `kind`.
    pub fn new(kind: ResourceKind) -> Self {
        Self {
            store: Arc::new(Store::new(kind)),
            targets: Mutex::new(Vec::new()),
        }
    }

    /// Adds a controller's target; returns whether it is the first (so the caller starts the watch).
    pub fn subscribe(&self, target: Target) -> bool {
        let mut targets = self.targets.lock().unwrap_or_else(|p| p.into_inner());
        targets.push(Arc::new(target));
        targets.len() == 1
    }

    fn targets(&self) -> Vec<Arc<Target>> {
        self.targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The informers of one host, by kind, so controllers share them.
#[derive(Default)]
pub struct Informers {
    by_kind: Mutex<HashMap<ResourceKind, Arc<Informer>>>,
}

impl Informers {
    /// The informer of `kind`, created on first use.
    pub fn get(&self, kind: &ResourceKind) -> Arc<Informer> {
        let mut map = self.by_kind.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(kind.clone())
            .or_insert_with(|| Arc::new(Informer::new(kind.clone())))
            .clone()
    }
}

/// Watches one kind for ever: each event updates the informer's store and enqueues the parent
/// it concerns in every subscribed controller. Watch errors (a dropped stream, a 410 Gone) are
/// retried with backoff by kube's watcher, which relists and resumes.
pub async fn watch(client: Client, namespace: Option<String>, informer: Arc<Informer>) {
    let store = informer.store.clone();
    let kind = store.kind().clone();
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client, ns, &kind.api_resource()),
        None => Api::all_with(client, &kind.api_resource()),
    };
    let types = TypeMeta {
        api_version: kind.api_version(),
        kind: kind.kind.clone(),
    };
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    // Keys seen during a (re)list wait until the store holds the whole new list, so a worker
    // never reconciles them against the contents from before the relist.
    let mut relisted: Vec<(Arc<Target>, ObjectKey)> = Vec::new();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(kind = %kind.kind, error = %Chain(&e), "watch failed; retrying");
                continue;
            }
        };
        let deleted = matches!(event, watcher::Event::Delete(_));
        let init_done = matches!(event, watcher::Event::InitDone);
        let event = event.modify(|o| {
            if o.types.is_none() {
                o.types = Some(types.clone());
            }
            // managedFields are often the bulk of an object and neither the host nor a plugin
            // reads them: not caching them roughly halves the cache.
            o.metadata.managed_fields = None;
        });
        let initial = matches!(event, watcher::Event::InitApply(_));
        let obj = store.apply(event);
        if init_done {
            for (target, key) in relisted.drain(..) {
                target.queue.add(key, Cause::Outside);
            }
        }
        let Some(obj) = obj else { continue };
        for target in informer.targets() {
            let Some(key) = target.route.key(&obj) else {
                continue;
            };
            if initial {
                relisted.push((target, key));
                continue;
            }
            target
                .echoes
                .enqueue(&target.queue, key, &kind.kind, &obj, deleted);
        }
    }
}

/// Enqueues every cached parent every `period` (the level-triggered safety net).
pub async fn resync(parents: Arc<Store>, queue: Arc<Queue>, period: Duration) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        tick.tick().await;
        let keys = parents.keys();
        tracing::debug!(parents = keys.len(), "periodic resync");
        for key in keys {
            queue.add(key, Cause::Resync);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::queue::QueueConfig;

    fn kind(name: &str) -> ResourceKind {
        ResourceKind {
            group: String::new(),
            version: "v1".into(),
            kind: name.into(),
            plural: format!("{}s", name.to_lowercase()),
            namespaced: true,
        }
    }

    fn target() -> Target {
        Target {
            route: Route::Parent,
            queue: Arc::new(Queue::new(QueueConfig::default())),
            echoes: Arc::new(Echoes::default()),
        }
    }

    #[test]
    fn controllers_owning_the_same_kind_share_one_informer_and_one_watch() {
        let informers = Informers::default();
        let a = informers.get(&kind("ConfigMap"));
        let b = informers.get(&kind("ConfigMap"));
        assert!(Arc::ptr_eq(&a, &b), "one store per kind");
        assert!(!Arc::ptr_eq(&a, &informers.get(&kind("Service"))));
        assert!(
            a.subscribe(target()),
            "the first subscriber starts the watch"
        );
        assert!(!b.subscribe(target()), "later subscribers reuse it");
        assert_eq!(a.targets().len(), 2);
    }
}
