//! Shared set-up for the end-to-end tests: an API server, a namespace, plugins and a host.
//!
//! Each test gets the embedded emulator, or the cluster `KUBECONFIG` names when it is set, and a
//! namespace of its own (the host under test watches only that namespace, so tests sharing a
//! real cluster do not see each other's objects).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use host::{InProcess, RunArgs, RunSource};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use weir::client::ClientLimits;
use weir::manager::Manager;
use weir::plugin::{Engine, EngineConfig, Limits, Plugin, ResourceKind};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

pub mod api_faults;
pub mod convergence;
pub mod fleet;
pub mod host;
pub mod hostile;
pub mod kinds;
pub mod native_twin;
pub mod plugin_log;
pub mod tenants;
pub mod weir_dev;
pub mod weir_run;

/// Held by the scenarios that must not overlap in time: the hostile plugin's, which saturates
/// the CPU on purpose (spinning and sleeping guests), and the leader-election ones, whose promise
/// (no write from an old leader after the new one's first) assumes the host is not stalled for
/// longer than its step-down margin. Other scenarios run beside either.
pub async fn exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    static EXCLUSIVE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    EXCLUSIVE.lock().await
}

/// How long a scenario waits for the cluster to converge before failing: a bound that tells a
/// scenario that hangs from one that is slow, not a speed claim (a scenario that promises a time
/// says so with its own bound). `tests/run.sh` runs the end-to-end suite beside the other tests on
/// two cores, so a scenario may wait its turn for the CPU; a passing scenario never waits it out.
pub const CONVERGE: Duration = Duration::from_secs(60);

/// One test's world: an API server, a client, and a namespace of its own.
pub struct TestEnv {
    /// Client of the API server under test.
    pub client: Client,
    /// The embedded emulator, unless `KUBECONFIG` points at a real cluster.
    pub emulator: Option<Emulator>,
    /// The namespace this test owns.
    pub namespace: String,
}

static NEXT_NAMESPACE: AtomicU32 = AtomicU32::new(0);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The engine every test shares, with the compile cache under `target/`.
pub fn engine() -> Result<&'static Engine> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    if let Some(e) = ENGINE.get() {
        return Ok(e);
    }
    let engine = own_engine()?;
    Ok(ENGINE.get_or_init(|| engine))
}

/// An engine of its own, on the shared compile cache, as each `weir run` has: a host whose
/// scenario has a deadline over a compile (an artifact refused by the compiler) gets one, so
/// that compile does not queue behind other scenarios' on the shared [`engine`], which compiles
/// one component at a time (a cold cache's Python and JavaScript components take most of a
/// minute each).
pub fn own_engine() -> Result<Engine> {
    let config = EngineConfig {
        cache_dir: Some(workspace_root().join("target/plugin-cache")),
        ..EngineConfig::default()
    };
    Engine::new(config).context("starting a WebAssembly engine")
}

/// Loads `target/plugins/<name>.wasm` in the real sandbox.
pub fn plugin(name: &str) -> Result<Plugin> {
    let path = workspace_root()
        .join("target/plugins")
        .join(format!("{name}.wasm"));
    if !path.exists() {
        bail!("{} is missing: run plugins/build.sh first", path.display());
    }
    engine()?
        .load_file(&path, Limits::default())
        .with_context(|| format!("loading {}", path.display()))
}

/// `target/plugins/<name>`, as built by `plugins/build.sh`.
pub fn built(name: &str) -> PathBuf {
    workspace_root().join("target/plugins").join(name)
}

/// Copies the built plugin `built_name` into `dir` as `name` the way an installer should: a
/// hidden temporary, then a rename (a watcher of `dir` never sees a half-written file).
/// Returns when the rename is done.
pub fn install(dir: &Path, built_name: &str, name: &str) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::copy(built(built_name), &tmp)
        .with_context(|| format!("{built_name}: run plugins/build.sh"))?;
    std::fs::rename(&tmp, dir.join(name))
        .with_context(|| format!("installing {built_name} as {}", dir.join(name).display()))?;
    Ok(())
}

impl TestEnv {
    /// The emulator (with Deployments turning ready after 100 ms) or `KUBECONFIG`'s cluster,
    /// and a fresh namespace.
    pub async fn start() -> Result<TestEnv> {
        Self::start_with(false).await
    }

    /// [`TestEnv::start`] on an emulator that serves KEP-5866's `shardSelector` (as an API
    /// server with the alpha `ShardedListAndWatch` gate on does); on a cluster, as `start`.
    pub async fn start_sharded() -> Result<TestEnv> {
        Self::start_with(true).await
    }

