//! The Blog's related objects through the host on the emulator: a theme ConfigMap named in
//! `spec.theme` (missing → `ThemeNotFound`; created → Ready with the CSS in the page, with no
//! requeue timer; edited → page and Deployment rolled), posts selected by label (added →
//! listed), an unrelated ConfigMap edited 100 times (no reconcile at all), and 1,000 Blogs each
//! with its own theme (editing one enqueues exactly one Blog). Counts come from the host's
//! `/metrics` text.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use weir_e2e::{CONVERGE, TestEnv, condition, eventually, kinds, plugin, quiet, wait_ready};

/// The sum of the `/metrics` samples of `metric` for the Blog plugin.
fn metric(host: &weir::Manager, metric: &str) -> u64 {
    let prefix = format!("{metric}{{");
    host.metrics()
        .encode()
        .lines()
        .filter(|l| l.starts_with(&prefix) && l.contains("plugin=\"blog\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

fn reconciles(host: &weir::Manager) -> u64 {
    metric(host, "weir_reconciles_total")
}

fn related_enqueues(host: &weir::Manager) -> u64 {
    metric(host, "weir_related_enqueues_total")
}

async fn put_config_map(env: &TestEnv, name: &str, labels: Value, data: Value) -> Result<()> {
    let api = env.api(&kinds::config_map());
    if api.get_opt(name).await?.is_some() {
        let patch = json!({"metadata": {"labels": labels}, "data": data});
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
    } else {
        let cm: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": env.namespace, "labels": labels},
            "data": data,
        }))?;
        api.create(&PostParams::default(), &cm).await?;
    }
    Ok(())
}

/// The page a Blog serves once it contains `needle`.
async fn page_with(env: &TestEnv, blog: &str, needle: &str) -> Result<String> {
    let api = env.api(&kinds::config_map());
    let name = format!("{blog}-page");
    eventually(&format!("{name} contains {needle:?}"), CONVERGE, || async {
        let cm = api.get_opt(&name).await.ok()??;
        let page = cm.data["data"]["index.html"].as_str()?.to_owned();
        page.contains(needle).then_some(page)
    })
    .await
}

/// The Deployment's page hash once it is the hash of `page`.
async fn rolled_to(env: &TestEnv, blog: &str, page: &str) -> Result<String> {
    let want = weir_plugin_blog::page_hash(page);
    let api = env.api(&kinds::deployment());
    eventually(&format!("{blog} rolls to {want}"), CONVERGE, || async {
        let d = api.get_opt(blog).await.ok()??;
        let annotations = &d.data["spec"]["template"]["metadata"]["annotations"];
        (annotations[weir_plugin_blog::PAGE_HASH_ANNOTATION] == want.as_str()).then_some(())
    })
    .await?;
    Ok(want)
}

