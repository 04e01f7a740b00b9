//! Emulator benchmark: listing 10,000 objects, 100 watchers × 1,000 updates, memory per object.
//!
//! Run with `cargo bench -p weir-emulator`; prints one table. Figures are from one run, so the
//! ratios between rows are meaningful on a shared machine even when absolute numbers drift.

mod common;

use std::time::{Duration, Instant};

use self::common::rss_bytes;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use weir_emulator::{Emulator, EmulatorConfig};

const OBJECTS: usize = 10_000;
const WATCHERS: usize = 100;
const UPDATES: usize = 1_000;

fn configmap(i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": format!("cm-{i:05}"), "labels": {"app": "bench", "shard": (i % 10).to_string()}},
        "data": {"key": format!("value-{i}"), "config.yaml": "replicas: 3\nimage: nginx:1.27\n"}
    }))
    .expect("valid ConfigMap")
}

async fn time<F, Fut, T>(iterations: u32, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let start = Instant::now();
    for _ in 0..iterations {
        f().await;
    }
    start.elapsed() / iterations
}

/// Start `WATCHERS` watches on shard 0, patch `UPDATES` shard-0 objects, wait for every delivery.
async fn watch_round(
    em: &Emulator,
    api: &Api<ConfigMap>,
    raw: bool,
) -> anyhow::Result<(Duration, Duration, usize)> {
    let rv = api
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        if raw {
            let url = format!(
                "/api/v1/namespaces/default/configmaps?watch=true&labelSelector=shard%3D0&resourceVersion={rv}"
            );
            let req = http::Request::get(url).body(Vec::new())?;
            let body = em.client().request_stream(req).await?;
            watchers.push(tokio::spawn(async move {
                let mut lines = Box::pin(body).lines();
                let mut seen = 0;
                while seen < UPDATES {
                    match lines.next().await {
                        // Keys are sorted, so the event type closes the line.
                        Some(Ok(l)) if l.ends_with(r#""type":"MODIFIED"}"#) => seen += 1,
                        Some(Ok(_)) => {}
                        _ => break,
                    }
                }
                (seen, Instant::now())
            }));
        } else {
            let s = api
                .watch(
                    &WatchParams::default().labels("shard=0").disable_bookmarks(),
                    &rv,
                )
                .await?;
            watchers.push(tokio::spawn(async move {
                let mut s = s.boxed();
                let mut seen = 0;
                while seen < UPDATES {
                    match s.try_next().await {
                        Ok(Some(WatchEvent::Modified(_))) => seen += 1,
                        Ok(Some(_)) => {}
                        _ => break,
                    }
                }
                (seen, Instant::now())
            }));
        }
    }
    let started = Instant::now();
    for i in 0..UPDATES {
        let name = format!("cm-{:05}", (i * 10) % OBJECTS);
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"n": format!("{raw}-{i}")}})),
        )
        .await?;
    }
    let writes = started.elapsed();
    let mut last = started;
    let mut delivered = 0;
    for w in watchers {
        let (seen, at) = tokio::time::timeout(Duration::from_secs(300), w).await??;
        delivered += seen;
        last = last.max(at);
    }
    Ok((writes, last.duration_since(started), delivered))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let em = Emulator::start(EmulatorConfig {
        watch_history: 20_000,
        ..EmulatorConfig::default()
    })
    .await?;
    let api: Api<ConfigMap> = Api::default_namespaced(em.client());

    // Memory per stored object: RSS growth while creating them (the history shares the objects).
    let before = rss_bytes();
    let started = Instant::now();
    stream::iter(0..OBJECTS)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &configmap(i)).await }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let create_time = started.elapsed();
    let per_object = (rss_bytes().saturating_sub(before)) as f64 / OBJECTS as f64;
    let json_size = serde_json::to_vec(&api.get("cm-00000").await?)?.len();
    rows.push((
        "create 10,000 ConfigMaps (16 in flight)".into(),
        format!(
            "{:.2} s ({:.0} creates/s)",
            create_time.as_secs_f64(),
            OBJECTS as f64 / create_time.as_secs_f64()
        ),
    ));
    rows.push((
        "memory per stored object (RSS growth)".into(),
        format!(
            "{per_object:.0} B (object JSON is {json_size} B, ratio {:.1}x)",
            per_object / json_size as f64
        ),
    ));

    // Listing.
    let full = time(5, || async {
        api.list(&ListParams::default())
            .await
            .map(|l| assert_eq!(l.items.len(), OBJECTS))
    })
    .await;
    rows.push((
        "list 10,000 objects, one request".into(),
        format!("{:.1} ms", full.as_secs_f64() * 1e3),
    ));
    let paged = time(5, || async {
        let mut lp = ListParams::default().limit(500);
        let mut n = 0;
        loop {
            let page = api.list(&lp).await.expect("page");
            n += page.items.len();
            match page.metadata.continue_ {
                Some(c) if !c.is_empty() => {
                    lp = ListParams::default().limit(500).continue_token(&c)
                }
                _ => break,
            }
        }
        assert_eq!(n, OBJECTS);
    })
    .await;
    rows.push((
        "list 10,000 objects, pages of 500 (kube default)".into(),
        format!(
            "{:.1} ms ({:.2}x one request)",
            paged.as_secs_f64() * 1e3,
            paged.as_secs_f64() / full.as_secs_f64()
        ),
    ));
    let selected = time(5, || async {
        api.list(&ListParams::default().labels("shard=3"))
            .await
            .map(|l| assert_eq!(l.items.len(), OBJECTS / 10))
    })
    .await;
    rows.push((
        "list with labelSelector (1,000 of 10,000 match)".into(),
        format!("{:.1} ms", selected.as_secs_f64() * 1e3),
    ));

    // 100 watchers, 1,000 updates each: once reading raw lines (the server's cost), once through
    // kube's typed watch (what a controller pays).
    for raw in [true, false] {
        let (writes, total, delivered) = watch_round(&em, &api, raw).await?;
        let how = if raw { "raw lines" } else { "kube typed" };
        rows.push((
            format!("1,000 patches while 100 {how} watchers listen"),
            format!(
                "{:.2} s ({:.0} patches/s)",
                writes.as_secs_f64(),
                UPDATES as f64 / writes.as_secs_f64()
            ),
        ));
        rows.push((
            format!("100 watchers x 1,000 updates, all delivered ({how})"),
            format!(
                "{:.2} s, {delivered} events ({:.0} events/s)",
                total.as_secs_f64(),
                delivered as f64 / total.as_secs_f64()
            ),
        ));
    }
    em.shutdown().await;

    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    println!(
        "\nweir-emulator benchmark ({OBJECTS} objects, {WATCHERS} watchers, {UPDATES} updates)"
    );
    println!("{:-<1$}", "", width + 50);
    for (k, v) in rows {
        println!("{k:<width$}  {v}");
    }
    Ok(())
}