    async fn start_with(sharded_list_watch: bool) -> Result<TestEnv> {
        // `RUST_LOG=weir=debug cargo test -p weir-e2e` shows the host's logs of failing tests;
        // the plugins' log lines are recorded whatever it says.
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let _ = tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_test_writer()
                    .with_filter(tracing_subscriber::EnvFilter::from_default_env()),
            )
            .with(plugin_log::layer())
            .try_init();
        let (client, emulator) = match std::env::var_os("KUBECONFIG") {
            Some(path) => (
                weir::client::connect(
                    Some(Path::new(&path)),
                    weir::client::ClientLimits::default(),
                    None,
                )
                .await?,
                None,
            ),
            None => {
                let config = EmulatorConfig {
                    workloads: Some(WorkloadSimulation {
                        ready_after: Duration::from_millis(100),
                    }),
                    sharded_list_watch,
                    ..EmulatorConfig::default()
                };
                let emulator = Emulator::start(config)
                    .await
                    .context("starting the emulator")?;
                (emulator.client(), Some(emulator))
            }
        };
        let namespace = format!(
            "e2e-{}-{}",
            std::process::id(),
            NEXT_NAMESPACE.fetch_add(1, Ordering::Relaxed)
        );
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .context("creating the test namespace")?;
        Ok(TestEnv {
            client,
            emulator,
            namespace,
        })
    }

    /// A client whose requests carry `User-Agent: agent`, so that the emulator's request log
    /// tells them from the test's own; built as `weir run` builds its client (`limits`, the
    /// pushback on 429s), against the emulator or `KUBECONFIG`'s cluster.
    pub async fn client_as(&self, agent: &str, limits: ClientLimits) -> Result<Client> {
        let Some(emulator) = &self.emulator else {
            let kubeconfig = std::env::var_os("KUBECONFIG").map(PathBuf::from);
            return Ok(weir::client::connect(kubeconfig.as_deref(), limits, Some(agent)).await?);
        };
        let mut config = kube::Config::new(emulator.url().parse()?);
        config
            .headers
            .push((http::header::USER_AGENT, agent.parse()?));
        Ok(weir::client::build(config, limits)?)
    }

    /// Installs the CRD a plugin ships and waits until its kind is served.
    pub async fn install_crd(&self, plugin: &Plugin) -> Result<()> {
        let info = plugin.info();
        let Some(text) = &info.crd else {
            bail!("plugin {} ships no CRD", info.name)
        };
        let crd: Value = weir::yaml::from_str(text).context("parsing the plugin's CRD")?;
        let name = crd["metadata"]["name"]
            .as_str()
            .context("CRD without a name")?
            .to_owned();
        let ar = ResourceKind {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        }
        .api_resource();
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        api.patch(
            &name,
            &PatchParams::apply("weir-e2e").force(),
            &Patch::Apply(&crd),
        )
        .await
        .context("installing the CRD")?;
        let parents = if info.parent.namespaced {
            self.api(&info.parent)
        } else {
            Api::all_with(self.client.clone(), &info.parent.api_resource())
        };
        eventually("the CRD is served", CONVERGE, || async {
            parents.list(&Default::default()).await.ok()
        })
        .await?;
        Ok(())
    }

    /// The host `weir run` starts, serving `plugins`, watching this test's namespace, fast
    /// settings ([`host::RunArgs::in_process`]).
    pub async fn host(&self, plugins: &[Plugin]) -> Result<Manager> {
        self.loaded(plugins).start().await
    }

    /// The host serving `plugins` as loaded, watching this test's namespace, to start in this
    /// process once a scenario has set what it needs ([`host::InProcess`]).
    pub fn loaded(&self, plugins: &[Plugin]) -> InProcess {
        self.in_process(RunSource::Loaded(plugins.to_vec()))
    }

    /// The host serving `source`, watching this test's namespace, to start in this process
    /// ([`host::RunArgs::in_process`]).
    pub fn in_process(&self, source: RunSource) -> InProcess {
        self.run_args(source).in_process(self)
    }

    /// The host serving the built plugin `name` alone, its parent CRD installed first, fast
    /// settings: the start of most scenarios.
    pub async fn serve(&self, name: &str) -> Result<Manager> {
        let served = plugin(name)?;
        self.install_crd(&served).await?;
        self.host(&[served]).await
    }

    /// A host's arguments with `source`, watching this test's namespace: to start in this
    /// process ([`host::RunArgs::in_process`]) or as `weir run`.
    pub fn run_args(&self, source: RunSource) -> RunArgs {
        RunArgs::new(source).namespace(&self.namespace)
    }

    /// Whole-kind list (not watch) requests the emulator served for `kind` in this test's
    /// namespace so far: the informers' lists (a test's own polls select by label and are not
    /// counted); `None` against a real cluster.
    pub fn lists_of(&self, kind: &ResourceKind) -> Option<usize> {
        self.requests_of(kind, false)
    }

    /// Watch requests the emulator served for `kind` in this test's namespace so far.
    pub fn watches_of(&self, kind: &ResourceKind) -> Option<usize> {
        self.requests_of(kind, true)
    }

    fn requests_of(&self, kind: &ResourceKind, watch: bool) -> Option<usize> {
        let e = self.emulator.as_ref()?;
        let prefix = if kind.group.is_empty() {
            format!("/api/{}", kind.version)
        } else {
            format!("/apis/{}/{}", kind.group, kind.version)
        };
        let path = format!("{prefix}/namespaces/{}/{}", self.namespace, kind.plural);
        Some(
            e.requests()
                .iter()
                .filter(|r| r.method == "GET" && r.path == path && r.is_watch() == watch)
                .filter(|r| !r.query.contains("labelSelector"))
                .count(),
        )
    }

    /// Objects of `kind` in this test's namespace.
    pub fn api(&self, kind: &ResourceKind) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, &kind.api_resource())
    }

    /// Typed objects in this test's namespace.
    pub fn typed<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// Creates a parent from `spec`.
    pub async fn create(
        &self,
        kind: &ResourceKind,
        name: &str,
        spec: Value,
    ) -> Result<DynamicObject> {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": kind.api_version(),
            "kind": kind.kind,
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": spec,
        }))?;
        self.api(kind)
            .create(&PostParams::default(), &obj)
            .await
            .with_context(|| format!("creating {name}"))
    }

    /// Merge-patches a parent's spec, as a user would.
    pub async fn patch_spec(&self, kind: &ResourceKind, name: &str, spec: Value) -> Result<()> {
        let pp = PatchParams {
            field_manager: Some("e2e-user".into()),
            ..PatchParams::default()
        };
        self.api(kind)
            .patch(name, &pp, &Patch::Merge(json!({"spec": spec})))
            .await
            .with_context(|| format!("patching {name}"))?;
        Ok(())
    }

    /// Writes the emulator served so far (none counted against a real cluster), excluding
    /// Leases (leader election renews them) and Events.
    pub fn server_writes(&self) -> Option<usize> {
        let e = self.emulator.as_ref()?;
        Some(
            e.requests()
                .iter()
                .filter(|r| {
                    r.is_write() && !r.path.contains("/leases") && !r.path.contains("/events")
                })
                .count(),
        )
    }
}

