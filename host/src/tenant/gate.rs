//! The tenant gates: a tenant's controller reconciles parents of its own namespace only
//! ([`Confined`]), and the host's own controllers leave a kind granted to a tenant namespace to
//! that tenant there ([`Ceded`]); both ask the host's gate (sharding) about the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use kube::Client;

use crate::answer::DesiredChild;
use crate::plugin::ResourceKind;
use crate::reconcile::gate::{Admission, Gate, Pass};
use crate::runtime::cache::CachedObject;

/// The gate of a tenant namespace's controllers: a parent elsewhere is not this controller's
/// ([`Admission::NotMine`]); one in the namespace is as the host's gate `inner` says.
#[derive(Debug)]
pub struct Confined {
    namespace: String,
    inner: Arc<dyn Gate>,
}

impl Confined {
    /// The gate of `namespace`, within the host's gate `inner`.
    pub fn new(namespace: impl Into<String>, inner: Arc<dyn Gate>) -> Self {
        Self {
            namespace: namespace.into(),
            inner,
        }
    }
}

/// The inner gate's view, held for one reconcile, and the namespace.
struct Held<'a> {
    namespace: &'a str,
    inner: Box<dyn Pass + 'a>,
}

impl Pass for Held<'_> {
    fn admits(&self, parent: &CachedObject) -> Admission {
        if parent.namespace() != Some(self.namespace) {
            return Admission::NotMine;
        }
        self.inner.admits(parent)
    }
}

impl Gate for Confined {
    fn enter(&self) -> BoxFuture<'_, Box<dyn Pass + '_>> {
        Box::pin(async move {
            let inner = self.inner.enter().await;
            Box::new(Held {
                namespace: &self.namespace,
                inner,
            }) as Box<dyn Pass + '_>
        })
    }

    fn let_go<'a>(
        &'a self,
        client: &'a Client,
        kind: &'a ResourceKind,
        parent: &'a CachedObject,
    ) -> BoxFuture<'a, Result<(), kube::Error>> {
        self.inner.let_go(client, kind, parent)
    }

    fn stamp(&self, children: &mut [DesiredChild], parent: &CachedObject) {
        self.inner.stamp(children, parent);
    }
}

/// The gate of the host's own controllers when the policy has tenants: a parent of a kind the
/// policy grants to its namespace's tenant is that tenant's to reconcile, not theirs
/// ([`Admission::NotMine`]), so a cluster `Plugin` and a `TenantPlugin` never both serve it.
#[derive(Debug)]
pub struct Ceded {
    /// `(group, kind)` to the tenant namespaces granted it.
    granted: BTreeMap<(String, String), BTreeSet<String>>,
    inner: Arc<dyn Gate>,
}

impl Ceded {
    /// The host's gate `inner`, leaving to each tenant of `tenants` (namespace and kinds) its kinds.
    pub fn new<'a>(
        tenants: impl IntoIterator<Item = (&'a String, &'a crate::policy::Tenant)>,
        inner: Arc<dyn Gate>,
    ) -> Self {
        let mut granted: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for (namespace, tenant) in tenants {
            for kind in &tenant.kinds {
                granted
                    .entry((kind.group.clone(), kind.kind.clone()))
                    .or_default()
                    .insert(namespace.clone());
            }
        }
        Self { granted, inner }
    }
}

/// The inner gate's view, held for one reconcile, and the kinds ceded.
struct Leaving<'a> {
    granted: &'a BTreeMap<(String, String), BTreeSet<String>>,
    inner: Box<dyn Pass + 'a>,
}

impl Pass for Leaving<'_> {
    fn admits(&self, parent: &CachedObject) -> Admission {
        let types = parent.types();
        let group = types.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let ceded = parent.namespace().is_some_and(|ns| {
            self.granted
                .get(&(group.to_owned(), types.kind.clone()))
                .is_some_and(|namespaces| namespaces.contains(ns))
        });
        if ceded {
            return Admission::NotMine;
        }
        self.inner.admits(parent)
    }
}

impl Gate for Ceded {
    fn enter(&self) -> BoxFuture<'_, Box<dyn Pass + '_>> {
        Box::pin(async move {
            let inner = self.inner.enter().await;
            Box::new(Leaving {
                granted: &self.granted,
                inner,
            }) as Box<dyn Pass + '_>
        })
    }

    fn let_go<'a>(
        &'a self,
        client: &'a Client,
        kind: &'a ResourceKind,
        parent: &'a CachedObject,
    ) -> BoxFuture<'a, Result<(), kube::Error>> {
        self.inner.let_go(client, kind, parent)
    }

    fn stamp(&self, children: &mut [DesiredChild], parent: &CachedObject) {
        self.inner.stamp(children, parent);
    }
}

#[cfg(test)]
mod tests {
    use kube::api::{ApiResource, DynamicObject};

    use super::*;
    use crate::reconcile::gate::Whole;
    use crate::shard::gate::Ranges;
    use crate::shard::share::Share;

    fn blog(namespace: Option<&str>) -> CachedObject {
        let kind = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "example.com",
            "v1",
            "Blog",
        ));
        let mut obj = DynamicObject::new("b", &kind);
        obj.metadata.namespace = namespace.map(str::to_owned);
        obj.metadata.uid = Some("5c1d0a3e-uid".into());
        CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn a_tenant_gate_admits_only_parents_of_its_namespace() {
        let gate = Confined::new("team-a", Arc::new(Whole));
        let pass = gate.enter().await;
        assert_eq!(pass.admits(&blog(Some("team-a"))), Admission::Mine);
        assert_eq!(pass.admits(&blog(Some("team-b"))), Admission::NotMine);
        assert_eq!(
            pass.admits(&blog(None)),
            Admission::NotMine,
            "cluster-scoped"
        );
    }

    #[tokio::test]
    async fn a_tenant_gate_asks_the_hosts_gate_about_its_own_parents() {
        let share = Share::new();
        let gate = Confined::new("team-a", Arc::new(Ranges(share.clone())));
        assert_eq!(
            gate.enter().await.admits(&blog(Some("team-a"))),
            Admission::NotMine,
            "this replica serves no share yet"
        );
        share.serve(vec![(0, 1u128 << 64)]).await;
        assert_eq!(
            gate.enter().await.admits(&blog(Some("team-a"))),
            Admission::Mine
        );
    }

    #[tokio::test]
    async fn the_hosts_gate_leaves_a_kind_granted_to_a_tenant_to_it_in_its_namespace_only() {
        let tenant = crate::policy::Tenant {
            kinds: vec![crate::policy::GroupKind::new("example.com", "Blog")],
            secret_data: false,
            ..crate::policy::Tenant::default()
        };
        let tenants = [("team-a".to_owned(), tenant)];
        let gate = Ceded::new(tenants.iter().map(|(n, t)| (n, t)), Arc::new(Whole));
        let pass = gate.enter().await;
        assert_eq!(pass.admits(&blog(Some("team-a"))), Admission::NotMine);
        assert_eq!(pass.admits(&blog(Some("team-b"))), Admission::Mine);
        let kind = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut other = DynamicObject::new("c", &kind);
        other.metadata.namespace = Some("team-a".into());
        let other = CachedObject::from_object(&other).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pass.admits(&other), Admission::Mine, "another kind");
    }
}
