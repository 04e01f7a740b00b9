//! ⑤c Children in member clusters: written through each member's own client, marked instead of owned, pruned by the mark, deleted before the parent goes.
//!
//! A 0.4.0 plugin may place a child in a member cluster the host has engaged
//! (`crate::clusters`). The judge has stamped it with its parent's mark instead of an owner
//! reference (`crate::answer::ParentMark`); here it is written by the same [`Applier`] as a
//! child in the parent's cluster, made for that member ([`Applier::marking`]): through the
//! member's own client (its limits; the plugin's flow of it), create-then-apply, an object of
//! the same name there that this parent's mark is not on refused as foreign and left alone.
//! The member's observed children are the ones its cache holds with the parent's UID label
//! (`Engaged::children_of`, from a label index); the ones the answer no longer wants are
//! pruned, as in the parent's cluster.
//!
//! The API server of a member cannot garbage-collect a child whose parent lives elsewhere, so
//! the host holds its own finalizer, [`MEMBERS_FINALIZER`], on a parent with children in
//! members: added before the first of them is written, removed once the parent is being
//! deleted, the plugin's own cleanup is done, and no marked child of it is left in any member
//! ([`Members::release`]). The parent records the clusters it placed children in, and "none
//! left" is only believed once each of them is engaged and its cache of the child kinds holds
//! its first list: a host restarted between a child's create and its parent's deletion finds
//! the child again by its mark before it lets the parent go. Its deletion waits while one of
//! them is not engaged, not listed yet, or cannot delete its children there (its API server
//! fails), the others' children going meanwhile; the parent's status names the cluster and why
//! (one rule, in `super::placed`). A member the parent did not record holds nothing up, one
//! that never answers included. (A parent recorded before records were kept waits for every
//! engaged member's first list, `Engaged::settled`.) Children are written in each member at
//! once, so a member that fails or answers slowly holds up no other member's writes.
//!
//! A change of a marked child in a member (a hand edit, a deletion) enqueues its parent
//! ([`Members::new`] listens to the child kinds in every member, routed by the mark), so
//! drift there is put back as it is at home.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::Client;
use kube::api::DynamicObject;
use serde_json::json;
use tokio::time::Instant;
use tracing::Instrument;

use super::apply::{Applier, ApplyError, Change};
use super::error::ReconcileError;
use super::finalizer::{ECHO_TTL, Finalizers, add_patch};
use super::placed::{self, Holdup, Seen};
use super::status::ParentWriter;
use crate::answer::{self, DesiredChild, PARENT_UID_LABEL, ParentMark, Refusal, recorded_clusters};
use crate::chain::Chain;
use crate::clusters::{Engaged, Listening, MemberObject};
use crate::fence::Fence;
use crate::metrics::Metrics;
use crate::plugin::{LOCAL_CLUSTER, PluginInfo, ResourceKind};
use crate::runtime::cache::{CachedObject, Store};
use crate::runtime::echoes::Echoes;
use crate::runtime::{Finish, MapToParent, ObjectKey, Queue, Route};

/// The host's finalizer on a parent with children in member clusters.
pub const MEMBERS_FINALIZER: &str = "weir.dev/member-children";

/// How soon a parent being deleted is looked at again while its children in members go.
const RELEASE_AGAIN: Duration = Duration::from_secs(1);

/// How soon a parent whose deletion a member cluster holds up is looked at again (a member
/// engaged again, or a child's change there, enqueues it sooner).
const HELD_AGAIN: Duration = Duration::from_secs(3);

/// One plugin version's writes to member clusters.
pub struct Members {
    engaged: Engaged,
    /// The plugin's name (its flow of each member's client, its write metrics).
    plugin: String,
    /// `name@version`, in errors.
    label: String,
    /// The child kinds it declared.
    kinds: Vec<ResourceKind>,
    metrics: Arc<Metrics>,
    /// The controller's write-time leadership gate, on each member's writes as on its own.
    fence: Fence,
    /// [`MEMBERS_FINALIZER`] on the parents.
    finalizers: Finalizers,
    /// The member clusters each parent (by uid) was last recorded with
    /// ([`crate::answer::MEMBER_CLUSTERS_ANNOTATION`]), until its cached copy shows them.
    recording: Mutex<HashMap<String, (BTreeSet<String>, Instant)>>,
    /// Held for its sake: a marked child's change in any member enqueues its parent.
    _listening: Listening,
}

/// What of the parent's cluster a [`Members`] uses: the client its finalizer is written
/// through, the controller's queue its members' changes enqueue parents in, and its parents.
pub(super) struct Home {
    pub client: Client,
    pub queue: Arc<Queue>,
    pub parents: Arc<Store>,
    pub echoes: Arc<Echoes>,
    pub metrics: Arc<Metrics>,
    pub fence: Fence,
}

