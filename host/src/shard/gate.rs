//! The shard gates: the controller's [`Gate`] for a replica sharded by labels, and for one
//! sharded server-side.
//!
//! By labels ([`Labels`]), a parent the coordinator asked to drain is let go (its labels
//! removed, [`acknowledge_drain`]) and every child carries its parent's owner label
//! ([`follow_parent`]). Server-side ([`Ranges`]), a parent is this replica's when its UID
//! hashes into the served ranges, held still for the whole reconcile; a parent still labelled
//! from a time the replicas sharded by labels is let go and followed the same way.

use futures::future::BoxFuture;
use kube::Client;
use tokio::sync::RwLockReadGuard;

use super::share::Share;
use super::{acknowledge_drain, follow_parent, is_draining};
use crate::answer::DesiredChild;
use crate::plugin::ResourceKind;
use crate::reconcile::gate::{Admission, Gate, Pass};
use crate::runtime::cache::CachedObject;

/// The gate of a replica sharded by labels: its informers show only its parents.
#[derive(Clone, Copy, Debug, Default)]
pub struct Labels;

impl Pass for Labels {
    fn admits(&self, parent: &CachedObject) -> Admission {
        if is_draining(parent) {
            Admission::LetGo
        } else {
            Admission::Mine
        }
    }
}

impl Gate for Labels {
    fn enter(&self) -> BoxFuture<'_, Box<dyn Pass + '_>> {
        Box::pin(std::future::ready(Box::new(Labels) as Box<dyn Pass>))
    }

    fn let_go<'a>(
        &'a self,
        client: &'a Client,
        kind: &'a ResourceKind,
        parent: &'a CachedObject,
    ) -> BoxFuture<'a, Result<(), kube::Error>> {
        Box::pin(acknowledge_drain(client, kind, parent))
    }

    fn stamp(&self, children: &mut [DesiredChild], parent: &CachedObject) {
        follow_parent(children, parent);
    }
}

/// What [`Ranges`] does beyond its ranges: as sharded by labels.
static LABELS: Labels = Labels;

/// The gate of a replica sharded server-side: the parents whose UID hashes into its share.
#[derive(Clone, Debug)]
pub struct Ranges(pub Share);

/// The served ranges, held for one reconcile.
struct Held<'a>(RwLockReadGuard<'a, super::share::Ranges>);

impl Pass for Held<'_> {
    fn admits(&self, parent: &CachedObject) -> Admission {
        if !parent.uid().is_some_and(|uid| Share::covers(&self.0, uid)) {
            return Admission::NotMine;
        }
        LABELS.admits(parent)
    }
}

impl Gate for Ranges {
    fn enter(&self) -> BoxFuture<'_, Box<dyn Pass + '_>> {
        Box::pin(async move { Box::new(Held(self.0.serving().await)) as Box<dyn Pass + '_> })
    }

    fn let_go<'a>(
        &'a self,
        client: &'a Client,
        kind: &'a ResourceKind,
        parent: &'a CachedObject,
    ) -> BoxFuture<'a, Result<(), kube::Error>> {
        LABELS.let_go(client, kind, parent)
    }

    fn stamp(&self, children: &mut [DesiredChild], parent: &CachedObject) {
        LABELS.stamp(children, parent);
    }
}

#[cfg(test)]
mod tests {
    use kube::api::{ApiResource, DynamicObject};

    use super::*;
    use crate::shard::{DRAIN_LABEL, OWNER_LABEL};

    fn parent(drained: bool) -> CachedObject {
        let kind = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut obj = DynamicObject::new("b", &kind).within("default");
        obj.metadata.uid = Some("5c1d0a3e-uid".into());
        if drained {
            obj.metadata.labels = Some([(DRAIN_LABEL.to_owned(), "true".to_owned())].into());
        }
        CachedObject::from_object(&obj).unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn a_label_gate_lets_a_draining_parent_go_and_admits_the_others() {
        assert_eq!(Labels.enter().await.admits(&parent(false)), Admission::Mine);
        assert_eq!(Labels.enter().await.admits(&parent(true)), Admission::LetGo);
    }

    #[tokio::test]
    async fn a_server_side_gate_admits_only_the_parents_its_served_ranges_cover() {
        let share = Share::new();
        let gate = Ranges(share.clone());
        let admitted = |drained| {
            let gate = gate.clone();
            async move { gate.enter().await.admits(&parent(drained)) }
        };
        assert_eq!(
            admitted(false).await,
            Admission::NotMine,
            "serving nothing yet"
        );
        share.serve(vec![(0, 1u128 << 64)]).await;
        assert_eq!(admitted(false).await, Admission::Mine, "every hash served");
        assert_eq!(
            admitted(true).await,
            Admission::LetGo,
            "still labelled to drain"
        );
    }

    #[test]
    fn both_gates_stamp_the_parents_owner_on_its_children() {
        let kind = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut owned = DynamicObject::new("b", &kind).within("default");
        owned.metadata.labels = Some([(OWNER_LABEL.to_owned(), "weir-1".to_owned())].into());
        let owned = CachedObject::from_object(&owned).unwrap_or_else(|e| panic!("{e}"));
        let gates: [&dyn Gate; 2] = [&Labels, &Ranges(Share::new())];
        for gate in gates {
            let mut children = vec![DesiredChild {
                kind: crate::plugin::test_info::namespaced("", "ConfigMap", "configmaps"),
                key: crate::runtime::ObjectKey::new("default", "b-page"),
                manifest: serde_json::json!({"metadata": {"name": "b-page"}}),
                live: None,
                cluster: None,
            }];
            gate.stamp(&mut children, &owned);
            assert_eq!(
                children[0].manifest["metadata"]["labels"][OWNER_LABEL], "weir-1",
                "{gate:?}"
            );
        }
    }
}
