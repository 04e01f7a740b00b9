//! The host following Plugin objects (`weir run --plugins-from-cluster`): a pushed Blog served,
//! swapped to v2 by a new digest, refused updates that leave v2 serving, a second Plugin for
//! the kind held back until the first is deleted, deletion that leaves children; a Python Blog
//! behind basic auth, and a restart that serves it from the local store without a download; a
//! moved tag refused alike by a host with the old content stored and by a fresh one, and a store
//! removed under a running host that heals; a Plugin whose ConfigMap comes later, served by a
//! retry on its backoff.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use weir::cluster::{Credentials, PluginResource, PluginStatus, Registry, oci::parse_reference};
use weir::manager::Manager;
use weir_e2e::host::RunSource;
use weir_e2e::{CONVERGE, TestEnv, built, eventually, kinds, own_engine, plugin, wait_ready};
use weir_test_support::registry::{LocalRegistry, docker_config};

use super::weir_push;

/// Installs the Plugin CRD (as `deploy/crd/plugin.yaml` does) and waits until it is served.
pub(crate) async fn install_plugin_crd(env: &TestEnv) -> Result<Api<PluginResource>> {
    weir_e2e::tenants::install_plugin_crd(&env.client).await
}

/// The host `weir run --plugins-from-cluster` starts, storing components in `store`.
pub(crate) async fn host_from_cluster(env: &TestEnv, store: &Path) -> Result<Manager> {
    env.in_process(RunSource::Cluster(store.into()))
        .engine(own_engine()?)
        .start()
        .await
}

/// `kubectl apply` of a Plugin.
pub(crate) async fn apply(plugins: &Api<PluginResource>, name: &str, spec: Value) -> Result<()> {
    let object = json!({
        "apiVersion": "weir.dev/v1alpha1", "kind": "Plugin",
        "metadata": {"name": name}, "spec": spec,
    });
    plugins
        .patch(
            name,
            &PatchParams::apply("e2e-user").force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("applying Plugin {name}"))?;
    Ok(())
}

/// `(status, reason)` of a Plugin's condition.
pub(crate) fn condition(status: &PluginStatus, type_: &str) -> (String, String) {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
        .unwrap_or_default()
}

/// Waits until the Plugin's status satisfies `ok`, and returns it.
pub(crate) async fn status_until(
    plugins: &Api<PluginResource>,
    name: &str,
    what: &str,
    ok: impl Fn(&PluginStatus) -> bool,
) -> Result<PluginStatus> {
    eventually(what, CONVERGE, || async {
        let status = plugins.get(name).await.ok()?.status?;
        ok(&status).then_some(status)
    })
    .await
}

/// The `weir.dev/hot-swapped` label of Blog `blog`'s page ConfigMap.
pub(crate) async fn page_label(env: &TestEnv, blog: &str) -> Option<String> {
    let page = env
        .api(&kinds::config_map())
        .get(&format!("{blog}-page"))
        .await
        .ok()?;
    page.labels().get("weir.dev/hot-swapped").cloned()
}

pub(crate) fn loaded_digest(digest: &str) -> impl Fn(&PluginStatus) -> bool + '_ {
    move |s| condition(s, "Loaded").0 == "True" && s.digest.as_deref() == Some(digest)
}

