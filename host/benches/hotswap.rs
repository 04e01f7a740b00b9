//! Hot swap versus restart: from a new Blog version landing in the plugins directory to the last
//! child of N Blogs carrying its change, on the embedded emulator, in one run.
//!
//! `cargo bench -p weir --bench hotswap` (after `plugins/build.sh`; `WEIR_BENCH_BLOGS=N`, default 100).
//! `blog-v2.wasm` adds the label `weir.dev/hot-swapped=v2` to every child; `blog.wasm` removes it.

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark without its setup has nothing to measure"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;
use weir::hotload::{Config, install_crd};
use weir::manager::{Manager, ManagerConfig, PluginSource};
use weir::plugin::{Engine, EngineConfig, Limits, ResourceKind};
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

const ROUNDS: usize = 4;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn kind(group: &str, version: &str, kind: &str, plural: &str) -> ResourceKind {
    ResourceKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// Children in `default` carrying the v2 label.
async fn labelled(client: &kube::Client) -> usize {
    let lp = ListParams::default().labels("weir.dev/hot-swapped=v2");
    let mut n = 0;
    for k in [
        kind("", "v1", "ConfigMap", "configmaps"),
        kind("apps", "v1", "Deployment", "deployments"),
        kind("", "v1", "Service", "services"),
    ] {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "default", &k.api_resource());
        n += api.list(&lp).await.map_or(0, |l| l.items.len());
    }
    n
}

async fn until(what: &str, mut ok: impl AsyncFnMut() -> bool) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ok().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Instant::now()
}

/// Renames `file` into `dir/blog.wasm` the way an installer does.
fn put(dir: &Path, file: &str) -> Instant {
    let tmp = dir.join(".blog.wasm.tmp");
    std::fs::copy(root().join("target/plugins").join(file), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("blog.wasm")).unwrap();
    Instant::now()
}

/// The host `weir run --plugins DIR` starts.
async fn host(client: &kube::Client, engine: &Engine, dir: &Path) -> Manager {
    let source = PluginSource::Directory {
        config: Config::new(dir),
        engine: engine.clone(),
    };
    Manager::start(client.clone(), source, ManagerConfig::default())
        .await
        .unwrap()
}

#[tokio::main]
async fn main() {
    let blogs: usize = std::env::var("WEIR_BENCH_BLOGS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let sim = WorkloadSimulation {
        ready_after: Duration::from_millis(100),
    };
    let emulator = Emulator::start(EmulatorConfig {
        workloads: Some(sim),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let client = emulator.client();
    let engine = Engine::new(EngineConfig {
        cache_dir: Some(root().join("target/plugin-cache")),
        ..EngineConfig::default()
    })
    .unwrap();
    let blog = engine
        .load_file(&root().join("target/plugins/blog.wasm"), Limits::default())
        .unwrap();
    install_crd(&client, blog.info()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "blog.wasm");
    let mut running = host(&client, &engine, dir.path()).await;
    let parents: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &blog.info().parent.api_resource(),
    );
    for i in 0..blogs {
        let obj = serde_json::from_value(json!({
            "apiVersion": "weir.dev/v1alpha1", "kind": "Blog",
            "metadata": {"name": format!("blog-{i}")}, "spec": {"title": format!("Blog {i}"), "replicas": 1}
        }))
        .unwrap();
        parents.create(&PostParams::default(), &obj).await.unwrap();
    }
    let services: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kind("", "v1", "Service", "services").api_resource(),
    );
    until("every Blog has its children", async || {
        services
            .list(&ListParams::default())
            .await
            .is_ok_and(|l| l.items.len() == blogs)
    })
    .await;

    println!(
        "{blogs} Blogs ({} children); ms from the file's rename",
        3 * blogs
    );
    println!(
        "{:<10} {:>6} {:>18} {:>22}",
        "how", "round", "new version served", "last child updated"
    );
    let mut hot = Vec::new();
    let mut restart = Vec::new();
    for round in 0..ROUNDS {
        let (file, want) = if round % 2 == 0 {
            ("blog-v2.wasm", 3 * blogs)
        } else {
            ("blog.wasm", 0)
        };
        let before = running.catalog().rows()[0].sha256.clone();
        let renamed = put(dir.path(), file);
        let served = until("the new version is served", async || {
            running
                .catalog()
                .rows()
                .first()
                .is_some_and(|r| r.sha256 != before)
        })
        .await;
        let done = until("every child is updated", async || {
            labelled(&client).await == want
        })
        .await;
        let (s, d) = ((served - renamed).as_millis(), (done - renamed).as_millis());
        println!("{:<10} {round:>6} {s:>18} {d:>22}", "hot swap");
        hot.push(d);
    }
    for round in 0..ROUNDS {
        // The alternative without hot-loading: stop the host, replace the file, start again.
        let (file, want) = if round % 2 == 0 {
            ("blog-v2.wasm", 3 * blogs)
        } else {
            ("blog.wasm", 0)
        };
        let renamed = Instant::now();
        running.shutdown().await;
        put(dir.path(), file);
        running = host(&client, &engine, dir.path()).await;
        let served = until("the host is ready", async || running.is_ready()).await;
        let done = until("every child is updated", async || {
            labelled(&client).await == want
        })
        .await;
        let (s, d) = ((served - renamed).as_millis(), (done - renamed).as_millis());
        println!("{:<10} {round:>6} {s:>18} {d:>22}", "restart");
        restart.push(d);
    }
    hot.sort();
    restart.sort();
    let (h, r) = (hot[ROUNDS / 2], restart[ROUNDS / 2]);
    println!(
        "median last child: hot swap {h} ms, restart {r} ms, ratio {:.2}",
        h as f64 / r.max(1) as f64
    );
    running.shutdown().await;
    emulator.shutdown().await;
}
