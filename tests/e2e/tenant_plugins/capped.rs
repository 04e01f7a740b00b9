//! A tenant that fills its namespace past its `maxCachedObjects`: the host caches no more of
//! it than the cap, holds back (and says so on the parent) the reconciles that would read what
//! it left out, prunes nothing, says on the tenant's TenantPlugin that it is at its cap, and
//! leaves the other tenant converging; once objects are deleted, everything it left out is
//! cached and converges by itself, and the TenantPlugin says the tenant is within its cap.

use kube::api::{DeleteParams, Patch, PatchParams};

use super::*;

/// Team B's cap: its component, two Blogs and their children (four objects each) fit; twenty
/// more ConfigMaps do not.
const CAP: usize = 14;
/// The ConfigMaps team B floods its namespace with.
const FILLERS: usize = 20;

/// The value of `/metrics` series `name` for tenant `ns`.
fn tenant_metric(host: &Manager, name: &str, ns: &str) -> Option<f64> {
    let text = host.metrics().encode();
    let prefix = format!("{name}{{tenant=\"{ns}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

/// The page ConfigMap of Blog `ns/name`, if there is one.
async fn page(client: &Client, ns: &str, name: &str) -> Result<Option<String>> {
    let page = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(&format!("{name}-page"))
        .await?;
    Ok(page.and_then(|p| p.data.and_then(|d| d.into_values().next())))
}

/// The reason and message of TenantPlugin `ns/blog`'s `CacheLimited` condition, once its
/// status is `is`.
async fn cache_limited(client: &Client, ns: &str, is: &str) -> Result<(String, String)> {
    let what = format!("TenantPlugin {ns}/blog says CacheLimited={is}");
    let status = status_until(client, (ns, "blog"), &what, |s| {
        condition(s, "CacheLimited").0 == is
    })
    .await?;
    let said = status
        .conditions
        .iter()
        .find(|c| c.type_ == "CacheLimited")
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default();
    println!("{ns}/blog: CacheLimited={is} {}: {}", said.0, said.1);
    Ok(said)
}

#[tokio::test]
async fn a_tenant_over_its_cache_cap_is_contained_and_recovers_once_objects_are_deleted()
-> Result<()> {
    let (a, b) = ("team-a", "team-b");
    let env = emulated_teams(false, &[a, b]).await?;
    let admin = env.client.clone();
    for ns in [a, b] {
        component(&admin, ns, "blog-component", "blog.wasm").await?;
        let from = ("blog-component", "blog.wasm");
        apply(&admin, ns, "blog", from, json!({})).await?;
    }
    let mut policy = Policy::default();
    tenants(&mut policy, &[a, b], &[("weir.dev", "Blog")]);
    if let Some(team_b) = policy.tenants.get_mut(b) {
        team_b.max_cached_objects = Some(CAP);
    }
    let store = tempfile::tempdir()?;
    let host = host(&env, store.path(), policy, false).await?;
    for ns in [a, b] {
        status_until(&admin, (ns, "blog"), "the tenant's plugin is loaded", |s| {
            condition(s, "Loaded").0 == "True"
        })
        .await?;
        create_blog(&admin, ns, "home").await?;
        wait_ready(&blogs_in(&admin, ns), "home").await?;
    }
    // Within its cap, team B's TenantPlugin says so; team A, with no cap, says nothing of one.
    let (reason, _) = cache_limited(&admin, b, "False").await?;
    assert_eq!(reason, "WithinCap");
    let tenant_plugins = Api::<TenantPluginResource>::namespaced(admin.clone(), a);
    let team_a = tenant_plugins.get("blog").await?.status.unwrap_or_default();
    assert_eq!(condition(&team_a, "CacheLimited"), Default::default());
    let cap = CAP as f64;
    assert_eq!(
        tenant_metric(&host, "weir_tenant_cache_limit", b),
        Some(cap)
    );
    assert_eq!(tenant_metric(&host, "weir_tenant_cache_limit", a), None);

    // Team B fills its namespace: the host caches no more than the cap of it.
    let config_maps = Api::<ConfigMap>::namespaced(admin.clone(), b);
    for i in 0..FILLERS {
        let filler: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("filler-{i}")}, "data": {"n": i.to_string()},
        }))?;
        config_maps.create(&PostParams::default(), &filler).await?;
    }
    let over = eventually("team B's cache reaches its cap", CONVERGE, || async {
        let refused = tenant_metric(&host, "weir_tenant_cache_refusals_total", b)?;
        (refused > 0.0).then_some(refused)
    })
    .await;
    let cached = || tenant_metric(&host, "weir_tenant_cached_objects", b).unwrap_or_default();
    let over = over.with_context(|| format!("team B caches {} objects", cached()))?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        cached() <= cap,
        "team B caches {} objects over its cap of {CAP}",
        cached()
    );
    println!(
        "team B: {} objects cached, {over} left out, cap {CAP}",
        cached()
    );
    // Its TenantPlugin says the tenant is at its cap: the cap, the count, the kind left out.
    let (reason, message) = cache_limited(&admin, b, "True").await?;
    assert_eq!(reason, "AtCap");
    for needle in [
        "tenant team-b",
        &format!("at most {CAP} objects (maxCachedObjects)"),
        &format!("holds {CAP}"),
        "ConfigMap",
    ] {
        assert!(message.contains(needle), "{needle:?} is not in {message:?}");
    }

    // Its Blog's next reconcile would read ConfigMaps the cache left out: it is held back, says
    // why, and nothing of the Blog is pruned or rewritten.
    let blogs_b = blogs_in(&admin, b);
    let title = json!({"spec": {"title": "home, retitled"}});
    blogs_b
        .patch("home", &PatchParams::default(), &Patch::Merge(&title))
        .await?;
    let message = eventually("team B's Blog is held back", CONVERGE, || async {
        let blog = blogs_b.get("home").await.ok()?;
        let c = weir_e2e::condition(&blog, "Reconciled")?;
        (c["reason"] == "CacheLimited")
            .then(|| c["message"].as_str().unwrap_or_default().to_owned())
    })
    .await?;
    for needle in [
        "tenant team-b",
        "maxCachedObjects",
        &format!("at most {CAP}"),
    ] {
        assert!(message.contains(needle), "{needle:?} is not in {message:?}");
    }
    println!("team B's Blog: Reconciled=False CacheLimited: {message}");
    let kept = page(&admin, b, "home")
        .await?
        .context("home's page was pruned")?;
    assert!(
        !kept.contains("retitled"),
        "held back, yet rewritten: {kept}"
    );
    let deployments = Api::<DynamicObject>::namespaced_with(
        admin.clone(),
        b,
        &kinds::deployment().api_resource(),
    );
    deployments
        .get("home")
        .await
        .context("home's Deployment was pruned")?;
    // A Blog created now is beyond the cap: not cached, not reconciled (yet).
    create_blog(&admin, b, "late").await?;

    // Team A is not held back: its next Blog converges within the flood budget.
    let started = Instant::now();
    create_blog(&admin, a, "beside").await?;
    wait_ready(&blogs_in(&admin, a), "beside").await?;
    let took = started.elapsed();
    println!("team A's Blog converged in {took:.2?} while team B was over its cap");
    assert!(took < FLOOD_BUDGET, "team A's Blog took {took:?}");
    assert!(
        page(&admin, b, "late").await?.is_none(),
        "late was reconciled"
    );

    // Team B deletes its fillers: what was left out is cached, and both Blogs converge.
    for i in 0..FILLERS {
        config_maps
            .delete(&format!("filler-{i}"), &DeleteParams::default())
            .await?;
    }
    let started = Instant::now();
    let recovered = eventually("team B's Blogs converge again", CONVERGE * 2, || async {
        let retitled = page(&admin, b, "home").await.ok()??.contains("retitled");
        let late = page(&admin, b, "late").await.ok()?.is_some();
        (retitled && late).then_some(())
    })
    .await;
    recovered.with_context(|| format!("team B caches {} objects", cached()))?;
    wait_ready(&blogs_b, "home").await?;
    wait_ready(&blogs_b, "late").await?;
    println!(
        "team B recovered in {:.2?}: {} objects cached",
        started.elapsed(),
        cached()
    );
    assert!(cached() <= cap, "team B caches {} objects", cached());
    // Whole again: its TenantPlugin says so, once, and the host writes it no more.
    let (reason, _) = cache_limited(&admin, b, "False").await?;
    assert_eq!(reason, "WithinCap");
    let plugins_b = Api::<TenantPluginResource>::namespaced(admin.clone(), b);
    let version = plugins_b.get("blog").await?.resource_version();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = plugins_b.get("blog").await?.resource_version();
    assert_eq!(later, version, "team B's TenantPlugin was written again");
    host.shutdown().await;
    Ok(())
}
