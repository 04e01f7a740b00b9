//! The `weir run --plugins DIR --kubeconfig PATH` binary reconciles a Blog and stops cleanly on SIGTERM.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
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

    let mut child = Command::new(&weir)
        .args([
            "run",
            "--listen",
            "127.0.0.1:0",
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
    let status =
        exited.ok_or_else(|| anyhow::anyhow!("weir run did not exit within 5 s of SIGTERM"))?;
    assert!(status.success(), "weir run exited with {status}");
    Ok(())
}