#[tokio::test]
async fn a_plugin_applied_in_the_cluster_is_served_swapped_by_digest_refused_and_unloaded()
-> Result<()> {
    let registry = LocalRegistry::start()?;
    let v1_ref = registry.reference("weir/blog", "1.0");
    let v2_ref = registry.reference("weir/blog", "2.0");
    let v1 = weir_push("blog.wasm", &v1_ref);
    let v2 = weir_push("blog-v2.wasm", &v2_ref);
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let store = tempfile::tempdir()?;
    let host = host_from_cluster(&env, store.path()).await?;

    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": v1_ref}, "digest": v1}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "v1 is loaded", loaded_digest(&v1)).await?;
    assert_eq!(
        condition(&status, "Ready"),
        ("True".into(), "Serving".into())
    );
    assert_eq!(status.kind.as_deref(), Some("Blog.weir.dev"));
    assert_eq!(status.plugin.as_deref(), Some("blog"));
    assert_eq!(status.short_digest.as_deref(), Some(&v1[7..19]));
    let blogs = env.api(&kinds::blog());
    env.create(&kinds::blog(), "a", json!({"title": "A", "replicas": 1}))
        .await?;
    wait_ready(&blogs, "a").await?;
    assert_eq!(page_label(&env, "a").await, None);

    // A new digest: hot swap, and every child follows without a restart.
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": v2_ref}, "digest": v2}),
    )
    .await?;
    status_until(&plugins, "blog", "v2 is loaded", loaded_digest(&v2)).await?;
    eventually("a's children show v2", CONVERGE, || async {
        (page_label(&env, "a").await.as_deref() == Some("v2")).then_some(())
    })
    .await?;

    // A pin the tag does not name (and not on disk either): refused, v2 keeps serving.
    let nothing = format!("sha256:{}", "0".repeat(64));
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": v2_ref}, "digest": nothing}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "the wrong digest is refused", |s| {
        condition(s, "Loaded") == ("False".into(), "DigestMismatch".into())
    })
    .await?;
    assert_eq!(
        status.digest.as_deref(),
        Some(v2.as_str()),
        "v2 still serves"
    );
    assert_eq!(condition(&status, "Ready").0, "True");
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains(&nothing) && e.contains(&v2)),
        "{status:?}"
    );

    // A corrupt artifact: refused by the compiler, v2 keeps serving.
    let bad_ref = registry.reference("weir/blog", "broken");
    let parsed = parse_reference(&bad_ref)?;
    let bad = Registry::new(&parsed, &Credentials::Anonymous)
        .push(b"\0asm\x0d\0\x01\0 truncated", &parsed)
        .await?;
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": bad_ref}, "digest": bad}),
    )
    .await?;
    let status = status_until(&plugins, "blog", "the corrupt artifact is refused", |s| {
        condition(s, "Loaded") == ("False".into(), "CompileFailed".into())
    })
    .await?;
    assert_eq!(status.digest.as_deref(), Some(v2.as_str()));
    env.create(&kinds::blog(), "b", json!({"title": "B", "replicas": 1}))
        .await?;
    wait_ready(&blogs, "b").await?;
    assert_eq!(
        page_label(&env, "b").await.as_deref(),
        Some("v2"),
        "v2 still serves"
    );

    // A second Plugin for the kind: held back while the first serves, serving once it is gone.
    apply(
        &plugins,
        "blog-copy",
        json!({"source": {"oci": v1_ref}, "digest": v1}),
    )
    .await?;
    let status = status_until(&plugins, "blog-copy", "the second Plugin is refused", |s| {
        condition(s, "Loaded").1 == "KindConflict"
    })
    .await?;
    assert_eq!(condition(&status, "Ready").0, "False");
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("Plugin blog ")),
        "{status:?}"
    );
    plugins.delete("blog", &Default::default()).await?;
    status_until(
        &plugins,
        "blog-copy",
        "the second Plugin takes the kind",
        loaded_digest(&v1),
    )
    .await?;
    assert_eq!(host.catalog().rows().len(), 1);

    // Deleted: reconciling stops, the children stay.
    plugins.delete("blog-copy", &Default::default()).await?;
    eventually("the plugin is unloaded", CONVERGE, || async {
        host.catalog().is_empty().then_some(())
    })
    .await?;
    env.create(&kinds::blog(), "c", json!({"title": "C", "replicas": 1}))
        .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        env.api(&kinds::config_map())
            .get_opt("c-page")
            .await?
            .is_none(),
        "a Blog created after the delete was reconciled"
    );
    for child in ["a-page", "b-page"] {
        assert!(
            env.api(&kinds::config_map())
                .get_opt(child)
                .await?
                .is_some(),
            "{child} was deleted with the Plugin"
        );
    }
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_python_blog_comes_through_a_pull_secret_and_a_restart_serves_it_without_a_download()
-> Result<()> {
    let registry = LocalRegistry::start_with_basic_auth("weir", "s3cret")?;
    let reference = registry.reference("weir/blog-py", "1.0");
    let parsed = parse_reference(&reference)?;
    let credentials = Credentials::Basic {
        username: "weir".into(),
        password: "s3cret".into(),
    };
    let component = std::fs::read(built("blog-py.wasm")).context("run plugins/build.sh")?;
    // Compiled into the shared cache first, with no deadline running: this scenario times the
    // pull and the restart, not a cold compile of CPython (most of a minute on a loaded machine).
    plugin("blog-py")?;
    let digest = Registry::new(&parsed, &credentials)
        .push(&component, &parsed)
        .await?;
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": env.namespace},
        "stringData": {".dockerconfigjson": docker_config(&registry.addr, "weir", "s3cret")},
    });
    env.typed::<k8s_openapi::api::core::v1::Secret>()
        .create(&Default::default(), &serde_json::from_value(secret)?)
        .await?;
    let store = tempfile::tempdir()?;
    let host = host_from_cluster(&env, store.path()).await?;
    apply(
        &plugins,
        "blog",
        json!({
            "source": {"oci": reference}, "digest": digest,
            "pullSecret": {"namespace": env.namespace, "name": "regcred"},
        }),
    )
    .await?;
    let status = status_until(
        &plugins,
        "blog",
        "the Python Blog is loaded",
        loaded_digest(&digest),
    )
    .await?;
    assert_eq!(status.kind.as_deref(), Some("Blog.weir.dev"));
    let blogs = env.api(&kinds::blog());
    env.create(&kinds::blog(), "py", json!({"title": "Py", "replicas": 1}))
        .await?;
    wait_ready(&blogs, "py").await?;
    host.shutdown().await;

    // The restart: the component is on disk by its digest, so only the tag is asked about.
    let downloads = registry.downloads();
    assert!(downloads > 0, "the first start pulled");
    let host = host_from_cluster(&env, store.path()).await?;
    eventually("the restarted host serves the Blog", CONVERGE, || async {
        (host.catalog().len() == 1).then_some(())
    })
    .await?;
    env.create(
        &kinds::blog(),
        "after",
        json!({"title": "After", "replicas": 1}),
    )
    .await?;
    wait_ready(&blogs, "after").await?;
    assert_eq!(
        registry.downloads(),
        downloads,
        "the restart downloaded the component"
    );
    host.shutdown().await;
    Ok(())
}

