//! The `weir run --plugins DIR --kubeconfig PATH` binary reconciles a Blog, shows where its
//! memory goes on `/metrics`, and stops cleanly on SIGTERM.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use weir_e2e::weir_run::{ops_get as get, sample};
use weir_e2e::{TestEnv, kinds, plugin, wait_ready};

#[tokio::test]
async fn weir_run_reconciles_a_blog_and_exits_on_sigterm() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weir = root.join("target/debug/weir");
    anyhow::ensure!(
        weir.exists(),
        "{} is missing: run `cargo build -p weir` first",
        weir.display()
    );
    let env = TestEnv::start().await?;
    let Some(emulator) = env.emulator.as_ref() else {
        anyhow::bail!("this scenario starts the binary against the emulator; unset KUBECONFIG");
    };
    let blog = plugin("blog")?;
    env.install_crd(&blog).await?;
    let dir = std::env::temp_dir().join(format!("weir-run-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("plugins"))?;
    std::fs::copy(
        root.join("target/plugins/blog.wasm"),
        dir.join("plugins/blog.wasm"),
    )?;
    emulator.write_kubeconfig(&dir.join("kubeconfig"))?;
    // A port free now, for the ops server (`/metrics`).
    let ops = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;

    let mut child = Command::new(&weir)
        .args([
            "run",
            "--listen",
            &ops.to_string(),
            "--resync-secs",
            "5",
            "--plugins",
        ])
        .arg(dir.join("plugins"))
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .env("WEIR_LOG", "info")
        .stderr(Stdio::null())
        .spawn()?;
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

    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    anyhow::ensure!(term.success(), "kill -TERM failed");
    let mut exited = None;
    for _ in 0..100 {
        if let Some(status) = child.try_wait()? {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if exited.is_none() {
        child.kill()?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    ready?;
    if let Some(metrics) = metrics {
        memory_gauges_are_shown(&metrics?);
    }
    let status =
        exited.ok_or_else(|| anyhow::anyhow!("weir run did not exit within 5 s of SIGTERM"))?;
    assert!(status.success(), "weir run exited with {status}");
    Ok(())
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