/// The condition of `type_` in an object's status.
pub fn condition(obj: &DynamicObject, type_: &str) -> Option<Value> {
    obj.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

/// Whether `obj` is controlled by `owner` (controller owner reference with its UID).
pub fn controlled_by(obj: &DynamicObject, owner: &DynamicObject) -> bool {
    obj.owner_references()
        .iter()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == owner.metadata.uid.as_ref())
}

/// Waits until `host` has not reconciled anything for `still`: children turning ready, echoes
/// of the host's own writes and the like have settled, so a count taken now starts a window
/// that only the test's own next step can add to.
pub async fn quiet(host: &Manager, still: Duration) -> Result<()> {
    eventually("the host goes quiet", CONVERGE * 3, || async {
        let before = host.metrics().reconciles_total();
        tokio::time::sleep(still).await;
        (host.metrics().reconciles_total() == before).then_some(())
    })
    .await
}

/// Polls `f` every 20 ms until it returns `Some`, failing with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting until {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until a parent reports `Ready=True` and `Reconciled=True` for its current generation.
pub async fn wait_ready(api: &Api<DynamicObject>, name: &str) -> Result<DynamicObject> {
    eventually(&format!("{name} is Ready"), CONVERGE, || async {
        let obj = api.get(name).await.ok()?;
        let current = obj.data["status"]["observedGeneration"].as_i64() == obj.metadata.generation;
        let ready = condition(&obj, "Ready")?["status"] == "True";
        let reconciled = condition(&obj, "Reconciled")?["status"] == "True";
        (current && ready && reconciled).then_some(obj)
    })
    .await
}
