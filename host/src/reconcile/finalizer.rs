//! ⑥ The plugin's finalizer on its parents: added and removed without racing the host's other writes.
//!
//! A patch conditional on the parent's `resourceVersion` fails whenever anything else wrote the
//! parent since the cache's copy: the host's own status patch, an edit of the spec, another
//! controller. Each such `409 Conflict` cost a failed write, an Event, a status write and a retry.
//! The finalizer is written with a JSON Patch instead, conditional only on what it changes:
//! `test` that the parent is still the one the cache holds (its uid) and that its finalizers are
//! still the ones the cache shows, then add (or remove) the one entry. A write to any other field
//! cannot make it fail, and a finalizer another controller added meanwhile is never dropped: the
//! `test` fails (`422`), and the reconcile retries with the newer copy.
//!
//! The cache may also lag the host's own write: a child's watch event can start the next
//! reconcile before the echo of the finalizer just added reached the parent's store. The writer
//! remembers the parents it added its finalizer to until the cache shows it
//! ([`Finalizers::seen`]), and does not write it again meanwhile (the entry is forgotten after
//! [`ECHO_TTL`], so a lost echo only costs one more write).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::metrics::Metrics;
use crate::plugin::ResourceKind;
use crate::runtime::echoes::Echoes;

/// How long an added finalizer waits for the cache to show it before it may be written again.
pub const ECHO_TTL: Duration = Duration::from_secs(60);

/// Adding or removing a parent's finalizer failed.
#[derive(Debug, thiserror::Error)]
#[error("updating the finalizers of {kind} {name}")]
pub struct FinalizerError {
    /// Parent kind.
    pub kind: String,
    /// Parent `namespace/name`.
    pub name: String,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

/// Adds and removes one plugin's finalizer on its parents.
pub struct Finalizers {
    client: Client,
    kind: ResourceKind,
    plugin: String,
    metrics: Arc<Metrics>,
    echoes: Arc<Echoes>,
    /// Parents (by uid) whose finalizer was added and whose cached copy does not show it yet.
    awaiting: Mutex<HashMap<String, Instant>>,
}

impl Finalizers {
    /// A writer for parents of `kind`, counting its writes as `plugin`'s.
    pub fn new(
        client: Client,
        kind: ResourceKind,
        plugin: &str,
        metrics: Arc<Metrics>,
        echoes: Arc<Echoes>,
    ) -> Self {
        Self {
            client,
            kind,
            plugin: plugin.to_owned(),
            metrics,
            echoes,
            awaiting: Mutex::default(),
        }
    }

    /// Adds `finalizer` to the cached `parent`, which lacks it. Returns the parent as written,
    /// or `None` when the host added it moments ago and the cache has not caught up (no write).
    pub async fn add(
        &self,
        parent: &DynamicObject,
        finalizer: &str,
    ) -> Result<Option<DynamicObject>, FinalizerError> {
        let uid = parent.metadata.uid.clone().unwrap_or_default();
        if self.is_awaiting(&uid) {
            tracing::debug!(
                finalizer,
                "the cache lags the finalizer just added: not writing it again"
            );
            return Ok(None);
        }
        let cached = parent.metadata.finalizers.as_deref();
        let written = self
            .patch(parent, Value::Array(add_patch(&uid, cached, finalizer)))
            .await?;
        self.lock().insert(uid, Instant::now());
        Ok(Some(written))
    }

    /// Notes that the cache shows the finalizer on the parent with this uid (its echo arrived).
    pub fn seen(&self, uid: &str) {
        let mut awaiting = self.lock();
        if !awaiting.is_empty() {
            awaiting.remove(uid);
        }
    }