impl Members {
    /// `info`'s writes to the members `engaged` holds; from now on a change of a child of
    /// `info`'s kinds marked with one of its parents, in any member, enqueues that parent.
    pub(super) fn new(info: &PluginInfo, engaged: Engaged, home: Home) -> Self {
        let route = Route::Mapped(parent_of(&info.parent));
        let listening = engaged.listen(&info.children, (route, home.queue), home.parents);
        let finalizers = Finalizers::new(
            home.client,
            info.parent.clone(),
            &info.name,
            home.metrics.clone(),
            home.echoes,
        );
        Self {
            engaged,
            plugin: info.name.clone(),
            label: info.label(),
            kinds: info.children.clone(),
            metrics: home.metrics,
            fence: home.fence,
            finalizers,
            recording: Mutex::default(),
            _listening: listening,
        }
    }

    /// The children of `parent` in the engaged members, found by their mark, each with its
    /// cluster's name.
    pub(super) fn observed(&self, parent: &CachedObject) -> Vec<MemberObject> {
        let uid = parent.uid().unwrap_or_default();
        (self.engaged).children_of(uid, parent.namespace(), &self.kinds)
    }

    /// The applier of `cluster`, if it is engaged.
    fn applier(&self, cluster: &str) -> Option<Applier> {
        let (client, echoes) = self.engaged.writer(cluster)?;
        let client = crate::client::for_plugin(&self.fence.client(&client), &self.plugin);
        Some(Applier::new(client, &self.plugin, self.metrics.clone(), echoes).marking())
    }

    /// What can be told of `cluster`'s children of a parent: not engaged, listing, listed.
    fn seen(&self, cluster: &str) -> Seen {
        match self.engaged.lists(cluster, &self.kinds) {
            None => Seen::Released,
            Some(false) => Seen::Listing,
            Some(true) => Seen::Listed,
        }
    }

