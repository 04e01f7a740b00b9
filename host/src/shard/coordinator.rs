//! The coordinator: the leader labels each parent with the member the ring gives it.
//!
//! Every [`ShardConfig::assign_every`] the leader lists the members and the parents of every
//! served kind (metadata only, a page at a time) and writes `shard.weir.dev/owner` where the
//! ring disagrees ([`decide`]): an unassigned parent, or one whose owner is no longer a member,
//! is assigned at once; one whose owner is still a member is first drained (the owner
//! acknowledges by removing both labels, see [`super::acknowledge_drain`]) and assigned on a
//! later pass, once unassigned. Every write carries the `resourceVersion` it decided on, so a
//! pass never overwrites an acknowledgement it has not seen.
//!
//! A pass lists every parent (a *whole* pass) only when something may have moved one: the
//! first pass of a leader, the members changed, a write of the last whole pass failed, or
//! [`WHOLE_EVERY`] went by (an owner label edited by hand). Otherwise it lists only the parents
//! without an owner ([`super::unowned`]): new ones and acknowledged drains, usually none. What
//! the last whole pass saw ([`Whole`]: its members, their ring and the parents each owns) is
//! all that is kept between passes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta};
use serde_json::json;

use super::metrics::ShardMetrics;
use super::parents::{self, PAGE};
use super::placement::Placer;
use super::ring::{LABELLED_VNODES, Ring};
use super::{DRAIN_LABEL, OWNER_LABEL, ShardConfig, members, unowned};
use crate::chain::Chain;
use crate::plugin::ResourceKind;

/// Label writes of one page in flight at once.
pub(super) const PLACING: usize = 32;
/// A whole pass runs at least this often, so an owner label edited by hand is put right.
pub const WHOLE_EVERY: Duration = Duration::from_secs(30);

/// A pass of the coordinator failed before it could place anything.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// The shard Leases could not be listed.
    #[error("listing the shard Leases")]
    Members(#[source] kube::Error),
    /// A parent kind could not be listed.
    #[error("listing {kind} parents")]
    Parents {
        /// The parent kind.
        kind: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// What a parent's labels should become.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// As it is.
    Keep,
    /// Owned by this member from now on (no owner yet, or its owner is gone).
    Assign(String),
    /// Its owner is still a member but the ring gives it to another: the owner must let go first.
    Drain,
    /// The ring gives it back to the owner it was being drained from: the drain is called off.
    Undrain,
}

/// Where a parent owned by `owner` (draining or not) goes on `ring`, keyed by `uid`.
pub fn decide(ring: &Ring, uid: &str, owner: Option<&str>, draining: bool) -> Placement {
    let Some(desired) = ring.owner(uid) else {
        return Placement::Keep;
    };
    match owner {
        Some(o) if o == desired && draining => Placement::Undrain,
        Some(o) if o == desired => Placement::Keep,
        Some(o) if ring.contains(o) && draining => Placement::Keep,
        Some(o) if ring.contains(o) => Placement::Drain,
        _ => Placement::Assign(desired.to_owned()),
    }
}

/// What one parent's label write did.
enum Moved {
    /// Nothing written: kept as it is.
    Not,
    /// The write failed (a 409: the parent changed since it was listed); a whole pass retries.
    Failed,
    /// Labelled for a member.
    Assigned,
    /// Marked for draining.
    Drained,
}

/// How many parents one pass placed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Parents seen.
    pub parents: usize,
    /// Parents assigned (new, or their owner gone).
    pub assigned: usize,
    /// Parents asked to drain.
    pub drained: usize,
    /// Label writes that failed.
    pub failed: usize,
    /// Whether every parent was listed, or only those without an owner.
    pub whole: bool,
    /// By member, the parents labelled for it once this pass's writes are done.
    pub owned: BTreeMap<String, i64>,
    /// The same by parent kind (`Kind.group`).
    pub owned_by_kind: BTreeMap<String, BTreeMap<String, i64>>,
    /// When the first member's Lease runs out unless renewed: the next pass runs then.
    pub first_expiry: Option<SystemTime>,
}

/// What the last whole pass saw, kept until the next one.
pub struct Whole {
    /// The ring of the members it placed for.
    ring: Ring,
    /// When it ran.
    at: Instant,
    /// Whether a write of it failed (the next pass is whole again).
    failed: bool,
    /// The parents each member owned after it, by member and by kind, plus those assigned by
    /// the passes since.
    owned: BTreeMap<String, i64>,
    owned_by_kind: BTreeMap<String, BTreeMap<String, i64>>,
}

impl Whole {
    /// Whether a pass over `members` (sorted) may list only the parents without an owner.
    fn still_holds(&self, members: &[String]) -> bool {
        !self.failed && self.ring.members() == members && self.at.elapsed() < WHOLE_EVERY
    }
}

