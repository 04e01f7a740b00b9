//! The native twin: the Blog logic compiled natively into a plain kube-runtime controller.
//!
//! Used only by the benchmark, as the baseline Weir is measured against, so it is written the
//! way a careful kube-rs user would write it:
//! - the Blog stream passes a `generation` + `finalizers` predicate, so the twin's own status
//!   writes do not trigger it again (the emulator, like the API server, bumps the generation
//!   when a deletion starts, so deletions still pass);
//! - children come from reflector stores that also trigger the reconcile; a child is applied
//!   only when its cached copy does not already hold every desired field;
//! - the status is patched only when it differs from the Blog's;
//! - kube-runtime's `finalizer()` helper holds the finalizer;
//! - managedFields are dropped before caching (kube-rs's documented memory saving; Weir does too);
//! - a requeue after `resync`, like Weir's resync;
//! - like Weir, one Event (`Applied`, with kube-runtime's `Recorder`) per reconcile that applied
//!   children, so both sides do the same work for the request count to compare.
//!
//! It has no hot-loop guard or metrics.
//!
//! Its Blog type is fixed at compile time, so the benchmark's ten-plugin row (Weir serving ten
//! kinds) runs ten twins, each confined to a namespace of its own, rather than ten twin kinds.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as Note, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{self, Event};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, Predicate, PredicateConfig, WatchStreamExt, predicates, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use weir_guest_sdk::{Child, Finalize, testing};
use weir_plugin_blog::{Blog, BlogReconciler, BlogStatus, FINALIZER};

/// A reconcile of the twin failed.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    /// The Blog logic refused the Blog or failed.
    #[error("blog logic for Blog {blog}: {message}")]
    Logic {
        /// The Blog's `namespace/name`.
        blog: String,
        /// What the logic said.
        message: String,
    },
    /// The logic asked for a child of a kind the twin does not watch.
    #[error("Blog {blog} wants a child of kind {kind:?}, which the twin does not own")]
    UnknownKind {
        /// The Blog's `namespace/name`.
        blog: String,
        /// The child's `kind`.
        kind: String,
    },
    /// The Blog has no UID yet, so no owner reference can point at it.
    #[error("Blog {blog} has no UID for its children's owner reference")]
    NoUid {
        /// The Blog's `namespace/name`.
        blog: String,
    },
    /// Server-side apply of a child failed.
    #[error("applying {kind} {name} of Blog {blog}")]
    Apply {
        /// The Blog's `namespace/name`.
        blog: String,
        /// The child's kind.
        kind: String,
        /// The child's name.
        name: String,
        /// The API error (boxed: a `kube::Error` would make every `Result` of the twin large).
        #[source]
        source: Box<kube::Error>,
    },
    /// Patching the Blog's status failed.
    #[error("patching the status of Blog {blog}")]
    Status {
        /// The Blog's `namespace/name`.
        blog: String,
        /// The API error (boxed: a `kube::Error` would make every `Result` of the twin large).
        #[source]
        source: Box<kube::Error>,
    },
}

/// What every reconcile shares: the client, the Event recorder and the cached children.
struct Ctx {
    client: Client,
    recorder: Recorder,
    config_maps: Store<ConfigMap>,
    deployments: Store<Deployment>,
    services: Store<Service>,
    resync: Duration,
}

impl Ctx {
    /// The cached child as JSON, and the API resource to apply it to.
    fn child(&self, kind: &str, ns: &str, name: &str) -> Option<(ApiResource, Option<Value>)> {
        fn get<K>(store: &Store<K>, ns: &str, name: &str) -> Option<Value>
        where
            K: Resource<DynamicType = ()> + Clone + Serialize + 'static,
        {
            let cached = store.get(&ObjectRef::new(name).within(ns))?;
            serde_json::to_value(cached.as_ref()).ok()
        }
        match kind {
            "ConfigMap" => Some((
                ApiResource::erase::<ConfigMap>(&()),
                get(&self.config_maps, ns, name),
            )),
            "Deployment" => Some((
                ApiResource::erase::<Deployment>(&()),
                get(&self.deployments, ns, name),
            )),
            "Service" => Some((
                ApiResource::erase::<Service>(&()),
                get(&self.services, ns, name),
            )),
            _ => None,
        }
    }