    /// Removes `finalizer` from `parent` (its cleanup is done), leaving every other finalizer.
    pub async fn remove(
        &self,
        parent: &DynamicObject,
        finalizer: &str,
    ) -> Result<(), FinalizerError> {
        let uid = parent.metadata.uid.clone().unwrap_or_default();
        let cached = parent.metadata.finalizers.as_deref().unwrap_or_default();
        self.patch(parent, remove_patch(&uid, cached, finalizer))
            .await?;
        self.lock().remove(&uid);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.awaiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the finalizer was added to `uid` within [`ECHO_TTL`]; forgets older entries.
    fn is_awaiting(&self, uid: &str) -> bool {
        let mut awaiting = self.lock();
        let now = Instant::now();
        awaiting.retain(|_, at| now.saturating_duration_since(*at) < ECHO_TTL);
        awaiting.contains_key(uid)
    }

    /// Sends the JSON Patch `ops` to `parent` (a write of the plugin's, echoed): the host's
    /// writes of its own metadata beside a finalizer (`super::members`) go through here too.
    pub(super) async fn patch(
        &self,
        parent: &DynamicObject,
        ops: Value,
    ) -> Result<DynamicObject, FinalizerError> {
        let failed = |source| FinalizerError {
            kind: self.kind.kind.clone(),
            name: crate::runtime::cache::key_of(parent).to_string(),
            source,
        };
        let ops: json_patch::Patch =
            serde_json::from_value(ops).map_err(|e| failed(kube::Error::SerdeError(e)))?;
        let ar = self.kind.api_resource();
        let api: Api<DynamicObject> = match &parent.metadata.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
            None => Api::all_with(self.client.clone(), &ar),
        };
        let name = parent.metadata.name.as_deref().unwrap_or_default();
        self.metrics.wrote(&self.plugin, "patch", &self.kind.plural);
        let written = api
            .patch(name, &PatchParams::default(), &Patch::Json::<()>(ops))
            .await
            .map_err(failed)?;
        self.echoes.wrote(&self.kind.kind, &written);
        Ok(written)
    }
}

/// The JSON Patch adding `finalizer` to a parent whose finalizers are `cached`: it applies only
/// to the same object (uid) with the same finalizers (an absent list tests as `null`, as the
/// API server's JSON Patch does).
pub(super) fn add_patch(uid: &str, cached: Option<&[String]>, finalizer: &str) -> Vec<Value> {
    let test = json!({"op": "test", "path": "/metadata/uid", "value": uid});
    let Some(cached) = cached else {
        return vec![
            test,
            json!({"op": "test", "path": "/metadata/finalizers", "value": null}),
            json!({"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}),
        ];
    };
    vec![
        test,
        json!({"op": "test", "path": "/metadata/finalizers", "value": cached}),
        json!({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}),
    ]
}

/// The JSON Patch removing `finalizer` from a parent whose finalizers are `cached`, under the
/// same conditions as [`add_patch`].
fn remove_patch(uid: &str, cached: &[String], finalizer: &str) -> Value {
    let rest: Vec<&String> = cached.iter().filter(|f| *f != finalizer).collect();
    json!([
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/metadata/finalizers", "value": cached},
        {"op": "replace", "path": "/metadata/finalizers", "value": rest},
    ])
}

#[cfg(test)]
mod tests {
    use kube::api::PostParams;
    use weir_emulator::{Emulator, EmulatorConfig};

    use super::*;

    /// ConfigMaps stand in for parents: the writer needs nothing of a custom resource.
    fn config_maps() -> ResourceKind {
        ResourceKind {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
        }
    }

    async fn parent(api: &Api<DynamicObject>, finalizers: &[&str]) -> DynamicObject {
        let mut obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "p", "namespace": "default"},
            "data": {"a": "1"}}))
        .unwrap();
        if !finalizers.is_empty() {
            obj.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
        }
        api.create(&PostParams::default(), &obj).await.unwrap()
    }

    async fn setup() -> (Emulator, Api<DynamicObject>, Finalizers) {
        let emulator = Emulator::start(EmulatorConfig::default()).await.unwrap();
        let client = emulator.client();
        let api = Api::namespaced_with(client.clone(), "default", &config_maps().api_resource());
        let writer = Finalizers::new(
            client,
            config_maps(),
            "blog",
            Arc::new(Metrics::new()),
            Arc::new(Echoes::default()),
        );
        (emulator, api, writer)
    }

    async fn edit_data(api: &Api<DynamicObject>) {
        let patch = Patch::Merge(json!({"data": {"a": "2"}}));
        api.patch("p", &PatchParams::default(), &patch)
            .await
            .unwrap();
    }

    fn finalizers(obj: &DynamicObject) -> Vec<String> {
        obj.metadata.finalizers.clone().unwrap_or_default()
    }

    #[tokio::test]
    async fn adding_the_finalizer_succeeds_on_a_copy_older_than_another_write() {
        let (_emulator, api, writer) = setup().await;
        let cached = parent(&api, &[]).await;
        edit_data(&api).await;
        let written = writer.add(&cached, "weir.dev/blog").await.unwrap();
        assert_eq!(finalizers(&written.unwrap()), ["weir.dev/blog"]);
        let live = api.get("p").await.unwrap();
        assert_eq!(live.data["data"]["a"], "2", "the other write is kept");
    }

    #[tokio::test]
    async fn a_stale_copy_lacking_the_finalizer_just_added_costs_no_second_write() {
        let (_emulator, api, writer) = setup().await;
        let cached = parent(&api, &[]).await;
        writer.add(&cached, "weir.dev/blog").await.unwrap();
        let version = api.get("p").await.unwrap().metadata.resource_version;
        assert!(
            writer
                .add(&cached, "weir.dev/blog")
                .await
                .unwrap()
                .is_none()
        );
        let live = api.get("p").await.unwrap();
        assert_eq!(live.metadata.resource_version, version, "nothing written");
        assert_eq!(finalizers(&live), ["weir.dev/blog"]);
    }

    #[tokio::test]
    async fn once_the_cache_showed_it_a_finalizer_removed_by_hand_is_added_again() {
        let (_emulator, api, writer) = setup().await;
        let cached = parent(&api, &[]).await;
        writer.add(&cached, "weir.dev/blog").await.unwrap();
        writer.seen(cached.metadata.uid.as_deref().unwrap_or_default());
        let patch = Patch::Merge(json!({"metadata": {"finalizers": null}}));
        let bare = api
            .patch("p", &PatchParams::default(), &patch)
            .await
            .unwrap();
        assert!(writer.add(&bare, "weir.dev/blog").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_finalizer_another_controller_added_meanwhile_is_never_dropped() {
        let (_emulator, api, writer) = setup().await;
        let cached = parent(&api, &[]).await;
        let patch = Patch::Merge(json!({"metadata": {"finalizers": ["other.io/keep"]}}));
        let newer = api
            .patch("p", &PatchParams::default(), &patch)
            .await
            .unwrap();
        assert!(writer.add(&cached, "weir.dev/blog").await.is_err());
        assert_eq!(finalizers(&api.get("p").await.unwrap()), ["other.io/keep"]);
        writer.add(&newer, "weir.dev/blog").await.unwrap();
        assert_eq!(
            finalizers(&api.get("p").await.unwrap()),
            ["other.io/keep", "weir.dev/blog"]
        );
    }

    #[tokio::test]
    async fn removing_the_finalizer_keeps_the_others_and_ignores_other_writes() {
        let (_emulator, api, writer) = setup().await;
        let cached = parent(&api, &["a.io/x", "weir.dev/blog"]).await;
        edit_data(&api).await;
        writer.remove(&cached, "weir.dev/blog").await.unwrap();
        assert_eq!(finalizers(&api.get("p").await.unwrap()), ["a.io/x"]);
    }

    #[tokio::test]
    async fn nothing_is_written_to_a_parent_deleted_and_created_again_under_its_name() {
        let (_emulator, api, writer) = setup().await;
        let old = parent(&api, &[]).await;
        api.delete("p", &Default::default()).await.unwrap();
        parent(&api, &[]).await;
        assert!(writer.add(&old, "weir.dev/blog").await.is_err());
        assert!(finalizers(&api.get("p").await.unwrap()).is_empty());
    }
}
