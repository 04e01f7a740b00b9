//! ⑤b Writes of children: server-side apply when the live object differs, prune what is no longer wanted.
//!
//! Every write is counted (metric) and remembered (so its watch echo is not mistaken for an
//! outside change). A converged parent costs no write at all: the cached live object is
//! compared with the desired manifest first.

use std::collections::HashSet;
use std::sync::Arc;

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};

use super::cache::key_of;
use super::echoes::Echoes;
use super::queue::ObjectKey;
use super::validate::{DesiredChild, live_holds};
use crate::metrics::Metrics;

/// A write to a child failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
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
        let (ApplyError::Apply { source, .. } | ApplyError::Prune { source, .. }) = self;
        matches!(source, kube::Error::Api(s) if s.code == 422 || s.code == 400 || s.code == 403)
    }
}

/// What was done to one child (for Events and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Created by server-side apply.
    Created(String, ObjectKey),
    /// Changed by server-side apply.
    Updated(String, ObjectKey),
    /// Deleted because the plugin no longer wants it.
    Deleted(String, ObjectKey),
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Created(kind, key) => write!(f, "created {kind} {key}"),
            Change::Updated(kind, key) => write!(f, "updated {kind} {key}"),
            Change::Deleted(kind, key) => write!(f, "deleted {kind} {key}"),
        }
    }
}

/// Writes one plugin's children.
pub struct Applier {
    client: Client,
    plugin: String,
    params: PatchParams,
    metrics: Arc<Metrics>,
    echoes: Arc<Echoes>,
}

impl Applier {
    /// An applier whose field manager is `weir/<plugin>`.
    pub fn new(client: Client, plugin: &str, metrics: Arc<Metrics>, echoes: Arc<Echoes>) -> Self {
        let params = PatchParams::apply(&format!("weir/{plugin}")).force();
        Self {
            client,
            plugin: plugin.to_owned(),
            params,
            metrics,
            echoes,
        }
    }

    /// Applies every child whose live copy does not already hold the desired fields.
    /// `force` takes over only the fields in Weir's own manifest (e.g. a hand-edited
    /// `replicas`), which is what reverting drift means.
    pub async fn apply(&self, children: &[DesiredChild]) -> Result<Vec<Change>, ApplyError> {
        let mut changes = Vec::new();
        for child in children {
            if child
                .live
                .as_deref()
                .is_some_and(|live| live_holds(live, &child.manifest))
            {
                continue;
            }
            let kind = child.kind.kind.clone();
            let ns = child.key.namespace.as_deref().unwrap_or_default();
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), ns, &child.kind.api_resource());
            self.metrics
                .wrote(&self.plugin, "apply", &child.kind.plural);
            let written = api
                .patch(
                    &child.key.name,
                    &self.params,
                    &Patch::Apply(&child.manifest),
                )
                .await
                .map_err(|source| ApplyError::Apply {
                    kind: kind.clone(),
                    key: child.key.clone(),
                    source,
                })?;
            self.echoes.wrote(&kind, &written);
            tracing::info!(%kind, child = %child.key, created = child.live.is_none(), "applied child");
            changes.push(if child.live.is_some() {
                Change::Updated(kind, child.key.clone())
            } else {
                Change::Created(kind, child.key.clone())
            });
        }
        Ok(changes)
    }

    /// Deletes the observed children that are not desired any more. Only objects this parent
    /// controls are ever observed (owner index), and the delete is conditional on their UID.
    pub async fn prune(
        &self,
        desired: &[DesiredChild],
        observed: &[Arc<DynamicObject>],
        declared: &[crate::plugin::ResourceKind],
    ) -> Result<Vec<Change>, ApplyError> {
        let wanted: HashSet<(String, String, ObjectKey)> = desired
            .iter()
            .map(|d| (d.kind.api_version(), d.kind.kind.clone(), d.key.clone()))
            .collect();
        let mut changes = Vec::new();
        for obj in observed {
            let Some(types) = &obj.types else { continue };
            let key = key_of(obj);
            if obj.metadata.deletion_timestamp.is_some()
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
                    uid: obj.metadata.uid.clone(),
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
