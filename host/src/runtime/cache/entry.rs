//! The entries of the store's hash tables: an object's `Arc` hashed by its key, looked up by a borrowed key (no key copies).

use std::hash::{Hash, Hasher, RandomState};
use std::sync::Arc;

use hashbrown::Equivalent;

use super::object::CachedObject;
use crate::runtime::ObjectKey;

/// An object's namespace and name as the sets hash and compare them, borrowed from the object
/// or from an [`ObjectKey`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct KeyRef<'a> {
    namespace: Option<&'a str>,
    name: &'a str,
}

impl<'a> KeyRef<'a> {
    pub(super) fn of(obj: &'a CachedObject) -> Self {
        Self {
            namespace: obj.namespace(),
            name: obj.name(),
        }
    }

    pub(super) fn from_key(key: &'a ObjectKey) -> Self {
        Self {
            namespace: key.namespace.as_deref(),
            name: &key.name,
        }
    }
}

/// A cached object in a set, found by its key (read from the object: the set copies no string).
#[derive(Clone)]
pub(super) struct Entry(pub(super) Arc<CachedObject>);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        KeyRef::of(&self.0) == KeyRef::of(&other.0)
    }
}

impl Eq for Entry {}

impl Hash for Entry {
    fn hash<H: Hasher>(&self, state: &mut H) {
        KeyRef::of(&self.0).hash(state);
    }
}

impl Equivalent<Entry> for KeyRef<'_> {
    fn equivalent(&self, entry: &Entry) -> bool {
        *self == KeyRef::of(&entry.0)
    }
}

/// A set of cached objects by key.
pub(super) type Set = hashbrown::HashSet<Entry, RandomState>;
