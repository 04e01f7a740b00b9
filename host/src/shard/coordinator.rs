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
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Client, Resource};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::metrics::ShardMetrics;
use super::ring::{LABELLED_VNODES, Ring};
use super::{DRAIN_LABEL, OWNER_LABEL, ShardConfig, members, unowned};
use crate::chain::Chain;
use crate::fence::Fence;
use crate::plugin::ResourceKind;

/// The field manager of the coordinator's label writes.
pub const FIELD_MANAGER: &str = "weir-shard";

/// Parents listed per request. A page is read whole before it is decoded: at 500 a whole pass
/// held about 1.5 MiB more at once (heaptrack, 3,000 Blogs), and at 100 a whole pass over
/// 30,000 parents is 300 requests every [`WHOLE_EVERY`]. Each page also comes on a connection
/// of its own ([`Coordinator::list_page`]).
const PAGE: u32 = 100;
/// Label writes of one page in flight at once.
const PLACING: usize = 32;
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

/// A page of parents as the coordinator lists them. Each parent's metadata is read down to its
/// name, namespace, UID, `resourceVersion` and labels: its `managedFields`, often most of a
/// listed parent, are skipped unparsed rather than decoded into JSON trees and dropped (a page
/// of 500 decoded in full grew each worker thread's heap by about 10 MiB).
#[derive(Debug, Default, serde::Deserialize)]
struct ListedPage {
    #[serde(default)]
    metadata: ListedPageMeta,
    #[serde(default)]
    items: Vec<Listed>,
}

/// The list's own metadata: where the next page starts.
#[derive(Debug, Default, serde::Deserialize)]
struct ListedPageMeta {
    #[serde(rename = "continue")]
    continue_: Option<String>,
}

/// One listed parent.
#[derive(Debug, Default, serde::Deserialize)]
struct Listed {
    #[serde(default)]
    metadata: ListedMeta,
}

/// The fields of a parent's metadata a placement reads.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
}

impl ListedMeta {
    fn into_object_meta(self) -> ObjectMeta {
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            labels: self.labels,
            ..ObjectMeta::default()
        }
    }
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
    pub first_expiry: Option<std::time::SystemTime>,
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

/// The leader's assignment loop.
pub struct Coordinator {
    /// The leader's client (fenced by the leader Lease).
    pub client: Client,
    /// The shard Leases' namespace and the pass period.
    pub config: ShardConfig,
    /// The parent kinds served now.
    pub kinds: Arc<dyn Fn() -> Vec<ResourceKind> + Send + Sync>,
    /// The namespace the host watches (`None`: all).
    pub namespace: Option<String>,
    /// Where members, owned parents and moves are shown.
    pub metrics: ShardMetrics,
}

