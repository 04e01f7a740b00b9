//! The host benchmark: N Blogs created at once on the emulator, reconciled by Weir (the WASM
//! Blog plugin) and by the native twin, each in its own process; prints a table.
//!
//! `cargo run -p weir-e2e --bin weir-bench -- [--blogs 1000]` (plugins built by `plugins/build.sh`).
//! The controller under test runs as a child process (`weir-bench serve weir|native ...`) so its
//! peak RSS is its own; the emulator runs in this process, and its request log counts the child's
//! requests (this process's own creates and polls are subtracted).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use kube::CustomResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir::plugin::{
    FinalizeRequest, FinalizeResponse, PluginInfo, ReconcileRequest, ReconcileResponse,
    ResourceKind,
};
use weir::reconcile::invoke::{PluginError, Reconciler};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

const RESYNC_SECS: u64 = 3;
const WORKERS: usize = 8;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Blog plugin under another kind name (`Blog3`, plural `blogs3`), for the 10-plugin RSS row.
struct Renamed {
    inner: Arc<dyn Reconciler>,
    info: PluginInfo,
}

impl Renamed {
    fn new(inner: Arc<dyn Reconciler>, n: usize) -> Self {
        let mut info = inner.info().clone();
        info.name = format!("blog{n}");
        info.parent.kind = format!("Blog{n}");
        info.parent.plural = format!("blogs{n}");
        info.crd = Some(renamed_crd(n).to_string());
        Self { inner, info }
    }

    fn restore(parent: &str) -> String {
        let mut v: Value = serde_json::from_str(parent).unwrap_or_default();
        v["kind"] = json!("Blog");
        v.to_string()
    }
}

impl Reconciler for Renamed {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn reconcile(&self, req: &ReconcileRequest) -> Result<ReconcileResponse, PluginError> {
        self.inner.reconcile(&ReconcileRequest {
            parent: Self::restore(&req.parent),
            children: req.children.clone(),
        })
    }
    fn finalize(&self, req: &FinalizeRequest) -> Result<FinalizeResponse, PluginError> {
        self.inner.finalize(&FinalizeRequest {
            parent: Self::restore(&req.parent),
            ..req.clone()
        })
    }
}

fn blog_crd() -> Value {
    serde_json::to_value(weir_plugin_blog::Blog::crd()).unwrap_or_default()
}

fn renamed_crd(n: usize) -> Value {
    let mut crd = blog_crd();
    crd["metadata"]["name"] = json!(format!("blogs{n}.weir.dev"));
    crd["spec"]["names"]["kind"] = json!(format!("Blog{n}"));
    crd["spec"]["names"]["plural"] = json!(format!("blogs{n}"));
    crd["spec"]["names"]["singular"] = json!(format!("blog{n}"));
    crd["spec"]["names"]["listKind"] = json!(format!("Blog{n}List"));
    crd["spec"]["names"]["shortNames"] = json!([]);
    crd
}

fn blog_kind(copy: Option<usize>) -> ResourceKind {
    ResourceKind {
        group: "weir.dev".into(),
        version: "v1alpha1".into(),
        kind: copy.map_or("Blog".into(), |n| format!("Blog{n}")),
        plural: copy.map_or("blogs".into(), |n| format!("blogs{n}")),
        namespaced: true,
    }
}

/// `weir-bench serve weir|native KUBECONFIG COPIES`: the controller under test.
async fn serve(system: &str, kubeconfig: &Path, copies: usize) -> Result<()> {
    let client = weir::run::client(Some(kubeconfig)).await?;
    match system {
        "native" => {
            println!("STARTED");
            weir_e2e::native_twin::run(client, WORKERS as u16, Duration::from_secs(RESYNC_SECS))
                .await;
        }
        "weir" => {
            if copies > 1 {
                bail!("the ten-plugin row moves to ten distinct components");
            }
            let plugins = vec![weir_e2e::plugin("blog")?];
            let mut config = weir::ManagerConfig::default();
            config.controller.workers = WORKERS;
            config.controller.resync = Duration::from_secs(RESYNC_SECS);
            let host =
                weir::Manager::start(client, weir::PluginSource::Fixed(plugins), config).await?;
            println!("STARTED");
            std::future::pending::<()>().await;
            drop(host);
        }
        other => bail!("unknown system {other}"),
    }
    Ok(())
}

fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

struct Row {
    system: String,
    blogs: usize,
    seconds: f64,
    requests_per_blog: f64,
    writes_per_blog: f64,
    resync_writes: usize,
    rss_mib: f64,
}

fn spawn_child(system: &str, kubeconfig: &Path, copies: usize) -> Result<Child> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["serve", system])
        .arg(kubeconfig)
        .arg(copies.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    if !line.starts_with("STARTED") {
        bail!("the {system} controller did not start: {line:?}");
    }
    Ok(child)
}

fn is_ready(obj: &DynamicObject) -> bool {
    let current = obj.data["status"]["observedGeneration"].as_i64() == obj.metadata.generation;
    let ready = obj.data["status"]["conditions"]
        .as_array()
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    current && ready
}

/// Creates `per_kind` Blogs of each kind and measures until all are Ready.
async fn measure(
    system: &str,
    kinds: &[ResourceKind],
    per_kind: usize,
    copies: usize,
) -> Result<Row> {
    let emulator = Emulator::start(EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(50),
        }),
        watch_history: 200_000,
        ..EmulatorConfig::default()
    })
    .await?;
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
    for (i, _) in kinds.iter().enumerate() {
        let crd = if copies > 1 {
            renamed_crd(i)
        } else {
            blog_crd()
        };
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        crds.patch(
            &name,
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&crd),
        )
        .await?;
    }
    let dir = std::env::temp_dir().join(format!(
        "weir-bench-{}-{system}-{copies}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    let mut child = spawn_child(system, &kubeconfig, copies)?;
    // Started means watching: wait until every parent kind has a watch open.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !kinds.iter().all(|k| {
        emulator
            .requests()
            .iter()
            .any(|r| r.is_watch() && r.path.ends_with(&format!("/{}", k.plural)))
    }) {
        if Instant::now() > deadline {
            bail!("{system} never watched its parents");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    emulator.clear_requests();

    let started = Instant::now();
    let mut ours = 0usize;
    for kind in kinds {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "default", &kind.api_resource());
        futures::stream::iter(0..per_kind)
            .map(|i| {
                let api = api.clone();
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": kind.api_version(), "kind": kind.kind,
                    "metadata": {"name": format!("{}-{i}", kind.plural)},
                    "spec": {"title": format!("Blog {i}"), "replicas": 2},
                }))
                .unwrap_or_else(|_| DynamicObject::new("invalid", &kind.api_resource()));
                async move { api.create(&PostParams::default(), &obj).await }
            })
            .buffer_unordered(64)
            .try_collect::<Vec<_>>()
            .await?;
        ours += per_kind;
    }
    loop {
        let mut ready = 0;
        for kind in kinds {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), "default", &kind.api_resource());
            ready += api
                .list(&Default::default())
                .await?
                .items
                .iter()
                .filter(|o| is_ready(o))
                .count();
            ours += 1;
        }
        if ready == kinds.len() * per_kind {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("{system}: only {ready} Blogs Ready after 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let log = emulator.requests();
    let blogs = kinds.len() * per_kind;
    let requests = log.len().saturating_sub(ours);
    let writes = log
        .iter()
        .filter(|r| r.is_write())
        .count()
        .saturating_sub(blogs);
    if std::env::var_os("WEIR_BENCH_DEBUG").is_some() {
        print_writes(system, &log);
    }

    // Quiet period: let the last echoes settle, then count writes over more than one resync.
    tokio::time::sleep(Duration::from_millis(500)).await;
    emulator.clear_requests();
    tokio::time::sleep(Duration::from_secs(RESYNC_SECS * 2 + 1)).await;
    let quiet = emulator.requests();
    let resync_writes = quiet
        .iter()
        .filter(|r| r.is_write() && !r.path.contains("/leases"))
        .count();
    if std::env::var_os("WEIR_BENCH_DEBUG").is_some() {
        for r in quiet.iter().filter(|r| r.is_write()).take(8) {
            eprintln!(
                "{system}: quiet-period write {} {} {:?}",
                r.method, r.path, r.field_manager
            );
        }
    }
    let rss_mib = peak_rss_mib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    emulator.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Row {
        system: if copies > 1 {
            format!("{system} ({copies} plugins)")
        } else {
            system.to_owned()
        },
        blogs,
        seconds,
        requests_per_blog: requests as f64 / blogs as f64,
        writes_per_blog: writes as f64 / blogs as f64,
        resync_writes,
        rss_mib,
    })
}

