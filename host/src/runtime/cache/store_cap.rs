//! How a store counts against its registry's cap (`crate::runtime::cap`): what it may cache,
//! the places it gives back, and how it holds its kind (listed, short), which the cap counts.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Inner, Store};
use crate::runtime::cache::entry::KeyRef;
use crate::runtime::cache::object::CachedObject;
use crate::runtime::cap::{Cap, Holding, Short};

impl Store {
    /// This store, its objects counted against `cap` (shared by its registry's stores).
    #[must_use]
    pub fn capped(mut self, cap: Option<Arc<Cap>>) -> Self {
        self.cap = cap;
        if let Some(cap) = &self.cap {
            cap.recount(&self.kind.kind, None, Some(self.holding()));
        }
        self
    }

    /// Whether `obj` may be cached: always without a cap or when its key is held (a new version
    /// takes no new place); otherwise if the cap has room. A refusal makes the store short.
    pub(super) fn admits(&self, inner: &mut Inner, obj: &CachedObject) -> bool {
        let Some(cap) = &self.cap else { return true };
        if inner.objects.contains(&KeyRef::of(obj)) || cap.take() {
            return true;
        }
        inner.refused = true;
        let was = self.holding();
        if !self.short.swap(true, Ordering::AcqRel) {
            cap.recount(&self.kind.kind, Some(was), Some(self.holding()));
            tracing::warn!(
                kind = %self.kind.kind,
                error = %cap.short(&self.kind.kind),
                "cache cap reached: objects left out"
            );
        }
        false
    }

    /// Gives the places of `n` objects no longer held back to the cap, if any.
    pub(super) fn release(&self, n: usize) {
        if let Some(cap) = &self.cap {
            cap.give(n);
        }
    }

    /// A full list ended, `short` if the cap left objects out during it: the store is short
    /// until a list fits whole.
    pub(super) fn listed(&self, short: bool) {
        let was = self.holding();
        self.short.store(short, Ordering::Release);
        self.lists.fetch_add(1, Ordering::AcqRel);
        if let Some(cap) = &self.cap {
            cap.recount(&self.kind.kind, Some(was), Some(self.holding()));
            if short {
                // Room made during the list (by another store) must not go unnoticed.
                cap.poke();
            }
        }
    }

    /// The store is dropped holding `held` objects: their places go back to the cap, which
    /// counts the store no more.
    pub(super) fn leave_cap(&self, held: usize) {
        if let Some(cap) = &self.cap {
            cap.recount(&self.kind.kind, Some(self.holding()), None);
            cap.give(held);
        }
    }

    /// Why this store does not hold its whole kind, if the cap left objects out since its last
    /// list that fit whole. Never for a store with no cap.
    pub fn short(&self) -> Option<Short> {
        let cap = self.cap.as_ref()?;
        self.short
            .load(Ordering::Acquire)
            .then(|| cap.short(&self.kind.kind))
    }

    /// The full lists this store has received.
    pub fn lists(&self) -> u64 {
        self.lists.load(Ordering::Acquire)
    }

    /// How it holds its kind, as its cap counts it.
    fn holding(&self) -> Holding {
        Holding {
            listed: self.lists() > 0,
            short: self.short.load(Ordering::Acquire),
        }
    }
}
