//! ⑤b Writes of children: create what is new, server-side apply what differs, prune what is no longer wanted.
//!
//! Every write is counted (metric) and remembered (so its watch echo is not mistaken for an
//! outside change). A converged parent costs no write at all: the cached live object is
//! compared with the desired manifest first, or, when the cache has not caught up with this
//! host's last write to the child yet, that write ([`Echoes::unseen`]): a reconcile woken by
//! another object's event does not write (or create) the same child twice.
//!
//! The same writes go to a member cluster through that member's own client
//! ([`Applier::marking`], used by [`super::members`]): there a child is controlled by its
//! parent's mark instead of an owner reference ([`Ownership`]), and nothing else changes.
//!
//! Ownership is never taken by force. The validation checked ownership against the cache, and
//! the cache can lag: an object someone else creates after the cache was read is not in it. So a
//! child the cache does not hold is *created* (`POST`): if the name is taken, the `409
//! AlreadyExists` is answered by reading the object from the API server, and one this parent
//! does not control is refused as foreign ([`ApplyError::Foreign`]), untouched. Only a child the
//! parent controls is written by server-side apply with `force`, which then takes over just the
//! fields of Weir's own manifest (reverting drift).
//!
//! kube-apiserver records a create under the field manager's operation `Update`, and server-side
//! apply prunes only what the manager's `Apply` entry held. An apply shares the fields it sets
//! to the same value with the create's entry and takes those it changes, so a changed child
//! costs one apply. Only when an apply's answer shows the create's entry holding a field the
//! `Apply` entry does not (the plugin dropped it) is that entry folded into the `Apply` one
//! ([`upgrade`](super::upgrade), client-go's `csaupgrade`) and the manifest applied once more,
//! so that the field is removed: two extra writes, at most once in a child's life.

use std::collections::HashSet;
use std::sync::Arc;

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};

use super::upgrade;
use crate::answer::{DesiredChild, Ownership, Refusal, live_holds};
use crate::metrics::Metrics;
use crate::runtime::ObjectKey;
use crate::runtime::cache::CachedObject;
use crate::runtime::echoes::Echoes;

/// How many times the relabelling of a created child is tried when a concurrent write changed
/// the object under it (409).
const RELABEL_ATTEMPTS: usize = 3;

/// A write to a child failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Creating a child the cache did not hold was rejected or did not reach the server.
    #[error("creating {kind} {key}")]
    Create {
        /// Kind of the child.
        kind: String,
        /// Its key.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The name of a new child was taken meanwhile by an object this parent does not control;
    /// it was left untouched (a refusal, as when the cache already showed it).
    #[error(transparent)]
    Foreign(Refusal),
    /// Server-side apply of a child was rejected or did not reach the server.
    #[error("applying {kind} {key}")]
    Apply {
        /// Kind of the child.
        kind: String,
        /// Its key.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A write in a member cluster failed: `plugin@version`'s child there.
    #[error("{plugin}: writing in member cluster {cluster:?}")]
    InCluster {
        /// `name@version` of the plugin.
        plugin: String,
        /// The member cluster.
        cluster: String,
        /// What failed there.
        #[source]
        source: Box<ApplyError>,
    },
    /// A child is placed in a member cluster released since its answer was judged.
    #[error(
        "{plugin}: {kind} {key} is placed in member cluster {cluster:?}, which is no longer engaged"
    )]
    Released {
        /// `name@version` of the plugin.
        plugin: String,
        /// Kind of the child.
        kind: String,
        /// Its key.
        key: ObjectKey,
        /// The cluster it names.
        cluster: String,
    },
    /// Deleting a child no longer wanted failed.
    #[error("pruning {kind} {key}")]
    Prune {
        /// Kind of the child.
        kind: String,
        /// Its key.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

impl ApplyError {
    /// A conflict or an invalid object will not go away by retrying the same answer.
    pub fn is_permanent(&self) -> bool {
        match self {
            ApplyError::InCluster { source, .. } => return source.is_permanent(),
            ApplyError::Released { .. } => return false,
            _ => {}
        }
        let (ApplyError::Apply { source, .. }
        | ApplyError::Create { source, .. }
        | ApplyError::Prune { source, .. }) = self
        else {
            return true;
        };
        matches!(source, kube::Error::Api(s) if s.code == 422 || s.code == 400 || s.code == 403)
    }
}

/// What was done to one child (for Events and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Created (`POST`).
    Created(String, ObjectKey),
    /// Changed by server-side apply.
    Updated(String, ObjectKey),
    /// Deleted because the plugin no longer wants it.
    Deleted(String, ObjectKey),
    /// One of the above, in the member cluster named (`super::members`).
    InCluster(String, Box<Change>),
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Created(kind, key) => write!(f, "created {kind} {key}"),
            Change::Updated(kind, key) => write!(f, "updated {kind} {key}"),
            Change::Deleted(kind, key) => write!(f, "deleted {kind} {key}"),
            Change::InCluster(cluster, change) => write!(f, "{change} in {cluster}"),
        }
    }
}