    /// The Blog's cached children, as the logic receives them.
    fn observed(&self, ns: &str, name: &str) -> Vec<Child> {
        ["ConfigMap", "Deployment", "Service"]
            .into_iter()
            .filter_map(|kind| self.child(kind, ns, name)?.1)
            .map(Child::json)
            .collect()
    }
}

/// Whether `live` already holds every field of `desired` (extra live fields, such as defaults
/// and managedFields, are fine): then applying `desired` would change nothing.
fn holds(live: &Value, desired: &Value) -> bool {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| l.get(k).map_or(dv.is_null(), |lv| holds(lv, dv))),
        (Value::Array(l), Value::Array(d)) => {
            l.len() == d.len() && l.iter().zip(d).all(|(lv, dv)| holds(lv, dv))
        }
        (Value::Number(l), Value::Number(d)) => l.as_f64() == d.as_f64(),
        (l, d) => l == d,
    }
}

/// The Blog is not being deleted: hold its children and its status.
async fn apply(blog: Arc<Blog>, ctx: &Ctx) -> Result<Action, TwinError> {
    let ns = blog.namespace().unwrap_or_default();
    let name = blog.name_any();
    let key = format!("{ns}/{name}");
    let out = testing::reconcile::<BlogReconciler>(blog.as_ref(), ctx.observed(&ns, &name))
        .map_err(|e| TwinError::Logic {
            blog: key.clone(),
            message: e.to_string(),
        })?;
    let owner = blog
        .controller_owner_ref(&())
        .ok_or_else(|| TwinError::NoUid { blog: key.clone() })?;
    let params = PatchParams::apply("native-twin").force();
    let mut applied = Vec::new();
    for mut child in out.children.iter() {
        child["metadata"]["namespace"] = json!(ns);
        child["metadata"]["ownerReferences"] = json!([owner]);
        let kind = child["kind"].as_str().unwrap_or_default().to_owned();
        let child_name = child["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let (resource, live) =
            ctx.child(&kind, &ns, &child_name)
                .ok_or_else(|| TwinError::UnknownKind {
                    blog: key.clone(),
                    kind: kind.clone(),
                })?;
        if live.is_some_and(|live| holds(&live, &child)) {
            continue;
        }
        Api::<DynamicObject>::namespaced_with(ctx.client.clone(), &ns, &resource)
            .patch(&child_name, &params, &Patch::Apply(&child))
            .await
            .map_err(|source| TwinError::Apply {
                blog: key.clone(),
                kind: kind.clone(),
                name: child_name.clone(),
                source: Box::new(source),
            })?;
        applied.push(format!("applied {kind} {child_name}"));
    }
    if !applied.is_empty() {
        let note = Note {
            type_: EventType::Normal,
            reason: "Applied".into(),
            note: Some(applied.join(", ")),
            action: "Reconcile".into(),
            secondary: None,
        };
        // As in Weir, an Event that cannot be published is logged, never fatal.
        if let Err(e) = ctx.recorder.publish(&note, &blog.object_ref(&())).await {
            tracing::warn!(blog = %key, error = %e, "could not publish an Event");
        }
    }
    let desired: Option<BlogStatus> =
        out.status
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| TwinError::Logic {
                blog: key.clone(),
                message: format!("status does not fit BlogStatus: {e}"),
            })?;
    if let Some(status) = desired.filter(|s| blog.status.as_ref() != Some(s)) {
        Api::<Blog>::namespaced(ctx.client.clone(), &ns)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .map_err(|source| TwinError::Status {
                blog: key,
                source: Box::new(source),
            })?;
    }
    Ok(Action::requeue(ctx.resync))
}

