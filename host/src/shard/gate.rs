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
        Labels.admits(parent)
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
        Box::pin(acknowledge_drain(client, kind, parent))
    }

    fn stamp(&self, children: &mut [DesiredChild], parent: &CachedObject) {
        follow_parent(children, parent);
    }
}
