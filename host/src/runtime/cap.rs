//! A bound on the objects one informer registry caches, all its stores together, and the relist
//! that refills a store once there is room again.
//!
//! A registry given a [`Cap`] (a tenant namespace's, `maxCachedObjects`) counts every object its
//! stores hold against it. A watch event bringing an object the stores do not hold yet, once
//! the cap is reached, is not cached (the object is decoded for a moment, then dropped): the
//! store is then *short* ([`crate::runtime::cache::Store::short`]) and stays so until a list of
//! its kind fits whole. A controller reading a short store does not reconcile from it (it could
//! neither see nor keep what was left out), and says so ([`Short`]). A new version of an object
//! held is always cached; a deleted object gives its place back.
//!
//! Recovery is level-triggered: whenever the cap has room and a store is short, that store's
//! watch is restarted ([`refilling`]): its list brings what was left out, its old objects are
//! kept until the list ends (no reader sees the kind empty), and the keys it lists are enqueued
//! as after any relist. A registry with no cap counts nothing and relists nothing.
//!
//! The cap also counts its stores, which have listed and which are short ([`Cap::fill`]), and
//! wakes whoever follows that ([`Cap::fill_changes`]) when it changes: a tenant's TenantPlugins
//! say from it whether the tenant is at its cap (`crate::cluster::cache_status`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use super::cache::Store;

/// How long a short store waits, once there is room, before its kind is listed again: the
/// deletions that made the room are taken in one relist, not one each.
pub const REFILL_PAUSE: Duration = Duration::from_secs(1);

/// The objects one registry's stores may hold together, and what they hold and were refused.
#[derive(Debug)]
pub struct Cap {
    /// Whose cache this is, for messages (`tenant team-a`).
    owner: String,
    limit: usize,
    held: AtomicUsize,
    refused: AtomicU64,
    /// Ticks when room is made, or when a store ends a list still short.
    changes: watch::Sender<u64>,
    /// Its stores as they hold their kinds; sends when one is made, lists, turns short or
    /// whole, or is dropped.
    stores: watch::Sender<Stores>,
}

/// What one capped store holds of its kind, as its cap counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Holding {
    /// It has ended a full list.
    pub(crate) listed: bool,
    /// The cap left objects of its kind out since its last list that fit whole.
    pub(crate) short: bool,
}

/// A cap's stores as they hold their kinds (read through [`Cap::fill`]).
#[derive(Debug, Default)]
pub struct Stores {
    /// Stores that have not ended their first list.
    unlisted: usize,
    /// Whether a store ever ended a list.
    listed_once: bool,
    /// The short stores, by kind.
    short: BTreeMap<String, usize>,
}

impl Stores {
    /// Counts a store of `kind` holding as `holding` in (`add`) or out.
    fn count(&mut self, kind: &str, holding: Holding, add: bool) {
        let step = |n: &mut usize| {
            *n = if add { *n + 1 } else { n.saturating_sub(1) };
        };
        if holding.listed {
            self.listed_once = true;
        } else {
            step(&mut self.unlisted);
        }
        if holding.short {
            let short = self.short.entry(kind.to_owned()).or_default();
            step(short);
            if *short == 0 {
                self.short.remove(kind);
            }
        }
    }
}

/// What a cap's stores hold of their kinds, read at one moment ([`Cap::fill`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    /// Whose cache (`tenant team-a`).
    pub owner: String,
    /// The cap.
    pub limit: usize,
    /// The objects held.
    pub held: usize,
    /// The kinds a store left objects out of (sorted); empty while every store is whole.
    pub left_out: Vec<String>,
    /// Whether a store has ended a list and every store has: until then an empty `left_out`
    /// says nothing.
    pub listed: bool,
}

/// Why a store's objects are not reconciled from: the cap left some of its kind out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{owner} caches at most {limit} objects (maxCachedObjects) and holds {held}: some {kind} objects are not cached, so nothing that reads {kind} is reconciled until objects are deleted"
)]
pub struct Short {
    /// Whose cache (`tenant team-a`).
    pub owner: String,
    /// The cap.
    pub limit: usize,
    /// The objects held when this was read.
    pub held: usize,
    /// The kind left out.
    pub kind: String,
}

