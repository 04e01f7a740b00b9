//! The Blog kinds the bench serves: their CRDs, their namespaces, their Blogs created at once,
//! and when a Blog is Ready.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResourceExt, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinSet;
use weir::plugin::ResourceKind;

use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

use super::controllers::Children;

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

/// The `User-Agent` of the bench's own requests (its creates, its watch of the Blogs), so that
/// the emulator's request log tells them from the measured controller's.
pub(crate) const BENCH_AGENT: &str = "weir-bench";

/// A client of `emulator` whose requests say `User-Agent: weir-bench`.
pub(crate) fn bench_client(emulator: &Emulator) -> Result<kube::Client> {
    let mut config = kube::Config::new(emulator.url().parse()?);
    config
        .headers
        .push((http::header::USER_AGENT, BENCH_AGENT.parse()?));
    Ok(kube::Client::try_from(config)?)
}

/// How many Blogs are Ready, kept from one watch per Blog kind: the bench pays one event per
/// change (not a list of every Blog per poll, whose cost grows with the Blogs and shares the
/// emulator's process with the measured controller's requests), and sees the last Blog turn
/// Ready when it does.
pub(crate) struct Readiness {
    count: watch::Receiver<usize>,
    /// The watches, one per kind; dropping the set ends them.
    _watches: JoinSet<()>,
}

impl Readiness {
    /// Starts watching the Blogs `apis` serve.
    pub(crate) fn watch(apis: &[Api<DynamicObject>]) -> Self {
        let (tx, count) = watch::channel(0usize);
        let mut watches = JoinSet::new();
        for api in apis {
            let (api, tx) = (api.clone(), tx.clone());
            watches.spawn(async move {
                let mut ready = HashSet::<String>::new();
                let mut events = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .boxed();
                while let Some(event) = events.next().await {
                    let before = ready.len();
                    match event {
                        Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                            if is_ready(&o) {
                                ready.insert(o.name_any());
                            } else {
                                ready.remove(&o.name_any());
                            }
                        }
                        Ok(watcher::Event::Delete(o)) => {
                            ready.remove(&o.name_any());
                        }
                        // A relist: what it lists follows.
                        Ok(watcher::Event::Init) => ready.clear(),
                        Ok(watcher::Event::InitDone) => {}
                        // The backoff retries; a Blog is counted again when listed.
                        Err(e) => eprintln!("the bench's watch of the Blogs: {e}"),
                    }
                    // This kind's share of the total moves from `before` to its new size.
                    tx.send_modify(|n| *n = *n - before + ready.len());
                }
            });
        }
        Readiness {
            count,
            _watches: watches,
        }
    }

    /// The Ready Blogs now.
    pub(crate) fn ready(&mut self) -> usize {
        *self.count.borrow_and_update()
    }

    /// Waits until `blogs` are Ready, failing if one of `children` exits or the Blogs take
    /// longer than 30 ms each (at least 900 s) from `started`; from [`PROGRESS_FROM`] Blogs,
    /// shows the progress every 30 s (at any size every `WEIR_BENCH_PROGRESS` seconds if set).
    pub(crate) async fn until(
        &mut self,
        label: &str,
        blogs: usize,
        children: &mut Children,
        started: Instant,
    ) -> Result<()> {
        let limit = Duration::from_secs(900).max(Duration::from_millis(30 * blogs as u64));
        // `WEIR_BENCH_PROGRESS=SECS` shows the Ready curve at any size, every SECS seconds.
        let every = std::env::var("WEIR_BENCH_PROGRESS")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .map(Duration::from_secs_f64);
        let (from, every) = match every {
            Some(every) => (0, every),
            None => (PROGRESS_FROM, Duration::from_secs(30)),
        };
        let mut shown = Instant::now();
        loop {
            let ready = self.ready();
            if ready == blogs {
                return Ok(());
            }
            children.check_running()?;
            if started.elapsed() > limit {
                bail!("{label}: only {ready} of {blogs} Blogs Ready after {limit:?}");
            }
            if blogs >= from && shown.elapsed() >= every {
                eprintln!(
                    "{label}: {ready} of {blogs} Blogs Ready after {:.0} s",
                    started.elapsed().as_secs_f64()
                );
                shown = Instant::now();
            }
            self.changed(Duration::from_secs(1)).await;
        }
    }

    /// Waits until the count changes or `at_most` has passed.
    pub(crate) async fn changed(&mut self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.count.changed()).await;
    }
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

/// Writes the store took from a point on: its resourceVersion, which each write advances by
/// one, read from a list of at most one object.
pub(crate) struct StoreWrites(u64);

impl StoreWrites {
    pub(crate) async fn since(api: &Api<DynamicObject>) -> Result<Self> {
        Ok(Self(resource_version(api).await?))
    }

    pub(crate) async fn count(&self, api: &Api<DynamicObject>) -> Result<u64> {
        Ok(resource_version(api).await?.saturating_sub(self.0))
    }
}

async fn resource_version(api: &Api<DynamicObject>) -> Result<u64> {
    let list = api
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await?;
    let rv = list.metadata.resource_version.unwrap_or_default();
    rv.parse()
        .with_context(|| format!("the emulator's resourceVersion {rv:?} is not a number"))
}
