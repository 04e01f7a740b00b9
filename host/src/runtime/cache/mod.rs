//! ③ The cache: one store per watched kind, its owner index (client-go's Indexer) and, for the
//! kinds parents select by label, a label index.
//!
//! Reconciles read only from here. Each object is kept compactly ([`CachedObject`]: its JSON,
//! packed against a dictionary its kind shares, and a small header). kube's `Store` has no
//! secondary index, so finding the children of one parent would scan every cached object; the
//! owner index keeps children by their controller's UID and makes that lookup O(children of
//! that parent). The indexes hold the store's `Arc`s, keyed by the objects' own strings:
//! nothing is copied per entry.

mod entry;
mod head;
mod labels;
pub mod object;
mod store;
mod trim;

pub use self::object::{CachedObject, ControllerRef, Incoming, Packing};
pub use self::store::{Store, key_of};
pub use self::trim::LAST_APPLIED;
