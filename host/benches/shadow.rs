//! The cost of shadowing: reconcile time and memory of N converged Blogs with and without a
//! candidate version beside the serving one, on the embedded emulator, in one run.
//!
//! `cargo bench -p weir --bench shadow` (after `plugins/build.sh`; `WEIR_BENCH_BLOGS=N`, default
//! 100). Each round touches every Blog (an annotation: an outside change that writes no child)
//! and waits until all N are reconciled; first without a candidate, then with `blog-v2.wasm`
//! shadowed (it differs from the serving Blog in one label, so every comparison finds a diff).
//! Memory is the process's resident set (host and emulator together): its growth from before
//! the candidate to after the shadowed rounds is the candidate's cost.

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark without its setup has nothing to measure"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use weir::hotload::install_crd;
use weir::manager::{Manager, ManagerConfig, PluginSource};
use weir::plugin::{Engine, EngineConfig, Limits, Plugin};
use weir::rollout::RolloutConfig;
use weir_emulator::{Emulator, EmulatorConfig, WorkloadSimulation};

mod resident;

const ROUNDS: usize = 5;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Resident set of this process, in MiB.
fn rss_mib() -> f64 {
    resident::rss_bytes() as f64 / (1024.0 * 1024.0)
}

/// Mean reconcile time of `plugin` so far, in ms, from the exported histogram.
fn mean_reconcile_ms(host: &Manager) -> (f64, f64) {
    let text = host.metrics().encode();
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("plugin=\"blog\""))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (
        value("weir_reconcile_duration_seconds_sum"),
        value("weir_reconcile_duration_seconds_count"),
    )
}

async fn until(what: &str, mut ok: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ok().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Touches every Blog and returns the ms until all of them were reconciled, and the mean
/// reconcile time of those reconciles.
async fn round(
    host: &Manager,
    parents: &Api<DynamicObject>,
    blogs: usize,
    n: usize,
) -> (u128, f64) {
    let (sum0, count0) = mean_reconcile_ms(host);
    let before = host.metrics().reconciles_total();
    let started = Instant::now();
    for i in 0..blogs {
        let patch = json!({"metadata": {"annotations": {"bench/round": n.to_string()}}});
        parents
            .patch(
                &format!("blog-{i}"),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .unwrap();
    }
    until("every Blog is reconciled", async || {
        host.metrics().reconciles_total() >= before + blogs as u64
    })
    .await;
    let took = started.elapsed().as_millis();
    let (sum, count) = mean_reconcile_ms(host);
    (took, (sum - sum0) * 1000.0 / (count - count0).max(1.0))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let blogs: usize = std::env::var("WEIR_BENCH_BLOGS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let emulator = Emulator::start(EmulatorConfig {
        workloads: Some(WorkloadSimulation {
            ready_after: Duration::from_millis(100),
        }),
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
    let load = |file: &str| -> Plugin {
        engine
            .load_file(&root().join("target/plugins").join(file), Limits::default())
            .unwrap()
    };
    let blog = load("blog.wasm");
    install_crd(&client, blog.info()).await.unwrap();
    let config = ManagerConfig {
        rollout: RolloutConfig {
            shadow_reconciles: u64::MAX,
            ..RolloutConfig::default()
        },
        ..ManagerConfig::default()
    };
    let serving = PathBuf::from(blog.label());
    let host = Manager::start(
        client.clone(),
        PluginSource::Fixed(vec![blog.clone()]),
        config,
    )
    .await
    .unwrap();
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
    until("every Blog is ready", async || {
        parents.list(&ListParams::default()).await.is_ok_and(|l| {
            l.items.len() == blogs
                && l.items.iter().all(|b| {
                    b.data["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                })
        })
    })
    .await;

    println!("{blogs} converged Blogs, each touched once per round; ms");
    println!(
        "{:<16} {:>6} {:>14} {:>16} {:>9}",
        "how", "round", "all reconciled", "mean reconcile", "RSS MiB"
    );
    let mut without = (Vec::new(), Vec::new());
    for n in 0..ROUNDS {
        let (took, mean) = round(&host, &parents, blogs, n).await;
        println!(
            "{:<16} {n:>6} {took:>14} {mean:>16.3} {:>9.1}",
            "serving only",
            rss_mib()
        );
        without.0.push(took as f64);
        without.1.push(mean);
    }
    let rss_before = rss_mib();
    host.propose_candidate(&serving, load("blog-v2.wasm"))
        .await
        .unwrap();
    until("the candidate compared every Blog once", async || {
        host.rollouts()
            .values()
            .next()
            .is_some_and(|r| r.compared >= blogs as u64)
    })
    .await;
    let mut with = (Vec::new(), Vec::new());
    for n in 0..ROUNDS {
        let (took, mean) = round(&host, &parents, blogs, ROUNDS + n).await;
        println!(
            "{:<16} {n:>6} {took:>14} {mean:>16.3} {:>9.1}",
            "with a shadow",
            rss_mib()
        );
        with.0.push(took as f64);
        with.1.push(mean);
    }
    let rss_after = rss_mib();
    let status = host.rollouts().into_values().next().unwrap();
    let (w0, w1) = (median(without.0), median(with.0));
    let (m0, m1) = (median(without.1), median(with.1));
    println!(
        "median all reconciled: {w0:.0} ms without, {w1:.0} ms with a shadow, ratio {:.2}",
        w1 / w0.max(1.0)
    );
    println!(
        "median mean reconcile: {m0:.3} ms without, {m1:.3} ms with a shadow, ratio {:.2}",
        m1 / m0.max(f64::EPSILON)
    );
    println!(
        "resident set: {rss_before:.1} MiB before the candidate, {rss_after:.1} MiB after {} compared reconciles (+{:.1} MiB)",
        status.compared,
        rss_after - rss_before
    );
    host.shutdown().await;
    emulator.shutdown().await;
}
