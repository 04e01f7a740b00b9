//! The Blog kinds the bench serves: their CRDs, their namespaces, their Blogs created at once,
//! and when a Blog is Ready.

use anyhow::Result;
use futures::{StreamExt, TryStreamExt};
use kube::CustomResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::time::Duration;
use weir::plugin::ResourceKind;

use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

/// Blogs of one kind in one namespace.
pub(crate) struct Target {
    pub(crate) kind: ResourceKind,
    /// Which of the Blog copies (`None`: the Blog itself).
    pub(crate) copy: Option<usize>,
    pub(crate) namespace: String,
}

/// The Blog's kind, or copy `n`'s.
pub(crate) fn blog_kind(copy: Option<usize>) -> ResourceKind {
    ResourceKind {
        group: "weir.dev".into(),
        version: "v1alpha1".into(),
        kind: copy.map_or("Blog".into(), |n| format!("Blog{n}")),
        plural: copy.map_or("blogs".into(), |n| format!("blogs{n}")),
        namespaced: true,
    }
}

/// The Blog's CRD, or the one `plugins/build.sh ten`/`fifty` builds copy `n` with (the same renaming
/// as `weir_plugin_blog::copy`).
pub(crate) fn blog_crd(copy: Option<usize>) -> Value {
    let mut crd = serde_json::to_value(weir_plugin_blog::Blog::crd()).unwrap_or_default();
    if let Some(n) = copy {
        crd["metadata"]["name"] = json!(format!("blogs{n}.weir.dev"));
        let names = &mut crd["spec"]["names"];
        names["kind"] = json!(format!("Blog{n}"));
        names["plural"] = json!(format!("blogs{n}"));
        names["singular"] = json!(format!("blog{n}"));
        names["listKind"] = json!(format!("Blog{n}List"));
        names["shortNames"] = Value::Null;
    }
    crd
}

/// The name of Blog `i` of `kind`: `blogs-0`, `blogs-1`, ...
pub(crate) fn blog_name(kind: &ResourceKind, i: usize) -> String {
    format!("{}-{i}", kind.plural)
}

/// Creates Blogs `0..n` of `kind` through `api` ([`blog_name`]), each asking for `replicas`
/// pods, 64 requests in flight.
/// Runs of this many Blogs or more show their progress (creates, then Ready) on stderr.
pub(crate) const PROGRESS_FROM: usize = 10_000;

pub(crate) async fn create_blogs(
    api: &Api<DynamicObject>,
    kind: &ResourceKind,
    n: usize,
    replicas: i32,
) -> Result<()> {
    let created = std::sync::atomic::AtomicUsize::new(0);
    let created = &created;
    futures::stream::iter(0..n)
        .map(|i| async move {
            let blog: DynamicObject = serde_json::from_value(json!({
                "apiVersion": kind.api_version(), "kind": kind.kind,
                "metadata": {"name": blog_name(kind, i)},
                "spec": {"title": format!("Blog {i}"), "replicas": replicas},
            }))?;
            api.create(&PostParams::default(), &blog).await?;
            let done = created.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if n >= PROGRESS_FROM && done.is_multiple_of(PROGRESS_FROM) {
                eprintln!("{}: {done} of {n} created", kind.kind);
            }
            anyhow::Ok(())
        })
        .buffer_unordered(64)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

/// Whether a Blog has `Ready=True` for its current generation.
pub(crate) fn is_ready(obj: &DynamicObject) -> bool {
    let current = obj.data["status"]["observedGeneration"].as_i64() == obj.metadata.generation;
    let ready = obj.data["status"]["conditions"]
        .as_array()
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    current && ready
}

/// An emulator whose Deployments turn ready after 50 ms (the rest of `config` as given), with
/// every target's CRD and namespace installed.
pub(crate) async fn emulator_for(targets: &[Target], config: EmulatorConfig) -> Result<Emulator> {
    let emulator = Emulator::start(EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(50),
        }),
        ..config
    })
    .await?;
    install(&emulator, targets).await?;
    Ok(emulator)
}

/// Installs the CRD and the namespace of every target.
pub(crate) async fn install(emulator: &Emulator, targets: &[Target]) -> Result<()> {
    let client = emulator.client();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ResourceKind {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        }
        .api_resource(),
    );
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    let apply = PatchParams::apply("bench").force();
    for t in targets {
        let crd = blog_crd(t.copy);
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        crds.patch(name, &apply, &Patch::Apply(&crd)).await?;
        let ns =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t.namespace}});
        namespaces
            .patch(&t.namespace, &apply, &Patch::Apply(&ns))
            .await?;
    }
    Ok(())
}