    /// Writes the `desired` children placed in members and prunes the `observed` ones no
    /// longer wanted, cluster by cluster; the parent holds [`MEMBERS_FINALIZER`] and records
    /// the clusters first ([`placed`]).
    pub(super) async fn write(
        &self,
        parent: &DynamicObject,
        desired: &[DesiredChild],
        observed: &[MemberObject],
    ) -> Result<Vec<Change>, ReconcileError> {
        let placed: Vec<&DesiredChild> = desired.iter().filter(|c| c.cluster.is_some()).collect();
        let recorded = recorded_clusters(parent);
        if placed.is_empty() && observed.is_empty() && recorded.is_empty() {
            return Ok(Vec::new());
        }
        let record = placed::to_record(
            &recorded,
            placed.iter().filter_map(|c| c.cluster.as_deref()),
            observed.iter().map(|(c, _)| c.as_str()),
            |c| self.seen(c),
        );
        if !self.hold(parent, &recorded, &record).await? {
            // A parent being deleted cannot take a new finalizer: nothing new is placed where
            // its deletion could not follow.
            tracing::warn!(
                "the parent is being deleted without the host's finalizer: no child is written in member clusters"
            );
            return Ok(Vec::new());
        }
        let seen = by_cluster(observed);
        let clusters: BTreeSet<&str> = placed
            .iter()
            .filter_map(|c| c.cluster.as_deref())
            .chain(seen.keys().copied())
            .collect();
        let (placed, seen) = (&placed, &seen);
        // Each member at once: one that fails, or is slow to answer, holds up no other's writes.
        let writes = clusters.into_iter().map(|cluster| async move {
            let here: Vec<&DesiredChild> = placed
                .iter()
                .copied()
                .filter(|c| c.cluster.as_deref() == Some(cluster))
                .collect();
            let Some(applier) = self.applier(cluster) else {
                return match here.first() {
                    Some(child) => Err(ApplyError::Released {
                        plugin: self.label.clone(),
                        kind: child.kind.kind.clone(),
                        key: child.key.clone(),
                        cluster: cluster.to_owned(),
                    }),
                    None => Ok(Vec::new()),
                };
            };
            let seen = seen.get(cluster).map_or(&[][..], Vec::as_slice);
            let written = (self.write_in(cluster, &applier, &here, seen).await)
                .map_err(|e| self.in_cluster(cluster, e))?;
            let there = |c| Change::InCluster(cluster.to_owned(), Box::new(c));
            Ok(written.into_iter().map(there).collect::<Vec<_>>())
        });
        let mut changes = Vec::new();
        let mut failed = None;
        for written in futures::future::join_all(writes).await {
            match written {
                Ok(written) => changes.extend(written),
                // The first failing member (by name) fails the reconcile, naming it; the
                // others' writes are made all the same.
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(changes),
        }
    }

    /// Writes `here` in `cluster` through its `applier` and prunes the children `seen` there
    /// that are not among them.
    async fn write_in(
        &self,
        cluster: &str,
        applier: &Applier,
        here: &[&DesiredChild],
        seen: &[Arc<CachedObject>],
    ) -> Result<Vec<Change>, ApplyError> {
        // The applier's lines name the member they were written in.
        let span = tracing::info_span!("member", %cluster);
        let written = async {
            let mut written = applier.apply(here).await?;
            written.extend(applier.prune(here, seen, &self.kinds).await?);
            Ok(written)
        };
        written.instrument(span).await
    }

    /// Makes sure `parent` holds [`MEMBERS_FINALIZER`] and records the member clusters of
    /// `record` (it recorded `recorded`), in one write; `false` when it cannot (it is being
    /// deleted without the finalizer).
    async fn hold(
        &self,
        parent: &DynamicObject,
        recorded: &BTreeSet<String>,
        record: &BTreeSet<String>,
    ) -> Result<bool, ReconcileError> {
        let uid = parent.metadata.uid.as_deref().unwrap_or_default();
        let held = holds(parent);
        if held {
            self.finalizers.seen(uid);
            if recorded == record {
                self.recording().remove(uid);
                return Ok(true);
            }
        } else if parent.metadata.deletion_timestamp.is_some() {
            return Ok(false);
        } else if record.is_empty() {
            // Nothing to place in an engaged member, nor left in one: nothing to hold.
            return Ok(true);
        }
        if self.lags(uid, record) {
            tracing::debug!(
                "the cache lags the member clusters just recorded: not writing them again"
            );
            return Ok(true);
        }
        let mut ops = if held {
            vec![json!({"op": "test", "path": "/metadata/uid", "value": uid})]
        } else {
            let finalizers = parent.metadata.finalizers.as_deref();
            add_patch(uid, finalizers, MEMBERS_FINALIZER)
        };
        ops.extend(placed::record_ops(
            parent.metadata.annotations.as_ref(),
            record,
        ));
        self.finalizers.patch(parent, ops.into()).await?;
        let clusters = record
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(",");
        tracing::debug!(%clusters, "the member clusters of the parent's children are recorded");
        (self.recording()).insert(uid.to_owned(), (record.clone(), Instant::now()));
        Ok(true)
    }

    /// The records written and not yet seen in the cache, by parent uid.
    fn recording(&self) -> std::sync::MutexGuard<'_, HashMap<String, (BTreeSet<String>, Instant)>> {
        self.recording
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `record` was written to the parent with `uid` within [`ECHO_TTL`] (its cached
    /// copy lags); forgets older writes.
    fn lags(&self, uid: &str, record: &BTreeSet<String>) -> bool {
        let mut recording = self.recording();
        let now = Instant::now();
        recording.retain(|_, (_, at)| now.saturating_duration_since(*at) < ECHO_TTL);
        recording.get(uid).is_some_and(|(r, _)| r == record)
    }

    /// One pass of a parent being deleted whose plugin's cleanup is done: its children in the
    /// members are deleted, each member apart (one that fails does not stop the others), and
    /// once none is left (and the members' caches can tell) and no member holds the deletion
    /// up ([`placed::holdups`]), [`MEMBERS_FINALIZER`] is released. What holds it up is shown
    /// on the parent through `writer`.
    pub(super) async fn release(
        &self,
        parent: &DynamicObject,
        cached: &CachedObject,
        writer: &ParentWriter,
    ) -> Result<Finish, ReconcileError> {
        if !holds(parent) {
            return Ok(Finish::Done);
        }
        let observed = self.observed(cached);
        let left = observed.iter().filter(|(_, o)| !o.is_deleting()).count();
        // Each member at once: one slow to fail does not keep the others' children.
        let deleted = by_cluster(&observed)
            .into_iter()
            .map(|(cluster, seen)| async move {
                // Released since it was read: the parent's record holds the deletion up.
                let applier = self.applier(cluster)?;
                let failed = self.write_in(cluster, &applier, &[], &seen).await.err()?;
                Some((cluster.to_owned(), Chain(&failed).to_string()))
            });
        let failing: BTreeMap<String, String> = (futures::future::join_all(deleted).await)
            .into_iter()
            .flatten()
            .collect();
        let recorded = recorded_clusters(parent);
        let holdups = placed::holdups(&recorded, failing, |c| self.seen(c));
        show_holdups(writer, parent, &holdups).await?;
        if !holdups.is_empty() {
            return Ok(Finish::After(HELD_AGAIN));
        }
        if !observed.is_empty() {
            tracing::info!(
                left,
                "deleting the parent's children in member clusters before releasing it"
            );
            return Ok(Finish::After(RELEASE_AGAIN));
        }
        // A parent recorded before records were kept: any engaged member may hold its children.
        if recorded.is_empty() && !self.engaged.settled(&self.kinds) {
            tracing::info!(
                "the member clusters' caches are not listed yet: the parent is released once they are"
            );
            return Ok(Finish::After(RELEASE_AGAIN));
        }
        unhold(&self.finalizers, parent).await?;
        tracing::info!("no child left in any member cluster: the host's finalizer is released");
        Ok(Finish::Done)
    }

    /// An error of a write in `cluster`, saying where and whose: a foreign object there stays
    /// a refusal (naming the cluster), anything else is wrapped.
    fn in_cluster(&self, cluster: &str, error: ApplyError) -> ApplyError {
        match error {
            ApplyError::Foreign(Refusal::Foreign {
                kind,
                namespace,
                name,
                owner,
            }) => ApplyError::Foreign(Refusal::Foreign {
                kind,
                namespace,
                name,
                owner: format!("{owner} in member cluster {cluster:?}"),
            }),
            source => ApplyError::InCluster {
                plugin: self.label.clone(),
                cluster: cluster.to_owned(),
                source: Box::new(source),
            },
        }
    }
}

/// A parent being deleted on a host that engages no member cluster (no `--clusters`): the
/// [`MEMBERS_FINALIZER`] it may still hold from a run that did is released, since no member can
/// be reached here to delete its children there. Holding it would keep the parent (and its
/// namespace) from ever going; the warning names what may be left behind.
pub(super) async fn release_unreached(
    finalizers: &Finalizers,
    parent: &DynamicObject,
) -> Result<Finish, ReconcileError> {
    if !holds(parent) {
        return Ok(Finish::Done);
    }
    tracing::warn!(
        finalizer = MEMBERS_FINALIZER,
        "the parent holds the member clusters' finalizer but this host engages none: released; \
         its children in member clusters, if any, are left there"
    );
    unhold(finalizers, parent).await?;
    Ok(Finish::Done)
}

/// Shows on `parent` which member clusters hold its deletion up ([`placed::held_status`]):
/// written, logged and published as an Event only when that changes, not on every pass.
async fn show_holdups(
    writer: &ParentWriter,
    parent: &DynamicObject,
    holdups: &[Holdup],
) -> Result<(), ReconcileError> {
    let written = writer.status_as_written(parent);
    let live = written.as_ref().or(parent.data.get("status"));
    let generation = parent.metadata.generation;
    let Some(desired) = placed::held_status(live, holdups, generation, &answer::now()) else {
        return Ok(());
    };
    let Some(diff) = answer::merge_diff(live, &desired) else {
        return Ok(());
    };
    if holdups.is_empty() {
        tracing::info!(
            "every member cluster holding the parent's children answers: they are being deleted"
        );
    } else {
        let held: Vec<String> = holdups.iter().map(ToString::to_string).collect();
        let held = held.join("; ");
        tracing::warn!(%held, "the parent's deletion waits for member clusters");
        writer
            .event(parent, true, "DeletionHeld", "Delete", held)
            .await;
    }
    writer.patch_status_diff(parent, Some(diff)).await?;
    Ok(())
}

/// `observed` by cluster.
fn by_cluster(observed: &[MemberObject]) -> BTreeMap<&str, Vec<Arc<CachedObject>>> {
    let mut clusters: BTreeMap<&str, Vec<Arc<CachedObject>>> = BTreeMap::new();
    for (cluster, obj) in observed {
        clusters.entry(cluster).or_default().push(obj.clone());
    }
    clusters
}

/// Removes [`MEMBERS_FINALIZER`] from `parent`.
async fn unhold(finalizers: &Finalizers, parent: &DynamicObject) -> Result<(), ReconcileError> {
    match finalizers.remove(parent, MEMBERS_FINALIZER).await {
        Ok(()) => Ok(()),
        // Released by an earlier pass the cache had not shown yet: the parent is gone.
        Err(e) if matches!(&e.source, kube::Error::Api(s) if s.code == 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether `parent` holds [`MEMBERS_FINALIZER`].
fn holds(parent: &DynamicObject) -> bool {
    let finalizers = parent.metadata.finalizers.as_deref().unwrap_or_default();
    finalizers.iter().any(|f| f == MEMBERS_FINALIZER)
}

/// The route of a member's child to its parent of `kind` in the host's own cluster, by its
/// mark: only a marked object is decoded.
fn parent_of(kind: &ResourceKind) -> MapToParent {
    let (api_version, kind) = (kind.api_version(), kind.kind.clone());
    MapToParent(Arc::new(move |obj: &CachedObject| -> Option<ObjectKey> {
        obj.label(PARENT_UID_LABEL)?;
        let mark = ParentMark::of(&obj.decode().ok()?)?;
        let ours = mark.cluster == LOCAL_CLUSTER && mark.api_version == api_version;
        (ours && mark.kind == kind).then_some(mark.key)
    }))
}

#[cfg(test)]
#[path = "members_tests.rs"]
mod tests;
