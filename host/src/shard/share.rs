//! Server-side sharding at work: the hashes this replica serves, the `shardSelector` its parent
//! watches send, and the loop that moves them as members come and go, one writer at a time.
//!
//! When the API server serves `shardSelector` ([`super::server_side::offered`]), no label is
//! written: every replica computes the ring itself from the live shard Leases, keyed by the
//! parent UID's FNV-1a hash (the hash the server filters by), and its parent informers list and
//! watch with the selector of the hashes it serves ([`Share::client`]). Children cannot be
//! selected so: KEP-5866 filters by `metadata.uid` or `metadata.namespace`, and a child's UID is
//! its own. They are watched whole (a replica finds its parents' children by owner reference in
//! that cache), so only the parents' cache and queue shrink to 1/N.
//!
//! **One writer at a time, without a coordinator.** Each member publishes on its own shard
//! Lease (annotation [`VIEW_ANNOTATION`]) the members of the ring it serves under, its *view*.
//! It serves only hashes its published view gives it and no other live member's published view
//! gives that member ([`claimable`]). When the members change it first narrows to what both its
//! old and its new view give it, waiting for the reconciles in flight ([`Share::serve`] takes
//! the write side of the lock every reconcile holds the read side of), then publishes the new
//! view, then widens. A hash two views give to two members is served by neither until the older
//! view is withdrawn: each member publishes before it reads the others, so of two members
//! widening into one hash at least one sees the other's claim. A killed member's claims count
//! until its Lease runs out; its writes stop before that (its shard Lease fences them).
//!
//! Known limit: a replica stalled past its Lease's duration (not killed) that then renews it
//! serves its old ranges until its next pass notices it had lapsed, while another member may
//! have taken them (its reconciles' writes are fenced while the Lease has lapsed, not after).

use std::sync::{Arc, PoisonError};
use std::time::SystemTime;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::client::Body;
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::sync::{RwLock, RwLockReadGuard, watch};
use tower::BoxError;

use super::metrics::ShardMetrics;
use super::placement::Placer;
use super::ring::{Ring, VNODES};
use super::server_side::{PARAM, fnv1a, selector_of};
use super::{ShardConfig, members};
use crate::chain::Chain;
use crate::client::{self, Next, Sent, Wrap, WrapLayer};

/// The annotation of a member's shard Lease naming the members of the ring it serves under.
pub const VIEW_ANNOTATION: &str = "shard.weir.dev/view";

/// Half-open ranges `start..end` of the 64-bit hash (`end` up to 2^64), sorted.
pub type Ranges = Vec<(u128, u128)>;

/// This replica's share (cheap to clone: shared).
#[derive(Clone, Debug)]
pub struct Share {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The served ranges: read for the whole of each reconcile, written once none is in flight.
    ranges: RwLock<Ranges>,
    /// The `shardSelector` of the served ranges.
    selector: std::sync::RwLock<String>,
    /// Bumped when the ranges change: the parent watches list again.
    changes: watch::Sender<u64>,
}

impl Default for Share {
    fn default() -> Self {
        Self::new()
    }
}

impl Share {
    /// A share serving nothing yet.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                ranges: RwLock::new(Vec::new()),
                selector: std::sync::RwLock::new(selector_of(&[])),
                changes: watch::Sender::new(0),
            }),
        }
    }

    /// The served ranges, held for one reconcile: they do not change until it is dropped.
    pub async fn serving(&self) -> RwLockReadGuard<'_, Ranges> {
        self.inner.ranges.read().await
    }

    /// Whether the parent with `uid` hashes into `ranges`.
    pub fn covers(ranges: &[(u128, u128)], uid: &str) -> bool {
        let hash = u128::from(fnv1a(uid));
        ranges
            .iter()
            .any(|(start, end)| *start <= hash && hash < *end)
    }

    /// The ranges served now.
    pub async fn ranges(&self) -> Ranges {
        self.inner.ranges.read().await.clone()
    }

    /// Serves `ranges` from now on: waits until no reconcile is in flight, then changes them
    /// and has the parent watches list again with the new selector.
    pub async fn serve(&self, ranges: Ranges) {
        let mut served = self.inner.ranges.write().await;
        if *served == ranges {
            return;
        }
        *self
            .inner
            .selector
            .write()
            .unwrap_or_else(PoisonError::into_inner) = selector_of(&ranges);
        *served = ranges;
        drop(served);
        self.inner.changes.send_modify(|n| *n += 1);
    }

    /// Told each time the served ranges change.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// A client sending `client`'s requests, its `GET`s (the parent watches' lists and watches)
    /// with the current `shardSelector`.
    pub fn client(&self, client: &Client) -> Client {
        client::derive(client).with_layer(&self.layer()).build()
    }

    /// The tower layer of [`Share::client`]: adds the current `shardSelector` to each `GET`.
    pub fn layer(&self) -> SelectorLayer {
        WrapLayer::new(self.clone())
    }
}

/// The tower layer of a client selecting this replica's share ([`Share::layer`]).
pub type SelectorLayer = WrapLayer<Share>;

impl Wrap for Share {
    /// Sends a `GET` with the `shardSelector` of the ranges served now, anything else as it is.
    fn wrap(&self, mut request: http::Request<Body>, next: Next) -> Sent {
        if request.method() == http::Method::GET {
            let selector = self
                .inner
                .selector
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let uri = request.uri().to_string();
            let joined = if uri.contains('?') { '&' } else { '?' };
            match format!("{uri}{joined}{PARAM}={}", encode(&selector)).parse() {
                Ok(uri) => *request.uri_mut() = uri,
                Err(e) => return Box::pin(async move { Err(BoxError::from(e)) }),
            }
        }
        next.send(request)
    }
}

