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