/// Writes one plugin's children.
pub struct Applier {
    client: Client,
    plugin: String,
    /// Weir's field manager for this plugin, `weir/<plugin>`.
    manager: String,
    /// Server-side apply with `force`, for children this parent controls.
    apply: PatchParams,
    /// The merge patch that moves a create's fields to the `Apply` entry.
    upgrade: PatchParams,
    /// `POST` of a child the cache does not hold.
    create: PostParams,
    metrics: Arc<Metrics>,
    echoes: Arc<Echoes>,
    /// Who controls an object where this applier writes.
    ownership: Ownership,
}

impl Applier {
    /// An applier whose field manager is `weir/<plugin>`.
    pub fn new(client: Client, plugin: &str, metrics: Arc<Metrics>, echoes: Arc<Echoes>) -> Self {
        let manager = format!("weir/{plugin}");
        Self {
            client,
            plugin: plugin.to_owned(),
            apply: PatchParams::apply(&manager).force(),
            upgrade: PatchParams {
                field_manager: Some(manager.clone()),
                ..PatchParams::default()
            },
            manager: manager.clone(),
            create: PostParams {
                dry_run: false,
                field_manager: Some(manager),
            },
            metrics,
            echoes,
            ownership: Ownership::Reference,
        }
    }

    /// The same applier for a member cluster, where a child is controlled by its parent's mark
    /// ([`Ownership::Mark`]), not an owner reference.
    pub fn marking(mut self) -> Self {
        self.ownership = Ownership::Mark;
        self
    }

    /// Writes every child whose live copy does not already hold the desired fields: creates the
    /// ones the cache does not hold, applies the ones this parent controls.
    pub async fn apply(&self, children: &[&DesiredChild]) -> Result<Vec<Change>, ApplyError> {
        let mut changes = Vec::new();
        for &child in children {
            let cached = child.live.as_deref();
            if cached.is_some_and(|live| live_holds(live, &child.manifest)) {
                continue;
            }
            let kind = child.kind.kind.clone();
            // A reconcile the cache has not caught up with: this very manifest was applied last
            // (asked only of a child that differs: a converged one costs no lookup).
            if self
                .echoes
                .applied_unseen(&kind, &child.key, version(cached), &child.manifest)
            {
                continue;
            }
            let change = match cached {
                // Validated against the cache: controlled by this parent.
                Some(_) => self
                    .apply_owned(child)
                    .await
                    .map(|()| Change::Updated(kind, child.key.clone()))?,
                None => match self.create(child).await? {
                    Some(change) => change,
                    None => continue,
                },
            };
            changes.push(change);
        }
        Ok(changes)
    }

    fn api(&self, child: &DesiredChild) -> Api<DynamicObject> {
        let ns = child.key.namespace.as_deref().unwrap_or_default();
        Api::namespaced_with(self.client.clone(), ns, &child.kind.api_resource())
    }

    /// Server-side apply with `force` of a child this parent controls (drift is reverted): one
    /// write. When the answer shows the create's `Update` entry holding a field the manifest no
    /// longer sets, that entry becomes part of the `Apply` entry and the manifest is applied
    /// once more, so that the field is removed (at most once in the child's life).
    async fn apply_owned(&self, child: &DesiredChild) -> Result<(), ApplyError> {
        let kind = &child.kind.kind;
        let written = self.server_side_apply(child).await?;
        if self.relabel(child, written).await?.is_some() {
            self.server_side_apply(child).await?;
        }
        tracing::info!(%kind, child = %child.key, "applied child");
        Ok(())
    }

    /// Folds Weir's `Update` entry of `current` (as a write just returned it) into its `Apply`
    /// entry ([`upgrade`]); `None` when there is none (nothing written).
    ///
    /// The resourceVersion is a precondition: a concurrent write (a controller updating the
    /// object's status) makes it a 409, and it is tried again on the object as it is now, as
    /// client-go's RetryOnConflict does.
    async fn relabel(
        &self,
        child: &DesiredChild,
        mut current: DynamicObject,
    ) -> Result<Option<DynamicObject>, ApplyError> {
        let kind = &child.kind.kind;
        let apply_error = |source| ApplyError::Apply {
            kind: kind.clone(),
            key: child.key.clone(),
            source,
        };
        for attempt in 1..=RELABEL_ATTEMPTS {
            let Some(entries) = current
                .metadata
                .managed_fields
                .as_deref()
                .filter(|entries| upgrade::holds_dropped(entries, &self.manager))
                .and_then(|entries| upgrade::upgraded(entries, &self.manager))
            else {
                return Ok(None);
            };
            let patch = serde_json::json!({"metadata": {
                "managedFields": entries,
                "resourceVersion": current.metadata.resource_version,
            }});
            self.metrics
                .wrote(&self.plugin, "patch", &child.kind.plural);
            match self
                .api(child)
                .patch(&child.key.name, &self.upgrade, &Patch::Merge(&patch))
                .await
            {
                Ok(relabelled) => {
                    self.echoes.wrote(kind, &relabelled);
                    tracing::debug!(%kind, child = %child.key, "moved the create's fields to the apply entry");
                    return Ok(Some(relabelled));
                }
                Err(kube::Error::Api(status))
                    if status.code == 409 && attempt < RELABEL_ATTEMPTS =>
                {
                    current = self
                        .api(child)
                        .get(&child.key.name)
                        .await
                        .map_err(apply_error)?;
                }
                Err(source) => return Err(apply_error(source)),
            }
        }
        Ok(None)
    }