/// The leader's placement: the parents labelled where the ring wants them, a pass at a time
/// ([`super::placement`] runs it while this replica leads).
pub struct Coordinator {
    /// The leader's client (fenced by the leader Lease).
    client: Client,
    /// The shard Leases' namespace.
    config: ShardConfig,
    /// The parent kinds served now.
    kinds: Arc<dyn Fn() -> Vec<ResourceKind> + Send + Sync>,
    /// The namespace the host watches (`None`: all).
    namespace: Option<String>,
    /// Where members, owned parents and moves are shown.
    metrics: ShardMetrics,
    /// What the last whole pass saw, while it holds.
    last: Option<Whole>,
}

impl Placer for Coordinator {
    async fn pass(&mut self) -> Option<SystemTime> {
        match self.place_parents().await {
            Ok(pass) => {
                if pass.assigned + pass.drained + pass.failed > 0 {
                    tracing::info!(
                        whole = pass.whole,
                        parents = pass.parents,
                        assigned = pass.assigned,
                        drained = pass.drained,
                        failed = pass.failed,
                        "shard assignment pass"
                    );
                }
                pass.first_expiry
            }
            Err(e) => {
                tracing::warn!(error = %Chain(&e), "shard assignment pass failed");
                None
            }
        }
    }

    /// This replica no longer leads: it shows no pass, and its next term starts whole.
    fn stopped(&mut self) {
        self.metrics.stopped_coordinating();
        self.last = None;
    }
}

impl Coordinator {
    /// A coordinator that has not placed anything yet (its first pass is whole).
    pub fn new(
        client: Client,
        config: ShardConfig,
        kinds: Arc<dyn Fn() -> Vec<ResourceKind> + Send + Sync>,
        namespace: Option<String>,
        metrics: ShardMetrics,
    ) -> Self {
        Self {
            client,
            config,
            kinds,
            namespace,
            metrics,
            last: None,
        }
    }