/// `(Loaded, Ready, lastError)` of a Plugin as one host left it.
fn verdict(status: &PluginStatus) -> ((String, String), (String, String), Option<String>) {
    (
        condition(status, "Loaded"),
        condition(status, "Ready"),
        status.last_error.clone(),
    )
}

#[tokio::test]
async fn a_moved_tag_gets_the_same_condition_from_a_host_with_v1_stored_and_from_a_fresh_one()
-> Result<()> {
    let registry = LocalRegistry::start()?;
    let tag = registry.reference("weir/blog", "2.0");
    let v1 = weir_push("blog.wasm", &tag);
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let warm = tempfile::tempdir()?;
    let host = host_from_cluster(&env, warm.path()).await?;
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": tag}, "digest": v1}),
    )
    .await?;
    status_until(&plugins, "blog", "v1 is loaded", loaded_digest(&v1)).await?;
    host.shutdown().await;

    // The tag moves to other content; the Plugin still pins v1, which `warm` holds.
    let v2 = weir_push("blog-v2.wasm", &tag);
    let fresh = tempfile::tempdir()?;
    let mut verdicts = Vec::new();
    for store in [warm.path(), fresh.path()] {
        plugins
            .patch_status(
                "blog",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": null})),
            )
            .await?;
        let host = host_from_cluster(&env, store).await?;
        let status = status_until(&plugins, "blog", "the moved tag is refused", |s| {
            condition(s, "Loaded").0 == "False"
        })
        .await?;
        assert!(host.catalog().is_empty(), "{} serves v1", store.display());
        host.shutdown().await;
        verdicts.push(verdict(&status));
    }
    assert_eq!(
        verdicts[0], verdicts[1],
        "the host with v1 stored and the fresh one disagree"
    );
    assert_eq!(verdicts[0].0, ("False".into(), "DigestMismatch".into()));
    assert!(
        verdicts[0]
            .2
            .as_deref()
            .is_some_and(|e| e.contains(&v1) && e.contains(&v2)),
        "{verdicts:?}"
    );

    // The store removed under a running host: the next fetch creates it again.
    let host = host_from_cluster(&env, fresh.path()).await?;
    std::fs::remove_dir_all(fresh.path())?;
    apply(
        &plugins,
        "blog",
        json!({"source": {"oci": tag}, "digest": v2}),
    )
    .await?;
    status_until(
        &plugins,
        "blog",
        "v2 is loaded into a new store",
        loaded_digest(&v2),
    )
    .await?;
    assert_eq!(host.catalog().len(), 1);
    host.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_plugin_whose_config_map_comes_later_is_served_by_a_retry_on_its_backoff() -> Result<()> {
    let env = TestEnv::start().await?;
    env.install_crd(&plugin("blog")?).await?;
    let plugins = install_plugin_crd(&env).await?;
    let store = tempfile::tempdir()?;
    let host = host_from_cluster(&env, store.path()).await?;
    let (name, key) = ("blog-component", "blog.wasm");
    apply(
        &plugins,
        "blog",
        json!({"source": {"configMap": {"namespace": env.namespace, "name": name, "key": key}}}),
    )
    .await?;
    status_until(&plugins, "blog", "the missing ConfigMap is reported", |s| {
        condition(s, "Loaded").1 == "ConfigMapUnreadable"
    })
    .await?;

    // A transient refusal: tried again on the backoff (200 ms, doubling up to 1 s), neither
    // spun nor given up.
    let path = format!("/api/v1/namespaces/{}/configmaps/{name}", env.namespace);
    let reads = || {
        env.emulator.as_ref().map(|e| {
            e.requests()
                .iter()
                .filter(|r| r.method == "GET" && r.path == path)
                .count()
        })
    };
    let before = reads();
    tokio::time::sleep(Duration::from_secs(3)).await;
    if let (Some(before), Some(after)) = (before, reads()) {
        let tries = after - before;
        assert!(
            (2..=8).contains(&tries),
            "{tries} reads of the missing ConfigMap in 3 s"
        );
    }

    let component = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        binary_data: Some([(key.into(), ByteString(std::fs::read(built(key))?))].into()),
        ..ConfigMap::default()
    };
    env.typed::<ConfigMap>()
        .create(&Default::default(), &component)
        .await
        .context("creating the component's ConfigMap")?;
    status_until(&plugins, "blog", "served once its ConfigMap exists", |s| {
        condition(s, "Loaded").0 == "True"
    })
    .await?;
    assert_eq!(host.catalog().len(), 1);
    host.shutdown().await;
    Ok(())
}