    /// One server-side apply of the child's manifest; its echo is remembered.
    async fn server_side_apply(&self, child: &DesiredChild) -> Result<DynamicObject, ApplyError> {
        let kind = &child.kind.kind;
        self.metrics
            .wrote(&self.plugin, "apply", &child.kind.plural);
        let written = self
            .api(child)
            .patch(&child.key.name, &self.apply, &Patch::Apply(&child.manifest))
            .await
            .map_err(|source| ApplyError::Apply {
                kind: kind.clone(),
                key: child.key.clone(),
                source,
            })?;
        self.echoes.applied(
            kind,
            version(child.live.as_deref()),
            &written,
            &child.manifest,
        );
        Ok(written)
    }

    /// Creates a child the cache does not hold. A taken name is read back: this parent's own
    /// object (created by an earlier reconcile the cache has not seen yet) is applied unless it
    /// already holds the manifest (`None`: nothing written, nothing changed); anyone else's is
    /// refused and left alone.
    async fn create(&self, child: &DesiredChild) -> Result<Option<Change>, ApplyError> {
        let kind = child.kind.kind.clone();
        let create_error = |source| ApplyError::Create {
            kind: kind.clone(),
            key: child.key.clone(),
            source,
        };
        let object: DynamicObject = serde_json::from_value(child.manifest.clone())
            .map_err(|e| create_error(kube::Error::SerdeError(e)))?;
        let api = self.api(child);
        self.metrics
            .wrote(&self.plugin, "create", &child.kind.plural);
        match api.create(&self.create, &object).await {
            Ok(written) => {
                self.echoes.applied(&kind, None, &written, &child.manifest);
                tracing::info!(%kind, child = %child.key, "created child");
                return Ok(Some(Change::Created(kind, child.key.clone())));
            }
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {}
            Err(source) => return Err(create_error(source)),
        }
        let live = api.get(&child.key.name).await.map_err(create_error)?;
        let parent = self.ownership.stamped(&child.manifest);
        let controller = self.ownership.controller(&live);
        if controller.is_some() && controller == parent {
            // Created by an earlier reconcile whose echo the cache has not shown yet: when it
            // already holds the manifest there is nothing to write (and nothing changed).
            if live_holds(&live, &child.manifest) {
                tracing::debug!(%kind, child = %child.key, "the child the cache lags is as desired");
                return Ok(None);
            }
            self.apply_owned(child).await?;
            return Ok(Some(Change::Updated(kind, child.key.clone())));
        }
        tracing::warn!(%kind, child = %child.key, "a foreign object took the child's name; left untouched");
        Err(ApplyError::Foreign(Refusal::Foreign {
            kind,
            namespace: child.key.namespace.clone().unwrap_or_default(),
            name: child.key.name.clone(),
            owner: self.ownership.owner(controller),
        }))
    }

    /// Deletes the observed children that are not desired any more. Only objects this parent
    /// controls are ever observed (owner index), and the delete is conditional on their UID.
    pub async fn prune(
        &self,
        desired: &[&DesiredChild],
        observed: &[Arc<CachedObject>],
        declared: &[crate::plugin::ResourceKind],
    ) -> Result<Vec<Change>, ApplyError> {
        let wanted: HashSet<(String, String, ObjectKey)> = desired
            .iter()
            .map(|d| (d.kind.api_version(), d.kind.kind.clone(), d.key.clone()))
            .collect();
        let mut changes = Vec::new();
        for obj in observed {
            let types = obj.types();
            let key = obj.key();
            if obj.is_deleting()
                || wanted.contains(&(types.api_version.clone(), types.kind.clone(), key.clone()))
            {
                continue;
            }
            let Some(kind) = declared
                .iter()
                .find(|k| k.kind == types.kind && k.api_version() == types.api_version)
            else {
                continue;
            };
            let ns = key.namespace.as_deref().unwrap_or_default();
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), ns, &kind.api_resource());
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: obj.uid().map(str::to_owned),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            self.metrics.wrote(&self.plugin, "delete", &kind.plural);
            self.echoes.deleted(&kind.kind, &key);
            match api.delete(&key.name, &params).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => continue,
                Err(source) => {
                    return Err(ApplyError::Prune {
                        kind: kind.kind.clone(),
                        key,
                        source,
                    });
                }
            }
            tracing::info!(kind = %kind.kind, child = %key, "pruned child");
            changes.push(Change::Deleted(kind.kind.clone(), key));
        }
        Ok(changes)
    }
}

/// The resourceVersion of a cached object, if the cache holds one.
fn version(cached: Option<&DynamicObject>) -> Option<&str> {
    cached.and_then(|c| c.metadata.resource_version.as_deref())
}