/// Breaks the writes of `log` down by method, resource (and subresource) and response code,
/// to show where a requests/Blog figure above the minimum comes from.
fn print_writes(system: &str, log: &[weir_emulator::RequestRecord]) {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for r in log.iter().filter(|r| r.is_write()) {
        let segments: Vec<&str> = r.path.split('/').collect();
        let resource = segments
            .iter()
            .position(|s| *s == "namespaces")
            .map(|i| {
                segments
                    .iter()
                    .skip(i + 2)
                    .step_by(2)
                    .copied()
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_else(|| r.path.clone());
        *counts
            .entry(format!(
                "{} {resource} {} {:?}",
                r.method, r.status, r.content_type
            ))
            .or_default() += 1;
    }
    for (what, n) in counts {
        eprintln!("{system}: {n:>7} × {what}");
    }
}

fn print(rows: &[Row]) {
    println!(
        "| {:<22} | {:>6} | {:>12} | {:>12} | {:>10} | {:>20} | {:>13} |",
        "controller",
        "Blogs",
        "all Ready s",
        "requests/Blog",
        "writes/Blog",
        "writes, 2 resyncs",
        "peak RSS MiB"
    );
    println!(
        "|{:-<24}|{:->8}|{:->14}|{:->14}|{:->12}|{:->22}|{:->15}|",
        "", "", "", "", "", "", ""
    );
    for r in rows {
        println!(
            "| {:<22} | {:>6} | {:>12.2} | {:>12.2} | {:>10.2} | {:>20} | {:>13.1} |",
            r.system,
            r.blogs,
            r.seconds,
            r.requests_per_blog,
            r.writes_per_blog,
            r.resync_writes,
            r.rss_mib
        );
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
        let system = args.get(1).context("serve weir|native KUBECONFIG COPIES")?;
        let kubeconfig = PathBuf::from(args.get(2).context("kubeconfig path")?);
        let copies = args.get(3).and_then(|c| c.parse().ok()).unwrap_or(1);
        return serve(system, &kubeconfig, copies).await;
    }
    let blogs = args
        .iter()
        .position(|a| a == "--blogs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    if !root().join("target/plugins/blog.wasm").exists() {
        bail!("target/plugins/blog.wasm is missing: run plugins/build.sh first");
    }
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    if let Some(system) = only {
        print(&[measure(system, &[blog_kind(None)], blogs, 1).await?]);
        return Ok(());
    }
    let mut rows = Vec::new();
    rows.push(measure("weir", &[blog_kind(None)], blogs, 1).await?);
    rows.push(measure("native", &[blog_kind(None)], blogs, 1).await?);
    print(&rows);
    let (w, n) = (&rows[0], &rows[1]);
    println!(
        "\nWeir / native time to all Ready: {:.2}x",
        w.seconds / n.seconds
    );

    let per = 100;
    let mut rss = Vec::new();
    rss.push(measure("weir", &[blog_kind(None)], per, 1).await?);
    let ten: Vec<ResourceKind> = (0..10).map(|n| blog_kind(Some(n))).collect();
    rss.push(measure("weir", &ten, per, 10).await?);
    rss.push(measure("native", &[blog_kind(None)], per, 1).await?);
    println!();
    print(&rss);
    println!(
        "\nRSS: Weir with 10 plugins {:.1} MiB vs 10 native twin processes ≈ 10 × {:.1} = {:.1} MiB",
        rss[1].rss_mib,
        rss[2].rss_mib,
        rss[2].rss_mib * 10.0
    );
    Ok(())
}
