//! `weir-bench delivery`: Plugins delivered from a registry, measured in this process (the host
//! library, as `weir run --plugins-from-cluster` runs it, on the embedded emulator).
//!
//! - **cold**: pull from a loopback registry (Debian's `docker-registry`) into an empty
//!   component store, then compile with an empty precompiled cache (`fetch` + `load_verified`);
//! - **cached**: the same component from the store and its precompiled artifact (a restart);
//! - **swap**: from applying a Plugin with a new digest to the last of N Blogs whose children
//!   carry v2's label (`blog-v2.wasm`, the hot-swap build).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, CustomResourceExt, ResourceExt};
use serde_json::json;
use weir::cluster::fetch::fetch;
use weir::cluster::oci::parse_reference;
use weir::cluster::{Blobs, Credentials, PluginResource, Registry};
use weir::plugin::{Engine, EngineConfig, Limits};
use weir_e2e::host::RunSource;
use weir_e2e::{TestEnv, built, eventually, kinds, plugin, wait_ready};
use weir_test_support::registry::LocalRegistry;

/// Arguments of `weir-bench delivery`.
#[derive(Debug, clap::Args)]
pub struct DeliveryArgs {
    /// Blogs whose children must all show the new version.
    #[arg(long, default_value_t = 100)]
    blogs: usize,
    /// Repetitions of the cached load (the median is printed).
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn engine(cache: &std::path::Path) -> Result<Engine> {
    Ok(Engine::new(EngineConfig {
        cache_dir: Some(cache.to_owned()),
        ..EngineConfig::default()
    })?)
}

async fn push(registry: &LocalRegistry, file: &str, tag: &str) -> Result<(String, String)> {
    let reference = registry.reference("weir/bench", tag);
    let parsed = parse_reference(&reference)?;
    let bytes = std::fs::read(built(file)).with_context(|| format!("{file}: plugins/build.sh"))?;
    let digest = Registry::new(&parsed, &Credentials::Anonymous)
        .push(&bytes, &parsed)
        .await?;
    Ok((reference, digest))
}

/// Runs the measurements and prints a table.
pub async fn run(args: DeliveryArgs) -> Result<()> {
    let registry = LocalRegistry::start()?;
    println!(
        "| component | size | cold pull | cold compile | cached load (median of {}) |",
        args.repeat
    );
    println!("|---|---|---|---|---|");
    for (file, tag) in [
        ("blog.wasm", "rust"),
        ("blog-py.wasm", "python"),
        ("blog-js.wasm", "js"),
    ] {
        let (reference, digest) = push(&registry, file, tag).await?;
        let store = tempfile::tempdir()?;
        let cache = tempfile::tempdir()?;
        let blobs = Blobs::open(store.path())?;
        let started = Instant::now();
        let fetched = fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous).await?;
        let pulled = started.elapsed();
        let cold = engine(cache.path())?;
        let started = Instant::now();
        cold.load_verified(
            &fetched.component.path,
            &fetched.component.sha256,
            Limits::default(),
        )?;
        let compiled = started.elapsed();
        drop(cold);
        let mut cached = Vec::new();
        for _ in 0..args.repeat.max(1) {
            let warm = engine(cache.path())?;
            let started = Instant::now();
            let again = fetch(&blobs, &reference, Some(&digest), &Credentials::Anonymous).await?;
            warm.load_verified(
                &again.component.path,
                &again.component.sha256,
                Limits::default(),
            )?;
            cached.push(started.elapsed());
        }
        cached.sort();
        let size = std::fs::metadata(&fetched.component.path)?.len();
        println!(
            "| {file} | {:.1} MB | {} | {} | {} |",
            size as f64 / 1e6,
            ms(pulled),
            ms(compiled),
            ms(cached[cached.len() / 2])
        );
    }
    swap(&registry, args.blogs).await
}

/// From applying a new digest to the last of `blogs` Blogs updated.
async fn swap(registry: &LocalRegistry, blogs: usize) -> Result<()> {
    let (v1_ref, v1) = push(registry, "blog.wasm", "v1").await?;
    let (v2_ref, v2) = push(registry, "blog-v2.wasm", "v2").await?;
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let crd = PluginResource::crd();
    Api::<CustomResourceDefinition>::all(env.client.clone())
        .patch(
            &crd.name_any(),
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&crd),
        )
        .await?;
    let plugins = Api::<PluginResource>::all(env.client.clone());
    eventually("Plugins are served", Duration::from_secs(20), || async {
        plugins.list(&Default::default()).await.ok()
    })
    .await?;
    let store = tempfile::tempdir()?;
    let cache = tempfile::tempdir()?;
    let host = env
        .in_process(RunSource::Cluster(store.path().into()))
        .engine(engine(cache.path())?)
        .start()
        .await?;
    let apply = |reference: String, digest: String| {
        let plugins = plugins.clone();
        async move {
            let object = json!({"apiVersion": "weir.dev/v1alpha1", "kind": "Plugin",
                "metadata": {"name": "blog"}, "spec": {"source": {"oci": reference}, "digest": digest}});
            plugins
                .patch(
                    "blog",
                    &PatchParams::apply("bench").force(),
                    &Patch::Apply(&object),
                )
                .await
        }
    };
    apply(v1_ref, v1).await?;
    for i in 0..blogs {
        env.create(
            &kinds::blog(),
            &format!("blog-{i}"),
            json!({"title": format!("Blog {i}"), "replicas": 1}),
        )
        .await?;
    }
    let api = env.api(&kinds::blog());
    for i in 0..blogs {
        wait_ready(&api, &format!("blog-{i}")).await?;
    }
    let started = Instant::now();
    apply(v2_ref, v2).await?;
    let lp = ListParams::default().labels("weir.dev/hot-swapped=v2");
    let configmaps = env.api(&kinds::config_map());
    eventually("every Blog shows v2", Duration::from_secs(120), || async {
        let n = configmaps.list(&lp).await.map_or(0, |l| l.items.len());
        (n >= blogs).then_some(())
    })
    .await?;
    println!(
        "\nswap: applying the v2 digest to the last of {blogs} Blogs' page ConfigMaps relabelled: {} (polled every 20 ms)",
        ms(started.elapsed())
    );
    host.shutdown().await;
    Ok(())
}
