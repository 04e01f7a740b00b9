//! Which entry of a source serves each parent kind: the first to claim a kind serves it, a later
//! claimant is refused and waits, and when the kind is free again the waiting ones try again.
//!
//! One arbiter per source, the same for files of a directory (an entry is a path) and for the
//! cluster's `Plugin` objects (an entry is a name).

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::hash::Hash;

use crate::plugin::PluginInfo;

/// What identifies a parent kind: two plugins may not both serve one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindKey {
    /// API group of the parent kind.
    pub group: String,
    /// Kind of the parent, e.g. `Blog`.
    pub kind: String,
}

impl KindKey {
    /// The parent kind a plugin declares.
    pub fn of(info: &PluginInfo) -> Self {
        Self {
            group: info.parent.group.clone(),
            kind: info.parent.kind.clone(),
        }
    }
}

impl fmt::Display for KindKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// The kinds served and who serves each; who waits for one.
#[derive(Debug)]
pub(crate) struct Arbiter<Id> {
    owners: HashMap<KindKey, Id>,
    waiting: HashMap<KindKey, BTreeSet<Id>>,
}

impl<Id> Default for Arbiter<Id> {
    fn default() -> Self {
        Self {
            owners: HashMap::new(),
            waiting: HashMap::new(),
        }
    }
}

impl<Id: Clone + Ord + Hash> Arbiter<Id> {
    /// `id` claims `kind`: granted if nobody serves it or `id` does already. Refused with the
    /// entry that serves it otherwise, and `id` waits for the kind (see [`Arbiter::release`]).
    pub(crate) fn claim<Q>(&mut self, kind: &KindKey, id: &Q) -> Result<(), Id>
    where
        Id: Borrow<Q>,
        Q: Ord + ToOwned<Owned = Id> + ?Sized,
    {
        match self.owners.get(kind) {
            Some(owner) if owner.borrow() != id => {
                self.waiting
                    .entry(kind.clone())
                    .or_default()
                    .insert(id.to_owned());
                Err(owner.clone())
            }
            Some(_) => Ok(()),
            None => {
                self.owners.insert(kind.clone(), id.to_owned());
                Ok(())
            }
        }
    }

    /// `kind` is no longer served: it is free, and the entries that waited for it are returned
    /// to try again (none of them waits any more).
    pub(crate) fn release(&mut self, kind: &KindKey) -> BTreeSet<Id> {
        self.owners.remove(kind);
        self.waiting.remove(kind).unwrap_or_default()
    }

    /// `id` is decided on afresh (it changed, or went away): it no longer waits for any kind.
    pub(crate) fn stop_waiting<Q>(&mut self, id: &Q)
    where
        Id: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.waiting.retain(|_, ids| {
            ids.remove(id);
            !ids.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(k: &str) -> KindKey {
        KindKey {
            group: "example.com".into(),
            kind: k.into(),
        }
    }

    #[test]
    fn the_first_claim_serves_and_a_second_waits_until_the_kind_is_free() {
        let mut arbiter = Arbiter::default();
        assert_eq!(arbiter.claim(&kind("Blog"), &"a"), Ok(()));
        assert_eq!(
            arbiter.claim(&kind("Blog"), &"a"),
            Ok(()),
            "a claim renewed"
        );
        assert_eq!(arbiter.claim(&kind("Blog"), &"b"), Err("a"));
        assert_eq!(arbiter.claim(&kind("Blog"), &"c"), Err("a"));
        assert_eq!(arbiter.claim(&kind("Page"), &"d"), Ok(()));
        assert_eq!(
            arbiter.release(&kind("Blog")),
            BTreeSet::from(["b", "c"]),
            "both refused claimants try again"
        );
        assert_eq!(arbiter.release(&kind("Blog")), BTreeSet::new(), "once");
        assert_eq!(arbiter.claim(&kind("Blog"), &"c"), Ok(()));
        assert_eq!(arbiter.claim(&kind("Page"), &"a"), Err("d"));
    }

    #[test]
    fn an_entry_decided_afresh_no_longer_waits() {
        let mut arbiter = Arbiter::default();
        assert_eq!(arbiter.claim(&kind("Blog"), &"a"), Ok(()));
        assert_eq!(arbiter.claim(&kind("Blog"), &"b"), Err("a"));
        assert_eq!(arbiter.claim(&kind("Blog"), &"c"), Err("a"));
        arbiter.stop_waiting(&"b");
        assert_eq!(arbiter.release(&kind("Blog")), BTreeSet::from(["c"]));
    }
}