/// The Blog is being deleted: run the logic's cleanup step; the helper drops the finalizer.
fn cleanup(blog: &Blog, ctx: &Ctx) -> Result<Action, TwinError> {
    let ns = blog.namespace().unwrap_or_default();
    let name = blog.name_any();
    match testing::finalize::<BlogReconciler>(blog, ctx.observed(&ns, &name)) {
        Ok(Finalize::Complete) => Ok(Action::await_change()),
        Ok(Finalize::AgainAfter(delay)) => Ok(Action::requeue(delay)),
        // The Blog's cleanup never acts; the twin has no apply step for one that does.
        Ok(Finalize::Apply { .. }) => Err(TwinError::Logic {
            blog: format!("{ns}/{name}"),
            message: "a cleanup step that applies children is not supported by the twin".into(),
        }),
        Err(e) => Err(TwinError::Logic {
            blog: format!("{ns}/{name}"),
            message: e.to_string(),
        }),
    }
}

async fn reconcile(blog: Arc<Blog>, ctx: Arc<Ctx>) -> Result<Action, finalizer::Error<TwinError>> {
    let blogs: Api<Blog> =
        Api::namespaced(ctx.client.clone(), &blog.namespace().unwrap_or_default());
    finalizer::finalizer(&blogs, FINALIZER, blog, |event| async {
        match event {
            Event::Apply(blog) => apply(blog, &ctx).await,
            Event::Cleanup(blog) => cleanup(&blog, &ctx),
        }
    })
    .await
}

fn error_policy(_: Arc<Blog>, _: &finalizer::Error<TwinError>, _: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// All objects of kind `K`, or those of one namespace.
fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// A reflector over every object of kind `K` (in `namespace`, if given), and the stream of
/// changed objects that fills it.
fn cached<K>(
    client: &Client,
    namespace: Option<&str>,
) -> (
    Store<K>,
    impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    K: Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let events = watcher(api::<K>(client, namespace), watcher::Config::default())
        .default_backoff()
        .modify(|obj| obj.managed_fields_mut().clear())
        .reflect(writer)
        .touched_objects();
    (store, events)
}

/// Runs the twin over every Blog in the cluster (or in `namespace`) until the process ends.
pub async fn run(client: Client, namespace: Option<&str>, workers: u16, resync: Duration) {
    let (blogs, blog_writer) = reflector::store();
    // Only spec changes (generation, which deletion bumps too) and finalizer changes (the
    // helper waits for its own patch) start a reconcile; status writes do not.
    let blog_events = watcher(api::<Blog>(&client, namespace), watcher::Config::default())
        .default_backoff()
        .modify(|blog| blog.managed_fields_mut().clear())
        .reflect(blog_writer)
        .applied_objects()
        .predicate_filter(
            predicates::generation.combine(predicates::finalizers),
            PredicateConfig::default(),
        );
    let (config_maps, config_map_events) = cached::<ConfigMap>(&client, namespace);
    let (deployments, deployment_events) = cached::<Deployment>(&client, namespace);
    let (services, service_events) = cached::<Service>(&client, namespace);
    let recorder = Recorder::new(client.clone(), Reporter::from("native-twin".to_owned()));
    let ctx = Arc::new(Ctx {
        client,
        recorder,
        config_maps,
        deployments,
        services,
        resync,
    });
    Controller::for_stream(blog_events, blogs)
        .owns_stream(config_map_events)
        .owns_stream(deployment_events)
        .owns_stream(service_events)
        .with_config(kube::runtime::controller::Config::default().concurrency(workers))
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::warn!(error = %e, source = ?std::error::Error::source(&e), "native twin reconcile failed");
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::holds;
    use serde_json::json;

    #[test]
    fn live_with_extra_fields_holds_the_desired_ones() {
        let live = json!({"metadata": {"name": "a", "uid": "u"}, "spec": {"replicas": 2, "paused": false}});
        assert!(holds(
            &live,
            &json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}})
        ));
    }

    #[test]
    fn a_changed_or_missing_field_does_not_hold() {
        let live = json!({"spec": {"replicas": 2, "ports": [{"port": 80}]}});
        assert!(!holds(&live, &json!({"spec": {"replicas": 3}})));
        assert!(!holds(&live, &json!({"spec": {"image": "nginx"}})));
        assert!(!holds(
            &live,
            &json!({"spec": {"ports": [{"port": 80}, {"port": 81}]}})
        ));
    }
}