/// `text` percent-encoded for a query string (all but letters, digits and `-._~`).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The hashes `me` may serve: those the ring of its published view `mine` gives it that the
/// published view of no other live member gives that member (`others`: member and its ring).
pub fn claimable(me: &str, mine: &Ring, others: &[(String, Ring)]) -> Ranges {
    let mut bounds: Vec<u128> = vec![0, 1 << 64];
    for (member, ring) in
        std::iter::once((me, mine)).chain(others.iter().map(|(m, r)| (m.as_str(), r)))
    {
        for (start, end) in ring.ranges(member) {
            bounds.extend([start, end]);
        }
    }
    bounds.sort_unstable();
    bounds.dedup();
    let mut served: Ranges = Vec::new();
    for pair in bounds.windows(2) {
        let (start, end) = (pair[0], pair[1]);
        // Ownership is the same across `start..end`: no range of any ring ends inside it.
        let Ok(at) = u64::try_from(start) else { break };
        let free = mine.owner_of_hash(at) == Some(me)
            && others
                .iter()
                .all(|(m, ring)| ring.owner_of_hash(at) != Some(m.as_str()));
        if !free {
            continue;
        }
        match served.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => served.push((start, end)),
        }
    }
    served
}

/// The part of `a` inside `b`.
pub fn intersect(a: &[(u128, u128)], b: &[(u128, u128)]) -> Ranges {
    let mut out = Vec::new();
    for (s1, e1) in a {
        for (s2, e2) in b {
            let (s, e) = ((*s1).max(*s2), (*e1).min(*e2));
            if s < e {
                out.push((s, e));
            }
        }
    }
    out.sort_unstable();
    out
}

/// A view as published: the members, comma-joined.
fn parse_view(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One member's side of the protocol: moves this replica's share as the members change
/// ([`super::placement`] runs it from the host's start to its stop).
pub struct Follower {
    api: Api<Lease>,
    me: String,
    /// The view its Lease shows, once it published one since it last was a member.
    published: Option<Vec<String>>,
    share: Share,
    metrics: ShardMetrics,
}

impl Placer for Follower {
    /// Having published a view, it reads the others again before it widens.
    async fn pass(&mut self) -> Option<SystemTime> {
        loop {
            match self.follow().await {
                Ok(Step::Published) => {}
                Ok(Step::Served(expiry)) => return expiry,
                Err(e) => {
                    tracing::warn!(error = %Chain(&e), "following the shard members failed");
                    return None;
                }
            }
        }
    }
}

/// How a pass ended.
enum Step {
    /// It narrowed and published a new view: the others must be read again.
    Published,
    /// It serves what it may; the first member Lease runs out then.
    Served(Option<SystemTime>),
}

impl Follower {
    /// The follower of `config`'s member, moving `share`; `client` reads the shard Leases and
    /// writes its own Lease's view.
    pub fn new(client: Client, config: &ShardConfig, share: Share, metrics: ShardMetrics) -> Self {
        Self {
            api: Api::namespaced(client, &config.namespace),
            me: config.identity.clone(),
            published: None,
            share,
            metrics,
        }
    }

    /// One step of the protocol: narrow and publish a new view, or serve what it may.
    async fn follow(&mut self) -> Result<Step, kube::Error> {
        let leases = self.api.list(&ListParams::default()).await?;
        let now = SystemTime::now();
        let expiry = members::first_expiry(&leases.items, now);
        let live: Vec<(String, Option<Vec<String>>)> = leases
            .iter()
            .filter_map(|lease| {
                let member = members::member_of(lease, now)?;
                let view = lease
                    .annotations()
                    .get(VIEW_ANNOTATION)
                    .map(|v| parse_view(v));
                Some((member, view))
            })
            .collect();
        let mut target: Vec<String> = live.iter().map(|(m, _)| m.clone()).collect();
        target.sort();
        self.metrics.viewed(&target);
        if !target.contains(&self.me) {
            // Not a member (its Lease lapsed): others may take its parents; it serves none,
            // and publishes again before it serves any.
            self.share.serve(Vec::new()).await;
            self.published = None;
            return Ok(Step::Served(expiry));
        }
        let others: Vec<(String, Ring)> = live
            .iter()
            .filter(|(m, _)| *m != self.me)
            .filter_map(|(m, view)| Some((m.clone(), Ring::new(view.clone()?, VNODES))))
            .collect();
        if self.published.as_ref() != Some(&target) {
            let next = claimable(&self.me, &Ring::new(target.clone(), VNODES), &others);
            let kept = intersect(&self.share.ranges().await, &next);
            self.share.serve(kept).await;
            let patch = json!({"metadata": {"annotations": {VIEW_ANNOTATION: target.join(",")}}});
            let params = PatchParams {
                field_manager: Some(super::FIELD_MANAGER.into()),
                ..PatchParams::default()
            };
            let lease = members::lease_name(&self.me);
            self.api
                .patch(&lease, &params, &Patch::Merge(&patch))
                .await?;
            tracing::info!(members = ?target, "published a new view of the shard members");
            self.published = Some(target);
            return Ok(Step::Published);
        }
        let view = self.published.clone().unwrap_or_default();
        let served = claimable(&self.me, &Ring::new(view, VNODES), &others);
        self.share.serve(served).await;
        Ok(Step::Served(expiry))
    }
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
