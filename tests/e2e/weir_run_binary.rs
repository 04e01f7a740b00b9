//! The `weir run --plugins DIR --kubeconfig PATH` binary reconciles a Blog, shows where its
//! memory goes on `/metrics`, and stops cleanly on SIGTERM.

use std::time::Duration;

use serde_json::json;
use weir_e2e::weir_run::{WeirRun, ops_get as get, sample};
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn weir_run_reconciles_a_blog_and_exits_on_sigterm() -> anyhow::Result<()> {
    let weir = WeirRun::debug_binary()?;
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        anyhow::bail!("this scenario starts the binary against the emulator; unset KUBECONFIG");
    };
    env.install_crd(&plugin("blog")?).await?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    emulator.write_kubeconfig(&kubeconfig)?;
    // A port free now, for the ops server (`/metrics`).
    let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let mut run = WeirRun::start_with(
        &weir,
        dir.path(),
        &kubeconfig,
        (None, 5),
        &ops.to_string(),
        &[],
    )?;

    env.create(
        &kinds::blog(),
        "cli-blog",
        json!({"title": "From the CLI", "replicas": 2}),
    )
    .await?;
    let ready = wait_ready(&env.api(&kinds::blog()), "cli-blog").await;
    let metrics = if ready.is_ok() {
        Some(get(ops, "/metrics").await)
    } else {
        None
    };
    // A clean stop on SIGTERM within 5 s, or an error saying how it ended.
    let stopped = run.terminate(Duration::from_secs(5)).await;
    ready?;
    if let Some(metrics) = metrics {
        memory_gauges_are_shown(&metrics?);
    }
    stopped
}

/// One Blog with its ConfigMap, Deployment and Service: the cache shows each kind's objects
/// and bytes, the owner index its children, the queue its length, and the plugin its compiled
/// code and instance pool.
fn memory_gauges_are_shown(text: &str) {
    let kind = |group: &str, kind: &str| format!(r#"{{group="{group}",kind="{kind}"}}"#);
    assert_eq!(
        sample(
            text,
            &format!("weir_cached_objects{}", kind("weir.dev", "Blog"))
        ),
        Some(1.0),
        "{text}"
    );
    for (group, k) in [("", "ConfigMap"), ("apps", "Deployment"), ("", "Service")] {
        let objects = sample(text, &format!("weir_cached_objects{}", kind(group, k)));
        assert!(objects.is_some_and(|n| n >= 1.0), "{k} objects: {text}");
        let bytes = sample(text, &format!("weir_cached_bytes{}", kind(group, k)));
        assert!(bytes.is_some_and(|b| b > 200.0), "{k} bytes: {text}");
    }
    let owner = format!(r#"weir_index_entries{{group="",kind="ConfigMap",index="owner"}}"#);
    assert!(sample(text, &owner).is_some_and(|n| n >= 1.0), "{text}");
    assert!(
        sample(text, r#"weir_queue_depth{plugin="blog"}"#).is_some(),
        "the work queue's length: {text}"
    );
    let code = sample(text, r#"weir_plugin_code_bytes{plugin="blog"}"#);
    assert!(
        code.is_some_and(|bytes| bytes > 10_000.0),
        "the Blog plugin's compiled code is counted: {code:?}"
    );
    assert!(
        sample(text, "weir_plugin_pool_resident_bytes").is_some(),
        "the instance pool's resident bytes are shown:\n{text}"
    );
}
