//! The stores one plugin reads, taken from the runtime's shared informers: its parents, its
//! children per kind (Owns, found through the owner index) and its related kinds (Watches).

use std::sync::Arc;

use kube::api::DynamicObject;

use crate::answer::LiveObjects;
use crate::runtime::ObjectKey;
use crate::runtime::cache::{CachedObject, Store};

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
