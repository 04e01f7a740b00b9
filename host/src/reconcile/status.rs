//! ⑥ Writes to the parent: its status subresource, its finalizer and Events.
//!
//! What the status should read is the judge's ([`crate::answer::desired_status`]); this module
//! sends the merge patch from what the parent reads now, or nothing when there is no difference.

use std::sync::Arc;

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::events::{Events, Note};
use super::finalizer::{FinalizerError, Finalizers};
use crate::answer::merge_diff;
use crate::chain::Chain;
use crate::metrics::Metrics;
use crate::plugin::ResourceKind;
use crate::runtime::echoes::Echoes;

/// Bytes Kubernetes accepts in an Event note.
const MAX_EVENT_NOTE: usize = 1_024;

/// A write to the parent failed.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// Patching the status subresource failed.
    #[error("patching the status of {kind} {name}")]
    Status {
        /// Parent kind.
        kind: String,
        /// Parent `namespace/name`.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Adding or removing the finalizer failed.
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
}

/// Writes to one plugin's parents: status, Events, and (through [`Finalizers`]) the finalizer.
pub struct ParentWriter {
    client: Client,
    kind: ResourceKind,
    plugin: String,
    metrics: Arc<Metrics>,
    echoes: Arc<Echoes>,
    events: Events,
    finalizers: Finalizers,
}

impl ParentWriter {
    /// A writer for parents of `kind`, reporting Events as `weir/<plugin>`.
    pub fn new(
        client: Client,
        kind: ResourceKind,
        plugin: &str,
        instance: &str,
        metrics: Arc<Metrics>,
        echoes: Arc<Echoes>,
    ) -> Self {
        let events = Events::new(
            client.clone(),
            format!("weir/{plugin}"),
            instance.to_owned(),
        );
        let finalizers = Finalizers::new(
            client.clone(),
            kind.clone(),
            plugin,
            metrics.clone(),
            echoes.clone(),
        );
        Self {
            finalizers,
            client,
            kind,
            plugin: plugin.to_owned(),
            metrics,
            echoes,
            events,
        }
    }

    fn api(&self, parent: &DynamicObject) -> Api<DynamicObject> {
        let ar = self.kind.api_resource();
        match &parent.metadata.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
            None => Api::all_with(self.client.clone(), &ar),
        }
    }

    fn name(parent: &DynamicObject) -> String {
        crate::runtime::cache::key_of(parent).to_string()
    }

    /// Patches the status subresource when `desired` differs from the live status.
    /// Returns whether a write was made.
    pub async fn patch_status(
        &self,
        parent: &DynamicObject,
        desired: &Value,
    ) -> Result<bool, StatusError> {
        self.patch_status_diff(parent, merge_diff(parent.data.get("status"), desired))
            .await
    }

    /// Sends a status diff already computed with [`merge_diff`] (the reconcile
    /// path computes it once for the hot-loop guard); `None` writes nothing.
    pub async fn patch_status_diff(
        &self,
        parent: &DynamicObject,
        diff: Option<Value>,
    ) -> Result<bool, StatusError> {
        let Some(diff) = diff else {
            return Ok(false);
        };
        let name = parent.metadata.name.clone().unwrap_or_default();
        self.metrics.wrote(
            &self.plugin,
            "patch",
            &format!("{}/status", self.kind.plural),
        );
        let written = self
            .api(parent)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": diff })),
            )
            .await
            .map_err(|source| StatusError::Status {
                kind: self.kind.kind.clone(),
                name: Self::name(parent),
                source,
            })?;
        // Only its status is ever compared (`status_as_written`): the rest is not kept.
        let mut kept = DynamicObject {
            types: written.types,
            metadata: written.metadata,
            data: json!({}),
        };
        kept.metadata.labels = None;
        kept.metadata.annotations = None;
        if let Some(status) = written.data.get("status") {
            kept.data["status"] = status.clone();
        }
        self.echoes.wrote_over(
            &self.kind.kind,
            parent.metadata.resource_version.as_deref(),
            &kept,
        );
        Ok(true)
    }

    /// The status `parent` has after this host's last status patch, when the cached `parent`
    /// is still the version that patch was sent against (its echo has not reached the cache):
    /// the status to compare with, so that the patch is not sent twice.
    pub fn status_as_written(&self, parent: &DynamicObject) -> Option<Value> {
        let key = crate::runtime::cache::key_of(parent);
        let written = self.echoes.unseen(
            &self.kind.kind,
            &key,
            parent.metadata.resource_version.as_deref(),
        )?;
        written.data.get("status").cloned()
    }

    /// The writer of the plugin's finalizer on these parents.
    pub fn finalizers(&self) -> &Finalizers {
        &self.finalizers
    }

    /// Publishes an Event on the parent; a failure is logged, never fatal.
    pub async fn event(
        &self,
        parent: &DynamicObject,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        use kube::Resource;
        let reference = parent.object_ref(&self.kind.api_resource());
        let note = Note {
            warning,
            reason,
            action,
            note: &crate::plugin::truncate(&note, MAX_EVENT_NOTE),
        };
        self.metrics.wrote(&self.plugin, "event", "events");
        if let Err(e) = self.events.publish(&note, &reference).await {
            tracing::warn!(parent = %Self::name(parent), error = %Chain(&e), "could not publish an Event");
        }
    }
}
