//! A registry outage: a Plugin pinned by tag and digest, its digest in the host's local store,
//! serves when the registry cannot be reached, on a restart as on a swap, with a `TagChecked`
//! condition saying the tag could not be checked and since when; once the registry answers that
//! the tag moved, it is refused as it would have been at once.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;
use weir::cluster::PluginStatus;
use weir_e2e::{CONVERGE, TestEnv, eventually, kinds, plugin, wait_ready};
use weir_test_support::registry::LocalRegistry;

use super::through_the_host::{
    apply, condition, host_from_cluster, install_plugin_crd, loaded_digest, page_label,
    status_until,
};
use super::weir_push;

/// A restarted host serves a stored digest within this long with the registry down (it asks
/// the registry once, is refused a connection at once on loopback, and maps the precompiled
/// component; a few seconds on two loaded cores).
const OUTAGE_START: Duration = Duration::from_secs(15);

/// Serving the pinned digest, with the tag unchecked.
fn served_unchecked(digest: &str) -> impl Fn(&PluginStatus) -> bool + '_ {
    move |s| {
        loaded_digest(digest)(s)
            && condition(s, "Ready").0 == "True"
            && condition(s, "TagChecked") == ("False".into(), "RegistryUnreachable".into())
    }
}

#[tokio::test]
async fn a_host_restarted_during_a_registry_outage_serves_its_stored_digest_until_the_tag_is_seen_moved()
-> Result<()> {
    let mut registry = LocalRegistry::start()?;
    let tag = registry.reference("weir/blog", "1.0");
    let v1 = weir_push("blog.wasm", &tag);
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let store = tempfile::tempdir()?;
    let host = host_from_cluster(&env, store.path()).await?;
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": tag}, "digest": v1}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "v1 is loaded", loaded_digest(&v1)).await?;
    assert_eq!(
        condition(&status, "TagChecked"),
        ("True".into(), "Checked".into())
    );
    host.shutdown().await;

    // The tag moves while no host looks, then the registry goes down; v1 is in the store.
    let v2 = weir_push("blog-v2.wasm", &tag);
    registry.stop();
    let restarted = Instant::now();
    let host = host_from_cluster(&env, store.path()).await?;
    let status = status_until(
        &plugins,
        "blog",
        "v1 serves from the store, its tag unchecked",
        served_unchecked(&v1),
    )
    .await?;
    let took = restarted.elapsed();
    assert!(
        took < OUTAGE_START,
        "the restarted host served after {took:?}"
    );
    assert_eq!(host.catalog().len(), 1);
    let tag_checked = status
        .conditions
        .iter()
        .find(|c| c.type_ == "TagChecked")
        .cloned()
        .unwrap_or_else(|| panic!("no TagChecked condition: {status:?}"));
    assert!(
        tag_checked.last_transition_time.is_some(),
        "{tag_checked:?}"
    );
    assert!(tag_checked.message.contains(&v1), "{}", tag_checked.message);
    let blogs = env.api(&kinds::blog());
    env.create(&kinds::blog(), "a", json!({"title": "A", "replicas": 1}))
        .await?;
    wait_ready(&blogs, "a").await?;

    // The registry answers again: the tag names v2, not the pin, so v1 is refused and unloaded,
    // exactly as a host that started with the registry up refuses it.
    registry.resume()?;
    let status = status_until(&plugins, "blog", "the moved tag is refused", |s| {
        condition(s, "Loaded") == ("False".into(), "DigestMismatch".into())
            && condition(s, "Ready").0 == "False"
    })
    .await?;
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains(&v1) && e.contains(&v2)),
        "{status:?}"
    );
    assert_eq!(status.digest, None, "{status:?}");
    assert!(
        status.conditions.iter().all(|c| c.type_ != "TagChecked"),
        "{status:?}"
    );
    eventually("v1 is unloaded", CONVERGE, || async {
        host.catalog().is_empty().then_some(())
    })
    .await?;
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_swap_during_a_registry_outage_serves_the_stored_digest_and_falls_back_when_the_tag_is_seen_moved()
-> Result<()> {
    let mut registry = LocalRegistry::start()?;
    let (tag1, tag2) = (
        registry.reference("weir/blog", "1.0"),
        registry.reference("weir/blog", "2.0"),
    );
    let v1 = weir_push("blog.wasm", &tag1);
    let v2 = weir_push("blog-v2.wasm", &tag2);
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let store = tempfile::tempdir()?;
    let host = host_from_cluster(&env, store.path()).await?;
    // Both versions served once, so both are in the store; v2 serves.
    for (tag, digest) in [(&tag1, &v1), (&tag2, &v2)] {
        apply(
            &plugins,
            "blog",
            json!({"source": {"oci": tag}, "digest": digest}),
        )
        .await?;
        status_until(&plugins, "blog", "loaded", loaded_digest(digest)).await?;
    }
    env.create(&kinds::blog(), "a", json!({"title": "A", "replicas": 1}))
        .await?;
    eventually("a's children show v2", CONVERGE, || async {
        (page_label(&env, "a").await.as_deref() == Some("v2")).then_some(())
    })
    .await?;

    // Tag 1.0 moves to v2's content, then the registry goes down; the Plugin goes back to v1.
    weir_push("blog-v2.wasm", &tag1);
    registry.stop();
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": tag1}, "digest": v1}),
    )
    .await?;
    status_until(
        &plugins,
        "blog",
        "v1 is swapped in from the store, its tag unchecked",
        served_unchecked(&v1),
    )
    .await?;
    eventually("a's children show v1", CONVERGE, || async {
        page_label(&env, "a").await.is_none().then_some(())
    })
    .await?;

    // The registry answers: tag 1.0 does not name v1, so v1 is refused and v2 serves again.
    registry.resume()?;
    let status = status_until(&plugins, "blog", "v1 is refused, v2 serves", |s| {
        condition(s, "Loaded") == ("False".into(), "DigestMismatch".into())
            && s.digest.as_deref() == Some(v2.as_str())
    })
    .await?;
    assert_eq!(condition(&status, "Ready").0, "True");
    assert_eq!(
        condition(&status, "TagChecked"),
        ("True".into(), "Checked".into())
    );
    eventually("a's children show v2 again", CONVERGE, || async {
        (page_label(&env, "a").await.as_deref() == Some("v2")).then_some(())
    })
    .await?;
    assert_eq!(host.catalog().len(), 1);
    host.shutdown().await;
    Ok(())
}