impl Cap {
    /// A cap of `limit` objects on `owner`'s cache.
    pub fn new(owner: impl Into<String>, limit: usize) -> Arc<Self> {
        Arc::new(Self {
            owner: owner.into(),
            limit,
            held: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            changes: watch::Sender::new(0),
            stores: watch::Sender::new(Stores::default()),
        })
    }

    /// The objects the stores may hold together.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The objects the stores hold now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The objects not cached because the cap was reached, since the registry started.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Whether one more object fits.
    pub fn has_room(&self) -> bool {
        self.held() < self.limit
    }

    /// Takes a place for a new object; `false` (counted as refused) when none is left.
    pub(crate) fn take(&self) -> bool {
        let taken = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.limit).then_some(held + 1)
            })
            .is_ok();
        if !taken {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Gives back the places of `n` objects no longer held, and wakes the short stores.
    pub(crate) fn give(&self, n: usize) {
        if n == 0 {
            return;
        }
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                Some(held.saturating_sub(n))
            });
        self.poke();
    }

    /// Wakes the short stores to look again (a store ended a list still short).
    pub(crate) fn poke(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Why `kind`'s store is short.
    pub(crate) fn short(&self, kind: &str) -> Short {
        Short {
            owner: self.owner.clone(),
            limit: self.limit,
            held: self.held(),
            kind: kind.to_owned(),
        }
    }

    /// Counts a store of `kind` moving from `from` to `to` (`None`: not there; made, dropped),
    /// and wakes [`Cap::fill_changes`] if that changes anything.
    pub(crate) fn recount(&self, kind: &str, from: Option<Holding>, to: Option<Holding>) {
        if from == to {
            return;
        }
        self.stores.send_modify(|stores| {
            if let Some(from) = from {
                stores.count(kind, from, false);
            }
            if let Some(to) = to {
                stores.count(kind, to, true);
            }
        });
    }

    /// What the stores hold of their kinds now.
    pub fn fill(&self) -> Fill {
        let stores = self.stores.borrow();
        Fill {
            owner: self.owner.clone(),
            limit: self.limit,
            held: self.held(),
            left_out: stores.short.keys().cloned().collect(),
            listed: stores.listed_once && stores.unlisted == 0,
        }
    }

    /// Changes when a store is made, ends its first list, turns short or whole, or is dropped:
    /// when [`Cap::fill`] may say something else (the count alone changes nothing).
    pub fn fill_changes(&self) -> watch::Receiver<Stores> {
        self.stores.subscribe()
    }

    /// Returns once `store` has ended a list since it had ended `lists`, is short, and the cap
    /// has room: the moment its kind should be listed again.
    async fn room_for(&self, store: &Store, lists: u64) {
        let mut changes = self.changes.subscribe();
        loop {
            if store.lists() > lists && store.short().is_some() && self.has_room() {
                return;
            }
            if changes.changed().await.is_err() {
                // The sender lives in `self`, borrowed here: never reached.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Runs the watch `watch` makes for `store`'s kind for ever, restarting it whenever the store
/// is short and `cap` has room (after [`REFILL_PAUSE`]), so the list of the restarted watch
/// brings what the cap left out. Returns when a watch does.
pub async fn refilling<W, F>(watch: W, store: Arc<Store>, cap: Arc<Cap>)
where
    W: Fn() -> F,
    F: Future<Output = ()>,
{
    loop {
        let lists = store.lists();
        // The watch keeps running through the pause: its kind is listed again only after it.
        let refill = async {
            cap.room_for(&store, lists).await;
            tokio::time::sleep(REFILL_PAUSE).await;
        };
        tokio::select! {
            () = watch() => return,
            () = refill => {}
        }
        tracing::info!(
            kind = %store.kind().kind,
            held = cap.held(),
            limit = cap.limit(),
            "{}'s cache has room again: listing a kind it left out", cap.owner
        );
    }
}

#[cfg(test)]
#[path = "cap_tests.rs"]
mod tests;
