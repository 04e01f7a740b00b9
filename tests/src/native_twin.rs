//! The native twin: the Blog logic compiled natively into a plain kube-runtime controller.
//!
//! Used only by the benchmark, as the baseline Weir is measured against. It is written the way a
//! kube-rs controller usually is: `Controller` for dedupe and concurrency, the `finalizer` helper,
//! server-side apply of every child on every reconcile, and a requeue as its resync.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use weir_guest_sdk::{Child, testing};
use weir_plugin_blog::{Blog, BlogReconciler, FINALIZER};

/// A reconcile of the twin failed.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    /// The Blog logic refused the Blog.
    #[error("blog logic: {0}")]
    Logic(String),
    /// An API call failed.
    #[error("api call")]
    Api(#[from] kube::Error),
    /// A child manifest lacked apiVersion or kind.
    #[error("child without apiVersion/kind")]
    Manifest,
}

struct Ctx {
    client: Client,
    deployments: reflector::Store<Deployment>,
    resync: Duration,
}

fn resource_of(child: &Value) -> Result<ApiResource, TwinError> {
    let api_version = child["apiVersion"].as_str().ok_or(TwinError::Manifest)?;
    let kind = child["kind"].as_str().ok_or(TwinError::Manifest)?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let plural = format!("{}s", kind.to_lowercase());
    Ok(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        &plural,
    ))
}

async fn apply(blog: Arc<Blog>, ctx: &Ctx) -> Result<Action, TwinError> {
    let ns = blog.namespace().unwrap_or_default();
    let name = blog.name_any();
    let observed: Vec<Child> = ctx
        .deployments
        .get(&reflector::ObjectRef::new(&name).within(&ns))
        .and_then(|d| serde_json::to_value(d.as_ref()).ok())
        .map(Child::json)
        .into_iter()
        .collect();
    let out = testing::reconcile::<BlogReconciler>(blog.as_ref(), observed)
        .map_err(|e| TwinError::Logic(e.to_string()))?;
    let owner = blog.controller_owner_ref(&()).ok_or(TwinError::Manifest)?;
    let params = PatchParams::apply("native-twin").force();
    for child in out.children.iter() {
        let mut child = child.clone();
        child["metadata"]["namespace"] = json!(ns);
        child["metadata"]["ownerReferences"] = json!([owner]);
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &ns, &resource_of(&child)?);
        let child_name = child["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        api.patch(&child_name, &params, &Patch::Apply(&child))
            .await?;
    }
    if let Some(mut status) = out.status {
        status["observedGeneration"] = json!(blog.metadata.generation);
        // The usual guard of a hand-written controller: patch the status only when it changed,
        // or every status write would trigger the next reconcile.
        let current = blog
            .status
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok());
        if current.as_ref() != Some(&status) {
            let blogs: Api<Blog> = Api::namespaced(ctx.client.clone(), &ns);
            blogs
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": status})),
                )
                .await?;
        }
    }
    Ok(Action::requeue(ctx.resync))
}

/// The finalizer handled with merge patches (kube's `finalizer` helper uses a JSON-patch `test`
/// of an absent path, which the emulator's JSON patch rejects).
async fn reconcile(blog: Arc<Blog>, ctx: Arc<Ctx>) -> Result<Action, TwinError> {
    let ns = blog.namespace().unwrap_or_default();
    let blogs: Api<Blog> = Api::namespaced(ctx.client.clone(), &ns);
    let mut finalizers = blog.finalizers().to_vec();
    let held = finalizers.iter().any(|f| f == FINALIZER);
    if blog.metadata.deletion_timestamp.is_some() {
        if held {
            finalizers.retain(|f| f != FINALIZER);
            let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": blog.resource_version()}});
            blogs
                .patch(
                    &blog.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(patch),
                )
                .await?;
        }
        return Ok(Action::await_change());
    }
    if !held {
        finalizers.push(FINALIZER.to_owned());
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": blog.resource_version()}});
        blogs
            .patch(
                &blog.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await?;
    }
    apply(blog, &ctx).await
}

fn error_policy(_: Arc<Blog>, _: &TwinError, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// Runs the twin over every Blog in the cluster until the process ends.
pub async fn run(client: Client, workers: u16, resync: Duration) {
    let blogs: Api<Blog> = Api::all(client.clone());
    // Observed Deployments (for readyReplicas) are read from the reflector store that also
    // triggers the reconcile, so a reconcile never sees an older Deployment than its trigger.
    let (deployments, writer) = reflector::store();
    let deployment_events = reflector(
        writer,
        watcher(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .default_backoff()
    .touched_objects();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        deployments,
        resync,
    });
    Controller::new(blogs, watcher::Config::default())
        .owns_stream(deployment_events)
        .owns(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Service>::all(client), watcher::Config::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(workers))
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::warn!(error = %e, source = ?std::error::Error::source(&e), "native twin reconcile failed");
            }
        })
        .await;
}