impl Coordinator {
    /// Runs a pass every period while this replica leads (while `leading` is open), until `stop`.
    pub async fn run(self, leading: Fence, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.config.assign_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut expiry = None;
        let mut leads = false;
        let mut whole = None;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
                // A member that stops renewing is gone at this moment: place its parents then.
                () = tokio::time::sleep(expiry.map_or(Duration::ZERO, members::until_past)),
                    if expiry.is_some() => {}
                // Just elected (a killed leader's successor): place at once.
                () = leading.opened(), if !leads => {}
            }
            expiry = None;
            leads = leading.allows();
            if !leads {
                self.metrics.stopped_coordinating();
                whole = None;
                continue;
            }
            let passed = self.pass(&mut whole).await;
            expiry = passed.as_ref().ok().and_then(|p| p.first_expiry);
            match passed {
                Ok(pass) if pass.assigned + pass.drained + pass.failed > 0 => {
                    tracing::info!(
                        whole = pass.whole,
                        parents = pass.parents,
                        assigned = pass.assigned,
                        drained = pass.drained,
                        failed = pass.failed,
                        "shard assignment pass"
                    );
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %Chain(&e), "shard assignment pass failed"),
            }
        }
    }

    /// One pass over every served parent kind: whole, or over the parents without an owner
    /// when `last` (the last whole pass, updated here) still holds.
    pub async fn pass(&self, last: &mut Option<Whole>) -> Result<Pass, CoordinatorError> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.config.namespace);
        let (members, first_expiry) = members::members_until(&leases)
            .await
            .map_err(CoordinatorError::Members)?;
        let mut pass = Pass {
            first_expiry,
            ..Pass::default()
        };
        if members.is_empty() {
            *last = None;
            return Ok(pass);
        }
        // A pass over the unowned goes on from the last whole pass: its ring, its time and
        // its counts, taken over rather than copied.
        let (ring, whole_at) = match last.take().filter(|w| w.still_holds(&members)) {
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
            let list = collection(&kind, self.namespace.as_deref());
            let mut params = params.clone();
            loop {
                let page = self.list_page(&list, &params).await.map_err(|source| {
                    CoordinatorError::Parents {
                        kind: kind.kind.clone(),
                        source,
                    }
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
        *last = Some(Whole {
            at: whole_at.unwrap_or_else(Instant::now),
            failed: pass.failed > 0,
            owned: pass.owned.clone(),
            owned_by_kind: pass.owned_by_kind.clone(),
            ring,
        });
        Ok(pass)
    }

    /// One page of a parent kind's metadata, each parent read down to what a placement needs,
    /// on a connection closed once it is read.
    ///
    /// A connection's read buffer grows to the largest answer it carried (a page: up to about
    /// 300 KiB) and keeps that size for as long as the connection lives, and kube's connection
    /// pool keeps an idle connection open until the server closes it. The label writes keep up
    /// to [`PLACING`] connections open, so one page after another landed on another of them:
    /// at 3,000 Blogs the coordinator held 1.8 MiB more of such buffers than a replica of the
    /// same share (heaptrack), and its peak RSS was 2–2.5 MiB higher; with each page's
    /// connection closed the two are level. The cost is a connection per page (a TLS handshake
    /// on a cluster): one a pass, plus one per [`PAGE`] parents on a whole pass.
    async fn list_page(
        &self,
        list: &kube::core::Request,
        params: &ListParams,
    ) -> Result<ListedPage, kube::Error> {
        self.client.request(page_request(list, params)?).await
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
        if let Err(e) = relabel(&self.client, kind, meta, change).await {
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

/// Requests on `kind`'s collection in `namespace` (all namespaces when `None`, or when the kind
/// is cluster-scoped).
fn collection(kind: &ResourceKind, namespace: Option<&str>) -> kube::core::Request {
    let namespace = namespace.filter(|_| kind.namespaced);
    kube::core::Request::new(DynamicObject::url_path(&kind.api_resource(), namespace))
}

/// The request for one page of `list` (see [`Coordinator::list_page`]): metadata only, and
/// `Connection: close`.
fn page_request(
    list: &kube::core::Request,
    params: &ListParams,
) -> Result<http::Request<Vec<u8>>, kube::Error> {
    let mut request = list
        .list_metadata(params)
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("list_metadata");
    request.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    Ok(request)
}

/// A merge patch of `labels` on the parent `meta` describes, only if it is still at `meta`'s
/// `resourceVersion`; API errors (a 409 among them) as kube's client reports them.
pub(super) async fn relabel(
    client: &Client,
    kind: &ResourceKind,
    meta: &ObjectMeta,
    labels: Value,
) -> Result<(), kube::Error> {
    let patch = json!({"metadata": {
        "resourceVersion": meta.resource_version,
        "labels": labels,
    }});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    let name = meta.name.clone().unwrap_or_default();
    let mut request = collection(kind, meta.namespace.as_deref())
        .patch(&name, &params, &Patch::Merge(&patch))
        .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("patch");
    // The parent written comes back whole; nothing here reads it, so it is not decoded (at the
    // first pass over 30,000 new parents, decoding each answer was most of the coordinator's
    // own memory).
    client.request_text(request).await?;
    tracing::debug!(kind = %kind.kind, parent = %name, labels = %patch["metadata"]["labels"], "relabelled");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_asked_for_as_metadata_on_a_connection_closed_after_it() {
        let kind = ResourceKind::of_v1("example.dev", "Blog", "blogs", true);
        let params = ListParams::default()
            .limit(PAGE)
            .labels(&unowned())
            .continue_token("next");
        let request = page_request(&collection(&kind, Some("ns")), &params)
            .unwrap_or_else(|e| panic!("a page request: {e}"));
        let header = |name| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
        };
        assert_eq!(header(http::header::CONNECTION), "close");
        assert!(
            header(http::header::ACCEPT).contains("as=PartialObjectMetadataList"),
            "{:?}",
            request.headers()
        );
        let query = request.uri().query().unwrap_or_default();
        assert!(
            request.uri().path().ends_with("/namespaces/ns/blogs"),
            "{}",
            request.uri()
        );
        for part in ["limit=100", "continue=next", "labelSelector="] {
            assert!(query.contains(part), "{part} in {query}");
        }
    }

    #[test]
    fn a_listed_page_keeps_what_a_placement_reads_and_where_the_next_page_starts() {
        let served = json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadataList",
            "metadata": {"resourceVersion": "9", "continue": "next"},
            "items": [{
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadata",
                "metadata": {
                    "name": "b1", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                    "generation": 2, "finalizers": ["weir.dev/cleanup"],
                    "labels": {OWNER_LABEL: "a", DRAIN_LABEL: "true"},
                    "managedFields": [{"manager": "weir", "operation": "Apply",
                        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:title": {}}}}]
                }
            }]
        });
        let page: ListedPage =
            serde_json::from_value(served).unwrap_or_else(|e| panic!("a served page: {e}"));
        assert_eq!(page.metadata.continue_.as_deref(), Some("next"));
        let metas: Vec<ObjectMeta> = page
            .items
            .into_iter()
            .map(|p| p.metadata.into_object_meta())
            .collect();
        let want = ObjectMeta {
            name: Some("b1".into()),
            namespace: Some("ns".into()),
            uid: Some("u1".into()),
            resource_version: Some("7".into()),
            labels: Some(BTreeMap::from([
                (OWNER_LABEL.into(), "a".into()),
                (DRAIN_LABEL.into(), "true".into()),
            ])),
            ..ObjectMeta::default()
        };
        assert_eq!(metas, [want]);
    }

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
