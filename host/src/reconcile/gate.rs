//! The gate: whether this host reconciles a parent now, and what that parent's children carry.
//!
//! One host alone reconciles every parent ([`Whole`]). Hosts that split the parents between them
//! plug their own gate in (`crate::shard` has one per way of splitting); the controller asks the
//! gate and does not know why it answers as it does, as controller-runtime's sharding adds a
//! predicate and a wrapped reconciler and leaves the reconciler alone.

use futures::future::BoxFuture;
use kube::Client;

use crate::answer::DesiredChild;
use crate::plugin::ResourceKind;
use crate::runtime::cache::CachedObject;

/// What the gate says of one cached parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Reconcile it.
    Mine,
    /// Another host reconciles it: done here, as if it were deleted.
    NotMine,
    /// It is being handed to another host: let go of it ([`Gate::let_go`]), reconcile nothing.
    LetGo,
}

/// The gate's view, held still for the length of one reconcile (a view that could change in
/// the middle would let two hosts write the same parent).
pub trait Pass: Send + Sync {
    /// Whether this host reconciles `parent`.
    fn admits(&self, parent: &CachedObject) -> Admission;
}

/// Whether this host reconciles a parent, and what the children of the parents it does carry.
pub trait Gate: std::fmt::Debug + Send + Sync + 'static {
    /// The gate's view for one reconcile, waited for when it is being changed.
    fn enter(&self) -> BoxFuture<'_, Box<dyn Pass + '_>>;

    /// Lets go of `parent` of `kind`, which [`Pass::admits`] said to hand over; an error is
    /// retried with the key.
    fn let_go<'a>(
        &'a self,
        client: &'a Client,
        kind: &'a ResourceKind,
        parent: &'a CachedObject,
    ) -> BoxFuture<'a, Result<(), kube::Error>>;

    /// Marks each desired child of `parent` with what it must carry to stay with its parent.
    fn stamp(&self, children: &mut [DesiredChild], parent: &CachedObject);
}

/// The gate of a host that reconciles every parent: every parent is its own, children carry nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Whole;

impl Pass for Whole {
    fn admits(&self, _: &CachedObject) -> Admission {
        Admission::Mine
    }
}

impl Gate for Whole {
    fn enter(&self) -> BoxFuture<'_, Box<dyn Pass + '_>> {
        Box::pin(std::future::ready(Box::new(Whole) as Box<dyn Pass>))
    }

    fn let_go<'a>(
        &'a self,
        _: &'a Client,
        _: &'a ResourceKind,
        _: &'a CachedObject,
    ) -> BoxFuture<'a, Result<(), kube::Error>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn stamp(&self, _: &mut [DesiredChild], _: &CachedObject) {}
}