#[tokio::test]
async fn a_blog_follows_its_theme_and_posts_and_ignores_other_config_maps() -> Result<()> {
    let env = TestEnv::start().await?;
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let host = env.host(&[blog]).await?;
    let blogs = env.api(&kinds::blog());

    // Theme missing: not Ready, named, and then nothing runs until something changes.
    let spec = json!({"title": "Themed", "replicas": 1, "theme": "b-theme",
                      "postsSelector": {"matchLabels": {"blog": "b"}}});
    env.create(&kinds::blog(), "b", spec).await?;
    let missing = eventually("b reports its theme missing", CONVERGE, || async {
        let b = blogs.get("b").await.ok()?;
        let ready = condition(&b, "Ready")?;
        (ready["reason"] == "ThemeNotFound").then_some(ready)
    })
    .await?;
    assert_eq!(
        missing["message"], "theme ConfigMap b-theme does not exist",
        "{missing}"
    );
    quiet(&host, Duration::from_millis(400)).await?;
    let settled = reconciles(&host);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        reconciles(&host),
        settled,
        "no requeue timer while the theme is missing"
    );

    // Created: the related index wakes the Blog; Ready, with the CSS in the page.
    put_config_map(
        &env,
        "b-theme",
        json!({}),
        json!({"style.css": "h1{color:red}"}),
    )
    .await?;
    wait_ready(&blogs, "b").await?;
    let page = page_with(&env, "b", "<style>h1{color:red}</style>").await?;
    let first = rolled_to(&env, "b", &page).await?;

    // Edited: a new page, and the Deployment's pod template rolls onto it.
    put_config_map(
        &env,
        "b-theme",
        json!({}),
        json!({"style.css": "h1{color:blue}"}),
    )
    .await?;
    let page = page_with(&env, "b", "<style>h1{color:blue}</style>").await?;
    let second = rolled_to(&env, "b", &page).await?;
    assert_ne!(first, second, "the page hash rolls the Deployment");

    // An unrelated ConfigMap edited 100 times: no Blog is enqueued or reconciled.
    quiet(&host, Duration::from_millis(400)).await?;
    let before = (reconciles(&host), related_enqueues(&host));
    for i in 0..100 {
        put_config_map(
            &env,
            "noise",
            json!({"blog": "other"}),
            json!({"n": i.to_string()}),
        )
        .await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        (reconciles(&host), related_enqueues(&host)),
        before,
        "an unrelated ConfigMap reconciles no Blog"
    );

    // A post added under the selector is listed.
    put_config_map(
        &env,
        "post-1",
        json!({"blog": "b"}),
        json!({"title": "First post", "body": "Hi & bye"}),
    )
    .await?;
    let page = page_with(
        &env,
        "b",
        "<article><h2>First post</h2><p>Hi &amp; bye</p></article>",
    )
    .await?;
    rolled_to(&env, "b", &page).await?;
    host.shutdown().await;
    Ok(())
}

/// Blogs in the fan-out scenario (each with its own theme).
const BLOGS: usize = 1000;

#[tokio::test]
async fn with_a_thousand_themed_blogs_editing_one_theme_enqueues_exactly_one_blog() -> Result<()> {
    let env = TestEnv::start().await?;
    let host = env.serve("blog").await?;
    let started = Instant::now();
    futures::stream::iter(0..BLOGS)
        .map(|i| {
            let env = &env;
            async move {
                let css = json!({"style.css": format!("h1{{order:{i}}}")});
                put_config_map(env, &format!("t-{i}"), json!({}), css).await?;
                let spec =
                    json!({"title": format!("Blog {i}"), "replicas": 0, "theme": format!("t-{i}")});
                env.create(&kinds::blog(), &format!("b-{i}"), spec).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    eprintln!(
        "{BLOGS} themes and Blogs created in {:?}",
        started.elapsed()
    );
    let blogs = env.api(&kinds::blog());
    // 1,000 first reconciles (four writes each) in a debug build, beside the other e2e tests on
    // two cores: 60-90 s on a quiet CI machine, twice that when other builds run.
    eventually("every Blog is Ready", Duration::from_secs(300), || async {
        let list = blogs.list(&ListParams::default()).await.ok()?;
        let ready = list
            .items
            .iter()
            .filter(|b| condition(b, "Ready").is_some_and(|c| c["status"] == "True"))
            .count();
        (ready == BLOGS).then_some(())
    })
    .await
    .context("1,000 Blogs converging")?;
    quiet(&host, Duration::from_millis(500)).await?;
    eprintln!("{BLOGS} themed Blogs converged in {:?}", started.elapsed());

    let before = (reconciles(&host), related_enqueues(&host));
    put_config_map(
        &env,
        "t-500",
        json!({}),
        json!({"style.css": "h1{order:edited}"}),
    )
    .await?;
    page_with(&env, "b-500", "h1{order:edited}").await?;
    quiet(&host, Duration::from_millis(500)).await?;
    let after = (reconciles(&host), related_enqueues(&host));
    assert_eq!(after.1 - before.1, 1, "one theme edit enqueues one Blog");
    // That Blog's reconcile, and those its own writes (page, Deployment) echo back: its key only.
    let reconciled = after.0 - before.0;
    assert!(
        (1..=4).contains(&reconciled),
        "one theme edit cost {reconciled} reconciles"
    );
    host.shutdown().await;
    Ok(())
}