    /// One pass over every served parent kind: whole, or over the parents without an owner
    /// when the last whole pass (updated here) still holds.
    pub async fn place_parents(&mut self) -> Result<Pass, CoordinatorError> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let (members, first_expiry) = members::members_until(&leases)
            .await
            .map_err(CoordinatorError::Members)?;
        let mut pass = Pass {
            first_expiry,
            ..Pass::default()
        };
        if members.is_empty() {
            self.last = None;
            return Ok(pass);
        }
        // A pass over the unowned goes on from the last whole pass: its ring, its time and
        // its counts, taken over rather than copied.
        let (ring, whole_at) = match self.last.take().filter(|w| w.still_holds(&members)) {
            Some(w) => {
                pass.owned = w.owned;
                pass.owned_by_kind = w.owned_by_kind;
                (w.ring, Some(w.at))
            }
            None => (Ring::new(members, LABELLED_VNODES), None),
        };
        pass.whole = whole_at.is_none();
        let zero =
            || -> BTreeMap<String, i64> { ring.members().iter().map(|m| (m.clone(), 0)).collect() };
        if pass.whole {
            pass.owned = zero();
        }
        let mut params = ListParams::default().limit(PAGE);
        if !pass.whole {
            params = params.labels(&unowned());
        }
        for kind in (self.kinds)() {
            let shown = if kind.group.is_empty() {
                kind.kind.clone()
            } else {
                format!("{}.{}", kind.kind, kind.group)
            };
            // A whole pass starts with no counts, so every kind from zero.
            let mut of_kind = pass.owned_by_kind.remove(&shown).unwrap_or_else(zero);
            let list = parents::collection(&kind, self.namespace.as_deref());
            let mut params = params.clone();
            loop {
                let page = parents::page(&self.client, &list, &params)
                    .await
                    .map_err(|source| CoordinatorError::Parents {
                        kind: kind.kind.clone(),
                        source,
                    })?;
                let parents: Vec<ObjectMeta> = page
                    .items
                    .into_iter()
                    .map(|p| p.metadata.into_object_meta())
                    .collect();
                // The page's writes go out together: after a member's Lease runs out, its
                // parents are relabelled in about one round trip, not one after another.
                let writes: Vec<_> = parents
                    .iter()
                    .map(|parent| self.place(&ring, &kind, parent))
                    .collect();
                let placed: Vec<(Option<String>, Moved)> = futures::stream::iter(writes)
                    .buffered(PLACING)
                    .collect()
                    .await;
                for (owner, moved) in placed {
                    pass.parents += 1;
                    match moved {
                        Moved::Assigned => pass.assigned += 1,
                        Moved::Drained => pass.drained += 1,
                        Moved::Failed => pass.failed += 1,
                        Moved::Not => {}
                    }
                    // A pass over the unowned counts only what it assigned: the parents it
                    // did not list are counted since the whole pass.
                    let counted = pass.whole || matches!(moved, Moved::Assigned);
                    if let Some(owner) = owner.filter(|_| counted) {
                        for counts in [&mut pass.owned, &mut of_kind] {
                            if let Some(n) = counts.get_mut(&owner) {
                                *n += 1;
                            }
                        }
                    }
                }
                match page.metadata.continue_.filter(|c| !c.is_empty()) {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
            pass.owned_by_kind.insert(shown, of_kind);
        }
        self.metrics
            .passed(ring.members(), &pass.owned, pass.owned_by_kind.clone());
        self.last = Some(Whole {
            at: whole_at.unwrap_or_else(Instant::now),
            failed: pass.failed > 0,
            owned: pass.owned.clone(),
            owned_by_kind: pass.owned_by_kind.clone(),
            ring,
        });
        Ok(pass)
    }

    /// Writes the labels the ring asks for on one parent, if they differ; returns its owner
    /// once written (`None`: none, or the write failed and the next pass tries again) and
    /// what the write did.
    async fn place(
        &self,
        ring: &Ring,
        kind: &ResourceKind,
        meta: &ObjectMeta,
    ) -> (Option<String>, Moved) {
        let Some(uid) = meta.uid.as_deref() else {
            return (None, Moved::Not);
        };
        let labels = meta.labels.as_ref();
        let owner = labels.and_then(|l| l.get(OWNER_LABEL)).cloned();
        let draining = labels.is_some_and(|l| l.contains_key(DRAIN_LABEL));
        let placement = decide(ring, uid, owner.as_deref(), draining);
        let change = match &placement {
            Placement::Keep => return (owner, Moved::Not),
            Placement::Assign(member) => json!({OWNER_LABEL: member, DRAIN_LABEL: null}),
            Placement::Drain => json!({DRAIN_LABEL: "true"}),
            Placement::Undrain => json!({DRAIN_LABEL: null}),
        };
        if let Err(e) = parents::relabel(&self.client, kind, meta, change).await {
            // A 409: the parent changed since it was listed (an acknowledgement); a whole
            // pass next.
            let name = meta.name.as_deref().unwrap_or_default();
            tracing::debug!(kind = %kind.kind, parent = %name, error = %Chain(&e), "relabelling a parent failed");
            return (None, Moved::Failed);
        }
        match placement {
            Placement::Assign(member) => {
                self.metrics.moved("assigned");
                (Some(member), Moved::Assigned)
            }
            Placement::Drain => {
                self.metrics.moved("drained");
                (owner, Moved::Drained)
            }
            Placement::Keep | Placement::Undrain => (owner, Moved::Not),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Ring {
        Ring::new(["a", "b", "c"], LABELLED_VNODES)
    }

    /// A UID the ring gives to `member`, and one it gives to someone else.
    fn uid_of(ring: &Ring, member: &str, mine: bool) -> String {
        (0..)
            .map(|i| format!("uid-{i}"))
            .find(|u| (ring.owner(u) == Some(member)) == mine)
            .unwrap_or_default()
    }

    #[test]
    fn an_unassigned_parent_or_one_of_a_gone_member_is_assigned_at_once() {
        let ring = ring();
        let uid = uid_of(&ring, "a", true);
        assert_eq!(
            decide(&ring, &uid, None, false),
            Placement::Assign("a".into())
        );
        assert_eq!(
            decide(&ring, &uid, Some("gone"), false),
            Placement::Assign("a".into())
        );
        assert_eq!(
            decide(&ring, &uid, Some("gone"), true),
            Placement::Assign("a".into())
        );
    }

    #[test]
    fn a_parent_of_a_live_member_that_the_ring_moves_is_drained_first_and_then_left_alone() {
        let ring = ring();
        let uid = uid_of(&ring, "a", false);
        assert_eq!(decide(&ring, &uid, Some("a"), false), Placement::Drain);
        assert_eq!(
            decide(&ring, &uid, Some("a"), true),
            Placement::Keep,
            "waits for the acknowledgement"
        );
    }

    #[test]
    fn a_parent_where_the_ring_wants_it_stays_and_a_drain_back_to_its_owner_is_called_off() {
        let ring = ring();
        let uid = uid_of(&ring, "b", true);
        assert_eq!(decide(&ring, &uid, Some("b"), false), Placement::Keep);
        assert_eq!(decide(&ring, &uid, Some("b"), true), Placement::Undrain);
    }

    #[test]
    fn a_pass_lists_only_the_unowned_while_the_members_stay_and_no_write_failed() {
        let whole = |failed: bool, ago: Duration| Whole {
            ring: ring(),
            at: Instant::now().checked_sub(ago).unwrap_or_else(Instant::now),
            failed,
            owned: BTreeMap::new(),
            owned_by_kind: BTreeMap::new(),
        };
        let abc: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert!(whole(false, Duration::ZERO).still_holds(&abc));
        let ab: Vec<String> = abc[..2].to_vec();
        assert!(
            !whole(false, Duration::ZERO).still_holds(&ab),
            "a member left"
        );
        let abcd: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        assert!(
            !whole(false, Duration::ZERO).still_holds(&abcd),
            "a member joined"
        );
        assert!(
            !whole(true, Duration::ZERO).still_holds(&abc),
            "a write failed"
        );
        assert!(
            !whole(false, WHOLE_EVERY).still_holds(&abc),
            "a label edited by hand is put right within WHOLE_EVERY"
        );
    }

    #[test]
    fn without_members_nothing_is_placed() {
        let empty = Ring::new(Vec::<String>::new(), LABELLED_VNODES);
        assert_eq!(decide(&empty, "uid", None, false), Placement::Keep);
    }
}
